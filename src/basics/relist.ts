// The relist-with-backoff loop both subnet managers run: list (the source delivers a snapshot), then
// watch from where the list left off until the watch ends, pause, and watch again or list again.
// Mirrors client-go's Reflector (k8s.io/client-go/tools/cache/reflector.go: Run, ListAndWatch, watch),
// which flannel's kube subnet manager runs through its Node informer (pkg/subnet/kube/kube.go), and for
// etcd flannel's cursor loop in pkg/subnet/watch.go (WatchLeases: a nil cursor lists, an error retries)
// with pkg/subnet/etcd/local_manager.go WatchLeases (leasesWatchReset on ErrCompacted).
// Never hammer the API server (docs/architecture.md, Bounds on the list and watch loop): client-go's Run passes every ListAndWatch round through
// wait.BackoffUntil with its backoff manager (./round-backoff.ts: 800 ms, doubling, jittered, capped,
// reset after 2 healthy minutes), so a 410 Gone relists only after that pause. The one place a round
// starts at once is a watch that ended cleanly after a healthy run (`healthyWatchMs`; the kube watch
// passes half the timeout it asks the server for); every other end — a failed list, a failed or stale watch (410 Gone, etcd compaction), a
// watch the server closed early even with events (client-go would reopen that one at once) — waits the
// next pause. So a server that answers every round at once gets at most ~5 rounds in the first 15 s
// (0.8 + 1.6 + 3.2 + 6.4 s of pauses at least) and then one every 30-60 s. The clock and the jitter
// are injected, so tests drive the loop on virtual time.
import type { Clock, Random } from './clock.js';
import { pause } from './clock.js';
import { METRIC } from './metrics.js';
import type { Metrics } from './metrics.js';
import { RoundBackoff } from './round-backoff.js';
import type { RoundBackoffOptions } from './round-backoff.js';

/** How one watch ended, and so what the loop does next. */
export type WatchEnd<C> =
  /** The signal aborted: the loop returns. */
  | { kind: 'aborted' }
  /** The cursor is too old (410 Gone, compaction): relist after the pause. */
  | { kind: 'stale' }
  /** The server ended the watch cleanly: watch again from `cursor`, at once after a healthy run. */
  | { kind: 'closed'; cursor: C }
  /** A failed watch: after the pause, watch again from `cursor`, or relist when there is none. */
  | { kind: 'broken'; cursor?: C; err?: unknown };

/** Why the loop pauses before its next round. */
export type RetryReason = 'list-failed' | 'watch-failed' | 'stale' | 'closed-early';

/** What the loop is told before it pauses; `attempt` counts pauses since the backoff last reset, from 1. */
export interface RetryNote {
  phase: 'list' | 'watch';
  reason: RetryReason;
  err?: unknown;
  attempt: number;
  delayMs: number;
}

export interface ListWatchSource<C> {
  /** A complete list, delivered as a snapshot; returns where the watch starts. Throws to be retried. */
  list(signal: AbortSignal): Promise<C>;
  /** One watch from `cursor`. Throwing ends the loop with that error (e.g. a revoked own lease). */
  watch(cursor: C, signal: AbortSignal): Promise<WatchEnd<C>>;
  /** Before each pause (for the log line). */
  onRetry?(note: RetryNote): void;
  /** A list failure that ends the loop instead of being retried. */
  isFatal?(err: unknown): boolean;
  /** The least pause a failure asks for (an HTTP Retry-After); the pause is the larger of it and the backoff. */
  minDelayMs?(err: unknown): number | undefined;
}

export interface RelistOptions {
  clock: Clock;
  /** Jitter of the pauses. */
  random: Random;
  /**
   * A watch the server closed cleanly after running at least this long is resumed at once; a shorter
   * one ended early and waits the pause. Default: never at once (etcd watches have no clean end).
   */
  healthyWatchMs?: number;
  /** The pause schedule (default client-go's; tests and tools may shorten it). */
  backoff?: Omit<RoundBackoffOptions, 'clock' | 'random'>;
  /** Every list after the first, and every watch closed early, counts as a reconnect (flannel_api_reconnects_total). */
  metrics: Metrics;
  /** What the loop lists and watches (`nodes`, `subnets`): the `resource` label of its reconnects. */
  resource: string;
}

/** List + watch until `signal` aborts (resolves) or the source throws a fatal error (rejects). */
export async function runRelistLoop<C>(source: ListWatchSource<C>, o: RelistOptions, signal: AbortSignal): Promise<void> {
  const backoff = new RoundBackoff({ clock: o.clock, random: o.random, ...o.backoff });
  const healthyWatchMs = o.healthyWatchMs ?? Infinity;
  const reconnect = { resource: o.resource };
  let lists = 0;
  let cursor: C | undefined;
  const backOff = (phase: RetryNote['phase'], reason: RetryReason, err?: unknown): Promise<boolean> => {
    const delayMs = Math.max(backoff.next(), err === undefined ? 0 : (source.minDelayMs?.(err) ?? 0));
    source.onRetry?.({ phase, reason, err, attempt: backoff.attempt, delayMs });
    return pause(o.clock, delayMs, signal);
  };
  while (!signal.aborted) {
    if (cursor === undefined) {
      try {
        cursor = await source.list(signal);
      } catch (err) {
        if (signal.aborted) return;
        if (source.isFatal?.(err)) throw err;
        if (!(await backOff('list', 'list-failed', err))) return;
        continue;
      }
      if (lists++ > 0) o.metrics.inc(METRIC.apiReconnects, reconnect);
      // The owner may have aborted while it took the list (its handler ends what the list-watch serves).
      if (signal.aborted) return;
    }
    const started = o.clock.now();
    const end = await source.watch(cursor, signal);
    if (end.kind === 'aborted' || signal.aborted) return;
    if (end.kind === 'stale') {
      cursor = undefined;
      if (!(await backOff('watch', 'stale'))) return;
      continue;
    }
    cursor = end.cursor;
    if (end.kind === 'closed') {
      if (o.clock.now() - started >= healthyWatchMs) continue;
      o.metrics.inc(METRIC.apiReconnects, reconnect);
      if (!(await backOff('watch', 'closed-early'))) return;
      continue;
    }
    if (!(await backOff('watch', 'watch-failed', end.err))) return;
  }
}

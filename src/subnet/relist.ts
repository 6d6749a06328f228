// The relist-with-backoff loop both subnet managers run: list (the source delivers a snapshot), then
// watch from where the list left off until the watch fails or goes stale, back off, and list again.
// Mirrors client-go's Reflector.ListAndWatch (k8s.io/client-go/tools/cache/reflector.go), which
// flannel's kube subnet manager runs through its Node informer (pkg/subnet/kube/kube.go), and for etcd
// flannel's cursor loop in pkg/subnet/watch.go (WatchLeases: a nil cursor lists, an error retries)
// with pkg/subnet/etcd/local_manager.go WatchLeases (leasesWatchReset on ErrCompacted). Upstream
// retries after a fixed second; here the backoff is capped exponential and starts afresh after a good
// run: a successful list, a watch that closed cleanly after some progress, or a stale watch (410 Gone,
// compaction: relisted at once). The clock is injected, so tests drive the loop on virtual time.
import { backoffDelay, pause } from '../clock.js';
import type { Clock } from '../clock.js';
import { errorMessage } from '../errors.js';
import { METRIC } from '../health/metrics.js';
import type { Metrics } from '../health/metrics.js';
import type { Logger } from '../log.js';
import type { LeaseUpdate, LeaseUpdateHandler } from './lease.js';

/** How one watch ended, and so what the loop does next. */
export type WatchEnd<C> =
  /** The signal aborted: the loop returns. */
  | { kind: 'aborted' }
  /** The cursor is too old (410 Gone, compaction): relist at once, backoff reset. */
  | { kind: 'stale' }
  /** A clean end after a good run (the server's timeout): watch again from `cursor` at once, backoff reset. */
  | { kind: 'closed'; cursor: C }
  /**
   * A failed (or too short) watch: back off, then watch again from `cursor`, or relist when there is
   * none. `progressed` (the watch was established) resets the backoff before this pause.
   */
  | { kind: 'broken'; cursor?: C; progressed: boolean; err?: unknown };

/** What the loop is told before it pauses; `attempt` counts failures since the last good run, from 1. */
export interface RetryNote {
  phase: 'list' | 'watch';
  err?: unknown;
  attempt: number;
  delayMs: number;
}

export interface ListWatchSource<C> {
  /** A complete list, delivered as a snapshot; returns where the watch starts. Throws to be retried. */
  list(signal: AbortSignal): Promise<C>;
  /** One watch from `cursor`. Throwing ends the loop with that error (e.g. a revoked own lease). */
  watch(cursor: C, signal: AbortSignal): Promise<WatchEnd<C>>;
  /** Before each backoff pause (for the log line). */
  onRetry?(note: RetryNote): void;
  /** A list failure that ends the loop instead of being retried. */
  isFatal?(err: unknown): boolean;
}

export interface RelistOptions {
  clock: Clock;
  backoffBaseMs: number;
  backoffCapMs: number;
  /** Every list after the first counts as a reconnect. */
  metrics: Metrics;
}

/** List + watch until `signal` aborts (resolves) or the source throws a fatal error (rejects). */
export async function runRelistLoop<C>(source: ListWatchSource<C>, o: RelistOptions, signal: AbortSignal): Promise<void> {
  let failures = 0;
  let lists = 0;
  let cursor: C | undefined;
  const backOff = async (phase: RetryNote['phase'], err: unknown): Promise<boolean> => {
    const delayMs = backoffDelay(failures++, o.backoffBaseMs, o.backoffCapMs);
    source.onRetry?.({ phase, err, attempt: failures, delayMs });
    return pause(o.clock, delayMs, signal);
  };
  while (!signal.aborted) {
    if (cursor === undefined) {
      try {
        cursor = await source.list(signal);
      } catch (err) {
        if (signal.aborted) return;
        if (source.isFatal?.(err)) throw err;
        if (!(await backOff('list', err))) return;
        continue;
      }
      if (lists++ > 0) o.metrics.inc(METRIC.apiReconnects);
      failures = 0; // the API answered: a watch that breaks next starts its backoff afresh
    }
    const end = await source.watch(cursor, signal);
    if (end.kind === 'aborted' || signal.aborted) return;
    if (end.kind === 'stale') {
      failures = 0;
      cursor = undefined;
      continue;
    }
    if (end.kind === 'closed') {
      failures = 0;
      cursor = end.cursor;
      continue;
    }
    if (end.progressed) failures = 0;
    cursor = end.cursor;
    if (!(await backOff('watch', end.err))) return;
  }
}

/** Hand one update to the consumer; a throwing handler is logged and does not stop the watch. */
export function deliverUpdate(onUpdate: LeaseUpdateHandler, update: LeaseUpdate, log: Logger): void {
  try {
    onUpdate(update);
  } catch (err) {
    log.error('lease update handler failed', { error: errorMessage(err) });
  }
}

// What the reconcile loop keeps of its passes: the ledger of passes and rebuilds (what `flanneld status`,
// /healthz and /metrics say about it: the last pass and its error, consecutive failures, whether the HNS
// network is missing, event-to-dataplane latency, and the log lines of a failed pass or rebuild), and
// the items the dataplane refuses one by one (a RemoteSubnetRoute HNS will not take, a route the stack
// rejects): each is retried on its own capped exponential backoff, counted in /metrics, and logged once
// per distinct answer with the peer's node name, the prefix and the HRESULT (or route status). The rest
// of the peers are never held back by them. No upstream counterpart: flannel's handlers keep no ledger.
import type { Clock } from '../clock.js';
import { backoffDelay } from '../clock.js';
import { errorMessage, FlannelError } from '../errors.js';
import type { Metrics } from '../metrics.js';
import { METRIC } from '../metrics.js';
import type { Logger } from '../log.js';
import type { RefusedItem } from '../network-status.js';
import { peerRefusedEvent, type NodeEvents } from '../node-events.js';

/** What one reconcile pass did. */
export interface PassResult {
  ok: boolean;
  added: number;
  removed: number;
  replaced: number;
  /** Items the dataplane refused in this pass (retried on their own backoff). */
  refused?: number;
  /** The pass found the network gone. */
  networkGone?: boolean;
  error?: unknown;
}

/** When a pass started, and since when the change it writes was waiting. */
export interface PassStart {
  started: number;
  since: number | undefined;
}

export class PassLedger {
  passes = 0;
  consecutiveFailures = 0;
  /** The last pass found the network gone and it is not rebuilt yet. */
  missing = false;
  lastSuccessAt: number | undefined;
  lastPassAt: number | undefined;
  lastPassOk: boolean | undefined;
  lastError: { at: number; message: string } | undefined;
  /** When the desired set first changed since the last successful pass. */
  private pendingSince: number | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly metrics: Metrics | undefined,
    private readonly backoff: { baseMs: number; capMs: number },
  ) {}

  /** The desired set changed. */
  changed(): void {
    this.pendingSince ??= this.clock.now();
  }

  begin(): PassStart {
    this.passes++;
    const since = this.pendingSince;
    this.pendingSince = undefined;
    return { started: this.clock.now(), since };
  }

  /** The pass's figures and histograms; a change not applied keeps its start time. */
  ended(out: PassResult, start: PassStart): void {
    const now = this.clock.now();
    this.lastPassAt = now;
    this.lastPassOk = out.ok;
    if (!out.ok) this.lastError = { at: now, message: errorMessage(out.error) };
    this.metrics?.observe(METRIC.passDuration, (now - start.started) / 1000, { result: out.ok ? 'ok' : 'error' });
    if (start.since === undefined) return;
    if (out.ok) this.metrics?.observe(METRIC.eventToDataplane, (now - start.since) / 1000);
    else this.pendingSince = Math.min(start.since, this.pendingSince ?? start.since);
  }

  /** Count the pass's result and log a failure (once per disappearance of the network). */
  settled(out: PassResult, driver: string, incremental: boolean): void {
    if (out.ok) {
      this.consecutiveFailures = 0;
      this.missing = false; // back (recreated by someone else when there is no rebuild hook)
      this.lastSuccessAt = this.clock.now();
      this.metrics?.inc(METRIC.applyPasses, { result: 'ok' });
      this.metrics?.set(METRIC.lastApplySuccess, Math.floor(this.lastSuccessAt / 1000));
      return;
    }
    this.consecutiveFailures++;
    this.metrics?.inc(METRIC.applyPasses, { result: 'error' });
    if (out.networkGone) {
      if (!this.missing)
        this.log.warn('the HNS network is gone (HNS restarted, or it was deleted outside flanneld); recreating it with the same subnet and reprogramming every peer', {
          driver,
          error: errorMessage(out.error),
        });
      this.missing = true;
    } else {
      this.log.warn('reconcile pass failed', { driver, incremental, error: errorMessage(out.error), consecutiveFailures: this.consecutiveFailures });
    }
  }

  rebuildDone(): void {
    this.missing = false;
    this.metrics?.inc(METRIC.networkRebuilds, { result: 'ok' });
  }

  /** Recreating the network failed: returns how long to wait before the next try. */
  rebuildFailed(driver: string, err: unknown): number {
    this.consecutiveFailures++;
    this.metrics?.inc(METRIC.networkRebuilds, { result: 'error' });
    const delay = this.retryDelay();
    this.log.warn('recreating the HNS network failed; retrying', { driver, error: errorMessage(err), delayMs: delay });
    return delay;
  }

  /** Capped exponential backoff after the consecutive failures so far. */
  retryDelay(): number {
    return backoffDelay(this.consecutiveFailures - 1, this.backoff.baseMs, this.backoff.capMs);
  }
}

interface Entry {
  attempts: number;
  retryAt: number;
  answer: string;
  /** When the dataplane first gave this answer, and its error message. */
  since: number;
  error: string;
}

export interface RefusalTrackerOptions {
  /** The driver's name (a metric label and a log field). */
  driver: string;
  clock: Clock;
  log: Logger;
  metrics?: Metrics;
  baseMs: number;
  capMs: number;
  /** Where a refusal (and a change of its answer) is reported as an Event on the own Node. */
  events?: NodeEvents;
  /** The peer (node) an item key belongs to, for the log line. */
  owner?: (key: string) => string | undefined;
}

/** What the dataplane answered: the HRESULT (HNS) or status (route table), else the error code. */
function refusalAnswer(err: unknown): string {
  if (err instanceof FlannelError) {
    const { hresult, status } = err.context;
    if (hresult !== undefined) return String(hresult);
    if (status !== undefined) return `status ${String(status)}`;
    return err.code;
  }
  return errorMessage(err);
}

export class RefusalTracker {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly opts: RefusalTrackerOptions) {
    // This driver's series exist at zero from the start, so an alert on them works before the first refusal.
    opts.metrics?.declare(METRIC.refusals, 'driver', [opts.driver]);
    opts.metrics?.declare(METRIC.refusedItems, 'driver', [opts.driver]);
  }

  get size(): number {
    return this.entries.size;
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  /**
   * The dataplane refused the item for `key`: back off; log (at warn) and report the first refusal and
   * every change of answer, a retry answered alike only at debug. True when this refusal is such news.
   */
  refused(key: string, err: unknown): boolean {
    const { clock, log, metrics, driver } = this.opts;
    const answer = refusalAnswer(err);
    const prev = this.entries.get(key);
    const attempts = (prev?.attempts ?? 0) + 1;
    const delay = backoffDelay(attempts - 1, this.opts.baseMs, this.opts.capMs);
    const error = errorMessage(err);
    const since = prev?.answer === answer ? prev.since : clock.now();
    this.entries.set(key, { attempts, retryAt: clock.now() + delay, answer, since, error });
    metrics?.inc(METRIC.refusals, { driver });
    this.gauge();
    const fields = { driver, node: this.opts.owner?.(key), prefix: key, hresult: answer, attempts, retryInMs: delay, error };
    if (prev?.answer !== answer) {
      log.warn('the dataplane refused one peer item; the other peers are programmed, this one is retried with backoff', fields);
      this.opts.events?.record(peerRefusedEvent(fields.node, key, answer, fields.error));
      return true;
    }
    log.debug('the dataplane refused the item again', fields);
    return false;
  }

  /** The item for `key` was written: it is no longer refused. */
  accepted(key: string): void {
    this.resolved(key, 'the dataplane accepted a previously refused item', 1);
  }

  /** The dataplane holds the item for `key` without our write (another writer, drift): stop retrying it. */
  held(key: string): void {
    this.resolved(key, 'a previously refused item is in the dataplane now; it is no longer retried', 0);
  }

  private resolved(key: string, message: string, tries: number): void {
    const prev = this.entries.get(key);
    if (!prev) return;
    this.entries.delete(key);
    this.gauge();
    this.opts.log.info(message, { driver: this.opts.driver, node: this.opts.owner?.(key), prefix: key, attempts: prev.attempts + tries });
  }

  /** The key is no longer desired: stop tracking it. */
  forget(key: string): void {
    if (this.entries.delete(key)) this.gauge();
  }

  /** True while `key` waits out its backoff (not written by any pass until then). */
  backingOff(key: string, now: number): boolean {
    const e = this.entries.get(key);
    return e !== undefined && e.retryAt > now;
  }

  /** The refused items, sorted by peer then prefix. */
  list(): RefusedItem[] {
    return [...this.entries]
      .map(([prefix, e]) => ({ node: this.opts.owner?.(prefix), prefix, answer: e.answer, attempts: e.attempts, since: e.since, error: e.error }))
      .sort((a, b) => (a.node ?? '').localeCompare(b.node ?? '') || a.prefix.localeCompare(b.prefix));
  }

  keys(): string[] {
    return [...this.entries.keys()];
  }

  /** Keys whose backoff has ended. */
  due(now: number): string[] {
    return [...this.entries].filter(([, e]) => e.retryAt <= now).map(([k]) => k);
  }

  /** When the next retry falls due, if any is pending. */
  nextRetryAt(): number | undefined {
    let next: number | undefined;
    for (const e of this.entries.values()) if (next === undefined || e.retryAt < next) next = e.retryAt;
    return next;
  }

  private gauge(): void {
    this.opts.metrics?.set(METRIC.refusedItems, this.entries.size, { driver: this.opts.driver });
  }
}

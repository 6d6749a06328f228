// Items the dataplane refuses one by one (a RemoteSubnetRoute HNS will not take, a route the stack rejects):
// each is retried on its own capped exponential backoff, counted in /metrics, and logged once per
// distinct answer with the peer's node name, the prefix and the HRESULT (or route status). The rest of
// the peers are never held back by them.
import type { Clock } from '../clock.js';
import { backoffDelay } from '../clock.js';
import { errorMessage, FlannelError } from '../errors.js';
import type { Metrics } from '../health/metrics.js';
import { METRIC } from '../health/metrics.js';
import type { Logger } from '../log.js';
import { peerRefusedEvent, type NodeEvents } from '../node-events.js';

interface Entry {
  attempts: number;
  retryAt: number;
  answer: string;
  /** When the dataplane first gave this answer, and its error message. */
  since: number;
  error: string;
}

/** One item the dataplane refuses now (for `flanneld status`). */
export interface RefusedItem {
  /** The peer (node) the item is for, when known. */
  node: string | undefined;
  /** The item's key: the peer's prefix. */
  prefix: string;
  /** The HRESULT (HNS) or route status, else the error code. */
  answer: string;
  attempts: number;
  /** When the dataplane first gave this answer (ms since the epoch). */
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
export function refusalAnswer(err: unknown): string {
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

  constructor(private readonly opts: RefusalTrackerOptions) {}

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

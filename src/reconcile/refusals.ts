// The refused items, as the reconcile loop keeps them: each key whose item the dataplane refused waits out
// its own capped exponential backoff and is then retried alone, so the other keys are never held back by it.
// This is the loop's own bookkeeping (when a key is due, which keys are refused, how often in a row); what a
// refusal means to the people running the node (a log line, a metric, an Event, the status) is the owner's,
// told through the `RefusalSink` the loop declares here (the network's sink is the peers' problems ledger).
// No upstream counterpart: flannel's route/policy handlers ignore a failed write. The split of a generic
// tracker from what its owner makes of the outcome follows Felix's deltatracker
// (projectcalico/calico felix/deltatracker/delta_tracker.go), which keeps the desired and dataplane state by
// key and leaves the reporting to its caller.
import type { Clock } from '../basics/clock.js';
import { backoffDelay } from '../basics/clock.js';
import type { ItemKey } from './plan.js';

/** How a refused key stopped being refused. */
export type Cleared = 'written' | 'held' | 'forgotten';

/** What the loop tells its owner about refused keys, one key at a time. */
export interface RefusalSink<K extends ItemKey = string> {
  /**
   * The dataplane refused the item for `key`: its `attempts`th refusal in a row, tried again alone in
   * `retryInMs`. True when the refusal is news (the first, or another answer than the last): the pass's
   * log line is then info, not debug.
   */
  refused(key: K, error: unknown, retry: { attempts: number; retryInMs: number }): boolean;
  /**
   * The key, refused before, is no longer: `written` by a pass, `held` (the dataplane holds the desired item
   * without our write: another writer, drift), or `forgotten` (no longer desired, or new content tried afresh).
   */
  cleared(key: K, how: Cleared): void;
}

export class Refusals<K extends ItemKey = string> {
  /** Refusals in a row, and when the key is due for its retry, by key. */
  private readonly byKey = new Map<K, { attempts: number; retryAt: number }>();
  private changes = 0;

  constructor(
    private readonly sink: RefusalSink<K>,
    private readonly clock: Clock,
    private readonly backoff: { baseMs: number; capMs: number },
  ) {}

  /** The dataplane refused the item for `key`: back off (base * 2^n, at most cap) and tell the sink; true when it is news. */
  refused(key: K, error: unknown): boolean {
    this.changes++;
    const attempts = (this.byKey.get(key)?.attempts ?? 0) + 1;
    const retryInMs = backoffDelay(attempts - 1, this.backoff.baseMs, this.backoff.capMs);
    this.byKey.set(key, { attempts, retryAt: this.clock.now() + retryInMs });
    return this.sink.refused(key, error, { attempts, retryInMs });
  }

  /** The key is no longer refused (`how`); nothing when it was not. */
  clear(key: K, how: Cleared): void {
    if (!this.byKey.delete(key)) return;
    this.changes++;
    this.sink.cleared(key, how);
  }

  /** Counts every refusal and clearing (what `has` answers changes only with it). */
  get version(): number {
    return this.changes;
  }

  has(key: K): boolean {
    return this.byKey.has(key);
  }

  get size(): number {
    return this.byKey.size;
  }

  keys(): K[] {
    return [...this.byKey.keys()];
  }

  /** True while `key` waits out its backoff (not written by any pass until then). */
  backingOff(key: K, now: number): boolean {
    const r = this.byKey.get(key);
    return r !== undefined && r.retryAt > now;
  }

  /** Keys whose backoff has ended. */
  due(now: number): K[] {
    return [...this.byKey].filter(([, r]) => r.retryAt <= now).map(([k]) => k);
  }

  /** When the next retry falls due, if any is pending. */
  nextRetryAt(): number | undefined {
    let next: number | undefined;
    for (const r of this.byKey.values()) if (next === undefined || r.retryAt < next) next = r.retryAt;
    return next;
  }
}

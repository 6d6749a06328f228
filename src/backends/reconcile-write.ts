// One pass's writes: execute a reconcile plan against the driver in bounded batches (removals first,
// then additions and the replacements whose old item is gone), split refused batches, and keep the
// cache of the actual dataplane (the last read plus our own successful writes) in step.
import { writeInBatches } from './batch-writer.js';
import type { ReconcileDriver, ReconcilePlan } from './reconcile-plan.js';
import type { RefusalTracker } from './refusals.js';

/** The actual dataplane by key, as last read and changed by our own successful writes since. */
export class ActualCache<A> {
  private readonly byKey = new Map<string, A[]>();

  constructor(items: readonly A[], key: (a: A) => string) {
    for (const a of items) this.add(key(a), a);
  }

  get(k: string): readonly A[] {
    return this.byKey.get(k) ?? [];
  }

  has(k: string): boolean {
    return this.byKey.has(k);
  }

  add(k: string, a: A): void {
    const list = this.byKey.get(k);
    if (list) list.push(a);
    else this.byKey.set(k, [a]);
  }

  remove(k: string, a: A): void {
    const rest = this.get(k).filter((x) => x !== a);
    if (rest.length > 0) this.byKey.set(k, rest);
    else this.byKey.delete(k);
  }
}

export interface WriteOutcome {
  added: number;
  removed: number;
  replaced: number;
  /** Keys with an item the dataplane refused (tracked in the RefusalTracker). */
  refused: number;
  /** Items the plan held but the pass attempted (refused items waiting out their backoff are not). */
  attempted: number;
  /** Write calls made. */
  calls: number;
  /** The first failure that was not a refusal. */
  failure?: unknown;
}

/**
 * Write `plan`. `early` (before the first complete list): additions only. Keys backing off after a
 * refusal are left alone. Successful writes update `cache`; refusals and acceptances go to `refusals`.
 */
export async function writePlan<A, D>(
  driver: ReconcileDriver<A, D>,
  plan: ReconcilePlan<A, D>,
  opts: { early: boolean; now: number; refusals: RefusalTracker; cache: ActualCache<A> | undefined },
): Promise<WriteOutcome> {
  const { refusals, cache } = opts;
  const waiting = (k: string) => refusals.backingOff(k, opts.now);
  const aKey = (a: A) => driver.actualKey(a);
  const dKey = (d: D) => driver.desiredKey(d);
  const batches = {
    size: driver.batch ?? Number.MAX_SAFE_INTEGER,
    concurrency: driver.concurrency ?? 1,
    refuses: (e: unknown) => driver.refuses?.(e) === true,
  };
  const refusedKeys = new Set<string>();
  const written = new Set<string>();

  const toRemove = opts.early ? [] : [...plan.remove, ...plan.replace.map((r) => r.from)].filter((a) => !waiting(aKey(a)));
  const rm = await writeInBatches(toRemove, { ...batches, write: (items) => driver.remove(items) });
  const gone = new Set(rm.done);
  for (const a of rm.done) {
    written.add(aKey(a));
    cache?.remove(aKey(a), a);
  }
  for (const r of rm.refused) {
    refusedKeys.add(aKey(r.item));
    refusals.refused(aKey(r.item), r.error);
  }

  const replacing = opts.early ? [] : plan.replace.filter((r) => gone.has(r.from)).map((r) => r.to);
  const toAdd = [...plan.add, ...replacing].filter((d) => !waiting(dKey(d)));
  const ad = await writeInBatches(toAdd, { ...batches, write: (items) => driver.add(items) });
  const added = new Set(ad.done);
  for (const d of added) {
    written.add(dKey(d));
    if (driver.toActual) cache?.add(dKey(d), driver.toActual(d));
  }
  for (const r of ad.refused) {
    refusedKeys.add(dKey(r.item));
    refusals.refused(dKey(r.item), r.error);
  }
  for (const k of written) if (!refusedKeys.has(k)) refusals.accepted(k);

  return {
    removed: plan.remove.filter((a) => gone.has(a)).length,
    added: plan.add.filter((d) => added.has(d)).length,
    replaced: plan.replace.filter((r) => gone.has(r.from) && added.has(r.to)).length,
    refused: refusedKeys.size,
    attempted: toRemove.length + toAdd.length,
    calls: rm.calls + ad.calls,
    failure: rm.failure ?? ad.failure,
  };
}

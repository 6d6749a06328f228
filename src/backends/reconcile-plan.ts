// One reconcile pass's plan and writes. The plan is pure: compare the actual dataplane items with the
// desired ones, by key, and say what to add, remove and replace (for the full pass, everything read; for
// the incremental one, only the keys that changed, against the cached last read). The writes execute it
// against the driver in bounded batches (removals first, then additions and the replacements whose old
// item is gone), split refused batches, and keep the cache of the actual dataplane (the last read plus
// our own successful writes) in step.
//
// Batches are split when the dataplane refuses part of one. An HcnModifyNetwork
// carrying many policies is atomic (hcsshim hcn/hcnnetwork.go modifyNetwork: one request, one HRESULT),
// so one policy HNS refuses (HCN_E_ADDR_INVALID_OR_RESERVED, HCN_E_INVALID_POLICY, ...) sinks the
// others with it. A refused batch is halved until the refused items stand alone; everything else lands.
// A failure that is not a refusal (HNS down, a timeout, the network gone) stops the writes instead:
// splitting would only multiply failing calls.
import type { PlanOps, ReconcileDriver, ReconcilePlan } from './reconcile-driver.js';
import type { RefusalTracker } from './refusals.js';

/**
 * Compare the actual items with the desired ones, by key. Actual items without a desired key are
 * removed; of several actual items for one key, one that is `same` is kept and the rest removed;
 * if none is the same, the first is replaced and the rest removed. Desired keys are unique (first wins).
 */
export function planReconcile<A, D>(actual: readonly A[], desired: readonly D[], ops: PlanOps<A, D>): ReconcilePlan<A, D> {
  const want = new Map<string, D>();
  for (const d of desired) {
    const k = ops.desiredKey(d);
    if (!want.has(k)) want.set(k, d);
  }
  const have = new Map<string, A[]>();
  for (const a of actual) {
    const k = ops.actualKey(a);
    const list = have.get(k);
    if (list) list.push(a);
    else have.set(k, [a]);
  }
  const plan: ReconcilePlan<A, D> = { add: [], remove: [], replace: [], unchanged: 0 };
  for (const [k, items] of have) {
    const d = want.get(k);
    if (d === undefined) {
      plan.remove.push(...items);
      continue;
    }
    const keep = items.findIndex((a) => ops.same(a, d));
    if (keep >= 0) {
      plan.unchanged++;
      items.forEach((a, i) => {
        if (i !== keep) plan.remove.push(a);
      });
    } else {
      plan.replace.push({ from: items[0], to: d });
      plan.remove.push(...items.slice(1));
    }
  }
  for (const [k, d] of want) if (!have.has(k)) plan.add.push(d);
  return plan;
}

/** True when `plan` writes anything for `key` (a full pass's plan leaves the keys it finds right alone). */
export function planTouches<A, D>(plan: ReconcilePlan<A, D>, key: string, ops: PlanOps<A, D>): boolean {
  return plan.add.some((d) => ops.desiredKey(d) === key) || plan.replace.some((r) => ops.desiredKey(r.to) === key) || plan.remove.some((a) => ops.actualKey(a) === key);
}

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
  /** Of those, refusals that are news (a first refusal or another answer), not a retry answered alike. */
  refusalsChanged: number;
  /** Keys of the items written in (added or replaced) and of those removed outright. */
  addedKeys: string[];
  removedKeys: string[];
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
  let refusalsChanged = 0;

  const toRemove = opts.early ? [] : [...plan.remove, ...plan.replace.map((r) => r.from)].filter((a) => !waiting(aKey(a)));
  const rm = await writeInBatches(toRemove, { ...batches, write: (items) => driver.remove(items) });
  const gone = new Set(rm.done);
  for (const a of rm.done) {
    written.add(aKey(a));
    cache?.remove(aKey(a), a);
  }
  for (const r of rm.refused) {
    refusedKeys.add(aKey(r.item));
    if (refusals.refused(aKey(r.item), r.error)) refusalsChanged++;
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
    if (refusals.refused(dKey(r.item), r.error)) refusalsChanged++;
  }
  for (const k of written) if (!refusedKeys.has(k)) refusals.accepted(k);

  return {
    removed: plan.remove.filter((a) => gone.has(a)).length,
    added: plan.add.filter((d) => added.has(d)).length,
    replaced: plan.replace.filter((r) => gone.has(r.from) && added.has(r.to)).length,
    refused: refusedKeys.size,
    refusalsChanged,
    addedKeys: ad.done.map(dKey),
    removedKeys: plan.remove.filter((a) => gone.has(a)).map(aKey),
    attempted: toRemove.length + toAdd.length,
    calls: rm.calls + ad.calls,
    failure: rm.failure ?? ad.failure,
  };
}

export interface Refusal<T> {
  item: T;
  error: unknown;
}

export interface BatchResult<T> {
  /** Items written, in write order. */
  done: T[];
  /** Items the dataplane refused, one by one. */
  refused: Refusal<T>[];
  /** The first failure that was not a refusal; the items after it were not attempted. */
  failure?: unknown;
  /** Write calls made. */
  calls: number;
}

export interface BatchOptions<T> {
  /** Items per write (>= 1). */
  size: number;
  /** Writes in flight at once (>= 1). */
  concurrency: number;
  write: (items: T[]) => Promise<unknown>;
  /** True when `error` refuses the items of this write rather than failing the call as a whole. */
  refuses: (error: unknown) => boolean;
}

/** Write `items` in batches of `size`; halve refused batches down to single refused items. */
export async function writeInBatches<T>(items: readonly T[], opts: BatchOptions<T>): Promise<BatchResult<T>> {
  const size = Math.max(1, Math.floor(opts.size));
  const result: BatchResult<T> = { done: [], refused: [], calls: 0 };
  const queue: T[][] = [];
  for (let i = 0; i < items.length; i += size) queue.push(items.slice(i, i + size));

  const attempt = async (part: T[]): Promise<void> => {
    if (result.failure !== undefined) return;
    result.calls++;
    try {
      await opts.write(part);
      result.done.push(...part);
    } catch (error) {
      if (!opts.refuses(error)) {
        result.failure ??= error;
        return;
      }
      if (part.length === 1) {
        result.refused.push({ item: part[0], error });
        return;
      }
      const half = Math.ceil(part.length / 2);
      await attempt(part.slice(0, half));
      await attempt(part.slice(half));
    }
  };

  const worker = async (): Promise<void> => {
    for (let part = queue.shift(); part; part = queue.shift()) await attempt(part);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(Math.floor(opts.concurrency), queue.length)) }, worker));
  return result;
}

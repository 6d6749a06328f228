// The writes: a plan (./plan.ts) carried out through the backend's driver in bounded batches, removals
// first, then additions and the replacements whose old item is gone. Batch recovery has one owner, here:
// an HcnModifyNetwork carrying many policies is atomic (hcsshim hcn/hcnnetwork.go modifyNetwork: one
// request, one HRESULT), so one policy HNS refuses (HCN_E_ADDR_INVALID_OR_RESERVED, HCN_E_INVALID_POLICY,
// ...) sinks the others with it. A refused batch is halved until the refused items stand alone;
// everything else lands, and each refused item goes to the loop's refusals (./refusals.ts) to be retried
// on its own backoff. A failure that is not a refusal (HNS down, a timeout, the network gone)
// stops the writes instead: splitting would only multiply failing calls. The dataplane clients below
// make exactly the calls asked of them, so the calls counted here are the real ones.
import type { ActualCache, ItemKey, PlanOps, ReconcilePlan } from './plan.js';
import type { Refusals } from './refusals.js';

// --- the driver seam ---

export interface ReconcileDriver<A, D, K extends ItemKey = string> extends PlanOps<A, D, K> {
  /** Short name for logs and metrics (`host-gw routes`, `vxlan RemoteSubnetRoute policies`). */
  name: string;
  /** What one item is, for flannel_drift_repairs_total{kind} when a resync finds one gone (`route`, `policy`). */
  driftKind: string;
  /** The actual dataplane items this driver owns. Throws a network-gone error when the network is missing. */
  readActual(): Promise<A[]>;
  /** One write removing these items (at most `batch` of them). */
  remove(items: A[]): Promise<void>;
  /** One write adding these items (at most `batch` of them). */
  add(items: D[]): Promise<void>;
  /**
   * Replace items in place, one write (HNS's RequestType Update of an IP set: Azure NPM
   * npm/pkg/dataplane/ipsets/ipsetmanager_windows.go). Without it a replacement is a remove and an add.
   */
  update?(pairs: { from: A; to: D }[]): Promise<void>;
  /**
   * The write an item goes in when one call cannot carry items of two (an HcnModifyEndpoint carries one
   * endpoint's policies): a batch holds one group's items, and groups are written in the order of their
   * keys, so a driver orders its writes by naming the groups (an IP set before the rules naming it).
   */
  groupOf?(item: A | D, op: 'add' | 'remove' | 'update'): string;
  /** Items per write call (default: all of them in one). */
  batch?: number;
  /** Write calls in flight at once (default 1). */
  concurrency?: number;
  /** What a successful add of `d` leaves in the dataplane. Without it every pass reads (no incremental apply). */
  toActual?(d: D): A;
  /**
   * What a failed write means, as the dataplane layer sorts it: `refused` (the items of that write were
   * refused: split the batch to find them), `absent` (a removal named an item already gone: split the
   * batch; one item so answered is removed), `gone` (the network this driver writes to no longer exists),
   * else `transient` (the call failed as a whole; retried with backoff). Default: transient.
   */
  failure?(err: unknown): WriteFailure;
  /** Called after each full pass: close what incremental writes kept open (an HCN network handle). */
  release?(): Promise<void>;
}

/** How a failed dataplane write fails (src/hns/errors.ts `hnsFailure`, host-gw's `routeFailure`). */
export type WriteFailure = 'refused' | 'absent' | 'gone' | 'transient';

// --- the writes ---

interface WriteOutcome<K> {
  added: number;
  removed: number;
  replaced: number;
  /** Keys with an item the dataplane refused (recorded in the loop's refusals). */
  refused: number;
  /** Of those, refusals that are news (a first refusal or another answer), not a retry answered alike. */
  refusalsChanged: number;
  /** Keys of the items written in (added or replaced) and of those removed outright. */
  addedKeys: K[];
  removedKeys: K[];
  /** Items the plan held but the pass attempted (refused items waiting out their backoff are not). */
  attempted: number;
  /** Write calls made. */
  calls: number;
  /** The first failure that was not a refusal. */
  failure?: unknown;
}

interface WriteOptions<A, K extends ItemKey> {
  early: boolean;
  now: number;
  refusals: Refusals<K>;
  cache: ActualCache<A, K> | undefined;
}

/**
 * Write `plan`. `early` (before the first complete list): additions only. Keys backing off after a
 * refusal are left alone. Successful writes update `cache`; refusals and acceptances go to `refusals`.
 * A plan of one addition or one removal (a node event's) is one write (writeOne); any other goes in
 * batches (writePlanInBatches). The two give the same outcome (test/unit/reconcile/write-one.test.ts).
 */
export function writePlan<A, D, K extends ItemKey>(driver: ReconcileDriver<A, D, K>, plan: ReconcilePlan<A, D>, opts: WriteOptions<A, K>): Promise<WriteOutcome<K>> {
  if (plan.replace.length === 0) {
    if (plan.add.length === 1 && plan.remove.length === 0) return writeOne(driver, 'add', plan.add[0], opts);
    if (plan.remove.length === 1 && plan.add.length === 0 && !opts.early) return writeOne(driver, 'remove', plan.remove[0], opts);
  }
  return writePlanInBatches(driver, plan, opts);
}

/**
 * One addition or one removal, as writePlanInBatches would write a plan holding only it, without its
 * batches, Sets and awaited layers (docs/performance.md, "The event's path, planned and written per key
 * (session 12)"): left alone while its key backs off; a refusal goes to `refusals`; a removal of an item
 * already gone (`absent`) is done; any other failure is the outcome's.
 */
async function writeOne<A, D, K extends ItemKey>(driver: ReconcileDriver<A, D, K>, op: 'add' | 'remove', item: A | D, opts: WriteOptions<A, K>): Promise<WriteOutcome<K>> {
  const adding = op === 'add';
  const key = adding ? driver.desiredKey(item as D) : driver.actualKey(item as A);
  const out: WriteOutcome<K> = { added: 0, removed: 0, replaced: 0, refused: 0, refusalsChanged: 0, addedKeys: [], removedKeys: [], attempted: 0, calls: 0 };
  if (opts.refusals.backingOff(key, opts.now)) return out;
  out.attempted = 1;
  out.calls = 1;
  try {
    if (adding) await driver.add([item as D]);
    else await driver.remove([item as A]);
  } catch (error) {
    const failure = driver.failure?.(error);
    if (failure === 'refused') {
      out.refused = 1;
      if (opts.refusals.refused(key, error)) out.refusalsChanged = 1;
      return out;
    }
    if (adding || failure !== 'absent') {
      out.failure = error;
      return out;
    }
  }
  if (adding) {
    out.added = 1;
    out.addedKeys.push(key);
    if (driver.toActual) opts.cache?.add(key, driver.toActual(item as D));
  } else {
    out.removed = 1;
    out.removedKeys.push(key);
    opts.cache?.remove(key, item as A);
  }
  opts.refusals.clear(key, 'written');
  return out;
}

/** writePlan's writes in batches: removals, then in-place updates, then additions and replacements. */
export async function writePlanInBatches<A, D, K extends ItemKey>(driver: ReconcileDriver<A, D, K>, plan: ReconcilePlan<A, D>, opts: WriteOptions<A, K>): Promise<WriteOutcome<K>> {
  const { refusals, cache } = opts;
  const waiting = (k: K) => refusals.backingOff(k, opts.now);
  const aKey = (a: A) => driver.actualKey(a);
  const dKey = (d: D) => driver.desiredKey(d);
  const batches = {
    size: driver.batch ?? Number.MAX_SAFE_INTEGER,
    concurrency: driver.concurrency ?? 1,
    refuses: (e: unknown) => driver.failure?.(e) === 'refused',
  };
  const removing = {
    ...batches,
    refuses: (e: unknown) => driver.failure?.(e) === 'refused' || driver.failure?.(e) === 'absent',
    absent: (e: unknown) => driver.failure?.(e) === 'absent',
  };
  const refusedKeys = new Set<K>();
  const written = new Set<K>();
  let refusalsChanged = 0;

  const inPlace = driver.update !== undefined;
  const group = (op: 'add' | 'remove' | 'update') => (driver.groupOf ? { groupOf: (item: A | D) => driver.groupOf!(item, op) } : {});
  const toRemove = opts.early ? [] : [...plan.remove, ...(inPlace ? [] : plan.replace.map((r) => r.from))].filter((a) => !waiting(aKey(a)));
  const rm = toRemove.length === 0 ? noWrites<A>() : await writeInBatches(toRemove, { ...removing, ...group('remove'), write: (items) => driver.remove(items) });
  const gone = new Set(rm.done);
  for (const a of rm.done) {
    written.add(aKey(a));
    cache?.remove(aKey(a), a);
  }
  for (const r of rm.refused) {
    refusedKeys.add(aKey(r.item));
    if (refusals.refused(aKey(r.item), r.error)) refusalsChanged++;
  }

  const toUpdate = opts.early || !inPlace ? [] : plan.replace.filter((r) => !waiting(dKey(r.to)));
  const up =
    toUpdate.length === 0
      ? noWrites<{ from: A; to: D }>()
      : await writeInBatches(toUpdate, {
          ...batches,
          ...(driver.groupOf ? { groupOf: (r: { to: D }) => driver.groupOf!(r.to, 'update') } : {}),
          write: (pairs) => driver.update!(pairs),
        });
  for (const r of up.done) gone.add(r.from);
  for (const r of up.refused) {
    refusedKeys.add(dKey(r.item.to));
    if (refusals.refused(dKey(r.item.to), r.error)) refusalsChanged++;
  }

  const replacing = opts.early ? [] : inPlace ? up.done.map((r) => r.to) : plan.replace.filter((r) => gone.has(r.from)).map((r) => r.to);
  const toAdd = [...plan.add, ...(inPlace ? [] : replacing)].filter((d) => !waiting(dKey(d)));
  const ad = toAdd.length === 0 ? noWrites<D>() : await writeInBatches(toAdd, { ...batches, ...group('add'), write: (items) => driver.add(items) });
  const added = new Set([...ad.done, ...(inPlace ? replacing : [])]);
  for (const r of up.done) cache?.remove(aKey(r.from), r.from);
  for (const d of added) {
    written.add(dKey(d));
    if (driver.toActual) cache?.add(dKey(d), driver.toActual(d));
  }
  for (const r of ad.refused) {
    refusedKeys.add(dKey(r.item));
    if (refusals.refused(dKey(r.item), r.error)) refusalsChanged++;
  }
  for (const k of written) if (!refusedKeys.has(k)) refusals.clear(k, 'written');

  return {
    removed: plan.remove.filter((a) => gone.has(a)).length,
    added: plan.add.filter((d) => added.has(d)).length,
    replaced: plan.replace.filter((r) => gone.has(r.from) && added.has(r.to)).length,
    refused: refusedKeys.size,
    refusalsChanged,
    addedKeys: [...added].map(dKey),
    removedKeys: plan.remove.filter((a) => gone.has(a)).map(aKey),
    attempted: toRemove.length + toUpdate.length + toAdd.length,
    calls: rm.calls + up.calls + ad.calls,
    failure: rm.failure ?? up.failure ?? ad.failure,
  };
}

interface Refusal<T> {
  item: T;
  error: unknown;
}

interface BatchResult<T> {
  /** Items written, in write order. */
  done: T[];
  /** Items the dataplane refused, one by one. */
  refused: Refusal<T>[];
  /** The first failure that was not a refusal; the items after it were not attempted. */
  failure?: unknown;
  /** Write calls made. */
  calls: number;
}

interface BatchOptions<T> {
  /** Items per write (>= 1). */
  size: number;
  /** Writes in flight at once (>= 1). */
  concurrency: number;
  write: (items: T[]) => Promise<unknown>;
  /** True when `error` refuses the items of this write rather than failing the call as a whole. */
  refuses: (error: unknown) => boolean;
  /** True when `error` says an item of this write is already as asked (a removal of one gone): one item so answered is done. */
  absent?: (error: unknown) => boolean;
  /** The write an item goes in (ReconcileDriver.groupOf): no batch mixes groups; groups go in key order. */
  groupOf?: (item: T) => string;
}

/** What writeInBatches answers for no items, without its awaits (an incremental pass has one kind of write). */
function noWrites<T>(): BatchResult<T> {
  return { done: [], refused: [], calls: 0 };
}

/** Write `items` in batches of `size`; halve refused batches down to single refused items (the one place batches are split). */
export async function writeInBatches<T>(items: readonly T[], opts: BatchOptions<T>): Promise<BatchResult<T>> {
  const size = Math.max(1, Math.floor(opts.size));
  const result: BatchResult<T> = { done: [], refused: [], calls: 0 };
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
        if (opts.absent?.(error)) result.done.push(part[0]);
        else result.refused.push({ item: part[0], error });
        return;
      }
      const half = Math.ceil(part.length / 2);
      await attempt(part.slice(0, half));
      await attempt(part.slice(half));
    }
  };
  // One item (a node event's): one write, without the groups, the queue and its worker.
  if (items.length === 1) {
    await attempt([items[0]]);
    return result;
  }
  const queue: T[][] = [];
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const g = opts.groupOf?.(item) ?? '';
    const list = groups.get(g);
    if (list) list.push(item);
    else groups.set(g, [item]);
  }
  for (const g of [...groups.keys()].sort()) {
    const list = groups.get(g)!;
    for (let i = 0; i < list.length; i += size) queue.push(list.slice(i, i + size));
  }

  const worker = async (): Promise<void> => {
    for (let part = queue.shift(); part; part = queue.shift()) await attempt(part);
  };
  const workers = Math.max(1, Math.min(Math.floor(opts.concurrency), queue.length));
  await (workers === 1 ? worker() : Promise.all(Array.from({ length: workers }, worker)));
  return result;
}

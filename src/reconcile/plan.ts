// The plan: the one diff between the dataplane and the peers. Pure: given the actual items (as read, or
// as the loop's cache holds them) and the desired ones, by key, it says what to add, remove and replace.
// The loop (./reconciler.ts) makes it; the writes (./writes.ts) carry it out. No upstream counterpart:
// flannel's route/policy handlers apply events one by one and never diff (flannel#2554); the shape is
// the diff step of Felix's Windows VXLAN manager (felix/dataplane/windows/vxlan_mgr.go).

/**
 * What an item is known by: a primitive, so that two keys are equal when their values are (a Map's key
 * rule; Go's `comparable`, the constraint of Felix's deltatracker `DeltaTracker[K comparable, V any]`).
 * A controller may brand it (`string & { readonly __rule: never }`) so its keys mix with no other's.
 */
export type ItemKey = string | number | bigint;

export interface PlanOps<A, D, K extends ItemKey = string> {
  actualKey(a: A): K;
  desiredKey(d: D): K;
  /** True when actual item `a` already is desired item `d` (no write needed). */
  same(a: A, d: D): boolean;
}

export interface ReconcilePlan<A, D> {
  add: D[];
  remove: A[];
  replace: { from: A; to: D }[];
  unchanged: number;
}

/**
 * Compare the actual items with the desired ones, by key. Actual items without a desired key are
 * removed; of several actual items for one key, one that is `same` is kept and the rest removed;
 * if none is the same, the first is replaced and the rest removed. Desired keys are unique (first wins).
 */
export function planReconcile<A, D, K extends ItemKey = string>(actual: readonly A[], desired: readonly D[], ops: PlanOps<A, D, K>): ReconcilePlan<A, D> {
  const want = new Map<K, D>();
  for (const d of desired) {
    const k = ops.desiredKey(d);
    if (!want.has(k)) want.set(k, d);
  }
  const have = new Map<K, A[]>();
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

/**
 * The plan for a few keys, given each key's desired item and actual items (the incremental pass: the keys
 * changed since the last pass, against the loop's cache). The same plan as `planReconcile` of those keys'
 * items, key by key in the order given, without its two Maps: a node event plans one key
 * (docs/performance.md, "The event's path, planned and written per key (session 12)"). `keys` are distinct;
 * `actual.get(k)` holds only items whose actual key is `k` (an ActualCache), `desired.desired(k)` an item whose
 * desired key is `k` (a DesiredSet).
 */
export function planKeys<A, D, K extends ItemKey = string>(
  keys: Iterable<K>,
  desired: { desired(k: K): D | undefined },
  actual: { get(k: K): readonly A[] },
  ops: Pick<PlanOps<A, D, K>, 'same'>,
): ReconcilePlan<A, D> {
  const plan: ReconcilePlan<A, D> = { add: [], remove: [], replace: [], unchanged: 0 };
  for (const k of keys) {
    const items = actual.get(k);
    const d = desired.desired(k);
    if (items.length === 0) {
      if (d !== undefined) plan.add.push(d);
    } else if (d === undefined) {
      plan.remove.push(...items);
    } else {
      let keep = -1;
      for (let i = 0; i < items.length && keep < 0; i++) if (ops.same(items[i], d)) keep = i;
      if (keep >= 0) plan.unchanged++;
      else plan.replace.push({ from: items[0], to: d });
      for (let i = keep >= 0 ? 0 : 1; i < items.length; i++) if (i !== keep) plan.remove.push(items[i]);
    }
  }
  return plan;
}

/** True when `plan` writes anything for `key` (a full pass's plan leaves the keys it finds right alone). */
export function planTouches<A, D, K extends ItemKey>(plan: ReconcilePlan<A, D>, key: K, ops: PlanOps<A, D, K>): boolean {
  return plan.add.some((d) => ops.desiredKey(d) === key) || plan.replace.some((r) => ops.desiredKey(r.to) === key) || plan.remove.some((a) => ops.actualKey(a) === key);
}

/** The actual dataplane by key, as last read and changed by our own successful writes since. */
export class ActualCache<A, K extends ItemKey = string> {
  private readonly byKey = new Map<K, A[]>();
  private changes = 0;

  constructor(items: readonly A[], key: (a: A) => K) {
    for (const a of items) this.add(key(a), a);
  }

  get(k: K): readonly A[] {
    return this.byKey.get(k) ?? [];
  }

  has(k: K): boolean {
    return this.byKey.has(k);
  }

  /** Every item held. */
  values(): A[] {
    return [...this.byKey.values()].flat();
  }

  /** Counts every add and remove (what a count of the items held may be cached against). */
  get version(): number {
    return this.changes;
  }

  add(k: K, a: A): void {
    this.changes++;
    const list = this.byKey.get(k);
    if (list) list.push(a);
    else this.byKey.set(k, [a]);
  }

  remove(k: K, a: A): void {
    this.changes++;
    const rest = this.get(k).filter((x) => x !== a);
    if (rest.length > 0) this.byKey.set(k, rest);
    else this.byKey.delete(k);
  }
}

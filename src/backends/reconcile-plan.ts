// The pure reconcile plan: compare the actual dataplane items with the desired ones, by key, and say
// what to add, remove and replace. Used for the full pass (everything read) and the incremental one
// (only the keys that changed, against the cached last read).
export interface PlanOps<A, D> {
  actualKey(a: A): string;
  desiredKey(d: D): string;
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
      plan.replace.push({ from: items[0]!, to: d });
      plan.remove.push(...items.slice(1));
    }
  }
  for (const [k, d] of want) if (!have.has(k)) plan.add.push(d);
  return plan;
}


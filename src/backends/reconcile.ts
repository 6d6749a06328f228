// The reconcile engine both backends use (ARCHITECTURE.md item 6). No upstream counterpart: flannel's
// route/policy handlers apply events one by one and never sweep stale state (flannel#2554); here events
// only change the desired set, and each pass reads the actual dataplane once and writes the difference.
import type { Clock } from '../clock.js';
import { backoffDelay, pause, systemClock } from '../clock.js';
import type { Logger } from '../log.js';
import { silentLogger } from '../log.js';
import type { Metrics } from '../health/metrics.js';
import { METRIC } from '../health/metrics.js';
import { errorMessage } from '../errors.js';

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

export interface ReconcileDriver<A, D> extends PlanOps<A, D> {
  /** Short name for logs (`routes`, `remote-subnet-policies`). */
  name: string;
  /** The actual dataplane items this driver owns. */
  readActual(): Promise<A[]>;
  /** Remove these items (may batch). */
  remove(items: A[]): Promise<void>;
  /** Add these items (may batch). */
  add(items: D[]): Promise<void>;
}

export interface ReconcilerOptions<A, D> {
  driver: ReconcileDriver<A, D>;
  clock?: Clock;
  log?: Logger;
  metrics?: Metrics;
  /** Re-read and repair drift this often even without changes (default 10000 ms). */
  resyncMs?: number;
  /** Backoff after a failed pass: base * 2^n, at most cap (defaults 250 / 30000 ms). */
  backoffBaseMs?: number;
  backoffCapMs?: number;
}

export interface ApplyResult {
  ok: boolean;
  added: number;
  removed: number;
  replaced: number;
  /** True when nothing was attempted because the first complete list has not arrived (`markSynced`). */
  skipped?: boolean;
  error?: unknown;
}

export interface ReconcilerStatus {
  /** `markSynced()` was called: the desired set is complete. */
  synced: boolean;
  /** The last pass succeeded and nothing changed since. */
  inSync: boolean;
  lastSuccessAt: number | undefined;
  passes: number;
  consecutiveFailures: number;
  /** When the last pass ended, and whether it succeeded. */
  lastPassAt: number | undefined;
  lastPassOk: boolean | undefined;
  /** The last failed pass: when, and its error. */
  lastError: { at: number; message: string } | undefined;
}

export class Reconciler<A, D> {
  private readonly driver: ReconcileDriver<A, D>;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly metrics: Metrics | undefined;
  private readonly resyncMs: number;
  private readonly backoffBaseMs: number;
  private readonly backoffCapMs: number;

  private desired: D[] = [];
  private dirty = false;
  private synced = false;
  private inSync = false;
  private everSucceeded = false;
  private lastSuccessAt: number | undefined;
  private passes = 0;
  private consecutiveFailures = 0;
  private lastPassAt: number | undefined;
  private lastPassOk: boolean | undefined;
  private lastError: { at: number; message: string } | undefined;
  /** Keys of desired items the dataplane holds, as far as the passes so far know. */
  private programmed = new Set<string>();
  /** When the desired set first changed since the last successful pass (event-to-dataplane latency). */
  private pendingSince: number | undefined;
  private running: Promise<ApplyResult> | undefined;
  private wake: (() => void) | undefined;
  private readonly inSyncWaiters: (() => void)[] = [];

  constructor(opts: ReconcilerOptions<A, D>) {
    this.driver = opts.driver;
    this.clock = opts.clock ?? systemClock;
    this.log = opts.log ?? silentLogger();
    this.metrics = opts.metrics;
    this.resyncMs = opts.resyncMs ?? 10_000;
    this.backoffBaseMs = opts.backoffBaseMs ?? 250;
    this.backoffCapMs = opts.backoffCapMs ?? 30_000;
  }

  /** Replace the desired set and mark the dataplane dirty. Writes nothing by itself. */
  setDesired(items: readonly D[]): void {
    this.desired = [...items];
    this.pendingSince ??= this.clock.now();
    this.dirty = true;
    this.inSync = false;
    this.wake?.();
  }

  /** The desired set is complete (first full list seen): writes may start. */
  markSynced(): void {
    if (!this.synced) this.log.debug('desired set complete, reconcile enabled', { driver: this.driver.name });
    this.synced = true;
    this.dirty = true;
    this.wake?.();
  }

  status(): ReconcilerStatus {
    return {
      synced: this.synced,
      inSync: this.inSync,
      lastSuccessAt: this.lastSuccessAt,
      passes: this.passes,
      consecutiveFailures: this.consecutiveFailures,
      lastPassAt: this.lastPassAt,
      lastPassOk: this.lastPassOk,
      lastError: this.lastError,
    };
  }

  /** True when the last passes left the desired item with this key in the dataplane. */
  isProgrammed(key: string): boolean {
    return this.programmed.has(key);
  }

  /** Resolves after the first successful pass after `markSynced()`. */
  waitForInSync(signal?: AbortSignal): Promise<void> {
    if (this.everSucceeded) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const done = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        const i = this.inSyncWaiters.indexOf(done);
        if (i >= 0) this.inSyncWaiters.splice(i, 1);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.inSyncWaiters.push(done);
    });
  }

  /** One pass: read actual once, plan, write the difference (removals first). Serialized. */
  applyOnce(): Promise<ApplyResult> {
    const prev = this.running ?? Promise.resolve(undefined);
    const next = prev.then(() => this.pass());
    this.running = next;
    void next.finally(() => {
      if (this.running === next) this.running = undefined;
    });
    return next;
  }

  private async pass(): Promise<ApplyResult> {
    if (!this.synced) return { ok: true, added: 0, removed: 0, replaced: 0, skipped: true };
    const name = this.driver.name;
    this.dirty = false;
    this.passes++;
    const desired = this.desired;
    let added = 0;
    let removed = 0;
    let replaced = 0;
    let failure: unknown;
    const started = this.clock.now();
    const since = this.pendingSince;
    this.pendingSince = undefined;
    const key = (d: D) => this.driver.desiredKey(d);
    const wanted = new Set(desired.map(key));
    let programmed = new Set([...this.programmed].filter((k) => wanted.has(k)));
    try {
      const actual = await this.driver.readActual();
      const plan = planReconcile(actual, desired, this.driver);
      programmed = new Set(wanted);
      const toRemove = [...plan.remove, ...plan.replace.map((r) => r.from)];
      let removeOk = true;
      if (toRemove.length > 0) {
        try {
          await this.driver.remove(toRemove);
          removed = plan.remove.length;
        } catch (err) {
          removeOk = false;
          failure = err;
          for (const r of plan.replace) programmed.delete(key(r.to));
        }
      }
      // A replacement is added only once its old item is gone; plain additions go ahead regardless.
      const toAdd = removeOk ? [...plan.add, ...plan.replace.map((r) => r.to)] : plan.add;
      if (toAdd.length > 0) {
        try {
          await this.driver.add(toAdd);
          added = plan.add.length;
          if (removeOk) replaced = plan.replace.length;
        } catch (err) {
          failure ??= err;
          for (const d of toAdd) programmed.delete(key(d));
        }
      }
      if (toRemove.length + toAdd.length > 0 || failure !== undefined) {
        this.log.info('reconcile pass', { driver: name, added, removed, replaced, unchanged: plan.unchanged, ok: failure === undefined });
      }
    } catch (err) {
      failure = err;
    }
    this.programmed = programmed;
    this.lastPassAt = this.clock.now();
    this.lastPassOk = failure === undefined;
    this.metrics?.observe(METRIC.passDuration, (this.lastPassAt - started) / 1000, { result: this.lastPassOk ? 'ok' : 'error' });
    if (failure === undefined && since !== undefined) this.metrics?.observe(METRIC.eventToDataplane, (this.lastPassAt - since) / 1000);
    // A change that did not reach the dataplane keeps its start time for the next pass.
    else if (since !== undefined) this.pendingSince = Math.min(since, this.pendingSince ?? since);

    if (failure !== undefined) {
      this.lastError = { at: this.lastPassAt, message: errorMessage(failure) };
      this.dirty = true;
      this.inSync = false;
      this.consecutiveFailures++;
      this.metrics?.inc(METRIC.applyPasses, { result: 'error' });
      this.log.warn('reconcile pass failed', { driver: name, error: errorMessage(failure), consecutiveFailures: this.consecutiveFailures });
      return { ok: false, added, removed, replaced, error: failure };
    }
    this.consecutiveFailures = 0;
    this.lastSuccessAt = this.clock.now();
    this.inSync = !this.dirty;
    this.metrics?.inc(METRIC.applyPasses, { result: 'ok' });
    this.metrics?.set(METRIC.lastApplySuccess, Math.floor(this.lastSuccessAt / 1000));
    if (!this.everSucceeded) {
      this.everSucceeded = true;
      for (const w of this.inSyncWaiters.splice(0)) w();
    }
    return { ok: true, added, removed, replaced };
  }

  /**
   * Keep the dataplane in step until `signal` aborts: a pass whenever the desired set changes, a resync
   * pass every `resyncMs`, and capped exponential backoff after failures.
   */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      if (this.synced && this.dirty) {
        const r = await this.applyOnce();
        if (!r.ok) {
          const delay = backoffDelay(this.consecutiveFailures - 1, this.backoffBaseMs, this.backoffCapMs);
          this.log.info('reconcile retry scheduled', { driver: this.driver.name, delayMs: delay, attempt: this.consecutiveFailures });
          if (!(await pause(this.clock, delay, signal))) return;
        }
        continue;
      }
      // Idle: wait for a change or the resync timer.
      const ac = new AbortController();
      const onAbort = () => ac.abort(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      let woken = false;
      this.wake = () => {
        woken = true;
        ac.abort();
      };
      try {
        await this.clock.sleep(this.resyncMs, ac.signal);
      } catch {
        // woken or aborted
      } finally {
        this.wake = undefined;
        signal.removeEventListener('abort', onAbort);
      }
      if (signal.aborted) return;
      if (!woken && this.synced) this.dirty = true; // resync: re-read and repair drift
    }
  }
}

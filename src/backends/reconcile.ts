// The reconcile engine both backends use (docs/adr/0001). No upstream flannel counterpart:
// flannel's route/policy handlers apply events one by one and never sweep stale state (flannel#2554).
// The shape is Felix's Windows VXLAN manager (projectcalico/calico felix/dataplane/windows/vxlan_mgr.go:
// record the desired state, mark it dirty, apply later) with an incremental apply: the last read of the
// dataplane is kept as a cache, updated with our own successful writes, so a peer event writes only its
// own delta and reads nothing. A full read and diff happens at every resync period, after any failed
// write, and when a whole new desired set arrives (a snapshot).
import type { Clock } from '../clock.js';
import { backoffDelay, pause, systemClock } from '../clock.js';
import type { Logger } from '../log.js';
import { silentLogger } from '../log.js';
import type { Metrics } from '../health/metrics.js';
import { METRIC } from '../health/metrics.js';
import { errorMessage } from '../errors.js';
import { planReconcile, type ApplyResult, type ReconcileDriver, type ReconcilePlan, type ReconcilerStatus } from './reconcile-plan.js';
import { Latch } from './latch.js';
import { ActualCache, writePlan } from './reconcile-write.js';
import { RefusalTracker } from './refusals.js';

export { planReconcile, type ApplyResult, type PlanOps, type ReconcileDriver, type ReconcilePlan, type ReconcilerStatus } from './reconcile-plan.js';

export interface ReconcilerOptions<A, D> {
  driver: ReconcileDriver<A, D>;
  clock?: Clock;
  log?: Logger;
  metrics?: Metrics;
  /** Read everything and repair drift this often (default 10000 ms). */
  resyncMs?: number;
  /** Backoff after a failed pass, and per refused item: base * 2^n, at most cap (defaults 250 / 30000 ms). */
  backoffBaseMs?: number;
  backoffCapMs?: number;
  /** Before `markSynced()`, passes may add missing items (never remove or replace). Default false. */
  earlyAdds?: boolean;
  /** The peer (node) a desired key belongs to, for logs. */
  owner?: (key: string) => string | undefined;
  /** Recreate the network after a pass found it gone; the loop retries it with backoff until it succeeds. */
  onNetworkGone?: (signal: AbortSignal) => Promise<void>;
}

export class Reconciler<A, D> {
  private driver: ReconcileDriver<A, D>;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly metrics: Metrics | undefined;
  private readonly resyncMs: number;
  private readonly backoffBaseMs: number;
  private readonly backoffCapMs: number;
  private readonly earlyAdds: boolean;
  private readonly onNetworkGone: ((signal: AbortSignal) => Promise<void>) | undefined;
  private readonly refusals: RefusalTracker;

  private desired = new Map<string, D>();
  /** The dataplane as last read, plus our own successful writes since; undefined = read at the next pass. */
  private cache: ActualCache<A> | undefined;
  /** Keys whose desired item changed since the last pass (the incremental pass writes only these). */
  private readonly dirtyKeys = new Set<string>();
  private fullPending = true;
  private dirty = false;
  private synced = false;
  private inSync = false;
  private missing = false;
  private lastSuccessAt: number | undefined;
  private lastFullAt: number | undefined;
  private passes = 0;
  private consecutiveFailures = 0;
  private lastPassAt: number | undefined;
  private lastPassOk: boolean | undefined;
  private lastError: { at: number; message: string } | undefined;
  /** When the desired set first changed since the last successful pass (event-to-dataplane latency). */
  private pendingSince: number | undefined;
  private running: Promise<ApplyResult> | undefined;
  private wake: (() => void) | undefined;
  /** Opens at the first successful pass after `markSynced()`. */
  private readonly inSyncLatch = new Latch();
  /** Opens once the first pass after `markSynced()` was tried on an existing network. */
  private readonly firstPassLatch = new Latch();

  constructor(opts: ReconcilerOptions<A, D>) {
    this.driver = opts.driver;
    this.clock = opts.clock ?? systemClock;
    this.log = opts.log ?? silentLogger();
    this.metrics = opts.metrics;
    this.resyncMs = opts.resyncMs ?? 10_000;
    this.backoffBaseMs = opts.backoffBaseMs ?? 250;
    this.backoffCapMs = opts.backoffCapMs ?? 30_000;
    this.earlyAdds = opts.earlyAdds ?? false;
    this.onNetworkGone = opts.onNetworkGone;
    this.refusals = new RefusalTracker({
      driver: opts.driver.name,
      clock: this.clock,
      log: this.log,
      metrics: opts.metrics,
      baseMs: this.backoffBaseMs,
      capMs: this.backoffCapMs,
      owner: opts.owner,
    });
  }

  /** Replace the whole desired set (a snapshot): the next pass reads the dataplane and diffs everything. */
  setDesired(items: readonly D[]): void {
    const next = new Map<string, D>();
    for (const d of items) {
      const k = this.driver.desiredKey(d);
      if (!next.has(k)) next.set(k, d);
    }
    this.desired = next;
    this.fullPending = true;
    this.touch();
  }

  /** Change some keys of the desired set (`undefined` = no longer desired): the next pass writes only those. */
  updateDesired(changes: Iterable<readonly [string, D | undefined]>): void {
    for (const [k, d] of changes) {
      if (d === undefined) this.desired.delete(k);
      else this.desired.set(k, d);
      this.dirtyKeys.add(k);
      this.refusals.forget(k); // new content: try it now rather than after the old item's backoff
    }
    this.touch();
  }

  /** Write to another driver from now on (the network was rebuilt); the next pass reads it. */
  rebind(driver: ReconcileDriver<A, D>): void {
    this.driver = driver;
    this.cache = undefined;
    this.fullPending = true;
    this.touch();
  }

  private touch(): void {
    this.pendingSince ??= this.clock.now();
    this.dirty = true;
    this.inSync = false;
    this.wake?.();
  }

  /** The desired set is complete (first full list seen): removals, replacements and "in sync" may start. */
  markSynced(): void {
    if (!this.synced) this.log.debug('desired set complete, reconcile enabled', { driver: this.driver.name });
    this.synced = true;
    this.fullPending = true;
    this.touch();
  }

  status(): ReconcilerStatus {
    return {
      synced: this.synced,
      inSync: this.inSync,
      lastSuccessAt: this.lastSuccessAt,
      lastGoodAt: this.running === undefined && this.consecutiveFailures === 0 && !this.missing && this.lastSuccessAt !== undefined ? this.clock.now() : this.lastSuccessAt,
      passes: this.passes,
      consecutiveFailures: this.consecutiveFailures,
      networkMissing: this.missing,
      refused: this.refusals.size,
      lastPassAt: this.lastPassAt,
      lastPassOk: this.lastPassOk,
      lastError: this.lastError,
    };
  }

  /** True when the dataplane holds the desired item with this key, as far as the passes so far know. */
  isProgrammed(key: string): boolean {
    const d = this.desired.get(key);
    if (d === undefined || this.refusals.has(key) || this.dirtyKeys.has(key)) return false;
    if (this.cache) return this.cache.get(key).some((a) => this.driver.same(a, d));
    return this.inSync;
  }

  /** Resolves after the first successful pass after `markSynced()` (refused items aside). */
  waitForInSync(signal?: AbortSignal): Promise<void> {
    return this.inSyncLatch.wait(signal);
  }

  /** Resolves after the first pass after `markSynced()` was tried against an existing network, whatever its result. */
  waitForFirstPass(signal?: AbortSignal): Promise<void> {
    return this.firstPassLatch.wait(signal);
  }

  /** One full pass: read the dataplane, diff everything, write the difference (removals first). Serialized. */
  applyOnce(): Promise<ApplyResult> {
    return this.serialized(true);
  }

  private serialized(full: boolean): Promise<ApplyResult> {
    const prev = this.running ?? Promise.resolve(undefined);
    const next = prev.then(() => this.pass(full));
    this.running = next;
    void next.finally(() => {
      if (this.running === next) this.running = undefined;
    });
    return next;
  }

  private async pass(forceFull: boolean): Promise<ApplyResult> {
    const early = !this.synced;
    if (early && !this.earlyAdds) return { ok: true, added: 0, removed: 0, replaced: 0, skipped: true };
    const driver = this.driver;
    const incremental = !forceFull && !this.fullPending && this.cache !== undefined && driver.toActual !== undefined;
    const keys = incremental ? [...this.dirtyKeys] : undefined;
    const desired = this.desired;
    this.dirty = false;
    this.dirtyKeys.clear();
    if (!incremental) this.fullPending = false;
    this.passes++;
    const started = this.clock.now();
    const since = this.pendingSince;
    this.pendingSince = undefined;
    const out: ApplyResult = { ok: true, added: 0, removed: 0, replaced: 0 };
    try {
      let plan: ReconcilePlan<A, D>;
      if (!incremental) {
        const actual = await driver.readActual();
        this.lastFullAt = this.clock.now();
        this.cache = driver.toActual ? new ActualCache(actual, (a) => driver.actualKey(a)) : undefined;
        plan = planReconcile(actual, [...desired.values()], driver);
      } else {
        const cache = this.cache!;
        const want = keys!.map((k) => desired.get(k)).filter((d): d is D => d !== undefined);
        plan = planReconcile(keys!.flatMap((k) => cache.get(k)), want, driver);
      }
      const w = await writePlan(driver, plan, { early, now: this.clock.now(), refusals: this.refusals, cache: this.cache });
      Object.assign(out, { added: w.added, removed: w.removed, replaced: w.replaced }, w.refused > 0 ? { refused: w.refused } : {});
      if (w.failure !== undefined) {
        out.ok = false;
        out.error = w.failure;
      }
      if (w.attempted > 0 || w.failure !== undefined) {
        this.log.info('reconcile pass', {
          driver: driver.name,
          incremental,
          added: w.added,
          removed: w.removed,
          replaced: w.replaced,
          refused: w.refused,
          unchanged: plan.unchanged,
          ok: w.failure === undefined,
          writes: w.calls,
        });
      }
    } catch (err) {
      out.ok = false;
      out.error ??= err;
    }
    if (!incremental) await this.releaseQuietly(driver);
    this.pruneRefusals();
    this.recordPass(out, started, since);
    return this.settle(out, early, incremental);
  }

  /** The pass's figures for `flanneld status` and the histograms; a change not applied keeps its start time. */
  private recordPass(out: ApplyResult, started: number, since: number | undefined): void {
    const now = this.clock.now();
    this.lastPassAt = now;
    this.lastPassOk = out.ok;
    if (!out.ok) this.lastError = { at: now, message: errorMessage(out.error) };
    this.metrics?.observe(METRIC.passDuration, (now - started) / 1000, { result: out.ok ? 'ok' : 'error' });
    if (since === undefined) return;
    if (out.ok) this.metrics?.observe(METRIC.eventToDataplane, (now - since) / 1000);
    else this.pendingSince = Math.min(since, this.pendingSince ?? since);
  }

  private async releaseQuietly(driver: ReconcileDriver<A, D>): Promise<void> {
    try {
      await driver.release?.();
    } catch (err) {
      this.log.debug('releasing the dataplane handle failed', { driver: driver.name, error: errorMessage(err) });
    }
  }

  /** Refused keys that are neither desired nor present any more need no retry. */
  private pruneRefusals(): void {
    for (const k of this.refusals.keys()) {
      if (!this.desired.has(k) && !(this.cache?.has(k) ?? false)) this.refusals.forget(k);
    }
  }

  private settle(out: ApplyResult, early: boolean, incremental: boolean): ApplyResult {
    const name = this.driver.name;
    if (out.refused !== undefined) this.fullPending = true; // a refused write: read before trusting the cache again
    if (!out.ok) {
      out.networkGone = this.driver.networkGone?.(out.error) === true;
      this.dirty = true;
      this.fullPending = true;
      this.inSync = false;
      this.consecutiveFailures++;
      this.metrics?.inc(METRIC.applyPasses, { result: 'error' });
      if (out.networkGone) {
        if (!this.missing) this.log.warn('the HNS network is gone (HNS restarted, or it was deleted outside flanneld); recreating it with the same subnet and reprogramming every peer', { driver: name, error: errorMessage(out.error) });
        this.missing = true;
      } else {
        this.log.warn('reconcile pass failed', { driver: name, incremental, error: errorMessage(out.error), consecutiveFailures: this.consecutiveFailures });
      }
    } else {
      this.consecutiveFailures = 0;
      this.missing = false; // back (recreated by someone else when there is no rebuild hook)
      this.lastSuccessAt = this.clock.now();
      this.metrics?.inc(METRIC.applyPasses, { result: 'ok' });
      this.metrics?.set(METRIC.lastApplySuccess, Math.floor(this.lastSuccessAt / 1000));
    }
    if (early) return out; // additions only: removals, replacements and "in sync" wait for the complete list
    if (out.ok) {
      this.inSync = !this.dirty && this.refusals.size === 0;
      this.inSyncLatch.open();
    }
    if (!out.networkGone) this.firstPassLatch.open();
    return out;
  }

  /**
   * Keep the dataplane in step until `signal` aborts: a pass whenever the desired set changes (the delta
   * only), a full pass every `resyncMs`, refused items retried when their backoff ends, capped exponential
   * backoff after failures, and a rebuild when a pass finds the network gone.
   */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      if (this.missing && this.onNetworkGone) {
        if (!(await this.rebuild(signal))) return;
        continue;
      }
      if ((this.synced || this.earlyAdds) && this.dirty) {
        const r = await this.serialized(false);
        if (!r.ok && !(r.networkGone && this.onNetworkGone)) {
          const delay = backoffDelay(this.consecutiveFailures - 1, this.backoffBaseMs, this.backoffCapMs);
          this.log.info('reconcile retry scheduled', { driver: this.driver.name, delayMs: delay, attempt: this.consecutiveFailures });
          if (!(await pause(this.clock, delay, signal))) return;
        }
        continue;
      }
      await this.idle(signal);
    }
  }

  /** Wait for a change, the resync timer or the next refused item's retry. */
  private async idle(signal: AbortSignal): Promise<void> {
    const now = this.clock.now();
    const resyncIn = this.lastFullAt === undefined ? this.resyncMs : Math.max(0, this.lastFullAt + this.resyncMs - now);
    const retryAt = this.synced ? this.refusals.nextRetryAt() : undefined;
    const ms = retryAt === undefined ? resyncIn : Math.min(resyncIn, Math.max(0, retryAt - now));
    const ac = new AbortController();
    const onAbort = () => ac.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    let woken = false;
    this.wake = () => {
      woken = true;
      ac.abort();
    };
    try {
      await this.clock.sleep(ms, ac.signal);
    } catch {
      // woken or aborted
    } finally {
      this.wake = undefined;
      signal.removeEventListener('abort', onAbort);
    }
    if (signal.aborted || woken || !this.synced) return;
    const t = this.clock.now();
    const due = this.refusals.due(t);
    if (due.length > 0) {
      for (const k of due) this.dirtyKeys.add(k);
      this.dirty = true;
    }
    if (this.lastFullAt === undefined || t - this.lastFullAt >= this.resyncMs) {
      this.fullPending = true; // resync: re-read and repair drift
      this.dirty = true;
    }
  }

  /** The network is gone: recreate it (the owner's hook), then read and reprogram everything. False once aborted. */
  private async rebuild(signal: AbortSignal): Promise<boolean> {
    try {
      await this.onNetworkGone!(signal);
      this.missing = false;
      this.cache = undefined;
      this.fullPending = true;
      this.dirty = true;
      this.metrics?.inc(METRIC.networkRebuilds, { result: 'ok' });
      return true;
    } catch (err) {
      if (signal.aborted) return false;
      this.consecutiveFailures++;
      this.metrics?.inc(METRIC.networkRebuilds, { result: 'error' });
      const delay = backoffDelay(this.consecutiveFailures - 1, this.backoffBaseMs, this.backoffCapMs);
      this.log.warn('recreating the HNS network failed; retrying', { driver: this.driver.name, error: errorMessage(err), delayMs: delay });
      return pause(this.clock, delay, signal);
    }
  }
}

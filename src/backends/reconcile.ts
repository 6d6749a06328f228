// The reconcile engine both backends use (docs/adr/0001): the desired dataplane items, grouped by the peer
// (lease key) they are for, and the passes that write them. No upstream flannel counterpart:
// flannel's route/policy handlers apply events one by one and never sweep stale state (flannel#2554).
// The shape is Felix's Windows VXLAN manager (projectcalico/calico felix/dataplane/windows/vxlan_mgr.go:
// record the desired state, mark it dirty, apply later) with an incremental apply: the last read of the
// dataplane is kept as a cache, updated with our own successful writes, so a peer event writes only its
// own delta and reads nothing. A full read and diff happens at every resync period, after any failed
// or refused write, once the desired set is complete (`markSynced`, the first complete list), and when it
// is replaced whole (`setPeers`, as after a rebuild).
import type { Clock } from '../clock.js';
import { pause, systemClock } from '../clock.js';
import type { Logger } from '../log.js';
import { silentLogger } from '../log.js';
import type { Metrics } from '../health/metrics.js';
import type { NodeEvents } from '../node-events.js';
import { errorMessage } from '../errors.js';
import { PassLedger } from './pass-ledger.js';
import type { PassResult, ReconcileDriver, ReconcilePlan, ReconcilerStatus } from './reconcile-driver.js';
import { Alarm, Latch } from './latch.js';
import { ActualCache, planReconcile, planTouches, writePlan } from './reconcile-plan.js';
import { PeerItems } from './peer-items.js';
import { RefusalTracker } from './refusals.js';

export { planReconcile } from './reconcile-plan.js';
export type { LeaseDriver, PassResult, PlanOps, ReconcileDriver, ReconcilePlan, ReconcilerStatus } from './reconcile-driver.js';

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
  /** Where refused peer items are reported as Events on the own Node. */
  events?: NodeEvents;
  /** Recreate the network after a pass found it gone; the loop retries it with backoff until it succeeds. */
  onNetworkGone?: (signal: AbortSignal) => Promise<void>;
}

/** At most this many peer names in a pass's log line; the rest are counted. */
export const LOGGED_PEER_NAMES = 10;

/** `a, b, c` for the first LOGGED_PEER_NAMES distinct names, then `(+N more)`; undefined for none. */
export function peerNames(names: readonly string[]): string | undefined {
  const unique = [...new Set(names)];
  if (unique.length === 0) return undefined;
  const shown = unique.slice(0, LOGGED_PEER_NAMES).join(', ');
  return unique.length > LOGGED_PEER_NAMES ? `${shown} (+${unique.length - LOGGED_PEER_NAMES} more)` : shown;
}

export class Reconciler<A, D> {
  private driver: ReconcileDriver<A, D>;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly resyncMs: number;
  private readonly earlyAdds: boolean;
  private readonly onNetworkGone: ((signal: AbortSignal) => Promise<void>) | undefined;
  private readonly refusals: RefusalTracker;
  private readonly ledger: PassLedger;

  private desired = new Map<string, D>();
  private readonly peers = new PeerItems();
  /** Keys a peer gave up, by that peer, until a pass removes them (names in the pass's log line). */
  private readonly departed = new Map<string, string>();
  /** The dataplane as last read, plus our own successful writes since; undefined = read at the next pass. */
  private cache: ActualCache<A> | undefined;
  /** Keys whose desired item changed since the last pass (the incremental pass writes only these). */
  private readonly dirtyKeys = new Set<string>();
  private fullPending = true;
  private dirty = false;
  private synced = false;
  private inSync = false;
  private lastFullAt: number | undefined;
  private running: Promise<PassResult> | undefined;
  private readonly alarm = new Alarm();
  /** Opens at the first successful pass after `markSynced()`. */
  private readonly inSyncLatch = new Latch();
  /** Opens once the first pass after `markSynced()` was tried on an existing network. */
  private readonly firstPassLatch = new Latch();

  constructor(opts: ReconcilerOptions<A, D>) {
    this.driver = opts.driver;
    this.clock = opts.clock ?? systemClock;
    this.log = opts.log ?? silentLogger();
    this.resyncMs = opts.resyncMs ?? 10_000;
    this.earlyAdds = opts.earlyAdds ?? false;
    this.onNetworkGone = opts.onNetworkGone;
    const backoff = { baseMs: opts.backoffBaseMs ?? 250, capMs: opts.backoffCapMs ?? 30_000 };
    this.ledger = new PassLedger(this.clock, this.log, opts.metrics, backoff);
    this.refusals = new RefusalTracker({
      driver: opts.driver.name,
      clock: this.clock,
      log: this.log,
      metrics: opts.metrics,
      events: opts.events,
      ...backoff,
      owner: (key) => this.peers.owner(key),
    });
  }

  /** Replace the whole desired set (a snapshot): the next pass reads the dataplane and diffs everything. */
  setDesired(items: readonly D[]): void {
    this.setPeers([['', items]]);
  }

  /** Replace every peer's desired items (`''`: items of no peer): the next pass reads and diffs everything. */
  setPeers(peers: Iterable<readonly [string, readonly D[]]>): void {
    const next = new Map<string, D>();
    this.peers.clear();
    for (const [peer, items] of peers) {
      const keys = this.own(peer, items);
      items.forEach((d, i) => {
        if (!next.has(keys[i])) next.set(keys[i], d);
      });
    }
    this.desired = next;
    this.departed.clear();
    this.fullPending = true;
    this.touch();
  }

  /** Change some peers' desired items (`undefined` = the peer is gone): the next pass writes only their delta. */
  updatePeers(changes: Iterable<readonly [string, readonly D[] | undefined]>): void {
    const items = new Map<string, D | undefined>();
    for (const [peer, want] of changes) {
      for (const k of this.peers.release(peer)) {
        items.set(k, undefined);
        if (peer !== '') this.departed.set(k, peer);
      }
      if (want !== undefined) this.own(peer, want).forEach((k, i) => items.set(k, want[i]));
    }
    if (items.size > 0) this.updateDesired(items);
  }

  /** Record `peer` as the owner of `items`; returns their keys. */
  private own(peer: string, items: readonly D[]): string[] {
    const keys = items.map((d) => this.driver.desiredKey(d));
    this.peers.own(peer, keys);
    for (const k of keys) this.departed.delete(k);
    return keys;
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

  /** Write to another driver, with every peer's items for it, from now on (the network was rebuilt); the next pass reads it. */
  rebind(driver: ReconcileDriver<A, D>, peers: Iterable<readonly [string, readonly D[]]>): void {
    this.driver = driver;
    this.cache = undefined;
    this.setPeers(peers);
  }

  private touch(): void {
    this.ledger.changed();
    this.dirty = true;
    this.inSync = false;
    this.alarm.ring();
  }

  /** The desired set is complete (first full list seen): removals, replacements and "in sync" may start. */
  markSynced(): void {
    if (!this.synced) this.log.debug('desired set complete, reconcile enabled', { driver: this.driver.name });
    this.synced = true;
    this.fullPending = true;
    this.touch();
  }

  status(): ReconcilerStatus {
    const l = this.ledger;
    return {
      synced: this.synced,
      inSync: this.inSync,
      lastSuccessAt: l.lastSuccessAt,
      lastGoodAt: this.running === undefined && l.consecutiveFailures === 0 && !l.missing && l.lastSuccessAt !== undefined ? this.clock.now() : l.lastSuccessAt,
      passes: l.passes,
      consecutiveFailures: l.consecutiveFailures,
      networkMissing: l.missing,
      refused: this.refusals.size,
      refusedItems: this.refusals.size === 0 ? [] : this.refusals.list(),
      lastPassAt: l.lastPassAt,
      lastPassOk: l.lastPassOk,
      lastError: l.lastError,
      peersDesired: this.peers.size,
      peersProgrammed: this.peers.countHeld((k) => this.isProgrammed(k)),
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

  /** One full pass now: read the dataplane, diff everything, write the difference (removals first). Serialized. */
  passNow(): Promise<PassResult> {
    return this.serialized(true);
  }

  private serialized(full: boolean): Promise<PassResult> {
    const prev = this.running ?? Promise.resolve(undefined);
    const next = prev.then(() => this.pass(full));
    this.running = next;
    void next.finally(() => {
      if (this.running === next) this.running = undefined;
    });
    return next;
  }

  private async pass(forceFull: boolean): Promise<PassResult> {
    const early = !this.synced;
    if (early && !this.earlyAdds) return { ok: true, added: 0, removed: 0, replaced: 0, skipped: true };
    const driver = this.driver;
    const incremental = !forceFull && !this.fullPending && this.cache !== undefined && driver.toActual !== undefined;
    const keys = incremental ? [...this.dirtyKeys] : undefined;
    const desired = this.desired;
    this.dirty = false;
    this.dirtyKeys.clear();
    if (!incremental) this.fullPending = false;
    const start = this.ledger.begin();
    const out: PassResult = { ok: true, added: 0, removed: 0, replaced: 0 };
    let plan: ReconcilePlan<A, D> | undefined;
    try {
      if (!incremental) {
        const actual = await driver.readActual();
        this.lastFullAt = this.clock.now();
        this.cache = driver.toActual ? new ActualCache(actual, (a) => driver.actualKey(a)) : undefined;
        plan = planReconcile(actual, [...desired.values()], driver);
      } else {
        const cache = this.cache!;
        const want = keys!.map((k) => desired.get(k)).filter((d): d is D => d !== undefined);
        const actual = keys!.flatMap((k) => cache.get(k));
        plan = planReconcile(actual, want, driver);
      }
      const w = await writePlan(driver, plan, { early, now: this.clock.now(), refusals: this.refusals, cache: this.cache });
      Object.assign(out, { added: w.added, removed: w.removed, replaced: w.replaced }, w.refused > 0 ? { refused: w.refused } : {});
      if (w.failure !== undefined) {
        out.ok = false;
        out.error = w.failure;
      }
      if (w.attempted > 0 || w.failure !== undefined) {
        const { added, removed, replaced, refused, calls: writes } = w;
        const fields = { driver: driver.name, incremental, added, removed, replaced, refused, unchanged: plan.unchanged, ok: w.failure === undefined, writes };
        const names = { addedPeers: peerNames(w.addedKeys.map((k) => this.peers.owner(k) ?? k)), removedPeers: peerNames(w.removedKeys.map((k) => this.departed.get(k) ?? k)) };
        for (const k of w.removedKeys) this.departed.delete(k);
        // A pass that only retried refused items and got the same answers is no news: debug (refusals.ts logs changes).
        const news = added + removed + replaced > 0 || w.refusalsChanged > 0 || w.failure !== undefined;
        if (news) this.log.info('reconcile pass', { ...fields, ...names });
        else this.log.debug('reconcile pass', fields);
      }
    } catch (err) {
      out.ok = false;
      out.error ??= err;
    }
    if (!incremental) await this.releaseQuietly(driver);
    this.settleRefusals(incremental ? undefined : plan);
    this.ledger.ended(out, start);
    return this.settle(out, early, incremental);
  }

  private async releaseQuietly(driver: ReconcileDriver<A, D>): Promise<void> {
    try {
      await driver.release?.();
    } catch (err) {
      this.log.debug('releasing the dataplane handle failed', { driver: driver.name, error: errorMessage(err) });
    }
  }

  /**
   * Refused keys need no retry once they are neither desired nor present, or once the dataplane holds the
   * desired item (as the cache, or else this full pass's plan, shows): drift, another writer, or HNS took it.
   */
  private settleRefusals(fullPlan: ReconcilePlan<A, D> | undefined): void {
    for (const k of this.refusals.keys()) {
      const d = this.desired.get(k);
      const held = this.cache?.get(k) ?? [];
      if (d === undefined) {
        if (held.length === 0) this.refusals.forget(k);
      } else if (this.cache ? held.length === 1 && this.driver.same(held[0], d) : fullPlan !== undefined && !planTouches(fullPlan, k, this.driver)) {
        this.refusals.held(k);
      }
    }
  }

  private settle(out: PassResult, early: boolean, incremental: boolean): PassResult {
    if (out.refused !== undefined) this.fullPending = true; // a refused write: read before trusting the cache again
    if (!out.ok) {
      out.networkGone = this.driver.networkGone?.(out.error) === true;
      this.dirty = true;
      this.fullPending = true;
      this.inSync = false;
    }
    this.ledger.settled(out, this.driver.name, incremental);
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
      if (this.ledger.missing && this.onNetworkGone) {
        if (!(await this.rebuild(signal))) return;
        continue;
      }
      if ((this.synced || this.earlyAdds) && this.dirty) {
        const r = await this.serialized(false);
        if (!r.ok && !(r.networkGone && this.onNetworkGone)) {
          const delay = this.ledger.retryDelay();
          this.log.info('reconcile retry scheduled', { driver: this.driver.name, delayMs: delay, attempt: this.ledger.consecutiveFailures });
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
    const woken = await this.alarm.sleep(this.clock, ms, signal);
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
      this.ledger.rebuildDone();
      this.cache = undefined;
      this.fullPending = true;
      this.dirty = true;
      return true;
    } catch (err) {
      if (signal.aborted) return false;
      return pause(this.clock, this.ledger.rebuildFailed(this.driver.name, err), signal);
    }
  }
}

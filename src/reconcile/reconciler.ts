// The reconcile loop both backends use (docs/adr/0001-reconcile-as-a-set.md): it takes the changed keys from the desired side
// (`DesiredSet`: the network's is the peer store), makes the plan (./plan.ts) against its cached read of the
// dataplane, and has the writes (./writes.ts) carry it out through the driver. It knows keys and items, not
// what they are for: a second controller is another Reconciler with its own driver, desired set and
// `RefusalSink` (Felix's felix/deltatracker/delta_tracker.go is such a generic desired-vs-dataplane
// tracker; it imports nothing of its callers). No upstream
// flannel counterpart: flannel's route/policy handlers apply events one by one and never sweep stale
// state (flannel#2554). The shape is Felix's Windows VXLAN manager (projectcalico/calico
// felix/dataplane/windows/vxlan_mgr.go: record the desired state, mark it dirty, apply = read, diff,
// write) with an incremental apply: the last read of the dataplane is kept as a cache, updated with our
// own successful writes, so a peer event writes only its own delta and reads nothing. A full read and
// diff happens at every resync period, after any failed or refused write, and after a rebuild; once the
// peer set is complete (the first complete list), a full diff against the cache (a read when the cache is
// not good). Refused items are ./refusals.ts's: each waits out its
// own backoff and is retried alone, and the owner's sink hears of each.
import type { Clock } from '../basics/clock.js';
import { abortReason, pause, systemClock } from '../basics/clock.js';
import { errorMessage } from '../basics/errors.js';
import type { Logger } from '../basics/log.js';
import { silentLogger } from '../basics/log.js';
import { METRIC, type Metrics } from '../basics/metrics.js';
import { PassLedger, type PassResult } from './ledger.js';
import { ActualCache, planKeys, planReconcile, planTouches, type ItemKey, type ReconcilePlan } from './plan.js';
import { Refusals, type RefusalSink } from './refusals.js';
import { writePlan, type ReconcileDriver } from './writes.js';

// --- wake-ups ---

class Latch {
  private isOpen = false;
  private readonly waiters: (() => void)[] = [];

  open(): void {
    if (this.isOpen) return;
    this.isOpen = true;
    for (const w of this.waiters.splice(0)) w();
  }

  wait(signal?: AbortSignal): Promise<void> {
    if (this.isOpen) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(abortReason(signal));
      const done = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        const i = this.waiters.indexOf(done);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(abortReason(signal!));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(done);
    });
  }
}

/**
 * A sleep until a deadline that `ring()` cuts short (a change arrived while the reconcile loop idles).
 * The timer outlives a ring while the deadline stays the same (the next resync, or the next refused
 * item's retry), so a node event arms and cancels no timer: the profile of 10 node events a second
 * found a fifth of the loop's CPU in arming a one-hour timer and aborting it on every event.
 */
class Alarm {
  private ringer: (() => void) | undefined;
  /** Ends the current sleep (the timer fired, or the loop's signal aborted). */
  private wake: (() => void) | undefined;
  private timer: { at: number; cancel: () => void } | undefined;

  ring(): void {
    this.ringer?.();
  }

  /**
   * Sleep until `at` on `clock` (undefined: until rung); true when rung first, false when the time came or
   * `signal` aborted.
   */
  async sleep(clock: Clock, at: number | undefined, signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return false;
    if (this.timer !== undefined && this.timer.at !== at) {
      this.timer.cancel();
      this.timer = undefined;
    }
    if (this.timer === undefined && at !== undefined) this.arm(clock, at, signal);
    let rung = false;
    const aborted = () => this.wake?.(); // with a timer, its own abort listener wakes the sleep too
    if (at === undefined) signal.addEventListener('abort', aborted, { once: true });
    await new Promise<void>((resolve) => {
      this.ringer = () => {
        rung = true;
        resolve();
      };
      this.wake = resolve;
    });
    signal.removeEventListener('abort', aborted);
    this.ringer = undefined;
    this.wake = undefined;
    return rung;
  }

  /** The timer for `at`, ended early by the loop's signal; a timer for another deadline replaces it (`cancel`). */
  private arm(clock: Clock, at: number, signal: AbortSignal): void {
    const fire = () => {
      signal.removeEventListener('abort', onAbort);
      if (this.timer !== timer) return;
      this.timer = undefined;
      this.wake?.();
    };
    const stop = clock.after(Math.max(0, at - clock.now()), fire);
    const onAbort = () => {
      stop();
      fire();
    };
    const timer = {
      at,
      cancel: () => {
        stop();
        signal.removeEventListener('abort', onAbort);
      },
    };
    signal.addEventListener('abort', onAbort, { once: true });
    this.timer = timer;
  }
}

// --- the loop ---

/**
 * What the loop needs of the desired side (the peer store implements it; Felix's vxlan_mgr.go keeps the
 * same few: the desired items, a dirty mark, who they are for). A fake of it is a Map and a Set.
 */
export interface DesiredSet<D, K extends ItemKey = string> {
  /** The first complete list has arrived: removals, replacements and "in sync" may start. */
  readonly listed: boolean;
  desired(key: K): D | undefined;
  desiredItems(): D[];
  /** Keys whose desired item changed since the last call, each once. */
  takeDirty(): K[];
  /** Who a key's item is (or was, until removed) for (the peer store: the peer), for logs. */
  owner(key: K): string | undefined;
  /** These keys were removed from the dataplane. */
  removed(keys: readonly K[]): void;
  /** Called after every change. */
  subscribe(onChange: () => void): void;
}

interface ReconcilerOptions<A, D, K extends ItemKey> {
  driver: ReconcileDriver<A, D, K>;
  /** The desired items (the network's: the peer store). */
  desired: DesiredSet<D, K>;
  /** Where refused keys are reported (the network's: the peers' problems ledger). */
  sink: RefusalSink<K>;
  clock?: Clock;
  log?: Logger;
  metrics?: Metrics;
  /** Read everything and repair drift this often (default 10000 ms). */
  resyncMs?: number;
  /** Backoff after a failed pass, and per refused item: base * 2^n, at most cap (defaults 250 / 30000 ms). */
  backoffBaseMs?: number;
  backoffCapMs?: number;
  /** Recreate what the driver writes into (the HNS network) after a pass found it gone; retried with backoff until it succeeds. */
  rebuild?: (signal: AbortSignal) => Promise<void>;
  /** What owns the items (`desired.owner`), singular, as the log lines name it: `peer` (the network's), `pod` (the NetworkPolicy controller's); default `owner`. */
  owner?: string;
}

/** What the loop knows of its passes, as its owner's status carries them (the network's: src/network-status.ts NetworkStatus extends it). */
export interface ReconcileStatus {
  /** The first complete list has arrived, the last pass wrote everything and nothing changed since (no refused key either). */
  inSync: boolean;
  /** When the loop was last known good: now while it idles after a successful pass, else `lastSuccessAt`. */
  lastGoodAt: number | undefined;
  passes: number;
  consecutiveFailures: number;
  lastPassAt: number | undefined;
  lastPassOk: boolean | undefined;
  lastSuccessAt: number | undefined;
  /** The last failed pass: when, and its error. */
  lastError: { at: number; message: string } | undefined;
}

/** The loop's part of its owner's status: its passes, and what the owner names its own way. */
export interface LoopStatus extends ReconcileStatus {
  /** The last pass found what the driver writes into gone, and it is not rebuilt yet. */
  missing: boolean;
  /** Keys whose item the dataplane refuses now. */
  refused: number;
}

/** At most this many owner names in a pass's log line; the rest are counted. */
const LOGGED_OWNER_NAMES = 10;

/** `a, b, c` for the first LOGGED_OWNER_NAMES distinct names, then `(+N more)`; undefined for none. */
function ownerNames(names: readonly string[]): string | undefined {
  const unique = [...new Set(names)];
  if (unique.length === 0) return undefined;
  const shown = unique.slice(0, LOGGED_OWNER_NAMES).join(', ');
  return unique.length > LOGGED_OWNER_NAMES ? `${shown} (+${unique.length - LOGGED_OWNER_NAMES} more)` : shown;
}

export class Reconciler<A, D, K extends ItemKey = string> {
  private driver: ReconcileDriver<A, D, K>;
  private readonly clock: Clock;
  private readonly log: Logger;
  /** The levels `log` keeps, read once (as componentLogger does), not through winston at every pass. */
  private readonly logs: { info: boolean; debug: boolean };
  private readonly resyncMs: number;
  /** The owner noun of the log lines, singular and as a field name's plural (`peer`, `Peers`). */
  private readonly owner: { noun: string; field: string };
  private readonly onGone: ((signal: AbortSignal) => Promise<void>) | undefined;
  private readonly refusals: Refusals<K>;
  private readonly ledger: PassLedger;
  private readonly metrics: Metrics | undefined;
  /** The owner asked for a rebuild (HNS lost objects the driver does not read: an endpoint, the service's state). */
  private rebuildRequested = false;

  private readonly desired: DesiredSet<D, K>;
  /** The dataplane as last read, plus our own successful writes since; undefined = read at the next pass. */
  private held: ActualCache<A, K> | undefined;
  /** The changes of the caches replaced so far, and one per replacement (`version`). */
  private pastCaches = 0;
  /** Keys whose refused item is due for a retry (the incremental pass writes these and the store's dirty keys). */
  private readonly retryKeys = new Set<K>();
  private fullPending = true;
  private dirty = false;
  private inSync = false;
  /** A full pass has run since the list completed (the first one after it reads and diffs everything). */
  private fullSinceListed = false;
  private lastFullAt: number | undefined;
  /** When a full pass last read the current driver's dataplane successfully (a rebind forgets it). */
  private readAt: number | undefined;
  private running: Promise<PassResult> | undefined;
  private readonly alarm = new Alarm();
  /** Opens once the first pass after the complete list was tried and did not find what the driver writes into gone. */
  private readonly firstPassLatch = new Latch();

  constructor(opts: ReconcilerOptions<A, D, K>) {
    this.driver = opts.driver;
    this.clock = opts.clock ?? systemClock;
    this.log = opts.log ?? silentLogger();
    this.logs = { info: this.log.isLevelEnabled('info'), debug: this.log.isLevelEnabled('debug') };
    this.resyncMs = opts.resyncMs ?? 10_000;
    this.desired = opts.desired;
    this.onGone = opts.rebuild;
    this.metrics = opts.metrics;
    const noun = opts.owner ?? 'owner';
    this.owner = { noun, field: `${noun[0].toUpperCase()}${noun.slice(1)}s` };
    const backoff = { baseMs: opts.backoffBaseMs ?? 250, capMs: opts.backoffCapMs ?? 30_000 };
    this.ledger = new PassLedger(this.clock, this.log, opts.metrics, backoff, noun);
    this.refusals = new Refusals(opts.sink, this.clock, backoff);
    this.desired.subscribe(() => this.touch());
  }

  /** Write to another driver from now on (rebuilt: the desired side has made every item for it anew): the next pass reads it. */
  rebind(driver: ReconcileDriver<A, D, K>): void {
    this.driver = driver;
    this.cache = undefined;
    this.readAt = undefined;
    this.fullPending = true;
    this.touch();
  }

  /**
   * Rebuild (the owner's `rebuild`) before the next pass, as when a pass finds what the driver writes into
   * gone; `missing`: the owner found it gone itself (the status says so until it is rebuilt).
   */
  requestRebuild(missing = false): void {
    this.rebuildRequested = true;
    if (missing) this.ledger.missing = true;
    this.alarm.ring();
  }

  private touch(): void {
    this.ledger.changed();
    this.dirty = true;
    this.inSync = false;
    this.alarm.ring();
  }

  private get cache(): ActualCache<A, K> | undefined {
    return this.held;
  }

  private set cache(c: ActualCache<A, K> | undefined) {
    this.pastCaches += (this.held?.version ?? 0) + 1;
    this.held = c;
  }

  /**
   * Grows with every change of what `isProgrammed` answers from the loop's side (the cache replaced or
   * written, a refusal made or cleared; its lowest bit is `inSync`), so a count over it can be kept until
   * this or the desired side's version moves (RouteNetwork.status).
   */
  get version(): number {
    return 2 * (this.pastCaches + (this.held?.version ?? 0) + this.refusals.version) + (this.inSync ? 1 : 0);
  }

  /** The loop's part of its owner's status. */
  status(): LoopStatus {
    const l = this.ledger;
    return {
      inSync: this.desired.listed && this.inSync,
      missing: l.missing,
      lastGoodAt: this.running === undefined && l.consecutiveFailures === 0 && !l.missing && l.lastSuccessAt !== undefined ? this.clock.now() : l.lastSuccessAt,
      passes: l.passes,
      consecutiveFailures: l.consecutiveFailures,
      lastPassAt: l.lastPassAt,
      lastPassOk: l.lastPassOk,
      lastSuccessAt: l.lastSuccessAt,
      lastError: l.lastError,
      refused: this.refusals.size,
    };
  }

  /**
   * True when the dataplane holds the desired item with this key, as far as the passes so far know (a
   * key changed since the last pass took it is the desired side's to know: `PeerStore.isDirty`).
   */
  isProgrammed(key: K): boolean {
    const d = this.desired.desired(key);
    if (d === undefined || this.refusals.has(key)) return false;
    if (this.cache) return this.cache.get(key).some((a) => this.driver.same(a, d));
    return this.inSync;
  }

  /** A full pass read the current driver's dataplane successfully at `at` or later (what it writes into was there then). */
  fullReadSince(at: number): boolean {
    return this.readAt !== undefined && this.readAt >= at;
  }

  /** Resolves after the first pass after the complete list that did not find what the driver writes into gone, whatever its result. */
  waitForFirstPass(signal?: AbortSignal): Promise<void> {
    return this.firstPassLatch.wait(signal);
  }

  /** One pass now, after any pass in progress: the loop's own step (the changed keys, or everything when a full read is due). */
  pass(): Promise<PassResult> {
    // With none in progress (a node event's pass) it starts now: no hop through a resolved promise, nor a
    // pass's promise handed on by a `then` (two more), nor `finally`'s, whose promise also rejected unhandled
    // with a failed pass (docs/performance.md, "The event's path, shorter (session 13)").
    const next = this.running === undefined ? this.onePass() : this.running.then(() => this.onePass());
    this.running = next;
    const ended = () => {
      if (this.running === next) this.running = undefined;
    };
    next.then(ended, ended);
    return next;
  }

  private async onePass(): Promise<PassResult> {
    // Before the complete list the peer set is partial: a pass only adds.
    const early = !this.desired.listed;
    const driver = this.driver;
    // The first pass after the complete list plans every item, removals included: against the cache when it
    // is good (the first pass's read and our writes since), else after a read. Reading back what the list's
    // passes just wrote held up a 50,000-Node cold start for seconds (docs/performance.md, 50,000 Nodes); the
    // next resync reads the dataplane and repairs what changed behind us meanwhile.
    let fromCache = false;
    if (!early && !this.fullSinceListed) {
      this.fullSinceListed = true;
      if (!this.fullPending && this.cache !== undefined && driver.toActual !== undefined) fromCache = true;
      else this.fullPending = true;
    }
    const incremental = !fromCache && !this.fullPending && this.cache !== undefined && driver.toActual !== undefined;
    const changed = this.desired.takeDirty();
    for (const k of changed) this.refusals.clear(k, 'forgotten'); // new content: try it now rather than after the old item's backoff
    // The keys to plan: the changed ones and the refused ones due for a retry, each once (`changed` is).
    let keys: readonly K[] = changed;
    if (incremental && this.retryKeys.size > 0) keys = [...new Set([...changed, ...this.retryKeys])];
    this.dirty = false;
    if (this.retryKeys.size > 0) this.retryKeys.clear(); // an empty Set's clear allocates (src/peers/store.ts applyUpdate)
    if (!incremental) this.fullPending = false;
    const start = this.ledger.begin();
    const out: PassResult = { ok: true, added: 0, removed: 0, replaced: 0 };
    let plan: ReconcilePlan<A, D> | undefined;
    try {
      if (fromCache) {
        plan = planReconcile(this.cache!.values(), this.desired.desiredItems(), driver);
      } else if (!incremental) {
        const before = this.cache;
        const actual = await driver.readActual();
        this.lastFullAt = this.clock.now();
        if (driver === this.driver) this.readAt = this.lastFullAt;
        this.cache = driver.toActual ? new ActualCache(actual, (a) => driver.actualKey(a)) : undefined;
        plan = planReconcile(actual, this.desired.desiredItems(), driver);
        if (before) this.countDrift(driver, before, plan);
      } else {
        plan = planKeys(keys, this.desired, this.cache!, driver);
      }
      const w = await writePlan(driver, plan, { early, now: this.clock.now(), refusals: this.refusals, cache: this.cache });
      Object.assign(out, { added: w.added, removed: w.removed, replaced: w.replaced }, w.refused > 0 ? { refused: w.refused } : {});
      if (w.failure !== undefined) {
        out.ok = false;
        out.error = w.failure;
      }
      if (w.attempted > 0 || w.failure !== undefined) {
        const { added, removed, replaced, refused, calls: writes } = w;
        // An incremental pass is routine (one per Node event): debug, summed up at info by the ledger once a
        // minute. A full pass that wrote is not (the first programming, a rebuild, a repair): info. A failure
        // and a refusal are the ledgers' to tell, at warn. The line's fields are built only when it is kept.
        const news = added + removed + replaced > 0 || w.refusalsChanged > 0 || w.failure !== undefined;
        const level = news && !incremental ? 'info' : 'debug';
        if (this.logs[level]) {
          this.log[level]('reconcile pass', {
            driver: driver.name,
            incremental,
            added,
            removed,
            replaced,
            refused,
            unchanged: plan.unchanged,
            ok: w.failure === undefined,
            writes,
            [`added${this.owner.field}`]: ownerNames(w.addedKeys.map((k) => this.desired.owner(k) ?? String(k))),
            [`removed${this.owner.field}`]: ownerNames(w.removedKeys.map((k) => this.desired.owner(k) ?? String(k))),
          });
        }
        this.desired.removed(w.removedKeys);
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

  /** Items the last read (and our writes since) held as desired that this full read finds gone: drift, re-added now. */
  private countDrift(driver: ReconcileDriver<A, D, K>, before: ActualCache<A, K>, plan: ReconcilePlan<A, D>): void {
    const lost = plan.add.filter((d) => before.get(driver.desiredKey(d)).some((a) => driver.same(a, d)));
    if (lost.length === 0) return;
    this.metrics?.inc(METRIC.driftRepairs, { kind: driver.driftKind }, lost.length);
    this.log.warn(`${this.owner.noun} items programmed before are gone from the dataplane (HNS restarted, or someone removed them); re-adding them`, {
      driver: driver.name,
      items: lost.length,
      [this.owner.field.toLowerCase()]: ownerNames(lost.map((d) => this.desired.owner(driver.desiredKey(d)) ?? String(driver.desiredKey(d)))),
    });
  }

  private async releaseQuietly(driver: ReconcileDriver<A, D, K>): Promise<void> {
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
    if (this.refusals.size === 0) return; // the usual pass: no list of keys to make
    for (const k of this.refusals.keys()) {
      const d = this.desired.desired(k);
      const held = this.cache?.get(k) ?? [];
      if (d === undefined) {
        if (held.length === 0) this.refusals.clear(k, 'forgotten');
      } else if (this.cache ? held.length === 1 && this.driver.same(held[0], d) : fullPlan !== undefined && !planTouches(fullPlan, k, this.driver)) {
        this.refusals.clear(k, 'held');
      }
    }
  }

  private settle(out: PassResult, early: boolean, incremental: boolean): PassResult {
    if (out.refused !== undefined) this.fullPending = true; // a refused write: read before trusting the cache again
    if (!out.ok) {
      out.gone = this.driver.failure?.(out.error) === 'gone';
      this.dirty = true;
      this.fullPending = true;
      this.inSync = false;
    }
    this.ledger.settled(out, this.driver.name, incremental);
    if (early) return out; // additions only: removals, replacements and "in sync" wait for the complete list
    if (out.ok) this.inSync = !this.dirty && this.refusals.size === 0;
    if (!out.gone) this.firstPassLatch.open();
    return out;
  }

  /**
   * Keep the dataplane in step until `signal` aborts: a pass whenever the desired set changes (the delta
   * only), a full pass every `resyncMs`, refused items retried when their backoff ends, capped exponential
   * backoff after failures, and a rebuild when a pass finds what the driver writes into gone.
   */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      if ((this.ledger.missing || this.rebuildRequested) && this.onGone) {
        if (!(await this.rebuild(signal))) return;
        continue;
      }
      if (this.dirty) {
        const r = await this.pass();
        if (!r.ok && !(r.gone && this.onGone)) {
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
    const resyncAt = this.lastFullAt === undefined ? now + this.resyncMs : Math.max(now, this.lastFullAt + this.resyncMs);
    const listed = this.desired.listed;
    const retryAt = listed ? this.refusals.nextRetryAt() : undefined;
    // Before the complete list a resync already due waits for the list's end (which rings): a timer for it
    // would wake the loop at once, again and again, for as long as the list pages. Retries wait for it too.
    const at = !listed && resyncAt <= now ? undefined : retryAt === undefined ? resyncAt : Math.min(resyncAt, Math.max(now, retryAt));
    const woken = await this.alarm.sleep(this.clock, at, signal);
    if (signal.aborted || woken || !listed) return;
    const t = this.clock.now();
    const due = this.refusals.due(t);
    if (due.length > 0) {
      for (const k of due) this.retryKeys.add(k);
      this.dirty = true;
    }
    if (this.lastFullAt === undefined || t - this.lastFullAt >= this.resyncMs) {
      this.fullPending = true; // resync: re-read and repair drift
      this.dirty = true;
    }
  }

  /** What the driver writes into is gone: recreate it (the owner's hook), then read and reprogram everything. False once aborted. */
  private async rebuild(signal: AbortSignal): Promise<boolean> {
    try {
      await this.onGone!(signal);
      this.rebuildRequested = false;
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

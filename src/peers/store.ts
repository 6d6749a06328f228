// The peer store: the one copy of the peer set. The list-watch (kube or etcd) hands it every peer as
// `{key, lease | undefined}`; the store drops what did not change (the one change filter), validates the
// rest, settles contested subnets, asks the backend's driver for the items each accepted peer needs and
// marks those items dirty. The reconciler (src/reconcile/reconciler.ts) reads the desired items and the
// dirty keys from here (the store is its `DesiredSet`), diffs them against its cached read of the dataplane
// and writes.
// Mirrors flannel pkg/lease/watch.go (LeaseWatcher: reset/update, drop the own lease) and the record side
// of Felix's Windows VXLAN manager (felix/dataplane/windows/vxlan_mgr.go: routes recorded by node, a
// dirty flag), and adds what upstream lacks: validation of every lease and a rule for contested subnets.
// Upstream (pkg/subnet/kube/kube.go) passes every Node on, so two Nodes claiming one podCIDR both get
// routes and the later event wins. Here:
// - the holder keeps its subnet; a subnet changes hands only when its holder is deleted, moves to another
//   subnet or turns invalid, and the handover is logged;
// - a subnet nobody holds (the first complete list, or after a handover) goes to the claimant with the
//   oldest creation time (Node metadata.creationTimestamp), with equal times to the one whose name sorts
//   first (claimsFirst, ../subnet/lease.ts: the rule the agent applies to its own Node at its first start);
// - every node refused a subnet is a conflict: logged once, naming both nodes, and counted.
// The first complete list decides every contested subnet from scratch: peers seen before it only add (a
// provisional holder may lose its subnet to an older claimant on a later page when the list completes).
// Subnets arrive normalised (network-address form) from the list-watch; the store compares them as text.
// A dual-stack peer's IPv6 subnet rides along with its IPv4 lease: its items are the driver's (one route
// per family), and two peers wanting one IPv6 route key are settled as any shared item key (first claimant).
// A bad IPv6 half is rejected alone (docs/compatibility.md, Dual-stack): the peer is accepted with its IPv4
// half only, and the IPv6 rejection is the ledger's (counted, logged, an Event, in the status).
import { whenHolds, type Clock } from '../basics/clock.js';
import type { Logger } from '../basics/log.js';
import { silentLogger } from '../basics/log.js';
import type { Metrics } from '../basics/metrics.js';
import { METRIC } from '../basics/metrics.js';
import type { RejectedLease } from '../network-status.js';
import type { NodeEvents } from '../node-events.js';
import { claimsFirst, type Lease, type LeaseUpdate, type PeerLease } from '../subnet/lease.js';
import { digest, keptText, PeerProblems } from './problems.js';
import { CONFLICT_REASONS, type LeaseRejectReason } from './reject-reasons.js';
import type { IPv6Rejected, LeaseValidation, LeaseValidationContext } from './validate.js';
import { validateLease } from './validate.js';

/** What the store asks the backend's driver: the items a valid peer lease needs, and their keys. */
export interface ItemSource<D> {
  desiredFor(peer: Lease): D[];
  desiredKey(d: D): string;
}

export interface PeerStoreOptions<D> {
  /** Key of the own lease (kube: the own Node name; etcd: the own subnet key). */
  ownLeaseKey?: string;
  /** The own subnet; a lease for it is the own lease and is dropped. */
  ownSubnet: string;
  /** How peer leases are validated (`ownSubnet` defaults to the one above). */
  validation: LeaseValidationContext;
  /** Makes a peer's items. */
  items: ItemSource<D>;
  log?: Logger;
  metrics?: Metrics;
  clock?: Clock;
  /** Where a newly rejected peer is reported as a Kubernetes Event on the own Node (default: nowhere). */
  events?: NodeEvents;
  /** One rejection line per node and reason per this interval (default 60 s). */
  rejectLogIntervalMs?: number;
  /** The problems ledger rejected peers go to (shared with the reconcile loop, whose refusals it is told of; default: one of its own from the above). */
  problems?: PeerProblems;
}

function stable(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stable).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .filter((k) => o[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${stable(o[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'undefined';
}

/** What makes a lease matter to the dataplane (expiration renewals do not). */
export function leaseContent(l: Lease): string {
  const v6 = l.ipv6Subnet !== undefined || l.publicIPv6 !== undefined ? [l.ipv6Subnet ?? null, l.publicIPv6 ?? null] : [];
  return stable([l.subnet, l.publicIP, l.backendType, l.backendData ?? null, ...v6]);
}

/** A lease's VNI, when its backend-data has a number there (what a rejected peer's status entry shows). */
function vniOf(l: Lease): { vni?: number } {
  const vni = (l.backendData as { VNI?: unknown } | null | undefined)?.VNI;
  return typeof vni === 'number' ? { vni } : {};
}

/** Whether two leases of one peer differ in anything the dataplane or the subnet holders care about. */
function sameLease(a: Lease, b: Lease): boolean {
  if (a.subnet !== b.subnet || a.publicIP !== b.publicIP || a.backendType !== b.backendType || a.created !== b.created) return false;
  if (a.ipv6Subnet !== b.ipv6Subnet || a.publicIPv6 !== b.publicIPv6) return false;
  // Every status update of a node comes here with the same backend-data decoded again.
  return sameJson(a.backendData ?? null, b.backendData ?? null);
}

/**
 * Whether two decoded JSON values are equal, whatever the order of their keys. It allocates nothing: every
 * status update of a node compares its backend-data, which two JSON.stringify texts made about 470 bytes of
 * garbage for (docs/performance.md, session 13).
 */
function sameJson(x: unknown, y: unknown): boolean {
  if (x === y) return true;
  if (typeof x !== 'object' || typeof y !== 'object' || x === null || y === null || Array.isArray(x) !== Array.isArray(y)) return false;
  const a = x as Record<string, unknown>;
  const b = y as Record<string, unknown>;
  let n = 0;
  for (const k in a) {
    if (!Object.hasOwn(b, k) || !sameJson(a[k], b[k])) return false;
    n++;
  }
  for (const _ in b) n--;
  return n === 0;
}

/** The IPv6 half's rejection of an accepted lease's verdict. */
function ipv6Of(v: LeaseValidation): IPv6Rejected | undefined {
  return v.ok ? v.ipv6 : undefined;
}

/** The lease without its IPv6 half (what is routed when that half is rejected). */
function ipv4Half(l: Lease): Lease {
  const { ipv6Subnet: _sn6, publicIPv6: _ip6, ...v4 } = l;
  return v4;
}

/** The most characters of a set-aside lease's subnet, public IP and backend type kept for the status. */
const MAX_SHOWN = 64;

/** What the status shows of a rejected lease (network-status.ts RejectedLease). */
interface Shown {
  subnet: string;
  publicIP: string;
  backendType: string;
  vni?: number;
}

function shownOf(l: Lease): Shown {
  return { subnet: l.subnet, publicIP: l.publicIP, backendType: l.backendType, ...vniOf(l) };
}

/**
 * A lease rejected by validation, set aside: not a claimant of its subnet (an invalid lease never holds
 * one) and kept as what the status shows of it (cut) and the digest of its content, which the change
 * filter compares, instead of the lease (a hostile one carries kilobytes of annotations).
 */
interface SetAside extends Shown {
  content: string;
}

interface Peer<D> {
  /**
   * The lease as last reported (own lease excluded) while it claims its subnet; undefined while a gone
   * peer is being released, and once a lease rejected by validation is set aside (`invalid`).
   */
  lease: Lease | undefined;
  invalid?: SetAside;
  /** Accepted: the subnet it holds, the items it needs and their keys. */
  held?: string;
  items?: D[];
  keys?: string[];
}

export class PeerStore<D> {
  private readonly ownLeaseKey: string | undefined;
  private readonly ownSubnet: string;
  private readonly ctx: LeaseValidationContext;
  private readonly log: Logger;
  private readonly metrics: Metrics | undefined;
  private readonly problems: PeerProblems;
  private source: ItemSource<D>;
  /** Every peer reported, by key. */
  private readonly peersByKey = new Map<string, Peer<D>>();
  /**
   * Reported keys by subnet: the claimants of each subnet, the one key itself while one peer claims it and a
   * Set only while several do (a Set per subnet was 150 bytes a peer: docs/performance.md, session 13).
   */
  private readonly claimants = new Map<string, string | Set<string>>();
  /** The key holding each accepted subnet, and how many peers are accepted. */
  private readonly holder = new Map<string, string>();
  private acceptedCount = 0;
  /** The desired items by key, the peer each belongs to (the first claimant wins), and keys changed since the reconciler last took them. */
  private readonly desiredByKey = new Map<string, D>();
  private readonly ownerOf = new Map<string, string>();
  private readonly dirtyKeys = new Set<string>();
  /** Keys a peer gave up, by that peer, until the reconciler has removed them (names in its log line). */
  private readonly departed = new Map<string, string>();
  private isListed = false;
  /** During apply(): subnets some claimant left (a tie may be resolved now). */
  private readonly left = new Set<string>();
  private onChange: () => void = () => {};
  /** Changes of the items, their keys or the dirty keys so far (`version`). */
  private changes = 0;
  /** whenFree's checks, run after every update that changed a lease. */
  private readonly freeChecks = new Set<() => void>();

  constructor(opts: PeerStoreOptions<D>) {
    this.ownLeaseKey = opts.ownLeaseKey;
    this.ownSubnet = opts.ownSubnet;
    this.ctx = { ...opts.validation, ownSubnet: opts.validation.ownSubnet ?? opts.ownSubnet };
    this.source = opts.items;
    this.log = opts.log ?? silentLogger();
    this.metrics = opts.metrics;
    this.problems =
      opts.problems ?? new PeerProblems({ log: this.log, metrics: this.metrics, clock: opts.clock, events: opts.events, rejectLogIntervalMs: opts.rejectLogIntervalMs });
  }

  /** Called after every change of the desired items or of `listed` (the reconciler wakes up). */
  subscribe(onChange: () => void): void {
    this.onChange = onChange;
  }

  /** The first complete list has arrived: removals, replacements and "in sync" may start. */
  get listed(): boolean {
    return this.isListed;
  }

  /** Accepted peers. */
  get size(): number {
    return this.acceptedCount;
  }

  /** Peer leases rejected now (their current content), with the reason, and accepted ones' rejected IPv6 halves; sorted by key. */
  rejected(): RejectedLease[] {
    const out: RejectedLease[] = [];
    if (this.problems.rejectedCount === 0) return out; // the common case, asked on every status read
    for (const key of [...this.peersByKey.keys()].sort()) {
      const { lease, held, invalid } = this.peersByKey.get(key)!;
      const shown = lease ? shownOf(lease) : invalid;
      if (!shown) continue;
      const why = held === undefined ? this.problems.rejection(key) : undefined;
      if (why) out.push({ key, subnet: shown.subnet, publicIP: shown.publicIP, ...why, backendType: shown.backendType, ...(shown.vni !== undefined ? { vni: shown.vni } : {}) });
      const v6 = held !== undefined && lease ? this.problems.ipv6Rejection(key) : undefined;
      if (v6 && lease) out.push({ key, family: 'ipv6', subnet: lease.ipv6Subnet ?? '', publicIP: lease.publicIPv6 ?? '', ...v6, backendType: lease.backendType, ...vniOf(lease) });
    }
    return out;
  }

  /**
   * Who keeps `subnet` against a Node created at `created` (ms since the epoch; undefined = unknown) that
   * claims it: the own Node registered again with another podCIDR. The rule `decide` applies to peers
   * (claimsFirst: the older Node keeps a contested subnet, with equal times the one whose name sorts first);
   * so a peer that holds or validly claims `subnet` and would win against the own Node keeps it (the holder
   * first, else the first by that rule). Undefined: that Node may take it.
   */
  keeperOf(subnet: string, created: number | undefined): string | undefined {
    const own = { key: this.ownLeaseKey ?? '', created };
    let keeper: Lease | undefined;
    for (const key of this.claimantsOf(subnet)) {
      const l = this.peersByKey.get(key)?.lease;
      if (!l || claimsFirst(own, l)) continue; // the own Node would win: this one would lose the subnet
      if (this.holder.get(subnet) === key) return key;
      if (!keeper || claimsFirst(l, keeper)) keeper = l;
    }
    return keeper?.key;
  }

  /** Resolves once no peer keeps `subnet` against a Node created at `created` (keeperOf), checked after every change; rejects when `signal` aborts. */
  whenFree(subnet: string, created: number | undefined, signal: AbortSignal): Promise<void> {
    return whenHolds(this.freeChecks, () => this.keeperOf(subnet, created) === undefined, signal);
  }

  // --- the desired items, as the reconciler reads them ---

  desired(key: string): D | undefined {
    return this.desiredByKey.get(key);
  }

  desiredItems(): D[] {
    return [...this.desiredByKey.values()];
  }

  /** Grows with every change of the accepted peers' keys, the desired items or the dirty keys (what `countProgrammed` reads). */
  get version(): number {
    return this.changes;
  }

  /** The keys whose desired item changed since the last call (each once). */
  takeDirty(): string[] {
    if (this.dirtyKeys.size > 0) this.changes++;
    const keys = [...this.dirtyKeys];
    this.dirtyKeys.clear();
    return keys;
  }

  isDirty(key: string): boolean {
    return this.dirtyKeys.has(key);
  }

  /** The peer an item key is for, or was for until it gave it up (for logs). */
  owner(key: string): string | undefined {
    return this.ownerOf.get(key) ?? this.departed.get(key);
  }

  /** The reconciler removed these keys: their departed owners are no longer needed. */
  removed(keys: readonly string[]): void {
    for (const k of keys) this.departed.delete(k);
  }

  /** How many accepted peers have every one of their items `held`. */
  countProgrammed(held: (key: string) => boolean): number {
    let n = 0;
    for (const p of this.peersByKey.values()) if (p.keys && p.keys.every(held)) n++;
    return n;
  }

  /** Make the items from another source from now on (the network was rebuilt): every peer's items anew, all dirty. */
  rebind(items: ItemSource<D>): void {
    this.source = items;
    this.desiredByKey.clear();
    this.ownerOf.clear();
    this.departed.clear();
    for (const [key, p] of this.peersByKey) if (p.held !== undefined && p.lease) this.accept(key, p, p.lease, ipv6Of(validateLease(p.lease, this.ctx)));
    this.changes++;
    this.onChange();
  }

  // --- the updates from the subnet manager ---

  /** Take one update from the subnet manager (bound: pass it as the watch's callback). */
  readonly apply = (update: LeaseUpdate): void => {
    try {
      this.applyUpdate(update);
    } catch (err) {
      this.changes++; // it may have changed items before it failed
      // A bug here must not stop the watch; the next list repairs what was missed.
      this.log.error('peer update failed', { error: err instanceof Error ? err.message : String(err) });
    }
  };

  private applyUpdate(update: LeaseUpdate): void {
    // 1. Bring the reported leases up to date and collect the keys whose lease changed.
    const touched = new Set<string>();
    const firstList = update.kind === 'listed' && !this.isListed;
    if (update.kind === 'listed') {
      for (const key of [...this.peersByKey.keys()]) if (!update.keys.has(key)) this.report({ key, lease: undefined }, touched);
      this.isListed = true;
      // The first complete list decides every contested subnet afresh (holders seen before it were
      // provisional: an older claimant may have come on a later page). A subnet one peer claims and holds is
      // decided as it was, by that peer's verdict alone: deciding it again re-made every peer's items, 1.3 s
      // of a 50,000-Node cold start (docs/performance.md, 50,000 Nodes).
      if (firstList) for (const [sn, c] of this.claimants) if (c !== this.holder.get(sn)) for (const key of typeof c === 'string' ? [c] : c) touched.add(key);
    } else {
      for (const p of update.peers) this.report(p, touched);
    }
    if (touched.size > 0) this.settle(touched, firstList);
    // Only when it holds something: V8's Set#clear gives the Set a new table even when it is empty, and this
    // long-lived Set's new table was promoted at the next scavenge: about 100 bytes of old space a status
    // update, collected only by a mark-compact (docs/performance.md, session 17).
    if (this.left.size > 0) this.left.clear();
    if (touched.size > 0) this.changes++;
    if (touched.size > 0 || firstList) this.onChange();
    if (touched.size > 0 && this.freeChecks.size > 0) for (const check of [...this.freeChecks]) check();
  }

  /** The own lease: by key when the manager names it (a peer with our subnet is then rejected), else by subnet. */
  private isOwn(l: Lease): boolean {
    if (this.ownLeaseKey !== undefined) return l.key === this.ownLeaseKey;
    return l.subnet === this.ownSubnet;
  }

  /** Record what one peer reports now; a key whose lease changed goes into `touched`. */
  private report({ key, lease }: PeerLease, touched: Set<string>): void {
    const cur = this.peersByKey.get(key);
    if (lease !== undefined && this.isOwn(lease)) {
      this.log.debug('own lease ignored', { node: key, subnet: lease.subnet });
      lease = undefined;
    }
    if (lease === undefined) {
      this.problems.forgetNode(key);
      if (cur?.invalid) this.peersByKey.delete(key); // a set-aside lease holds and claims nothing
      if (!cur?.lease) return;
      this.unclaim(key, cur.lease);
      cur.lease = undefined;
      touched.add(key);
      return;
    }
    // The same lease again (a status update): no dataplane work, and the stored one stays. Storing the new copy,
    // equal in every field sameLease reads (all of a Lease's), pointed the old peer at a young lease at every
    // update, which was then promoted: old space grew by it until a mark-compact (docs/performance.md, session 14).
    if (cur?.lease && sameLease(cur.lease, lease)) return;
    if (cur?.invalid && cur.invalid.content === digest(leaseContent(lease))) return; // the same invalid lease again
    if (cur?.lease) this.unclaim(key, cur.lease);
    if (cur) {
      cur.lease = lease;
      delete cur.invalid;
    } else this.peersByKey.set(key, { lease });
    const c = this.claimants.get(lease.subnet);
    if (c === undefined) this.claimants.set(lease.subnet, key);
    else if (typeof c !== 'string') c.add(key);
    else if (c !== key) this.claimants.set(lease.subnet, new Set([c, key]));
    touched.add(key);
  }

  /** A lease rejected by validation leaves its subnet's claimants and is kept as what the status and the change filter need. */
  private setAside(p: Peer<D>, lease: Lease): void {
    this.unclaim(lease.key, lease);
    p.lease = undefined;
    p.invalid = {
      subnet: keptText(lease.subnet, MAX_SHOWN),
      publicIP: keptText(lease.publicIP, MAX_SHOWN),
      backendType: keptText(lease.backendType, MAX_SHOWN),
      ...vniOf(lease),
      content: digest(leaseContent(lease)),
    };
  }

  /** The keys claiming `sn`. */
  private claimantsOf(sn: string): Iterable<string> {
    const c = this.claimants.get(sn);
    return c === undefined ? [] : typeof c === 'string' ? [c] : c;
  }

  private unclaim(key: string, old: Lease): void {
    this.left.add(old.subnet);
    const c = this.claimants.get(old.subnet);
    if (c === key) this.claimants.delete(old.subnet);
    else if (typeof c === 'object' && c.delete(key) && c.size === 1) this.claimants.set(old.subnet, c.values().next().value!);
  }

  /** Steps 2-4: free the subnets of changed holders, decide the claimed subnets, update the items. */
  private settle(touched: Set<string>, firstList: boolean): void {
    const verdicts = new Map<string, LeaseValidation>();
    const verdict = (l: Lease): LeaseValidation => {
      let v = verdicts.get(l.key);
      if (!v) verdicts.set(l.key, (v = validateLease(l, this.ctx)));
      return v;
    };
    // 2. A holder whose lease changed keeps its subnet if it still claims it validly; otherwise (gone,
    //    moved, invalid) the subnet is freed. On the first complete list every subnet is freed.
    const freed = new Map<string, string>();
    const changed = new Set<string>();
    for (const key of touched) {
      const p = this.peersByKey.get(key)!;
      const held = p.held;
      if (held === undefined) continue;
      if (!firstList && p.lease && p.lease.subnet === held && verdict(p.lease).ok) {
        changed.add(key); // same subnet, new content: new items
        continue;
      }
      this.holder.delete(held);
      freed.set(held, key);
      this.release(key, p);
    }
    // 3. Decide every subnet a touched lease claims, and every freed subnet.
    const subnets = new Set<string>(this.left);
    for (const sn of freed.keys()) subnets.add(sn);
    for (const key of touched) {
      const lease = this.peersByKey.get(key)!.lease;
      if (lease) subnets.add(lease.subnet);
    }
    for (const sn of subnets.size > 1 ? [...subnets].sort() : subnets) this.decide(sn, verdict, freed.get(sn), changed);
    // 4. New items for the peers accepted with new content; the rest were released or accepted above.
    for (const key of changed) {
      const p = this.peersByKey.get(key)!;
      if (p.held !== undefined && p.lease) this.accept(key, p, p.lease, ipv6Of(verdict(p.lease)));
    }
    for (const key of touched) {
      const p = this.peersByKey.get(key)!;
      if (!p.lease) this.peersByKey.delete(key);
      else if (p.held === undefined) {
        this.problems.ipv6Cleared(key); // not accepted now: its IPv6 half is no news
        if (verdicts.get(key)?.ok === false) this.setAside(p, p.lease);
      }
    }
    this.metrics?.set(METRIC.peers, this.acceptedCount);
  }

  /** Who holds subnet `sn` now: its holder if any, else the first valid claimant by claimsFirst. */
  private decide(sn: string, verdict: (l: Lease) => LeaseValidation, freedFrom: string | undefined, changed: Set<string>): void {
    const valid: Lease[] = [];
    for (const key of this.claimantsOf(sn)) {
      const l = this.peersByKey.get(key)!.lease!;
      const v = verdict(l);
      if (v.ok) valid.push(l);
      else this.reject(l, v.reason, v.message);
    }
    let holder = this.holder.get(sn);
    if (holder === undefined && valid.length > 0) {
      const first = valid.reduce((a, b) => (claimsFirst(b, a) ? b : a));
      holder = first.key;
      const waited = this.problems.rejection(holder)?.reason;
      this.holder.set(sn, holder);
      this.problems.accepted(holder);
      changed.delete(holder);
      const p = this.peersByKey.get(holder)!;
      p.held = sn;
      this.accept(holder, p, first, ipv6Of(verdict(first)));
      if ((freedFrom !== undefined && freedFrom !== holder) || (waited !== undefined && CONFLICT_REASONS.has(waited))) {
        this.log.info('subnet handed over', { subnet: sn, from: freedFrom ?? '', to: holder });
      }
    }
    for (const l of valid) {
      if (l.key === holder) continue;
      this.reject(l, 'subnet-overlaps-peer', `subnet ${l.subnet} is already held by ${holder!}`, holder);
    }
  }

  private reject(l: Lease, reason: LeaseRejectReason, message: string, other?: string): void {
    // The log line names the lease by what it published, cut as the status shows it (a hostile public-ip is a kilobyte).
    const fields: Record<string, unknown> = { subnet: keptText(l.subnet, MAX_SHOWN), publicIP: keptText(l.publicIP, MAX_SHOWN) };
    if (other !== undefined) fields.otherNode = other;
    // The ledger counts a new verdict, logs it, raises its Event and lists it in the status.
    this.problems.reject({ node: l.key, reason, sig: `${reason}|${other ?? ''}|${leaseContent(l)}`, message, fields });
  }

  /** Accept `lease` for peer `key`: its items (anew; without its IPv6 half when that is rejected), dirty where they changed. */
  private accept(key: string, p: Peer<D>, lease: Lease, ipv6: IPv6Rejected | undefined): void {
    const had = p.keys;
    if (had) this.dropItems(key, had);
    else this.acceptedCount++;
    if (ipv6) {
      const fields = { subnet: lease.subnet, ipv6Subnet: lease.ipv6Subnet, publicIPv6: keptText(lease.publicIPv6 ?? '', MAX_SHOWN) };
      this.problems.rejectIPv6({ node: key, reason: ipv6.reason, sig: `${ipv6.reason}|${lease.ipv6Subnet ?? ''}|${lease.publicIPv6 ?? ''}`, message: ipv6.message, fields });
    } else this.problems.ipv6Cleared(key);
    const items = this.source.desiredFor(ipv6 ? ipv4Half(lease) : lease);
    const keys = items.map((d) => this.source.desiredKey(d));
    p.lease = lease;
    p.items = items;
    p.keys = keys;
    // A peer's keys repeat only when it has several items (dual-stack): no Set of them for one (a node event's).
    const seen = items.length > 1 ? new Set<string>() : undefined;
    for (let i = 0; i < items.length; i++) {
      const k = keys[i];
      const owner = this.ownerOf.get(k);
      if ((owner !== undefined && owner !== key) || seen?.has(k)) continue; // the first claim of a key wins
      seen?.add(k);
      this.ownerOf.set(k, key);
      this.departed.delete(k);
      this.desiredByKey.set(k, items[i]);
      this.dirtyKeys.add(k);
    }
  }

  /** `key` is no longer accepted: its items are no longer desired. */
  private release(key: string, p: Peer<D>): void {
    if (p.keys) this.dropItems(key, p.keys);
    // Cleared, not deleted: a deleted property turns the object into a dictionary (V8), a cost on every event.
    p.held = undefined;
    p.items = undefined;
    p.keys = undefined;
    this.acceptedCount--;
  }

  private dropItems(key: string, keys: readonly string[]): void {
    for (const k of keys) {
      if (this.ownerOf.get(k) !== key) continue;
      this.ownerOf.delete(k);
      this.desiredByKey.delete(k);
      this.departed.set(k, key);
      this.dirtyKeys.add(k);
    }
  }
}

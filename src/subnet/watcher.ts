// The pure peer-lease set. Mirrors flannel pkg/lease/watch.go (LeaseWatcher: reset/update, drop the own
// lease) and adds what upstream lacks: validation of every lease and a rule for contested subnets.
// Upstream (pkg/subnet/kube/kube.go) passes every Node on, so two Nodes claiming one podCIDR both get
// routes and the later event wins. Here:
// - the holder keeps its subnet; a subnet changes hands only when its holder is deleted, moves to another
//   subnet or turns invalid, and the handover is logged;
// - a subnet nobody holds (the first complete list, or after a handover) goes to the claimant with the
//   oldest creation time (Node metadata.creationTimestamp); with equal (or unknown) times, to no one;
// - every node refused a subnet is a conflict: logged once, naming both nodes, and counted.
// The first complete list decides from scratch: pages before it only add (a provisional holder may lose
// its subnet to an older claimant on a later page when the list completes).
import type { Lease, LeaseEvent, LeaseUpdate } from './lease.js';
import type { Logger } from '../log.js';
import { silentLogger } from '../log.js';
import type { Metrics } from '../health/metrics.js';
import { METRIC } from '../health/metrics.js';
import { systemClock } from '../clock.js';
import type { Clock } from '../clock.js';
import { normalizeCidr } from '../ip4.js';
import type { LeaseValidation, LeaseValidationContext, LeaseRejectReason } from './validate.js';
import { validateLease } from './validate.js';
import { RejectionLog } from './rejections.js';
import { noNodeEvents, peerRejectedEvent, type NodeEvents } from '../node-events.js';

export interface LeaseWatcherOptions {
  /** Key of the own lease (kube: the own Node name; etcd: the own subnet key). */
  ownLeaseKey?: string;
  /** The own subnet; a lease for it is the own lease and is dropped. */
  ownSubnet: string;
  /** How peer leases are validated (`ownSubnet` defaults to the one above). */
  validation: LeaseValidationContext;
  log?: Logger;
  metrics?: Metrics;
  clock?: Clock;
  /** Where a newly rejected peer is reported as a Kubernetes Event on the own Node (default: nowhere). */
  events?: NodeEvents;
  /** One rejection line per node and reason per this interval (default 60 s). */
  rejectLogIntervalMs?: number;
}

/** A peer whose current lease is rejected (for `flanneld status`). */
export interface RejectedLease {
  key: string;
  subnet: string;
  publicIP: string;
  reason: LeaseRejectReason;
  message: string;
}

const CONFLICT_REASONS: ReadonlySet<LeaseRejectReason> = new Set(['subnet-overlaps-peer', 'subnet-contested']);

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
  return stable([l.subnet, l.publicIP, l.backendType, l.backendData ?? null]);
}

export class LeaseWatcher {
  private readonly ownLeaseKey: string | undefined;
  private readonly ownSubnet: string;
  private readonly ctx: LeaseValidationContext;
  private readonly log: Logger;
  private readonly metrics: Metrics | undefined;
  private readonly rejections: RejectionLog;
  private readonly events: NodeEvents;
  /** Latest lease per key as reported by the subnet manager (own lease excluded). */
  private readonly raw = new Map<string, Lease>();
  /** raw keys by normalized subnet: the claimants of each subnet. */
  private readonly rawBySubnet = new Map<string, Set<string>>();
  /** Accepted peers by key, and the key holding each accepted subnet. */
  private readonly accepted = new Map<string, Lease>();
  private readonly holder = new Map<string, string>();
  /** False until the first complete list (snapshot): until then the subnet holders are provisional. */
  private synced = false;
  /** During update(): subnets some claimant left (a tie may be resolved now). */
  private readonly left = new Set<string>();

  constructor(opts: LeaseWatcherOptions) {
    this.ownLeaseKey = opts.ownLeaseKey;
    this.ownSubnet = normalizeCidr(opts.ownSubnet) ?? opts.ownSubnet;
    this.ctx = { ...opts.validation, ownSubnet: opts.validation.ownSubnet ?? opts.ownSubnet };
    this.log = opts.log ?? silentLogger();
    this.metrics = opts.metrics;
    this.events = opts.events ?? noNodeEvents;
    this.rejections = new RejectionLog(this.log, this.metrics, opts.clock ?? systemClock, opts.rejectLogIntervalMs ?? 60_000);
  }

  get size(): number {
    return this.accepted.size;
  }

  /** Records kept: reported leases plus remembered rejections (each at most one per node present). */
  get remembered(): number {
    return this.raw.size + this.rejections.size;
  }

  /** Peer leases rejected now (their current content), with the reason, sorted by key. */
  rejected(): RejectedLease[] {
    const out: RejectedLease[] = [];
    if (this.rejections.size === 0) return out; // the common case, asked on every status read
    for (const key of [...this.raw.keys()].sort()) {
      const why = this.accepted.has(key) ? undefined : this.rejections.current(key);
      const l = this.raw.get(key)!;
      if (why) out.push({ key, subnet: l.subnet, publicIP: l.publicIP, ...why });
    }
    return out;
  }

  /** Accepted peer leases, sorted by key. */
  peers(): Lease[] {
    return [...this.accepted.keys()].sort().map((k) => this.accepted.get(k)!);
  }

  /** The own lease: by key when the manager names it (a peer with our subnet is then rejected), else by subnet. */
  private isOwn(l: Lease): boolean {
    if (this.ownLeaseKey !== undefined) return l.key === this.ownLeaseKey;
    return (normalizeCidr(l.subnet) ?? l.subnet) === this.ownSubnet;
  }

  private rawSet(l: Lease): void {
    this.rawDelete(l.key);
    this.raw.set(l.key, l);
    const sn = subnetKey(l);
    let s = this.rawBySubnet.get(sn);
    if (!s) this.rawBySubnet.set(sn, (s = new Set()));
    s.add(l.key);
  }

  private rawDelete(key: string): void {
    const old = this.raw.get(key);
    if (!old) return;
    this.raw.delete(key);
    const sn = subnetKey(old);
    this.left.add(sn);
    const s = this.rawBySubnet.get(sn);
    s?.delete(key);
    if (s && s.size === 0) this.rawBySubnet.delete(sn);
  }

  private reject(l: Lease, reason: LeaseRejectReason, message: string, other?: string): void {
    const fields: Record<string, unknown> = { subnet: l.subnet, publicIP: l.publicIP };
    if (other !== undefined) fields.otherNode = other;
    const fresh = this.rejections.reject({ node: l.key, reason, sig: `${reason}|${other ?? ''}|${leaseContent(l)}`, message, fields });
    if (!fresh) return;
    if (CONFLICT_REASONS.has(reason)) this.metrics?.inc(METRIC.subnetConflicts);
    this.events.record(peerRejectedEvent(l.key, reason, message));
  }

  /** Take one update from the subnet manager; returns the changes to the accepted peer set. */
  update(update: LeaseUpdate): LeaseEvent[] {
    // 1. Bring `raw` up to date and collect the keys whose reported lease changed.
    const touched = new Set<string>();
    const setRaw = (l: Lease): void => {
      if (this.isOwn(l)) {
        if (this.raw.has(l.key)) {
          this.rawDelete(l.key);
          touched.add(l.key);
        }
        this.log.debug('own lease ignored', { node: l.key, subnet: l.subnet });
        return;
      }
      const cur = this.raw.get(l.key);
      if (cur && leaseContent(cur) === leaseContent(l) && cur.created === l.created) {
        // Same content (e.g. an expiration renewal): keep the newest record, no dataplane work.
        this.rawSet(l);
        if (this.accepted.has(l.key)) this.accepted.set(l.key, l);
        return;
      }
      this.rawSet(l);
      touched.add(l.key);
    };
    const delRaw = (key: string): void => {
      this.rejections.forget(key);
      if (!this.raw.has(key)) return;
      this.rawDelete(key);
      touched.add(key);
    };

    const firstSync = update.kind === 'snapshot' && !this.synced;
    if (update.kind === 'snapshot') {
      const present = new Set(update.leases.map((l) => l.key));
      for (const key of [...this.raw.keys()]) if (!present.has(key)) delRaw(key);
      for (const l of update.leases) setRaw(l);
      this.synced = true;
    } else if (update.kind === 'page') {
      for (const l of update.leases) setRaw(l);
    } else {
      for (const ev of update.events) {
        if (ev.type === 'removed') delRaw(ev.lease.key);
        else setRaw(ev.lease);
      }
    }
    // The first complete list decides every subnet afresh (holders from pages were provisional).
    if (firstSync) for (const key of [...this.raw.keys(), ...this.accepted.keys()]) touched.add(key);
    if (touched.size === 0) {
      this.left.clear();
      return [];
    }

    const verdicts = new Map<string, LeaseValidation>();
    const verdict = (l: Lease): LeaseValidation => {
      let v = verdicts.get(l.key);
      if (!v) verdicts.set(l.key, (v = validateLease(l, this.ctx)));
      return v;
    };

    // 2. A holder whose lease changed keeps its subnet if it still claims it validly; otherwise (gone,
    //    moved, invalid) the subnet is freed. On the first complete list every subnet is freed.
    const before = new Map<string, Lease | undefined>();
    const freed = new Map<string, string>();
    for (const key of touched) {
      const acc = this.accepted.get(key);
      if (!acc) continue;
      before.set(key, acc);
      const cur = this.raw.get(key);
      if (!firstSync && cur && subnetKey(cur) === subnetKey(acc) && verdict(cur).ok) {
        this.accepted.set(key, cur);
        continue;
      }
      this.accepted.delete(key);
      this.holder.delete(subnetKey(acc));
      freed.set(subnetKey(acc), key);
    }

    // 3. Decide every subnet a touched lease claims, and every freed subnet.
    const subnets = new Set<string>([...freed.keys(), ...this.left]);
    this.left.clear();
    for (const key of touched) {
      const l = this.raw.get(key);
      if (l) subnets.add(subnetKey(l));
    }
    for (const sn of [...subnets].sort()) this.decide(sn, verdict, freed.get(sn), before);

    // 4. Diff the accepted set for every key that may have changed.
    const events: LeaseEvent[] = [];
    for (const key of [...before.keys()].sort()) {
      const old = before.get(key);
      const now = this.accepted.get(key);
      if (old && !now) events.push({ type: 'removed', lease: old });
      else if (!old && now) events.push({ type: 'added', lease: now });
      else if (old && now && leaseContent(old) !== leaseContent(now)) {
        if (normalizeCidr(old.subnet) !== normalizeCidr(now.subnet)) events.push({ type: 'removed', lease: old });
        events.push({ type: 'added', lease: now });
      }
    }
    this.metrics?.set(METRIC.peers, this.accepted.size);
    if (events.length > 0) {
      this.log.debug('peer set changed', {
        added: events.filter((e) => e.type === 'added').length,
        removed: events.filter((e) => e.type === 'removed').length,
        peers: this.accepted.size,
      });
    }
    return events;
  }

  /** Who holds subnet `sn` now: its holder if any, else the oldest valid claimant, else (a tie) no one. */
  private decide(sn: string, verdict: (l: Lease) => LeaseValidation, freedFrom: string | undefined, before: Map<string, Lease | undefined>): void {
    const valid: Lease[] = [];
    for (const key of this.rawBySubnet.get(sn) ?? []) {
      const l = this.raw.get(key)!;
      const v = verdict(l);
      if (v.ok) valid.push(l);
      else this.reject(l, v.reason, v.message);
    }
    let holder = this.holder.get(sn);
    if (holder === undefined && valid.length > 0) {
      valid.sort((a, b) => (a.created ?? Infinity) - (b.created ?? Infinity) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      const [first, second] = valid;
      if (second !== undefined && !((first.created ?? Infinity) < (second.created ?? Infinity))) {
        // Equal (or unknown) creation times: no one holds the subnet until one of them gives it up.
        const tied = valid.filter((l) => (l.created ?? Infinity) === (first.created ?? Infinity)).map((l) => l.key);
        for (const l of valid) {
          const other = tied.find((k) => k !== l.key) ?? first.key;
          this.reject(l, 'subnet-contested', `subnet ${l.subnet} is claimed by ${tied.length} nodes created at the same time; none of them gets it`, other);
        }
        return;
      }
      holder = first.key;
      const waited = this.rejections.current(holder)?.reason;
      this.accepted.set(holder, first);
      this.holder.set(sn, holder);
      this.rejections.accepted(holder);
      if (!before.has(holder)) before.set(holder, undefined);
      if ((freedFrom !== undefined && freedFrom !== holder) || (waited !== undefined && CONFLICT_REASONS.has(waited))) {
        this.log.info('subnet handed over', { subnet: sn, from: freedFrom ?? '', to: holder });
      }
    }
    for (const l of valid) {
      if (l.key === holder) continue;
      this.reject(l, 'subnet-overlaps-peer', `subnet ${l.subnet} is already held by ${holder!}`, holder);
    }
  }
}

function subnetKey(l: Lease): string {
  return normalizeCidr(l.subnet) ?? l.subnet;
}

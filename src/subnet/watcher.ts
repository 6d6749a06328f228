// The pure peer-lease set. Mirrors flannel pkg/lease/watch.go (LeaseWatcher: reset/update, drop the own
// lease) and adds what upstream lacks: validation of every lease and deterministic overlap handling.
import type { Lease, LeaseEvent, LeaseUpdate } from './lease.js';
import type { Logger } from '../log.js';
import { silentLogger } from '../log.js';
import type { Metrics } from '../health/metrics.js';
import { METRIC } from '../health/metrics.js';
import { normalizeCidr } from '../ip4.js';
import type { LeaseValidationContext, LeaseRejectReason } from './validate.js';
import { validateLease } from './validate.js';

export interface LeaseWatcherOptions {
  /** Key of the own lease (kube: the own Node name; etcd: the own subnet key). */
  ownLeaseKey?: string;
  /** The own subnet; a lease for it is the own lease and is dropped. */
  ownSubnet: string;
  /** How peer leases are validated (`ownSubnet` defaults to the one above). */
  validation: LeaseValidationContext;
  log?: Logger;
  metrics?: Metrics;
}

export interface RejectedLease {
  key: string;
  subnet: string;
  publicIP: string;
  reason: LeaseRejectReason;
  message: string;
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
  return stable([l.subnet, l.publicIP, l.backendType, l.backendData ?? null]);
}

export class LeaseWatcher {
  private readonly ownLeaseKey: string | undefined;
  private readonly ownSubnet: string;
  private readonly ctx: LeaseValidationContext;
  private readonly log: Logger;
  private readonly metrics: Metrics | undefined;
  /** Latest lease per key as reported by the subnet manager (own lease excluded). */
  private readonly raw = new Map<string, Lease>();
  /** raw keys by normalized subnet, to find leases waiting for a subnet held by another peer. */
  private readonly rawBySubnet = new Map<string, Set<string>>();
  /** Accepted peers by key, and the key holding each accepted subnet. */
  private readonly accepted = new Map<string, Lease>();
  private readonly holder = new Map<string, string>();
  /** Rejections already logged, per key: `${reason}|${content}`. */
  private readonly logged = new Map<string, Set<string>>();
  /** Peers whose current lease is rejected, with the reason. */
  private readonly rejectedNow = new Map<string, RejectedLease>();

  constructor(opts: LeaseWatcherOptions) {
    this.ownLeaseKey = opts.ownLeaseKey;
    this.ownSubnet = normalizeCidr(opts.ownSubnet) ?? opts.ownSubnet;
    this.ctx = { ...opts.validation, ownSubnet: opts.validation.ownSubnet ?? opts.ownSubnet };
    this.log = opts.log ?? silentLogger();
    this.metrics = opts.metrics;
  }

  get size(): number {
    return this.accepted.size;
  }

  /** Peer leases rejected now (their current content), sorted by key. */
  rejected(): RejectedLease[] {
    return [...this.rejectedNow.keys()].sort().map((k) => this.rejectedNow.get(k)!);
  }

  /** Accepted peer leases, sorted by key. */
  peers(): Lease[] {
    return [...this.accepted.keys()].sort().map((k) => this.accepted.get(k)!);
  }

  private isOwn(l: Lease): boolean {
    if (this.ownLeaseKey !== undefined && l.key === this.ownLeaseKey) return true;
    return (normalizeCidr(l.subnet) ?? l.subnet) === this.ownSubnet;
  }

  private rawSet(l: Lease): void {
    this.rawDelete(l.key);
    this.raw.set(l.key, l);
    const sn = normalizeCidr(l.subnet) ?? l.subnet;
    let s = this.rawBySubnet.get(sn);
    if (!s) this.rawBySubnet.set(sn, (s = new Set()));
    s.add(l.key);
  }

  private rawDelete(key: string): void {
    const old = this.raw.get(key);
    if (!old) return;
    this.raw.delete(key);
    const sn = normalizeCidr(old.subnet) ?? old.subnet;
    const s = this.rawBySubnet.get(sn);
    s?.delete(key);
    if (s && s.size === 0) this.rawBySubnet.delete(sn);
  }

  private reject(l: Lease, reason: LeaseRejectReason, message: string, fields: Record<string, string> = {}): void {
    this.rejectedNow.set(l.key, { key: l.key, subnet: l.subnet, publicIP: l.publicIP, reason, message });
    const sig = `${reason}|${leaseContent(l)}`;
    let seen = this.logged.get(l.key);
    if (!seen) this.logged.set(l.key, (seen = new Set()));
    if (seen.has(sig)) return;
    seen.add(sig);
    this.metrics?.inc(METRIC.leasesRejected, { reason });
    this.log.warn('peer lease rejected', { node: l.key, reason, subnet: l.subnet, publicIP: l.publicIP, detail: message, ...fields });
  }

  /** Apply one update from the subnet manager; returns the changes to the accepted peer set. */
  apply(update: LeaseUpdate): LeaseEvent[] {
    // 1. Bring `raw` up to date and collect the keys whose reported lease changed.
    const touched = new Set<string>();
    const setRaw = (l: Lease): void => {
      if (this.isOwn(l)) {
        this.rejectedNow.delete(l.key);
        if (this.raw.has(l.key)) {
          this.rawDelete(l.key);
          touched.add(l.key);
        }
        this.log.debug('own lease ignored', { node: l.key, subnet: l.subnet });
        return;
      }
      const cur = this.raw.get(l.key);
      if (cur && leaseContent(cur) === leaseContent(l)) {
        // Same content (e.g. an expiration renewal): keep the newest record, no dataplane work.
        this.rawSet(l);
        if (this.accepted.has(l.key)) this.accepted.set(l.key, l);
        return;
      }
      this.rawSet(l);
      touched.add(l.key);
    };
    const delRaw = (key: string): void => {
      if (!this.raw.has(key)) return;
      this.rawDelete(key);
      this.logged.delete(key);
      this.rejectedNow.delete(key);
      touched.add(key);
    };

    if (update.kind === 'snapshot') {
      const present = new Set(update.leases.map((l) => l.key));
      for (const key of [...this.raw.keys()]) if (!present.has(key)) delRaw(key);
      for (const l of update.leases) setRaw(l);
    } else {
      for (const ev of update.events) {
        if (ev.type === 'removed') {
          delRaw(ev.lease.key);
        } else setRaw(ev.lease);
      }
    }
    if (touched.size === 0) return [];

    // 2. Drop accepted peers whose lease changed or vanished; their subnets become free.
    const before = new Map<string, Lease | undefined>();
    const freed: string[] = [];
    for (const key of touched) {
      const acc = this.accepted.get(key);
      if (!acc) continue;
      before.set(key, acc);
      this.accepted.delete(key);
      const sn = normalizeCidr(acc.subnet)!;
      this.holder.delete(sn);
      freed.push(sn);
    }

    // 3. Candidates: touched leases still present, plus leases waiting on a freed subnet. Sorted by key
    //    so the outcome of a conflict does not depend on arrival order within one update.
    const cands = new Set<string>();
    for (const key of touched) if (this.raw.has(key)) cands.add(key);
    for (const sn of freed) for (const key of this.rawBySubnet.get(sn) ?? []) if (!this.accepted.has(key)) cands.add(key);
    for (const key of [...cands].sort()) {
      const l = this.raw.get(key)!;
      const v = validateLease(l, this.ctx);
      if (!v.ok) {
        this.reject(l, v.reason, v.message);
        continue;
      }
      const sn = normalizeCidr(l.subnet)!;
      const other = this.holder.get(sn);
      if (other !== undefined && other !== key) {
        this.reject(l, 'subnet-overlaps-peer', `subnet ${l.subnet} is already held by ${other}`, { heldBy: other });
        continue;
      }
      this.accepted.set(key, l);
      this.holder.set(sn, key);
      this.rejectedNow.delete(key);
      if (!before.has(key)) before.set(key, undefined);
    }

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
      this.log.debug('peer set changed', { added: events.filter((e) => e.type === 'added').length, removed: events.filter((e) => e.type === 'removed').length, peers: this.accepted.size });
    }
    return events;
  }
}

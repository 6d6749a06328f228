// The peer store (src/peers/store.ts) seen as a lease set, for the tests that describe the peer
// set by the changes it makes: updates in the shape the subnet managers used to emit (a complete list as
// `snapshot`, a partial one as `page`, watch `events`) go in as the store's `peers` and `listed`, and
// what comes back is how the accepted peer set changed (`added` for a new or changed peer, `removed` for
// a peer gone or moved off its subnet), sorted by key. The accepted set is read as the store's desired items:
// each accepted peer's item is its lease, under its subnet.
import type { Lease, LeaseUpdate } from '../../src/subnet/lease.js';
import { PeerStore, leaseContent, type PeerStoreOptions } from '../../src/peers/store.js';

export interface LeaseEvent {
  type: 'added' | 'removed';
  lease: Lease;
}

export type OldLeaseUpdate = { kind: 'snapshot'; leases: Lease[] } | { kind: 'page'; leases: Lease[] } | { kind: 'events'; events: LeaseEvent[] };

/** The store updates one old-style update stands for. */
export function storeUpdates(u: OldLeaseUpdate): LeaseUpdate[] {
  if (u.kind === 'events') return [{ kind: 'peers', peers: u.events.map((e) => ({ key: e.lease.key, lease: e.type === 'removed' ? undefined : e.lease })) }];
  const peers: LeaseUpdate = { kind: 'peers', peers: u.leases.map((l) => ({ key: l.key, lease: l })) };
  return u.kind === 'page' ? [peers] : [peers, { kind: 'listed', keys: new Set(u.leases.map((l) => l.key)) }];
}

/** The item of a peer: its lease (as accepted), keyed by its subnet. */
export const LEASE_ITEMS = { desiredFor: (l: Lease) => [l], desiredKey: (l: Lease) => l.subnet };

export class LeaseSet {
  readonly store: PeerStore<Lease>;

  constructor(opts: Omit<PeerStoreOptions<Lease>, 'items'>) {
    this.store = new PeerStore({ ...opts, items: LEASE_ITEMS });
  }

  get size(): number {
    return this.store.size;
  }
  /** The accepted peers' leases, sorted by key. */
  peers(): Lease[] {
    return this.store.desiredItems().sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }
  rejected() {
    return this.store.rejected();
  }

  /** Apply `u`; returns the changes of the accepted peer set. */
  update(u: OldLeaseUpdate): LeaseEvent[] {
    const before = new Map(this.peers().map((l) => [l.key, l]));
    for (const x of storeUpdates(u)) this.store.apply(x);
    const after = new Map(this.peers().map((l) => [l.key, l]));
    const events: LeaseEvent[] = [];
    for (const key of [...new Set([...before.keys(), ...after.keys()])].sort()) {
      const old = before.get(key);
      const now = after.get(key);
      if (old && !now) events.push({ type: 'removed', lease: old });
      else if (!old && now) events.push({ type: 'added', lease: now });
      else if (old && now && leaseContent(old) !== leaseContent(now)) {
        if (old.subnet !== now.subnet) events.push({ type: 'removed', lease: old });
        events.push({ type: 'added', lease: now });
      }
    }
    return events;
  }
}

/** Peer `n`'s vxlan lease: linux-n on 10.244.n.0/24, public IP 10.0.1.n, VtepMAC 0e:2a:0a:00:01:<n in hex>. */
export const vxlanPeer = (n: number): Lease => ({
  key: `linux-${n}`,
  subnet: `10.244.${n}.0/24`,
  publicIP: `10.0.1.${n}`,
  backendType: 'vxlan',
  backendData: { VNI: 4096, VtepMAC: `0e:2a:0a:00:01:${n.toString(16).padStart(2, '0')}` },
});

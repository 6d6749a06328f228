// The desired side of the Reconciler for its own tests: the real peer store (src/peers/store.ts) fed one
// synthetic host-gw lease per peer (a subnet and public IP of its own), whose items are the ones the test
// names. Changing a peer's items changes its lease, so the store's own rules decide: the change filter,
// the first claimant of an item key, the names of departed owners, the dirty keys, `listed`.
import { PeerStore } from '../../src/peers/store.js';
import type { Lease } from '../../src/subnet/lease.js';

export class ItemSet<D> {
  readonly store: PeerStore<D>;
  private readonly want = new Map<string, readonly D[]>();
  private readonly index = new Map<string, number>();
  /** Each peer's lease as last reported: a new one only when its items changed (the store drops the same lease). */
  private readonly leases = new Map<string, Lease>();
  private version = 0;

  constructor(private readonly keyOf: (d: D) => string) {
    const items = { desiredFor: (l: Lease) => [...(this.want.get(l.key) ?? [])], desiredKey: keyOf };
    this.store = new PeerStore<D>({ ownSubnet: '10.255.255.0/24', validation: { network: '10.0.0.0/8', subnetLen: 24, backendType: 'host-gw' }, items });
  }

  /** Peer n's lease: octets of three digits, so the store's subnet order (as text) is the order peers came in. */
  private lease(peer: string, changed: boolean): Lease {
    const had = this.leases.get(peer);
    if (had && !changed) return had;
    let i = this.index.get(peer);
    if (i === undefined) this.index.set(peer, (i = this.index.size));
    const [hi, lo] = [100 + Math.floor(i / 100), 100 + (i % 100)];
    const l: Lease = { key: peer, subnet: `10.${hi}.${lo}.0/24`, publicIP: `192.168.${hi}.${lo}`, backendType: 'host-gw', backendData: { v: ++this.version } };
    this.leases.set(peer, l);
    return l;
  }

  /** Change some peers' items (`undefined`: the peer is gone). */
  updatePeers(changes: Iterable<readonly [string, readonly D[] | undefined]>): void {
    const peers = [...changes].map(([key, items]) => {
      const changed = JSON.stringify(this.want.get(key)) !== JSON.stringify(items);
      if (items === undefined) {
        this.want.delete(key);
        this.leases.delete(key);
      } else this.want.set(key, items);
      return { key, lease: items === undefined ? undefined : this.lease(key, changed) };
    });
    this.store.apply({ kind: 'peers', peers });
  }

  /** Replace every peer's items. */
  setPeers(peers: Iterable<readonly [string, readonly D[]]>): void {
    const next = new Map(peers);
    this.updatePeers([...[...this.want.keys()].filter((p) => !next.has(p)).map((p) => [p, undefined] as const), ...next]);
  }

  /** Replace every item: each key is a peer of its own. */
  set(items: readonly D[]): void {
    const byKey = new Map<string, D[]>();
    for (const d of items) byKey.set(this.keyOf(d), [...(byKey.get(this.keyOf(d)) ?? []), d]);
    this.setPeers(byKey);
  }

  /** Change some keys, each a peer of its own (`undefined`: no longer desired). */
  update(changes: Iterable<readonly [string, D | undefined]>): void {
    this.updatePeers([...changes].map(([k, d]) => [k, d === undefined ? undefined : [d]] as const));
  }

  /** The complete list arrived. */
  markListed(): void {
    this.store.apply({ kind: 'listed', keys: new Set(this.want.keys()) });
  }
}

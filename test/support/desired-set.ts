// The desired side of the Reconciler for its own tests: the real peer store (src/peers/store.ts) fed one
// synthetic host-gw lease per peer whose backend data is the peer's items (the store hands them back as
// its driver's desiredFor), so the store's own rules decide: the change filter (items equal as JSON are
// the same lease), the first claimant of an item key, the names of departed owners, the dirty keys, `listed`.
import { PeerStore } from '../../src/peers/store.js';

export class ItemSet<D> {
  readonly store: PeerStore<D>;
  private readonly index = new Map<string, number>();

  constructor(desiredKey: (d: D) => string) {
    const items = { desiredFor: (l: { backendData: unknown }) => l.backendData as D[], desiredKey };
    this.store = new PeerStore<D>({ ownSubnet: '10.255.255.0/24', validation: { network: '10.0.0.0/8', subnetLen: 24, backendType: 'host-gw' }, items });
  }

  /** Change some peers' items (`undefined`: the peer is gone). */
  updatePeers(changes: Iterable<readonly [string, readonly D[] | undefined]>): void {
    const peers = [...changes].map(([key, items]) => {
      let i = this.index.get(key); // peer i's octets have three digits: the store's subnet order (as text) is the order peers came in
      if (i === undefined) this.index.set(key, (i = this.index.size));
      const [hi, lo] = [100 + Math.floor(i / 100), 100 + (i % 100)];
      return { key, lease: items && { key, subnet: `10.${hi}.${lo}.0/24`, publicIP: `192.168.${hi}.${lo}`, backendType: 'host-gw', backendData: items } };
    });
    this.store.apply({ kind: 'peers', peers });
  }

  /** The complete list arrived, naming every peer given so far (each lease is valid, with a subnet of its own: all are held; a gone one is not in the store). */
  markListed(): void {
    this.store.apply({ kind: 'listed', keys: new Set(this.index.keys()) });
  }
}

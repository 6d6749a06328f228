// The desired side of the Reconciler for its own tests: items set directly, by peer, instead of made from
// leases by the peer store (src/reconcile/peer-store.ts, tested in test/unit/peer-store.test.ts). It keeps
// the DesiredSet contract the store keeps: changed keys are dirty until the reconciler takes them, an
// item key belongs to the first peer that claims it, and a key a peer gave up keeps its name until removed.
import type { DesiredSet } from '../../src/reconcile/reconciler.js';

export class ItemSet<D> implements DesiredSet<D> {
  listed = false;
  private readonly items = new Map<string, D>();
  private readonly ownerOf = new Map<string, string>();
  private readonly keysOf = new Map<string, string[]>();
  private readonly departed = new Map<string, string>();
  private readonly dirty = new Set<string>();
  private onChange: () => void = () => {};

  constructor(private readonly keyOf: (d: D) => string) {}

  /** Peers with items (items of no peer, `''`, are not a peer). */
  get size(): number {
    return this.keysOf.size - (this.keysOf.has('') ? 1 : 0);
  }

  /** Replace every item (items of no peer). */
  set(items: readonly D[]): void {
    this.setPeers([['', items]]);
  }

  /** Replace every peer's items. */
  setPeers(peers: Iterable<readonly [string, readonly D[]]>): void {
    const next = new Map(peers);
    const changes: [string, readonly D[] | undefined][] = [...this.keysOf.keys()].filter((p) => !next.has(p)).map((p) => [p, undefined]);
    if (this.keysOf.has('') && !next.has('')) changes.push(['', undefined]);
    this.updatePeers([...changes, ...next]);
  }

  /** Change some peers' items (`undefined`: the peer is gone). */
  updatePeers(changes: Iterable<readonly [string, readonly D[] | undefined]>): void {
    for (const [peer, want] of changes) {
      for (const k of this.keysOf.get(peer) ?? []) {
        if (this.ownerOf.get(k) !== peer) continue;
        this.ownerOf.delete(k);
        this.items.delete(k);
        if (peer !== '') this.departed.set(k, peer);
        this.dirty.add(k);
      }
      this.keysOf.delete(peer);
      if (want === undefined) continue;
      const keys = want.map((d) => this.keyOf(d));
      this.keysOf.set(peer, keys);
      const seen = new Set<string>();
      want.forEach((d, i) => {
        const k = keys[i];
        const owner = this.ownerOf.get(k);
        if ((owner !== undefined && owner !== peer) || seen.has(k)) return; // the first claim wins
        seen.add(k);
        this.ownerOf.set(k, peer);
        this.departed.delete(k);
        this.items.set(k, d);
        this.dirty.add(k);
      });
    }
    this.onChange();
  }

  /** Change some keys directly (`undefined`: no longer desired). */
  update(changes: Iterable<readonly [string, D | undefined]>): void {
    for (const [k, d] of changes) {
      if (d === undefined) this.items.delete(k);
      else this.items.set(k, d);
      this.dirty.add(k);
    }
    this.onChange();
  }

  /** The complete list arrived. */
  markListed(): void {
    this.listed = true;
    this.onChange();
  }

  desired(key: string): D | undefined {
    return this.items.get(key);
  }
  desiredItems(): D[] {
    return [...this.items.values()];
  }
  takeDirty(): string[] {
    const keys = [...this.dirty];
    this.dirty.clear();
    return keys;
  }
  isDirty(key: string): boolean {
    return this.dirty.has(key);
  }
  owner(key: string): string | undefined {
    return this.ownerOf.get(key) || this.departed.get(key);
  }
  removed(keys: readonly string[]): void {
    for (const k of keys) this.departed.delete(k);
  }
  countProgrammed(held: (key: string) => boolean): number {
    let n = 0;
    for (const [peer, keys] of this.keysOf) if (peer !== '' && keys.every(held)) n++;
    return n;
  }
  subscribe(onChange: () => void): void {
    this.onChange = onChange;
  }
}

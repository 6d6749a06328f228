// Which peer (lease key) owns which desired dataplane keys. The Reconciler keeps its desired items by peer
// with this, so that one peer's change is one delta, a refusal log line can name the node, and /status can
// count the peers the dataplane holds completely. Several peers may claim one key (the first wins until it
// lets go). No upstream counterpart: flannel's handlers keep no desired set.
export class PeerItems {
  private readonly keysOf = new Map<string, readonly string[]>();
  private readonly ownerOf = new Map<string, string>();

  /** Peers with items. */
  get size(): number {
    return this.keysOf.size;
  }

  clear(): void {
    this.keysOf.clear();
    this.ownerOf.clear();
  }

  /** Record `peer` as the owner of `keys` (`''`: items of no peer, not recorded). */
  own(peer: string, keys: readonly string[]): void {
    if (peer === '') return;
    this.keysOf.set(peer, keys);
    for (const k of keys) this.ownerOf.set(k, peer);
  }

  /** Forget `peer`; returns the keys it had that no other peer owns now. */
  release(peer: string): string[] {
    const orphans: string[] = [];
    for (const k of this.keysOf.get(peer) ?? []) {
      if (this.ownerOf.get(k) === peer) this.ownerOf.delete(k);
      if (!this.ownerOf.has(k)) orphans.push(k);
    }
    this.keysOf.delete(peer);
    return orphans;
  }

  /** The peer a key belongs to (for logs). */
  owner(key: string): string | undefined {
    return this.ownerOf.get(key);
  }

  /** How many peers have every one of their keys `held`. */
  countHeld(held: (key: string) => boolean): number {
    let n = 0;
    for (const keys of this.keysOf.values()) if (keys.every(held)) n++;
    return n;
  }
}

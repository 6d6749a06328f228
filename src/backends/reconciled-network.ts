// A Network whose peers are kept equal to the desired set by the shared Reconciler. Both backends are
// this class with their own binding (routes for host-gw, RemoteSubnetRoute policies for vxlan) and their
// own rebuild: when a pass finds the HNS network gone, the backend recreates it with the same subnet, the
// binding is replaced, the rebuild listeners run (source VIP, subnet.env) and every peer is reprogrammed.
import type { Network, NetworkStatus } from './backend.js';
import { Reconciler, type ReconcileDriver } from './reconcile.js';
import type { Clock } from '../clock.js';
import type { Metrics } from '../health/metrics.js';
import type { Logger } from '../log.js';
import type { Lease, LeaseEvent } from '../subnet/lease.js';

/** What writing peers to one incarnation of the HNS network takes. */
export interface NetworkBinding<A, D> {
  driver: ReconcileDriver<A, D>;
  /** Map a validated peer lease to the dataplane object(s) it needs. */
  desiredFor: (peer: Lease) => D[];
  mtu: number;
}

export interface ReconciledNetworkOptions<A, D> {
  lease: Lease;
  networkName: string;
  binding: NetworkBinding<A, D>;
  /** Recreate the network (same subnet) after it disappeared; returns the new binding. */
  rebuild?: (signal: AbortSignal) => Promise<NetworkBinding<A, D>>;
  log: Logger;
  metrics: Metrics;
  clock: Clock;
  resyncMs?: number;
}

export class ReconciledNetwork<A, D> implements Network {
  readonly lease: Lease;
  readonly networkName: string;
  private binding: NetworkBinding<A, D>;
  private readonly reconciler: Reconciler<A, D>;
  private readonly log: Logger;
  private readonly listeners: (() => Promise<void>)[] = [];
  /** Accepted peers by lease key, the desired keys each one owns, and the owner of each desired key. */
  private readonly peers = new Map<string, Lease>();
  private readonly keysOf = new Map<string, string[]>();
  private readonly ownerOf = new Map<string, string>();

  constructor(opts: ReconciledNetworkOptions<A, D>) {
    this.lease = opts.lease;
    this.networkName = opts.networkName;
    this.binding = opts.binding;
    this.log = opts.log;
    const rebuild = opts.rebuild;
    this.reconciler = new Reconciler<A, D>({
      driver: opts.binding.driver,
      clock: opts.clock,
      log: opts.log,
      metrics: opts.metrics,
      resyncMs: opts.resyncMs,
      earlyAdds: true,
      owner: (key) => this.ownerOf.get(key),
      onNetworkGone: rebuild ? (signal) => this.rebuilt(rebuild, signal) : undefined,
    });
  }

  get mtu(): number {
    return this.binding.mtu;
  }

  /** Replace the whole desired peer set: the next pass reads the dataplane and diffs everything. */
  private setPeers(peers: Lease[]): void {
    this.peers.clear();
    this.keysOf.clear();
    this.ownerOf.clear();
    const items: D[] = [];
    for (const p of peers) items.push(...this.own(p));
    this.reconciler.setDesired(items);
  }

  applyPeerEvents(events: readonly LeaseEvent[]): void {
    const changes = new Map<string, D | undefined>();
    for (const { type, lease } of events) {
      const before = this.keysOf.get(lease.key) ?? [];
      this.disown(lease.key);
      for (const k of before) if (!this.ownerOf.has(k)) changes.set(k, undefined);
      if (type === 'added') for (const d of this.own(lease)) changes.set(this.binding.driver.desiredKey(d), d);
    }
    if (changes.size > 0) this.reconciler.updateDesired(changes);
  }

  /** Record `peer` as the owner of its desired items and return them. */
  private own(peer: Lease): D[] {
    const items = this.binding.desiredFor(peer);
    const keys = items.map((d) => this.binding.driver.desiredKey(d));
    this.peers.set(peer.key, peer);
    this.keysOf.set(peer.key, keys);
    for (const k of keys) this.ownerOf.set(k, peer.key);
    return items;
  }

  private disown(peerKey: string): void {
    for (const k of this.keysOf.get(peerKey) ?? []) if (this.ownerOf.get(k) === peerKey) this.ownerOf.delete(k);
    this.keysOf.delete(peerKey);
    this.peers.delete(peerKey);
  }

  private async rebuilt(rebuild: (signal: AbortSignal) => Promise<NetworkBinding<A, D>>, signal: AbortSignal): Promise<void> {
    const binding = await rebuild(signal);
    this.binding = binding;
    this.reconciler.rebind(binding.driver);
    this.setPeers([...this.peers.values()]);
    for (const l of this.listeners) await l();
    this.log.info('HNS network rebuilt; reprogramming every peer', { network: this.networkName, peers: this.peers.size, mtu: binding.mtu });
  }

  onRebuilt(listener: () => Promise<void>): void {
    this.listeners.push(listener);
  }

  markSynced(): void {
    this.reconciler.markSynced();
  }

  waitForInSync(signal?: AbortSignal): Promise<void> {
    return this.reconciler.waitForInSync(signal);
  }

  waitForFirstPass(signal?: AbortSignal): Promise<void> {
    return this.reconciler.waitForFirstPass(signal);
  }

  status(): NetworkStatus {
    const s = this.reconciler.status();
    let programmed = 0;
    for (const keys of this.keysOf.values()) if (keys.every((k) => this.reconciler.isProgrammed(k))) programmed++;
    return {
      networkMissing: s.networkMissing,
      lastGoodAt: s.lastGoodAt,
      refused: s.refused,
      inSync: s.synced && s.inSync,
      peersDesired: this.peers.size,
      peersProgrammed: programmed,
      lastPassAt: s.lastPassAt,
      lastPassOk: s.lastPassOk,
      lastSuccessAt: s.lastSuccessAt,
      lastError: s.lastError,
    };
  }

  run(signal: AbortSignal): Promise<void> {
    return this.reconciler.run(signal);
  }
}

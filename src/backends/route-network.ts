// The network a backend registers, and its lease watch. Mirrors flannel pkg/backend/route_network_windows.go
// (RouteNetwork.Run watches the leases and handles each batch of events), with two differences: a
// LeaseWatcher (src/subnet/watcher.ts) validates the leases and settles contested subnets first, and the
// Reconciler replaces one write per event: each update's peer changes become the Reconciler's desired
// items for those peers, the first complete list lets it remove what no peer wants, and its passes keep
// the dataplane equal to that set (docs/adr/0001). Both backends are this class with their own binding
// (routes for host-gw; RemoteSubnetRoute policies, or legacy remote endpoints, for vxlan) and their own
// rebuild: when a pass finds the HNS network gone, the backend recreates it with the same subnet, every
// peer is reprogrammed and the agent's afterRebuild hook runs (metadata route, source VIP, subnet.env).
import type { BackendDeps, Network, NetworkStatus } from './backend.js';
import { Reconciler, type LeaseDriver } from './reconcile.js';
import { componentLogger, type Logger } from '../log.js';
import type { Lease, LeaseUpdate } from '../subnet/lease.js';
import { LeaseWatcher } from '../subnet/watcher.js';
import { networkRebuiltEvent, noNodeEvents, type NodeEvents } from '../node-events.js';

/** What writing peers to one incarnation of the HNS network takes. */
export interface NetworkBinding<A, D> {
  /** Writes the peers' items, and says which items a peer lease needs. */
  driver: LeaseDriver<A, D>;
  mtu: number;
}

export interface RouteNetworkOptions<A, D> {
  deps: BackendDeps;
  lease: Lease;
  networkName: string;
  binding: NetworkBinding<A, D>;
  /** Recreate the network (same subnet) after it disappeared; returns the new binding. */
  rebuild?: (signal: AbortSignal) => Promise<NetworkBinding<A, D>>;
}

export class RouteNetwork<A, D> implements Network {
  readonly lease: Lease;
  readonly networkName: string;
  private binding: NetworkBinding<A, D>;
  private readonly deps: BackendDeps;
  private readonly log: Logger;
  private readonly watcher: LeaseWatcher;
  private readonly reconciler: Reconciler<A, D>;
  /** Events on the own Node (kube mode; none in etcd mode). */
  private readonly events: NodeEvents;
  /** The first complete list has arrived. */
  private listed = false;

  constructor(opts: RouteNetworkOptions<A, D>) {
    const { deps, lease, rebuild } = opts;
    const { netConf } = deps;
    this.lease = lease;
    this.networkName = opts.networkName;
    this.binding = opts.binding;
    this.deps = deps;
    this.log = deps.log;
    this.events = deps.subnetManager.nodeEvents?.(lease) ?? noNodeEvents;
    this.watcher = new LeaseWatcher({
      ownLeaseKey: lease.key,
      ownSubnet: lease.subnet,
      validation: {
        network: netConf.network,
        subnetLen: Number(lease.subnet.split('/')[1]),
        ownSubnet: lease.subnet,
        backendType: netConf.backend.type,
        ...(netConf.backend.type === 'vxlan' ? { vni: netConf.backend.vni } : {}),
        ownIPs: [...new Set([lease.publicIP, deps.publicIP, deps.extIface.ipv4])],
        nodeNetwork: `${deps.extIface.ipv4}/${deps.extIface.prefixLength}`,
      },
      log: componentLogger(deps.log, 'leases'),
      metrics: deps.metrics,
      clock: deps.clock,
      events: this.events,
    });
    this.reconciler = new Reconciler<A, D>({
      driver: opts.binding.driver,
      clock: deps.clock,
      log: deps.log,
      metrics: deps.metrics,
      resyncMs: deps.resyncMs,
      earlyAdds: true,
      events: this.events,
      onNetworkGone: rebuild ? (signal) => this.rebuilt(rebuild, signal) : undefined,
    });
  }

  get mtu(): number {
    return this.binding.mtu;
  }

  /**
   * Watch the leases and keep the dataplane in step until `signal` aborts. As upstream flanneld (main.go
   * calls CompleteLease once the backend runs; pkg/subnet/kube/kube.go CompleteLease sets
   * NodeNetworkUnavailable=False), the lease is completed once the first full pass was tried on an
   * existing network. Peers that keep failing are a metric and a log line, never a tainted node.
   */
  async run(signal: AbortSignal): Promise<void> {
    const { subnetManager } = this.deps;
    const watching = subnetManager.watchLeases((update) => this.handleLeases(update), signal);
    const reconciling = this.reconciler.run(signal);
    const completing = this.reconciler.waitForFirstPass(signal).then(
      () => {
        const s = this.reconciler.status();
        this.log.info('first reconcile pass done', { peers: this.watcher.size, refused: s.refused, ok: s.lastPassOk === true });
        return subnetManager.completeLease(this.lease, signal);
      },
      (err: unknown) => {
        if (!signal.aborted) throw err;
      },
    );
    await Promise.all([watching, reconciling, completing]);
  }

  /**
   * One update from the subnet manager: only the peer changes reach the Reconciler, so one peer event
   * writes only its own delta. Before the first complete list they come from partial views, and the
   * passes then only add.
   */
  private handleLeases(update: LeaseUpdate): void {
    const changes = this.watcher.update(update);
    if (changes.length > 0) this.reconciler.updatePeers(changes.map((e) => [e.lease.key, e.type === 'added' ? this.binding.driver.desiredFor(e.lease) : undefined] as const));
    if (update.kind === 'snapshot' && !this.listed) {
      this.listed = true;
      this.reconciler.markSynced();
    }
  }

  private async rebuilt(rebuild: (signal: AbortSignal) => Promise<NetworkBinding<A, D>>, signal: AbortSignal): Promise<void> {
    const binding = await rebuild(signal);
    this.binding = binding;
    this.reconciler.rebind(
      binding.driver,
      this.watcher.peers().map((p) => [p.key, binding.driver.desiredFor(p)] as const),
    );
    await this.deps.afterRebuild?.(this);
    this.log.info('HNS network rebuilt; reprogramming every peer', { network: this.networkName, peers: this.watcher.size, mtu: binding.mtu });
    this.events.record(networkRebuiltEvent(this.networkName, this.watcher.size));
  }

  status(): NetworkStatus {
    const s = this.reconciler.status();
    return {
      networkMissing: s.networkMissing,
      listed: this.listed,
      lastGoodAt: s.lastGoodAt,
      refused: s.refused,
      refusedItems: s.refusedItems,
      inSync: s.synced && s.inSync,
      peersDesired: s.peersDesired,
      peersProgrammed: s.peersProgrammed,
      lastPassAt: s.lastPassAt,
      lastPassOk: s.lastPassOk,
      lastSuccessAt: s.lastSuccessAt,
      lastError: s.lastError,
      rejections: this.watcher.rejected(),
    };
  }
}

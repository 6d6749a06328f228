// The network a backend registers, and its lease watch. Mirrors flannel pkg/backend/route_network_windows.go
// (RouteNetwork.Run watches the leases and handles each batch of events), with two differences: the
// subnet manager's updates go straight to the peer store (src/peers/store.ts), which validates
// the leases, settles contested subnets and keeps each peer's items, and the Reconciler
// (src/reconcile/reconciler.ts) replaces one write per event: it writes the store's changed items, the
// first complete list lets it remove what no peer wants, and its passes keep the dataplane equal to that
// set (docs/adr/0001-reconcile-as-a-set.md). Both backends are this class with their own binding
// (routes for host-gw; RemoteSubnetRoute policies, or legacy remote endpoints, for vxlan) and their own
// rebuild: when a pass finds the HNS network gone, the backend recreates it with the same subnet, every
// peer is reprogrammed and the agent's afterRebuild hook runs (metadata route, `settle`, subnet.env).
// Beside the network each backend keeps node-side objects of its own (NodeObjects: vxlan's source VIP,
// host-gw's host endpoint reservation), made by `settle`.
// The same rebuild repairs what HNS loses when it restarts (it keeps only what it persisted: see
// src/simulator/objects.ts restartHns): every resync period the network's binding and node objects check
// that the objects they made are still there under the IDs they got (the network, the host endpoint, the
// source VIP endpoint), and the host says whether the HNS service runs in a new process (AKS restarts
// kube-proxy on that signal: Azure/AgentBaker#2085; --restart-service-on-hns-restart does too, once HNS has
// restored kube-proxy's load balancers: ./service-restart.ts). Either finding re-applies everything without
// an agent restart, records an Event and counts flannel_hns_restarts_total / flannel_drift_repairs_total.
// The network is read once per resync: when the binding's check only reads the network (vxlan) and the
// reconciler's full pass read it since the last check, the check trusts that read unless the HNS service
// restarted or another object is gone; and a rebuild that returns a network with a new ID counts it as
// lost whoever asked for the rebuild.
import type { BackendDeps, Network, NetworkHooks, SourceVip } from './backend.js';
import { ServiceRestarter } from './service-restart.js';
import { componentLogger, type Logger } from '../basics/log.js';
import type { NetworkStatus } from '../network-status.js';
import { pause } from '../basics/clock.js';
import { errorMessage } from '../basics/errors.js';
import { METRIC } from '../basics/metrics.js';
import { hnsStateRepairedEvent, networkRebuiltEvent, type NodeEvents } from '../node-events.js';
import { PeerProblems } from '../peers/problems.js';
import { PeerStore, type ItemSource } from '../peers/store.js';
import { peerValidation } from '../peers/validate.js';
import { Reconciler } from '../reconcile/reconciler.js';
import type { ReconcileDriver } from '../reconcile/writes.js';
import { ownNodeEvents, type Lease } from '../subnet/lease.js';

/** A reconcile driver that also says which items a validated peer lease needs (the peer store asks it). */
export interface LeaseDriver<A, D> extends ReconcileDriver<A, D>, ItemSource<D> {}

/** What writing peers to one incarnation of the HNS network takes. */
export interface NetworkBinding<A, D> {
  /** Writes the peers' items, and says which items a peer lease needs. */
  driver: LeaseDriver<A, D>;
  mtu: number;
  /** The objects this incarnation made that HNS no longer holds under the IDs they got (checked every resync). */
  lost?: () => Promise<HnsObjectKind[]>;
  /**
   * `lost` only checks that the network is there, as every successful full read of `driver` does (it fails
   * `gone` when the network is missing or renamed): the resync check skips it when a full pass read the
   * network since the previous check, so each resync reads the network once (vxlan).
   */
  lostIsNetworkRead?: boolean;
  /** The HNS network's ID: a rebuild that returns another one recreated the network (drift `network`). */
  networkId?: string;
}

/**
 * What a backend keeps on the node beside its HNS network and the peers' items (vxlan: kube-proxy's source
 * VIP; host-gw: the host endpoint's reservation): made by Network.settle, checked every resync period.
 */
export interface NodeObjects {
  /** Make or adopt them for `network` as it stands (its name, its lease). */
  settle(network: Network): Promise<void>;
  /** Write what other programs read of them (Network.publish), now and in `settle` and `lost` from then on. */
  publish?(): void;
  /**
   * The ones HNS no longer holds under the IDs they got (the rebuild makes them again), checked every resync
   * period whatever the passes read; what needs no rebuild (a file deleted by hand) is written again here.
   */
  lost?(): Promise<HnsObjectKind[]>;
  /** kube-proxy's source VIP, once settled (vxlan). */
  readonly sourceVip?: SourceVip;
}

/** An object of the agent that HNS can lose (flannel_drift_repairs_total's `kind`, with `route` and `policy`). */
export type HnsObjectKind = 'network' | 'host-endpoint' | 'source-vip';

/** What the last HNS check found, for the rebuild it asked for. */
interface PendingRepair {
  restarted: boolean;
  lost: HnsObjectKind[];
}

export interface RouteNetworkOptions<A, D> {
  deps: BackendDeps;
  lease: Lease;
  networkName: string;
  binding: NetworkBinding<A, D>;
  /** Recreate the network (same subnet) after it disappeared; returns the new binding. */
  rebuild?: (signal: AbortSignal) => Promise<NetworkBinding<A, D>>;
  /** The backend's objects beside the network (`settle`); none when undefined. */
  nodeObjects?: NodeObjects;
}

/**
 * PeerStore.countProgrammed over the items the dataplane holds as far as the loop knows (not dirty, and
 * `isProgrammed`), walked again only when the store's or the loop's version moved since the last walk:
 * reads with nothing changed cost O(1). At 20,000 peers a walk is milliseconds (docs/performance.md).
 */
export function programmedCounter(store: PeerStore<unknown>, loop: { isProgrammed(key: string): boolean; readonly version: number }): () => number {
  const programmed = (k: string) => !store.isDirty(k) && loop.isProgrammed(k);
  let last: { store: number; loop: number; count: number } | undefined;
  return () => {
    if (last?.store !== store.version || last.loop !== loop.version) last = { store: store.version, loop: loop.version, count: store.countProgrammed(programmed) };
    return last.count;
  };
}

export class RouteNetwork<A, D> implements Network {
  readonly lease: Lease;
  readonly networkName: string;
  private binding: NetworkBinding<A, D>;
  private readonly deps: BackendDeps;
  private readonly log: Logger;
  private readonly store: PeerStore<D>;
  private readonly reconciler: Reconciler<A, D>;
  /** The network's peers' problems: the store's rejected leases and the loop's refused items. */
  private readonly problems: PeerProblems;
  /** Events on the own Node (kube mode; none in etcd mode). */
  private readonly events: NodeEvents;
  private pendingRepair: PendingRepair | undefined;
  private readonly nodeObjects: NodeObjects | undefined;
  /** How many accepted peers have every item programmed (status().peersProgrammed). */
  private readonly programmed: () => number;
  /** The agent's hooks, given to run. */
  private hooks: NetworkHooks = {};
  /** --restart-service-on-hns-restart (./service-restart.ts); undefined without the flag. */
  private readonly serviceRestarter: ServiceRestarter | undefined;

  constructor(opts: RouteNetworkOptions<A, D>) {
    const { deps, lease, rebuild } = opts;
    const { netConf } = deps;
    this.lease = lease;
    this.networkName = opts.networkName;
    this.binding = opts.binding;
    this.nodeObjects = opts.nodeObjects;
    this.deps = deps;
    this.log = deps.log;
    this.events = ownNodeEvents(deps.subnetManager, lease);
    // One problems ledger for the network's peers: the store's rejected leases and the loop's refused items
    // (its sink), each refused item named by the peer the store says it is for.
    const problems = new PeerProblems({
      driver: opts.binding.driver.name,
      clock: deps.clock,
      log: componentLogger(deps.log, 'leases'),
      metrics: deps.metrics,
      events: this.events,
      owner: (key) => this.store.owner(key),
    });
    this.problems = problems;
    this.store = new PeerStore<D>({
      ownLeaseKey: lease.key,
      ownSubnet: lease.subnet,
      validation: peerValidation({
        network: netConf.network,
        backendType: netConf.backend.type,
        ...(netConf.backend.type === 'vxlan' ? { vni: netConf.backend.vni } : {}),
        own: lease,
        ownIPs: [lease.publicIP, deps.publicIP, deps.extIface.ipv4],
        ext: { ip: deps.extIface.ipv4, prefixLength: deps.extIface.prefixLength },
        ...(netConf.enableIPv6 && deps.extIPv6 !== undefined
          ? {
              ipv6: {
                network: netConf.ipv6Network,
                ownIPs: [lease.publicIPv6 ?? deps.extIPv6.address, deps.publicIPv6 ?? deps.extIPv6.address, deps.extIPv6.address],
                ext: { ip: deps.extIPv6.address, prefixLength: deps.extIPv6.prefixLength },
              },
            }
          : {}),
      }),
      items: opts.binding.driver,
      log: componentLogger(deps.log, 'leases'),
      metrics: deps.metrics,
      clock: deps.clock,
      events: this.events,
      problems,
    });
    this.reconciler = new Reconciler<A, D>({
      driver: opts.binding.driver,
      desired: this.store,
      clock: deps.clock,
      log: deps.log,
      metrics: deps.metrics,
      resyncMs: deps.resyncMs,
      sink: problems,
      rebuild: rebuild ? (signal) => this.rebuilt(rebuild, signal) : undefined,
      owner: 'peer',
    });
    this.programmed = programmedCounter(this.store, this.reconciler);
    const service = deps.flags?.restartServiceOnHnsRestart;
    if (service && !deps.host.restartService) this.log.warn('cannot restart a service on this host', { service, code: 'FLANNEL_ERR_SERVICE' });
    this.serviceRestarter =
      service && deps.host.restartService
        ? new ServiceRestarter({
            service,
            host: deps.host,
            loadBalancerIds: () => deps.hns.listLoadBalancerIds(),
            clock: deps.clock,
            log: deps.log,
            waitMs: (deps.flags?.restartServiceLbWaitSeconds ?? 0) * 1000,
            pollMs: deps.resyncMs ?? 10_000,
          })
        : undefined;
  }

  get mtu(): number {
    return this.binding.mtu;
  }

  get sourceVip(): SourceVip | undefined {
    return this.nodeObjects?.sourceVip;
  }

  async settle(): Promise<void> {
    await this.nodeObjects?.settle(this);
  }

  publish(): void {
    this.nodeObjects?.publish?.();
  }

  /**
   * Watch the leases and keep the dataplane in step until `signal` aborts. As upstream flanneld (main.go
   * calls CompleteLease once the backend runs; pkg/subnet/kube/kube.go CompleteLease sets
   * NodeNetworkUnavailable=False), the lease is completed once the first full pass was tried on an
   * existing network. Peers that keep failing are a metric and a log line, never a tainted node.
   */
  async run(signal: AbortSignal, hooks: NetworkHooks = {}): Promise<void> {
    const { subnetManager } = this.deps;
    this.hooks = hooks;
    // A fatal error in one part (a revoked lease, a broken watch) stops the others; run() settles once all have.
    const parts = new AbortController();
    const stopParts = () => parts.abort(signal.reason);
    if (signal.aborted) stopParts();
    else signal.addEventListener('abort', stopParts, { once: true });
    let first: { error: unknown } | undefined;
    const part = <T>(p: Promise<T>): Promise<T> =>
      p.catch((error: unknown) => {
        first ??= { error };
        parts.abort(error);
        throw error;
      });
    const inner = parts.signal;
    const watching = part(subnetManager.watchLeases(this.store.apply, inner));
    const reconciling = part(this.reconciler.run(inner));
    const watchingHns = part(this.watchHns(inner));
    const completing = part(
      this.reconciler.waitForFirstPass(inner).then(
        () => {
          const s = this.reconciler.status();
          this.log.info('first reconcile pass done', { peers: this.store.size, refused: s.refused, ok: s.lastPassOk === true });
          return (hooks.beforeCompleteLease?.(inner) ?? Promise.resolve()).then(() => subnetManager.completeLease(this.lease, inner));
        },
        (err: unknown) => {
          if (!inner.aborted) throw err;
        },
      ),
    );
    try {
      await Promise.allSettled([watching, reconciling, completing, watchingHns]);
      if (first) throw first.error;
    } finally {
      signal.removeEventListener('abort', stopParts);
    }
  }

  /**
   * Every resync period: has the HNS service a new instance, or are objects the agent made gone? Either
   * asks the reconciler for a rebuild, which re-applies the network, the host endpoint, the source VIP
   * and every peer. A failed check is retried at the next period (a pass then sees what is wrong).
   */
  private async watchHns(signal: AbortSignal): Promise<void> {
    const { host, clock } = this.deps;
    const instanceOf = async () => (host.hnsInstance ? await host.hnsInstance().catch(() => undefined) : undefined);
    let instance = await instanceOf();
    await this.serviceRestarter?.remember();
    let checkedAt = clock.now();
    while (await pause(clock, this.deps.resyncMs ?? 10_000, signal)) {
      const previousCheck = checkedAt;
      checkedAt = clock.now();
      const now = await instanceOf();
      const restarted = instance !== undefined && now !== undefined && now !== instance;
      const binding = this.binding;
      // The pass's read found the network since the last check: reading it again here would double the
      // resync's reads. Unless the HNS service restarted or another object is gone: then the network is read
      // now, since it may have gone since that read, taking its endpoints with it (status and /readyz
      // say the network is missing while it is rebuilt).
      const networkRead = binding.lostIsNetworkRead === true && this.reconciler.fullReadSince(previousCheck);
      let lost: HnsObjectKind[];
      try {
        const others = (await this.nodeObjects?.lost?.()) ?? [];
        const skip = networkRead && !restarted && others.length === 0;
        lost = [...((skip ? undefined : await binding.lost?.()) ?? []), ...others];
      } catch (err) {
        this.log.debug('checking the HNS objects failed; the next pass or check retries', { error: errorMessage(err) });
        continue;
      }
      if (restarted) {
        this.deps.metrics.inc(METRIC.hnsRestarts);
        this.log.warn('the HNS service restarted (new process); re-applying the network, endpoints and peers', {
          network: this.networkName,
          previous: instance,
          now,
          lost: lost.join(','),
        });
      } else if (lost.includes('network')) {
        this.log.warn('the HNS network is gone (HNS restarted, or it was deleted outside flanneld); recreating it with the same subnet and reprogramming every peer', {
          network: this.networkName,
          lost: lost.join(','),
        });
      } else if (lost.length > 0) {
        this.log.warn('HNS lost objects this agent made; re-applying them', { network: this.networkName, lost: lost.join(',') });
      }
      if (now !== undefined) instance = now;
      // What HNS holds before a restart: the load balancers a service restart waits for.
      if (!restarted) await this.serviceRestarter?.remember();
      if (!restarted && lost.length === 0) continue;
      this.pendingRepair = { restarted: restarted || this.pendingRepair?.restarted === true, lost: [...new Set([...(this.pendingRepair?.lost ?? []), ...lost])] };
      this.reconciler.requestRebuild(lost.includes('network'));
    }
  }

  private async rebuilt(rebuild: (signal: AbortSignal) => Promise<NetworkBinding<A, D>>, signal: AbortSignal): Promise<void> {
    const previous = this.binding;
    const binding = await rebuild(signal);
    this.binding = binding;
    this.store.rebind(binding.driver);
    this.reconciler.rebind(binding.driver);
    await this.hooks.afterRebuild?.(this);
    const repair = this.pendingRepair;
    if (repair?.restarted) this.serviceRestarter?.restartAfterHnsRestart(signal);
    this.pendingRepair = undefined;
    // A new network ID: the network was recreated, whether or not the check that asked for the rebuild read it.
    const recreated = previous.networkId !== undefined && binding.networkId !== undefined && binding.networkId !== previous.networkId;
    const lost: HnsObjectKind[] = !repair ? ['network'] : recreated && !repair.lost.includes('network') ? ['network', ...repair.lost] : repair.lost;
    for (const kind of lost) this.deps.metrics.inc(METRIC.driftRepairs, { kind });
    this.log.info('HNS network rebuilt; reprogramming every peer', { network: this.networkName, peers: this.store.size, mtu: binding.mtu, repaired: lost.join(',') });
    const event =
      repair?.restarted || (repair && !lost.includes('network'))
        ? hnsStateRepairedEvent(this.networkName, lost, repair.restarted, this.store.size)
        : networkRebuiltEvent(this.networkName, this.store.size);
    this.events.record(event);
  }

  /** A peer, or (kube) a Node without a lease yet: either holds its podCIDR (docs/compatibility.md, "Who holds a contested subnet"). */
  subnetKeeper(subnet: string, created: number | undefined): string | undefined {
    return this.store.keeperOf(subnet, created) ?? this.deps.subnetManager.unleasedKeeper?.(subnet, created);
  }

  /** Until neither keeps it at once: a Node without a lease that gets one moves from the manager to the store. */
  async whenSubnetFree(subnet: string, created: number | undefined, signal: AbortSignal): Promise<void> {
    const manager = this.deps.subnetManager;
    for (;;) {
      await this.store.whenFree(subnet, created, signal);
      if (manager.unleasedKeeper?.(subnet, created) === undefined) return;
      await manager.whenUnleasedFree!(subnet, created, signal);
    }
  }

  /**
   * `peersProgrammed` is counted when read, and counted again only after the store or the loop changed
   * (programmedCounter): a scrape, /status or /readyz read of an agent at rest walks no peer.
   */
  status(): NetworkStatus {
    const { store, reconciler } = this;
    const { inSync, missing, refused: _refused, ...passes } = reconciler.status();
    const programmed = this.programmed;
    return {
      inSync,
      networkMissing: missing,
      ...passes,
      refusedItems: this.problems.refusedItems(),
      peersDesired: store.size,
      get peersProgrammed() {
        return programmed();
      },
      listed: store.listed,
      rejections: store.rejected(),
    };
  }
}

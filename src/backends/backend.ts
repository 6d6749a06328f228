// The backend seam. Mirrors flannel pkg/backend/common.go (Backend, Network, ExternalInterface).
import type { Clock } from '../basics/clock.js';
import type { SourceVipFs } from '../basics/fs.js';
import type { Metrics } from '../basics/metrics.js';
import type { AgentConfig } from '../config/agent-config.js';
import type { HnsClient } from '../hns/client.js';
import type { Host, HostInterface, Ipv6Address } from '../host/host.js';
import type { Logger } from '../basics/log.js';
import type { RouteTable } from '../routes/route-table.js';
import type { AcquireOptions, Lease, SubnetManager } from '../subnet/lease.js';
import type { NetworkConfig } from '../subnet/net-conf-types.js';
import type { NetworkStatus } from '../network-status.js';

/** Everything a backend needs, passed in (effects at the edges). */
export interface BackendDeps {
  netConf: NetworkConfig;
  subnetManager: SubnetManager;
  hns: HnsClient;
  routes: RouteTable;
  host: Host;
  /** The external interface chosen before the HNS network exists (its index changes afterwards). */
  extIface: HostInterface;
  /** The address peers reach this node at (--public-ip, else the interface address). */
  publicIP: string;
  /** Dual-stack only: the external interface's IPv6 address and the IPv6 address peers route to (--public-ipv6, else it). */
  extIPv6?: Ipv6Address;
  publicIPv6?: string;
  log: Logger;
  metrics: Metrics;
  clock: Clock;
  /** Reconcile resync period (default 10 s). */
  resyncMs?: number;
  /** The agent's flags a backend reads; a flag left out is its default, or (a file's path) nothing kept on the host. */
  flags?: Partial<BackendFlags>;
  /**
   * The host's files the backend keeps its node-side objects in (src/basics/fs.ts hostFiles): vxlan's source
   * VIP files, the host-local reservations, host-gw's route record. Undefined: none written (the record in memory).
   */
  files?: SourceVipFs;
}

/**
 * The agent's flags the backends read: vxlan's policy batch and source VIP files, the host-local store both
 * reserve an address in, the service restarted after an HNS restart and how long that restart waits for
 * kube-proxy's load balancers (./service-restart.ts), and subnet.env's path (host-gw's route record is kept
 * beside it).
 */
export type BackendFlags = Pick<
  AgentConfig,
  'subnetFile' | 'hnsPolicyBatchSize' | 'restartServiceOnHnsRestart' | 'restartServiceLbWaitSeconds' | 'sourceVipFile' | 'sourceVipCompatFiles' | 'cniIpamDataDir'
>;

/** What the agent runs beside a network: its steps after a rebuild and before the lease is completed. */
export interface NetworkHooks {
  /**
   * Runs after the network's HNS network was recreated (the metadata route, `settle`, subnet.env when the
   * MTU changed); a failure makes the rebuild retry.
   */
  afterRebuild?: (network: Network) => Promise<void>;
  /**
   * Runs once the first pass after the complete list is done, before the lease is completed (kube:
   * NetworkUnavailable written): the agent tells the subnet manager what keeps the node from serving pods
   * then (every peer rejected for the cluster's configuration), so the condition never says False first.
   */
  beforeCompleteLease?: (signal: AbortSignal) => Promise<void>;
}

/** kube-proxy's source VIP as a vxlan network reserved it (./vxlan/source-vip.ts SourceVipRecord). */
export interface SourceVip {
  readonly ip: string;
  readonly endpointId: string;
}

/** A registered network: the own lease, the MTU for subnet.env, and its lease watch (flannel backend.Network). */
export interface Network {
  readonly lease: Lease;
  /** The MTU for subnet.env (may change when the network is rebuilt). */
  readonly mtu: number;
  /** Name of the HNS network backing it (`cbr0`, `flannel.4096`, ...). */
  readonly networkName: string;
  /** kube-proxy's source VIP, once `settle` reserved it (vxlan with --source-vip-file); undefined otherwise. */
  readonly sourceVip: SourceVip | undefined;
  /**
   * Make (or adopt) what the backend keeps on the node beside the HNS network: vxlan, kube-proxy's source
   * VIP endpoint, its host-local reservation and (once published) the files the scripts read it from;
   * host-gw, the host endpoint's address reserved in host-local's store. The agent calls it once the network is registered
   * and from its afterRebuild hook; the network checks them every resync period and rebuilds what HNS lost.
   */
  settle(): Promise<void>;
  /**
   * Write what other programs read of those objects (vxlan: the source VIP files kube-proxy's scripts read;
   * host-gw: nothing), now and from then on in `settle` and the resync checks; before it, none is written.
   * The agent calls it with subnet.env, so both wait while the lease is held (src/agent/lease-rounds.ts).
   */
  publish(): void;
  /** Watch the peer leases and keep the dataplane in step with them until `signal` aborts. */
  run(signal: AbortSignal, hooks?: NetworkHooks): Promise<void>;
  status(): NetworkStatus;
  /**
   * The peer that keeps `subnet` against the own Node registered again with it at `created` (the contest
   * rule of the peer store: the older Node keeps it); undefined when the own Node may take it.
   */
  subnetKeeper(subnet: string, created: number | undefined): string | undefined;
  /** Resolves once no peer keeps `subnet` against the own Node (subnetKeeper); rejects when `signal` aborts. */
  whenSubnetFree(subnet: string, created: number | undefined, signal: AbortSignal): Promise<void>;
}

export interface Backend {
  readonly type: 'host-gw' | 'vxlan';
  /** Acquire the lease (`opts`: how it is published, ../subnet/lease.ts) and build the network on it. */
  registerNetwork(signal: AbortSignal, opts?: AcquireOptions): Promise<Network>;
}

/** Retry `fn` until it succeeds, `attempts` run out, or `signal` aborts (for HNS/host calls that race the vSwitch). */
export async function poll<T>(clock: Clock, fn: () => Promise<T | undefined>, opts: { intervalMs: number; timeoutMs: number; signal?: AbortSignal }): Promise<T | undefined> {
  const deadline = clock.now() + opts.timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (clock.now() >= deadline) return undefined;
    await clock.sleep(opts.intervalMs, opts.signal);
  }
}

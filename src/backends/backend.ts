// The backend seam. Mirrors flannel pkg/backend/common.go (Backend, Network, ExternalInterface).
import type { Clock } from '../clock.js';
import type { Metrics } from '../health/metrics.js';
import type { HnsClient } from '../hns/client.js';
import type { Host, HostInterface } from '../host/host.js';
import type { Logger } from '../log.js';
import type { RouteTable } from '../routes/route-table.js';
import type { Lease, LeaseEvent, SubnetManager } from '../subnet/lease.js';
import type { NetworkConfig } from '../subnet/net-conf-types.js';

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
  log: Logger;
  metrics: Metrics;
  clock: Clock;
  /** Reconcile resync period (default 10 s). */
  resyncMs?: number;
}

/** What /healthz, /readyz and `flanneld status` need to know about the reconcile loop. */
export interface NetworkStatus {
  /** The last pass found the HNS network gone and it is not rebuilt yet. */
  networkMissing: boolean;
  /** When the reconcile loop was last known good: now while it idles after a successful pass, else when a pass last succeeded. */
  lastGoodAt: number | undefined;
  /** Peer items the dataplane currently refuses. */
  refused: number;
  /** The complete list has arrived, the last pass wrote everything and nothing changed since. */
  inSync: boolean;
  /** Accepted peers, and how many of them the dataplane holds completely. */
  peersDesired: number;
  peersProgrammed: number;
  lastPassAt: number | undefined;
  lastPassOk: boolean | undefined;
  lastSuccessAt: number | undefined;
  lastError: { at: number; message: string } | undefined;
}

/** A registered network: the own lease, the MTU for subnet.env, and the peer reconcile loop. */
export interface Network {
  readonly lease: Lease;
  /** The MTU for subnet.env (may change when the network is rebuilt). */
  readonly mtu: number;
  /** Name of the HNS network backing it (`cbr0`, `flannel.4096`, ...). */
  readonly networkName: string;
  /** Apply changes of the peer set (the LeaseWatcher's events): the next pass writes only their delta. */
  applyPeerEvents(events: readonly LeaseEvent[]): void;
  /** The first complete list has arrived: from now on the dataplane may be written. */
  markSynced(): void;
  /** Resolves after the first successful pass after `markSynced()`. */
  waitForInSync(signal?: AbortSignal): Promise<void>;
  /** Resolves after the first pass after `markSynced()` was tried on an existing network (whatever its result). */
  waitForFirstPass(signal?: AbortSignal): Promise<void>;
  status(): NetworkStatus;
  /** Run `listener` after each rebuild of the HNS network (a failure makes the rebuild retry). */
  onRebuilt(listener: () => Promise<void>): void;
  /** Reconcile until `signal` aborts. */
  run(signal: AbortSignal): Promise<void>;
}

export interface Backend {
  readonly type: 'host-gw' | 'vxlan';
  registerNetwork(signal: AbortSignal): Promise<Network>;
}

/** Retry `fn` until it succeeds, `attempts` run out, or `signal` aborts (for HNS/host calls that race the vSwitch). */
export async function poll<T>(
  clock: Clock,
  fn: () => Promise<T | undefined>,
  opts: { intervalMs: number; timeoutMs: number; signal?: AbortSignal },
): Promise<T | undefined> {
  const deadline = clock.now() + opts.timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (clock.now() >= deadline) return undefined;
    await clock.sleep(opts.intervalMs, opts.signal);
  }
}

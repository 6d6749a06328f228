// A Network whose peers are kept equal to the desired set by the shared Reconciler. Both backends are
// this class with their own driver (routes for host-gw, RemoteSubnetRoute policies for vxlan).
import type { Network, NetworkStatus } from './backend.js';
import { Reconciler, type ReconcileDriver } from './reconcile.js';
import type { Clock } from '../clock.js';
import type { Metrics } from '../health/metrics.js';
import type { Logger } from '../log.js';
import type { Lease } from '../subnet/lease.js';

export interface ReconciledNetworkOptions<A, D> {
  lease: Lease;
  mtu: number;
  networkName: string;
  driver: ReconcileDriver<A, D>;
  /** Map a validated peer lease to the dataplane object(s) it needs. */
  desiredFor: (peer: Lease) => D[];
  log: Logger;
  metrics: Metrics;
  clock: Clock;
  resyncMs?: number;
}

export class ReconciledNetwork<A, D> implements Network {
  readonly lease: Lease;
  readonly mtu: number;
  readonly networkName: string;
  private readonly reconciler: Reconciler<A, D>;
  private readonly desiredFor: (peer: Lease) => D[];
  private readonly desiredKey: (d: D) => string;
  private peers: Lease[] = [];

  constructor(opts: ReconciledNetworkOptions<A, D>) {
    this.lease = opts.lease;
    this.mtu = opts.mtu;
    this.networkName = opts.networkName;
    this.desiredFor = opts.desiredFor;
    this.desiredKey = (d) => opts.driver.desiredKey(d);
    this.reconciler = new Reconciler<A, D>({
      driver: opts.driver,
      clock: opts.clock,
      log: opts.log,
      metrics: opts.metrics,
      resyncMs: opts.resyncMs,
    });
  }

  setPeers(peers: Lease[]): void {
    this.peers = peers;
    this.reconciler.setDesired(peers.flatMap((p) => this.desiredFor(p)));
  }

  markSynced(): void {
    this.reconciler.markSynced();
  }

  waitForInSync(signal?: AbortSignal): Promise<void> {
    return this.reconciler.waitForInSync(signal);
  }

  run(signal: AbortSignal): Promise<void> {
    return this.reconciler.run(signal);
  }

  status(): NetworkStatus {
    const r = this.reconciler.status();
    const programmed = this.peers.filter((p) => this.desiredFor(p).every((d) => this.reconciler.isProgrammed(this.desiredKey(d)))).length;
    return {
      inSync: r.synced && r.inSync,
      peersDesired: this.peers.length,
      peersProgrammed: programmed,
      lastPassAt: r.lastPassAt,
      lastPassOk: r.lastPassOk,
      lastSuccessAt: r.lastSuccessAt,
      lastError: r.lastError,
    };
  }
}

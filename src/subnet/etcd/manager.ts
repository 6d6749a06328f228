// The etcd subnet manager: the own lease (lease-keeper.ts: allocation under `<prefix>/subnets/`, its 24 h
// etcd lease renewed, revocation) and the peers' leases (lease-watch.ts: prefix list + watch). Mirrors
// flannel pkg/subnet/etcd/local_manager.go (LocalManager: AcquireLease, CompleteLease, WatchLeases),
// dual-stack (EnableIPv6) as upstream's: both subnets in the lease key, PublicIPv6 in its value.
import { systemClock, systemRandom } from '../../basics/clock.js';
import type { Clock, Random } from '../../basics/clock.js';
import { Metrics } from '../../basics/metrics.js';
import { silentLogger } from '../../basics/log.js';
import type { Logger } from '../../basics/log.js';
import type { Lease, LeaseAttrs, LeaseAttrsSource, LeaseUpdateHandler, SubnetManager } from '../lease.js';
import type { NetworkConfig } from '../net-conf-types.js';
import { subnetTimings, type SubnetTimings } from '../timings.js';
import { LeaseKeeper } from './lease-keeper.js';
import { EtcdLeaseWatch } from './lease-watch.js';
import type { EtcdRegistry } from './registry.js';

export interface EtcdSubnetManagerOptions {
  registry: EtcdRegistry;
  /** `--etcd-prefix`, for messages. */
  prefix: string;
  netConf: NetworkConfig;
  /** The address this node publishes (`--public-ip` or the interface address): finds our old lease. */
  publicIP: string;
  /** FLANNEL_SUBNET of the previous subnet.env (network form), tried before a random subnet. */
  previousSubnet?: string;
  /** FLANNEL_IPV6_SUBNET of the previous subnet.env (network form), with previousSubnet (dual-stack). */
  previousIPv6Subnet?: string;
  /** Backoffs, windows and the own lease's TTL and renewal (../timings.ts; defaults subnetTimings('etcd')). */
  timings?: Partial<SubnetTimings>;
  /** Close the client once the signal of acquireLease/watchLeases aborts (the factory's client). */
  onClose?: () => void;
  random?: Random;
  log?: Logger;
  metrics?: Metrics;
  clock?: Clock;
}

export class EtcdSubnetManager implements SubnetManager {
  readonly name = 'etcd';

  private readonly keeper: LeaseKeeper;
  private readonly peers: EtcdLeaseWatch;
  private readonly log: Logger;
  private readonly onClose: (() => void) | undefined;
  private closed = false;

  constructor(opts: EtcdSubnetManagerOptions) {
    this.log = opts.log ?? silentLogger();
    this.onClose = opts.onClose;
    const clock = opts.clock ?? systemClock;
    const random = opts.random ?? systemRandom;
    const t = subnetTimings('etcd', opts.timings);
    this.keeper = new LeaseKeeper({
      registry: opts.registry,
      prefix: opts.prefix,
      netConf: opts.netConf,
      publicIP: opts.publicIP,
      previousSubnet: opts.previousSubnet,
      previousIPv6Subnet: opts.previousIPv6Subnet,
      renewMarginMs: t.leaseRenewMarginMs,
      leaseTtlSeconds: t.leaseTtlSeconds,
      renewRetryMs: t.renewRetryMs,
      backoffBaseMs: t.backoffBaseMs,
      backoffCapMs: t.backoffCapMs,
      apiRetryTimeoutMs: t.apiRetryTimeoutMs,
      random,
      log: this.log,
      clock,
    });
    this.peers = new EtcdLeaseWatch({
      registry: opts.registry,
      own: this.keeper,
      log: this.log,
      metrics: opts.metrics ?? new Metrics(),
      clock,
      random,
      backoff: t.relistBackoff,
    });
  }

  /**
   * Stop using etcd: ends any open watch stream, then closes the client when the manager owns it
   * (onClose). Watches are raw streams reconnected on the relist loop's abortable timers (lease-watch.ts,
   * EtcdRegistry.openWatchStream), so nothing of the client keeps running afterwards. Idempotent.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.peers.close();
    this.onClose?.();
  }

  private closeOnAbort(signal: AbortSignal): void {
    if (!this.onClose) return;
    if (signal.aborted) return this.close();
    // After the watch's own abort handler has started cancelling it.
    signal.addEventListener('abort', () => setImmediate(() => this.close()), { once: true });
  }

  acquireLease(attrsFor: LeaseAttrsSource, signal: AbortSignal): Promise<Lease> {
    this.closeOnAbort(signal);
    return this.keeper.acquire(attrsFor, signal);
  }

  republishLease(_lease: Lease, attrs: LeaseAttrs, signal: AbortSignal): Promise<void> {
    return this.keeper.republish(attrs, signal);
  }

  completeLease(lease: Lease, _signal: AbortSignal): Promise<void> {
    // Renewal already runs since acquireLease (upstream starts it here); nothing to publish.
    this.log.info('own lease complete', { key: lease.key });
    return Promise.resolve();
  }

  watchLeases(onUpdate: LeaseUpdateHandler, signal: AbortSignal): Promise<void> {
    this.closeOnAbort(signal);
    return this.peers.run(onUpdate, signal);
  }
}

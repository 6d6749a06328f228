// The Kubernetes subnet manager: the own Node's podCIDR is the lease, flannel's annotations publish it,
// and a list + watch of Nodes yields the peers. Mirrors flannel pkg/subnet/kube/kube.go
// (kubeSubnetManager: NewSubnetManager, AcquireLease, WatchLeases, CompleteLease) by composing one
// module per job: own-node.ts (node name, the wait for the Node, annotations, condition) and
// node-list-watch.ts (the Node list-watch: ../../kube/list-watch.ts with the Nodes' projection), both on ../../kube/api-error.ts (retries, coded errors).
// Requests are raw JSON with a deadline each (../../kube/http.ts): no typed model of any Node is built.
import { systemClock, systemRandom, untilAborted } from '../../basics/clock.js';
import type { Clock, Random } from '../../basics/clock.js';
import { ConfigError, KubeError } from '../../basics/errors.js';
import { Metrics } from '../../basics/metrics.js';
import { isNetworkCidr } from '../../basics/ip4.js';
import { componentLogger, silentLogger } from '../../basics/log.js';
import type { Logger } from '../../basics/log.js';
import type { AcquireOptions, ApiWatchDeps, Lease, LeaseAttrs, LeaseAttrsSource, LeaseUpdateHandler, OwnLeaseChange, SubnetClaim, SubnetManager } from '../lease.js';
import { subnetTimings, type SubnetTimings } from '../timings.js';
import { annotationKeys } from './annotations.js';
import { declareEventMetrics, KubeEventRecorder } from '../../kube/event-recorder.js';
import { KubeHttp } from '../../kube/http.js';
import { ownSubnetContestedAtStartEvent, ownSubnetContestedFix } from '../../node-events.js';
import { NodeListWatch, nodeListFn, nodeWatchFn, observeAll } from './node-list-watch.js';
import { OwnSubnetClaimants } from './own-subnet-claimants.js';
import { UnleasedClaimants } from './unleased-claimants.js';
import { OwnNodePublisher } from './own-node.js';
import { OwnNodeWatch } from './own-node-watch.js';
import type { KubeConfig } from '../../kube/kubeconfig.js';
import type { RbacFeature } from '../../kube/api-error.js';

/** Nodes per page of the Node list (`GET /api/v1/nodes?limit=`). */
export const DEFAULT_LIST_PAGE_SIZE = 150;

export interface KubeSubnetManagerOptions {
  kubeConfig: KubeConfig;
  /** NODE_NAME; when absent the node is found through POD_NAME + POD_NAMESPACE. */
  nodeName?: string;
  podName?: string;
  podNamespace?: string;
  /** net-conf `Network` (IPv4 CIDR). */
  network: string;
  /** Normalised `--kube-annotation-prefix` (ends in `/` or `-`). */
  annotationPrefix: string;
  setNodeNetworkUnavailable: boolean;
  /** `--public-ip`, for the log line when the node-public-ip annotation overrides it. */
  publicIPOverride?: string;
  /** net-conf `IPv6Network` when EnableIPv6 (dual-stack); absent on IPv4-only networks. */
  ipv6Network?: string;
  /** `--ipv4-only` in a dual-stack cluster: the public IPv6 published for the Linux peers (own-node.ts). */
  ipv4OnlyPublicIPv6?: string;
  log?: Logger;
  metrics?: Metrics;
  clock?: Clock;
  /** Jitter of the default watch timeout and of the pauses between list and watch rounds. */
  random?: Random;
  /** Backoffs, windows, polls and deadlines (../timings.ts; defaults subnetTimings('kube')). */
  timings?: Partial<SubnetTimings>;
  /** When start-up began, if before the manager's first request (the public-IP read): its start-up window's start. */
  startedAt?: number;
  /**
   * Page size of the Node list (default DEFAULT_LIST_PAGE_SIZE). bench/kube-api.mjs, 5,000 ~9 KB Nodes before
   * the field cut: 250 cost the least CPU (583 ms against 641 at 100 and 730 at 500). With the cut, the
   * agent's RSS after listing decides (docs/performance.md, "Steady state, profiled with perf"): 5,000 heavy
   * Nodes left 91-96 MB at 100 and 150 in four runs, 95-107 MB at 250 (three of four runs above 0.35 of an
   * informer), and 150 lists 20,000 in 134 pages at a cold start of 0.7-0.9x the list, which 100 made
   * 0.9-1.1x.
   */
  listPageSize?: number;
  /** The agent's features whose RBAC a 403 names besides its own (--network-policy: ../../kube/api-error.ts rbacFix). */
  rbacFeatures?: readonly RbacFeature[];
}

/** A held lease: the own claim (name, podCIDR, creation time), and who keeps the podCIDR once the first complete list says (own-subnet-claimants.ts). */
interface HeldLease {
  own: SubnetClaim & { subnet: string };
  keeper: Promise<SubnetClaim | undefined>;
}

export class KubeSubnetManager implements SubnetManager {
  readonly name = 'kube';

  private readonly nodes: NodeListWatch;
  private readonly own: OwnNodePublisher;
  private readonly http: KubeHttp;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly metrics: Metrics;
  private events: KubeEventRecorder | undefined;
  readonly watchDeps: ApiWatchDeps;
  private ownLeaseHandler: ((change: OwnLeaseChange) => void) | undefined;
  /** After a held acquireLease, until confirmLease. */
  private held: HeldLease | undefined;
  /** The Nodes with a podCIDR and no lease, from the first acquireLease on (a re-registered own Node must not take one's podCIDR). */
  private unleased: UnleasedClaimants | undefined;

  constructor(opts: KubeSubnetManagerOptions) {
    if (!isNetworkCidr(opts.network)) {
      throw new ConfigError('FLANNEL_ERR_CONFIG', `kube subnet manager: Network "${opts.network}" is not an IPv4 CIDR; fix net-conf.json`, { network: opts.network });
    }
    const keys = annotationKeys(opts.annotationPrefix);
    const log = opts.log ?? silentLogger();
    const metrics = opts.metrics ?? new Metrics();
    const clock = opts.clock ?? systemClock;
    const http = new KubeHttp(opts.kubeConfig, clock);
    this.http = http;
    this.log = log;
    this.clock = clock;
    this.metrics = metrics;
    declareEventMetrics(metrics);
    const t = subnetTimings('kube', opts.timings);
    this.watchDeps = { http, timings: t, listPageSize: opts.listPageSize ?? DEFAULT_LIST_PAGE_SIZE, random: opts.random ?? systemRandom };
    this.nodes = new NodeListWatch({
      list: nodeListFn(http, t.requestTimeoutMs),
      watch: nodeWatchFn(http, metrics),
      keys,
      log,
      metrics,
      clock,
      random: opts.random ?? systemRandom,
      backoff: t.relistBackoff,
      listPageSize: opts.listPageSize ?? DEFAULT_LIST_PAGE_SIZE,
      listDeadlineMs: t.listDeadlineMs,
      watchTimeoutSeconds: t.watchTimeoutSeconds,
      watchSilenceMs: t.watchSilenceMs,
      ...(opts.ipv6Network !== undefined ? { ipv6: true } : {}),
      ...(opts.rbacFeatures ? { rbacFeatures: opts.rbacFeatures } : {}),
    });
    this.own = new OwnNodePublisher({
      http,
      keys,
      network: opts.network,
      nodeName: opts.nodeName,
      podName: opts.podName,
      podNamespace: opts.podNamespace,
      setNodeNetworkUnavailable: opts.setNodeNetworkUnavailable,
      publicIPOverride: opts.publicIPOverride,
      ...(opts.ipv6Network !== undefined ? { ipv6Network: opts.ipv6Network } : {}),
      ...(opts.ipv4OnlyPublicIPv6 !== undefined ? { ipv4OnlyPublicIPv6: opts.ipv4OnlyPublicIPv6 } : {}),
      log,
      clock,
      retry: {
        clock,
        log,
        backoffBaseMs: t.backoffBaseMs,
        backoffCapMs: t.backoffCapMs,
        timeoutMs: t.apiRetryTimeoutMs,
        ...(opts.rbacFeatures ? { rbacFeatures: opts.rbacFeatures } : {}),
      },
      requestTimeoutMs: t.requestTimeoutMs,
      nodeWaitTimeoutMs: t.nodeWaitTimeoutMs,
      nodeWaitLogIntervalMs: t.nodeWaitLogIntervalMs,
      nodePollIntervalMs: t.nodePollIntervalMs,
      startUpWindowMs: t.startUpWindowMs,
      ...(opts.startedAt !== undefined ? { startedAt: opts.startedAt } : {}),
    });
  }

  /**
   * The own Node's podCIDR as the lease; from then on the Node watch follows that Node (own-node-watch.ts).
   * With `hold`, the annotations are published by confirmLease, and the first complete list is asked who
   * keeps the podCIDR (own-subnet-claimants.ts).
   */
  async acquireLease(attrsFor: LeaseAttrsSource, signal: AbortSignal, opts: AcquireOptions = {}): Promise<Lease> {
    const lease = await this.own.acquire(attrsFor, signal, opts.hold === true);
    const handler = this.ownLeaseHandler;
    const ownNode = handler && new OwnNodeWatch({ node: lease.key, uid: this.own.acquiredUid, subnet: lease.subnet, onChange: handler });
    // The Nodes without a lease first: at a list's end they have dropped those the list no longer holds before the own Node's record is told.
    const follow = observeAll(handler && (this.unleased ??= new UnleasedClaimants(lease.key)), ownNode);
    this.held = undefined;
    if (!opts.hold) {
      this.nodes.observer = follow;
      return lease;
    }
    const created = this.own.acquiredCreated;
    const own = { key: lease.key, subnet: lease.subnet, ...(created !== undefined ? { created } : {}) };
    let decided!: (keeper: SubnetClaim | undefined) => void;
    const keeper = new Promise<SubnetClaim | undefined>((resolve) => (decided = resolve));
    const claimants = new OwnSubnetClaimants({
      own,
      decided: (k) => {
        this.nodes.observer = follow; // asked once
        decided(k);
      },
    });
    this.nodes.observer = observeAll(follow, claimants);
    this.held = { own, keeper };
    return lease;
  }

  confirmLease(published: boolean, signal: AbortSignal): Promise<void> | undefined {
    const held = this.held;
    this.held = undefined;
    if (!held || (published && !this.own.holding)) return undefined;
    return this.confirm(held, signal);
  }

  private async confirm({ own, keeper: deciding }: HeldLease, signal: AbortSignal): Promise<void> {
    const keeper = await untilAborted(deciding, signal);
    if (keeper === undefined) {
      await this.own.publishHeld(signal);
      return;
    }
    this.own.dropHeld();
    const sameSecond = keeper.created === own.created;
    const events = this.nodeEvents(own);
    events.record(ownSubnetContestedAtStartEvent(own.key, own.subnet, keeper.key, sameSecond));
    await events.flushed(); // the agent stops next
    const holder = sameSecond ? `Node "${keeper.key}", created in the same second with a name that sorts first` : `the older Node "${keeper.key}"`;
    const fix = ownSubnetContestedFix(
      own.key,
      keeper.key,
      'then start flanneld again (its DaemonSet or service restarts it): on the same podCIDR it reuses the HNS network it built, on a new one it replaces it',
    );
    throw new KubeError(
      'FLANNEL_ERR_SUBNET_CONTESTED',
      `podCIDR ${own.subnet} of Node "${own.key}" is held by ${holder}, which keeps a contested subnet; flanneld published nothing (no annotations, no subnet.env); fix: ${fix}`,
      { node: own.key, subnet: own.subnet, holder: keeper.key },
    );
  }

  /**
   * The own Node's subnets (IPv4, and IPv6 when net-conf enables it) as acquireLease will lease them,
   * without publishing anything: `flanneld cni-config` renders the dual-stack conflist from them before
   * the agent first runs on the node (a DaemonSet's init container). `publicIPv6`: the Node's
   * `public-ipv6` annotation, the address an earlier run of the agent published.
   */
  async ownSubnets(signal: AbortSignal): Promise<{ subnet: string; ipv6Subnet?: string; publicIPv6?: string }> {
    const { rec, ipv6Subnet } = await this.own.ownSubnets(signal);
    return { subnet: rec.podCIDR, ...(ipv6Subnet !== undefined ? { ipv6Subnet } : {}), ...(rec.publicIPv6 ? { publicIPv6: rec.publicIPv6 } : {}) };
  }

  onOwnLeaseChange(handler: (change: OwnLeaseChange) => void): void {
    this.ownLeaseHandler = handler;
  }

  unleasedKeeper(subnet: string, created: number | undefined): string | undefined {
    return this.unleased?.keeperOf(subnet, created);
  }

  whenUnleasedFree(subnet: string, created: number | undefined, signal: AbortSignal): Promise<void> {
    return this.unleased ? this.unleased.whenFree(subnet, created, signal) : Promise.resolve();
  }

  completeLease(_lease: Lease, signal: AbortSignal): Promise<void> {
    return this.own.markNetworkAvailable(signal);
  }

  reportPodNetwork(problem: { reason: string; message: string } | undefined, signal: AbortSignal): Promise<void> {
    return this.own.reportPodNetwork(problem, signal);
  }

  /** Events on the own Node (the lease's key is its name), rate-limited and deduplicated as client-go's recorder. */
  nodeEvents(lease: Pick<Lease, 'key'>): KubeEventRecorder {
    this.events ??= new KubeEventRecorder({ http: this.http, nodeName: lease.key, clock: this.clock, log: componentLogger(this.log, 'events'), metrics: this.metrics });
    return this.events;
  }

  watchLeases(onUpdate: LeaseUpdateHandler, signal: AbortSignal): Promise<void> {
    return this.nodes.run(onUpdate, signal);
  }

  nodeInternalIPs(): readonly string[] | undefined {
    return this.own.internalIPs;
  }

  republishLease(_lease: Lease, attrs: LeaseAttrs, signal: AbortSignal): Promise<void> {
    return this.own.republishBackendData(attrs, signal);
  }
}

// The Kubernetes subnet manager: the own Node's podCIDR is the lease, flannel's annotations publish it,
// and a list + watch of Nodes yields the peers. Mirrors flannel pkg/subnet/kube/kube.go
// (kubeSubnetManager: NewSubnetManager, AcquireLease, WatchLeases, CompleteLease) by composing one
// module per job: own-node.ts (node name, the wait for the Node, annotations, condition) and
// node-list-watch.ts (the Node list-watch: ../../kube/list-watch.ts with the Nodes' projection), both on ../../kube/api-error.ts (retries, coded errors).
// Requests are raw JSON with a deadline each (../../kube/http.ts): no typed model of any Node is built.
import { systemClock, systemRandom } from '../../basics/clock.js';
import type { Clock, Random } from '../../basics/clock.js';
import { ConfigError } from '../../basics/errors.js';
import { Metrics } from '../../basics/metrics.js';
import { isNetworkCidr } from '../../basics/ip4.js';
import { componentLogger, silentLogger } from '../../basics/log.js';
import type { Logger } from '../../basics/log.js';
import type { Lease, LeaseAttrs, LeaseAttrsSource, LeaseUpdate, LeaseUpdateHandler, OwnClaim, OwnLeaseChange, PeerLease, SubnetManager } from '../lease.js';
import { subnetTimings, type SubnetTimings } from '../timings.js';
import { annotationKeys } from './annotations.js';
import { declareEventMetrics, KubeEventRecorder } from '../../kube/event-recorder.js';
import { KubeHttp } from '../../kube/http.js';
import { NodeListWatch, nodeListFn, nodeWatchFn } from './node-list-watch.js';
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

export class KubeSubnetManager implements SubnetManager {
  readonly name = 'kube';

  private readonly nodes: NodeListWatch;
  private readonly own: OwnNodePublisher;
  private readonly http: KubeHttp;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly metrics: Metrics;
  private events: KubeEventRecorder | undefined;
  /** What another list-watch of this API server is built with (the NetworkPolicy controller's: src/policy/sources.ts). */
  readonly watchDeps: { http: KubeHttp; timings: SubnetTimings; listPageSize: number; random: Random };
  private ownLeaseHandler: ((change: OwnLeaseChange) => void) | undefined;
  /** The Node list-watch run before the first lease, until the network's watchLeases takes it over (watchLeasesBeforeLease). */
  private firstWatch: FirstWatch | undefined;

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

  /** The own Node's podCIDR as the lease; from then on the Node watch follows that Node (own-node-watch.ts). */
  async acquireLease(attrsFor: LeaseAttrsSource, signal: AbortSignal): Promise<Lease> {
    const lease = await this.own.acquire(attrsFor, signal);
    const handler = this.ownLeaseHandler;
    this.nodes.observer = handler && new OwnNodeWatch({ node: lease.key, uid: this.own.acquiredUid, subnet: lease.subnet, onChange: handler });
    return lease;
  }

  /** The own Node's podCIDR and creationTimestamp, published nowhere; from then on the Node watch follows that Node. */
  async ownClaim(signal: AbortSignal): Promise<OwnClaim> {
    const { name, rec } = await this.own.ownSubnets(signal);
    const handler = this.ownLeaseHandler;
    this.nodes.observer = handler && new OwnNodeWatch({ node: name, uid: rec.uid, subnet: rec.podCIDR, onChange: handler });
    return { key: name, subnet: rec.podCIDR, ...(rec.created !== undefined ? { created: rec.created } : {}) };
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

  completeLease(_lease: Lease, signal: AbortSignal): Promise<void> {
    return this.own.markNetworkAvailable(signal);
  }

  reportPodNetwork(problem: { reason: string; message: string } | undefined, signal: AbortSignal, beforeLease = false): Promise<void> {
    return this.own.reportPodNetwork(problem, signal, beforeLease);
  }

  /** Events on the own Node (the lease's key is its name), rate-limited and deduplicated as client-go's recorder. */
  nodeEvents(lease: Pick<Lease, 'key'>): KubeEventRecorder {
    this.events ??= new KubeEventRecorder({ http: this.http, nodeName: lease.key, clock: this.clock, log: componentLogger(this.log, 'events'), metrics: this.metrics });
    return this.events;
  }

  /**
   * The Node list-watch before the first lease: told to `onUpdate` until `signal` aborts, and run on (keeping
   * each Node's latest lease) until `until` aborts or watchLeases takes it over, which is given what it
   * missed at once: the Nodes are listed once at start, before the lease as upstream lists them (flannel
   * pkg/subnet/kube/kube.go NewSubnetManager waits for its node informer's sync), not again after it.
   */
  watchLeasesBeforeLease(onUpdate: LeaseUpdateHandler, signal: AbortSignal, until: AbortSignal): Promise<void> {
    this.firstWatch?.stop.abort(new Error('the Nodes are listed again before the lease'));
    const stop = new AbortController();
    const end = () => stop.abort(until.reason);
    if (until.aborted) end();
    else until.addEventListener('abort', end, { once: true });
    const w: FirstWatch = { latest: new Map(), listed: false, takenOver: false, to: onUpdate, stop, run: Promise.resolve() };
    w.run = this.nodes.run((u) => keepLatest(w, u), stop.signal).finally(() => until.removeEventListener('abort', end));
    this.firstWatch = w;
    return new Promise<void>((resolve, reject) => {
      const leave = () => {
        if (w.to === onUpdate) w.to = undefined;
        resolve();
      };
      if (signal.aborted) return leave();
      signal.addEventListener('abort', leave, { once: true });
      w.run.then(leave, (err: unknown) => {
        signal.removeEventListener('abort', leave);
        reject(err);
      });
    });
  }

  watchLeases(onUpdate: LeaseUpdateHandler, signal: AbortSignal): Promise<void> {
    const w = this.firstWatch;
    if (!w || w.stop.signal.aborted) return this.nodes.run(onUpdate, signal);
    this.firstWatch = undefined;
    // Taken over: what it holds now at once (the complete list's end too, when it was seen), the rest as it comes.
    const peers = [...w.latest.values()];
    const listed = w.listed;
    w.latest.clear();
    w.takenOver = true;
    w.to = onUpdate;
    if (peers.length > 0) onUpdate({ kind: 'peers', peers });
    if (listed) onUpdate({ kind: 'listed', keys: new Set(peers.map((p) => p.key)) });
    const stop = () => w.stop.abort(signal.reason);
    if (signal.aborted) stop();
    else signal.addEventListener('abort', stop, { once: true });
    return w.run.finally(() => signal.removeEventListener('abort', stop));
  }

  nodeInternalIPs(): readonly string[] | undefined {
    return this.own.internalIPs;
  }

  republishLease(_lease: Lease, attrs: LeaseAttrs, signal: AbortSignal): Promise<void> {
    return this.own.republishBackendData(attrs, signal);
  }
}

/** The Node list-watch before the first lease: who is told, and each Node's latest lease until it is taken over. */
interface FirstWatch {
  latest: Map<string, PeerLease>;
  listed: boolean;
  takenOver: boolean;
  to: LeaseUpdateHandler | undefined;
  stop: AbortController;
  run: Promise<void>;
}

/** Keep `u` in the first watch's latest leases, until it is taken over, and tell it on. */
function keepLatest(w: FirstWatch, u: LeaseUpdate): void {
  if (!w.takenOver && u.kind === 'peers') {
    for (const p of u.peers) {
      if (p.lease) w.latest.set(p.key, p);
      else w.latest.delete(p.key);
    }
  }
  if (!w.takenOver && u.kind === 'listed') {
    w.listed = true;
    for (const key of [...w.latest.keys()]) if (!u.keys.has(key)) w.latest.delete(key);
  }
  w.to?.(u);
}

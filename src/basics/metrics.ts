// The agent's Prometheus metrics, a basic facility every layer may use, exposed by prom-client (the ecosystem's client: text format, histograms,
// process metrics). The agent's components receive the one `Metrics` instance and bump the names below
// through inc/set/observe; /metrics renders its registry, the one place values are read (a reader that
// wants one value asks the registry, e.g. `registry.getSingleMetric(name).get()`).
// Every family in FAMILIES exists from the start with its label names, an unlabelled one at zero, and
// every labelled series whose label values are known (LABEL_VALUES) at zero, so a rate() or an alert on
// it works before the first event.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { HnsError, RouteError, hex } from './errors.js';
import { VERSION } from './version.js';

export type Labels = Record<string, string>;

export const METRIC = {
  peers: 'flannel_peers',
  leasesRejected: 'flannel_leases_rejected_total',
  leasesIPv6Rejected: 'flannel_leases_ipv6_rejected_total',
  dataplaneCalls: 'flannel_dataplane_calls_total',
  dataplaneErrors: 'flannel_dataplane_errors_total',
  lastApplySuccess: 'flannel_last_successful_apply_timestamp_seconds',
  applyPasses: 'flannel_apply_passes_total',
  apiReconnects: 'flannel_api_reconnects_total',
  kubeObjectsSkipped: 'flannel_kube_objects_skipped_total',
  subnetConflicts: 'flannel_subnet_conflicts_total',
  buildInfo: 'flannel_build_info',
  eventToDataplane: 'flannel_event_to_dataplane_seconds',
  passDuration: 'flannel_apply_pass_duration_seconds',
  refusedItems: 'flannel_dataplane_refused_items',
  refusals: 'flannel_dataplane_refusals_total',
  networkRebuilds: 'flannel_network_rebuilds_total',
  hnsRestarts: 'flannel_hns_restarts_total',
  driftRepairs: 'flannel_drift_repairs_total',
  simulatedCalls: 'flannel_simulated_dataplane_calls_total',
  nodeEventsWritten: 'flannel_node_events_written_total',
  nodeEventsDropped: 'flannel_node_events_dropped_total',
  nodeEventsQueued: 'flannel_node_events_queued',
  nodeEventCacheEntries: 'flannel_node_event_cache_entries',
  watchBytesScanned: 'flannel_watch_bytes_scanned_total',
  hnsCallDuration: 'flannel_hns_call_duration_seconds',
  hnsCallErrors: 'flannel_hns_call_errors_total',
  ready: 'flannel_ready',
  peersProgrammed: 'flannel_peers_programmed',
  peersRejected: 'flannel_peers_rejected',
  netpolPolicies: 'flannel_netpol_policies',
  netpolRules: 'flannel_netpol_rules',
  netpolSets: 'flannel_netpol_ip_sets',
  netpolWrites: 'flannel_netpol_hns_writes_total',
  netpolRefused: 'flannel_netpol_policies_refused',
  netpolDelay: 'flannel_netpol_endpoint_rules_delay_seconds',
} as const;

type Kind = 'counter' | 'gauge' | 'histogram';

/**
 * Buckets of one HNS or iphlpapi call, in seconds. From 1 ms, the agent clock's resolution (Date.now) and
 * the scale of a quiet HNS (kubernetes/kubernetes#130963: a kube-proxy sync of several HNS queries logged
 * as 7.2 ms; flannel-io/flannel#1066: a v1 network create answered 6 ms after the request was logged), in
 * 1-2.5-5 steps to 10 s (flannel-io/flannel#833: an Overlay network create answered, with an error, 1.1 s
 * after it was sent), then 30 and 60 s (HNS taking "about half a minute per policy",
 * kubernetes/kubernetes#109162; "one minute or more to apply Policy rules",
 * Azure/azure-container-networking#1614) and 120 s, the default --hns-call-timeout, at which a call is
 * given up and observed. No per-call figures of HNS are published: those issues time whole syncs or read
 * log timestamps, which is what this histogram is for.
 */
export const HNS_CALL_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/** Each family's help text, type, label names (fixed: prom-client checks every sample's labels against them) and, for a histogram, buckets. */
const FAMILIES: Record<string, [string, Kind, string[]?, number[]?]> = {
  [METRIC.peers]: ['Peer leases currently accepted and desired in the dataplane.', 'gauge'],
  [METRIC.leasesRejected]: ['Peer leases rejected by validation, by reason.', 'counter', ['reason']],
  [METRIC.leasesIPv6Rejected]: ['Dual-stack peer leases whose IPv6 half alone was rejected by validation (their IPv4 route is kept), by reason.', 'counter', ['reason']],
  [METRIC.dataplaneCalls]: ['Dataplane (HNS, route table, host) calls, by operation.', 'counter', ['op']],
  [METRIC.dataplaneErrors]: ['Dataplane calls that failed, by operation.', 'counter', ['op']],
  [METRIC.lastApplySuccess]: ['Unix time of the last reconcile pass that left the dataplane equal to the desired set.', 'gauge'],
  [METRIC.applyPasses]: ['Reconcile passes, by result.', 'counter', ['result']],
  [METRIC.apiReconnects]: ['Times a list-watch re-listed or reconnected its watch, by the resource it lists (nodes; subnets on etcd).', 'counter', ['resource']],
  [METRIC.kubeObjectsSkipped]: [
    'Kubernetes objects (or watch lines) skipped because they could not be read, by resource and where they came from.',
    'counter',
    ['resource', 'where'],
  ],
  [METRIC.subnetConflicts]: ['Peers found claiming a subnet another peer holds or claims as well.', 'counter'],
  [METRIC.buildInfo]: ['Always 1; the version label names the running flanneld-windows.', 'gauge', ['version']],
  [METRIC.eventToDataplane]: ['Seconds from a change of the desired peer set (a lease event) to the end of the reconcile pass that applied it.', 'histogram'],
  [METRIC.passDuration]: ['Seconds one reconcile pass took (read, plan, write), by result.', 'histogram', ['result']],
  [METRIC.refusedItems]: ['Peer routes or policies the dataplane currently refuses (retried with backoff), by driver.', 'gauge', ['driver']],
  [METRIC.refusals]: ['Writes of one route or policy the dataplane refused, by driver.', 'counter', ['driver']],
  [METRIC.networkRebuilds]: ['Times the HNS network was found missing and rebuilt, by result.', 'counter', ['result']],
  [METRIC.hnsRestarts]: ['Times the HNS service was seen running in a new process (it restarted and dropped what it had not persisted).', 'counter'],
  [METRIC.driftRepairs]: ['Objects of the agent found lost or changed behind its back and re-applied, by kind.', 'counter', ['kind']],
  [METRIC.simulatedCalls]: ['Simulated dataplane only: Windows calls by name (the `op` of a state file `faults` rule).', 'counter', ['op']],
  [METRIC.nodeEventsWritten]: ['Events on the own Node the API server accepted (created or patched).', 'counter'],
  [METRIC.nodeEventsDropped]: ['Events on the own Node not written, by reason (rate-limit, queue-full, write-failed).', 'counter', ['reason']],
  [METRIC.nodeEventsQueued]: ['Events on the own Node waiting to be written (at most 1000).', 'gauge'],
  [METRIC.nodeEventCacheEntries]: ["Entries of the Event recorder's caches, by cache (aggregate-messages, dedup, names).", 'gauge', ['cache']],
  [METRIC.watchBytesScanned]: ['Bytes of Kubernetes watch streams searched for line ends (each byte once: the bytes received).', 'counter'],
  [METRIC.hnsCallDuration]: [
    'Seconds one HNS (HNSCall, Hcn*) or iphlpapi route call took, failed and timed-out calls included, by Windows function.',
    'histogram',
    ['op'],
    HNS_CALL_BUCKETS,
  ],
  [METRIC.hnsCallErrors]: ['HNS and iphlpapi route calls that failed, by Windows function and HRESULT (0x%08X; timeout, unknown, overflow).', 'counter', ['op', 'hresult']],
  [METRIC.ready]: ['1 while /readyz answers 200 (the node can serve pods), else 0; read at each scrape.', 'gauge'],
  [METRIC.peersProgrammed]: [
    'Accepted peers the dataplane holds completely (their routes or policies all written); read at each scrape, counted again only after a peer, an item or a pass changed.',
    'gauge',
  ],
  [METRIC.peersRejected]: ['Peers whose current lease is rejected (see flannel_leases_rejected_total for why); read at each scrape.', 'gauge'],
  [METRIC.netpolPolicies]: ['--network-policy: NetworkPolicies the controller knows, cluster-wide.', 'gauge'],
  [METRIC.netpolRules]: ["--network-policy: ACL rules wanted on this node's pod endpoints.", 'gauge'],
  [METRIC.netpolSets]: ["--network-policy: SetPolicy IP sets wanted on the agent's network (HNS 13.0 and later).", 'gauge'],
  [METRIC.netpolWrites]: ['--network-policy: HNS writes (one HcnModifyEndpoint or HcnModifyNetwork each) by what they did.', 'counter', ['op']],
  [METRIC.netpolRefused]: ['--network-policy: NetworkPolicies refused (they isolate and allow nothing), cluster-wide; see the Warning Events.', 'gauge'],
  [METRIC.netpolDelay]: ["--network-policy: seconds from a local pod's address being seen to its endpoint holding all its rules.", 'histogram'],
};

/** The operations `metered` counts: HnsClient's (hns.*) and the route table's (routes.*). */
export const DATAPLANE_OPS: readonly string[] = [
  ...[
    'version',
    'listNetworksV1',
    'getNetworkByNameV1',
    'getNetworkV1',
    'createNetworkV1',
    'deleteNetworkV1',
    'listEndpointsV1',
    'getEndpointByNameV1',
    'createEndpointV1',
    'deleteEndpointV1',
    'attachEndpointToHost',
    'getNetworkByName',
    'getNetwork',
    'hasNetwork',
    'listNetworks',
    'createNetwork',
    'deleteNetwork',
    'addNetworkPolicies',
    'removeNetworkPolicies',
    'getSetPolicies',
    'addSetPolicies',
    'updateSetPolicies',
    'removeSetPolicies',
    'getEndpointAcls',
    'addEndpointAcls',
    'removeEndpointAcls',
    'listEndpoints',
    'getEndpoint',
    'createEndpoint',
    'deleteEndpoint',
    'listLoadBalancerIds',
    'listLoadBalancers',
  ].map((op) => `hns.${op}`),
  'routes.list',
  'routes.add',
  'routes.remove',
];

/**
 * Label values each labelled family of this module is pre-registered with, at zero. A family whose
 * values another module owns is declared by that module (`declare`): the lease reject reasons by the
 * peers' problems ledger (src/peers/problems.ts), so this module imports no layer above it. The HNS call
 * families are not: a series appears with the first call of its op, within seconds of the start (a node
 * makes a third to half of the 26 ops the agent has; zeroed, all 26 would add 490 lines to /metrics' 350).
 */
const LABEL_VALUES: Record<string, Record<string, readonly string[]>> = {
  [METRIC.dataplaneCalls]: { op: DATAPLANE_OPS },
  [METRIC.dataplaneErrors]: { op: DATAPLANE_OPS },
  [METRIC.applyPasses]: { result: ['ok', 'error'] },
  [METRIC.passDuration]: { result: ['ok', 'error'] },
  [METRIC.networkRebuilds]: { result: ['ok', 'error'] },
  [METRIC.driftRepairs]: { kind: ['network', 'host-endpoint', 'source-vip', 'route', 'policy'] },
  [METRIC.netpolWrites]: { op: ['add-rules', 'remove-rules', 'add-sets', 'update-sets', 'remove-sets'] },
};

/** prom-client default metrics that are gauges named like counters (dropped: promtool fails them). */
export const NON_COUNTER_TOTALS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/** Histogram buckets, in seconds: from one fast pass (ms) to a slow HNS start (a minute). */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * How a failed HNS or iphlpapi call failed: its HRESULT (an iphlpapi Win32 status as HRESULT_FROM_WIN32),
 * null when it carried none (invalid JSON, a v1 envelope without ErrorCode), or 'timeout'
 * (--hns-call-timeout).
 */
export type CallFailure = number | null | 'timeout';

/** Distinct HRESULTs that get a label of their own; later ones are counted as `overflow`. */
export const MAX_HRESULT_LABELS = 32;

/** The HRESULT an error of a Windows call carries, if any: HnsError's, or a RouteError's Win32 status as HRESULT_FROM_WIN32 (winerror.h). */
export function callFailure(err: unknown): number | null {
  if (err instanceof HnsError) return err.hresult ?? null;
  if (err instanceof RouteError && err.status !== undefined) return err.status <= 0 ? err.status : ((err.status & 0xffff) | 0x80070000) >>> 0;
  return null;
}

type Family = Counter | Gauge | Histogram;

export interface MetricsOptions {
  /** Also expose prom-client's process and Node.js metrics (CPU, RSS, heap, event loop lag, GC). */
  process?: boolean;
}

export class Metrics {
  readonly registry = new Registry();
  private readonly families = new Map<string, Family>();
  /** The two families every HNS and route call touches, held to skip the lookup. */
  private readonly callDuration: Histogram;
  private readonly callErrors: Counter;
  /** The hresult label of each HRESULT seen, at most MAX_HRESULT_LABELS of them. */
  private readonly hresultLabels = new Map<number, string>();
  private readonly beforeRender: (() => void)[] = [];

  constructor(opts: MetricsOptions = {}) {
    for (const [name, [help, kind, labelNames = [], buckets = BUCKETS]] of Object.entries(FAMILIES)) {
      const config = { name, help, labelNames, registers: [this.registry] };
      this.families.set(name, kind === 'counter' ? new Counter(config) : kind === 'histogram' ? new Histogram({ ...config, buckets }) : new Gauge(config));
    }
    this.callDuration = this.families.get(METRIC.hnsCallDuration) as Histogram;
    this.callErrors = this.families.get(METRIC.hnsCallErrors) as Counter;
    for (const [name, byLabel] of Object.entries(LABEL_VALUES)) {
      for (const [label, values] of Object.entries(byLabel)) this.declare(name, label, values);
    }
    this.set(METRIC.buildInfo, 1, { version: VERSION });
    if (opts.process) {
      collectDefaultMetrics({ register: this.registry });
      // prom-client's nodejs_active_{handles,requests,resources}_total are gauges with a counter's suffix,
      // which `promtool check metrics` rejects; they only sum the per-type nodejs_active_* gauges, which stay.
      for (const name of NON_COUNTER_TOTALS) this.registry.removeSingleMetric(name);
    }
  }

  /**
   * Pre-register family `name` with one series per value of its label `label`, at zero (idempotent); `fixed`
   * gives its other labels one value each (a list-watch's `resource`).
   */
  declare(name: string, label: string, values: readonly string[], fixed: Labels = {}): void {
    const family = this.family(name);
    for (const l of [label, ...Object.keys(fixed)]) {
      if (!FAMILIES[name][2]?.includes(l)) throw new Error(`internal: metric ${name} has no label ${l} (src/basics/metrics.ts FAMILIES)`);
    }
    for (const v of values) {
      if (family instanceof Histogram) family.zero({ ...fixed, [label]: v });
      else family.inc({ ...fixed, [label]: v }, 0);
    }
  }

  /** The family `name`; every family is declared in FAMILIES, with its type and label names. */
  private family(name: string): Family {
    const family = this.families.get(name);
    if (!family) throw new Error(`internal: metric ${name} is not declared (src/basics/metrics.ts FAMILIES)`);
    return family;
  }

  /** Add `by` to a counter (or a gauge). */
  inc(name: string, labels: Labels = {}, by = 1): void {
    const family = this.family(name);
    if (family instanceof Histogram) throw new Error(`internal: metric ${name} is a histogram (observe it)`);
    family.inc(labels, by);
  }

  /** Set a gauge. (No counter is set: a counter's owner increments it.) */
  set(name: string, value: number, labels: Labels = {}): void {
    const family = this.family(name);
    if (!(family instanceof Gauge)) throw new Error(`internal: metric ${name} is not a gauge (only gauges are set)`);
    family.set(labels, value);
  }

  /** Record one observation (seconds) in a histogram. */
  observe(name: string, value: number, labels: Labels = {}): void {
    const family = this.family(name);
    if (!(family instanceof Histogram)) throw new Error(`internal: metric ${name} is not a histogram`);
    family.observe(labels, value);
  }

  /**
   * One HNS or iphlpapi call of `op` (its Windows function: `HcnModifyNetwork`, `HNSCall GET /networks/{id}`,
   * `CreateIpForwardEntry2`; a fixed set) that took `seconds`; `failure` when it failed.
   */
  observeCall(op: string, seconds: number, failure?: CallFailure): void {
    this.callDuration.observe({ op }, seconds > 0 ? seconds : 0);
    if (failure !== undefined) this.countCallError(op, failure);
  }

  /** A failed call of `op` counted, not timed (an HNS v1 envelope that says Success:false: the call itself was timed). */
  countCallError(op: string, failure: CallFailure): void {
    this.callErrors.inc({ op, hresult: this.hresultLabel(failure) });
  }

  /** `0x%08X` for the first MAX_HRESULT_LABELS HRESULTs seen, `overflow` after; `unknown` for none; `timeout`. */
  private hresultLabel(failure: CallFailure): string {
    if (failure === null) return 'unknown';
    if (failure === 'timeout') return failure;
    const hr = failure >>> 0;
    let label = this.hresultLabels.get(hr);
    if (label === undefined) {
      if (this.hresultLabels.size >= MAX_HRESULT_LABELS) return 'overflow';
      label = hex(hr);
      this.hresultLabels.set(hr, label);
    }
    return label;
  }

  /** Run `fn` before each render: it sets the gauges that are read at scrape time. */
  onRender(fn: () => void): void {
    this.beforeRender.push(fn);
  }

  /** The Prometheus text exposition of every family. */
  render(): Promise<string> {
    for (const fn of this.beforeRender) fn();
    return this.registry.metrics();
  }
}

/** Run one dataplane call, counting it (and its failure) under `op`. */
export async function metered<T>(metrics: Metrics | undefined, op: string, fn: () => Promise<T>): Promise<T> {
  metrics?.inc(METRIC.dataplaneCalls, { op });
  try {
    return await fn();
  } catch (err) {
    metrics?.inc(METRIC.dataplaneErrors, { op });
    throw err;
  }
}

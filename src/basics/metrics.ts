// The agent's Prometheus metrics, a basic facility every layer may use, exposed by prom-client (the ecosystem's client: text format, histograms,
// process metrics). The agent's components receive the one `Metrics` instance and bump the names below
// through inc/set/observe; /metrics renders its registry, the one place values are read (a reader that
// wants one value asks the registry, e.g. `registry.getSingleMetric(name).get()`).
// Every family in FAMILIES exists from the start with its label names, an unlabelled one at zero, and
// every labelled series whose label values are known (LABEL_VALUES) at zero, so a rate() or an alert on
// it works before the first event.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { VERSION } from './version.js';

export type Labels = Record<string, string>;

export const METRIC = {
  peers: 'flannel_peers',
  leasesRejected: 'flannel_leases_rejected_total',
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
} as const;

type Kind = 'counter' | 'gauge' | 'histogram';

/** Each family's help text, type and label names (fixed: prom-client checks every sample's labels against them). */
const FAMILIES: Record<string, [string, Kind, string[]?]> = {
  [METRIC.peers]: ['Peer leases currently accepted and desired in the dataplane.', 'gauge'],
  [METRIC.leasesRejected]: ['Peer leases rejected by validation, by reason.', 'counter', ['reason']],
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
  ].map((op) => `hns.${op}`),
  'routes.list',
  'routes.add',
  'routes.remove',
];

/**
 * Label values each labelled family of this module is pre-registered with, at zero. A family whose
 * values another module owns is declared by that module (`declare`): the lease reject reasons by the
 * peers' problems ledger (src/peers/problems.ts), so this module imports no layer above it.
 */
const LABEL_VALUES: Record<string, Record<string, readonly string[]>> = {
  [METRIC.dataplaneCalls]: { op: DATAPLANE_OPS },
  [METRIC.dataplaneErrors]: { op: DATAPLANE_OPS },
  [METRIC.applyPasses]: { result: ['ok', 'error'] },
  [METRIC.passDuration]: { result: ['ok', 'error'] },
  [METRIC.networkRebuilds]: { result: ['ok', 'error'] },
  [METRIC.driftRepairs]: { kind: ['network', 'host-endpoint', 'source-vip', 'route', 'policy'] },
};

/** prom-client default metrics that are gauges named like counters (dropped: promtool fails them). */
export const NON_COUNTER_TOTALS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/** Histogram buckets, in seconds: from one fast pass (ms) to a slow HNS start (a minute). */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

type Family = Counter | Gauge | Histogram;

export interface MetricsOptions {
  /** Also expose prom-client's process and Node.js metrics (CPU, RSS, heap, event loop lag, GC). */
  process?: boolean;
}

export class Metrics {
  readonly registry = new Registry();
  private readonly families = new Map<string, Family>();

  constructor(opts: MetricsOptions = {}) {
    for (const [name, [help, kind, labelNames = []]] of Object.entries(FAMILIES)) {
      const config = { name, help, labelNames, registers: [this.registry] };
      this.families.set(name, kind === 'counter' ? new Counter(config) : kind === 'histogram' ? new Histogram({ ...config, buckets: BUCKETS }) : new Gauge(config));
    }
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

  /** The Prometheus text exposition of every family. */
  render(): Promise<string> {
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

// The agent's Prometheus metrics, a basic facility every layer may use, exposed by prom-client (the ecosystem's client: text format, histograms,
// process metrics). The agent's components receive the one `Metrics` instance and bump the names below
// through inc/set/observe; /metrics renders its registry. A small mirror of the counter and gauge values
// answers get/total synchronously (prom-client reads are async), for the demo and the tests.
// Every family in HELP exists from the start, and every labelled series whose label values are known
// (LABEL_VALUES) at zero, so a rate() or an alert on it works before the first event.
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
  nodesSkipped: 'flannel_nodes_skipped_total',
  subnetConflicts: 'flannel_subnet_conflicts_total',
  buildInfo: 'flannel_build_info',
  eventToDataplane: 'flannel_event_to_dataplane_seconds',
  passDuration: 'flannel_apply_pass_duration_seconds',
  refusedItems: 'flannel_dataplane_refused_items',
  refusals: 'flannel_dataplane_refusals_total',
  networkRebuilds: 'flannel_network_rebuilds_total',
  simulatedCalls: 'flannel_simulated_dataplane_calls_total',
} as const;

type Kind = 'counter' | 'gauge' | 'histogram';

const HELP: Record<string, [string, Kind]> = {
  [METRIC.peers]: ['Peer leases currently accepted and desired in the dataplane.', 'gauge'],
  [METRIC.leasesRejected]: ['Peer leases rejected by validation, by reason.', 'counter'],
  [METRIC.dataplaneCalls]: ['Dataplane (HNS, route table, host) calls, by operation.', 'counter'],
  [METRIC.dataplaneErrors]: ['Dataplane calls that failed, by operation.', 'counter'],
  [METRIC.lastApplySuccess]: ['Unix time of the last reconcile pass that left the dataplane equal to the desired set.', 'gauge'],
  [METRIC.applyPasses]: ['Reconcile passes, by result.', 'counter'],
  [METRIC.apiReconnects]: ['Times the subnet manager re-listed or reconnected its watch.', 'counter'],
  [METRIC.nodesSkipped]: ['Node objects (or watch lines) skipped because they could not be read, by where they came from.', 'counter'],
  [METRIC.subnetConflicts]: ['Peers found claiming a subnet another peer holds or claims as well.', 'counter'],
  [METRIC.buildInfo]: ['Always 1; the version label names the running flanneld-windows.', 'gauge'],
  [METRIC.eventToDataplane]: ['Seconds from a change of the desired peer set (a lease event) to the end of the reconcile pass that applied it.', 'histogram'],
  [METRIC.passDuration]: ['Seconds one reconcile pass took (read, plan, write), by result.', 'histogram'],
  [METRIC.refusedItems]: ['Peer routes or policies the dataplane currently refuses (retried with backoff), by driver.', 'gauge'],
  [METRIC.refusals]: ['Writes of one route or policy the dataplane refused, by driver.', 'counter'],
  [METRIC.networkRebuilds]: ['Times the HNS network was found missing and rebuilt, by result.', 'counter'],
  [METRIC.simulatedCalls]: ['Simulated dataplane only: Windows calls by name (the `op` of a state file `faults` rule).', 'counter'],
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
 * peer store's rejection log (src/subnet/rejections.ts), so this module imports no layer above it.
 */
const LABEL_VALUES: Record<string, Record<string, readonly string[]>> = {
  [METRIC.dataplaneCalls]: { op: DATAPLANE_OPS },
  [METRIC.dataplaneErrors]: { op: DATAPLANE_OPS },
  [METRIC.applyPasses]: { result: ['ok', 'error'] },
  [METRIC.passDuration]: { result: ['ok', 'error'] },
};

/** prom-client default metrics that are gauges named like counters (dropped: promtool fails them). */
export const NON_COUNTER_TOTALS = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/** Histogram buckets, in seconds: from one fast pass (ms) to a slow HNS start (a minute). */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

type Family = Counter | Gauge | Histogram;

function labelKey(labels: Labels): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}=${JSON.stringify(labels[k])}`)
    .join(',');
}

export interface MetricsOptions {
  /** Also expose prom-client's process and Node.js metrics (CPU, RSS, heap, event loop lag, GC). */
  process?: boolean;
}

export class Metrics {
  readonly registry = new Registry();
  private readonly families = new Map<string, { metric: Family; labelNames: string[] }>();
  /** Counter and gauge values by name and label set, for get/total. */
  private readonly values = new Map<string, Map<string, { labels: Labels; value: number }>>();

  constructor(opts: MetricsOptions = {}) {
    for (const [name, byLabel] of Object.entries(LABEL_VALUES)) {
      const [label, values] = Object.entries(byLabel)[0];
      this.declare(name, label, values);
    }
    // Every other declared family from the start too (an unlabelled one at zero; labels may come later).
    for (const name of Object.keys(HELP)) this.family(name, []);
    this.set(METRIC.buildInfo, 1, { version: VERSION });
    if (opts.process) {
      collectDefaultMetrics({ register: this.registry });
      // prom-client's nodejs_active_{handles,requests,resources}_total are gauges with a counter's suffix,
      // which `promtool check metrics` rejects; they only sum the per-type nodejs_active_* gauges, which stay.
      for (const name of NON_COUNTER_TOTALS) this.registry.removeSingleMetric(name);
    }
  }

  /** Pre-register family `name` with one series per value of `label`, at zero (idempotent). */
  declare(name: string, label: string, values: readonly string[]): void {
    const family = this.family(name, [label]);
    for (const v of values) {
      if (family instanceof Histogram) family.zero({ [label]: v });
      else if (family instanceof Counter) this.inc(name, { [label]: v }, 0);
      else this.set(name, 0, { [label]: v });
    }
  }

  /** The family `name`, created on first use with these label names (recreated, values kept, if more appear). */
  private family(name: string, labelNames: string[]): Family {
    const cur = this.families.get(name);
    if (cur && labelNames.every((l) => cur.labelNames.includes(l))) return cur.metric;
    const names = [...new Set([...(cur?.labelNames ?? []), ...labelNames])];
    if (cur) this.registry.removeSingleMetric(name);
    const [help, kind] = HELP[name] ?? [name, 'gauge'];
    const config = { name, help, labelNames: names, registers: [this.registry] };
    const metric = kind === 'counter' ? new Counter(config) : kind === 'histogram' ? new Histogram({ ...config, buckets: BUCKETS }) : new Gauge(config);
    this.families.set(name, { metric, labelNames: names });
    if (cur && !(metric instanceof Histogram)) {
      for (const { labels, value } of this.values.get(name)?.values() ?? []) metric.inc(labels, value);
    }
    return metric;
  }

  private mirror(name: string, labels: Labels): { labels: Labels; value: number } {
    let m = this.values.get(name);
    if (!m) this.values.set(name, (m = new Map<string, { labels: Labels; value: number }>()));
    const key = labelKey(labels);
    let v = m.get(key);
    if (!v) m.set(key, (v = { labels, value: 0 }));
    return v;
  }

  inc(name: string, labels: Labels = {}, by = 1): void {
    const family = this.family(name, Object.keys(labels)) as Counter | Gauge;
    family.inc(labels, by);
    this.mirror(name, labels).value += by;
  }

  set(name: string, value: number, labels: Labels = {}): void {
    const family = this.family(name, Object.keys(labels));
    if (family instanceof Gauge) family.set(labels, value);
    else if (family instanceof Counter && value > this.get(name, labels)) family.inc(labels, value - this.get(name, labels));
    this.mirror(name, labels).value = value;
  }

  /** Record one observation (seconds) in a histogram. */
  observe(name: string, value: number, labels: Labels = {}): void {
    const family = this.family(name, Object.keys(labels));
    if (family instanceof Histogram) family.observe(labels, value);
  }

  get(name: string, labels: Labels = {}): number {
    return this.values.get(name)?.get(labelKey(labels))?.value ?? 0;
  }

  /** Sum over all label sets of one family. */
  total(name: string): number {
    let sum = 0;
    for (const v of this.values.get(name)?.values() ?? []) sum += v.value;
    return sum;
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

// A small Prometheus text-format registry: counters and gauges with optional labels. The agent's
// components receive the one `Metrics` instance and bump the names below; /metrics renders it.

export type Labels = Record<string, string>;

interface Family {
  help: string;
  type: 'counter' | 'gauge';
  values: Map<string, { labels: Labels; value: number }>;
}

export const METRIC = {
  peers: 'flannel_peers',
  leasesRejected: 'flannel_leases_rejected_total',
  dataplaneCalls: 'flannel_dataplane_calls_total',
  dataplaneErrors: 'flannel_dataplane_errors_total',
  lastApplySuccess: 'flannel_last_successful_apply_timestamp_seconds',
  applyPasses: 'flannel_apply_passes_total',
  apiReconnects: 'flannel_api_reconnects_total',
  refusedItems: 'flannel_dataplane_refused_items',
  refusals: 'flannel_dataplane_refusals_total',
  networkRebuilds: 'flannel_network_rebuilds_total',
  simulatedCalls: 'flannel_simulated_dataplane_calls_total',
} as const;

const HELP: Record<string, [string, 'counter' | 'gauge']> = {
  [METRIC.peers]: ['Peer leases currently accepted and desired in the dataplane.', 'gauge'],
  [METRIC.leasesRejected]: ['Peer leases rejected by validation, by reason.', 'counter'],
  [METRIC.dataplaneCalls]: ['Dataplane (HNS, route table, host) calls, by operation.', 'counter'],
  [METRIC.dataplaneErrors]: ['Dataplane calls that failed, by operation.', 'counter'],
  [METRIC.lastApplySuccess]: ['Unix time of the last reconcile pass that left the dataplane equal to the desired set.', 'gauge'],
  [METRIC.applyPasses]: ['Reconcile passes, by result.', 'counter'],
  [METRIC.apiReconnects]: ['Times the subnet manager re-listed or reconnected its watch.', 'counter'],
  [METRIC.refusedItems]: ['Peer routes or policies the dataplane currently refuses (retried with backoff), by driver.', 'gauge'],
  [METRIC.refusals]: ['Writes of one route or policy the dataplane refused, by driver.', 'counter'],
  [METRIC.networkRebuilds]: ['Times the HNS network was found missing and rebuilt, by result.', 'counter'],
  [METRIC.simulatedCalls]: ['Simulated dataplane only: Windows calls by name (the `op` of a state file `faults` rule).', 'counter'],
};

function labelKey(labels: Labels): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}="${labels[k]!.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')}"`)
    .join(',');
}

export class Metrics {
  private readonly families = new Map<string, Family>();

  private family(name: string): Family {
    let f = this.families.get(name);
    if (!f) {
      const [help, type] = HELP[name] ?? ['', 'gauge'];
      f = { help, type, values: new Map() };
      this.families.set(name, f);
    }
    return f;
  }

  inc(name: string, labels: Labels = {}, by = 1): void {
    const f = this.family(name);
    const key = labelKey(labels);
    const cur = f.values.get(key);
    if (cur) cur.value += by;
    else f.values.set(key, { labels, value: by });
  }

  set(name: string, value: number, labels: Labels = {}): void {
    this.family(name).values.set(labelKey(labels), { labels, value });
  }

  get(name: string, labels: Labels = {}): number {
    return this.families.get(name)?.values.get(labelKey(labels))?.value ?? 0;
  }

  /** Sum over all label sets of one family. */
  total(name: string): number {
    let sum = 0;
    for (const v of this.families.get(name)?.values.values() ?? []) sum += v.value;
    return sum;
  }

  render(): string {
    const out: string[] = [];
    for (const [name, f] of this.families) {
      out.push(`# HELP ${name} ${f.help}`, `# TYPE ${name} ${f.type}`);
      for (const { labels, value } of f.values.values()) {
        const l = labelKey(labels);
        out.push(`${name}${l ? `{${l}}` : ''} ${value}`);
      }
    }
    return out.join('\n') + '\n';
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

// What a test waits on before it asserts that nothing changed: a signal the agent itself emits that
// proves it looked (a reconcile pass counted in /metrics, a peer count, a log line), never a wall-clock
// sleep. The values are read from the Prometheus text exposition, the same text /metrics serves, so a
// test reads an in-process agent (`metrics.render()`) and a built-CLI agent (GET /metrics) alike.
import { waitFor, type WaitOptions } from './wait-for.js';

/** The reconcile pass counter, by result (src/metrics.ts). */
export const APPLY_PASSES = 'flannel_apply_passes_total';
/** Every reconcile pass that ended, early ones (before the first complete list) too: the pass-duration histogram's count. */
export const PASSES_ENDED = 'flannel_apply_pass_duration_seconds_count';
/** Peer leases accepted and desired in the dataplane (a gauge). */
export const PEERS = 'flannel_peers';
/** Peer leases rejected by validation, by reason. */
export const LEASES_REJECTED = 'flannel_leases_rejected_total';

/**
 * The value of metric `name` in a Prometheus text exposition, summed over every label set that carries
 * `labels` (all of them when none are given); 0 when the family has no sample.
 */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!m || m[1] !== name) continue;
    const set = m[2] ?? '';
    if (Object.entries(labels).every(([k, v]) => set.includes(`${k}=${JSON.stringify(v)}`))) sum += Number(m[3]);
  }
  return sum;
}

/** Something that can read its agent's /metrics text. */
export type MetricsSource = () => Promise<string>;

/** Wait until metric `name` has grown by at least `by` past its value now (e.g. two more reconcile passes). */
export async function waitForIncrease(source: MetricsSource, name: string, by: number, what: string, opts: number | WaitOptions = {}): Promise<number> {
  const start = metricValue(await source(), name);
  return waitFor(
    async () => {
      const now = metricValue(await source(), name);
      return now >= start + by ? now : undefined;
    },
    `${what} (${name} +${by})`,
    opts,
  );
}

/** The kube subnet manager's line for a failed Node list, before its pause (src/subnet/kube/node-list-watch.ts). */
export const LIST_FAILED = 'listing nodes failed, backing off';

/** Wait until metric `name` (summed over its label sets) equals `value`. */
export async function waitForMetric(source: MetricsSource, name: string, value: number, what: string, opts: number | WaitOptions = {}): Promise<void> {
  await waitFor(async () => metricValue(await source(), name) === value, `${what} (${name} == ${value})`, opts);
}

// What a test waits on before it asserts that nothing changed: a signal the agent itself emits that
// proves it looked (a reconcile pass counted in /metrics, a peer count, a log line), never a wall-clock
// sleep. The values are read from the Prometheus text exposition, the same text /metrics serves, so a
// test reads an in-process agent (`metrics.render()`) and a built-CLI agent (GET /metrics) alike.
import { waitFor, type WaitOptions } from './wait-for.js';

/** The reconcile pass counter, by result (src/basics/metrics.ts). */
export const APPLY_PASSES = 'flannel_apply_passes_total';
/** Every reconcile pass that ended, early ones (before the first complete list) too: the pass-duration histogram's count. */
export const PASSES_ENDED = 'flannel_apply_pass_duration_seconds_count';
/** Peer leases accepted and desired in the dataplane (a gauge). */
export const PEERS = 'flannel_peers';
/** Peer leases rejected by validation, by reason. */
export const LEASES_REJECTED = 'flannel_leases_rejected_total';

/** One sample line of a Prometheus text exposition: `name{label="value",...} value`. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (label values unescaped: `\\`, `\"`, `\n`). */
function samples(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[^"}]|"(?:[^"\\]|\\.)*")*)\})? (\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      labels[l[1]] = l[2].replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

/**
 * The value of metric `name` in a Prometheus text exposition, summed over every label set that carries
 * `labels` (all of them when none are given); 0 when the family has no sample.
 */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const s of samples(text)) {
    if (s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) sum += s.value;
  }
  return sum;
}

/** Something whose metrics a test reads: the agent's `Metrics` (src/basics/metrics.ts), through its /metrics text. */
export interface MetricsRenderer {
  render(): Promise<string>;
}

/**
 * The value of the one series of `name` with exactly the label set `labels` (none: the unlabelled
 * series), read from `metrics.render()`; 0 when there is no such sample.
 */
export async function readMetric(metrics: MetricsRenderer, name: string, labels: Record<string, string> = {}): Promise<number> {
  const want = Object.entries(labels);
  const s = samples(await metrics.render()).find((x) => x.name === name && Object.keys(x.labels).length === want.length && want.every(([k, v]) => x.labels[k] === v));
  return s?.value ?? 0;
}

/** The sum of `name` over all its label sets, read from `metrics.render()`. */
export async function readMetricTotal(metrics: MetricsRenderer, name: string): Promise<number> {
  return metricValue(await metrics.render(), name);
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

/** The kube subnet manager's line for a failed Node list, before its pause (src/kube/list-watch.ts, the Node list-watch's). */
export const LIST_FAILED = 'listing nodes failed, backing off';

/** Wait until metric `name` (summed over its label sets) equals `value`. */
export async function waitForMetric(source: MetricsSource, name: string, value: number, what: string, opts: number | WaitOptions = {}): Promise<void> {
  await waitFor(async () => metricValue(await source(), name) === value, `${what} (${name} == ${value})`, opts);
}

/**
 * Wait until `n` Events recorded on the own Node are settled: written, or dropped for a reason (the
 * recorder's counters, src/kube/event-recorder.ts; a rate-limited one is dropped as it is recorded).
 */
export async function eventsSettled(metrics: MetricsRenderer, n: number): Promise<void> {
  await waitFor(
    async () => (await readMetric(metrics, 'flannel_node_events_written_total')) + (await readMetricTotal(metrics, 'flannel_node_events_dropped_total')) >= n,
    `${n} Events written or dropped`,
  );
}

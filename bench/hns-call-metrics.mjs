// What measuring one HNS call costs (flannel_hns_call_duration_seconds, src/hns/timed.ts): N calls through
// the timed seam over a transport that answers at once, without metrics (the seam as it was: the timer and
// one clock read) and with them (one more clock read and the histogram observation), alternated in rounds;
// then the observation alone (Metrics.observeCall) and a failed call's count (countCallError). CPU time per
// call, the median round of each. `node bench/hns-call-metrics.mjs [N] [ROUNDS]` after `npm run build`;
// docs/performance.md ("The HNS call metrics' cost") has the figures.
import { systemClock } from '../dist/basics/clock.js';
import { Metrics } from '../dist/basics/metrics.js';
import { withCallTimeout } from '../dist/hns/timed.js';

const N = Number(process.argv[2] ?? 200_000);
const ROUNDS = Number(process.argv[3] ?? 7);

/** Answers every call at once: what is left is the seam's own cost. */
const instant = { enumerateNetworks: () => Promise.resolve('[]'), modifyNetwork: () => Promise.resolve() };
const handle = { kind: 'network', id: 'N' };

/** Microseconds of CPU (user + system) per iteration of `fn`, run `n` times. */
async function cpuPerCall(n, fn) {
  const t = process.cpuUsage();
  for (let i = 0; i < n; i++) await fn(i);
  const d = process.cpuUsage(t);
  return (d.user + d.system) / n;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const metrics = new Metrics({ process: true });
const bare = withCallTimeout(instant, { timeoutMs: 120_000, clock: systemClock });
const measured = withCallTimeout(instant, { timeoutMs: 120_000, clock: systemClock, metrics });
const ops = ['HcnModifyNetwork', 'HcnEnumerateNetworks', 'HcnOpenNetwork', 'HcnCloseNetwork'];

const runs = { bare: [], measured: [], observe: [], countError: [] };
// Warm-up: the same work once, unmeasured (JIT, the histogram's series created).
await cpuPerCall(N, () => bare.modifyNetwork(handle, '{}'));
await cpuPerCall(N, () => measured.modifyNetwork(handle, '{}'));
for (let r = 0; r < ROUNDS; r++) {
  runs.bare.push(await cpuPerCall(N, () => bare.modifyNetwork(handle, '{}')));
  runs.measured.push(await cpuPerCall(N, () => measured.modifyNetwork(handle, '{}')));
  runs.observe.push(await cpuPerCall(N, (i) => metrics.observeCall(ops[i & 3], 0.0042)));
  runs.countError.push(await cpuPerCall(N, (i) => metrics.countCallError(ops[i & 3], 0x803b002f)));
}

const us = (x) => `${x.toFixed(3)} µs`;
const b = median(runs.bare);
const m = median(runs.measured);
console.log(`${N} calls x ${ROUNDS} rounds, CPU per call (median round; all rounds in brackets)`);
console.log(`  timed seam, no metrics:   ${us(b)}  [${runs.bare.map((x) => x.toFixed(3)).join(' ')}]`);
console.log(`  timed seam, measured:     ${us(m)}  [${runs.measured.map((x) => x.toFixed(3)).join(' ')}]`);
console.log(`  measuring adds:           ${us(m - b)} (${((m / b - 1) * 100).toFixed(0)}% of the seam)`);
console.log(`  Metrics.observeCall:      ${us(median(runs.observe))}`);
console.log(`  Metrics.countCallError:   ${us(median(runs.countError))}`);

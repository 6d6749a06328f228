// Runs the benchmarks (`npm run bench`, `npm run bench -- --quick`, `--only=churn,memory`). Each prints a
// table and writes bench/results/<name>.json. Figures are reported, never judged: the exit code is 0
// whatever the numbers are (only a crash of the harness itself fails the run).
/* global performance */
import { log, machine, writeResult } from './lib/common.mjs';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const only = args.find((a) => a.startsWith('--only='))?.slice('--only='.length).split(',');

const ALL = ['cold-start', 'memory', 'churn', 'faulty', 'drift', 'upstream', 'kube-api'];
const selected = only ?? ALL;

const started = performance.now();
const summary = {};
console.log(`# flanneld-windows benchmarks (${quick ? 'quick' : 'full'} mode)`);
console.log(`machine: ${JSON.stringify(machine())}`);
for (const name of ALL.filter((n) => selected.includes(n))) {
  const mod = await import(`./${name}.mjs`);
  const t = performance.now();
  log(`== ${name}`);
  try {
    const data = await mod.run({ quick });
    const seconds = Math.round((performance.now() - t) / 100) / 10;
    const file = writeResult(name, { mode: quick ? 'quick' : 'full', seconds, ...data });
    summary[name] = { seconds, file };
    log(`${name} done in ${seconds}s -> ${file}`);
  } catch (err) {
    summary[name] = { error: err instanceof Error ? err.stack : String(err) };
    log(`${name} FAILED: ${err instanceof Error ? err.stack : err}`);
    process.exitCode = 1;
  }
}
const total = Math.round((performance.now() - started) / 100) / 10;
console.log(`\nbenchmarks finished in ${total}s: ${JSON.stringify(Object.fromEntries(Object.entries(summary).map(([k, v]) => [k, v.seconds ?? 'failed'])))}`);

// What the zero-node process is made of: in a fresh process (--expose-gc, the shipped runtime flags),
// import the modules a mode loads one at a time, in the order the CLI loads them, and record
// process.memoryUsage() after full GCs following each import. Prints one JSON array of rows.
// Usage: node --expose-gc [flags] import-cost.mjs <specifier>...  (dist/ paths are relative to the repo)
// It imports only ./settle.mjs (the bench's common.mjs would load winston).
import { settledMemory } from './settle.mjs';

const settle = () => settledMemory(3, 50);

const rows = [];
let prev = await settle();
rows.push({ module: '(node itself)', ...prev });
for (const spec of process.argv.slice(2)) {
  const url = spec.startsWith('dist/') ? new URL(`../../${spec}`, import.meta.url).href : spec;
  await import(url);
  const now = await settle();
  rows.push({ module: spec, ...now, rssDelta: now.rss - prev.rss, heapDelta: now.heapUsed - prev.heapUsed });
  prev = now;
}
process.stdout.write(JSON.stringify(rows) + '\n');

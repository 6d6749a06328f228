// What the zero-node process is made of: in a fresh process (--expose-gc, the shipped runtime flags),
// import the modules a mode loads one at a time, in the order the CLI loads them, and record
// process.memoryUsage() after full GCs following each import. Prints one JSON array of rows.
// Usage: node --expose-gc [flags] import-cost.mjs <specifier>...  (dist/ paths are relative to the repo)
// It imports nothing of the bench (common.mjs would load winston), only node: modules.

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function settle() {
  for (let i = 0; i < 3; i++) {
    globalThis.gc();
    await sleep(50);
  }
  const m = process.memoryUsage();
  return { rss: m.rss, heapUsed: m.heapUsed, external: m.external };
}

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

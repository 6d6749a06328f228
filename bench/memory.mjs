// Benchmark 2: resident memory. The agent is the real CLI (`node dist/main.js`, kube mode, simulated
// dataplane) in a fresh process per figure, run with the runtime flags flanneld.exe ships with
// (packaging/runtime-flags.mjs), measured after it logs that the dataplane holds every peer, after full
// GCs. Baselines in the same run: client-node's informer holding the same nodes (same flags), the agent
// with Node's default flags, and, per import, what the zero-node process is made of (kube and etcd mode).
// And what peers every agent rejects cost: 3,000 of them (on VNI 1, or with hostile 1 kB annotations),
// above the zero-node agent.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { RUNTIME_EXEC_ARGV } from '../packaging/runtime-flags.mjs';
import { startCliAgent } from './lib/cli-agent.mjs';
import { ApiServerProcess, BENCH_DIR, log, makeTmpDir, mb, r1, table } from './lib/common.mjs';

/** The modules each mode loads, in the order the CLI loads them (see src/main.ts, src/agent.ts). */
export const IMPORT_ORDER = {
  kube: [
    'dist/config/parse.js',
    'dist/basics/log.js',
    'dist/agent.js',
    'dist/simulator/node.js',
    // client-node's KubeConfig, as the build bundles it (packaging/kubeconfig-bundle.mjs)
    'dist/kube/kubeconfig.js',
    'dist/subnet/kube/factory.js',
    'dist/backends/vxlan/backend.js',
  ],
  etcd: ['dist/config/parse.js', 'dist/basics/log.js', 'dist/agent.js', 'dist/simulator/node.js', 'etcd3', 'dist/subnet/etcd/factory.js', 'dist/backends/vxlan/backend.js'],
};

function childJson(args) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`${args.join(' ')} exited with ${code}`));
      resolve(JSON.parse(out.trim().split('\n').pop()));
    });
  });
}

const informer = (kubeconfig, n) => childJson(['--expose-gc', ...RUNTIME_EXEC_ARGV, join(BENCH_DIR, 'lib', 'mem-child.mjs'), 'informer', kubeconfig, String(n)]);

async function agent(kubeconfig, n, execArgv) {
  const a = await startCliAgent({ kubeconfig, peers: n, ...(execArgv ? { execArgv } : {}) });
  try {
    await a.inSync;
    return await a.memory();
  } finally {
    await a.stop();
  }
}

async function withApi(peers, fn, rejected) {
  const api = await new ApiServerProcess().setup(makeTmpDir(), { peers, backend: 'vxlan', rejected });
  try {
    return await fn(api);
  } finally {
    await api.close();
  }
}

/** Median (by RSS) of `repeats` fresh processes. */
async function median(repeats, measure) {
  const runs = [];
  for (let i = 0; i < repeats; i++) runs.push(await measure());
  runs.sort((a, b) => a.rss - b.rss);
  return runs[Math.floor(runs.length / 2)];
}

/** Rejected peers of each kind measured (docs/bounds.md: what a rejected node keeps is bounded in bytes). */
export const REJECTED_PEERS = 3000;
export const REJECTED_KINDS = ['vni1', 'hostile'];

/** The zero-node agent: median of `repeats` fresh processes. */
export function zeroPeers(repeats) {
  return withApi(0, (api) => median(repeats, () => agent(api.kubeconfig, 0)));
}

/** The agent with REJECTED_PEERS peers it rejects (`kind`: nodes.mjs rejectedNode), synced with none accepted. */
export function rejectedPeers(repeats, kind) {
  return withApi(REJECTED_PEERS, (api) => median(repeats, () => agent(api.kubeconfig, 0)), kind);
}

/** Per-import table of one mode: median of `repeats` fresh processes, row by row. */
async function importCost(mode, repeats) {
  const runs = [];
  for (let i = 0; i < repeats; i++) runs.push(await childJson(['--expose-gc', ...RUNTIME_EXEC_ARGV, join(BENCH_DIR, 'lib', 'import-cost.mjs'), ...IMPORT_ORDER[mode]]));
  const med = (vals) => [...vals].sort((a, b) => a - b)[Math.floor(vals.length / 2)];
  return runs[0].map((row, i) => ({
    module: row.module,
    rssMB: mb(med(runs.map((r) => r[i].rss))),
    rssDeltaMB: i === 0 ? null : mb(med(runs.map((r) => r[i].rssDelta))),
    heapDeltaMB: i === 0 ? null : mb(med(runs.map((r) => r[i].heapDelta))),
  }));
}

export async function run({ quick, large }) {
  const sizes = [...(quick ? [5000] : [1000, 5000]), ...large];
  const repeats = quick ? 1 : 3;
  const imports = {};
  for (const mode of ['kube', 'etcd']) {
    log(`memory: per-import cost, ${mode} mode`);
    imports[mode] = await importCost(mode, repeats);
    table(`What the zero-node process loads, ${mode} mode (RSS and heap after each import, after GC; flags ${RUNTIME_EXEC_ARGV.join(' ')})`, imports[mode]);
  }

  log('memory: zero peers');
  let nodeBytes = 0;
  const { zero, zeroDefaultFlags } = await withApi(0, async (api) => {
    nodeBytes = (await api.call('nodeBytes')).bytes;
    return { zero: await median(repeats, () => agent(api.kubeconfig, 0)), zeroDefaultFlags: await median(repeats, () => agent(api.kubeconfig, 0, [])) };
  });
  const rows = [
    { nodes: 0, process: `flanneld (${RUNTIME_EXEC_ARGV.join(' ')})`, rssMB: mb(zero.rss), heapUsedMB: mb(zero.heapUsed), aboveZeroMB: 0 },
    { nodes: 0, process: 'flanneld (Node defaults)', rssMB: mb(zeroDefaultFlags.rss), heapUsedMB: mb(zeroDefaultFlags.heapUsed) },
  ];
  const results = { zero, zeroDefaultFlags, sizes: {} };
  for (const n of sizes) {
    log(`memory: ${n} peers`);
    const r = await withApi(n, async (api) => ({
      agent: await median(repeats, () => agent(api.kubeconfig, n)),
      informer: await median(repeats, () => informer(api.kubeconfig, n)),
    }));
    const ratio = r.agent.rss / r.informer.rss;
    results.sizes[n] = { ...r, aboveZeroMB: mb(r.agent.rss - zero.rss), ratioToInformer: r1(ratio * 100) / 100 };
    rows.push({
      nodes: n,
      process: 'flanneld',
      rssMB: mb(r.agent.rss),
      heapUsedMB: mb(r.agent.heapUsed),
      aboveZeroMB: mb(r.agent.rss - zero.rss),
      pctOfInformerRss: r1(ratio * 100),
    });
    rows.push({ nodes: n, process: 'client-node informer', rssMB: mb(r.informer.rss), heapUsedMB: mb(r.informer.heapUsed) });
  }
  results.rejected = {};
  for (const kind of REJECTED_KINDS) {
    log(`memory: ${REJECTED_PEERS} rejected peers (${kind})`);
    const r = await rejectedPeers(repeats, kind);
    results.rejected[kind] = { agent: r, aboveZeroMB: mb(r.rss - zero.rss) };
    rows.push({ nodes: REJECTED_PEERS, process: `flanneld, every peer rejected (${kind})`, rssMB: mb(r.rss), heapUsedMB: mb(r.heapUsed), aboveZeroMB: mb(r.rss - zero.rss) });
  }
  table(`Memory after sync (fresh process each, median of ${repeats}, after GC; each Node is ${nodeBytes} bytes of JSON)`, rows);
  const at = results.sizes[5000];
  return {
    repeats,
    runtimeFlags: RUNTIME_EXEC_ARGV,
    nodeJsonBytes: nodeBytes,
    imports,
    results,
    summary: {
      rss_zero_nodes_mb: mb(zero.rss),
      rss_5k_mb: mb(at.agent.rss),
      rss_5k_over_informer: Math.round((at.agent.rss / at.informer.rss) * 1000) / 1000,
      rss_3k_rejected_vni1_above_zero_mb: results.rejected.vni1.aboveZeroMB,
      rss_3k_rejected_hostile_above_zero_mb: results.rejected.hostile.aboveZeroMB,
      ...Object.fromEntries(
        large.flatMap((n) => {
          const r = results.sizes[n];
          return [
            [`rss_${n / 1000}k_mb`, mb(r.agent.rss)],
            [`rss_${n / 1000}k_over_informer`, Math.round((r.agent.rss / r.informer.rss) * 1000) / 1000],
          ];
        }),
      ),
    },
    notes: ['The agent is `node dist/main.js` in kube mode; its process also holds the simulated HNS state, which on Windows lives in the OS.'],
  };
}

// Benchmark 2: RSS and heap after sync, each figure from a fresh child process (--expose-gc, GC before
// measuring). Baselines: the agent with zero peers, and client-node's informer holding the same nodes.
// Target at 5k nodes: at most 40 MB above the zero-node RSS and under 60% of the informer's RSS.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ApiServerProcess, BENCH_DIR, log, makeTmpDir, mb, r1, table } from './lib/common.mjs';

function measure(mode, kubeconfig, expect) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--expose-gc', join(BENCH_DIR, 'lib', 'mem-child.mjs'), mode, kubeconfig, String(expect)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`mem-child ${mode} exited with ${code}`));
      resolve(JSON.parse(out.trim().split('\n').pop()));
    });
  });
}

async function withApi(peers, fn) {
  const api = await new ApiServerProcess().setup(makeTmpDir(), { peers, backend: 'vxlan' });
  try {
    return await fn(api);
  } finally {
    await api.close();
  }
}

export async function run({ quick }) {
  const sizes = quick ? [1000, 5000] : [1000, 5000, 10000];
  const repeats = quick ? 1 : 3;
  // Median of `repeats` fresh processes per figure.
  const med = async (mode, kubeconfig, n) => {
    const runs = [];
    for (let i = 0; i < repeats; i++) runs.push(await measure(mode, kubeconfig, n));
    runs.sort((a, b) => a.rss - b.rss);
    return runs[Math.floor(runs.length / 2)];
  };
  log('memory: zero peers');
  let nodeBytes = 0;
  const zero = await withApi(0, async (api) => {
    nodeBytes = (await api.call('nodeBytes')).bytes;
    return med('agent', api.kubeconfig, 0);
  });
  const rows = [{ nodes: 0, mode: 'agent', rssMB: mb(zero.rss), heapUsedMB: mb(zero.heapUsed), aboveZeroMB: 0 }];
  const results = { zero, sizes: {} };
  for (const n of sizes) {
    log(`memory: ${n} peers`);
    const { agent, informer } = await withApi(n, async (api) => ({ agent: await med('agent', api.kubeconfig, n), informer: await med('informer', api.kubeconfig, n) }));
    const above = agent.rss - zero.rss;
    const ratio = agent.rss / informer.rss;
    results.sizes[n] = { agent, informer, aboveZeroMB: mb(above), ratioToInformer: r1(ratio * 100) / 100 };
    rows.push({ nodes: n, mode: 'agent', rssMB: mb(agent.rss), heapUsedMB: mb(agent.heapUsed), aboveZeroMB: mb(above), pctOfInformerRss: r1(ratio * 100) });
    rows.push({ nodes: n, mode: 'client-node informer', rssMB: mb(informer.rss), heapUsedMB: mb(informer.heapUsed) });
  }
  table(`Memory after sync (fresh process each, median of ${repeats}, after GC; each Node is ${nodeBytes} bytes of JSON)`, rows);
  const at5k = results.sizes[5000];
  const target = at5k
    ? {
        nodes: 5000,
        aboveZeroMB: at5k.aboveZeroMB,
        limitAboveZeroMB: 40,
        pctOfInformerRss: r1((at5k.agent.rss / at5k.informer.rss) * 100),
        limitPctOfInformer: 60,
        pass: at5k.agent.rss - zero.rss <= 40 * 1024 * 1024 && at5k.agent.rss / at5k.informer.rss < 0.6,
      }
    : undefined;
  if (target) {
    console.log(
      `target at 5k nodes: +${target.aboveZeroMB} MB over zero-node RSS (limit 40), ${target.pctOfInformerRss}% of the informer's RSS (limit 60%): ${target.pass ? 'PASS' : 'FAIL'}`,
    );
  }
  return {
    repeats,
    nodeJsonBytes: nodeBytes,
    results,
    target,
    notes: ['The agent process includes the simulated dataplane (the HNS and route state that Windows would hold outside the process).'],
  };
}

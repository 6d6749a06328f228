// Where the agent's CPU goes, on 5,000 heavy Nodes (quick mode with --with-20k or --with-50k: the largest) (lib/nodes.mjs) over https: the real CLI
// (`node dist/main.js`, kube mode, simulated dataplane, flanneld.exe's Node flags) profiled by V8's
// sampling profiler (node:inspector, the sampler of `--cpu-prof`; lib/mem-probe.mjs) in two windows:
// - cold start: from before the first module loads until the log says the dataplane holds every peer;
// - status storm: 500 status-only Node updates/s (kubelet heartbeats), after sync;
// - node churn: 10 Node adds and deletes a second, after the storm.
// Before the profiled storm, an unprofiled storm of the same length measures the CLI's CPU share
// against a bare client-node Watch of the same stream in the same window, until both have decoded every
// update (the churn benchmark measures the same ratio with the agent in the bench process). The CLI
// runs as shipped: its 10 s resync pass (a read of 5,000 policies) falls in the window too. Prints the top self-time functions and files;
// the .cpuprofile files go to bench/results/ (open them in Chrome DevTools).
/* global performance */
import { join } from 'node:path';
import { startWatchBaseline } from './churn.mjs';
import { startCliAgent } from './lib/cli-agent.mjs';
import { ApiServerProcess, BENCH_DIR, RESULTS_DIR, log, makeTmpDir, r1, r2, sleep, table, waitDrained } from './lib/common.mjs';
import { mkdirSync, readFileSync } from 'node:fs';

const ROOT = `file://${join(BENCH_DIR, '..')}/`;

/** A profile frame's place: the file relative to the repository (or the node: builtin), 1-based line. */
function place(cf) {
  let url = cf.url || '';
  if (url.startsWith(ROOT)) url = url.slice(ROOT.length);
  url = url.replace(/^.*\/node_modules\//, 'node_modules/');
  return url ? `${url}:${cf.lineNumber + 1}` : '';
}

/** Self time by function and by file, in ms, from a V8 .cpuprofile (idle left out). */
export function summarize(file, top = 15) {
  const prof = JSON.parse(readFileSync(file, 'utf8'));
  const total = prof.samples.length;
  const ms = (prof.endTime - prof.startTime) / 1000;
  const perSample = total ? ms / total : 0;
  const byFn = new Map();
  const byFile = new Map();
  let busy = 0;
  for (const node of prof.nodes) {
    if (!node.hitCount) continue;
    const cf = node.callFrame;
    if (cf.functionName === '(idle)') continue;
    const t = node.hitCount * perSample;
    busy += t;
    const fn = `${cf.functionName || '(anonymous)'}${place(cf) ? ` ${place(cf)}` : ''}`;
    byFn.set(fn, (byFn.get(fn) ?? 0) + t);
    const f = place(cf).replace(/:\d+$/, '') || cf.functionName;
    byFile.set(f, (byFile.get(f) ?? 0) + t);
  }
  const rows = (m) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, t]) => ({ name, selfMs: r1(t), pctOfBusy: r1((t / busy) * 100) }));
  return { windowMs: r1(ms), busyMs: r1(busy), functions: rows(byFn), files: rows(byFile) };
}

export async function run({ quick, large }) {
  // 5,000 Nodes; with --with-20k or --with-50k (quick mode), the largest of them.
  const n = quick && large.length > 0 ? Math.max(...large) : 5000;
  const stormMs = quick ? 10_000 : 30_000;
  mkdirSync(RESULTS_DIR, { recursive: true });
  const api = await new ApiServerProcess().setup(makeTmpDir(), { peers: n, backend: 'vxlan' });
  const out = { nodes: n, stormSeconds: stormMs / 1000 };
  log(`profile: ${n} nodes`);
  try {
    log(`profile: cold start, ${n} nodes`);
    const coldFile = join(RESULTS_DIR, 'cold-start.cpuprofile');
    const cold = await startCliAgent({ kubeconfig: api.kubeconfig, peers: n, profileFromStart: true });
    const t0 = performance.now();
    await cold.inSync;
    out.coldStartMs = r1(performance.now() - t0);
    await cold.profileStop(coldFile);
    out.coldStartCpuMs = r1(await cold.cpuMs());
    await cold.stop();
    out.coldStart = summarize(coldFile);

    log('profile: status storm');
    const a = await startCliAgent({ kubeconfig: api.kubeconfig, peers: n });
    await a.inSync;
    const watch = await startWatchBaseline(api.kubeconfig);
    try {
      await sleep(1000);
      // Unprofiled: the CLI's CPU share against the bare watch's, same stream, same window.
      const c0 = await a.cpuMs();
      const b0 = await watch.cpu();
      const w0 = performance.now();
      const res = await api.call('churn', { addDelPerSec: 0, statusPerSec: 500, durationMs: stormMs });
      const wall = performance.now() - w0;
      const drain = await waitDrained({ watchEvents: async () => (await watch.cpu()).events, want: b0.events + res.statusUpdates, agentCpuMs: a.cpuMs });
      const c1 = await a.cpuMs();
      const b1 = await watch.cpu();
      out.storm = {
        statusUpdates: res.statusUpdates,
        statusPerSec: r1(res.statusUpdates / (wall / 1000)),
        agentCpuPct: r2(((c1 - c0) / wall) * 100),
        clientNodeWatchCpuPct: r2(((b1.cpuMs - b0.cpuMs) / wall) * 100),
        watchEvents: b1.events - b0.events,
        agentUsPerUpdate: r1(((c1 - c0) * 1000) / res.statusUpdates),
        clientNodeWatchUsPerUpdate: r1(((b1.cpuMs - b0.cpuMs) * 1000) / res.statusUpdates),
        ...drain,
      };
      out.storm.agentOverWatch = out.storm.clientNodeWatchCpuPct > 0 ? r2(out.storm.agentCpuPct / out.storm.clientNodeWatchCpuPct) : null;
      // Profiled.
      const stormFile = join(RESULTS_DIR, 'status-storm.cpuprofile');
      await a.profileStart();
      await api.call('churn', { addDelPerSec: 0, statusPerSec: 500, durationMs: stormMs });
      await a.profileStop(stormFile);
      out.stormProfile = summarize(stormFile);
      // Profiled: node adds and deletes at 10/s (each one a reconcile pass and an HNS write).
      log('profile: node add/del 10/s');
      const churnFile = join(RESULTS_DIR, 'node-churn.cpuprofile');
      await a.profileStart();
      await api.call('churn', { addDelPerSec: 10, statusPerSec: 0, durationMs: stormMs });
      await a.profileStop(churnFile);
      out.churnProfile = summarize(churnFile);
    } finally {
      await watch.stop();
      await a.stop();
    }
  } finally {
    await api.close();
  }
  table(`Status storm (500 status-only updates/s asked, ${stormMs / 1000} s): the CLI as shipped against a bare client-node Watch`, [out.storm]);
  for (const [title, p] of [
    [`Cold start of ${n} nodes (${out.coldStartMs} ms, ${out.coldStartCpuMs} ms CPU): top self time`, out.coldStart],
    [`Status storm (${out.stormProfile.windowMs} ms window, ${out.stormProfile.busyMs} ms busy): top self time`, out.stormProfile],
    [`Node add/del 10/s (${out.churnProfile.windowMs} ms window, ${out.churnProfile.busyMs} ms busy): top self time`, out.churnProfile],
  ]) {
    table(`${title}, by function`, p.functions);
    table(`${title}, by file`, p.files.slice(0, 10));
  }
  return out;
}

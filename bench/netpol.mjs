// Benchmark: the NetworkPolicy controller (--network-policy, src/policy/controller.ts) at issue 35's point:
// 10,000 pods and 1,000 NetworkPolicies cluster-wide, 100 pods on this node (quick mode: 2,000 and 200), and
// the same at a tenth of the size in the same run, to see how the cost per event grows with the cluster (the
// controller recomputes the node's whole intent per batch of events). In-process with the controller, as
// the agent runs it (bench/lib/netpol-child.mjs: its three list-watches over HTTP to the fake API server
// in its own process, the simulated node's HNS in the measured process), not the whole agent: the agent's
// other parts are measured by the other benchmarks, and would only add their constant cost here.
// Figures, each beside a baseline measured in the same run:
// - cold start: until every local pod's endpoint holds its rules, against the same three list-watches
//   listing the same objects with nothing computed (`watch` mode);
// - CPU per pod event and per policy event, one event at a time (each waits until the controller is in sync
//   again, the worst case: no batching), against the list-watches alone decoding the same events;
// - RSS after the cold start, against client-node's informers holding the same objects;
// - HNS entries written per change (ACL rules and IP sets in HcnModifyEndpoint/HcnModifyNetwork requests),
//   against the entries a whole-list rewrite writes for the same change stream (felix endpoint_mgr.go: an
//   endpoint's whole list again, IP sets flattened into its rules).
import { fork } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { RUNTIME_EXEC_ARGV } from '../packaging/runtime-flags.mjs';
import { ApiServerProcess, BENCH_DIR, log, makeTmpDir, mb, r1, r2, table } from './lib/common.mjs';
import { namespaces, policies, policy, pod, pods } from './lib/netpol-cluster.mjs';

const LOCAL = 100;

class Child {
  constructor(mode, kubeconfig) {
    this.child = fork(join(BENCH_DIR, 'lib', 'netpol-child.mjs'), [mode, kubeconfig, String(LOCAL)], {
      // BENCH_NETPOL_CPU_PROF=<dir>: the controller's process profiled by V8's sampler (`--cpu-prof`), one file per size.
      execArgv: [
        '--expose-gc',
        ...RUNTIME_EXEC_ARGV,
        ...(mode === 'controller' && process.env.BENCH_NETPOL_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_NETPOL_CPU_PROF}`] : []),
      ],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      serialization: 'advanced',
    });
    this.seq = 0;
    this.pending = new Map();
    this.child.on('message', (m) => {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.ok) p?.resolve(m.result);
      else p?.reject(new Error(m.error));
    });
    this.exited = new Promise((r) => this.child.once('exit', r));
  }
  call(cmd, args = {}) {
    const id = ++this.seq;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.child.send({ id, cmd, args });
    });
  }
  async close() {
    await this.call('exit').catch(() => undefined);
    await this.exited;
  }
}

const cpuMs = (a, b) => (b.user + b.system - a.user - a.system) / 1000;

/** `n` events, one at a time: `change(k)` makes the k-th in the API server; each waits until the child is settled again. */
async function paced(api, child, n, change) {
  const before = await child.call('cpu');
  let { version } = await child.call('version');
  for (let k = 0; k < n; k++) {
    await change(k);
    ({ version } = await child.call('settled', { from: version, events: 1 }));
  }
  return cpuMs(before, await child.call('cpu')) / n;
}

/** The pod change of event k: a pod's role flipped (it joins or leaves the frontends its namespace's policies admit); every fourth a local pod. */
function podChanges(total) {
  const roles = new Map();
  return (k) => {
    const i = k % 4 === 0 ? (k / 4) % LOCAL : LOCAL + ((k * 7919) % (total - LOCAL));
    const p = pod(i, total, LOCAL);
    const role = roles.get(i) ?? p.metadata.labels.role;
    p.metadata.labels.role = role === 'frontend' ? 'backend' : 'frontend';
    roles.set(i, p.metadata.labels.role);
    return p;
  };
}

/** The policy change of event k: the port of a policy selecting local pods (the first 100 select app-0), 80 -> 81 and back. */
const policyChange = (k, count) => {
  const n = Math.min(100, count);
  return policy(k % n, Math.floor(k / n) % 2 === 0 ? 81 : 80);
};

async function point(total, npCount, events) {
  const api = await new ApiServerProcess().setup(makeTmpDir(), { peers: 0, backend: 'host-gw' });
  try {
    await api.call('addObjects', { resource: 'namespaces', objects: namespaces() });
    for (let i = 0; i < total; i += 2000) await api.call('addObjects', { resource: 'pods', objects: pods(total, LOCAL).slice(i, i + 2000) });
    await api.call('addObjects', { resource: 'networkpolicies', objects: policies(npCount) });
    const want = { pods: total, namespaces: 100, policies: npCount, local: LOCAL };
    const run = async (mode, fn) => {
      const c = new Child(mode, api.kubeconfig);
      try {
        await c.call('start');
        return await fn(c);
      } finally {
        await c.close();
      }
    };
    const put = (resource, o) => api.call('putObjects', { resource, objects: [o] });
    // The controller first: its changes are real ones (the watch baseline after it only decodes the same stream).
    const ctl = await run('controller', async (c) => {
      const { ms } = await c.call('synced', want);
      const cold = await c.call('writes');
      const memory = await c.call('memory');
      await c.call('snapshot');
      const podChange = podChanges(total);
      const podCpu = await paced(api, c, events, (k) => put('pods', podChange(k)));
      const podWrites = await c.call('writes');
      await c.call('snapshot');
      const policyCpu = await paced(api, c, events, (k) => put('networkpolicies', policyChange(k, npCount)));
      const policyWrites = await c.call('writes');
      return { coldMs: ms, cold, memory, podCpu, podWrites, policyCpu, policyWrites };
    });
    const watch = await run('watch', async (c) => {
      const { ms } = await c.call('synced', want);
      const podChange = podChanges(total);
      const podCpu = await paced(api, c, events, (k) => put('pods', podChange(k)));
      const policyCpu = await paced(api, c, events, (k) => put('networkpolicies', policyChange(k + events, npCount)));
      return { listMs: ms, podCpu, policyCpu };
    });
    const informer = await run('informer', async (c) => {
      await c.call('synced', want);
      return c.call('memory');
    });
    return { watch, ctl, informer };
  } finally {
    await api.close();
  }
}

export async function run({ quick }) {
  const load = loadavg();
  // Two sizes a factor 10 apart, in every mode: how the cost per event grows with the cluster.
  const sizes = quick
    ? [
        [200, 20],
        [2000, 200],
      ]
    : [
        [1000, 100],
        [10000, 1000],
      ];
  const events = quick ? 40 : 100;
  const out = {};
  for (const [total, npCount] of sizes) {
    log(`netpol: ${total} pods, ${npCount} NetworkPolicies, ${LOCAL} local, ${events} events of each kind`);
    out[total] = { policies: npCount, ...(await point(total, npCount, events)) };
  }
  const rows = Object.entries(out).map(([total, { watch, ctl, informer }]) => ({
    pods: Number(total),
    policies: out[total].policies,
    rules: ctl.cold.rules.rules,
    sets: ctl.cold.rules.sets,
    cold_start_s: r2(ctl.coldMs / 1000),
    list_only_s: r2(watch.listMs / 1000),
    cold_over_list: r2(ctl.coldMs / watch.listMs),
    cpu_ms_pod_event: r2(ctl.podCpu),
    watch_cpu_ms_pod_event: r2(watch.podCpu),
    cpu_ms_policy_event: r2(ctl.policyCpu),
    watch_cpu_ms_policy_event: r2(watch.policyCpu),
    rss_mb: mb(ctl.memory.rss),
    informer_rss_mb: mb(informer.rss),
    rss_over_informer: r2(ctl.memory.rss / informer.rss),
    entries_per_pod_event: r2(ctl.podWrites.entries / events),
    rewrite_per_pod_event: r2(ctl.podWrites.rewrite / events),
    entries_per_policy_event: r2(ctl.policyWrites.entries / events),
    rewrite_per_policy_event: r2(ctl.policyWrites.rewrite / events),
  }));
  table(`NetworkPolicy controller (load average ${load.map(r1).join(' ')})`, rows);
  const big = rows.at(-1);
  const small = rows[0];
  return {
    loadAverage: load,
    events,
    rows,
    raw: out,
    summary: {
      netpol_cold_start_s: big.cold_start_s,
      netpol_cold_over_list: big.cold_over_list,
      netpol_cpu_ms_per_pod_event: big.cpu_ms_pod_event,
      netpol_cpu_ms_per_policy_event: big.cpu_ms_policy_event,
      netpol_pod_event_cpu_growth_10x: r2(big.cpu_ms_pod_event / small.cpu_ms_pod_event),
      netpol_rss_over_informer: big.rss_over_informer,
      netpol_entries_per_pod_event: big.entries_per_pod_event,
      netpol_rewrite_entries_per_pod_event: big.rewrite_per_pod_event,
      netpol_entries_per_policy_event: big.entries_per_policy_event,
      netpol_rewrite_entries_per_policy_event: big.rewrite_per_policy_event,
    },
  };
}

// Benchmark 4: slow and faulty dataplane. 5k peers; every dataplane call costs 50 ms, 1% of calls fail,
// and one write stalls for 10 s. Convergence time against the ideal N x 50 ms (one sequential write per
// peer); duplicate writes (a policy/route written again while present), retries per peer, nothing lost.
import {
  ApiServerProcess,
  classifyCalls,
  hookWrites,
  log,
  makeTmpDir,
  metricSum,
  peer,
  programmedPrefixes,
  r1,
  sleep,
  startAgent,
  table,
  waitInSync,
  waitUntil,
  wallNow,
} from './lib/common.mjs';

const HNS_FAIL = 0x80004005; // E_FAIL
// ERROR_GEN_FAILURE: a transient refusal. Not 1168 (ERROR_NOT_FOUND), which the host-gw driver rightly
// reads as "the vNIC is gone" and answers by ending the pass and resolving the interface again.
const ROUTE_FAIL = 31;

async function one(backend, n, stallMs) {
  const api = await new ApiServerProcess().setup(makeTmpDir(), { peers: n, backend });
  let a;
  try {
    a = await startAgent({ api, backend, latency: { hnsCallMs: 50, hnsPerItemMs: 0, routeCallMs: 50 } });
    const present = new Set();
    const attempts = new Map();
    let duplicates = 0;
    hookWrites(a.sim, (kind, prefix) => {
      if (kind === 'add') {
        if (present.has(prefix)) duplicates++;
        present.add(prefix);
      } else present.delete(prefix);
    });
    // Write attempts per prefix, the ones the injected failures reject included.
    const countAttempt = (prefix) => attempts.set(prefix, (attempts.get(prefix) ?? 0) + 1);
    // Wait for registration (no injection during the network setup), then inject.
    while (!a.milestones['wrote subnet.env']) await sleep(5);
    const writeOp = backend === 'vxlan' ? 'HcnModifyNetwork' : 'CreateIpForwardEntry2';
    a.sim.injections.failRate(0.01, backend === 'vxlan' ? HNS_FAIL : ROUTE_FAIL);
    a.sim.injections.stall(writeOp, stallMs, 1);
    // Attempts: every write call the simulated node receives (SimulatedDataplane.enter, where its
    // injected failures fire), per destination prefix named in the call's input.
    const enter = a.sim.enter.bind(a.sim);
    a.sim.enter = (op, kind, items, input) => {
      if (op === writeOp) for (const m of String(input).matchAll(/"DestinationPrefix":"([^"]+)"/g)) countAttempt(m[1]);
      return enter(op, kind, items, input);
    };
    const t0 = wallNow();
    await waitInSync(a.agent, { refusedAside: true });
    // In sync, refused items aside (they are retried alone
    // after their backoff): convergence is the moment the dataplane holds every peer.
    const missing = () => {
      const held = programmedPrefixes(a.sim, backend);
      let k = 0;
      for (let i = 1; i <= n; i++) if (!held.has(peer(i).subnet)) k++;
      return k;
    };
    await waitUntil(() => missing() === 0, 'every peer held', 120_000, 20).catch(() => undefined);
    const tConverged = wallNow();
    const lost = missing();
    const calls = classifyCalls(a.sim.calls);
    const errors = await metricSum(a.metrics, 'flannel_dataplane_errors_total');
    const passCount = (result) => metricSum(a.metrics, 'flannel_apply_passes_total', { result });
    const att = [...attempts.values()];
    const retried = att.filter((x) => x > 1).length;
    a.sim.injections.clear();
    const ideal = n * 50;
    return {
      backend,
      peers: n,
      convergedS: r1((tConverged - t0) / 1000),
      idealS: r1(ideal / 1000),
      vsIdeal: Math.round(((tConverged - t0) / ideal) * 1000) / 1000,
      stallS: stallMs / 1000,
      dataplaneErrors: errors,
      passesFailed: await passCount('error'),
      passesOk: await passCount('ok'),
      writeCalls: calls.writes,
      duplicateWrites: duplicates,
      peersRetried: retried,
      maxAttemptsPerPeer: att.length ? Math.max(...att) : 0,
      lost,
    };
  } finally {
    await a?.stop();
    await api.close();
  }
}

export async function run({ quick }) {
  const n = quick ? 1000 : 5000;
  const stallMs = quick ? 3000 : 10_000;
  const rows = [];
  for (const backend of ['vxlan', 'host-gw']) {
    log(`faulty dataplane: ${backend}, ${n} peers`);
    rows.push(await one(backend, n, stallMs));
  }
  table(`Slow and faulty dataplane (${n} peers; 50 ms per call, 1% of calls fail, one ${stallMs / 1000} s stall on a write)`, rows);
  return {
    peers: n,
    model: { callMs: 50, failRate: 0.01, stallMs },
    rows,
    notes: [
      'ideal = N x 50 ms: one sequential 50 ms write per peer. vxlan writes 64 policies per HcnModifyNetwork (3 HNS calls with open/close); host-gw writes routes 8 at a time.',
      'duplicateWrites counts a policy/route written while the dataplane already held it; lost counts peers still missing 120 s after the agent reported in sync (refused items aside).',
    ],
  };
}

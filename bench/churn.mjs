// Benchmark 3: churn on a 5k-node cluster. Node adds/deletes at 10/s plus status-only updates (kubelet
// heartbeats) at 17/s and at 500/s, then status-only updates alone. Reports the agent's CPU share, the
// event-to-dataplane latency (API change -> the simulated HNS holding it, timed by hooks in the
// dataplane) and the dataplane calls. The periodic resync is off here, so every call is event-driven.
import {
  ApiServerProcess,
  COLD_LATENCY,
  classifyCalls,
  cpuSampler,
  diffCalls,
  hookWrites,
  log,
  makeTmpDir,
  peer,
  percentile,
  programmedPrefixes,
  r1,
  sleep,
  startAgent,
  table,
} from './lib/common.mjs';

export async function run({ quick }) {
  const n = 5000;
  const durationMs = quick ? 8_000 : 60_000;
  const api = await new ApiServerProcess().setup(makeTmpDir(), { peers: n, backend: 'vxlan' });
  const writes = { add: new Map(), remove: new Map() };
  let a;
  try {
    a = await startAgent({ api, backend: 'vxlan', latency: COLD_LATENCY, resyncMs: 3_600_000 });
    hookWrites(a.sim, (kind, prefix, t) => {
      if (!writes[kind].has(prefix)) writes[kind].set(prefix, t);
    });
    while (!a.agent.network) await sleep(10);
    await a.agent.network.waitForInSync();
    await sleep(500);
    let live = Array.from({ length: n }, (_, i) => i + 1);
    const phases = [
      { name: 'add/del 10/s + status 17/s', addDelPerSec: 10, statusPerSec: 17 },
      { name: 'add/del 10/s + status 500/s', addDelPerSec: 10, statusPerSec: 500 },
      { name: 'status-only 500/s', addDelPerSec: 0, statusPerSec: 500 },
    ];
    const rows = [];
    for (const ph of phases) {
      log(`churn: ${ph.name} for ${durationMs / 1000}s`);
      const calls0 = new Map(a.sim.calls);
      const cpu = cpuSampler();
      const res = await api.call('churn', { addDelPerSec: ph.addDelPerSec, statusPerSec: ph.statusPerSec, durationMs, live });
      const cpuFigures = cpu();
      live = res.alive;
      // Let the last changes land (they are timed from the API change, not from now).
      await sleep(1000);
      const lat = [];
      let missing = 0;
      for (const ev of res.events) {
        const t = writes[ev.type].get(ev.prefix);
        if (t === undefined || t < ev.t) missing++;
        else lat.push(t - ev.t);
      }
      const calls = classifyCalls(diffCalls(a.sim.calls, calls0));
      rows.push({
        phase: ph.name,
        seconds: r1(res.durationMs / 1000),
        nodeEvents: res.events.length,
        statusUpdates: res.statusUpdates,
        cpuSharePct: cpuFigures.cpuShare,
        cpuMsPerSec: r1(cpuFigures.cpuMs / (cpuFigures.wallMs / 1000)),
        p50ms: r1(percentile(lat, 50)),
        p99ms: r1(percentile(lat, 99)),
        maxMs: r1(lat.length ? Math.max(...lat) : null),
        notApplied: missing,
        writes: calls.writes,
        reads: calls.reads,
        handleOps: calls.handles,
        writesPerNodeEvent: res.events.length ? r1(calls.writes / res.events.length) : null,
      });
    }
    const held = programmedPrefixes(a.sim, 'vxlan');
    const want = new Set(live.map((i) => peer(i).subnet));
    const equal = held.size === want.size && [...want].every((p) => held.has(p));
    table(`Churn on ${n} nodes (vxlan; agent process CPU; latency = API change -> HNS holds it)`, rows);
    const statusOnly = rows[2];
    console.log(`status-only updates caused ${statusOnly.writes + statusOnly.reads + statusOnly.handleOps} dataplane calls (must be 0); dataplane equals the desired set at the end: ${equal}`);
    return {
      nodes: n,
      latencyModel: COLD_LATENCY,
      phaseSeconds: durationMs / 1000,
      rows,
      statusOnlyDataplaneCalls: statusOnly.writes + statusOnly.reads + statusOnly.handleOps,
      finalDataplaneEqualsDesired: equal,
      notes: [
        'Resync disabled during churn (resyncMs 1h) so every dataplane call is attributable to an event.',
        'Node events alternate delete-oldest / add-new; the API server runs in its own process and generates the churn; CPU is the agent process only.',
      ],
    };
  } finally {
    await a?.stop();
    await api.close();
  }
}

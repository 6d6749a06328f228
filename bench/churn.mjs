// Benchmark 3: node events and churn on a 5k-node cluster (vxlan; the simulated HNS costs 5 ms per call).
// Phases (after an unmeasured warm-up of the same kinds of events): idle and node adds/deletes alone at 10/s,
// the two in rounds (the figure is the median round's); adds/deletes plus status-only updates (kubelet heartbeats) at 17/s and at 500/s; status-only updates alone
// at 500/s. Per phase: the agent's CPU, the event-to-dataplane latency (API change -> the simulated HNS
// holding it), and the dataplane calls the agent made (its /metrics counters). The periodic resync is off, so
// every call is event-driven. Same-run baselines: the idle phases (CPU per event is net of idle), and a bare
// client-node Watch on the same Nodes in its own process (lib/watch-child.mjs): the floor of decoding the
// same events; and the least writer (lib/least-writer-child.mjs), that watch plus only the HNS write a lease
// change needs, on its own simulated HNS with the same latency: what a node event's necessary work costs
// (docs/performance.md, "The least writer"). A phase's CPU (agent and baselines alike) runs until all three
// have handled every event of the phase (lib/common.mjs waitDrained), over the wall time of the phase's changes.
import { fork } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { getHeapSpaceStatistics } from 'node:v8';
import { METRIC } from '../dist/basics/metrics.js';
import {
  ApiServerProcess,
  BENCH_DIR,
  COLD_LATENCY,
  cpuSampler,
  dataplaneCallsFromMetrics,
  diffCalls,
  hookWrites,
  log,
  makeTmpDir,
  OWN_IP,
  OWN_NODE,
  OWN_PREFIX_LENGTH,
  OWN_SUBNET,
  metricSum,
  peer,
  percentile,
  programmedPrefixes,
  r1,
  r2,
  sleep,
  startAgent,
  table,
  waitDrained,
  waitInSync,
  VXLAN_NET_CONF,
} from './lib/common.mjs';
import { cpuNowMs, timeSimulatedHns } from './lib/sim-hns-cpu.mjs';

/** A same-run baseline in its own process (`script` in lib/): `cpu()` answers its CPU ms and the rest of its probe. */
function startBaselineChild(script, args) {
  const child = fork(join(BENCH_DIR, 'lib', script), args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`${script} exited ${code}`)));
  });
  return ready.then(() => ({
    cpu: () =>
      new Promise((resolve) => {
        child.once('message', (m) => resolve({ ...m, cpuMs: (m.user + m.system) / 1000 }));
        child.send({ probe: 'cpu' });
      }),
    stop: () => {
      child.kill();
      return new Promise((r) => child.once('exit', r));
    },
  }));
}

/** The baseline watcher; `cpu()` answers its CPU ms and decoded events so far. */
export const startWatchBaseline = (kubeconfig) => startBaselineChild('watch-child.mjs', [kubeconfig]);

/**
 * The least writer (lib/least-writer-child.mjs): the bare watch plus the HNS write a lease change needs, on
 * its own simulated HNS with the agent's latency model; `cpu()` also answers the simulated HNS's CPU ms.
 */
const startLeastWriter = (kubeconfig) =>
  startBaselineChild('least-writer-child.mjs', [
    kubeconfig,
    JSON.stringify({ nodeIP: OWN_IP, nodePrefixLength: OWN_PREFIX_LENGTH, subnet: OWN_SUBNET, ownNode: OWN_NODE, vni: VXLAN_NET_CONF.Backend.VNI, latency: COLD_LATENCY }),
  ]);

/** CPU ms of one idle wakeup of a Node process on this machine (lib/wakeup-child.mjs), `wakeups` of them. */
export function wakeupCost(wakeups) {
  const child = fork(join(BENCH_DIR, 'lib', 'wakeup-child.mjs'), [String(wakeups)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.once('message', (m) => resolve(m.cpuMsPerWakeup));
    child.once('exit', (code) => code !== 0 && reject(new Error(`wakeup probe exited ${code}`)));
  });
}

/**
 * BENCH_CHURN_PROFILE=<prefix>: V8's sampler (100 µs) over each node add/del round's changes, written to
 * <prefix>.<nodes>.<round>.cpuprofile (docs/performance.md, "CPU per node event at 5,000 Nodes");
 * BENCH_CHURN_PROFILE_PHASES=idle,status-only (the phase names' first words) profiles those phases
 * instead, to <prefix>.<nodes>.<phase>[.<round>].cpuprofile.
 */
const PROFILE = process.env.BENCH_CHURN_PROFILE;
const PROFILE_PHASES = process.env.BENCH_CHURN_PROFILE_PHASES?.split(',');
const session = new Session();
async function profileStart() {
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
}
async function profileStop(file) {
  const { profile } = await session.post('Profiler.stop');
  writeFileSync(file, JSON.stringify(profile));
  session.disconnect();
}

/**
 * CPU ms of this process's main thread and of its other threads (V8's workers: concurrent compiles and
 * marking, the parallel scavenger; libuv's pool) so far: `/proc/self/task/<tid>/schedstat`'s first field,
 * ns on a core (proc(5)); the main thread's tid is the pid. Null without /proc.
 */
function threadCpuMs() {
  let tids;
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return null;
  }
  const out = { main: 0, other: 0 };
  for (const tid of tids) {
    try {
      const ns = Number(readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      out[Number(tid) === process.pid ? 'main' : 'other'] += ns / 1e6;
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return out;
}
const oldSpaceMb = () => r1(getHeapSpaceStatistics().find((s) => s.space_name === 'old_space').space_used_size / 1e6);

const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];

/** The bench process's garbage collections: `sample()` now, `since(sample)` the count and ms since. */
function gcWatch() {
  const total = { minor: 0, major: 0, ms: 0 };
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) total.major++;
      else if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) total.minor++;
      total.ms += e.duration;
    }
  });
  obs.observe({ entryTypes: ['gc'] });
  return { stop: () => obs.disconnect(), sample: () => ({ ...total }), since: (s) => ({ minor: total.minor - s.minor, major: total.major - s.major, ms: total.ms - s.ms }) };
}

/**
 * The phases at `n` Nodes. `short`: only those with a target (idle, node add/del, status-only), for the
 * larger cluster of a quick run.
 */
async function churnAt(n, { quick, short }) {
  const durationMs = quick ? 8_000 : 60_000;
  // The idle phase runs as long as a node add/del phase and the same way (one churn call, the same drain),
  // so that the idle CPU subtracted from an event phase is what that phase would have cost without its
  // events: the agent's rest and the harness's fixed cost per phase alike. Until session 12 it was 3 s
  // (20 s), and its rate per second, scaled to 8 s (60 s), charged the per-phase cost 8/3 times
  // (docs/performance.md, "The idle rate at 20,000 and 50,000 Nodes (session 12)").
  const idleMs = durationMs;
  const api = await new ApiServerProcess().setup(makeTmpDir(), { peers: n, backend: 'vxlan' });
  const writes = { add: new Map(), remove: new Map() };
  let a;
  let baseline;
  let simHns;
  let leastWriter;
  try {
    a = await startAgent({ api, backend: 'vxlan', latency: COLD_LATENCY, resyncMs: 3_600_000 });
    hookWrites(a.sim, (kind, prefix, t) => {
      if (!writes[kind].has(prefix)) writes[kind].set(prefix, t);
    });
    // The simulated HNS's CPU (its policy store and the synchronous part of each HcnModifyNetwork), which on
    // Windows is HNS's process's (lib/sim-hns-cpu.mjs). Its synchronous part also arms the latency's timer, the
    // agent's second wakeup, which the floor counts too (its wakeupMs): a few µs in the agent's favour.
    simHns = timeSimulatedHns(a.sim);
    while (!a.agent.network) await sleep(10);
    await waitInSync(a.agent);
    baseline = await startWatchBaseline(api.kubeconfig);
    leastWriter = await startLeastWriter(api.kubeconfig);
    await sleep(500);
    // A phase is drained when the bare watch and the least writer have both handled its events.
    const watchEvents = async () => Math.min((await baseline.cpu()).events, (await leastWriter.cpu()).events);
    const agentCpuMs = cpuNowMs;
    // Warm-up, not measured: the same kinds of events for a few seconds first, so that both processes are
    // measured in their steady state (the add, delete and status paths compiled and their feedback
    // gathered) rather than charged for compiling them: a fresh process's first node events cost 1.5-3x
    // its later ones, the bare watch's as much as the agent's (docs/performance.md). 800 node events in quick
    // mode (5 s of 50 until session 11): V8's optimizing compiler, on the process's other threads, kept
    // compiling the agent's path for 500-800 events after the old warm-up, and the later rounds paid for it
    // ("CPU per node event at 5,000 Nodes (session 11)"). 3,200 node events and 4,000 status updates since
    // session 14: after 800 and 1,000, V8 still compiled the agent's once-per-event functions (writeOne, the
    // loop's idle, the metrics' inc) for the first time during the measured rounds, and those rounds' figures
    // rose with the compiler thread's CPU ("CPU per node event against the least writer (session 14)").
    const warmUp = { addDelPerSec: 40, statusPerSec: 50, durationMs: 80_000 };
    log(`churn: ${n} nodes, warm-up (not measured) for ${warmUp.durationMs / 1000}s`);
    const warmBase = (await baseline.cpu()).events;
    const warm = await api.call('churn', warmUp);
    await waitDrained({
      watchEvents,
      want: warmBase + warm.events.length + warm.statusUpdates,
      agentCpuMs,
    });
    // The figure's phases, idle then node adds/deletes, run `rounds` times, each round with its own idle
    // rate and wakeup: the figure is the median round's (a single 8 s phase of 80 node events moved by
    // more than the target's margin between runs: docs/performance.md, "CPU per node event at 5,000 Nodes").
    const rounds = Number(process.env.BENCH_CHURN_ROUNDS ?? (quick ? 7 : 3));
    const phases = [
      ...Array.from({ length: rounds }, (_, round) => [
        { name: 'idle', addDelPerSec: 0, statusPerSec: 0, ms: idleMs, round },
        { name: 'node add/del 10/s', addDelPerSec: 10, statusPerSec: 0, round },
      ]).flat(),
      { name: 'add/del 10/s + status 17/s', addDelPerSec: 10, statusPerSec: 17, long: true },
      { name: 'add/del 10/s + status 500/s', addDelPerSec: 10, statusPerSec: 500, long: true },
      { name: 'status-only 500/s', addDelPerSec: 0, statusPerSec: 500 },
    ].filter((ph) => !(short && ph.long));
    const rows = [];
    const gc = gcWatch();
    let wakeupMs = 0;
    for (const ph of phases) {
      const ms = ph.ms ?? durationMs;
      if (ph.name === 'idle') wakeupMs = await wakeupCost(quick ? 20 : 100);
      log(`churn: ${n} nodes, ${ph.name}${ph.round === undefined ? '' : ` (round ${ph.round + 1})`} for ${ms / 1000}s`);
      const gc0 = gc.sample();
      const calls0 = await dataplaneCallsFromMetrics(a.metrics);
      const reconnects0 = await metricSum(a.metrics, METRIC.apiReconnects);
      const simMs0 = simHns.storeMs();
      const simCallMs0 = simHns.callMs();
      const base0 = await baseline.cpu();
      const least0 = await leastWriter.cpu();
      const word = ph.name.split(' ')[0];
      const profiled = PROFILE && (PROFILE_PHASES?.includes(word) ?? ph.name === 'node add/del 10/s');
      const profileFile = `${PROFILE}.${n}.${[PROFILE_PHASES && word, ph.round !== undefined && ph.round + 1].filter(Boolean).join('.')}.cpuprofile`;
      if (profiled) await profileStart();
      const threads0 = threadCpuMs();
      const cpu = cpuSampler();
      const res = await api.call('churn', { addDelPerSec: ph.addDelPerSec, statusPerSec: ph.statusPerSec, durationMs: ms });
      // The phase's wall time is that of its changes; its CPU includes the drain of any backlog.
      const phaseWallMs = cpu().wallMs;
      if (profiled) await profileStop(profileFile);
      const drain = await waitDrained({
        watchEvents,
        want: base0.events + res.events.length + res.statusUpdates,
        agentCpuMs,
      });
      const c = { ...cpu(), wallMs: phaseWallMs };
      const threads = threadCpuMs();
      const base1 = await baseline.cpu();
      const least1 = await leastWriter.cpu();
      // Let the last changes land (they are timed from the API change, not from now).
      await sleep(1000);
      const lat = [];
      let missing = 0;
      for (const ev of res.events) {
        const t = writes[ev.type].get(ev.prefix);
        if (t === undefined || t < ev.t) missing++;
        else lat.push(t - ev.t);
      }
      const calls = diffCalls(await dataplaneCallsFromMetrics(a.metrics), calls0);
      const gcs = gc.since(gc0);
      rows.push({
        phase: ph.name,
        ...(ph.round === undefined ? {} : { round: ph.round + 1 }),
        raw: {
          seconds: c.wallMs / 1000,
          cpuMs: c.cpuMs,
          baseCpuMs: base1.cpuMs - base0.cpuMs,
          simMs: simHns.storeMs() - simMs0,
          simCallMs: simHns.callMs() - simCallMs0,
          wakeupMs,
          leastCpuMs: least1.cpuMs - least0.cpuMs,
          leastSimMs: least1.simStoreMs - least0.simStoreMs + least1.simCallMs - least0.simCallMs,
        },
        seconds: r1(c.wallMs / 1000),
        nodeEvents: res.events.length,
        statusUpdates: res.statusUpdates,
        // What the API server achieved: on a busy machine it falls short of the phase's nominal rate.
        statusPerSec: r1(res.statusUpdates / (c.wallMs / 1000)),
        // The bench process's collections in the phase (agent, simulated node and harness): a mark-compact
        // costs tens of ms, which over 80 node events is a tenth of the target's margin or more.
        scavenges: gcs.minor,
        majorGcs: gcs.major,
        gcMs: r1(gcs.ms),
        p50ms: r1(percentile(lat, 50)),
        p99ms: r1(percentile(lat, 99)),
        notApplied: missing,
        writes: calls.writes,
        reads: calls.reads,
        readsPerNodeEvent: res.events.length ? r2(calls.reads / res.events.length) : null,
        writesPerNodeEvent: res.events.length ? r2(calls.writes / res.events.length) : null,
        leastWriterWrites: least1.writes - least0.writes,
        leastWriterFailures: least1.failures - least0.failures,
        apiReconnects: (await metricSum(a.metrics, METRIC.apiReconnects)) - reconnects0,
        // Where the process's CPU went: the main thread, the others (docs/performance.md, "CPU per node event
        // at 5,000 Nodes (session 11)"); V8's old space in use at the phase's end (it falls at a mark-compact).
        mainThreadMs: threads && r1(threads.main - threads0.main),
        otherThreadsMs: threads && r1(threads.other - threads0.other),
        oldSpaceMb: oldSpaceMb(),
        drainMs: drain.drainMs,
        drained: drain.drained,
        callsByOp: Object.fromEntries(calls.byOp),
      });
    }
    // The idle rates subtracted, pooled over every idle phase: one 3 s idle phase caught the agent's
    // periodic work (tens of ms) or missed it at random, and each event phase subtracted 8/3 of it.
    const idleRows = rows.filter((r) => r.phase === 'idle');
    const idleSeconds = idleRows.reduce((t, r) => t + r.raw.seconds, 0);
    const idleCpuMsPerSec = idleRows.reduce((t, r) => t + r.raw.cpuMs, 0) / idleSeconds;
    const idleBaseCpuMsPerSec = idleRows.reduce((t, r) => t + r.raw.baseCpuMs, 0) / idleSeconds;
    const idleLeastCpuMsPerSec = idleRows.reduce((t, r) => t + r.raw.leastCpuMs - r.raw.leastSimMs, 0) / idleSeconds;
    for (const row of rows) {
      const { seconds, cpuMs, baseCpuMs, simMs: store, simCallMs, wakeupMs: wake, leastCpuMs, leastSimMs } = row.raw;
      const { nodeEvents } = row;
      const perEvent = (x) => (nodeEvents ? x / nodeEvents : null);
      const watchMs = perEvent(baseCpuMs - idleBaseCpuMsPerSec * seconds);
      // The agent's own: the process's CPU less the simulated HNS's, which on Windows is HNS's process's: its
      // policy store and the rest of each call. Until 5 December the policy store's alone (`...StoreOnly`).
      const sim = store + simCallMs;
      const agentMs = perEvent(cpuMs - idleCpuMsPerSec * seconds - sim);
      const agentStoreOnlyMs = perEvent(cpuMs - idleCpuMsPerSec * seconds - store);
      // The least writer's, net of its idle and of its simulated HNS, as the agent's.
      const leastMs = perEvent(leastCpuMs - leastSimMs - idleLeastCpuMsPerSec * seconds);
      Object.assign(row, {
        cpuSharePct: r2(cpuMs / seconds / 10),
        cpuMsPerNodeEvent: r2(perEvent(cpuMs - idleCpuMsPerSec * seconds)),
        simHnsMsPerNodeEvent: r2(perEvent(sim)),
        simHnsStoreMsPerNodeEvent: r2(perEvent(store)),
        agentCpuMsPerNodeEvent: r2(agentMs),
        agentCpuSharePct: r2((cpuMs - sim) / seconds / 10),
        watchBaselineCpuSharePct: r2(baseCpuMs / seconds / 10),
        // The least writer's whole process, as cpuSharePct is the agent's: in a status-only phase it writes
        // nothing, and what it pays is the watch, its peers' Map and a heap that holds them and its simulated HNS.
        leastWriterCpuSharePct: r2(leastCpuMs / seconds / 10),
        watchBaselineCpuMsPerNodeEvent: r2(watchMs),
        wakeupMs: nodeEvents ? r2(wake) : null,
        agentOverFloor: nodeEvents ? r2(agentMs / (watchMs + wake)) : null,
        agentOverFloorStoreOnly: nodeEvents ? r2(agentStoreOnlyMs / (watchMs + wake)) : null,
        leastWriterCpuMsPerNodeEvent: r2(leastMs),
        leastWriterOverFloor: nodeEvents ? r2(leastMs / (watchMs + wake)) : null,
        agentOverLeastWriter: nodeEvents ? r2(agentMs / leastMs) : null,
      });
    }
    gc.stop();
    const held = programmedPrefixes(a.sim, 'vxlan');
    const { alive } = await api.call('alive');
    const want = new Set(alive.map((i) => peer(i).subnet));
    const equal = held.size === want.size && [...want].every((p) => held.has(p));
    table(
      `Churn on ${n} nodes (vxlan; agent process CPU, per node event net of idle; baseline = a bare client-node Watch of the same Nodes; latency = API change -> HNS holds it)`,
      rows.map(({ callsByOp: _c, raw: _r, ...r }) => r),
    );
    // The median round by agentOverFloor; its row gives every node-event figure, so they stay one phase's.
    const eventRounds = rows.filter((r) => r.phase === 'node add/del 10/s');
    const events = [...eventRounds].sort((x, y) => x.agentOverFloor - y.agentOverFloor)[Math.floor(eventRounds.length / 2)];
    const storm = rows.find((r) => r.phase === 'status-only 500/s');
    const stormCalls = storm.writes + storm.reads;
    console.log(`status-only updates caused ${stormCalls} dataplane calls (must be 0); dataplane equals the desired set at the end: ${equal}`);
    const ratio = (a, b) => (b > 0 ? r2(a / b) : null);
    return {
      nodes: n,
      latencyModel: COLD_LATENCY,
      warmUp: { seconds: warmUp.durationMs / 1000, nodeEvents: warm.events.length, statusUpdates: warm.statusUpdates },
      phaseSeconds: durationMs / 1000,
      rows,
      statusOnlyDataplaneCalls: stormCalls,
      finalDataplaneEqualsDesired: equal,
      figures: {
        cpuMsPerNodeEvent: events.cpuMsPerNodeEvent,
        p50ms: events.p50ms,
        readsPerNodeEvent: events.readsPerNodeEvent,
        stormCpuPct: storm.cpuSharePct,
        stormWatchCpuPct: storm.watchBaselineCpuSharePct,
        stormOverWatch: ratio(storm.cpuSharePct, storm.watchBaselineCpuSharePct),
        stormLeastWriterCpuPct: storm.leastWriterCpuSharePct,
        stormOverLeastWriter: ratio(storm.cpuSharePct, storm.leastWriterCpuSharePct),
        churnCpuPct: events.cpuSharePct,
        churnWatchCpuPct: events.watchBaselineCpuSharePct,
        churnOverWatch: ratio(events.cpuSharePct, events.watchBaselineCpuSharePct),
        simHnsMsPerNodeEvent: events.simHnsMsPerNodeEvent,
        agentCpuMsPerNodeEvent: events.agentCpuMsPerNodeEvent,
        churnAgentOverWatch: ratio(events.agentCpuSharePct, events.watchBaselineCpuSharePct),
        wakeupMs: events.wakeupMs,
        // What a consumer of the same watch costs that also waits for one asynchronous call per event.
        watchPlusWakeupMsPerNodeEvent: r2(events.watchBaselineCpuMsPerNodeEvent + events.wakeupMs),
        agentOverFloor: events.agentOverFloor,
        agentOverFloorRounds: eventRounds.map((r) => r.agentOverFloor),
        // The definition before 5 December (only the policy store's time left out), its own median round.
        agentOverFloorStoreOnly: median(eventRounds.map((r) => r.agentOverFloorStoreOnly)),
        // The least writer's: each the median over the rounds of a same-round figure (the round picked by
        // agentOverFloor is a random draw of the least writer's, which moved by 0.2 between rounds), and every round's.
        leastWriterCpuMsPerNodeEvent: median(eventRounds.map((r) => r.leastWriterCpuMsPerNodeEvent)),
        leastWriterOverFloor: median(eventRounds.map((r) => r.leastWriterOverFloor)),
        agentOverLeastWriter: median(eventRounds.map((r) => r.agentOverLeastWriter)),
        leastWriterOverFloorRounds: eventRounds.map((r) => r.leastWriterOverFloor),
        agentOverLeastWriterRounds: eventRounds.map((r) => r.agentOverLeastWriter),
      },
    };
  } finally {
    simHns?.restore();
    await leastWriter?.stop();
    await baseline?.stop();
    await a?.stop();
    await api.close();
  }
}

export async function run({ quick, large }) {
  // BENCH_CHURN_LARGE_ONLY=1 (with --with-20k or --with-50k): the larger sizes alone, for A/B runs of one size.
  const at5k = process.env.BENCH_CHURN_LARGE_ONLY === '1' && large.length > 0 ? undefined : await churnAt(5000, { quick, short: false });
  const f = at5k?.figures ?? {};
  const sizes = at5k ? { 5000: at5k } : {};
  const summary = {
    cpu_ms_per_node_event_5k: f.cpuMsPerNodeEvent,
    event_to_dataplane_p50_ms: f.p50ms,
    hns_reads_per_node_event: f.readsPerNodeEvent,
    status_storm_cpu_pct: f.stormCpuPct,
    status_storm_client_node_watch_cpu_pct: f.stormWatchCpuPct,
    status_storm_over_client_node_watch: f.stormOverWatch,
    status_storm_over_least_writer: f.stormOverLeastWriter,
    churn_cpu_pct: f.churnCpuPct,
    churn_client_node_watch_cpu_pct: f.churnWatchCpuPct,
    churn_over_client_node_watch: f.churnOverWatch,
    agent_cpu_ms_per_node_event_5k: f.agentCpuMsPerNodeEvent,
    churn_agent_over_client_node_watch: f.churnAgentOverWatch,
    wakeup_cpu_ms: f.wakeupMs,
    client_node_watch_plus_wakeup_ms_per_node_event_5k: f.watchPlusWakeupMsPerNodeEvent,
    agent_cpu_per_node_event_over_floor_5k: f.agentOverFloor,
    least_writer_cpu_ms_per_node_event: f.leastWriterCpuMsPerNodeEvent,
    least_writer_cpu_per_node_event_over_floor: f.leastWriterOverFloor,
    agent_cpu_per_node_event_over_least_writer: f.agentOverLeastWriter,
  };
  for (const n of large) {
    const at = await churnAt(n, { quick, short: quick });
    sizes[n] = at;
    const g = at.figures;
    const k = `${n / 1000}k`;
    Object.assign(summary, {
      [`cpu_ms_per_node_event_${k}`]: g.cpuMsPerNodeEvent,
      [`agent_cpu_ms_per_node_event_${k}`]: g.agentCpuMsPerNodeEvent,
      [`client_node_watch_plus_wakeup_ms_per_node_event_${k}`]: g.watchPlusWakeupMsPerNodeEvent,
      [`agent_cpu_per_node_event_over_floor_${k}`]: g.agentOverFloor,
      [`least_writer_cpu_ms_per_node_event_${k}`]: g.leastWriterCpuMsPerNodeEvent,
      [`least_writer_cpu_per_node_event_over_floor_${k}`]: g.leastWriterOverFloor,
      [`agent_cpu_per_node_event_over_least_writer_${k}`]: g.agentOverLeastWriter,
      [`churn_${k}_agent_over_client_node_watch`]: g.churnAgentOverWatch,
      [`status_storm_${k}_over_client_node_watch`]: g.stormOverWatch,
      [`status_storm_${k}_over_least_writer`]: g.stormOverLeastWriter,
      [`churn_${k}_over_client_node_watch`]: g.churnOverWatch,
    });
  }
  return {
    sizes,
    summary,
    notes: [
      'Before the measured phases, a warm-up of node adds/deletes (40/s, 3,200 of them) and status updates (50/s, 4,000) that is not measured: the agent and both baselines are measured in their steady state, their once-per-event functions optimized (docs/performance.md, "CPU per node event against the least writer (session 14)").',
      'Resync disabled during churn (resyncMs 1h) so every dataplane call is attributable to an event.',
      'Node events alternate delete-oldest / add-new; the API server runs in its own process and generates the churn; CPU is the agent process only (the bench harness in it is idle).',
      "reads/writes: the agent's flannel_dataplane_calls_total by op (reads = hns get/list, routes.list; writes = hns add/remove/create/delete, routes add/remove).",
      "CPU per node event includes the simulated HNS (simHnsMsPerNodeEvent), which runs in the agent process here and in HNS on Windows; agentCpuMsPerNodeEvent and churnAgentOverWatch leave it out: the time spent in its policy store (simHnsStoreMsPerNodeEvent) and in the synchronous part of each HcnModifyNetwork before its modelled latency (the parse, the checks, the call's count; it also arms the latency's timer, which the floor's wakeup counts too), measured in the same run; its garbage stays in. agentOverFloorStoreOnly leaves out the policy store alone, the definition before 5 December.",
      `The figure's phases (idle, node add/del 10/s) run in rounds (${quick ? 7 : 3}; BENCH_CHURN_ROUNDS=n sets them); each idle phase is as long as a node add/del phase and run the same way, and the idle rate subtracted is pooled over the rounds' idle phases; the node-event figures are the median round's (by agentOverFloor), agentOverFloorRounds every round's.`,
      "wakeupMs: one idle timer wakeup of a Node process on this machine (lib/wakeup-child.mjs), measured in the same run. The agent wakes twice per node event it writes (the watch line, then the HNS call's return), the bare watch once: watchPlusWakeupMsPerNodeEvent is the bare watch's figure plus one wakeup, the floor of an agent that makes one asynchronous call per event; agentOverFloor is agentCpuMsPerNodeEvent over it.",
      "stormOverLeastWriter (status_storm_*_over_least_writer): the agent's process's CPU share in the status-only storm over the least writer's whole process's: a peer-keeping consumer of the same watch that keeps a Map of its peers and a simulated HNS holding their policies, as the agent's process does; no target (docs/performance.md, \"The storm at 20,000 Nodes: the heap per peer (session 13)\").",
      "leastWriterCpuMsPerNodeEvent: the least writer's CPU per node event (lib/least-writer-child.mjs: the bare watch, a Map of each Node's podCIDR, public-ip and backend-data, and on a lease change the agent's RemoteSubnetRoute request awaited on its own simulated HNS with the agent's latency model), net of its idle rate and of its simulated HNS's CPU as the agent's figure is; it wakes twice per node event, as the agent does. leastWriterOverFloor is it over watchPlusWakeupMsPerNodeEvent (what the necessary work costs beyond the floor), agentOverLeastWriter the agent's figure over it (the agent's own overhead); each the median over the rounds (of each round's same-run figure), *Rounds every round's.",
      large.length === 0
        ? 'No 20,000- or 50,000-Node run (quick mode without --with-20k or --with-50k).'
        : quick
          ? 'Quick mode: the larger clusters have only the phases with a target (idle, node add/del, status-only).'
          : 'Full mode: every phase at every size.',
    ],
  };
}

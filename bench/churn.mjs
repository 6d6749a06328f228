// Benchmark 3: node events and churn on a 5k-node cluster (vxlan; the simulated HNS costs 5 ms per call).
// Phases (after an unmeasured warm-up of the same kinds of events): idle and node adds/deletes alone at 10/s,
// in rounds of one idle phase and two node add/del phases (the figure pools every node add/del phase: its CPU
// summed over their events, docs/performance.md "How precise the CPU per node event is"); adds/deletes plus status-only updates (kubelet heartbeats) at 17/s and at 500/s; status-only updates alone
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
import { PerformanceObserver, constants, performance } from 'node:perf_hooks';
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

/**
 * The idle wakeups of a Node process on this machine (lib/wakeup-child.mjs), `wakeups` of them at 100 ms,
 * started (its startup done) when this resolves; `report()` answers {cpuMs, wakeups} once they are done.
 */
export async function startWakeupProbe(wakeups) {
  const child = fork(join(BENCH_DIR, 'lib', 'wakeup-child.mjs'), [String(wakeups)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise((_, reject) => child.once('exit', (code) => code !== 0 && reject(new Error(`wakeup probe exited ${code}`))));
  const next = () => Promise.race([new Promise((resolve) => child.once('message', resolve)), exited]);
  await next();
  return {
    report: () => {
      const answer = next();
      child.send({ report: true });
      return answer;
    },
  };
}

/**
 * The machine's busy CPU ms so far, every process's (/proc/stat's first line, in clock ticks of 10 ms:
 * all but idle and iowait; proc(5)), to tell what the other processes on the machine did in a phase. Null
 * without /proc.
 */
function hostBusyMs() {
  try {
    const [, user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).map(Number);
    return (user + nice + system + irq + softirq + steal) * 10;
  } catch {
    return null;
  }
}

/**
 * BENCH_CHURN_PROFILE=<prefix>: V8's sampler (100 µs) over each node add/del round's changes, written to
 * <prefix>.<nodes>.<round>.<part>.cpuprofile (docs/performance.md, "CPU per node event at 5,000 Nodes");
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
    // The figure's phases run in `rounds` rounds of one idle phase, with the wakeup probe running in it,
    // and two node add/del phases. The figure pools every node add/del phase (their CPU over all their
    // events), the idle rate and the wakeup pool every idle phase. The spread of single phases is the
    // agent's own CPU, above all in the phase right after an idle phase (sd 0.31 ms an event there, 0.07
    // in the next), more than the target's margin; the wakeup probe's own fixed cost, spread over 20
    // wakeups until session 15, put the floor 10% too high (docs/performance.md, "How precise the CPU per
    // node event is (session 15)").
    const rounds = Number(process.env.BENCH_CHURN_ROUNDS ?? (quick ? 5 : 3));
    const phases = [
      ...Array.from({ length: rounds }, (_, round) => [
        { name: 'idle', addDelPerSec: 0, statusPerSec: 0, ms: idleMs, round },
        { name: 'node add/del 10/s', addDelPerSec: 10, statusPerSec: 0, round, part: 1 },
        { name: 'node add/del 10/s', addDelPerSec: 10, statusPerSec: 0, round, part: 2 },
      ]).flat(),
      { name: 'add/del 10/s + status 17/s', addDelPerSec: 10, statusPerSec: 17, long: true },
      { name: 'add/del 10/s + status 500/s', addDelPerSec: 10, statusPerSec: 500, long: true },
      { name: 'status-only 500/s', addDelPerSec: 0, statusPerSec: 500 },
    ].filter((ph) => !(short && ph.long));
    const rows = [];
    const gc = gcWatch();
    // The wakeups of the idle phase before (per phase), and of all idle phases so far (pooled).
    let wakeupMs = 0;
    const wakeups = { cpuMs: 0, n: 0 };
    const latencies = new Map();
    for (const ph of phases) {
      const ms = ph.ms ?? durationMs;
      // A wakeup every 100 ms through the idle phase, its startup before it.
      const probe = ph.name === 'idle' ? await startWakeupProbe(Math.floor((ms - 1000) / 100)) : null;
      log(`churn: ${n} nodes, ${ph.name}${ph.round === undefined ? '' : ` (round ${ph.round + 1}${ph.part ? `, ${ph.part} of 2` : ''})`} for ${ms / 1000}s`);
      const gc0 = gc.sample();
      const calls0 = await dataplaneCallsFromMetrics(a.metrics);
      const reconnects0 = await metricSum(a.metrics, METRIC.apiReconnects);
      const simMs0 = simHns.storeMs();
      const simCallMs0 = simHns.callMs();
      const base0 = await baseline.cpu();
      const least0 = await leastWriter.cpu();
      const word = ph.name.split(' ')[0];
      const profiled = PROFILE && (PROFILE_PHASES?.includes(word) ?? ph.name === 'node add/del 10/s');
      const profileFile = `${PROFILE}.${n}.${[PROFILE_PHASES && word, ph.round !== undefined && ph.round + 1, ph.part].filter(Boolean).join('.')}.cpuprofile`;
      if (profiled) await profileStart();
      const threads0 = threadCpuMs();
      const host0 = hostBusyMs();
      const hostT0 = performance.now();
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
      const host = hostBusyMs();
      const hostWallMs = performance.now() - hostT0;
      const base1 = await baseline.cpu();
      const least1 = await leastWriter.cpu();
      if (probe) {
        const w = await probe.report();
        wakeupMs = w.cpuMs / w.wakeups;
        wakeups.cpuMs += w.cpuMs;
        wakeups.n += w.wakeups;
      }
      // Let the last changes land (they are timed from the API change, not from now); an idle phase has none.
      if (!probe) await sleep(1000);
      const lat = [];
      let missing = 0;
      for (const ev of res.events) {
        const t = writes[ev.type].get(ev.prefix);
        if (t === undefined || t < ev.t) missing++;
        else lat.push(t - ev.t);
      }
      const calls = diffCalls(await dataplaneCallsFromMetrics(a.metrics), calls0);
      const gcs = gc.since(gc0);
      latencies.set(rows.length, lat);
      rows.push({
        phase: ph.name,
        ...(ph.round === undefined ? {} : { round: ph.round + 1 }),
        ...(ph.part === undefined ? {} : { part: ph.part }),
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
        // The rest of the machine's CPU in the phase and its drain (the API server's and other users'), % of one
        // core: /proc/stat's busy time less the agent's, the bare watch's and the least writer's.
        othersCpuPct: host0 === null ? null : r1(((host - host0 - c.cpuMs - (base1.cpuMs - base0.cpuMs) - (least1.cpuMs - least0.cpuMs)) / hostWallMs) * 100),
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
    const derive = (row) => {
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
      return { agentMs, floorMs: watchMs + wake, leastMs };
    };
    for (const row of rows) derive(row);
    // The figure: every node add/del phase pooled, their CPU summed over their events, each phase's CPU net
    // of the pooled idle rate, the floor's wakeup the pooled one. `...Se`: its standard error over the
    // phases (the ratio of two sums: sqrt(sum (a_i - R f_i)^2 / (k (k - 1))) / mean f, a and f each phase's
    // CPU ms, k phases): the figure within about two of them of the quantity it estimates.
    const eventRounds = rows.filter((r) => r.phase === 'node add/del 10/s');
    const sumOf = (f) => eventRounds.reduce((t, r) => t + f(r), 0);
    const pooledWakeupMs = wakeups.cpuMs / wakeups.n;
    const rawKeys = ['seconds', 'cpuMs', 'baseCpuMs', 'simMs', 'simCallMs', 'leastCpuMs', 'leastSimMs'];
    const pooledRaw = { ...Object.fromEntries(rawKeys.map((k) => [k, sumOf((r) => r.raw[k])])), wakeupMs: pooledWakeupMs };
    const poolLat = eventRounds.flatMap((r) => latencies.get(rows.indexOf(r)));
    const events = {
      phase: 'node add/del 10/s, pooled',
      raw: pooledRaw,
      nodeEvents: sumOf((r) => r.nodeEvents),
      p50ms: r1(percentile(poolLat, 50)),
      readsPerNodeEvent: r2(sumOf((r) => r.reads) / sumOf((r) => r.nodeEvents)),
    };
    derive(events);
    // Each phase's terms in CPU ms, as the pooled figure counts them, for the standard errors.
    const terms = eventRounds.map((r) => derive({ raw: { ...r.raw, wakeupMs: pooledWakeupMs }, nodeEvents: r.nodeEvents }));
    const stdErr = (num, den) => {
      const k = terms.length;
      const R = terms.reduce((t, x) => t + num(x), 0) / terms.reduce((t, x) => t + den(x), 0);
      const meanDen = terms.reduce((t, x) => t + den(x), 0) / k;
      return k > 1 ? r2(Math.sqrt(terms.reduce((t, x) => t + (num(x) - R * den(x)) ** 2, 0) / (k * (k - 1))) / meanDen) : null;
    };
    gc.stop();
    const held = programmedPrefixes(a.sim, 'vxlan');
    const { alive } = await api.call('alive');
    const want = new Set(alive.map((i) => peer(i).subnet));
    const equal = held.size === want.size && [...want].every((p) => held.has(p));
    table(
      `Churn on ${n} nodes (vxlan; agent process CPU, per node event net of idle; baseline = a bare client-node Watch of the same Nodes; latency = API change -> HNS holds it)`,
      rows.map(({ callsByOp: _c, raw: _r, ...r }) => r),
    );
    const agentOverFloorSe = stdErr(
      (x) => x.agentMs,
      (x) => x.floorMs,
    );
    console.log(
      `agent / floor ${events.agentOverFloor} ± ${agentOverFloorSe} (standard error), ${eventRounds.length} node add/del phases pooled; the phases': ${eventRounds.map((r) => r.agentOverFloor).join(', ')}`,
    );
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
        agentOverFloorSe,
        // Every phase's own figure (against its idle phase's wakeup), and their median: the estimator until
        // session 15, kept beside the pooled one.
        agentOverFloorRounds: eventRounds.map((r) => r.agentOverFloor),
        agentOverFloorMedianOfPhases: median(eventRounds.map((r) => r.agentOverFloor)),
        // The pooled figure of the first node add/del phases of the rounds (each right after an idle phase,
        // as every phase was until session 15) and of the second ones (after 8 s of churn).
        agentOverFloorByPart: [1, 2].map((part) => {
          const of = terms.filter((_, i) => eventRounds[i].part === part);
          return r2(of.reduce((t, x) => t + x.agentMs, 0) / of.reduce((t, x) => t + x.floorMs, 0));
        }),
        // The definition before 5 December (only the policy store's time left out).
        agentOverFloorStoreOnly: events.agentOverFloorStoreOnly,
        // The least writer's, pooled as the agent's, and every phase's.
        leastWriterCpuMsPerNodeEvent: events.leastWriterCpuMsPerNodeEvent,
        leastWriterOverFloor: events.leastWriterOverFloor,
        leastWriterOverFloorSe: stdErr(
          (x) => x.leastMs,
          (x) => x.floorMs,
        ),
        agentOverLeastWriter: events.agentOverLeastWriter,
        agentOverLeastWriterSe: stdErr(
          (x) => x.agentMs,
          (x) => x.leastMs,
        ),
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
      `The figure's phases run in rounds (${quick ? 5 : 3}; BENCH_CHURN_ROUNDS=n sets them) of one idle phase and two node add/del 10/s phases; each idle phase is as long as a node add/del phase and run the same way, and the idle rate subtracted is pooled over the idle phases. The node-event figures pool every node add/del phase (CPU summed over their events; the latency's p50 over all their events); *Se is a pooled ratio's standard error over the phases; agentOverFloorRounds, leastWriterOverFloorRounds and agentOverLeastWriterRounds are every phase's own, agentOverFloorMedianOfPhases their median (the estimator until session 15). othersCpuPct: the rest of the machine's CPU in each phase (/proc/stat less the three measured processes), % of one core.`,
      "wakeupMs: one idle timer wakeup of a Node process on this machine (lib/wakeup-child.mjs), measured in the same run, through each idle phase (a wakeup every 100 ms); each phase's figure uses its round's, the pooled figures all idle phases' wakeups. The agent wakes twice per node event it writes (the watch line, then the HNS call's return), the bare watch once: watchPlusWakeupMsPerNodeEvent is the bare watch's figure plus one wakeup, the floor of an agent that makes one asynchronous call per event; agentOverFloor is agentCpuMsPerNodeEvent over it.",
      "stormOverLeastWriter (status_storm_*_over_least_writer): the agent's process's CPU share in the status-only storm over the least writer's whole process's: a peer-keeping consumer of the same watch that keeps a Map of its peers and a simulated HNS holding their policies, as the agent's process does; no target (docs/performance.md, \"The storm at 20,000 Nodes: the heap per peer (session 13)\").",
      "leastWriterCpuMsPerNodeEvent: the least writer's CPU per node event (lib/least-writer-child.mjs: the bare watch, a Map of each Node's podCIDR, public-ip and backend-data, and on a lease change the agent's RemoteSubnetRoute request awaited on its own simulated HNS with the agent's latency model), net of its idle rate and of its simulated HNS's CPU as the agent's figure is; it wakes twice per node event, as the agent does. leastWriterOverFloor is it over watchPlusWakeupMsPerNodeEvent (what the necessary work costs beyond the floor), agentOverLeastWriter the agent's figure over it (the agent's own overhead); each pooled over the node add/del phases as agentOverFloor is, *Rounds every phase's.",
      large.length === 0
        ? 'No 20,000- or 50,000-Node run (quick mode without --with-20k or --with-50k).'
        : quick
          ? 'Quick mode: the larger clusters have only the phases with a target (idle, node add/del, status-only).'
          : 'Full mode: every phase at every size.',
    ],
  };
}

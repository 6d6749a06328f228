// Benchmark 6: upstream flanneld's Windows strategy against this agent's, on the same simulated dataplane
// and the same event stream. Upstream (flannel pkg/backend/vxlan/vxlan_network_windows.go
// handleSubnetEvents, pkg/backend/route_network_windows.go + pkg/routing/router_windows.go) handles
// lease events one by one: vxlan re-reads the HNS network (GetNetworkByName) for every event and adds or
// removes one RemoteSubnetRoute policy per HcnModifyNetwork; host-gw starts a PowerShell process for
// every route operation (Get-NetRoute, then New-NetRoute / Remove-NetRoute), modelled as 200 ms each
// (the measured cost of a PowerShell start; nothing is spawned). Failed writes are logged, not retried.
//
// Both strategies run on a virtual clock: every modelled latency (HNS 5 ms + 0.1 ms/item, routes 0.2 ms,
// PowerShell 200 ms) advances simulated time exactly, so a 5k-node upstream host-gw cold start (~33 min
// of sleeping) takes seconds. CPU time is not counted in virtual time, which favours whichever strategy
// burns more CPU (upstream's per-event network re-read); this agent's real-time figures are in
// cold-start.json and churn.json. A small real-time run cross-checks the virtual clock.
/* global setImmediate */
import { HnsClient } from '../dist/hns/client.js';
import { SimulatedHnsTransport } from '../dist/simulator/hns.js';
import { SimulatedDataplane } from '../dist/simulator/model.js';
import { SimulatedRouteTable } from '../dist/simulator/host.js';
import { PeerProblems } from '../dist/peers/problems.js';
import { Reconciler } from '../dist/reconcile/reconciler.js';
import { remoteSubnetRouteDriver, remoteSubnetRouteFor, sameRemoteSubnetRoute } from '../dist/backends/vxlan/policies.js';
import { hostGwRouteDriver, ROUTE_METRIC } from '../dist/backends/hostgw/routes.js';
import { sleepAfter, systemClock } from '../dist/basics/clock.js';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { COLD_LATENCY, NETWORK, OWN_SUBNET, RESULTS_DIR, benchPeerStore, classifyCalls, log, peer, percentile, r1, table } from './lib/common.mjs';

export const POWERSHELL_MS = 200;
const NET_NAME = 'flannel.4096';
const VTEP = '0e:2a:ac:10:00:01';

/** A discrete-event clock: sleeps resolve in time order when the process has nothing else to do. */
class VirtualClock {
  constructor() {
    this.t = 0;
    this.timers = [];
  }
  now() {
    return this.t;
  }
  sleep(ms, signal) {
    return sleepAfter((m, fn) => this.after(m, fn), ms, signal);
  }
  after(ms, fn) {
    const timer = { at: this.t + Math.max(0, ms), resolve: fn };
    this.timers.push(timer);
    return () => (this.timers = this.timers.filter((x) => x !== timer));
  }
  /** Advance time until `done()` or no timer is left. */
  async drive(done) {
    for (;;) {
      await new Promise((r) => setImmediate(r));
      if (done()) return;
      if (this.timers.length === 0) {
        await new Promise((r) => setTimeout(r, 1));
        if (this.timers.length === 0 && !done()) throw new Error('virtual clock: nothing scheduled and not done');
        continue;
      }
      let next = this.timers[0];
      for (const x of this.timers) if (x.at < next.at) next = x;
      this.t = next.at;
      const due = this.timers.filter((x) => x.at <= this.t);
      this.timers = this.timers.filter((x) => x.at > this.t);
      for (const x of due) x.resolve();
    }
  }
}

function leaseOf(i) {
  const p = peer(i);
  return { key: p.name, subnet: p.subnet, publicIP: p.publicIP, backendType: 'vxlan', backendData: { VNI: 4096, VtepMAC: VTEP } };
}

/** A simulated Windows node with an Overlay (vxlan) network or an L2Bridge management vNIC (host-gw). */
async function makeNode(clock) {
  const sim = new SimulatedDataplane({ latency: COLD_LATENCY, clock });
  const net = sim.createNetwork('bench', { Name: NET_NAME, Type: 'Overlay', Policies: [], Ipams: [] });
  // No call timeout: its timer is a real one, and a call left sleeping on the virtual clock after the
  // run would hold the process for the whole timeout.
  const hns = new HnsClient(new SimulatedHnsTransport(sim), { clock });
  const routes = new SimulatedRouteTable(sim);
  const ifIndex = sim.listAdapters()[0].InterfaceIndex;
  return { sim, hns, routes, netId: net.ID, ifIndex };
}

const routeFor = (i, ifIndex) => ({ destinationPrefix: peer(i).subnet, nextHop: peer(i).publicIP, interfaceIndex: ifIndex, metric: ROUTE_METRIC });

/** Upstream: one handler, events in arrival order, each handled completely before the next. */
function upstreamStrategy(backend, node, clock, onDone) {
  const queue = [];
  let wake;
  let failures = 0;
  const handle = async (ev) => {
    if (backend === 'vxlan') {
      const net = await node.hns.getNetworkByName(NET_NAME); // re-read for every event
      const pol = remoteSubnetRouteFor(leaseOf(ev.i));
      const existing = (net?.Policies ?? []).find((p) => p.Type === 'RemoteSubnetRoute' && p.Settings?.DestinationPrefix === pol.Settings.DestinationPrefix);
      if (ev.type === 'add') {
        if (existing && sameRemoteSubnetRoute(existing.Settings, pol.Settings)) return;
        await node.hns.addNetworkPolicies(net.ID, [pol]);
      } else if (existing) {
        await node.hns.removeNetworkPolicies(net.ID, [existing]);
      }
      return;
    }
    const r = routeFor(ev.i, node.ifIndex);
    await clock.sleep(POWERSHELL_MS); // powershell Get-NetRoute
    const all = await node.routes.list(node.ifIndex);
    const existing = all.find((x) => x.destinationPrefix === r.destinationPrefix);
    if (ev.type === 'add') {
      if (existing && existing.nextHop === r.nextHop) return;
      if (existing) {
        await clock.sleep(POWERSHELL_MS); // Remove-NetRoute
        await node.routes.remove(existing);
      }
      await clock.sleep(POWERSHELL_MS); // New-NetRoute
      await node.routes.add(r);
    } else if (existing) {
      await clock.sleep(POWERSHELL_MS); // Remove-NetRoute
      await node.routes.remove(existing);
    }
  };
  (async () => {
    for (;;) {
      while (queue.length === 0) await new Promise((r) => (wake = r));
      const ev = queue.shift();
      try {
        await handle(ev);
      } catch {
        failures++; // upstream logs and moves on
      }
      onDone(ev, clock.now());
    }
  })();
  return {
    push(ev) {
      queue.push(ev);
      wake?.();
    },
    idle: () => queue.length === 0,
    failures: () => failures,
  };
}

/** This agent: an event writes only its own delta (no read); the full read and diff happen at resync. */
function agentStrategy(backend, node, clock, live) {
  const driver =
    backend === 'vxlan'
      ? remoteSubnetRouteDriver(node.hns, node.netId)
      : hostGwRouteDriver({ routes: node.routes, network: NETWORK, ownSubnet: OWN_SUBNET, vnic: { index: node.ifIndex, refresh: async () => false } });
  const itemOf = (i) => (backend === 'vxlan' ? remoteSubnetRouteFor(leaseOf(i)) : routeFor(i, node.ifIndex));
  const peers = benchPeerStore(backend, itemOf, (d) => driver.desiredKey(d));
  const sink = new PeerProblems({ driver: driver.name, clock, owner: (k) => peers.store.owner(k) });
  const rec = new Reconciler({ driver, desired: peers.store, sink, clock });
  const ac = new AbortController();
  void rec.run(ac.signal);
  return {
    push(ev) {
      if (ev.type === 'add') live.add(ev.i);
      else live.delete(ev.i);
      peers.set(ev.i, ev.type === 'add');
    },
    snapshot() {
      peers.list([...live]);
    },
    stop: () => ac.abort(),
  };
}

/** Cold start with n peers, then churn at `perSec` node adds/deletes for `seconds`. */
async function simulate(strategy, backend, n, perSec, seconds, clock = new VirtualClock()) {
  const node = await makeNode(clock === systemClock ? undefined : clock);
  const writesAt = new Map();
  const hook = (kind, prefix) => writesAt.set(`${kind} ${prefix}`, clock.now());
  const mod = node.sim.modifyNetworkPolicies.bind(node.sim);
  node.sim.modifyNetworkPolicies = (op, id, type, policies) => {
    mod(op, id, type, policies);
    for (const p of policies) hook(type === 'Add' ? 'add' : 'remove', p.Settings?.DestinationPrefix);
  };
  const cr = node.sim.createRoute.bind(node.sim);
  node.sim.createRoute = (r) => {
    cr(r);
    hook('add', r.DestinationPrefix);
  };
  const dr = node.sim.deleteRoute.bind(node.sim);
  node.sim.deleteRoute = (r) => {
    dr(r);
    hook('remove', r.DestinationPrefix);
  };
  const drive =
    clock instanceof VirtualClock
      ? (done) => clock.drive(done)
      : async (done) => {
          while (!done()) await new Promise((r) => setTimeout(r, 5));
        };

  const cpu0 = process.cpuUsage();
  const live = new Set();
  let handled = 0;
  const s = strategy === 'upstream' ? upstreamStrategy(backend, node, clock, () => handled++) : agentStrategy(backend, node, clock, live);
  const calls0 = new Map(node.sim.calls);
  // Cold start: the initial list, as N add events (upstream) or one snapshot (agent).
  const t0 = clock.now();
  if (strategy === 'upstream') for (let i = 1; i <= n; i++) s.push({ type: 'add', i });
  else {
    for (let i = 1; i <= n; i++) live.add(i);
    s.snapshot();
  }
  const programmed = () => [...Array(n).keys()].every((k) => writesAt.has(`add ${peer(k + 1).subnet}`));
  await drive(() => (strategy === 'upstream' ? handled >= n : writesAt.size >= n && programmed()));
  const coldS = (clock.now() - t0) / 1000;
  const coldCalls = classifyCalls(new Map([...node.sim.calls].map(([k, v]) => [k, v - (calls0.get(k) ?? 0)])));

  // Churn: alternate delete-oldest / add-new every 1/perSec s, arrivals on the (virtual) clock.
  const events = [];
  const total = Math.round(perSec * seconds);
  const tStart = clock.now();
  let oldest = 1;
  let next = n + 1;
  for (let k = 0; k < total; k++) events.push({ at: tStart + (k * 1000) / perSec, ...(k % 2 === 0 ? { type: 'remove', i: oldest++ } : { type: 'add', i: next++ }) });
  const calls1 = new Map(node.sim.calls);
  let fed = 0;
  const feeder = (async () => {
    for (const ev of events) {
      const wait = ev.at - clock.now();
      if (wait > 0) await clock.sleep(wait);
      s.push(ev);
      fed++;
    }
  })();
  const landed = () => events.every((ev) => writesAt.has(`${ev.type} ${peer(ev.i).subnet}`) && writesAt.get(`${ev.type} ${peer(ev.i).subnet}`) >= ev.at);
  await drive(() => fed === events.length && (strategy === 'upstream' ? handled >= n + events.length : landed()));
  await feeder;
  const lat = events.map((ev) => writesAt.get(`${ev.type} ${peer(ev.i).subnet}`) - ev.at);
  const churnCalls = classifyCalls(new Map([...node.sim.calls].map(([k, v]) => [k, v - (calls1.get(k) ?? 0)])));
  const cpu = process.cpuUsage(cpu0);
  s.stop?.();
  const spawns =
    backend === 'host-gw' && strategy === 'upstream'
      ? {
          cold: (coldCalls.byOp['GetIpForwardTable2'] ?? 0) + (coldCalls.byOp['CreateIpForwardEntry2'] ?? 0) + (coldCalls.byOp['DeleteIpForwardEntry2'] ?? 0),
          churn: (churnCalls.byOp['GetIpForwardTable2'] ?? 0) + (churnCalls.byOp['CreateIpForwardEntry2'] ?? 0) + (churnCalls.byOp['DeleteIpForwardEntry2'] ?? 0),
        }
      : { cold: 0, churn: 0 };
  return {
    strategy,
    backend,
    peers: n,
    coldStartMs: r1(coldS * 1000),
    coldCalls: coldCalls.writes + coldCalls.reads + coldCalls.handles,
    coldPowerShell: spawns.cold,
    churnEvents: events.length,
    churnP50ms: r1(percentile(lat, 50)),
    churnP99ms: r1(percentile(lat, 99)),
    churnBacklogEndS: r1(Math.max(0, clock.now() - (tStart + seconds * 1000)) / 1000),
    churnCallsPerEvent: r1((churnCalls.writes + churnCalls.reads + churnCalls.handles) / events.length),
    churnPowerShellPerEvent: r1(spawns.churn / events.length),
    realCpuS: r1((cpu.user + cpu.system) / 1e6),
  };
}

export async function run({ quick }) {
  const n = quick ? 1000 : 5000;
  const perSec = 10;
  const seconds = quick ? 20 : 60;
  const rows = [];
  for (const backend of ['vxlan', 'host-gw']) {
    for (const strategy of ['upstream', 'agent']) {
      log(`upstream comparison: ${strategy} ${backend}, ${n} peers, churn ${perSec}/s for ${seconds}s (virtual time)`);
      rows.push(await simulate(strategy, backend, n, perSec, seconds));
    }
  }
  table(`Upstream's event-by-event strategy vs this agent (same simulated dataplane, virtual time; ${n} peers, then ${perSec} node adds/deletes per s for ${seconds} s)`, rows);
  const ratio = (backend, field) => {
    const u = rows.find((r) => r.strategy === 'upstream' && r.backend === backend)[field];
    const a = rows.find((r) => r.strategy === 'agent' && r.backend === backend)[field];
    return a > 0 ? r1(u / a) : null;
  };
  const ratios = {
    vxlanColdStart: ratio('vxlan', 'coldStartMs'),
    hostgwColdStart: ratio('host-gw', 'coldStartMs'),
    vxlanChurnP99: ratio('vxlan', 'churnP99ms'),
    hostgwChurnP99: ratio('host-gw', 'churnP99ms'),
  };
  console.log(`upstream / agent: ${JSON.stringify(ratios)}`);

  // The agent's real-time cold start from benchmark 1, when it ran at the same size.
  let agentRealTime;
  const cs = join(RESULTS_DIR, 'cold-start.json');
  if (existsSync(cs)) {
    const data = JSON.parse(readFileSync(cs, 'utf8'));
    agentRealTime = (data.coldStart ?? []).filter((r) => r.nodes === n).map((r) => ({ backend: r.backend, programmedS: r1(r.programmedMs / 1000) }));
  }

  // Cross-check the virtual clock against real sleeping at a small size.
  const small = quick ? 10 : 25;
  log(`virtual-clock cross-check: upstream host-gw, ${small} peers, real time`);
  const real = await simulate('upstream', 'host-gw', small, 0, 0, systemClock);
  const virt = await simulate('upstream', 'host-gw', small, 0, 0);
  const crossCheck = { peers: small, realMs: real.coldStartMs, virtualMs: virt.coldStartMs };
  console.log(`virtual clock cross-check (upstream host-gw cold start, ${small} peers): real ${real.coldStartMs} ms, virtual ${virt.coldStartMs} ms`);

  return {
    peers: n,
    churnPerSec: perSec,
    churnSeconds: seconds,
    powershellMs: POWERSHELL_MS,
    latencyModel: COLD_LATENCY,
    rows,
    ratios,
    agentRealTimeColdStart: agentRealTime,
    virtualClockCrossCheck: crossCheck,
    notes: [
      'Virtual time: modelled latencies only, CPU excluded (favours upstream, whose per-event network re-read costs CPU that grows with the number of policies: see realCpuS).',
      'churnBacklogEndS: how long after the last churn event the strategy finished processing the queue (upstream host-gw needs 400 ms per event, so 10 events/s accumulate a backlog).',
    ],
  };
}

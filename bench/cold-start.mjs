// Benchmark 1: cold start to ready against a fake API server (real HTTP, separate process) holding N
// nodes, on a simulated HNS costing 5 ms per call + 0.1 ms per item and 0.2 ms per route call.
// Baselines: listing and decoding the same nodes with @kubernetes/client-node alone (CoreV1Api.listNode),
// and the floor of any list: the raw bytes of the same pages the agent asks for over a plain HTTPS GET,
// read and thrown away (lib/raw-list-child.mjs, a fresh process). Also: dataplane calls per peer, and
// RemoteSubnetRoute batch sizes against one policy per call.
/* global performance, setImmediate */
import { spawn } from 'node:child_process';
import http from 'node:http';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { HnsClient } from '../dist/hns/client.js';
import { SimulatedHnsTransport } from '../dist/simulator/hns.js';
import { SimulatedDataplane } from '../dist/simulator/model.js';
import { PeerProblems } from '../dist/peers/problems.js';
import { Reconciler } from '../dist/reconcile/reconciler.js';
import { POLICY_BATCH, remoteSubnetRouteDriver, remoteSubnetRouteFor } from '../dist/backends/vxlan/policies.js';
import { DEFAULT_LIST_PAGE_SIZE } from '../dist/subnet/kube/manager.js';
import { TYPED_PAGE_SIZE, TYPED_PAGED_FROM, typedListNodes } from './lib/typed-list.mjs';
import {
  ApiServerProcess,
  BENCH_DIR,
  benchPeerStore,
  classifyCalls,
  COLD_LATENCY,
  diffSimCalls,
  log,
  makeTmpDir,
  metricSum,
  peer,
  percentile,
  programmedPrefixes,
  r1,
  r2,
  startAgent,
  table,
  waitInSync,
  wallNow,
  writeResult,
} from './lib/common.mjs';

function readyz(port) {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/readyz', timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => {
      req.destroy();
      resolve(false);
    });
  });
}

async function listBaseline(kubeconfig, n, repeats) {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const api = kc.makeApiClient(CoreV1Api);
  const times = [];
  let items = 0;
  for (let i = 0; i < repeats; i++) {
    const t = performance.now();
    const list = await typedListNodes(api, n);
    times.push(performance.now() - t);
    items = list.items.length;
  }
  return { medianMs: r1(percentile(times, 50)), minMs: r1(Math.min(...times)), items, repeats, pageSize: n < TYPED_PAGED_FROM ? null : TYPED_PAGE_SIZE };
}

/** The raw bytes of the list, the agent's pages (lib/raw-list-child.mjs): wall ms, median of `repeats` fresh processes. */
async function rawListBaseline(kubeconfig, repeats) {
  const runs = [];
  for (let i = 0; i < repeats; i++) {
    runs.push(
      await new Promise((resolve, reject) => {
        const child = spawn(process.execPath, [join(BENCH_DIR, 'lib', 'raw-list-child.mjs'), kubeconfig, String(DEFAULT_LIST_PAGE_SIZE)], { stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        child.stdout.on('data', (d) => (out += d));
        child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.trim().split('\n').pop())) : reject(new Error(`raw-list-child exited with ${code}`))));
      }),
    );
  }
  runs.sort((a, b) => a.ms - b.ms);
  const med = runs[Math.floor(runs.length / 2)];
  return { medianMs: r1(med.ms), cpuMs: r1(med.cpuMs), bytes: med.bytes, pages: med.pages, repeats };
}

async function coldStart(n, backend, listRepeats = 3) {
  const dir = makeTmpDir();
  const api = await new ApiServerProcess().setup(dir, { peers: n, backend });
  try {
    let callsAtLease;
    const a = await startAgent({ api, backend, healthz: true });
    // Time /readyz by polling it over HTTP every 5 ms; snapshot the dataplane calls at the lease (the peers
    // are programmed from then on, while the list pages; subnet.env waits for the complete list).
    let tReadyz;
    const leaseWatch = (async () => {
      while (!a.milestones['lease acquired']) await new Promise((r) => setImmediate(r));
      callsAtLease = new Map(a.sim.calls);
    })();
    while (tReadyz === undefined) {
      if (await readyz(a.port)) tReadyz = wallNow();
      else await new Promise((r) => setTimeout(r, 5));
    }
    await leaseWatch;
    await waitInSync(a.agent);
    await new Promise((r) => setTimeout(r, 20)); // let the milestone log line land
    const tProgrammed = a.milestones['first reconcile pass done'] ?? wallNow();
    const held = programmedPrefixes(a.sim, backend).size;
    const applyCalls = classifyCalls(diffSimCalls(a.sim.calls, callsAtLease ?? new Map()));
    const passes = await metricSum(a.metrics, 'flannel_apply_passes_total');
    await a.stop();
    // The baseline after the agent: client-node's typed list of 20,000 heavy Nodes leaves about 1 GB of
    // garbage in this process, which an agent started after it paid for in GC (the agent ran 1.5x slower
    // here than the same agent alone in a fresh process).
    const baseline = await listBaseline(api.kubeconfig, n, listRepeats);
    const raw = await rawListBaseline(api.kubeconfig, listRepeats);
    const writesPerPeer = n > 0 ? applyCalls.writes / n : 0;
    const readsPerPass = passes > 0 ? applyCalls.reads / passes : applyCalls.reads;
    return {
      backend,
      nodes: n,
      subnetEnvMs: r1(a.milestones['wrote subnet.env'] - a.t0),
      readyzMs: r1(tReadyz - a.t0),
      listedMs: r1((a.milestones['node list synced'] ?? NaN) - a.t0),
      programmedMs: r1(tProgrammed - a.t0),
      peersHeld: held,
      baselineListMs: baseline.medianMs,
      rawListMs: raw.medianMs,
      rawListMB: r1(raw.bytes / 1e6),
      programmedVsList: r2((tProgrammed - a.t0) / baseline.medianMs),
      programmedVsRawList: r2((tProgrammed - a.t0) / raw.medianMs),
      applyPasses: passes,
      writes: applyCalls.writes,
      reads: applyCalls.reads,
      handleOps: applyCalls.handles,
      writesPerPeer: Math.round(writesPerPeer * 1000) / 1000,
      readsPerPass: r1(readsPerPass),
      callsCheck: writesPerPeer <= 1 && readsPerPass <= 3 ? 'ok' : 'CHECK',
      callsByOp: applyCalls.byOp,
    };
  } finally {
    await api.close();
  }
}

/** One reconcile pass adding n RemoteSubnetRoute policies with `batch` policies per HcnModifyNetwork. */
async function batchRun(n, batch) {
  const sim = new SimulatedDataplane({ latency: COLD_LATENCY });
  const net = sim.createNetwork('bench', { Name: 'flannel.4096', Type: 'Overlay', Policies: [], Ipams: [] });
  const hns = new HnsClient(new SimulatedHnsTransport(sim));
  const driver = remoteSubnetRouteDriver(hns, net.ID, batch);
  const itemOf = (i) => {
    const p = peer(i);
    return remoteSubnetRouteFor({ key: p.name, subnet: p.subnet, publicIP: p.publicIP, backendType: 'vxlan', backendData: { VNI: 4096, VtepMAC: '0e:2a:ac:10:00:01' } });
  };
  const peers = benchPeerStore('vxlan', itemOf, (d) => driver.desiredKey(d));
  const sink = new PeerProblems({ driver: driver.name, owner: (k) => peers.store.owner(k) });
  const rec = new Reconciler({ driver, desired: peers.store, sink, resyncMs: 3_600_000 });
  peers.list(Array.from({ length: n }, (_, i) => i + 1));
  const before = new Map(sim.calls);
  const t = performance.now();
  const r = await rec.pass();
  const ms = performance.now() - t;
  const calls = classifyCalls(diffSimCalls(sim.calls, before));
  const held = sim.getNetwork(net.ID).Policies.filter((p) => p.Type === 'RemoteSubnetRoute').length;
  return {
    peers: n,
    batch,
    ok: r.ok && held === n,
    ms: r1(ms),
    msPerPeer: Math.round((ms / n) * 1000) / 1000,
    modifyCalls: calls.byOp.HcnModifyNetwork ?? 0,
    totalCalls: calls.writes + calls.reads + calls.handles,
  };
}

export async function run({ quick, large }) {
  const sizes = [...(quick ? [1000, 5000] : [1000, 5000, 10000]), ...large];
  const rows = [];
  for (const n of sizes) {
    log(`cold start: ${n} nodes, vxlan`);
    // The large baselines take tens of seconds: once in quick mode.
    rows.push(await coldStart(n, 'vxlan', quick && n > 5000 ? 1 : 3));
  }
  const hostgwN = quick ? 1000 : 5000;
  log(`cold start: ${hostgwN} nodes, host-gw`);
  rows.push(await coldStart(hostgwN, 'host-gw'));
  table(
    `Cold start to ready (ms from agent start; baselines: client-node listNode of the same nodes, and the raw bytes of the agent's pages of ${DEFAULT_LIST_PAGE_SIZE} over HTTPS)`,
    rows.map(({ callsByOp: _callsByOp, ...r }) => r),
  );

  const batchN = quick ? 1000 : 5000;
  const sizesB = quick ? [1, 64, 256] : [1, 16, 64, 256, 1024];
  const batchRows = [];
  for (const b of sizesB) {
    log(`batch size ${b}, ${batchN} policies`);
    batchRows.push(await batchRun(batchN, b));
  }
  const one = batchRows.find((r) => r.batch === 1);
  for (const r of batchRows) r.speedupVsOnePerCall = r1(one.ms / r.ms);
  table(`RemoteSubnetRoute policies per HcnModifyNetwork (one pass, ${batchN} policies; current POLICY_BATCH = ${POLICY_BATCH})`, batchRows);

  const vxlanRows = rows.filter((r) => r.backend === 'vxlan');
  const at = (n) => vxlanRows.find((r) => r.nodes === n);
  return {
    latencyModel: COLD_LATENCY,
    summary: Object.fromEntries(
      [5000, ...large].flatMap((n) => [
        [`cold_start_${n / 1000}k_all_peers_over_list`, at(n).programmedVsList],
        [`cold_start_${n / 1000}k_all_peers_over_raw_list`, at(n).programmedVsRawList],
      ]),
    ),
    coldStart: rows,
    batching: { policies: batchN, policyBatch: POLICY_BATCH, rows: batchRows },
    notes: [
      `baselineListMs: client-node's CoreV1Api.listNode, one answer (from ${TYPED_PAGED_FROM} Nodes on pages of ${TYPED_PAGE_SIZE}: a longer answer does not fit in a V8 string). rawListMs: the same pages the agent asks for (${DEFAULT_LIST_PAGE_SIZE} Nodes), their bytes read and thrown away over a plain HTTPS GET in a fresh process: the floor of any client.`,
      'The network is built and the peers programmed while the list pages; subnet.env (and the annotations) wait for the complete list to say no older Node has the podCIDR, and /readyz for that list too. programmedMs is when every peer is in the dataplane.',
      'writes = HcnModifyNetwork / route create+delete calls during apply passes; reads = HcnQuery/Enumerate/GetIpForwardTable2; handleOps = HcnOpen/HcnClose (3 HNS calls per policy write or read).',
    ],
  };
}

export const name = 'cold-start';
export const fileName = 'cold-start';
void writeResult;

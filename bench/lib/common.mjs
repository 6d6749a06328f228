// Shared benchmark plumbing: the node population, the fake API server in a child process, agents on a
// simulated dataplane with hooks that time-stamp every dataplane write, tables and JSON results.
/* global performance */
import { execFileSync, fork } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import winston from 'winston';
import { Agent } from '../../dist/agent.js';
import { parseConfig } from '../../dist/config/parse.js';
import { SimulatedDataplane } from '../../dist/simulator/model.js';
import { simulatedSeams } from '../../dist/simulator/node.js';
import { Metrics } from '../../dist/basics/metrics.js';
import { PeerStore } from '../../dist/peers/store.js';
import { systemClock } from '../../dist/basics/clock.js';

export const BENCH_DIR = dirname(dirname(fileURLToPath(import.meta.url)));
export const RESULTS_DIR = join(BENCH_DIR, 'results');

// ---- the cluster shape --------------------------------------------------------------------------
// Network 10.0.0.0/8 with /24 node subnets holds 65,536 nodes (the 50,000-Node point and its churn);
// public IPs live in 172.16.0.0/12. The own node holds the first subnet.
export const NETWORK = '10.0.0.0/8';
export const OWN_SUBNET = '10.0.0.0/24';
export const OWN_NODE = 'win-bench-0';
export const OWN_IP = '172.31.255.2';
/** The own node's segment holds every peer's public IP (172.16.0.0/12): host-gw rejects an off-link next hop. */
export const OWN_PREFIX_LENGTH = 12;
export const VXLAN_NET_CONF = { Network: NETWORK, Backend: { Type: 'vxlan', VNI: 4096, Port: 4789 } };
export const HOSTGW_NET_CONF = { Network: NETWORK, Backend: { Type: 'host-gw' } };
export const VXLAN_NETWORK_NAME = 'flannel.4096';

/** Peer i (1-based): name, pod subnet, public IP. */
export function peer(i) {
  const base = 10 * 2 ** 24 + i * 256; // 10.0.0.0 + i * 256
  const ip = (n) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
  const pub = 172 * 2 ** 24 + 16 * 2 ** 16 + 10 + i; // 172.16.0.10 + i
  return { name: `node-${String(i).padStart(6, '0')}`, subnet: `${ip(base)}/24`, publicIP: ip(pub) };
}

// ---- time, stats, output -----------------------------------------------------------------------

/** Wall-clock milliseconds with sub-ms precision, comparable across processes on one machine. */
export const wallNow = () => performance.timeOrigin + performance.now();
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function percentile(values, p) {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  const idx = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[idx];
}

export const r1 = (x) => (x === null || x === undefined || Number.isNaN(x) ? null : Math.round(x * 10) / 10);
export const r2 = (x) => (x === null || x === undefined || Number.isNaN(x) ? null : Math.round(x * 100) / 100);
export const mb = (bytes) => r1(bytes / (1024 * 1024));

export function table(title, rows) {
  console.log(`\n## ${title}`);
  if (rows.length === 0) return;
  const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const cell = (v) => (v === undefined || v === null ? '-' : typeof v === 'number' ? String(v) : String(v));
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (vals) => '| ' + vals.map((v, i) => v.padEnd(widths[i])).join(' | ') + ' |';
  console.log(line(cols));
  console.log('|' + widths.map((w) => '-'.repeat(w + 2)).join('|') + '|');
  for (const r of rows) console.log(line(cols.map((c) => cell(r[c]))));
}

export function machine() {
  return { nproc: cpus().length, cpu: cpus()[0]?.model ?? 'unknown', node: process.version, platform: `${process.platform}-${process.arch}` };
}

export function writeResult(name, data) {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `${name}.json`);
  writeFileSync(file, JSON.stringify({ benchmark: name, date: new Date().toISOString(), machine: machine(), ...data }, null, 2) + '\n');
  return file;
}

export function log(msg) {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
}

// ---- the fake API server in a child process ------------------------------------------------------

let tlsMaterial;
/**
 * A self-signed server certificate for 127.0.0.1 (RSA 2048, as kubeadm's apiserver certificate) and a
 * random bearer token, made once per bench process with `openssl`.
 */
export function serverTls() {
  if (tlsMaterial) return tlsMaterial;
  const dir = mkdtempSync(join(tmpdir(), 'flanneld-bench-tls-'));
  const certFile = join(dir, 'apiserver.crt');
  const keyFile = join(dir, 'apiserver.key');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '1',
      '-subj',
      '/CN=kube-apiserver',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
    ],
    { stdio: 'ignore' },
  );
  tlsMaterial = { certFile, keyFile, token: randomBytes(24).toString('base64url') };
  return tlsMaterial;
}

/**
 * A FakeKubeApiServer in its own process (its CPU and memory stay out of the agent's figures), with Node's own
 * flags (`execArgv: []`), not the agent's that the bench process runs with (packaging/runtime-flags.mjs): with a
 * 1 MB young generation the server holding 50,000 heavy Nodes promoted most of what it allocated, and served their
 * list in 18.0 s, against 8.2 s with Node's flags (the cold-start benchmark's raw list; docs/performance.md, "The
 * churn benchmark at 50,000 Nodes: phases that wait (session 16)").
 */
export class ApiServerProcess {
  constructor() {
    this.child = fork(join(BENCH_DIR, 'lib', 'api-child.mjs'), [], { execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'advanced' });
    this.seq = 0;
    this.pending = new Map();
    this.child.on('message', (m) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (m.ok) p.resolve(m.result);
      else p.reject(new Error(m.error));
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

  /**
   * Start the server, write a kubeconfig, add the own Windows node and `peers` Linux flannel nodes.
   * Like a real cluster it serves https and wants a bearer token (the kubeconfig names the CA and the
   * token); `BENCH_PLAIN_HTTP=1` serves plain http without a token instead. `rejected` (`vni1`,
   * `hostile`): peers every Windows agent rejects (nodes.mjs rejectedNode).
   */
  async setup(dir, { peers, backend, rejected }) {
    const tls = process.env.BENCH_PLAIN_HTTP === '1' ? undefined : serverTls();
    const { url } = await this.call('start', { tls });
    this.url = url;
    this.kubeconfig = join(dir, 'kubeconfig');
    await this.call('kubeconfig', { path: this.kubeconfig });
    await this.call('addOwn', { name: OWN_NODE, podCIDR: OWN_SUBNET, ip: OWN_IP });
    if (peers > 0) await this.call('populate', { from: 1, count: peers, backend, rejected });
    return this;
  }

  async close() {
    try {
      await this.call('exit');
    } catch {
      // already gone
    }
    await this.exited;
  }
}

// ---- agents ---------------------------------------------------------------------------------------

export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** A winston logger that prints nothing and time-stamps the agent's milestone messages. */
export function milestoneLogger(milestones, echo = false) {
  const watch = new Set(['wrote subnet.env', 'node list synced', 'first reconcile pass done', 'lease acquired']);
  const fmt = winston.format((info) => {
    const msg = String(info.message);
    if (watch.has(msg) && milestones[msg] === undefined) milestones[msg] = wallNow();
    if (echo && (info.level === 'warn' || info.level === 'error')) process.stderr.write(`  agent ${info.level}: ${msg} ${info.error ?? ''}\n`);
    return false;
  });
  return winston.createLogger({ level: 'info', format: fmt(), transports: [new winston.transports.Console({ silent: true })] });
}

/**
 * Wrap the SimulatedDataplane's store so every effective write is time-stamped per destination prefix:
 * `onWrite(kind, prefix, t)` with kind 'add' | 'remove' for policies and routes alike.
 */
export function hookWrites(sim, onWrite) {
  const mod = sim.modifyNetworkPolicies.bind(sim);
  sim.modifyNetworkPolicies = (op, id, requestType, policies) => {
    mod(op, id, requestType, policies);
    const t = wallNow();
    for (const p of policies) {
      const prefix = p?.Settings?.DestinationPrefix;
      if (prefix) onWrite(requestType === 'Add' ? 'add' : 'remove', String(prefix), t, p.Type);
    }
  };
  const create = sim.createRoute.bind(sim);
  sim.createRoute = (route) => {
    create(route);
    onWrite('add', route.DestinationPrefix, wallNow(), 'route');
  };
  const del = sim.deleteRoute.bind(sim);
  sim.deleteRoute = (route) => {
    del(route);
    onWrite('remove', route.DestinationPrefix, wallNow(), 'route');
  };
}

/** Write calls and read calls out of the SimulatedDataplane's per-operation counters. */
export function classifyCalls(calls) {
  const out = { writes: 0, reads: 0, handles: 0, other: 0, byOp: {} };
  for (const [op, n] of calls) {
    out.byOp[op] = n;
    if (/HcnModifyNetwork|CreateIpForwardEntry2|DeleteIpForwardEntry2/.test(op)) out.writes += n;
    else if (/HcnQuery|HcnEnumerate|GetIpForwardTable2|HNSCall GET/.test(op)) out.reads += n;
    else if (/HcnOpen|HcnClose/.test(op)) out.handles += n;
    else out.other += n;
  }
  return out;
}

/**
 * The agent's dataplane calls by op, from its own /metrics counters (flannel_dataplane_calls_total):
 * a Map op -> count. diffCalls() totals `reads` (HNS get/list/query/enumerate, route listing) and
 * `writes` (HNS add/remove/create/delete/modify, route add/remove); host calls are neither.
 */
export async function dataplaneCallsFromMetrics(metrics) {
  const calls = new Map();
  for (const { labels, value } of await metricSamples(metrics, 'flannel_dataplane_calls_total')) {
    const op = /^op="([^"]+)"$/.exec(labels)?.[1];
    if (op !== undefined) calls.set(op, value);
  }
  return calls;
}

/**
 * The series of counter `name` in the agent's metrics registry: each one's label text (`a="x",b="y"`) and
 * value. Read from the registry, not the rendered /metrics text: a render also runs the scrape-time gauges
 * (flannel_peers_programmed walks every peer, 17 ms at 20,000 Nodes), work and garbage a phase's figures
 * would count (docs/performance.md, "The idle rate at 20,000 and 50,000 Nodes (session 12)").
 */
async function metricSamples(metrics, name) {
  const { values } = await metrics.registry.getSingleMetric(name).get();
  return values.map(({ labels, value }) => ({
    labels: Object.entries(labels)
      .map(([k, v]) => `${k}="${v}"`)
      .join(','),
    value,
  }));
}

/**
 * One counter or gauge of the agent's /metrics text: the sum over every series of `name` whose labels
 * include `labels` (all of them without).
 */
export async function metricSum(metrics, name, labels = {}) {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  let sum = 0;
  for (const s of await metricSamples(metrics, name)) if (want.every((w) => s.labels.split(',').includes(w))) sum += s.value;
  return sum;
}

const READ_OP = /^hns\.(get|list|query|enumerate|version)|^routes\.list/i;
const WRITE_OP = /^hns\.(add|remove|create|delete|modify|attach|update)|^routes\.(add|remove)/i;

/** after - before, per op, with read and write totals (ops the agent reports through its metrics). */
export function diffCalls(after, before) {
  const byOp = new Map();
  let reads = 0;
  let writes = 0;
  for (const [op, n] of after) {
    const k = n - (before.get(op) ?? 0);
    if (!k) continue;
    byOp.set(op, k);
    if (READ_OP.test(op)) reads += k;
    else if (WRITE_OP.test(op)) writes += k;
  }
  return { byOp, reads, writes };
}

/** after - before of the SimulatedDataplane's per-call counters (HCN/iphlpapi call names). */
export function diffSimCalls(after, before) {
  const d = new Map();
  for (const [op, n] of after) {
    const k = n - (before.get(op) ?? 0);
    if (k) d.set(op, k);
  }
  return d;
}

/** HNS latency model of benchmark 1: 5 ms per HNS call + 0.1 ms per item, 0.2 ms per route call. */
export const COLD_LATENCY = { hnsCallMs: 5, hnsPerItemMs: 0.1, routeCallMs: 0.2 };

/**
 * Start an agent in this process on a fresh SimulatedDataplane against `api`. Returns handles to the
 * agent, the simulated dataplane, its milestones and a stop function.
 */
export async function startAgent({ api, backend = 'vxlan', latency = COLD_LATENCY, resyncMs, healthz = false, echo = false, random }) {
  const dir = mkdtempSync(join(tmpdir(), 'flanneld-bench-'));
  const netConfPath = join(dir, 'net-conf.json');
  writeFileSync(netConfPath, JSON.stringify(backend === 'vxlan' ? VXLAN_NET_CONF : HOSTGW_NET_CONF));
  const subnetFile = join(dir, 'run', 'flannel', 'subnet.env');
  mkdirSync(dirname(subnetFile), { recursive: true });
  const port = healthz ? await freePort() : 0;
  const parsed = parseConfig(
    [
      '--kube-subnet-mgr',
      `--kubeconfig-file=${api.kubeconfig}`,
      `--net-config-path=${netConfPath}`,
      `--subnet-file=${subnetFile}`,
      '--dataplane=simulated',
      `--iface=${OWN_IP}`,
      '--ip-masq',
      ...(healthz ? ['--healthz-ip=127.0.0.1', `--healthz-port=${port}`] : []),
    ],
    { NODE_NAME: OWN_NODE },
    { platform: 'linux' },
  );
  if (parsed.kind !== 'run') throw new Error('expected a run config');
  const milestones = {};
  const logger = milestoneLogger(milestones, echo);
  const metrics = new Metrics();
  const sim = new SimulatedDataplane({ nodeIP: OWN_IP, nodePrefixLength: OWN_PREFIX_LENGTH, latency, ...(random ? { random } : {}) });
  const dataplane = simulatedSeams(sim, { log: logger, metrics, clock: systemClock });
  const agent = new Agent({ config: parsed.config, log: logger, metrics, dataplane, ...(resyncMs ? { resyncMs } : {}) });
  const controller = new AbortController();
  const t0 = wallNow();
  const done = agent.run(controller.signal);
  done.catch((err) => log(`agent stopped with error: ${err?.message ?? err}`));
  return {
    agent,
    sim,
    metrics,
    milestones,
    t0,
    port,
    dir,
    subnetFile,
    async stop() {
      controller.abort(new Error('bench stop'));
      await done.catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function waitUntil(fn, what, timeoutMs = 600_000, intervalMs = 5) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/**
 * Until the agent's network is in sync: the complete list arrived and a pass wrote all of it
 * (status().inSync). `refusedAside`: a successful pass that left only refused items (retried alone on
 * their backoff) counts too. A barrier, not a figure: polled every 50 ms, because status() counts the
 * programmed peers (about 0.5 ms at 5,000 peers) on the agent's own thread, and a 5 ms poll would take
 * a tenth of it from the runs it waits on.
 */
export function waitInSync(agent, { refusedAside = false } = {}) {
  const done = () => {
    const s = agent.network?.status();
    return s !== undefined && (s.inSync || (refusedAside && s.lastPassOk === true && s.refused > 0));
  };
  return waitUntil(done, 'the network in sync', 600_000, 50);
}

/** Destination prefixes the dataplane holds for peers (vxlan policies or host-gw routes). */
export function programmedPrefixes(sim, backend) {
  if (backend === 'vxlan') {
    const net = sim.getNetworkByName(VXLAN_NETWORK_NAME);
    return new Set((net?.Policies ?? []).filter((p) => p.Type === 'RemoteSubnetRoute').map((p) => p.Settings.DestinationPrefix));
  }
  return new Set(
    sim
      .listRoutes()
      .filter((r) => r.DestinationPrefix.startsWith('10.') && r.DestinationPrefix !== OWN_SUBNET)
      .map((r) => r.DestinationPrefix),
  );
}

/** Count how many of `prefixes` the dataplane holds, without cloning the whole state. */
export function countPolicies(sim, backend) {
  return programmedPrefixes(sim, backend).size;
}

export function makeTmpDir() {
  return mkdtempSync(join(tmpdir(), 'flanneld-bench-'));
}

export function cpuSampler() {
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  return () => {
    const c = process.cpuUsage(c0);
    const wall = performance.now() - w0;
    const cpuMs = (c.user + c.system) / 1000;
    return { cpuMs: r1(cpuMs), wallMs: r1(wall), cpuShare: r2((cpuMs / wall) * 100) };
  };
}

/**
 * After a phase of changes: until the bare watch has decoded `want` events and the agent's CPU is quiet
 * (under `quietPct` over 300 ms), so that each is charged for every event of the phase, the backlog it
 * was still decoding when the changes stopped included (on a loaded machine a consumer lags by seconds,
 * and CPU sampled only while the changes are made undercounts whichever lags more). Gives up after
 * `timeoutMs`; `drained` says which.
 */
export async function waitDrained({ watchEvents, want, agentCpuMs, quietPct = 3, timeoutMs = 30_000 }) {
  const t0 = performance.now();
  for (;;) {
    const events = await watchEvents();
    const c0 = await agentCpuMs();
    await sleep(300);
    const quiet = ((await agentCpuMs()) - c0) / 3 < quietPct;
    if (events >= want && quiet) return { drainMs: r1(performance.now() - t0), drained: true };
    if (performance.now() - t0 > timeoutMs) return { drainMs: r1(performance.now() - t0), drained: false, watchEvents: events, want };
  }
}

// ---- the agent's desired side ------------------------------------------------------------------

/**
 * The peer store (dist/peers/store.js) as the agent builds it in front of its reconciler: bench
 * peers `peer(i)` as leases in, `itemOf(i)` as each accepted peer's item out. Peers are vxlan leases
 * (VNI 4096) or host-gw ones; the own subnet is OWN_SUBNET (peer 0).
 */
export function benchPeerStore(backend, itemOf, desiredKey) {
  const store = new PeerStore({
    ownSubnet: OWN_SUBNET,
    validation: { network: NETWORK, subnetLen: 24, backendType: backend, ...(backend === 'vxlan' ? { vni: 4096 } : {}) },
    items: { desiredFor: (l) => [itemOf(Number(l.key.slice('node-'.length)))], desiredKey },
  });
  const leaseOf = (i) => {
    const p = peer(i);
    const vxlan = backend === 'vxlan';
    return { key: p.name, subnet: p.subnet, publicIP: p.publicIP, backendType: backend, backendData: vxlan ? { VNI: 4096, VtepMAC: '0e:2a:ac:10:00:01' } : null };
  };
  return {
    store,
    /** Peer i joins (`lease`) or leaves. */
    set: (i, present) => store.apply({ kind: 'peers', peers: [{ key: peer(i).name, lease: present ? leaseOf(i) : undefined }] }),
    /** A complete list of these peers. */
    list: (is) => {
      store.apply({ kind: 'peers', peers: is.map((i) => ({ key: peer(i).name, lease: leaseOf(i) })) });
      store.apply({ kind: 'listed', keys: new Set(is.map((i) => peer(i).name)) });
    },
  };
}

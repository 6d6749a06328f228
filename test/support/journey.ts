// One Windows node for an install journey (test/integration/journey-*.test.ts): the documented steps run
// on it in order, as the operator, the kubelet or the service control manager would run them, and the
// journey ends with the recorded CNI plugin calls of a pod ADD and DEL replayed against what the steps
// left (test/fixtures/cni-traces, ./cni-replay.ts).
//
// What stands in for the node, and why (each a substitution a journey cannot avoid on Linux):
//  * C:\ is a folder of the test: every Windows path in an argument, a variable or a file the steps read
//    maps to it (`onHost`), and paths the node's programs write into files map back (`onWindows`);
//  * flanneld.exe is the built CLI (node dist/main.js) of a build that pins the test's stand-in CNI
//    releases, served over HTTP on 127.0.0.1 (./pinned-build.ts, ./cni-releases.ts: the real releases
//    cannot be downloaded here);
//  * the dataplane is the simulated node (FLANNELD_DATAPLANE=simulated and its state file), and each path
//    flag's Windows default is given in FLANNELD_* as its C:\ mapping, as the Windows build defaults to it;
//  * the node is the recorded scene of the CNI traces (test/fixtures/cni-traces/README.md, "The agent and
//    the node"): `win-1` at 10.0.0.2 with podCIDR 10.244.100.0/24 and the flannel peer `linux-1`
//    (10.244.1.0/24 at 10.0.0.11); dual-stack, the sdnbridge recording's 10.244.3.0/24 and
//    fd00:10:244:3::/64. A documented example's node address (192.168.1.21) is this node's (NODE_ADDRESSES);
//  * the agent's health endpoints listen on 127.0.0.1 at a free port, appended to its command line by
//    whatever starts it (this host does not have the node's address, and port 10277 is shared by the
//    test files running in parallel); a client on the node asking the node's address at port 10277 is
//    sent there (`nodeUrl`, `nodeArgs`);
//  * the API server is the fake one over TLS with a bearer token (a service account's), its CA beside it.
import { afterAll, afterEach, beforeAll } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeKubeApiServer, bareNode, linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { SimulatedDataplane } from '../../src/simulator/model.js';
import { FLAGS, envVarName } from '../../src/config/flags.js';
import { freePort } from './free-port.js';
import { waitFor } from './wait-for.js';
import { issueCert, makeTestCa } from './etcd.js';
import { fakeReleases, type FakeRelease } from './cni-releases.js';
import { pinnedBuild } from './pinned-build.js';
import { editState } from './sim-dataplane.js';
import { SimAgent, SimNodeState } from './sim-node.js';
import {
  bindAgentNetwork,
  describeMismatches,
  loadTrace,
  newBindings,
  replayScenario,
  sdnbridgeUnexpected,
  type ReplayBindings,
  type ReplayMismatch,
  type Trace,
} from './cni-replay.js';
import type { HcnEndpoint } from '../../src/hns/schema.js';

export const NODE = 'win-1';
export const NODE_IP = '10.0.0.2';
export const NODE_IP6 = 'fd00:10::2';
export const PEER = { name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11' };
/** The addresses docs/install.md's examples give the node (`-ManagementIP`, `--iface`): this node's. */
export const NODE_ADDRESSES = ['192.168.1.21', '192.168.1.22'];
const TOKEN = 'journey-service-account-token';

export type Backend = 'vxlan' | 'host-gw';

export interface SceneOptions {
  /** The peer's backend (the cluster's); default vxlan. */
  backend?: Backend;
  /** The node's pods dual-stack (podCIDRs v4 and v6, an IPv6 address on its adapter). */
  dualStack?: boolean;
  /** The cluster dual-stack, this node's pods IPv4-only (`--ipv4-only`): both podCIDRs and the IPv6 address, the recorded IPv4 scene. */
  ipv4OnlyNode?: boolean;
}

/** One build of flanneld whose pins are the stand-in releases, served on 127.0.0.1 (one per test file). */
export interface JourneyBuild {
  main: string;
  releases: FakeRelease[];
  dualStack: FakeRelease[];
  close(): Promise<void>;
}

async function journeyBuild(dir: string): Promise<JourneyBuild> {
  const files = new Map<string, Buffer>();
  const server: Server = createServer((req, res) => {
    const body = files.get(req.url ?? '');
    res.writeHead(body ? 200 : 404, { 'Content-Type': 'application/octet-stream' });
    res.end(body ?? 'not found');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const fakes = await fakeReleases(base);
  for (const r of [...fakes.releases, ...fakes.dualStack]) files.set(new URL(r.pin.url).pathname, r.data);
  const main = pinnedBuild(dir, { releases: fakes.releases.map((r) => r.pin), dualStack: fakes.dualStack.map((r) => r.pin) });
  return { main, ...fakes, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** A journey test file's frame: its build and the node of the test running, read inside tests. */
export interface JourneyFrame {
  /** The file's build, made once before its tests. */
  readonly build: JourneyBuild;
  /** The temporary folder the build is in, where a test may place another (the upgrade's new build). */
  readonly dir: string;
  /** The node the running test started (`start`), stopped after the test. */
  readonly node: JourneyNode;
  start(scene?: SceneOptions): Promise<JourneyNode>;
}

/**
 * Registers a journey file's hooks: the build made once before its tests (in the sub-folder `buildIn` of
 * the frame's folder when given), the running test's node stopped after each test, the build's server
 * closed and its folder removed after the file.
 */
export function journeyFrame(opts: { buildIn?: string } = {}): JourneyFrame {
  let build: JourneyBuild | undefined;
  let dir = '';
  let node: JourneyNode | undefined;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'flanneld-journey-build-'));
    build = await journeyBuild(opts.buildIn ? join(dir, opts.buildIn) : dir);
  }, 60_000);
  afterEach(async () => {
    await node?.stop();
    node = undefined;
  });
  afterAll(async () => {
    await build?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
  return {
    get build() {
      if (!build) throw new Error('the journey build is made in beforeAll: read it inside a test');
      return build;
    },
    get dir() {
      return dir;
    },
    get node() {
      if (!node) throw new Error('no journey node: the test starts one with frame.start()');
      return node;
    },
    async start(scene: SceneOptions = {}) {
      node = await JourneyNode.start(scene);
      return node;
    },
  };
}

/**
 * The Windows defaults of the commands' own flags, which read no FLANNELD_* variable (src/commands/cleanup.ts
 * WINDOWS_CNI_CONF_FILE, install-cni.ts `bin-dir`): given as their C:\ mapping when a command omits them.
 */
const COMMAND_WINDOWS_DEFAULTS: Record<string, [string, string]> = {
  cleanup: ['--cni-conf-file', 'C:\\etc\\cni\\net.d\\10-flannel.conflist'],
  'install-cni': ['--bin-dir', 'C:\\opt\\cni\\bin'],
};

/** A command that ran to its exit. */
export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

export class JourneyNode {
  readonly driveC: string;
  readonly state: SimNodeState;
  readonly podCIDR: string;
  readonly podCIDR6: string | undefined;
  /** Every command run on the node and its output, for a failure's message (`note` adds one). */
  readonly transcript: string[] = [];
  private readonly started = Date.now();
  readonly agents: SimAgent[] = [];
  healthzPort = 0;

  private constructor(
    readonly dir: string,
    readonly api: FakeKubeApiServer,
    readonly caFile: string,
    readonly backend: Backend,
    readonly dualStack: boolean,
    ipv4OnlyNode: boolean,
  ) {
    this.driveC = join(dir, 'c');
    this.state = new SimNodeState(join(dir, 'dataplane.json'));
    this.podCIDR = dualStack ? '10.244.3.0/24' : '10.244.100.0/24';
    this.podCIDR6 = dualStack ? 'fd00:10:244:3::/64' : ipv4OnlyNode ? 'fd00:10:244:64::/64' : undefined;
  }

  static async start(opts: SceneOptions = {}): Promise<JourneyNode> {
    const dir = mkdtempSync(join(tmpdir(), 'flanneld-journey-'));
    const ca = makeTestCa(dir, 'ca');
    const cert = issueCert(ca, dir, 'kube-apiserver', 'server');
    const api = new FakeKubeApiServer({ bearerToken: TOKEN, tls: { cert: readFileSync(cert.certFile), key: readFileSync(cert.keyFile) } });
    await api.start();
    const node = new JourneyNode(dir, api, ca.certFile, opts.backend ?? 'vxlan', opts.dualStack ?? false, opts.ipv4OnlyNode ?? false);
    const n = bareNode({ name: NODE, podCIDR: node.podCIDR, internalIP: NODE_IP });
    if (node.podCIDR6) n.spec = { podCIDR: node.podCIDR, podCIDRs: [node.podCIDR, node.podCIDR6] };
    api.addNode(n);
    if (!node.dualStack) api.addNode(linuxFlannelNode({ ...PEER, backendType: node.backend }));
    // A fresh Windows node: its adapter (with an IPv6 address when dual-stack), nothing else.
    editState(new SimulatedDataplane({ statePath: node.state.path, nodeIP: NODE_IP }), (st) => {
      if (node.podCIDR6) st.adapters.filter((a) => a.IPAddress === NODE_IP).forEach((a) => Object.assign(a, { IPv6Address: NODE_IP6, IPv6PrefixLength: 64 }));
    });
    node.healthzPort = await freePort();
    return node;
  }

  /** A Windows path (`C:\etc\cni\net.d`) as the test's folder for drive C; anything else unchanged. */
  onHost = (v: string): string => (/^[Cc]:[\\/]/.test(v) ? join(this.driveC, ...v.slice(3).split(/[\\/]/).filter(Boolean)) : v);

  /** A path under the test's drive C back as the node's Windows path; every occurrence in a text. */
  onWindows = (text: string): string =>
    text
      .split(this.driveC)
      .map((part, i) => (i === 0 ? part : 'C:' + part.replace(/^[^"\s,]*/, (p) => p.replace(/\//g, '\\'))))
      .join('');

  /** `--flag=C:\x` or a bare `C:\x` argument mapped to this host; the node's health port mapped to the agent's. */
  nodeArgs = (args: string[]): string[] =>
    args.map((a) => {
      const eq = /^(--?[a-z0-9-]+=)(.*)$/.exec(a);
      const mapped = eq ? eq[1] + this.onHost(eq[2]) : this.onHost(a);
      return mapped === '--healthz-port=10277' ? `--healthz-port=${this.healthzPort}` : mapped;
    });

  /** A URL a client on the node asks (the node's address or 127.0.0.1, port 10277): the agent's listener here. */
  nodeUrl = (url: string): string => {
    const u = new URL(url);
    if ([NODE_IP, ...NODE_ADDRESSES, '127.0.0.1'].includes(u.hostname) && u.port === '10277') return `http://127.0.0.1:${this.healthzPort}${u.pathname}`;
    return url;
  };

  /** The health endpoint override whatever starts the agent appends (see the header). */
  get healthzArgs(): string[] {
    return ['--healthz-ip=127.0.0.1', `--healthz-port=${this.healthzPort}`];
  }

  /** What every flanneld process on the node has: the simulated dataplane and the Windows path defaults. */
  nodeEnv(): Record<string, string> {
    const env: Record<string, string> = { FLANNELD_DATAPLANE: 'simulated', FLANNELD_DATAPLANE_STATE: this.state.path, FLANNELD_LOG_FORMAT: 'json' };
    for (const f of FLAGS) if (typeof f.windowsDefault === 'string' && f.name !== 'dataplane') env[envVarName(f.name)] = f.windowsDefault.split(',').map(this.onHost).join(',');
    return env;
  }

  /** A kubeconfig for this cluster (the API server over TLS, a token), written at the node path `at`. */
  writeKubeconfig(at: string): void {
    const file = this.onHost(at);
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(
      file,
      [
        'apiVersion: v1',
        'kind: Config',
        `clusters: [{name: c, cluster: {server: "${this.api.url}", certificate-authority: "${this.caFile}"}}]`,
        `users: [{name: u, user: {token: ${TOKEN}}}]`,
        'contexts: [{name: x, context: {cluster: c, user: u}}]',
        'current-context: x',
        '',
      ].join('\n'),
    );
  }

  /** The service account a pod mounts (token and CA) under `sandbox`, as the kubelet projects it. */
  projectServiceAccount(sandbox: string): void {
    const sa = join(sandbox, 'var', 'run', 'secrets', 'kubernetes.io', 'serviceaccount');
    mkdirSync(sa, { recursive: true });
    writeFileSync(join(sa, 'token'), TOKEN);
    writeFileSync(join(sa, 'ca.crt'), readFileSync(this.caFile));
  }

  /** Run a flanneld command of `main` (a build) to its exit; `env` beside the node's. */
  run(main: string, args: string[], env: Record<string, string> = {}, stdin?: string, cwd?: string): Promise<Ran> {
    const own = COMMAND_WINDOWS_DEFAULTS[args[0]];
    const given = own && args.some((a) => a === own[0] || a.startsWith(`${own[0]}=`));
    const full = own && !given ? [...args, `${own[0]}=${own[1]}`] : args;
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [main, ...this.nodeArgs(full)], {
        env: { PATH: process.env['PATH'] ?? '', ...this.nodeEnv(), ...env },
        stdio: ['pipe', 'pipe', 'pipe'],
        cwd,
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
      child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
      child.on('error', reject);
      child.stdin.end(stdin ?? '');
      child.on('exit', (code) => {
        this.note(`--- flanneld ${args.join(' ')} (exit ${code})\n${stdout}${stderr}`);
        resolve({ code: code ?? -1, stdout, stderr });
      });
    });
  }

  /** Start the agent of `main` with these flags (the health override appended) and `env` beside the node's. */
  startAgent(main: string, args: string[], env: Record<string, string> = {}): SimAgent {
    const child = spawn(process.execPath, [main, ...this.nodeArgs(args), ...this.healthzArgs], {
      env: { PATH: process.env['PATH'] ?? '', ...this.nodeEnv(), ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const agent = new SimAgent(child, this.healthzPort, this.state, this.onHost('C:\\run\\flannel'));
    this.agents.push(agent);
    this.note(`--- agent started: flanneld ${args.join(' ')}`);
    return agent;
  }

  /** Add to the transcript, with the seconds since the journey started. */
  note(text: string): void {
    this.transcript.push(`[+${((Date.now() - this.started) / 1000).toFixed(1)}s] ${text}`);
  }

  /** The agent answers /readyz 200; fails at once when it exits, with the node's transcript either way. */
  async agentReady(agent: SimAgent, timeoutMs = 30_000): Promise<void> {
    const closed = new Promise<void>((r) => (agent.child.stderr?.readableEnded ? r() : agent.child.stderr?.once('close', () => r())));
    try {
      await waitFor(async () => (await fetch(`http://127.0.0.1:${this.healthzPort}/readyz`).catch(() => undefined))?.status === 200, 'the agent to be ready (/readyz 200)', {
        timeoutMs,
        failIf: () => (agent.child.exitCode !== null ? `the agent exited ${agent.child.exitCode}` : undefined),
      });
    } catch (err) {
      if (agent.child.exitCode !== null) await closed; // its last lines
      throw new Error(`${(err as Error).message}\n${this.dump()}`);
    }
  }

  /** The CNI config containerd loads: the first .conf/.conflist/.json of C:\etc\cni\net.d by name (libcni ConfFiles). */
  loadedConflist(): { file: string; conf: Record<string, unknown> } {
    const dir = this.onHost('C:\\etc\\cni\\net.d');
    const file = readdirSync(dir)
      .filter((f) => /\.(conf|conflist|json)$/.test(f))
      .sort()[0];
    if (!file) throw new Error(`no CNI config in C:\\etc\\cni\\net.d (${readdirSync(dir).join(', ')})`);
    return { file, conf: JSON.parse(readFileSync(join(dir, file), 'utf8')) as Record<string, unknown> };
  }

  /** The agent's log and every command's output, for a failing expectation. */
  dump(): string {
    return [...this.transcript, ...this.agents.map((a, i) => `--- agent ${i} log (exit ${a.child.exitCode})\n${a.dump()}\n${a.stderr}`)].join('\n');
  }

  async stop(): Promise<void> {
    for (const a of this.agents) await a.stop();
    await this.api.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * The recordings of each conflist plugin (test/fixtures/cni-traces/README.md), ADDs then DELs: host-gw's
 * DELs were recorded with the later pods still attached, so its three pods are added and deleted in the
 * recorded order.
 */
const RECORDED: Record<string, { adds: string[]; dels: string[]; agentEndpoint?: (network: string) => string }> = {
  'win-overlay': { adds: ['vxlan-add'], dels: ['vxlan-del'], agentEndpoint: (n) => `${n}_sourcevip` },
  'win-bridge': {
    adds: ['host-gw-add', 'host-gw-add-second', 'host-gw-add-third'],
    dels: ['host-gw-del', 'host-gw-del-second', 'host-gw-del-third'],
    agentEndpoint: (n) => `${n}_ep`,
  },
  sdnbridge: { adds: ['sdnbridge-dual-stack-add'], dels: ['sdnbridge-dual-stack-del'] },
};

/** A pod (or the recorded pods) added by `replayPodAdd`, for its DEL. */
export interface AddedPod {
  network: string;
  plugin: string;
  add: ReplayMismatch[];
  bindings: ReplayBindings;
  /** The first pod's endpoint as HNS holds it after the ADD. */
  endpoint: HcnEndpoint | undefined;
}

/**
 * containerd's view of the node: the CNI config it loads names the network and the plugin; the recorded
 * calls of that plugin for the pod ADDs are replayed. `full` also compares the node's state before and
 * after each file with the recording's (a node of the recorded scene with nothing else on it); sdnbridge's
 * recording was made on a staged network (sdnbridgeUnexpected).
 */
export async function replayPodAdd(node: JourneyNode, opts: { full: boolean }): Promise<AddedPod> {
  const { conf } = node.loadedConflist();
  const network = String(conf['name']);
  const first = (conf['plugins'] as { type: string; delegate?: { type?: string } }[])[0];
  const plugin = first.type === 'flannel' ? (first.delegate?.type ?? '') : first.type;
  const recorded = RECORDED[plugin];
  if (!recorded) throw new Error(`the loaded CNI config runs ${plugin}, which has no recording`);
  const dp = node.state.model();
  const traces = recorded.adds.map((n) => loadTrace(n));
  const b = newBindings({ names: { [traces[0].network]: network } });
  if (recorded.agentEndpoint) bindAgentNetwork(dp, b, network, recorded.agentEndpoint(network));
  else {
    const net = dp.getNetworkByName(network);
    if (!net?.ID) throw new Error(`the node has no network ${network}`);
    b.ids.set('<NETWORK_ID>', net.ID);
  }
  const add: ReplayMismatch[] = [];
  for (const t of traces) add.push(...(await replayOne(t, node, b, plugin, opts)));
  const endpoint = dp.listEndpoints().find((e) => e.Name === `${traces[0].inputs.env['CNI_CONTAINERID']}_${network}`);
  return { network, plugin, add, bindings: b, endpoint };
}

async function replayOne(t: Trace, node: JourneyNode, b: ReplayBindings, plugin: string, opts: { full: boolean }): Promise<ReplayMismatch[]> {
  const sdn = plugin === 'sdnbridge';
  const r = await replayScenario(t, node.state.model(), b, { checkStateBefore: opts.full && !sdn, checkStateAfter: opts.full && !sdn });
  return (sdn ? sdnbridgeUnexpected(r.mismatches) : r.mismatches).map((m) => ({ ...m, where: `${t.scenario} ${m.where}` }));
}

/** The recorded DELs of the pods `replayPodAdd` added. */
export async function replayPodDel(node: JourneyNode, added: AddedPod, opts: { full: boolean }): Promise<ReplayMismatch[]> {
  const out: ReplayMismatch[] = [];
  for (const n of RECORDED[added.plugin].dels) out.push(...(await replayOne(loadTrace(n), node, added.bindings, added.plugin, opts)));
  return out;
}

/** ADD then DEL, as `replayPodAdd` and `replayPodDel`. */
export async function replayPod(
  node: JourneyNode,
  opts: { full: boolean },
): Promise<{ network: string; add: ReplayMismatch[]; del: ReplayMismatch[]; endpoint: HcnEndpoint | undefined }> {
  const added = await replayPodAdd(node, opts);
  const del = await replayPodDel(node, added, opts);
  return { network: added.network, add: added.add, del, endpoint: added.endpoint };
}

/**
 * After an uninstall: the recorded ADD and DEL of a pod while the network is missing (`<backend>-add-network-missing`,
 * `-del-network-missing`: the plugin finds no network named `network`, and the DEL of the failed sandbox), replayed.
 */
export async function replayNetworkMissing(node: JourneyNode, backend: Backend, network: string): Promise<ReplayMismatch[]> {
  const b = newBindings();
  const out: ReplayMismatch[] = [];
  for (const n of [`${backend}-add-network-missing`, `${backend}-del-network-missing`]) {
    const t = loadTrace(n);
    b.names = [[t.network, network]];
    const r = await replayScenario(t, node.state.model(), b, { checkStateBefore: false, checkStateAfter: false });
    out.push(...r.mismatches.map((m) => ({ ...m, where: `${n} ${m.where}` })));
  }
  return out;
}

/** The replay's mismatches as text ('' when it passed), with the node's transcript when it did not. */
export function replayProblems(node: JourneyNode, r: { add: ReplayMismatch[]; del?: ReplayMismatch[] }): string {
  const text = [r.add.length ? `ADD:\n${describeMismatches(r.add)}` : '', r.del?.length ? `DEL:\n${describeMismatches(r.del)}` : ''].filter(Boolean).join('\n');
  return text ? `${text}\n${node.dump()}` : '';
}

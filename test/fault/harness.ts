// Fault-injection harness: agents on the simulated dataplane against the fake API server, with the
// dataplane's file system and clock under the test's control (to fill or freeze the state directory,
// and to "kill" a process: its pending HNS calls never land and nothing more reaches its state file).
import * as nodeFs from 'node:fs';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from '@jest/globals';
import { Agent, type AgentOptions } from '../../src/agent.js';
import { systemClock, type Clock } from '../../src/clock.js';
import { parseConfig } from '../../src/config/parse.js';
import { hnsCallTimeoutMs } from '../../src/dataplane/factory.js';
import { simulatedDataplane } from '../../src/dataplane/simulated-node.js';
import { SimulatedDataplane, type DataplaneFs, type DataplaneLatency } from '../../src/dataplane/simulated.js';
import { Metrics } from '../../src/health/metrics.js';
import { linuxFlannelNode } from '../../src/kube-fake/api-server.js';
import { LOG, TestCluster, waitFor, WIN_IP } from '../support/cluster.js';
import { APPLY_PASSES, waitForIncrease } from '../support/agent-signals.js';
import { editState } from '../support/sim-dataplane.js';

export { HOSTGW_NET_CONF, VXLAN_NET_CONF, waitFor, WIN_IP } from '../support/cluster.js';

export const NETWORK = '10.244.0.0/16';
export const WIN = 'win-1';
export const WIN_CIDR = '10.244.100.0/24';

/** A stall that lasts until the test calls `StateFs.wake()` (the test's own deadline ends it first). */
export const HELD = 10 * 60_000;

export type FsMode = 'ok' | 'erofs' | 'enospc';

/** The parts of the dataplane state file a kill switch looks at. */
export interface DiskState {
  networks: { Policies?: { Type: string }[] }[];
  routes: { DestinationPrefix: string }[];
}

function errno(code: 'EROFS' | 'ENOSPC', syscall: string, path: string): NodeJS.ErrnoException {
  const text = code === 'EROFS' ? 'read-only file system' : 'no space left on device';
  const e = new Error(`${code}: ${text}, ${syscall} '${path}'`) as NodeJS.ErrnoException;
  e.code = code;
  e.syscall = syscall;
  e.path = path;
  return e;
}

/** node:fs for the dataplane state file, with a switch to make its directory read-only or full, and a kill switch. */
export class StateFs {
  mode: FsMode = 'ok';
  /** After kill(): writes are dropped (the process is gone; nothing more reaches the disk). */
  dead = false;
  writes = 0;
  /** Called with each state document about to be written; return true to kill right after this write lands. */
  killAfter: ((state: DiskState) => boolean) | undefined;
  /** Called with each state document written (to see a transient state, e.g. a late call landing). */
  onWrite: ((state: DiskState) => void) | undefined;
  /** The pending sleeps of the model (latency, stalls): each can be killed (reject) or woken (resolve). */
  private readonly pending = new Set<{ wake: () => void; kill: () => void }>();

  readonly fs: DataplaneFs = {
    readFileSync: (f, enc) => nodeFs.readFileSync(f, enc),
    mkdirSync: (d, o) => (this.dead ? undefined : nodeFs.mkdirSync(d, o)),
    writeFileSync: (f, data) => {
      if (this.dead) return;
      if (this.mode === 'erofs') throw errno('EROFS', 'open', f);
      if (this.mode === 'enospc') {
        nodeFs.writeFileSync(f, data.slice(0, Math.floor(data.length / 2))); // a torn temp file
        throw errno('ENOSPC', 'write', f);
      }
      nodeFs.writeFileSync(f, data);
    },
    renameSync: (a, b) => {
      if (this.dead) return;
      if (this.mode === 'erofs') throw errno('EROFS', 'rename', b);
      nodeFs.renameSync(a, b);
      this.writes++;
      if (!this.killAfter && !this.onWrite) return;
      const state = JSON.parse(nodeFs.readFileSync(b, 'utf8')) as DiskState;
      this.onWrite?.(state);
      if (this.killAfter?.(state)) this.kill();
    },
  };

  /**
   * A clock for the dataplane's latency and stalls: a killed process's pending calls never complete, and
   * `wake()` ends a stall when the test says (a stall of HELD ms lasts until then).
   */
  readonly clock: Clock = {
    now: () => Date.now(),
    sleep: (ms) =>
      new Promise<void>((resolve, reject) => {
        if (this.dead) return reject(new Error('process killed'));
        const entry = {
          wake: () => {
            clearTimeout(t);
            this.pending.delete(entry);
            resolve();
          },
          kill: () => {
            clearTimeout(t);
            this.pending.delete(entry);
            reject(new Error('process killed'));
          },
        };
        const t = setTimeout(entry.wake, ms);
        t.unref();
        this.pending.add(entry);
      }),
  };

  /** Stalls (and latency sleeps) not over yet: a hung call that has not landed. */
  get sleeping(): number {
    return this.pending.size;
  }

  /** End every pending stall now: the hung calls land. */
  wake(): void {
    for (const e of [...this.pending]) e.wake();
  }

  kill(): void {
    if (this.dead) return;
    this.dead = true;
    for (const e of [...this.pending]) e.kill();
  }
}

export interface FaultAgent {
  agent: Agent;
  dir: string;
  subnetFile: string;
  statePath: string;
  sim: SimulatedDataplane;
  state: StateFs;
  controller: AbortController;
  done: Promise<void>;
  /** Settles (never rejects) with the error the agent stopped with, or undefined. */
  outcome: Promise<unknown>;
  stop(): Promise<void>;
  /** The process dies: pending dataplane calls never land, nothing more is written, the agent is aborted. */
  kill(): Promise<void>;
  /** The agent's /metrics text. */
  readonly metrics: () => Promise<string>;
}

export interface StartOptions {
  nodeName?: string;
  ip?: string;
  netConf: unknown;
  resyncMs?: number;
  latency?: DataplaneLatency;
  /** [0,1) source of the model (IDs, MACs, failRate draws); default Math.random. */
  random?: () => number;
  /** Prepare the dataplane before the agent runs (injections, fs mode). */
  before?: (sim: SimulatedDataplane, state: StateFs) => void;
  state?: StateFs;
  /** More agent flags (e.g. `--hns-call-timeout=1`), after the harness's own. */
  extraArgs?: string[];
  /** The subnet manager's pauses between list and watch rounds; default client-go's (800 ms doubling to 30 s). */
  relistBackoff?: AgentOptions['relistBackoff'];
}

export class FaultCluster {
  readonly cluster = new TestCluster();
  private readonly agents: FaultAgent[] = [];

  get api() {
    return this.cluster.api;
  }

  async start(): Promise<this> {
    await this.cluster.start();
    return this;
  }

  addWindowsNode(name = WIN, podCIDR = WIN_CIDR, ip = WIN_IP): void {
    this.cluster.addWindowsNode(name, podCIDR, ip);
  }

  /** A Linux flannel node n: 10.244.n.0/24 at 10.0.1.n (n < 256). */
  addLinux(n: number, backendType: 'vxlan' | 'host-gw'): void {
    this.api.addNode(linuxFlannelNode({ name: linuxName(n), podCIDR: `10.244.${n}.0/24`, publicIP: linuxIP(n), backendType }));
  }

  startAgent(opts: StartOptions): FaultAgent {
    const nodeName = opts.nodeName ?? WIN;
    const ip = opts.ip ?? WIN_IP;
    const dir = join(this.cluster.dir, nodeName);
    mkdirSync(dir, { recursive: true });
    const netConfPath = join(dir, 'net-conf.json');
    writeFileSync(netConfPath, JSON.stringify(opts.netConf));
    const subnetFile = join(dir, 'run', 'flannel', 'subnet.env');
    const statePath = join(dir, 'dataplane.json');
    const parsed = parseConfig(
      [
        '--kube-subnet-mgr',
        `--kubeconfig-file=${join(this.cluster.dir, 'kubeconfig')}`,
        `--net-config-path=${netConfPath}`,
        `--subnet-file=${subnetFile}`,
        '--dataplane=simulated',
        `--dataplane-state=${statePath}`,
        `--iface=${ip}`,
        '--ip-masq',
        ...(opts.extraArgs ?? []),
      ],
      { NODE_NAME: nodeName },
      { platform: 'linux' },
    );
    if (parsed.kind !== 'run') throw new Error('expected a run config');
    const state = opts.state ?? new StateFs();
    const sim = new SimulatedDataplane({ statePath, nodeIP: ip, fs: state.fs, clock: state.clock, latency: opts.latency, random: opts.random });
    // One L2 segment for the Windows node (10.0.0.2) and the Linux peers (10.0.1.n): host-gw refuses a peer
    // whose public IP is not on the node's network (src/subnet/validate.ts, public-ip-off-link).
    editState(sim, (st) => st.adapters.filter((ad) => ad.IPAddress === ip).forEach((ad) => (ad.PrefixLength = 16)));
    opts.before?.(sim, state);
    const metrics = new Metrics();
    const dataplane = simulatedDataplane(sim, { log: LOG, metrics, clock: systemClock, hnsCallTimeoutMs: hnsCallTimeoutMs(parsed.config) });
    const agent = new Agent({ config: parsed.config, log: LOG, metrics, dataplane, resyncMs: opts.resyncMs ?? 200, relistBackoff: opts.relistBackoff });
    const controller = new AbortController();
    const done = agent.run(controller.signal);
    const outcome = done.then(
      () => undefined,
      (err: unknown) => err,
    );
    const fa: FaultAgent = {
      agent,
      dir,
      subnetFile,
      statePath,
      sim,
      state,
      controller,
      done,
      outcome,
      stop: async () => {
        controller.abort(new Error('test stop'));
        await outcome;
      },
      kill: async () => {
        state.kill();
        controller.abort(new Error('killed'));
        await outcome;
      },
      metrics: () => metrics.render(),
    };
    this.agents.push(fa);
    return fa;
  }

  async stop(): Promise<void> {
    for (const a of this.agents) await a.kill();
    await this.cluster.stop();
  }
}

/** Wait until the agent has run `n` more reconcile passes (ok or failed): it re-read the dataplane and diffed. */
export async function waitForPasses(a: FaultAgent, n: number, what: string): Promise<void> {
  await waitForIncrease(a.metrics, APPLY_PASSES, n, what, 20_000);
}

/** A small deterministic [0,1) generator. */
export function seeded(seed: number): () => number {
  let x = seed >>> 0;
  return () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32;
}

export const linuxName = (n: number) => `linux-${n}`;
export const linuxIP = (n: number) => `10.0.1.${n}`;
const macOf = (ip: string) =>
  '0e:2a:' +
  ip
    .split('.')
    .map((o) => Number(o).toString(16).padStart(2, '0'))
    .join(':');

/** The RemoteSubnetRoute policies the peers `ns` call for, as `dst pa vni mac` lines, sorted. */
export function wantPolicies(ns: number[]): string[] {
  return ns.map((n) => `10.244.${n}.0/24 ${linuxIP(n)} 4096 ${macOf(linuxIP(n))}`).sort();
}

/** The host-gw routes the peers `ns` call for, as `dst via nexthop` lines, sorted. */
export function wantRoutes(ns: number[]): string[] {
  return ns.map((n) => `10.244.${n}.0/24 via ${linuxIP(n)}`).sort();
}

/** Every RemoteSubnetRoute policy on the agent's network (duplicates kept), as `dst pa vni mac`. */
export function policies(a: FaultAgent): string[] {
  const state = a.sim.snapshot();
  return state.networks
    .flatMap((n) => n.Policies ?? [])
    .filter((p) => p.Type === 'RemoteSubnetRoute')
    .map((p) => {
      const s = p.Settings as { DestinationPrefix: string; ProviderAddress: string; IsolationId: number; DistributedRouterMacAddress: string };
      return `${s.DestinationPrefix} ${s.ProviderAddress} ${s.IsolationId} ${s.DistributedRouterMacAddress}`;
    })
    .sort();
}

/** Every route whose destination lies in the cluster network, other than the own subnet (duplicates kept). */
export function routes(a: FaultAgent): string[] {
  return a.sim
    .snapshot()
    .routes.filter((r) => r.DestinationPrefix.startsWith('10.244.') && r.DestinationPrefix !== WIN_CIDR)
    .map((r) => `${r.DestinationPrefix} via ${r.NextHop}`)
    .sort();
}

/** The whole dataplane in one comparable value: peer objects plus the invariants of the node itself. */
function shape(a: FaultAgent, backend: 'vxlan' | 'host-gw') {
  const s = a.sim.snapshot();
  const nonPeerRoutes = s.routes.filter((r) => !(r.DestinationPrefix.startsWith('10.244.') && r.DestinationPrefix !== WIN_CIDR));
  return {
    peers: backend === 'vxlan' ? policies(a) : routes(a),
    networks: s.networks.map((n) => `${n.Name} ${n.Type}`),
    basePolicies: s.networks.flatMap((n) => (n.Policies ?? []).map((p) => p.Type).filter((t) => t !== 'RemoteSubnetRoute')).sort(),
    endpoints: s.endpoints.map((e) => e.Name).sort(),
    defaultRoutes: nonPeerRoutes.filter((r) => r.DestinationPrefix === '0.0.0.0/0').length,
  };
}

/**
 * Wait until the dataplane equals exactly the desired set for peers `ns` (no more, no fewer, no
 * duplicates), then assert it, and the node's own objects (one network, its base policies once each).
 */
export async function expectConverged(a: FaultAgent, backend: 'vxlan' | 'host-gw', ns: number[], timeoutMs = 15_000): Promise<void> {
  const want = {
    peers: backend === 'vxlan' ? wantPolicies(ns) : wantRoutes(ns),
    networks: backend === 'vxlan' ? ['flannel.4096 Overlay'] : ['cbr0 L2Bridge'],
    basePolicies: backend === 'vxlan' ? ['DrMacAddress', 'HostRoute', 'NetAdapterName', 'ProviderAddress'] : ['NetAdapterName', 'ProviderAddress'],
    endpoints: backend === 'vxlan' ? [] : ['cbr0_ep'],
    defaultRoutes: 1,
  };
  await waitFor(() => a.agent.phase === 'running' && JSON.stringify(shape(a, backend)) === JSON.stringify(want), `dataplane == desired (${ns.length} peers)`, timeoutMs).catch(
    () => undefined,
  );
  expect(shape(a, backend)).toEqual(want);
  expect(a.agent.phase).toBe('running');
}

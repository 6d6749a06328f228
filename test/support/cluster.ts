// The one cluster harness of the integration and fault tests: a fake API server (src/demo/kube-fake) with its
// Nodes and a kubeconfig, and Windows agents on simulated nodes, each in `<dir>/<nodeName>/`:
//  * `startAgent`: an Agent in this process, on a SimulatedDataplane the harness builds (so the test holds
//    the model, and may hand it a disk and clock under its control: ./state-fs.ts);
//  * `startProcess`: the built CLI (`node dist/main.js --dataplane simulated --dataplane-state F`), whose
//    state file the test edits from outside and whose /metrics, /status and JSON log it reads (./sim-node.ts).
// What a test waits on before it asserts that nothing changed is in ./agent-signals.ts.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, type AgentOptions } from '../../src/agent.js';
import { systemClock } from '../../src/basics/clock.js';
import { parseConfig } from '../../src/config/parse.js';
import { Metrics, METRIC } from '../../src/basics/metrics.js';
import { FakeKubeApiServer, bareNode, writeKubeconfig, linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { createLogger, silentLogger, type Logger } from '../../src/basics/log.js';
import { simulatedNodeIP, simulatedSeams } from '../../src/simulator/node.js';
import { SimulatedDataplane, type DataplaneLatency } from '../../src/simulator/model.js';
import { freePort } from './free-port.js';
import { MAIN } from './flanneld-process.js';
import { editState } from './sim-dataplane.js';
import { SimAgent, SimNodeState } from './sim-node.js';
import type { StateFs } from './state-fs.js';
export { freePort } from './free-port.js';
export { waitFor } from './wait-for.js';

export const LOG: Logger = process.env['FLANNEL_TEST_LOG'] ? createLogger({ level: 'debug' }) : silentLogger();

/**
 * The Windows node's IP in every test: its InternalIP, its `--iface`, and the address of the simulated
 * node's adapter (a /24 with the gateway at .1, src/simulator/state.ts; the same default the model
 * uses without a node IP). Linux peers sit beside it at 10.0.0.1x, or at 10.0.1.x on a /16.
 */
export const WIN_IP = '10.0.0.2';

export const VXLAN_NET_CONF = { Network: '10.244.0.0/16', Backend: { Type: 'vxlan', VNI: 4096, Port: 4789 } };
export const HOSTGW_NET_CONF = { Network: '10.244.0.0/16', Backend: { Type: 'host-gw' } };

/** An agent running in this process. */
export interface RunningAgent {
  agent: Agent;
  dir: string;
  subnetFile: string;
  statePath: string;
  /** The simulated node the agent runs on. */
  sim: SimulatedDataplane;
  /** Its disk and clock, when the test passed them (`startAgent({ state })`). */
  state: StateFs | undefined;
  controller: AbortController;
  done: Promise<void>;
  /** Settles (never rejects) with the error the agent stopped with, or undefined. */
  outcome: Promise<unknown>;
  readonly stop: () => Promise<void>;
  /** The process dies: pending dataplane calls never land, nothing more is written, the agent is aborted. */
  readonly kill: () => Promise<void>;
  /** The agent's /metrics text. */
  readonly metrics: () => Promise<string>;
}

/** How an in-process agent runs, beyond its command line. */
export interface RunOptions {
  resyncMs?: number;
  /** The subnet manager's timings (src/subnet/timings.ts), e.g. its pauses between list and watch rounds. */
  subnetTimings?: AgentOptions['subnetTimings'];
  latency?: DataplaneLatency;
  /** [0,1) source of the model (IDs, MACs, failRate draws); default Math.random. */
  random?: () => number;
  /** The node's disk and clock under the test's control (./state-fs.ts); default node:fs and the system clock. */
  state?: StateFs;
  /** The agent's subnet.env file system (AgentOptions.fs: e.g. a full or read-only disk); default node:fs. */
  subnetEnvFs?: AgentOptions['fs'];
  /** Widen the node's adapter to this prefix length (e.g. 16: Linux peers at 10.0.1.n are on its link). */
  linkPrefixLength?: number;
  /** Prepare the dataplane before the agent runs (injections, fs mode). */
  before?: (sim: SimulatedDataplane, state: StateFs | undefined) => void;
  /** The node's boot time (the simulated node keeps no boot record of its own). */
  bootTimeMs?: AgentOptions['bootTimeMs'];
  /** The agent's logger (e.g. ./log-sink.ts, to wait for a log line); default LOG. */
  log?: Logger;
  /** How often the agent checks the CNI config again (--cni-conf-dir); default the agent's. */
  cniCheckIntervalMs?: number;
  /** How often the agent reads net-conf.json again (AgentOptions.netConfRecheckMs). */
  netConfRecheckMs?: number;
  /** What the simulated HNS reports as its version when the state file names none (default 15.4, src/simulator/hns.ts). */
  hnsVersion?: { Major: number; Minor: number };
}

/**
 * Start an Agent from a parsed command line (`kind: 'run'`, `--dataplane=simulated`) on a simulated node the
 * harness builds from that command line (`--dataplane-state`, the node IP as src/dataplane/factory.ts picks it).
 */
export function runAgent(parsed: ReturnType<typeof parseConfig>, files: { dir: string; subnetFile: string; statePath: string }, opts: RunOptions = {}): RunningAgent {
  if (parsed.kind !== 'run') throw new Error('expected a run config');
  const { config } = parsed;
  const ip = simulatedNodeIP(config);
  const metrics = new Metrics();
  const state = opts.state;
  const sim = new SimulatedDataplane({
    statePath: config.dataplaneState || undefined,
    nodeIP: ip,
    fs: state?.fs,
    clock: state?.clock,
    latency: opts.latency,
    random: opts.random,
    onCall: (op) => metrics.inc(METRIC.simulatedCalls, { op }),
  });
  if (opts.linkPrefixLength !== undefined) {
    const prefixLength = opts.linkPrefixLength;
    editState(sim, (st) => st.adapters.filter((ad) => ad.IPAddress === ip).forEach((ad) => (ad.PrefixLength = prefixLength)));
  }
  opts.before?.(sim, state);
  const log = opts.log ?? LOG;
  const dataplane = simulatedSeams(sim, { log, metrics, clock: systemClock, hnsCallTimeoutMs: config.hnsCallTimeoutSeconds * 1000, hnsVersion: opts.hnsVersion });
  const agent = new Agent({
    config,
    log,
    metrics,
    dataplane,
    resyncMs: opts.resyncMs ?? 200,
    subnetTimings: opts.subnetTimings,
    bootTimeMs: opts.bootTimeMs,
    cniCheckIntervalMs: opts.cniCheckIntervalMs,
    netConfRecheckMs: opts.netConfRecheckMs,
    fs: opts.subnetEnvFs,
  });
  const controller = new AbortController();
  const done = agent.run(controller.signal);
  const outcome = done.then(
    () => undefined,
    (err: unknown) => err,
  );
  return {
    agent,
    ...files,
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
      state?.kill();
      controller.abort(new Error('killed'));
      await outcome;
    },
    metrics: () => metrics.render(),
  };
}

export interface StartOptions extends RunOptions {
  nodeName: string;
  ip: string;
  /** net-conf.json (object or raw text). */
  netConf: unknown;
  /** More agent flags (e.g. `--hns-call-timeout=1`), after the harness's own. */
  extraArgs?: string[];
  /** Another kubeconfig than the cluster's. */
  kubeconfig?: string;
  /** Pass `--ip-masq` (default true). */
  ipMasq?: boolean;
}

export interface ProcessOptions {
  nodeName: string;
  /** net-conf.json (object or raw text). */
  netConf: unknown;
  /** Extra flags (e.g. `--iface=10.0.0.2`, `--public-ip=...`). */
  args?: string[];
  /** Reuse a state file (a restart); default: a new one in the node's directory. */
  statePath?: string;
  /** Extra environment. */
  env?: Record<string, string>;
}

export class TestCluster {
  readonly api = new FakeKubeApiServer();
  readonly dir = mkdtempSync(join(tmpdir(), 'flanneld-it-'));
  private readonly agents: RunningAgent[] = [];
  private readonly processes: SimAgent[] = [];

  async start(): Promise<this> {
    await this.api.start();
    await writeKubeconfig(join(this.dir, 'kubeconfig'), this.api.url);
    return this;
  }

  addWindowsNode(name: string, podCIDR: string | undefined, ip: string): void {
    this.api.addNode(bareNode({ name, podCIDR, internalIP: ip }));
  }

  /**
   * The usual scene of the built-CLI tests: a Windows node `win` (podCIDR 10.244.7.0/24 unless given) and,
   * unless `peer` is false, one Linux vxlan peer `linux-1` (10.244.1.0/24 at 10.0.0.11).
   */
  async withNodes(win: { name: string; internalIP: string; podCIDR?: string }, peer = true): Promise<this> {
    if (peer) this.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'vxlan' }));
    this.addWindowsNode(win.name, win.podCIDR ?? '10.244.7.0/24', win.internalIP);
    return this;
  }

  /** A node's directory, with its net-conf.json written. */
  private nodeDir(nodeName: string, netConf: unknown): { dir: string; netConfPath: string } {
    const dir = join(this.dir, nodeName);
    mkdirSync(dir, { recursive: true });
    const netConfPath = join(dir, 'net-conf.json');
    writeFileSync(netConfPath, typeof netConf === 'string' ? netConf : JSON.stringify(netConf));
    return { dir, netConfPath };
  }

  /** Start an agent in this process for `nodeName`, on the simulated node in `<dir>/<nodeName>/dataplane.json`. */
  startAgent(opts: StartOptions): RunningAgent {
    const { dir, netConfPath } = this.nodeDir(opts.nodeName, opts.netConf);
    const subnetFile = join(dir, 'run', 'flannel', 'subnet.env');
    const statePath = join(dir, 'dataplane.json');
    const parsed = parseConfig(
      [
        '--kube-subnet-mgr',
        `--kubeconfig-file=${opts.kubeconfig ?? join(this.dir, 'kubeconfig')}`,
        `--net-config-path=${netConfPath}`,
        `--subnet-file=${subnetFile}`,
        '--dataplane=simulated',
        `--dataplane-state=${statePath}`,
        `--iface=${opts.ip}`,
        ...(opts.ipMasq === false ? [] : ['--ip-masq']),
        ...(opts.extraArgs ?? []),
      ],
      { NODE_NAME: opts.nodeName },
      { platform: 'linux' },
    );
    const running = runAgent(parsed, { dir, subnetFile, statePath }, opts);
    this.agents.push(running);
    return running;
  }

  /** The state file a node's process uses (may be prepared before it starts). */
  stateOf(nodeName: string): SimNodeState {
    return new SimNodeState(join(this.dir, nodeName, 'dataplane.json'));
  }

  /** Start `node dist/main.js --kube-subnet-mgr --dataplane simulated --dataplane-state F ...` for `nodeName`. */
  async startProcess(opts: ProcessOptions): Promise<SimAgent> {
    if (!existsSync(MAIN)) throw new Error('dist/main.js is missing: run `npm run build` first (npm test does)');
    const { dir, netConfPath } = this.nodeDir(opts.nodeName, opts.netConf);
    const state = opts.statePath ? new SimNodeState(opts.statePath) : this.stateOf(opts.nodeName);
    const port = await freePort();
    const args = [
      MAIN,
      '--kube-subnet-mgr',
      `--kubeconfig-file=${join(this.dir, 'kubeconfig')}`,
      `--net-config-path=${netConfPath}`,
      `--subnet-file=${join(dir, 'subnet.env')}`,
      '--dataplane=simulated',
      `--dataplane-state=${state.path}`,
      '--healthz-ip=127.0.0.1',
      `--healthz-port=${port}`,
      '--log-format=json',
      ...(opts.args ?? []),
    ];
    const child = spawn(process.execPath, args, {
      env: { PATH: process.env['PATH'] ?? '', NODE_NAME: opts.nodeName, ...opts.env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const agent = new SimAgent(child, port, state, dir);
    this.processes.push(agent);
    return agent;
  }

  async stop(): Promise<void> {
    for (const a of this.agents) await a.kill();
    for (const p of this.processes) await p.stop();
    await this.api.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

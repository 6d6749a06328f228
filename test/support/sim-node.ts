// A Windows node on the simulated dataplane, driven from outside: the built CLI (`node dist/main.js
// --dataplane simulated --dataplane-state FILE ...`) runs as its own process against a fake API server,
// and the test edits the node's state file the way kube-proxy, HNS or an admin would change a real node
// (delete the network, add an adapter, install a `faults` rule), then waits until the dataplane is what
// the agent should make of it. Edits go through the model's store (./sim-dataplane.ts), so they take the
// file's lock like every other writer.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SimulatedDataplane, type DataplaneState, type SimAdapter } from '../../src/simulator/model.js';
import type { FaultRule } from '../../src/simulator/faults.js';
import { nextInterfaceIndex } from '../../src/simulator/state.js';
import { policySetting, type HcnNetwork } from '../../src/hns/schema.js';
import { cidrContains } from '../../src/ip4.js';
import { FakeKubeApiServer, bareNode, linuxFlannelNode, writeKubeconfig } from '../../src/demo/kube-fake/api-server.js';
import { freePort, waitFor } from './cluster.js';
import { MAIN } from './flanneld-process.js';
import { editState, removeNetwork } from './sim-dataplane.js';

/** One JSON log line of the agent. */
export type LogLine = Record<string, unknown> & { level: string; message: string };

export interface AdapterSpec {
  name: string;
  ip: string;
  prefixLength?: number;
  /** Metric of the adapter's default route (0.0.0.0/0 via `gateway`); none when undefined. */
  defaultRouteMetric?: number;
  gateway?: string;
  mtu?: number;
}

/** The state file of a node, edited from outside the agent. */
export class SimNodeState {
  constructor(readonly path: string) {}

  /** What the file holds now. */
  read(): DataplaneState {
    return JSON.parse(readFileSync(this.path, 'utf8')) as DataplaneState;
  }

  /** The node's model on this file, for HNS-level changes (create a network or an endpoint as HNS would). */
  model(): SimulatedDataplane {
    return new SimulatedDataplane({ statePath: this.path });
  }

  /** A locked read-modify-write of the file (the agent sees it before its next call). */
  edit(fn: (state: DataplaneState) => void): void {
    editState(this.model(), fn);
  }

  /** Delete a network as `Remove-HnsNetwork` / an HNS restart would (endpoints and vSwitch go with it). */
  deleteNetwork(name: string): boolean {
    return removeNetwork(this.model(), name);
  }

  /** Add a host adapter, with a default route of that metric when `defaultRouteMetric` is given. */
  addAdapter(spec: AdapterSpec): SimAdapter {
    let added: SimAdapter | undefined;
    this.edit((s) => {
      const index = nextInterfaceIndex(s);
      added = { Name: spec.name, InterfaceIndex: index, IPAddress: spec.ip, PrefixLength: spec.prefixLength ?? 24, Mtu: spec.mtu ?? 1500, Forwarding: false };
      s.adapters.push(added);
      if (spec.defaultRouteMetric !== undefined) {
        const gw = spec.gateway ?? spec.ip.replace(/\.\d+$/, '.1');
        s.routes.push({ DestinationPrefix: '0.0.0.0/0', NextHop: gw, InterfaceIndex: index, Metric: spec.defaultRouteMetric });
      }
    });
    return added!;
  }

  /** Append a `faults` rule. */
  addFault(rule: FaultRule): void {
    this.edit((s) => void (s.faults ??= []).push(rule));
  }

  network(name: string): HcnNetwork | undefined {
    return this.read().networks.find((n) => n.Name === name);
  }

  /** DestinationPrefixes of the RemoteSubnetRoute policies on the named Overlay network, sorted. */
  remoteSubnets(name: string): string[] {
    const net = this.network(name);
    return (net?.Policies ?? [])
      .filter((p) => p.Type === 'RemoteSubnetRoute')
      .map((p) => String(p.Settings?.['DestinationPrefix']))
      .sort();
  }

  /** `prefix via nextHop@ifIndex` of every route inside `network`, sorted (host-gw's peer routes). */
  peerRoutes(network: string): string[] {
    return this.read()
      .routes.filter((r) => r.DestinationPrefix !== '0.0.0.0/0' && cidrContains(network, r.DestinationPrefix))
      .map((r) => `${r.DestinationPrefix} via ${r.NextHop}@${r.InterfaceIndex}`)
      .sort();
  }

  /** The adapter a vSwitch network is bound to. */
  adapterOf(name: string): string | undefined {
    const net = this.network(name);
    return net && policySetting(net.Policies, 'NetAdapterName', 'NetworkAdapterName');
  }

  /** Wait until `fn(state)` is truthy (the agent converged). */
  async waitFor<T>(fn: (state: DataplaneState) => T | undefined | false, what: string, timeoutMs = 20_000): Promise<T> {
    return waitFor(() => (existsSync(this.path) ? fn(this.read()) : undefined), what, timeoutMs);
  }
}

export interface SimAgentOptions {
  nodeName: string;
  /** net-conf.json (object or raw text). */
  netConf: unknown;
  /** Extra flags (e.g. `--iface=10.0.0.7`, `--public-ip=...`). */
  args?: string[];
  /** Reuse a state file (a restart); default: a new one in the node's directory. */
  statePath?: string;
  /** Extra environment. */
  env?: Record<string, string>;
}

/** One running `flanneld` process. */
export class SimAgent {
  readonly lines: LogLine[] = [];
  stderr = '';
  readonly exited: Promise<number | null>;
  constructor(
    readonly child: ChildProcess,
    readonly port: number,
    readonly state: SimNodeState,
    readonly dir: string,
  ) {
    child.stderr!.on('data', (d: Buffer) => {
      this.stderr += d.toString();
      const parts = this.stderr.split('\n');
      this.stderr = parts.pop()!;
      for (const l of parts) {
        try {
          this.lines.push(JSON.parse(l) as LogLine);
        } catch {
          this.lines.push({ level: 'raw', message: l });
        }
      }
    });
    this.exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  }

  get subnetFile(): string {
    return join(this.dir, 'subnet.env');
  }

  async metrics(): Promise<string> {
    return (await fetch(`http://127.0.0.1:${this.port}/metrics`)).text();
  }

  async waitReady(timeoutMs = 20_000): Promise<void> {
    await waitFor(async () => (await fetch(`http://127.0.0.1:${this.port}/readyz`).catch(() => undefined))?.status === 200, 'readyz 200', timeoutMs);
  }

  /** Wait for a log line whose message contains `text`. */
  async waitForLog(text: string, timeoutMs = 20_000): Promise<LogLine> {
    return waitFor(() => this.lines.find((l) => l.message.includes(text)), `log line "${text}"`, timeoutMs);
  }

  /** SIGTERM, then the exit code. */
  async stop(): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    return this.exited;
  }

  /** The agent's log, for a failing test's message. */
  dump(): string {
    return this.lines.map((l) => JSON.stringify(l)).join('\n');
  }
}

/** A fake API server plus built-CLI agents, each on its own state file. */
export class SimCluster {
  readonly api = new FakeKubeApiServer();
  readonly dir = mkdtempSync(join(tmpdir(), 'flanneld-sim-'));
  private readonly agents: SimAgent[] = [];

  async start(): Promise<this> {
    if (!existsSync(MAIN)) throw new Error('dist/main.js is missing: run `npm run build` first (npm test does)');
    await this.api.start();
    await writeKubeconfig(join(this.dir, 'kubeconfig'), this.api.url);
    return this;
  }

  /**
   * The usual scene: a Windows node `win` (podCIDR 10.244.7.0/24 unless given) and, unless `peer` is
   * false, one Linux vxlan peer `linux-1` (10.244.1.0/24 at 10.0.0.11).
   */
  async withNodes(win: { name: string; internalIP: string; podCIDR?: string }, peer = true): Promise<this> {
    if (peer) this.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'vxlan' }));
    this.api.addNode(bareNode({ name: win.name, podCIDR: win.podCIDR ?? '10.244.7.0/24', internalIP: win.internalIP }));
    return this;
  }

  /** The state file a node's agent uses (may be prepared before the agent starts). */
  stateOf(nodeName: string): SimNodeState {
    return new SimNodeState(join(this.dir, nodeName, 'dataplane.json'));
  }

  /** Start `node dist/main.js --kube-subnet-mgr --dataplane simulated --dataplane-state F ...`. */
  async startAgent(opts: SimAgentOptions): Promise<SimAgent> {
    const dir = join(this.dir, opts.nodeName);
    mkdirSync(dir, { recursive: true });
    const netConfPath = join(dir, 'net-conf.json');
    writeFileSync(netConfPath, typeof opts.netConf === 'string' ? opts.netConf : JSON.stringify(opts.netConf));
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
    this.agents.push(agent);
    return agent;
  }

  async stop(): Promise<void> {
    for (const a of this.agents) await a.stop();
    await this.api.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

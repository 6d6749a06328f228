// A Windows node on the simulated dataplane, driven from outside: the built CLI (`node dist/main.js
// --dataplane simulated --dataplane-state FILE ...`, started by TestCluster.startProcess in ./cluster.ts)
// runs as its own process against a fake API server, and the test edits the node's state file the way kube-proxy, HNS or an admin would change a real node
// (delete the network, add an adapter, install a `faults` rule), then waits until the dataplane is what
// the agent should make of it. Edits go through the model's store (./sim-dataplane.ts), so they take the
// file's lock like every other writer.
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SimulatedDataplane, type DataplaneState, type SimAdapter } from '../../src/simulator/model.js';
import type { FaultRule } from '../../src/simulator/faults.js';
import { nextInterfaceIndex } from '../../src/simulator/state.js';
import { policySetting, type HcnNetwork } from '../../src/hns/schema.js';
import { cidrContains } from '../../src/basics/ip4.js';
import { editState, removeNetwork } from './sim-dataplane.js';
import { waitFor } from './wait-for.js';

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

  /** The "HNS restarted" fault (src/simulator/objects.ts restartHns): endpoints, added policies, non-persistent networks gone. */
  restartHns(): void {
    this.model().restartHns();
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
    // Its own health server first: a 200 from another process on the port is not this agent's.
    await waitFor(() => this.lines.some((l) => l.message === 'health server listening' && l['port'] === this.port), `the health server on port ${this.port}`, {
      timeoutMs,
      failIf: () =>
        this.child.exitCode !== null || this.child.signalCode !== null
          ? `the agent exited (${this.child.exitCode ?? this.child.signalCode}): ${this.dump().slice(-3000)}`
          : undefined,
    });
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

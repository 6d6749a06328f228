// Integration test support: a fake API server plus Windows agents on simulated dataplanes.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from '../../src/agent.js';
import { parseConfig } from '../../src/config/parse.js';
import { FakeKubeApiServer, bareNode, writeKubeconfig } from '../../src/kube-fake/api-server.js';
import { createLogger, silentLogger, type Logger } from '../../src/log.js';
export { freePort } from './free-port.js';

export { waitFor } from './wait-for.js';

export const LOG: Logger = process.env['FLANNEL_TEST_LOG'] ? createLogger({ level: 'debug' }) : silentLogger();

/**
 * The Windows node's IP in every test: its InternalIP, its `--iface`, and the address of the simulated
 * node's adapter (a /24 with the gateway at .1, src/dataplane/sim-state.ts; the same default the model
 * uses without a node IP). Linux peers sit beside it at 10.0.0.1x, or at 10.0.1.x on a /16.
 */
export const WIN_IP = '10.0.0.2';

export const VXLAN_NET_CONF = { Network: '10.244.0.0/16', Backend: { Type: 'vxlan', VNI: 4096, Port: 4789 } };
export const HOSTGW_NET_CONF = { Network: '10.244.0.0/16', Backend: { Type: 'host-gw' } };

export interface RunningAgent {
  agent: Agent;
  dir: string;
  subnetFile: string;
  statePath: string;
  controller: AbortController;
  done: Promise<void>;
  stop(): Promise<void>;
  /** The agent's /metrics text. */
  readonly metrics: () => Promise<string>;
}

/** Start an Agent from a parsed command line (`kind: 'run'`); `stop()` aborts it and waits. */
export function runAgent(parsed: ReturnType<typeof parseConfig>, files: { dir: string; subnetFile: string; statePath: string; resyncMs?: number }): RunningAgent {
  if (parsed.kind !== 'run') throw new Error('expected a run config');
  const agent = new Agent({ config: parsed.config, log: LOG, resyncMs: files.resyncMs ?? 200 });
  const controller = new AbortController();
  const done = agent.run(controller.signal);
  done.catch(() => undefined);
  return {
    agent,
    dir: files.dir,
    subnetFile: files.subnetFile,
    statePath: files.statePath,
    controller,
    done,
    stop: async () => {
      controller.abort(new Error('test stop'));
      await done.catch(() => undefined);
    },
    metrics: () => agent.metrics.render(),
  };
}

export class TestCluster {
  readonly api = new FakeKubeApiServer();
  readonly dir = mkdtempSync(join(tmpdir(), 'flanneld-it-'));
  private readonly agents: RunningAgent[] = [];

  async start(): Promise<this> {
    await this.api.start();
    await writeKubeconfig(join(this.dir, 'kubeconfig'), this.api.url);
    return this;
  }

  addWindowsNode(name: string, podCIDR: string | undefined, ip: string): void {
    this.api.addNode(bareNode({ name, podCIDR, internalIP: ip }));
  }

  /** Start an agent for `nodeName`; its files live in `<dir>/<nodeName>/`. */
  startAgent(opts: { nodeName: string; ip: string; netConf: unknown; extraArgs?: string[]; resyncMs?: number; kubeconfig?: string }): RunningAgent {
    const dir = join(this.dir, opts.nodeName);
    const netConfPath = join(dir, 'net-conf.json');
    mkdirSync(dir, { recursive: true });
    writeFileSync(netConfPath, typeof opts.netConf === 'string' ? opts.netConf : JSON.stringify(opts.netConf));
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
        '--ip-masq',
        ...(opts.extraArgs ?? []),
      ],
      { NODE_NAME: opts.nodeName },
      { platform: 'linux' },
    );
    const running = runAgent(parsed, { dir, subnetFile, statePath, resyncMs: opts.resyncMs });
    this.agents.push(running);
    return running;
  }

  async stop(): Promise<void> {
    for (const a of this.agents) await a.stop();
    await this.api.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

// One simulated Windows node for `flanneld doctor` run in-process (src/commands/doctor.ts) with the agent's
// own flags, through the seams the agent uses (test/integration/doctor.test.ts, doctor-services.test.ts):
// the fake API server and the node's files under one TestCluster (./cluster.ts), the node `win` at WIN_IP
// with podCIDR 10.244.7.0/24, an agent run once to set the node up, and a copy of the node as it was then,
// put back before each case.
import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { command, type RemovedEndpoint } from '../../src/commands/doctor.js';
import type { CheckRow } from '../../src/commands/doctor-checks.js';
import { SimulatedDataplane } from '../../src/simulator/model.js';
import { HOSTGW_NET_CONF, TestCluster, VXLAN_NET_CONF, WIN_IP, type RunningAgent } from './cluster.js';

export const NODE = 'win';
export const SUBNET = '10.244.7.0/24';

/** What one doctor run said: its exit code, its rows and the endpoints --fix removed (from --json). */
export interface DoctorRun {
  code: number;
  rows: CheckRow[];
  removed: RemovedEndpoint[];
  stdout: string;
  stderr: string;
}

export class DoctorNode {
  private backup: string | undefined;

  private constructor(
    readonly cluster: TestCluster,
    readonly backend: 'vxlan' | 'host-gw',
  ) {}

  /** The cluster with this node's Node and a Linux peer `linux-1` (10.244.1.0/24 at 10.0.0.11) of the backend. */
  static async start(backend: 'vxlan' | 'host-gw' = 'vxlan'): Promise<DoctorNode> {
    const cluster = await new TestCluster().start();
    if (backend === 'vxlan') await cluster.withNodes({ name: NODE, internalIP: WIN_IP, podCIDR: SUBNET });
    else {
      cluster.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'host-gw' }));
      cluster.addWindowsNode(NODE, SUBNET, WIN_IP);
    }
    return new DoctorNode(cluster, backend);
  }

  /** The node's folder: its files and the simulated dataplane's state file. */
  get dir(): string {
    return join(this.cluster.dir, NODE);
  }

  get paths() {
    return {
      netConf: join(this.dir, 'net-conf.json'),
      subnetFile: join(this.dir, 'run', 'flannel', 'subnet.env'),
      state: join(this.dir, 'dataplane.json'),
      vip: join(this.dir, 'sourcevip.json'),
      ipam: join(this.dir, 'ipam'),
      conf: join(this.dir, 'cni', 'net.d'),
      bin: join(this.dir, 'cni', 'bin'),
    };
  }

  /** The flags for the agent's files that the cluster's agent does not place in the node's folder itself. */
  private get ownFiles(): string[] {
    const ipam = `--cni-ipam-data-dir=${this.paths.ipam}`;
    return this.backend === 'vxlan' ? [`--source-vip-file=${this.paths.vip}`, ipam] : [ipam];
  }

  /** The flags doctor is given: the agent's, as the service install's env file holds them, and the CNI folders. */
  get args(): string[] {
    const p = this.paths;
    return [
      `--kubeconfig-file=${join(this.cluster.dir, 'kubeconfig')}`,
      `--net-config-path=${p.netConf}`,
      `--subnet-file=${p.subnetFile}`,
      '--dataplane=simulated',
      `--dataplane-state=${p.state}`,
      `--iface=${WIN_IP}`,
      ...this.ownFiles,
      `--cni-conf-dir=${p.conf}`,
      `--cni-bin-dir=${p.bin}`,
    ];
  }

  /** An agent on the node (in-process, ./cluster.ts startAgent) with the same files doctor is given. */
  startAgent(extraArgs: string[] = [], before?: (sim: SimulatedDataplane) => void): RunningAgent {
    const netConf = this.backend === 'vxlan' ? VXLAN_NET_CONF : HOSTGW_NET_CONF;
    return this.cluster.startAgent({ nodeName: NODE, ip: WIN_IP, netConf, extraArgs: [...this.ownFiles, ...extraArgs], before });
  }

  /** `flanneld doctor ARGS --json` on the node. */
  async doctor(args: readonly string[]): Promise<DoctorRun> {
    let stdout = '';
    let stderr = '';
    const code = await command.run([...args, '--json'], {
      stdout: (t) => void (stdout += t),
      stderr: (t) => void (stderr += t),
      env: { NODE_NAME: NODE },
      platform: 'linux',
    });
    const out = stdout ? (JSON.parse(stdout) as { checks: CheckRow[]; removedEndpoints?: RemovedEndpoint[] }) : undefined;
    return { code, rows: out?.checks ?? [], removed: out?.removedEndpoints ?? [], stdout, stderr };
  }

  sim(): SimulatedDataplane {
    return new SimulatedDataplane({ statePath: this.paths.state });
  }

  /** Keeps a copy of the node as it is now, which `restore` puts back. */
  keep(): void {
    this.backup = `${this.dir}.healthy`;
    cpSync(this.dir, this.backup, { recursive: true });
  }

  restore(): void {
    if (!this.backup) throw new Error('restore() before keep()');
    rmSync(this.dir, { recursive: true, force: true });
    cpSync(this.backup, this.dir, { recursive: true });
  }

  async stop(): Promise<void> {
    await this.cluster.stop();
    if (this.backup) rmSync(this.backup, { recursive: true, force: true });
  }
}

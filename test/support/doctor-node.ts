// One simulated Windows node for `flanneld doctor` run in-process (src/commands/doctor.ts) with the agent's
// own flags, through the seams the agent uses (test/integration/doctor.test.ts, doctor-services.test.ts):
// the fake API server and the node's files under one TestCluster (./cluster.ts), the node `win` at WIN_IP
// with podCIDR 10.244.7.0/24, an agent run once to set the node up, and a copy of the node as it was then,
// put back before each case. host-gw may be dual-stack (docs/compatibility.md "Dual-stack";
// test/integration/doctor-dual-stack.test.ts): IPv6 podCIDRs on both Nodes, the adapter's IPv6 address.
import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { bareNode, linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { command, type RemovedEndpoint } from '../../src/commands/doctor.js';
import type { CheckRow } from '../../src/commands/doctor-checks.js';
import { SimulatedDataplane } from '../../src/simulator/model.js';
import { HOSTGW_NET_CONF, TestCluster, VXLAN_NET_CONF, WIN_IP, type RunningAgent } from './cluster.js';
import { editState } from './sim-dataplane.js';

export const NODE = 'win';
export const SUBNET = '10.244.7.0/24';

/** The dual-stack host-gw scene: the node's IPv6 podCIDR and address, the Linux peer's, the net-conf. */
export const DUAL_STACK = {
  subnet6: 'fd00:10:244:64::/64',
  ip6: 'fd00:10::2',
  peerSubnet6: 'fd00:10:244:1::/64',
  peerIP6: 'fd00:10::11',
  netConf: { ...HOSTGW_NET_CONF, EnableIPv6: true, IPv6Network: 'fd00:10:244::/56' },
} as const;

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
    readonly dualStack: boolean,
  ) {}

  /**
   * The cluster with this node's Node and a Linux peer `linux-1` (10.244.1.0/24 at 10.0.0.11) of the backend;
   * `dualStack` (host-gw): both with DUAL_STACK's IPv6 podCIDRs, the peer with its IPv6 address.
   */
  static async start(backend: 'vxlan' | 'host-gw' = 'vxlan', opts: { dualStack?: boolean } = {}): Promise<DoctorNode> {
    const cluster = await new TestCluster().start();
    const dualStack = backend === 'host-gw' && opts.dualStack === true;
    if (backend === 'vxlan') await cluster.withNodes({ name: NODE, internalIP: WIN_IP, podCIDR: SUBNET });
    else {
      const peer = linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'host-gw' });
      const win = bareNode({ name: NODE, podCIDR: SUBNET, internalIP: WIN_IP });
      if (dualStack) {
        // flannel's IPv6 annotations (pkg/subnet/kube annotations: backend-v6-data, public-ipv6) and podCIDRs per family.
        peer.spec = { podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24', DUAL_STACK.peerSubnet6] };
        Object.assign(peer.metadata.annotations!, { 'flannel.alpha.coreos.com/backend-v6-data': 'null', 'flannel.alpha.coreos.com/public-ipv6': DUAL_STACK.peerIP6 });
        win.spec = { podCIDR: SUBNET, podCIDRs: [SUBNET, DUAL_STACK.subnet6] };
      }
      cluster.api.addNode(peer);
      cluster.api.addNode(win);
    }
    return new DoctorNode(cluster, backend, dualStack);
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
    const netConf = this.backend === 'vxlan' ? VXLAN_NET_CONF : this.dualStack ? DUAL_STACK.netConf : HOSTGW_NET_CONF;
    const ipv6 = (sim: SimulatedDataplane) =>
      editState(sim, (s) => s.adapters.filter((x) => x.IPAddress === WIN_IP).forEach((x) => Object.assign(x, { IPv6Address: DUAL_STACK.ip6, IPv6PrefixLength: 64 })));
    const setUp = this.dualStack
      ? (sim: SimulatedDataplane) => {
          ipv6(sim);
          before?.(sim);
        }
      : before;
    return this.cluster.startAgent({ nodeName: NODE, ip: WIN_IP, netConf, extraArgs: [...this.ownFiles, ...extraArgs], before: setUp });
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

// After a rebuild of the vxlan network HNS may give it another DR MAC than the one asked for with the
// DrMacAddress policy (hcsshim hcn/hcnpolicy.go DrMacAddressNetworkPolicySetting only "sets" it as a
// request). Peers address this node's pods by the VtepMAC in its backend-data, so the agent publishes
// the new one through the kube path (PATCH nodes/<name>/status) instead of only logging it.
import type { SimulatedDataplane } from '../../src/simulator/model.js';
import { afterEach, describe, expect, it } from '@jest/globals';
import type { HcnNetwork } from '../../src/hns/schema.js';
import { bareNode, linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { removeNetwork } from '../support/sim-dataplane.js';
import { TestCluster, VXLAN_NET_CONF, waitFor, WIN_IP } from '../support/cluster.js';

const WIN = 'win-1';
const BACKEND_DATA = 'flannel.alpha.coreos.com/backend-data';
const BACKEND_V6_DATA = 'flannel.alpha.coreos.com/backend-v6-data';

const drMacOf = (net: HcnNetwork | undefined): string | undefined =>
  (net?.Policies?.find((p) => p.Type === 'DrMacAddress')?.Settings as { Address?: string } | undefined)?.Address?.replace(/-/g, ':').toLowerCase();

let cluster: TestCluster;
afterEach(async () => {
  await cluster?.stop();
});

/** A cluster with one Linux peer and the agent on the Windows node, ready; its network and first DR MAC. */
async function startAgent() {
  cluster = await new TestCluster().start();
  cluster.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'vxlan' }));
  cluster.addWindowsNode(WIN, '10.244.100.0/24', WIN_IP);
  const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: VXLAN_NET_CONF });
  await waitFor(() => a.agent.isReady, 'ready');
  const sim = a.sim;
  const network = () => sim.snapshot().networks.find((n) => n.Name === 'flannel.4096');
  return { sim, network, first: drMacOf(network())! };
}

/** From now on this HNS ignores the DR MAC asked for: a create gets a fresh one. */
function ignoreDrMac(sim: SimulatedDataplane): void {
  const create = sim.createNetwork.bind(sim);
  sim.createNetwork = (op, settings, id) => create(op, { ...settings, Policies: (settings.Policies ?? []).filter((p) => p.Type !== 'DrMacAddress') }, id);
}

describe('vxlan: a rebuilt network with another DR MAC', () => {
  it('publishes the new VtepMAC in backend-data', async () => {
    const { sim, network, first } = await startAgent();
    expect(cluster.api.getNode(WIN)!.metadata.annotations![BACKEND_DATA]).toBe(`{"VNI":4096,"VtepMAC":"${first}"}`);

    ignoreDrMac(sim);
    expect(removeNetwork(sim, 'flannel.4096')).toBe(true);

    const second = await waitFor(() => {
      const mac = drMacOf(network());
      return mac !== undefined && mac !== first ? mac : undefined;
    }, 'the network rebuilt with another DR MAC');
    await waitFor(() => cluster.api.getNode(WIN)!.metadata.annotations![BACKEND_DATA] === `{"VNI":4096,"VtepMAC":"${second}"}` || undefined, 'the new VtepMAC published');
    const patches = cluster.api.requests.filter((r) => r.method === 'PATCH' && r.path === `/api/v1/nodes/${WIN}/status`);
    expect(patches.length).toBeGreaterThanOrEqual(2);
  });

  // The rebuild compares the new DR MAC with the VtepMAC published in the lease, not with the old network's
  // MAC: before, a failed publish left the retried rebuild comparing the new network with itself, so the
  // new VtepMAC was never published.
  it('publishes the new VtepMAC on the retried rebuild when the first publish fails', async () => {
    const { sim, network, first } = await startAgent();
    ignoreDrMac(sim);
    // The lease is completed (NetworkUnavailable=False, the other status PATCH) before the fault is armed.
    await waitFor(() => cluster.api.getNode(WIN)!.status?.conditions?.some((c) => c.type === 'NetworkUnavailable' && c.status === 'False') || undefined, 'the lease completed');
    const statusPath = new RegExp(`^/api/v1/nodes/${WIN}/status$`);
    cluster.api.failNext('PATCH', statusPath, 403);
    expect(removeNetwork(sim, 'flannel.4096')).toBe(true);

    const second = await waitFor(() => {
      const mac = drMacOf(network());
      return mac !== undefined && mac !== first ? mac : undefined;
    }, 'the network rebuilt with another DR MAC');
    await waitFor(
      () => cluster.api.getNode(WIN)!.metadata.annotations![BACKEND_DATA] === `{"VNI":4096,"VtepMAC":"${second}"}` || undefined,
      'the new VtepMAC published on the retry',
    );
  });

  // --ipv4-only in a dual-stack cluster: backend-v6-data repeats the IPv4 VTEP for the Linux peers
  // (docs/compatibility.md, "IPv4-only Windows nodes in a dual-stack cluster"), so it follows the new MAC too.
  it('--ipv4-only in a dual-stack cluster: backend-v6-data follows the new VtepMAC', async () => {
    cluster = await new TestCluster().start();
    const win = bareNode({ name: WIN, podCIDR: '10.244.100.0/24', internalIP: WIN_IP });
    win.spec = { podCIDR: '10.244.100.0/24', podCIDRs: ['10.244.100.0/24', 'fd00:10:244:64::/64'] };
    cluster.api.addNode(win);
    const netConf = { ...VXLAN_NET_CONF, EnableIPv6: true, IPv6Network: 'fd00:10:244::/56' };
    const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf, extraArgs: ['--ipv4-only', '--public-ipv6=fd00:10::2'] });
    await waitFor(() => a.agent.isReady, 'ready');
    const network = () => a.sim.snapshot().networks.find((n) => n.Name === 'flannel.4096');
    const first = drMacOf(network())!;
    const annotations = () => cluster.api.getNode(WIN)!.metadata.annotations!;
    expect([annotations()[BACKEND_DATA], annotations()[BACKEND_V6_DATA]]).toEqual([`{"VNI":4096,"VtepMAC":"${first}"}`, `{"VNI":4096,"VtepMAC":"${first}"}`]);

    ignoreDrMac(a.sim);
    expect(removeNetwork(a.sim, 'flannel.4096')).toBe(true);
    const second = await waitFor(() => {
      const mac = drMacOf(network());
      return mac !== undefined && mac !== first ? mac : undefined;
    }, 'the network rebuilt with another DR MAC');
    const want = `{"VNI":4096,"VtepMAC":"${second}"}`;
    await waitFor(() => (annotations()[BACKEND_DATA] === want && annotations()[BACKEND_V6_DATA] === want) || undefined, 'both backend-data annotations name the new VtepMAC');
  });
});

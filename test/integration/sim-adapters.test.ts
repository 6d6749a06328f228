// Where the vSwitch goes on a real node: after a restart the agent's interface is `vEthernet (...)`, and
// a node may have several NICs. The built CLI runs against a state file the test prepares and edits.
// Windows behaviour modelled (docs/simulator.md): an L2Bridge/Overlay network binds a vSwitch
// to one physical adapter (hcsshim hcn NetAdapterName / v1 NetworkAdapterName) and its IP moves to
// `vEthernet (<adapter>)` with a new interface index; a route on a vanished interface fails with 1168.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { bareNode, linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { HOSTGW_NET_CONF, VXLAN_NET_CONF, waitFor, TestCluster } from '../support/cluster.js';
import { type SimNodeState } from '../support/sim-node.js';
import { policySetting } from '../../src/hns/schema.js';

const WIN = 'win-1';
let cluster: TestCluster;
beforeEach(async () => {
  cluster = await (await new TestCluster().start()).withNodes({ name: WIN, internalIP: '10.0.0.7' });
});
afterEach(() => cluster.stop());

const providerAddress = (state: SimNodeState, name: string) => {
  const net = state.network(name);
  return net && policySetting(net.Policies, 'ProviderAddress', 'ProviderAddress');
};

/** A node with two NICs: `Ethernet` 10.0.0.7 (default route, metric 0) and `Ethernet 2` 192.168.5.7 (metric 25). */
function twoNics(state: SimNodeState, metrics: [number, number] = [0, 25]): void {
  state.edit((s) => {
    s.adapters = [{ Name: 'Ethernet', InterfaceIndex: 4, IPAddress: '10.0.0.7', PrefixLength: 24, Mtu: 1500, Forwarding: false }];
    s.routes = [{ DestinationPrefix: '0.0.0.0/0', NextHop: '10.0.0.1', InterfaceIndex: 4, Metric: metrics[0] }];
  });
  state.addAdapter({ name: 'Ethernet 2', ip: '192.168.5.7', defaultRouteMetric: metrics[1], mtu: 9000 });
}

describe('restart after the podCIDR or VNI changed: the new network is built on the physical adapter', () => {
  it.each([
    // A new podCIDR: the Node was deleted and registered again (the apiserver never changes a set one).
    ['the podCIDR', () => void cluster.api.reregisterNode(bareNode({ name: WIN, podCIDR: '10.244.8.0/24', internalIP: '10.0.0.7' })), VXLAN_NET_CONF, '10.244.8.0/24', 4096],
    ['the VNI', () => undefined, { ...VXLAN_NET_CONF, Backend: { ...VXLAN_NET_CONF.Backend, VNI: 4097 } }, '10.244.7.0/24', 4097],
  ])('vxlan, %s changed', async (_what, change, netConf, subnet, vni) => {
    const first = await cluster.startProcess({ nodeName: WIN, netConf: VXLAN_NET_CONF });
    await first.waitReady();
    const state = first.state;
    expect(state.adapterOf('flannel.4096')).toBe('Ethernet');
    const nodeIP = providerAddress(state, 'flannel.4096');
    expect(await first.stop()).toBe(0);

    change();
    const name = vni === 4096 ? 'flannel.4096' : 'flannel.4097';
    const second = await cluster.startProcess({ nodeName: WIN, netConf });
    await waitFor(() => second.child.exitCode !== null || second.lines.some((l) => l.message === 'wrote subnet.env'), 'the restarted agent', 20_000);
    expect(second.child.exitCode).toBeNull();
    expect(second.lines.find((l) => l.message === 'using interface')).toMatchObject({ interface: 'vEthernet (Ethernet)' });
    // (a VNI change also changes the default network name, flannel.<VNI>: the old network names the adapter)
    cluster.api.updateNode('linux-1', (n) => void (n.metadata.annotations!['flannel.alpha.coreos.com/backend-data'] = JSON.stringify({ VNI: vni, VtepMAC: '0e:2a:0a:00:00:0b' })));
    await state.waitFor(() => state.remoteSubnets(name).join() === '10.244.1.0/24', 'the peer on the new network');
    const net = state.network(name)!;
    expect(net.Ipams?.[0]?.Subnets?.[0]?.IpAddressPrefix).toBe(subnet);
    expect(net.Ipams?.[0]?.Subnets?.[0]?.Policies?.[0]?.Settings?.['IsolationId']).toBe(vni);
    expect(state.adapterOf(name)).toBe('Ethernet');
    expect(providerAddress(state, name)).toBe(nodeIP);
  });
});

describe('several NICs', () => {
  it("vxlan, no --iface: the Node's node-public-ip annotation picks Ethernet 2 (not the default route's NIC)", async () => {
    const state = cluster.stateOf(WIN);
    twoNics(state);
    cluster.api.updateNode(WIN, (n) => void (n.metadata.annotations = { 'flannel.alpha.coreos.com/node-public-ip': '192.168.5.7' }));
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: VXLAN_NET_CONF });
    await agent.waitReady();
    expect(agent.lines.find((l) => l.message === 'using interface')).toMatchObject({ interface: 'Ethernet 2', ip: '192.168.5.7' });
    expect(state.adapterOf('flannel.4096')).toBe('Ethernet 2');
    expect(providerAddress(state, 'flannel.4096')).toBe('192.168.5.7');
    expect(state.read().adapters.find((a) => a.Name === 'Ethernet')?.IPAddress).toBe('10.0.0.7');
    expect(cluster.api.getNode(WIN)!.metadata.annotations!['flannel.alpha.coreos.com/public-ip']).toBe('192.168.5.7');
    // the MTU follows the chosen NIC (9000 - 50)
    expect(readFileSync(agent.subnetFile, 'utf8')).toContain('FLANNEL_MTU=8950');
  });

  it('vxlan, no --iface, no public IP: the default route of lowest metric picks the NIC', async () => {
    const state = cluster.stateOf(WIN);
    twoNics(state, [50, 5]);
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: VXLAN_NET_CONF });
    await agent.waitReady();
    expect(state.adapterOf('flannel.4096')).toBe('Ethernet 2');
  });

  it('host-gw, --public-ip on the second NIC: the L2Bridge network and the peer routes follow it', async () => {
    cluster.api.updateNode('linux-1', (n) => {
      n.metadata.annotations!['flannel.alpha.coreos.com/backend-type'] = 'host-gw';
      n.metadata.annotations!['flannel.alpha.coreos.com/backend-data'] = 'null';
      n.metadata.annotations!['flannel.alpha.coreos.com/public-ip'] = '192.168.5.11';
    });
    const state = cluster.stateOf(WIN);
    twoNics(state);
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: HOSTGW_NET_CONF, args: ['--public-ip=192.168.5.7'] });
    await agent.waitReady();
    expect(state.adapterOf('cbr0')).toBe('Ethernet 2');
    const vnic = state.read().adapters.find((a) => a.Name === 'vEthernet (Ethernet 2)')!;
    expect(vnic.IPAddress).toBe('192.168.5.7');
    await state.waitFor(() => state.peerRoutes('10.244.0.0/16').join() === `10.244.1.0/24 via 192.168.5.11@${vnic.InterfaceIndex}`, 'the peer route on vEthernet (Ethernet 2)');
  });

  it('host-gw: the management vNIC gets a new index behind the agent; routes fail with 1168 once, then follow it', async () => {
    cluster.api.updateNode('linux-1', (n) => {
      n.metadata.annotations!['flannel.alpha.coreos.com/backend-type'] = 'host-gw';
      n.metadata.annotations!['flannel.alpha.coreos.com/backend-data'] = 'null';
    });
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: HOSTGW_NET_CONF, args: ['--iface=10.0.0.7'] });
    await agent.waitReady();
    const state = agent.state;
    const old = state.read().adapters.find((a) => a.Name === 'vEthernet (Ethernet)')!.InterfaceIndex;
    await state.waitFor(() => state.peerRoutes('10.244.0.0/16').join() === `10.244.1.0/24 via 10.0.0.11@${old}`, 'the first peer route');

    // The vSwitch's host vNIC comes back with a new index (NIC reset): its routes are gone.
    const fresh = old + 100;
    state.edit((s) => {
      s.adapters.find((a) => a.InterfaceIndex === old)!.InterfaceIndex = fresh;
      s.routes = s.routes.flatMap((r) => (r.InterfaceIndex !== old ? [r] : r.DestinationPrefix === '0.0.0.0/0' ? [{ ...r, InterfaceIndex: fresh }] : []));
    });
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-2', podCIDR: '10.244.2.0/24', publicIP: '10.0.0.12', backendType: 'host-gw' }));
    await state.waitFor(
      () => state.peerRoutes('10.244.0.0/16').join() === `10.244.1.0/24 via 10.0.0.11@${fresh},10.244.2.0/24 via 10.0.0.12@${fresh}`,
      'both peer routes on the new index',
    );
    expect(state.read().adapters.find((a) => a.InterfaceIndex === fresh)?.Forwarding).toBe(true);
    await agent.waitForLog('the management vNIC has a new interface index');
  });
});

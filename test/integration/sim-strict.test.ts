// The simulated HNS is as strict as the real one (src/simulator/refusals.ts), seen through the built
// CLI on a shared state file: each refusal below is what a real node answers, with the source beside it,
// and the agent's reaction is what an operator would see on Windows.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { initialState, serializeState, type DataplaneState } from '../../src/simulator/state.js';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { HOSTGW_NET_CONF, VXLAN_NET_CONF, waitFor, TestCluster } from '../support/cluster.js';
import { removePolicy } from '../support/sim-dataplane.js';

const WIN = 'win-1';
let cluster: TestCluster;
beforeEach(async () => {
  cluster = await (await new TestCluster().start()).withNodes({ name: WIN, internalIP: '10.0.0.7' });
});
afterEach(() => cluster.stop());

/** The peer linux-1 on host-gw, as the host-gw node's cluster runs (a vxlan one it rejects, and is then not ready). */
const hostGwPeer = () => {
  cluster.api.deleteNode('linux-1');
  cluster.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'host-gw' }));
};

const modifyCalls = (metrics: string) => Number(/^flannel_simulated_dataplane_calls_total\{op="HcnModifyNetwork"\} (\d+)$/m.exec(metrics)?.[1] ?? 0);

describe('the simulated HNS refuses what HNS refuses', () => {
  // HCN_E_ADAPTER_NOT_FOUND 0x803B0006 "An adapter was not found." (observed: microsoft/SDN#269,
  // kubernetes-sigs/sig-windows-tools#291, ErrorCode 2151350278 from POST /networks). HNS does not say which
  // adapter; the agent's error does.
  it('rebuilding the network on an adapter that was renamed away: 0x803B0006, and the agent names the adapter', async () => {
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: VXLAN_NET_CONF, args: ['--iface=10.0.0.7'] });
    await agent.waitReady();
    expect(agent.state.adapterOf('flannel.4096')).toBe('Ethernet');
    // As an admin would: Remove-HnsNetwork, then Rename-NetAdapter Ethernet 'Ethernet 3'.
    agent.state.deleteNetwork('flannel.4096');
    agent.state.edit((s) => {
      for (const a of s.adapters) if (a.Name === 'Ethernet') a.Name = 'Ethernet 3';
    });
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-2', podCIDR: '10.244.2.0/24', publicIP: '10.0.0.12', backendType: 'vxlan' }));
    const line = await agent.waitForLog('recreating the HNS network failed', 30_000);
    expect(String(line['error'])).toMatch(/0x803B0006/i);
    expect(String(line['error'])).toContain('[adapter "Ethernet"]');
    expect(agent.state.network('flannel.4096')).toBeUndefined();
  });

  // A second endpoint on an IP another endpoint of the network holds: HCN_E_ADDR_INVALID_OR_RESERVED
  // 0x803B002F (modelled; kube-proxy winkernel hns.go getAllEndpointsByNetwork: "there is a bug in Windows
  // Server 2019 that can cause two endpoints to be created with the same IP address"). Here a pod endpoint
  // took the host-gw bridge endpoint's x.2 (win-bridge's gateway, host-local's first address) while the
  // agent was down: the agent's own endpoint is refused and the agent stops with the HRESULT.
  it('host-gw: a pod endpoint holding the bridge endpoint address refuses the agent its cbr0_ep (0x803B002F)', async () => {
    hostGwPeer();
    const first = await cluster.startProcess({ nodeName: WIN, netConf: HOSTGW_NET_CONF, args: ['--iface=10.0.0.7'] });
    await first.waitReady();
    expect(await first.stop()).toBe(0);
    const state = first.state;
    const net = state.network('cbr0')!;
    const model = state.model();
    state.edit((s) => {
      s.endpoints = s.endpoints.filter((e) => e.Name !== 'cbr0_ep');
      s.adapters = s.adapters.filter((a) => a.Name !== 'vEthernet (cbr0_ep)');
    });
    model.createEndpoint('HcnCreateEndpoint', net.ID!, { Name: 'pod-a', SchemaVersion: { Major: 2, Minor: 0 }, IpConfigurations: [{ IpAddress: '10.244.7.2', PrefixLength: 24 }] });

    const second = await cluster.startProcess({ nodeName: WIN, netConf: HOSTGW_NET_CONF, args: ['--iface=10.0.0.7'], statePath: state.path });
    const code = await second.exited;
    expect(code).not.toBe(0);
    expect(second.dump()).toMatch(/0x803B002F/i);
    expect(state.read().endpoints.map((e) => e.Name)).toEqual(['pod-a']);
  });

  // HNS v1 answers a call on a missing network with 0x80070490 "Element not found." (observed:
  // Azure/aks-engine#168, #853); the agent takes it, like HCN_E_NETWORK_NOT_FOUND on v2, as its network gone.
  it('host-gw: the network deleted behind the agent; v1 says Element not found and the agent rebuilds it', async () => {
    hostGwPeer();
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: HOSTGW_NET_CONF, args: ['--iface=10.0.0.7'] });
    await agent.waitReady();
    const oldId = agent.state.network('cbr0')?.ID;
    expect(agent.state.deleteNetwork('cbr0')).toBe(true);
    const model = agent.state.model();
    expect(JSON.parse(await new (await import('../../src/simulator/hns.js')).SimulatedHnsTransport(model).hnsCall('GET', `/networks/${oldId}`, ''))).toMatchObject({
      Success: false,
      ErrorCode: 0x80070490,
    });
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-2', podCIDR: '10.244.2.0/24', publicIP: '10.0.0.12', backendType: 'host-gw' }));
    await agent.state.waitFor((s) => s.networks.some((n) => n.Name === 'cbr0' && n.ID !== oldId), 'the rebuilt network', 30_000);
    await waitFor(async () => /^flannel_network_rebuilds_total\{result="ok"\} 1$/m.test(await agent.metrics()), 'one rebuild');
  });

  // Removing a policy that is not there: HCN_E_POLICY_NOT_FOUND 0x803B0008 (the HCN error-code reference;
  // modelled). The agent takes it as already gone: no failed pass.
  it('vxlan: a peer whose policy someone else removed leaves; the Remove gets 0x803B0008 and counts as done', async () => {
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-2', podCIDR: '10.244.2.0/24', publicIP: '10.0.0.12', backendType: 'vxlan' }));
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: VXLAN_NET_CONF, args: ['--iface=10.0.0.7'] });
    await agent.waitReady();
    await agent.state.waitFor(() => agent.state.remoteSubnets('flannel.4096').join() === '10.244.1.0/24,10.244.2.0/24', 'both peers');
    expect(removePolicy(agent.state.model(), 'flannel.4096', (p) => p.Settings?.['DestinationPrefix'] === '10.244.2.0/24')).toBe(1);
    const before = modifyCalls(await agent.metrics());
    cluster.api.deleteNode('linux-2');
    await waitFor(async () => modifyCalls(await agent.metrics()) > before, 'the Remove call');
    expect(agent.state.remoteSubnets('flannel.4096')).toEqual(['10.244.1.0/24']);
    const metrics = await agent.metrics();
    expect(metrics).toMatch(/^flannel_dataplane_errors_total\{op="hns\.removeNetworkPolicies"\} 0$/m);
    expect(agent.lines.filter((l) => l.message.includes('reconcile pass failed'))).toEqual([]);
  });
});

describe('policyBatches and --hns-policy-batch-size', () => {
  const peers = [2, 3, 4, 5];
  const addPeers = () => {
    for (const n of peers) cluster.api.addNode(linuxFlannelNode({ name: `linux-${n}`, podCIDR: `10.244.${n}.0/24`, publicIP: `10.0.0.${10 + n}`, backendType: 'vxlan' }));
  };
  /** The node's state file before the agent starts: a fresh node at 10.0.0.7 whose HNS takes one policy per call. */
  const singleNode = () => {
    const state = cluster.stateOf(WIN);
    mkdirSync(dirname(state.path), { recursive: true });
    const doc: DataplaneState = { ...initialState('10.0.0.7'), policyBatches: 'single' };
    writeFileSync(state.path, serializeState(doc));
    return state;
  };
  const all = ['10.244.1.0/24', ...peers.map((n) => `10.244.${n}.0/24`)].join();

  it('a node that takes one policy per call ("single"): the default batch is refused, split, and converges', async () => {
    addPeers();
    const state = singleNode();
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: VXLAN_NET_CONF, args: ['--iface=10.0.0.7'] });
    await agent.waitReady();
    await state.waitFor(() => state.remoteSubnets('flannel.4096').join() === all, 'every peer');
    expect(await agent.metrics()).toMatch(/^flannel_dataplane_errors_total\{op="hns\.addNetworkPolicies"\} [1-9]/m);
  });

  it('--hns-policy-batch-size 1 on the same node: one policy per call, nothing refused', async () => {
    addPeers();
    const state = singleNode();
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: VXLAN_NET_CONF, args: ['--iface=10.0.0.7', '--hns-policy-batch-size=1'] });
    await agent.waitReady();
    await state.waitFor(() => state.remoteSubnets('flannel.4096').join() === all, 'every peer');
    const metrics = await agent.metrics();
    expect(metrics).toMatch(/^flannel_dataplane_errors_total\{op="hns\.addNetworkPolicies"\} 0$/m);
    expect(modifyCalls(metrics)).toBeGreaterThanOrEqual(1 + peers.length);
  });
});

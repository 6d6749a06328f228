// The agent survives what a real Windows node does to it, driven through the built CLI against the
// simulated node's state file edited from outside: HNS refusing one RemoteSubnetRoute
// (HCN_E_ADDR_INVALID_OR_RESERVED 0x803B002F, HCN error code reference), the route stack refusing one
// route, the HNS network deleted while the agent runs (HNS restart, Remove-HnsNetwork), and a wedged loop
// that /healthz must report. NetworkUnavailable is cleared once the first pass was tried, as upstream
// flanneld's CompleteLease does (flannel pkg/subnet/kube/kube.go), even with a peer that keeps failing.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { SimulatedDataplane } from '../../src/simulator/model.js';
import type { FaultRule } from '../../src/simulator/faults.js';
import { bareNode, linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { HOSTGW_NET_CONF, VXLAN_NET_CONF, waitFor, WIN_IP, TestCluster } from '../support/cluster.js';
import { type SimAgent } from '../support/sim-node.js';
import { editState } from '../support/sim-dataplane.js';

const WIN = 'win-1';
const VXLAN = 'flannel.4096';
const VXLAN_DRIVER = 'vxlan RemoteSubnetRoute policies';
const peerCidr = (n: number) => `10.244.${n}.0/24`;

let cluster: TestCluster;
beforeEach(async () => {
  cluster = await new TestCluster().start();
  cluster.api.addNode(bareNode({ name: WIN, podCIDR: '10.244.7.0/24', internalIP: WIN_IP }));
});
afterEach(() => cluster.stop());

function addPeers(ns: number[], backendType: 'vxlan' | 'host-gw'): void {
  for (const n of ns) cluster.api.addNode(linuxFlannelNode({ name: `linux-${n}`, podCIDR: peerCidr(n), publicIP: `10.0.0.${100 + n}`, backendType }));
}

/** The node before the agent's first start, with `faults` already in its state file. */
function prepareNode(faults: FaultRule[]): void {
  const path = cluster.stateOf(WIN).path;
  mkdirSync(dirname(path), { recursive: true });
  editState(new SimulatedDataplane({ statePath: path, nodeIP: WIN_IP }), (s) => void (s.faults = faults));
}

async function status(agent: SimAgent, path: string): Promise<number | undefined> {
  return (await fetch(`http://127.0.0.1:${agent.port}${path}`).catch(() => undefined))?.status;
}

function metric(text: string, name: string, labels: string): number | undefined {
  const prefix = `${name}{${labels}} `;
  const line = text.split('\n').find((l) => l.startsWith(prefix));
  return line === undefined ? undefined : Number(line.slice(prefix.length));
}

function networkUnavailable(): unknown {
  return cluster.api.getNode(WIN)?.status?.conditions?.find((c) => c['type'] === 'NetworkUnavailable')?.['status'];
}

describe('refused items', () => {
  it('vxlan: HNS refuses one RemoteSubnetRoute; every other peer is programmed, it is retried, counted and logged once, and NetworkUnavailable is cleared anyway', async () => {
    const all = [1, 2, 3, 4, 5, 6, 8, 9, 10, 11];
    addPeers(all, 'vxlan');
    prepareNode([{ op: 'HcnModifyNetwork', match: peerCidr(3), hresult: '0x803B002F', remaining: -1 }]);
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: VXLAN_NET_CONF, args: [`--iface=${WIN_IP}`] });
    const state = agent.state;
    const others = all
      .filter((n) => n !== 3)
      .map(peerCidr)
      .sort();
    await state.waitFor(() => state.remoteSubnets(VXLAN).join() === others.join(), 'every peer but the refused one');
    await waitFor(() => networkUnavailable() === 'False', 'NetworkUnavailable=False');
    await waitFor(async () => (metric(await agent.metrics(), 'flannel_dataplane_refusals_total', `driver="${VXLAN_DRIVER}"`) ?? 0) >= 4, 'three retries');
    const m = await agent.metrics();
    expect(metric(m, 'flannel_dataplane_refused_items', `driver="${VXLAN_DRIVER}"`)).toBe(1);
    const refusals = agent.lines.filter((l) => l.message.includes('refused one peer item'));
    expect(refusals).toEqual([expect.objectContaining({ level: 'warn', node: 'linux-3', prefix: peerCidr(3), hresult: '0x803B002F' })]);
    expect(await status(agent, '/healthz')).toBe(200);

    // HNS takes it once the rule is gone.
    state.edit((s) => void (s.faults = []));
    await state.waitFor(() => state.remoteSubnets(VXLAN).includes(peerCidr(3)), 'the refused peer, retried', 40_000);
    await waitFor(async () => metric(await agent.metrics(), 'flannel_dataplane_refused_items', `driver="${VXLAN_DRIVER}"`) === 0, 'gauge back to 0');
  });

  it('host-gw: the route stack refuses one route; the others are written and it is retried alone', async () => {
    addPeers([1, 2, 3, 4], 'host-gw');
    prepareNode([{ op: 'CreateIpForwardEntry2', match: `"${peerCidr(2)}"`, hresult: 87, remaining: -1 }]);
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: HOSTGW_NET_CONF, args: [`--iface=${WIN_IP}`] });
    const state = agent.state;
    const prefixes = () => state.peerRoutes('10.244.0.0/16').map((r) => r.split(' ')[0]);
    await state.waitFor(() => prefixes().join() === [1, 3, 4].map(peerCidr).join(), 'the routes but the refused one');
    await waitFor(() => networkUnavailable() === 'False', 'NetworkUnavailable=False');
    await waitFor(async () => (metric(await agent.metrics(), 'flannel_dataplane_refusals_total', 'driver="host-gw routes"') ?? 0) >= 2, 'a retry');
    expect(agent.lines.filter((l) => l.message.includes('refused one peer item'))).toEqual([
      expect.objectContaining({ node: 'linux-2', prefix: peerCidr(2), hresult: 'status 87' }),
    ]);
    state.edit((s) => void (s.faults = []));
    await state.waitFor(() => prefixes().join() === [1, 2, 3, 4].map(peerCidr).join(), 'every route', 40_000);
  });
});

describe('the HNS network disappears while the agent runs', () => {
  it('vxlan: /readyz is 503 while it is missing; it is recreated with the same subnet, the source VIP re-reserved, subnet.env rewritten for the new MTU, every peer reprogrammed', async () => {
    addPeers([1, 2], 'vxlan');
    const dir = join(cluster.dir, WIN);
    const vipFile = join(dir, 'sourcevip.json');
    const agent = await cluster.startProcess({
      nodeName: WIN,
      netConf: VXLAN_NET_CONF,
      args: [`--iface=${WIN_IP}`, `--source-vip-file=${vipFile}`, '--source-vip-compat-files=none', `--cni-ipam-data-dir=${join(dir, 'ipam')}`],
    });
    const state = agent.state;
    await agent.waitReady();
    await state.waitFor(() => state.remoteSubnets(VXLAN).join() === [1, 2].map(peerCidr).join(), 'the peers');
    const oldId = state.network(VXLAN)!.ID;
    expect(readFileSync(agent.subnetFile, 'utf8')).toContain('FLANNEL_MTU=1450');

    // HNS restarts: the network is gone, the NIC comes back with another MTU, and creating the network
    // fails a few times before it works.
    state.addFault({ op: 'HcnCreateNetwork', hresult: '0x80004005', remaining: 3 });
    state.edit((s) => {
      for (const a of s.adapters) if (a.Name === 'Ethernet') a.Mtu = 1400;
    });
    expect(state.deleteNetwork(VXLAN)).toBe(true);
    await waitFor(async () => (await status(agent, '/readyz')) === 503, '/readyz 503 while the network is missing', 15_000);
    await agent.waitForLog('the HNS network is gone');

    await state.waitFor((s) => s.networks.find((n) => n.Name === VXLAN && n.ID !== oldId), 'the recreated network', 30_000);
    await state.waitFor(() => state.remoteSubnets(VXLAN).join() === [1, 2].map(peerCidr).join(), 'every peer reprogrammed');
    const net = state.network(VXLAN)!;
    expect(net.Ipams?.[0]?.Subnets?.[0]?.IpAddressPrefix).toBe('10.244.7.0/24');
    expect(state.adapterOf(VXLAN)).toBe('Ethernet');
    const vip = state.read().endpoints.find((e) => e.Name === `${VXLAN}_sourcevip`);
    expect(vip?.HostComputeNetwork).toBe(net.ID);
    expect(JSON.parse(readFileSync(vipFile, 'utf8'))).toMatchObject({ ip: '10.244.7.2', endpointId: vip?.ID });
    await waitFor(() => readFileSync(agent.subnetFile, 'utf8').includes('FLANNEL_MTU=1350'), 'subnet.env with the new MTU');
    await agent.waitReady();
    expect(await agent.metrics()).toMatch(/^flannel_network_rebuilds_total\{result="error"\} [1-9]/m);
    expect(await agent.metrics()).toMatch(/^flannel_network_rebuilds_total\{result="ok"\} 1$/m);
  });

  it('host-gw: it is recreated and the routes are written again on the new management vNIC', async () => {
    addPeers([1, 2], 'host-gw');
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: HOSTGW_NET_CONF, args: [`--iface=${WIN_IP}`] });
    const state = agent.state;
    await agent.waitReady();
    await state.waitFor(() => state.peerRoutes('10.244.0.0/16').length === 2, 'the routes');
    const oldIndex = Number(state.peerRoutes('10.244.0.0/16')[0].split('@')[1]);
    expect(state.deleteNetwork('cbr0')).toBe(true);
    await state.waitFor(() => state.network('cbr0'), 'the recreated network', 15_000);
    await state.waitFor(() => {
      const routes = state.peerRoutes('10.244.0.0/16');
      return routes.length === 2 && routes.every((r) => Number(r.split('@')[1]) !== oldIndex);
    }, 'the routes on the new vNIC');
    await agent.waitReady();
  });
});

describe('/healthz', () => {
  it('fails once no pass has succeeded for --healthz-stale-after, and recovers with the dataplane', async () => {
    addPeers([1], 'vxlan');
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: VXLAN_NET_CONF, args: [`--iface=${WIN_IP}`, '--healthz-stale-after=2'] });
    const state = agent.state;
    await agent.waitReady();
    await state.waitFor(() => state.remoteSubnets(VXLAN).length === 1, 'the peer');
    // Idle but healthy beyond the stale time: the last successful pass (as /status reports it) is older
    // than --healthz-stale-after.
    await waitFor(
      async () => {
        const s = (await (await fetch(`http://127.0.0.1:${agent.port}/status`)).json()) as { lastSuccess: string | null };
        return s.lastSuccess !== null && Date.now() - Date.parse(s.lastSuccess) > 2500;
      },
      'the last successful pass older than --healthz-stale-after',
      15_000,
    );
    expect(await status(agent, '/healthz')).toBe(200);

    state.addFault({ op: 'HcnModifyNetwork', hresult: '0x80004005', remaining: -1 });
    addPeers([2], 'vxlan');
    await waitFor(async () => (await status(agent, '/healthz')) === 503, '/healthz 503', 10_000);
    expect(await status(agent, '/readyz')).toBe(200);
    state.edit((s) => void (s.faults = []));
    await waitFor(async () => (await status(agent, '/healthz')) === 200, '/healthz 200 again', 40_000);
    expect(state.remoteSubnets(VXLAN)).toEqual([peerCidr(1), peerCidr(2)]);
  });
});

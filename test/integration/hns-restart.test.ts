// Self-repair after an HNS restart, on the built CLI against the simulated node: the "HNS restarted"
// fault (src/simulator/objects.ts restartHns) drops every endpoint (with its host vNIC), the policies
// added after creation and the non-persistent Overlay network, and the HNS service runs in a new
// process (microsoft/Windows-Containers#278 and #516; Azure/AgentBaker#2085 watches the service's PID).
// The running agent re-applies the network, the host endpoint or source VIP and every peer without a
// restart, records an Event on its Node and counts flannel_hns_restarts_total and
// flannel_drift_repairs_total{kind}.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bareNode, linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { HOSTGW_NET_CONF, VXLAN_NET_CONF, waitFor, WIN_IP, TestCluster, type RunningAgent } from '../support/cluster.js';
import type { SimulatedDataplane } from '../../src/simulator/model.js';
import { logSink } from '../support/log-sink.js';
import { metricValue, readMetric } from '../support/agent-signals.js';
import { PROFILES } from '../support/hns-profiles.js';
import { isFeatureSupported } from '../../src/hns/features.js';
import { METRIC } from '../../src/basics/metrics.js';

const WIN = 'win-1';
const VXLAN = 'flannel.4096';
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

function metric(text: string, sample: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
  return line === undefined ? undefined : Number(line.slice(sample.length + 1));
}

/** A load balancer as kube-proxy creates one for a Service port (winkernel hns.go getLoadBalancer), through HNS. */
function kubeProxyLoadBalancer(sim: SimulatedDataplane, vip: string, protocol: number, port: number): string {
  return sim.createLoadBalancer('HcnCreateLoadBalancer', {
    HostComputeEndpoints: ['6B0D3C5E-7A1F-4B2C-9D8E-0F1A2B3C4D5E'],
    SourceVIP: '10.244.7.2',
    FrontendVIPs: [vip],
    PortMappings: [{ Protocol: protocol, InternalPort: port, ExternalPort: port }],
    SchemaVersion: { Major: 2, Minor: 0 },
  }).ID!;
}

/** Wait until the agent has read the node's load balancers `n` more times (its HNS check, every resync period). */
async function waitForEnumerations(running: RunningAgent, n: number): Promise<void> {
  const count = async () => metricValue(await running.metrics(), 'flannel_simulated_dataplane_calls_total', { op: 'HcnEnumerateLoadBalancers' });
  const start = await count();
  await waitFor(async () => (await count()) >= start + n, `${n} more reads of the load balancers`);
}

function hnsRestartedEvents(): unknown[] {
  return cluster.api.events({ kind: 'Node', name: WIN }).filter((e) => e['reason'] === 'FlannelHNSRestarted');
}

describe('HNS restarts while the agent runs', () => {
  it('host-gw: the L2Bridge network survives, the host endpoint cbr0_ep is recreated and attached, the routes stay; Event and metrics', async () => {
    addPeers([1, 2], 'host-gw');
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: HOSTGW_NET_CONF, args: [`--iface=${WIN_IP}`] });
    const state = agent.state;
    await agent.waitReady();
    await state.waitFor(() => state.peerRoutes('10.244.0.0/16').length === 2, 'the routes');
    const before = state.read().endpoints.find((e) => e.Name === 'cbr0_ep');
    expect(before).toBeDefined();
    expect(metric(await agent.metrics(), 'flannel_hns_restarts_total')).toBe(0);

    state.restartHns();
    expect(state.read().endpoints).toEqual([]);
    await state.waitFor((s) => s.endpoints.find((e) => e.Name === 'cbr0_ep' && e.ID !== before!.ID), 'cbr0_ep recreated', 40_000);
    await state.waitFor((s) => s.adapters.some((a) => a.Name === 'vEthernet (cbr0_ep)'), 'cbr0_ep attached to the host');
    await waitFor(async () => metric(await agent.metrics(), 'flannel_hns_restarts_total') === 1, 'flannel_hns_restarts_total 1');
    const m = await agent.metrics();
    expect(metric(m, 'flannel_drift_repairs_total{kind="host-endpoint"}')).toBe(1);
    expect(metric(m, 'flannel_drift_repairs_total{kind="network"}')).toBe(0);
    await waitFor(() => hnsRestartedEvents().length === 1, 'the FlannelHNSRestarted Event');
    expect(JSON.stringify(hnsRestartedEvents()[0])).toContain('host-endpoint');
    expect(state.peerRoutes('10.244.0.0/16')).toHaveLength(2);
    await agent.waitReady();
    expect(agent.lines.filter((l) => l.message === 'network config')).toHaveLength(1);
    // --restart-service-on-hns-restart is off by default: no service was touched.
    expect(state.read().serviceRestarts).toBeUndefined();
  });

  it('--restart-service-on-hns-restart=kubeproxy: once the network is re-applied, the service is restarted through the SCM (as AKS does)', async () => {
    addPeers([1], 'host-gw');
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: HOSTGW_NET_CONF, args: [`--iface=${WIN_IP}`, '--restart-service-on-hns-restart=kubeproxy'] });
    const state = agent.state;
    await agent.waitReady();
    await state.waitFor(() => state.peerRoutes('10.244.0.0/16').length === 1, 'the route');
    expect(state.read().serviceRestarts).toBeUndefined();

    state.restartHns();
    await state.waitFor((s) => s.serviceRestarts?.['kubeproxy'] === 1, 'kubeproxy restarted', 40_000);
    await waitFor(() => agent.lines.some((l) => l.message === 'restarted service after the HNS restart' && l['service'] === 'kubeproxy'), 'the restart logged');
    // After the host endpoint was back (the rebuild re-applies it first).
    expect(state.read().endpoints.some((e) => e.Name === 'cbr0_ep')).toBe(true);
    expect(metric(await agent.metrics(), 'flannel_hns_restarts_total')).toBe(1);
  });

  // HNS restores kube-proxy's load balancers itself after it restarts (kubernetes#139519): a kube-proxy
  // restarted before that creates them again and fails with 0xb7 there. So the restart waits for them
  // (src/backends/service-restart.ts), and happens once. In this process, on a short resync period: the wait
  // is counted in the agent's reads of the load balancers.
  it("--restart-service-on-hns-restart=kubeproxy with kube-proxy's load balancers: the service is restarted once HNS has restored them, and only once", async () => {
    addPeers([1], 'host-gw');
    const sink = logSink('debug');
    const running = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: HOSTGW_NET_CONF, extraArgs: ['--restart-service-on-hns-restart=kubeproxy'], log: sink.log });
    const sim = running.sim;
    await waitFor(() => running.agent.isReady, 'ready', 20_000);
    const ids = [kubeProxyLoadBalancer(sim, '10.96.0.10', 17, 53), kubeProxyLoadBalancer(sim, '10.96.0.10', 6, 53)];
    // Two more reads of the load balancers: the agent's last check before the restart saw both.
    await waitForEnumerations(running, 2);

    sim.restartHns();
    expect(sim.snapshot().rehydratingLoadBalancers?.map((l) => l.ID)).toEqual(ids);
    const waiting = await waitFor(
      () => sink.entries.find((e) => e['message'] === "waiting for HNS to restore kube-proxy's load balancers before restarting the service"),
      'the wait',
    );
    expect(waiting).toMatchObject({ service: 'kubeproxy', loadBalancers: 2, notRestored: 2 });
    // It looked again and they are still not back: no restart yet.
    await waitForEnumerations(running, 2);
    expect(sim.serviceRestarts('kubeproxy')).toBe(0);

    sim.rehydrateLoadBalancers();
    await waitFor(() => sim.serviceRestarts('kubeproxy') === 1, 'kubeproxy restarted');
    // Never in a loop: the agent's checks go on, and the service is not restarted again.
    await waitForEnumerations(running, 3);
    expect(sim.serviceRestarts('kubeproxy')).toBe(1);
    expect(sim.snapshot().loadBalancers?.map((l) => l.ID)).toEqual(ids);
  });

  it('--restart-service-lb-wait: load balancers HNS does not restore in time: the service is restarted anyway, once, saying how many', async () => {
    addPeers([1], 'host-gw');
    const sink = logSink('debug');
    const running = cluster.startAgent({
      nodeName: WIN,
      ip: WIN_IP,
      netConf: HOSTGW_NET_CONF,
      extraArgs: ['--restart-service-on-hns-restart=kubeproxy', '--restart-service-lb-wait=1'],
      log: sink.log,
    });
    const sim = running.sim;
    await waitFor(() => running.agent.isReady, 'ready', 20_000);
    kubeProxyLoadBalancer(sim, '10.96.0.20', 6, 80);
    await waitForEnumerations(running, 2);

    sim.restartHns();
    const late = await waitFor(
      () => sink.entries.find((e) => e['level'] === 'warn' && String(e['message']).startsWith('HNS did not restore every load balancer in time')),
      'the warning',
    );
    expect(late).toMatchObject({ service: 'kubeproxy', loadBalancers: 1, notRestored: 1, waitedMs: 1000 });
    await waitFor(() => sim.serviceRestarts('kubeproxy') === 1, 'kubeproxy restarted');
    await waitForEnumerations(running, 3);
    expect(sim.serviceRestarts('kubeproxy')).toBe(1);
  });

  // docs/errors.md: a service the SCM will not restart is FLANNEL_ERR_SERVICE, logged, and the agent runs on.
  it('--restart-service-on-hns-restart=kubeproxy, the SCM refusing (ControlService: 5 access denied): logged as FLANNEL_ERR_SERVICE, the agent keeps running', async () => {
    addPeers([1], 'host-gw');
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: HOSTGW_NET_CONF, args: [`--iface=${WIN_IP}`, '--restart-service-on-hns-restart=kubeproxy'] });
    const state = agent.state;
    await agent.waitReady();
    state.addFault({ op: 'ControlService', hresult: '5', remaining: -1 });

    state.restartHns();
    const failed = await agent.waitForLog('restarting service after the HNS restart failed', 40_000);
    expect(failed).toMatchObject({ service: 'kubeproxy', code: 'FLANNEL_ERR_SERVICE' });
    expect(state.read().serviceRestarts).toBeUndefined();
    await agent.waitReady();
  });

  it('vxlan: the Overlay network, its RemoteSubnetRoute policies and the source VIP endpoint are re-applied', async () => {
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
    const oldVip = state.read().endpoints.find((e) => e.Name === `${VXLAN}_sourcevip`)!;

    state.restartHns();
    expect(state.network(VXLAN)).toBeUndefined();
    await state.waitFor(() => state.remoteSubnets(VXLAN).join() === [1, 2].map(peerCidr).join(), 'every peer reprogrammed', 40_000);
    const vip = await state.waitFor((s) => s.endpoints.find((e) => e.Name === `${VXLAN}_sourcevip` && e.ID !== oldVip.ID), 'the source VIP endpoint again');
    expect(vip.IpConfigurations?.[0]?.IpAddress).toBe(oldVip.IpConfigurations?.[0]?.IpAddress);
    await waitFor(() => readFileSync(vipFile, 'utf8').includes(vip.ID!), 'sourcevip.json names the new endpoint');
    await waitFor(async () => metric(await agent.metrics(), 'flannel_hns_restarts_total') === 1, 'flannel_hns_restarts_total 1', 30_000);
    expect(metric(await agent.metrics(), 'flannel_drift_repairs_total{kind="network"}')).toBeGreaterThanOrEqual(1);
    await agent.waitReady();
  });
});

// The re-apply on each HNS profile (../support/hns-profiles.ts). The suite above runs in full on the newest
// (the built CLI's state file names no version: 15.4); the service restarts and the SCM do not depend on the
// HNS version. What does is the rebuild itself: the network is created again through the gates it passed at
// start, vxlan's RemoteSubnetRoute policies (hcsshim hcn/hcnglobals.go RemoteSubnetVersion, 9.2) and, for a
// port other than 4789, its VxlanPort policy (VxlanPortVersion, 10.3; on 9.3 the port stays 4789, and
// vxlan-port.test.ts asserts the refusal of another). In this process, so the agent's HNS check runs on the
// test's short resync period rather than the built CLI's.
describe.each(PROFILES)('HNS restarts on $os (HNS $hns)', ({ version: hnsVersion }) => {
  const restarts = (running: RunningAgent) => readMetric(running.agent.metrics, METRIC.hnsRestarts);

  it('vxlan: the Overlay network (its VxlanPort policy with it), every RemoteSubnetRoute and the source VIP are re-applied', async () => {
    addPeers([1, 2], 'vxlan');
    const port = isFeatureSupported(hnsVersion, 'VxlanPort') ? 8472 : 4789;
    const dir = join(cluster.dir, WIN);
    const running = cluster.startAgent({
      nodeName: WIN,
      ip: WIN_IP,
      netConf: { ...VXLAN_NET_CONF, Backend: { ...VXLAN_NET_CONF.Backend, Port: port } },
      hnsVersion,
      extraArgs: [`--source-vip-file=${join(dir, 'sourcevip.json')}`, '--source-vip-compat-files=none', `--cni-ipam-data-dir=${join(dir, 'ipam')}`],
    });
    const sim = running.sim;
    const network = () => sim.getNetworkByName(VXLAN);
    const remoteSubnets = () =>
      (network()?.Policies ?? [])
        .filter((p) => p.Type === 'RemoteSubnetRoute')
        .map((p) => p.Settings?.['DestinationPrefix'])
        .sort();
    const vip = () => sim.listEndpoints().find((e) => e.Name === `${VXLAN}_sourcevip`);
    await waitFor(() => running.agent.isReady && remoteSubnets().length === 2 && vip(), 'ready with both peers and the source VIP');
    const [oldNetwork, oldVip] = [network()!, vip()!];

    sim.restartHns();
    expect(network()).toBeUndefined();
    await waitFor(() => network() && network()!.ID !== oldNetwork.ID && remoteSubnets().length === 2 && vip(), 'the network, both peers and the source VIP again');
    expect(remoteSubnets()).toEqual([1, 2].map(peerCidr));
    expect((network()!.Policies ?? []).filter((p) => p.Type === 'VxlanPort').map((p) => p.Settings)).toEqual(port === 4789 ? [] : [{ Port: port }]);
    expect(vip()!.IpConfigurations?.[0]?.IpAddress).toBe(oldVip.IpConfigurations?.[0]?.IpAddress);
    await waitFor(async () => (await restarts(running)) === 1, 'flannel_hns_restarts_total 1');
  });

  it('host-gw: the L2Bridge network survives, the host endpoint cbr0_ep is recreated and attached, the routes stay', async () => {
    addPeers([1, 2], 'host-gw');
    const running = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: HOSTGW_NET_CONF, hnsVersion });
    const sim = running.sim;
    const routes = () => sim.snapshot().routes.filter((r) => r.DestinationPrefix.startsWith('10.244.') && r.DestinationPrefix !== '10.244.7.0/24').length;
    const ep = () => sim.listEndpoints().find((e) => e.Name === 'cbr0_ep');
    await waitFor(() => running.agent.isReady && routes() === 2 && ep(), 'ready with both routes');
    const [network, before] = [sim.getNetworkByName('cbr0')!.ID, ep()!.ID];

    sim.restartHns();
    await waitFor(() => ep() && ep()!.ID !== before && sim.snapshot().adapters.some((a) => a.Name === 'vEthernet (cbr0_ep)'), 'cbr0_ep recreated and attached');
    await waitFor(async () => (await restarts(running)) === 1, 'flannel_hns_restarts_total 1');
    expect(sim.getNetworkByName('cbr0')!.ID).toBe(network);
    expect(routes()).toBe(2);
  });
});

// The whole agent over real HTTP (client-node) against the fake API server, on the simulated dataplane.
import { afterEach, describe, expect, it } from '@jest/globals';
import { readFileSync, writeFileSync } from 'node:fs';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { METRIC } from '../../src/basics/metrics.js';
import { HOSTGW_NET_CONF, TestCluster, VXLAN_NET_CONF, waitFor, type RunningAgent, WIN_IP } from '../support/cluster.js';
import { APPLY_PASSES, LEASES_REJECTED, LIST_FAILED, metricValue, readMetricTotal, waitForIncrease, waitForMetric } from '../support/agent-signals.js';
import { logSink } from '../support/log-sink.js';
import { PROFILES } from '../support/hns-profiles.js';

const WIN = 'win-1';
const WIN_CIDR = '10.244.100.0/24';

function policies(a: RunningAgent) {
  const state = a.sim.snapshot();
  const net = state.networks.find((n) => n.Name === a.agent.network?.networkName);
  return (net?.Policies ?? [])
    .filter((p) => p.Type === 'RemoteSubnetRoute')
    .map((p) => p.Settings as { DestinationPrefix: string; ProviderAddress: string; IsolationId: number; DistributedRouterMacAddress: string })
    .sort((x, y) => x.DestinationPrefix.localeCompare(y.DestinationPrefix));
}

function peerRoutes(a: RunningAgent) {
  return a.sim
    .snapshot()
    .routes.filter((r) => r.DestinationPrefix.startsWith('10.244.'))
    .map((r) => `${r.DestinationPrefix} via ${r.NextHop}`)
    .sort();
}

function addLinux(c: TestCluster, n: number, backendType: 'vxlan' | 'host-gw', extra: { vni?: number; vtepMAC?: string } = {}) {
  c.api.addNode(linuxFlannelNode({ name: `linux-${n}`, podCIDR: `10.244.${n}.0/24`, publicIP: `10.0.0.${10 + n}`, backendType, ...extra }));
}

let cluster: TestCluster;
afterEach(async () => {
  await cluster?.stop();
});

// Each backend joins on each HNS profile (../support/hns-profiles.ts: Windows Server 2019, 2022, 2025).
describe.each(PROFILES)('a Windows node ($os, HNS $hns) joins a cluster of Linux flannel nodes', ({ version: hnsVersion }) => {
  it('vxlan: publishes the lease, writes subnet.env and one RemoteSubnetRoute per valid peer', async () => {
    cluster = await new TestCluster().start();
    addLinux(cluster, 1, 'vxlan');
    addLinux(cluster, 2, 'vxlan');
    addLinux(cluster, 3, 'vxlan', { vni: 1 }); // a Linux node left at VNI 1: rejected
    cluster.api.addNode(linuxFlannelNode({ name: 'evil', podCIDR: '0.0.0.0/0', publicIP: '10.0.0.99', backendType: 'vxlan' }));
    cluster.addWindowsNode(WIN, WIN_CIDR, WIN_IP);
    const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: VXLAN_NET_CONF, hnsVersion });

    await waitFor(() => policies(a).length === 2 && a.agent.isReady, 'two policies');
    expect(readFileSync(a.subnetFile, 'utf8')).toBe('FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.100.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n');
    expect(policies(a)).toEqual([
      { DestinationPrefix: '10.244.1.0/24', IsolationId: 4096, ProviderAddress: '10.0.0.11', DistributedRouterMacAddress: '0e:2a:0a:00:00:0b' },
      { DestinationPrefix: '10.244.2.0/24', IsolationId: 4096, ProviderAddress: '10.0.0.12', DistributedRouterMacAddress: '0e:2a:0a:00:00:0c' },
    ]);
    expect(await readMetricTotal(a.agent.metrics, METRIC.leasesRejected)).toBe(2);

    // The annotations, exactly as Linux flanneld writes them, through PATCH nodes/<name>/status.
    const patches = cluster.api.requests.filter((r) => r.method === 'PATCH');
    expect(patches.length).toBeGreaterThanOrEqual(1);
    for (const p of patches) {
      expect(p.path).toBe(`/api/v1/nodes/${WIN}/status`);
      expect(p.contentType).toBe('application/strategic-merge-patch+json');
    }
    const node = cluster.api.getNode(WIN)!;
    const ann = node.metadata.annotations!;
    const net = a.sim.snapshot().networks.find((n) => n.Name === 'flannel.4096')!;
    const drMac = (net.Policies!.find((p) => p.Type === 'DrMacAddress')!.Settings as { Address: string }).Address;
    expect(ann['flannel.alpha.coreos.com/backend-data']).toBe(`{"VNI":4096,"VtepMAC":"${drMac.replace(/-/g, ':').toLowerCase()}"}`);
    expect(ann['flannel.alpha.coreos.com/backend-type']).toBe('vxlan');
    expect(ann['flannel.alpha.coreos.com/kube-subnet-manager']).toBe('true');
    expect(ann['flannel.alpha.coreos.com/public-ip']).toBe(WIN_IP);
    await waitFor(
      () => (cluster.api.getNode(WIN)!.status as { conditions?: { type: string; status: string; reason?: string }[] }).conditions?.find((c) => c.type === 'NetworkUnavailable'),
      'NetworkUnavailable condition',
    ).then((c) => expect(c).toMatchObject({ status: 'False', reason: 'FlannelIsUp' }));

    // The Overlay network as docs/compatibility.md §5 describes it.
    expect(net).toMatchObject({ Type: 'Overlay', Flags: 8 });
    expect(net.Ipams![0].Subnets![0]).toMatchObject({ IpAddressPrefix: WIN_CIDR, Policies: [{ Type: 'VSID', Settings: { IsolationId: 4096 } }] });
    expect(net.Policies!.map((p) => p.Type)).toEqual(expect.arrayContaining(['NetAdapterName', 'HostRoute', 'ProviderAddress', 'DrMacAddress']));
  });

  it('host-gw: L2Bridge cbr0, cbr0_ep at .2 attached, forwarding, one route per peer on the vNIC', async () => {
    cluster = await new TestCluster().start();
    addLinux(cluster, 1, 'host-gw');
    addLinux(cluster, 2, 'host-gw');
    cluster.addWindowsNode(WIN, WIN_CIDR, WIN_IP);
    const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: HOSTGW_NET_CONF, hnsVersion });

    await waitFor(() => peerRoutes(a).length === 2 && a.agent.isReady, 'two routes');
    expect(peerRoutes(a)).toEqual(['10.244.1.0/24 via 10.0.0.11', '10.244.2.0/24 via 10.0.0.12']);
    expect(readFileSync(a.subnetFile, 'utf8')).toBe('FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.100.1/24\nFLANNEL_MTU=1500\nFLANNEL_IPMASQ=true\n');
    const state = a.sim.snapshot();
    const net = state.networks.find((n) => n.Name === 'cbr0')!;
    expect(net.Type).toBe('L2Bridge');
    const ep = state.endpoints.find((e) => e.Name === 'cbr0_ep')!;
    expect(ep.IpConfigurations![0].IpAddress).toBe('10.244.100.2');
    const vnic = state.adapters.find((x) => x.IPAddress === WIN_IP)!;
    expect(vnic.Name).toBe('vEthernet (Ethernet)');
    expect(vnic.Forwarding).toBe(true);
    expect(state.adapters.find((x) => x.IPAddress === '10.244.100.2')!.Forwarding).toBe(true);
    for (const r of state.routes.filter((r) => r.DestinationPrefix.startsWith('10.244.'))) expect(r.InterfaceIndex).toBe(vnic.InterfaceIndex);
    const ann = cluster.api.getNode(WIN)!.metadata.annotations!;
    expect(ann['flannel.alpha.coreos.com/backend-data']).toBe('null');
    expect(ann['flannel.alpha.coreos.com/backend-type']).toBe('host-gw');
  });
});

describe('peers come and go', () => {
  it('adds, replaces on change and removes RemoteSubnetRoute policies; heartbeats cost nothing', async () => {
    cluster = await new TestCluster().start();
    addLinux(cluster, 1, 'vxlan');
    cluster.addWindowsNode(WIN, WIN_CIDR, WIN_IP);
    const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: VXLAN_NET_CONF });
    await waitFor(() => policies(a).length === 1, 'first peer');

    addLinux(cluster, 2, 'vxlan');
    await waitFor(() => policies(a).length === 2, 'second peer');

    cluster.api.updateNode('linux-1', (n) => {
      n.metadata.annotations!['flannel.alpha.coreos.com/public-ip'] = '10.0.0.50';
    });
    await waitFor(() => policies(a).find((p) => p.DestinationPrefix === '10.244.1.0/24')?.ProviderAddress === '10.0.0.50', 'changed peer');
    expect(policies(a)).toHaveLength(2);

    cluster.api.deleteNode('linux-2');
    await waitFor(() => policies(a).length === 1, 'peer removed');

    const sim = a.sim;
    const writes = () => [...sim.calls.entries()].filter(([op]) => !/GET|Enumerate|Query|Open|Close|list|get/i.test(op)).reduce((x, [, n]) => x + n, 0);
    const before = writes();
    expect(before).toBeGreaterThan(0);
    for (let i = 0; i < 20; i++) {
      cluster.api.updateNode('linux-1', (n) => {
        (n.status as { conditions: { lastHeartbeatTime: string }[] }).conditions[0].lastHeartbeatTime = new Date(Date.now() + i * 1000).toISOString();
      });
    }
    // A fence behind the heartbeats on the same watch: a host-gw peer, which a vxlan agent rejects
    // without a write. Once it is counted, every heartbeat before it was read; then two full passes.
    const rejected = metricValue(await a.metrics(), LEASES_REJECTED);
    addLinux(cluster, 9, 'host-gw');
    await waitForMetric(a.metrics, LEASES_REJECTED, rejected + 1, 'the fence after the heartbeats');
    await waitForIncrease(a.metrics, APPLY_PASSES, 2, 'two reconcile passes after the heartbeats');
    expect(writes()).toBe(before);
  });

  it('host-gw: a peer removed while the API server was down is removed after it comes back (410 Gone)', async () => {
    cluster = await new TestCluster().start();
    addLinux(cluster, 1, 'host-gw');
    addLinux(cluster, 2, 'host-gw');
    cluster.addWindowsNode(WIN, WIN_CIDR, WIN_IP);
    const sink = logSink('info');
    const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: HOSTGW_NET_CONF, log: sink.log });
    await waitFor(() => peerRoutes(a).length === 2, 'two routes');

    await cluster.api.stop();
    cluster.api.deleteNode('linux-2');
    addLinux(cluster, 3, 'host-gw');
    cluster.api.compact(); // and the restarted server's new watch cache answers the resume with 410 Gone
    // The dataplane is left as it is while the API is away: the agent tried to relist and failed, then
    // two full passes re-read and diffed it.
    await waitFor(() => sink.entries.some((e) => e['message'] === LIST_FAILED), 'a failed relist while the API server is away', 20_000);
    await waitForIncrease(a.metrics, APPLY_PASSES, 2, 'two reconcile passes after it');
    expect(peerRoutes(a)).toEqual(['10.244.1.0/24 via 10.0.0.11', '10.244.2.0/24 via 10.0.0.12']);
    await cluster.api.start();
    await waitFor(() => peerRoutes(a).join() === '10.244.1.0/24 via 10.0.0.11,10.244.3.0/24 via 10.0.0.13', 'relisted peers', 20_000);
    expect(await readMetricTotal(a.agent.metrics, METRIC.apiReconnects)).toBeGreaterThanOrEqual(1);
  });
});

describe('restarts', () => {
  it('vxlan: keeps a matching network (same ID) and sweeps stale policies left in the state file', async () => {
    cluster = await new TestCluster().start();
    addLinux(cluster, 1, 'vxlan');
    addLinux(cluster, 2, 'vxlan');
    cluster.addWindowsNode(WIN, WIN_CIDR, WIN_IP);
    let a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: VXLAN_NET_CONF });
    await waitFor(() => policies(a).length === 2, 'two policies');
    const id = a.sim.snapshot().networks[0].ID;
    await a.stop();

    // While the agent is down: linux-2 leaves, and someone leaves a stale policy behind.
    cluster.api.deleteNode('linux-2');
    const state = JSON.parse(readFileSync(a.statePath, 'utf8')) as { networks: { Policies: unknown[] }[] };
    state.networks[0].Policies.push({
      Type: 'RemoteSubnetRoute',
      Settings: { DestinationPrefix: '10.244.77.0/24', IsolationId: 4096, ProviderAddress: '10.0.0.77', DistributedRouterMacAddress: '0e:2a:0a:00:00:4d' },
    });
    writeFileSync(a.statePath, JSON.stringify(state));

    a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: VXLAN_NET_CONF });
    await waitFor(() => a.agent.network && policies(a).length === 1, 'swept policies');
    expect(policies(a).map((p) => p.DestinationPrefix)).toEqual(['10.244.1.0/24']);
    const nets = a.sim.snapshot().networks;
    expect(nets).toHaveLength(1);
    expect(nets[0].ID).toBe(id);
  });

  it("host-gw: keeps cbr0 (same ID) and sweeps the stale routes it created; an admin's routes, inside the cluster network too, are kept", async () => {
    cluster = await new TestCluster().start();
    addLinux(cluster, 1, 'host-gw');
    addLinux(cluster, 9, 'host-gw');
    cluster.addWindowsNode(WIN, WIN_CIDR, WIN_IP);
    let a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: HOSTGW_NET_CONF });
    await waitFor(() => peerRoutes(a).length === 2, 'two routes');
    const before = a.sim.snapshot();
    const id = before.networks[0].ID;
    const vnicIndex = before.adapters.find((x) => x.IPAddress === WIN_IP)!.InterfaceIndex;
    await a.stop();
    // linux-9 leaves while the agent is down: its route (the agent's, recorded in routes.json) is stale.
    cluster.api.deleteNode('linux-9');

    const state = JSON.parse(readFileSync(a.statePath, 'utf8')) as { routes: unknown[] };
    state.routes.push({ DestinationPrefix: '192.168.50.0/24', NextHop: '10.0.0.1', InterfaceIndex: vnicIndex, Metric: 256 });
    // An administrator's routes inside the cluster CIDR that flanneld never created.
    state.routes.push({ DestinationPrefix: '10.244.200.0/24', NextHop: '10.0.0.99', InterfaceIndex: vnicIndex, Metric: 256 });
    state.routes.push({ DestinationPrefix: '10.244.1.0/25', NextHop: '10.0.0.98', InterfaceIndex: vnicIndex, Metric: 256 });
    writeFileSync(a.statePath, JSON.stringify(state));

    const sink = logSink('info');
    a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: HOSTGW_NET_CONF, log: sink.log });
    await waitFor(() => a.agent.network && !peerRoutes(a).includes('10.244.9.0/24 via 10.0.0.19'), 'the stale route swept');
    await waitFor(() => a.agent.network?.status().inSync, 'in sync');
    const after = a.sim.snapshot();
    expect(peerRoutes(a)).toEqual(['10.244.1.0/24 via 10.0.0.11', '10.244.1.0/25 via 10.0.0.98', '10.244.200.0/24 via 10.0.0.99']);
    expect(after.routes.some((r) => r.DestinationPrefix === '192.168.50.0/24')).toBe(true); // not ours: kept
    expect(after.networks[0].ID).toBe(id);
    // The foreign route overlapping linux-1's subnet is told, once; the one overlapping no peer is not.
    const told = sink.entries.filter((l) => String(l['message']).startsWith('a route flanneld did not create overlaps'));
    expect(told).toEqual([expect.objectContaining({ level: 'warn', route: '10.244.1.0/25', nextHop: '10.0.0.98', peerSubnet: '10.244.1.0/24' })]);
  });
});

describe('bad input', () => {
  it('podCIDR outside Network fails with the upstream message', async () => {
    cluster = await new TestCluster().start();
    cluster.addWindowsNode(WIN, '10.99.1.0/24', WIN_IP);
    const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: VXLAN_NET_CONF });
    await expect(a.done).rejects.toMatchObject({
      code: 'FLANNEL_ERR_NODE',
      message: `subnet "10.244.0.0/16" specified in the flannel net config doesn't contain "10.99.1.0/24" PodCIDR of the "${WIN}" node`,
    });
    expect(a.agent.isReady).toBe(false);
  });

  it('a bad kubeconfig fails with a coded error and writes nothing', async () => {
    cluster = await new TestCluster().start();
    const bad = `${cluster.dir}/bad-kubeconfig`;
    writeFileSync(bad, 'this: [is not: a kubeconfig');
    const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: VXLAN_NET_CONF, kubeconfig: bad });
    await expect(a.done).rejects.toMatchObject({ code: 'FLANNEL_ERR_KUBE' });
  });

  it('a bad net-conf.json fails with a coded error naming the problem', async () => {
    cluster = await new TestCluster().start();
    cluster.addWindowsNode(WIN, WIN_CIDR, WIN_IP);
    const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: { Network: '10.244.0.0/16', Backend: { Type: 'vxlan', VNI: 1 } } });
    await expect(a.done).rejects.toMatchObject({ code: 'FLANNEL_ERR_NET_CONF' });
  });
});

describe('two Windows agents against one API server', () => {
  it('see each other (vxlan)', async () => {
    cluster = await new TestCluster().start();
    addLinux(cluster, 1, 'vxlan');
    cluster.addWindowsNode('win-a', '10.244.100.0/24', '10.0.0.2');
    cluster.addWindowsNode('win-b', '10.244.101.0/24', '10.0.0.3');
    const a = cluster.startAgent({ nodeName: 'win-a', ip: '10.0.0.2', netConf: VXLAN_NET_CONF });
    const b = cluster.startAgent({ nodeName: 'win-b', ip: '10.0.0.3', netConf: VXLAN_NET_CONF });
    await waitFor(() => policies(a).length === 2 && policies(b).length === 2, 'both see two peers');
    const bMac = (JSON.parse(cluster.api.getNode('win-b')!.metadata.annotations!['flannel.alpha.coreos.com/backend-data']) as { VtepMAC: string }).VtepMAC;
    expect(policies(a).find((p) => p.DestinationPrefix === '10.244.101.0/24')).toEqual({
      DestinationPrefix: '10.244.101.0/24',
      IsolationId: 4096,
      ProviderAddress: '10.0.0.3',
      DistributedRouterMacAddress: bMac,
    });
    expect(policies(b).map((p) => p.DestinationPrefix)).toEqual(['10.244.1.0/24', '10.244.100.0/24']);
  });
});

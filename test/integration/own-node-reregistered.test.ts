// The agent's own Node is deleted (kubectl delete node, a node pool's repair) and its kubelet registers it
// again: a new uid and, from the node IPAM controller, possibly a new podCIDR (a set podCIDR never changes
// in place: pkg/apis/core/validation ValidateNodeUpdate). The agent notices it from its Node watch and
// leases again without a restart: annotations, NetworkUnavailable=False, subnet.env and, for a new podCIDR,
// a network rebuilt on it, with an Event. While the Node stays deleted it keeps the dataplane and is not
// ready, saying why.
import { afterEach, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { bareNode, linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { renderStatusTable } from '../../src/commands/status.js';
import { HOSTGW_NET_CONF, TestCluster, VXLAN_NET_CONF, waitFor, type RunningAgent, WIN_IP } from '../support/cluster.js';
import { logSink } from '../support/log-sink.js';

const WIN = 'win-1';
const OLD_CIDR = '10.244.100.0/24';
const NEW_CIDR = '10.244.101.0/24';

let cluster: TestCluster;
afterEach(async () => {
  await cluster?.stop();
});

const conditionOf = (c: TestCluster) =>
  (c.api.getNode(WIN)?.status as { conditions?: { type: string; status: string; reason?: string }[] } | undefined)?.conditions?.find((x) => x.type === 'NetworkUnavailable');

function ownNetworkSubnet(a: RunningAgent): string | undefined {
  const net = a.sim.snapshot().networks.find((n) => n.Name === a.agent.network?.networkName);
  return net?.Ipams?.[0]?.Subnets?.[0]?.IpAddressPrefix;
}

function peerPrefixes(a: RunningAgent, backend: 'vxlan' | 'host-gw'): string[] {
  const s = a.sim.snapshot();
  if (backend === 'host-gw') return s.routes.filter((r) => r.DestinationPrefix === '10.244.1.0/24').map((r) => r.DestinationPrefix);
  const net = s.networks.find((n) => n.Name === a.agent.network?.networkName);
  return (net?.Policies ?? []).filter((p) => p.Type === 'RemoteSubnetRoute').map((p) => (p.Settings as { DestinationPrefix: string }).DestinationPrefix);
}

describe.each([
  ['vxlan', VXLAN_NET_CONF],
  ['host-gw', HOSTGW_NET_CONF],
] as const)('%s: the own Node deleted and registered again with a new podCIDR', (backend, netConf) => {
  it('keeps the dataplane and is not ready while it is gone, then leases again live on the new podCIDR', async () => {
    cluster = await new TestCluster().start();
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: backend }));
    cluster.addWindowsNode(WIN, OLD_CIDR, WIN_IP);
    const sink = logSink('info');
    const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf, log: sink.log });
    await waitFor(() => a.agent.isReady && peerPrefixes(a, backend).length === 1 && conditionOf(cluster)?.status === 'False', 'the agent ready with its peer');
    const oldUid = cluster.api.getNode(WIN)!.metadata.uid;

    // Deleted: noticed from the watch, said, not ready; the dataplane stays as it is.
    cluster.api.deleteNode(WIN);
    await waitFor(() => !a.agent.isReady, 'not ready once the own Node is deleted');
    expect(sink.entries.some((e) => e['message'] === 'own Node deleted from the API server; keeping the dataplane, not ready until it is registered again')).toBe(true);
    const status = await a.agent.status();
    expect(status.inSync).toBe(false);
    expect(status.ownNode).toMatchObject({ state: 'deleted' });
    expect(status.ownNode?.reason).toMatch(/deleted/);
    // /readyz says why (the health server's body is notReadyReason).
    expect(a.agent.notReadyReason()).toMatch(/^own-node-deleted: the own Node "win-1" was deleted/);
    expect(renderStatusTable(status)).toMatch(/Own Node\s+DELETED: the own Node "win-1" was deleted/);
    expect(ownNetworkSubnet(a)).toBe(OLD_CIDR);
    expect(peerPrefixes(a, backend)).toEqual(['10.244.1.0/24']);

    // Registered again by its kubelet, with a new uid and a new podCIDR: leased again without a restart.
    const again = cluster.api.addNode(bareNode({ name: WIN, podCIDR: NEW_CIDR, internalIP: WIN_IP }));
    expect(again.metadata.uid).not.toBe(oldUid);
    await waitFor(() => readFileSync(a.subnetFile, 'utf8').includes('FLANNEL_SUBNET=10.244.101.1/24'), 'subnet.env on the new podCIDR', 20_000);
    await waitFor(() => a.agent.isReady && conditionOf(cluster)?.status === 'False', 'ready again with the condition on the new Node', 20_000);
    const ann = cluster.api.getNode(WIN)!.metadata.annotations!;
    expect(ann['flannel.alpha.coreos.com/kube-subnet-manager']).toBe('true');
    expect(ann['flannel.alpha.coreos.com/backend-type']).toBe(backend);
    expect(ann['flannel.alpha.coreos.com/public-ip']).toBe(WIN_IP);
    expect(conditionOf(cluster)).toMatchObject({ status: 'False', reason: 'FlannelIsUp' });
    expect(ownNetworkSubnet(a)).toBe(NEW_CIDR);
    expect(a.agent.network?.lease.subnet).toBe(NEW_CIDR);
    await waitFor(() => peerPrefixes(a, backend).length === 1, 'the peer programmed on the new network');
    expect((await a.agent.status()).ownNode).toBeUndefined();
    expect(a.agent.notReadyReason()).toBeUndefined();
    expect(sink.entries.find((e) => e['message'] === 'own Node registered again; leasing again')).toMatchObject({ node: WIN, previousSubnet: OLD_CIDR, subnet: NEW_CIDR });
    await waitFor(() => cluster.api.events({ kind: 'Node', name: WIN }).some((e) => e['reason'] === 'FlannelNodeReregistered'), 'the Event');
    const ev = cluster.api.events({ kind: 'Node', name: WIN }).find((e) => e['reason'] === 'FlannelNodeReregistered')!;
    expect(ev['message']).toContain(NEW_CIDR);
    expect(a.agent.phase).toBe('running');
  });
});

// The agent's own Node is deleted (kubectl delete node, a node pool's repair) and its kubelet registers it
// again: a new uid and, from the node IPAM controller, possibly a new podCIDR (a set podCIDR never changes
// in place: pkg/apis/core/validation ValidateNodeUpdate). The agent notices it from its Node watch and
// leases again without a restart: annotations, NetworkUnavailable=False, subnet.env and, for a new podCIDR,
// a network rebuilt on it, with an Event. While the Node stays deleted it keeps the dataplane and is not
// ready, saying why.
import { afterEach, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
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

// The own Node registered again with the podCIDR an older peer holds (a provisioning tool that sets
// spec.podCIDR, or a hand edit): the agent applies to itself the rule it applies to peers (src/peers/store.ts,
// docs/compatibility.md "Who holds a contested subnet": the older Node keeps it). It does not move its
// network onto that subnet, keeps its old dataplane and the peer's route, says why it is not ready with a
// fix, and raises FlannelSubnetContested; once the subnet is free (the stale peer deleted) or the own Node
// has another podCIDR, it leases again by itself.
const PEER_CIDR = '10.244.1.0/24';

/**
 * The agent ready beside the older peer linux-1 (on PEER_CIDR) and `others`, then its Node deleted and registered
 * again with `podCIDR`, until the agent has handled it: the contest named, or (the behaviour before the contest
 * rule) subnet.env on that podCIDR.
 */
async function reregistered(backend: 'vxlan' | 'host-gw', netConf: unknown, podCIDR: string, others: ReturnType<typeof bareNode>[] = []) {
  cluster = await new TestCluster().start();
  cluster.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: PEER_CIDR, publicIP: '10.0.0.11', backendType: backend }));
  for (const n of others) cluster.api.addNode(n);
  cluster.addWindowsNode(WIN, OLD_CIDR, WIN_IP);
  const sink = logSink('info');
  const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf, log: sink.log });
  await waitFor(() => a.agent.isReady && peerPrefixes(a, backend).length === 1 && conditionOf(cluster)?.status === 'False', 'the agent ready with its peer');
  const envBefore = readFileSync(a.subnetFile, 'utf8');

  cluster.api.deleteNode(WIN);
  await waitFor(() => !a.agent.isReady, 'not ready once the own Node is deleted');
  cluster.api.addNode(bareNode({ name: WIN, podCIDR, internalIP: WIN_IP }));
  const onNewSubnet = `FLANNEL_SUBNET=${podCIDR.replace(/\.0\/24$/, '.1/24')}`;
  await waitFor(() => a.agent.notReadyReason()?.startsWith('own-subnet-contested') || readFileSync(a.subnetFile, 'utf8').includes(onNewSubnet), 'the re-registration handled', {
    timeoutMs: 20_000,
    detail: () => `not ready: ${a.agent.notReadyReason() ?? 'no reason'}`,
  });
  return { a, sink, envBefore };
}

describe('the own Node registered again with the podCIDR of an older peer', () => {
  const contestedEvents = () => cluster.api.events({ kind: 'Node', name: WIN }).filter((e) => e['reason'] === 'FlannelSubnetContested');

  it('host-gw: keeps its old network and the peer route, not ready with the reason and a fix, an Event; leases again once the stale peer is deleted', async () => {
    const { a, sink, envBefore } = await reregistered('host-gw', HOSTGW_NET_CONF, PEER_CIDR);
    expect(a.agent.isReady).toBe(false);
    const why = a.agent.notReadyReason()!;
    expect(why).toMatch(/^own-subnet-contested: the own Node "win-1" was registered again with podCIDR 10\.244\.1\.0\/24, which the older Node "linux-1" holds/);
    expect(why).toMatch(/; fix: .*kubectl delete node win-1.*kubectl delete node linux-1/);
    const status = await a.agent.status();
    expect(status.ownNode).toMatchObject({ state: 'contested', reason: expect.stringContaining('linux-1') });
    expect(status.inSync).toBe(false);
    expect(renderStatusTable(status)).toMatch(/Own Node\s+CONTESTED: the own Node "win-1" was registered again/);
    // The old dataplane: the network on the old podCIDR, the peer's route, subnet.env as it was.
    expect(ownNetworkSubnet(a)).toBe(OLD_CIDR);
    expect(a.agent.network?.lease.subnet).toBe(OLD_CIDR);
    expect(peerPrefixes(a, 'host-gw')).toEqual([PEER_CIDR]);
    expect(readFileSync(a.subnetFile, 'utf8')).toBe(envBefore);
    await waitFor(() => contestedEvents().length === 1, 'the FlannelSubnetContested Event');
    expect(contestedEvents()[0]['message']).toMatch(/podCIDR 10\.244\.1\.0\/24, which the older Node linux-1 holds/);
    expect(sink.entries.some((e) => e['message'] === 'own Node registered again; leasing again')).toBe(false);
    // The scheduler sees what /readyz says: NetworkUnavailable=True on the re-registered Node, with the
    // contest's reason (docs/troubleshooting.md, The Node was deleted), told without waiting for a probe.
    await waitFor(() => conditionOf(cluster)?.status === 'True', 'NetworkUnavailable=True on the contested Node', {
      timeoutMs: 20_000,
      detail: () => JSON.stringify(conditionOf(cluster) ?? 'no condition'),
    });
    expect(conditionOf(cluster)).toMatchObject({ reason: 'FlannelSubnetContested', message: expect.stringMatching(/older Node "linux-1" holds.*; fix: /) });

    // The fix: the stale peer is deleted; the subnet is free, the agent leases again on it by itself.
    cluster.api.deleteNode('linux-1');
    await waitFor(() => readFileSync(a.subnetFile, 'utf8').includes('FLANNEL_SUBNET=10.244.1.1/24'), 'subnet.env on the freed podCIDR', 20_000);
    await waitFor(() => a.agent.isReady && ownNetworkSubnet(a) === PEER_CIDR, 'ready on the freed podCIDR', 20_000);
    expect(a.agent.notReadyReason()).toBeUndefined();
    expect((await a.agent.status()).ownNode).toBeUndefined();
    await waitFor(() => conditionOf(cluster)?.status === 'False', 'NetworkUnavailable=False once the subnet is free', 20_000);
    expect(conditionOf(cluster)).toMatchObject({ reason: 'FlannelIsUp' });
  });

  it('vxlan: the own Node deleted and registered again with a podCIDR of its own ends the contest', async () => {
    const { a } = await reregistered('vxlan', VXLAN_NET_CONF, PEER_CIDR);
    expect(a.agent.notReadyReason()).toMatch(/^own-subnet-contested: /);
    expect(ownNetworkSubnet(a)).toBe(OLD_CIDR);
    expect(peerPrefixes(a, 'vxlan')).toEqual([PEER_CIDR]);

    // The other fix: the own Node deleted again; registered with a free podCIDR, it is leased again.
    cluster.api.deleteNode(WIN);
    await waitFor(() => a.agent.notReadyReason()?.startsWith('own-node-deleted') === true, 'the own Node deleted again');
    cluster.api.addNode(bareNode({ name: WIN, podCIDR: NEW_CIDR, internalIP: WIN_IP }));
    await waitFor(() => readFileSync(a.subnetFile, 'utf8').includes('FLANNEL_SUBNET=10.244.101.1/24'), 'subnet.env on the new podCIDR', 20_000);
    await waitFor(() => a.agent.isReady && ownNetworkSubnet(a) === NEW_CIDR && peerPrefixes(a, 'vxlan').length === 1, 'ready with the peer on the new podCIDR', 20_000);
    expect(peerPrefixes(a, 'vxlan')).toEqual([PEER_CIDR]);
  });
});

// The own Node registered again with the podCIDR of an older Node that flannel has not annotated yet (its
// flanneld has not started). The rule is the first start's (docs/compatibility.md, "Who holds a contested
// subnet"): every Node with that spec.podCIDR counts, annotated or not, and the older one keeps it, so that
// when the older Node's flanneld starts (it lists the Nodes, finds itself older and goes on) exactly one of
// the two has published the subnet. Upstream takes its Node's podCIDR as its lease whatever others hold
// (flannel pkg/subnet/kube/kube.go AcquireLease).
describe('the own Node registered again with the podCIDR of an older Node flannel has not annotated', () => {
  it('vxlan: keeps its old network, not ready naming that Node, publishes nothing on its subnet; leases again once that Node is deleted', async () => {
    const UNANNOTATED_CIDR = '10.244.50.0/24';
    const waiting = bareNode({ name: 'linux-new', podCIDR: UNANNOTATED_CIDR, internalIP: '10.0.0.12' });
    waiting.metadata.creationTimestamp = '2020-01-01T00:00:00Z';
    const { a, envBefore } = await reregistered('vxlan', VXLAN_NET_CONF, UNANNOTATED_CIDR, [waiting]);
    expect(a.agent.notReadyReason()).toMatch(
      /^own-subnet-contested: the own Node "win-1" was registered again with podCIDR 10\.244\.50\.0\/24, which the older Node "linux-new" holds/,
    );
    expect(readFileSync(a.subnetFile, 'utf8')).toBe(envBefore);
    expect(ownNetworkSubnet(a)).toBe(OLD_CIDR);
    expect(peerPrefixes(a, 'vxlan')).toEqual([PEER_CIDR]);
    expect(Object.keys(cluster.api.getNode(WIN)?.metadata.annotations ?? {}).filter((k) => k.startsWith('flannel.alpha.coreos.com/'))).toEqual([]);
    await waitFor(() => conditionOf(cluster)?.status === 'True', 'NetworkUnavailable=True on the contested Node', 20_000);
    expect(conditionOf(cluster)).toMatchObject({ reason: 'FlannelSubnetContested' });

    // That Node's flanneld starts and publishes its lease: it keeps the subnet as a peer now, still against this node.
    const annotations = linuxFlannelNode({ name: 'linux-new', podCIDR: UNANNOTATED_CIDR, publicIP: '10.0.0.12', backendType: 'vxlan' }).metadata.annotations;
    cluster.api.updateNode('linux-new', (n) => void (n.metadata.annotations = { ...n.metadata.annotations, ...annotations }));
    await waitFor(() => peerPrefixes(a, 'vxlan').length === 2, 'the older Node routed as a peer', 20_000);
    expect(a.agent.notReadyReason()).toMatch(/^own-subnet-contested: .*which the older Node "linux-new" holds/);
    expect(readFileSync(a.subnetFile, 'utf8')).toBe(envBefore);

    // The older Node was stale: deleted, the subnet is free and the agent leases on it by itself.
    cluster.api.deleteNode('linux-new');
    await waitFor(() => readFileSync(a.subnetFile, 'utf8').includes('FLANNEL_SUBNET=10.244.50.1/24'), 'subnet.env on the freed podCIDR', 20_000);
    await waitFor(() => a.agent.isReady && ownNetworkSubnet(a) === UNANNOTATED_CIDR && peerPrefixes(a, 'vxlan').length === 1, 'ready on the freed podCIDR', 20_000);
    await waitFor(() => conditionOf(cluster)?.status === 'False', 'NetworkUnavailable=False once the subnet is free', 20_000);
  });
});

// The re-registration seen in a relist, not in the watch: the API server was away (or the watch expired,
// 410 Gone, https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes)
// while the own Node was deleted and registered again with the podCIDR of an older Node the agent has not
// seen, and the list that follows holds both. The older Node may come after the own Node in the list (its
// name sorts later) or before it in the same page; either way the agent decides once the list is complete,
// as from the watch: it keeps its network, is not ready naming that Node, and deletes nothing.
describe('the own Node registered again, seen in a relist with an older Node of the same podCIDR it has not seen', () => {
  const CONTESTED = '10.244.60.0/24';
  const older = (n: ReturnType<typeof bareNode>) => {
    n.metadata.creationTimestamp = '2020-01-01T00:00:00Z';
    return n;
  };
  it.each([
    ['a peer with a lease', () => older(linuxFlannelNode({ name: 'linux-old', podCIDR: CONTESTED, publicIP: '10.0.0.13', backendType: 'vxlan' }))],
    ['a Node flannel has not annotated, listed after the own Node', () => older(bareNode({ name: 'zz-waiting', podCIDR: CONTESTED, internalIP: '10.0.0.14' }))],
  ] as const)('vxlan, %s: keeps its working network and says the subnet is contested', async (_what, olderNode) => {
    cluster = await new TestCluster().start();
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: PEER_CIDR, publicIP: '10.0.0.11', backendType: 'vxlan' }));
    cluster.addWindowsNode(WIN, OLD_CIDR, WIN_IP);
    const sink = logSink('info');
    const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: VXLAN_NET_CONF, log: sink.log });
    let stopped: { stopped: unknown } | undefined;
    void a.outcome.then((e) => (stopped = { stopped: e }));
    await waitFor(() => a.agent.isReady && peerPrefixes(a, 'vxlan').length === 1 && conditionOf(cluster)?.status === 'False', 'the agent ready with its peer');
    const envBefore = readFileSync(a.subnetFile, 'utf8');
    const networkId = a.sim.snapshot().networks.find((n) => n.Name === a.agent.network?.networkName)?.ID;

    // While the API server is away: the own Node deleted and registered again with the older Node's podCIDR;
    // compacted, so the watch's resume gets 410 Gone and the agent relists.
    await cluster.api.stop();
    const node = olderNode();
    cluster.api.addNode(node);
    cluster.api.deleteNode(WIN);
    cluster.api.addNode(bareNode({ name: WIN, podCIDR: CONTESTED, internalIP: WIN_IP }));
    cluster.api.compact();
    await cluster.api.start();

    await waitFor(() => a.agent.notReadyReason()?.startsWith('own-subnet-contested') === true, 'the contest named', {
      timeoutMs: 20_000,
      detail: () => `not ready: ${a.agent.notReadyReason() ?? 'no reason'}`,
    });
    expect(a.agent.notReadyReason()).toMatch(
      new RegExp(`^own-subnet-contested: the own Node "win-1" was registered again with podCIDR 10\\.244\\.60\\.0/24, which the older Node "${node.metadata.name}" holds`),
    );
    // Its working network, untouched: the same HNS network on the old podCIDR, its peer, subnet.env as it was.
    const nets = a.sim.snapshot().networks;
    expect(nets.map((n) => n.ID)).toEqual([networkId]);
    expect(ownNetworkSubnet(a)).toBe(OLD_CIDR);
    expect(readFileSync(a.subnetFile, 'utf8')).toBe(envBefore);
    expect(sink.entries.some((e) => e['message'] === 'own Node registered again; leasing again')).toBe(false);
    await waitFor(() => conditionOf(cluster)?.status === 'True', 'NetworkUnavailable=True on the contested Node', 20_000);
    expect(conditionOf(cluster)).toMatchObject({ reason: 'FlannelSubnetContested' });
    // Still running: it did not stop with FLANNEL_ERR_SUBNET_CONTESTED.
    expect(stopped).toBeUndefined();
    expect(a.agent.phase).toBe('running');
  });
});

// The re-registration on a free podCIDR seen in a relist: the agent leases again, as from the watch. The lease
// round ends from inside the list's handler; the list-watch then stops instead of watching on.
it('vxlan: the own Node registered again with a free podCIDR, seen in a relist: leases again on it', async () => {
  cluster = await new TestCluster().start();
  cluster.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: PEER_CIDR, publicIP: '10.0.0.11', backendType: 'vxlan' }));
  cluster.addWindowsNode(WIN, OLD_CIDR, WIN_IP);
  const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: VXLAN_NET_CONF });
  await waitFor(() => a.agent.isReady && peerPrefixes(a, 'vxlan').length === 1, 'the agent ready with its peer');
  await cluster.api.stop();
  cluster.api.deleteNode(WIN);
  cluster.api.addNode(bareNode({ name: WIN, podCIDR: NEW_CIDR, internalIP: WIN_IP }));
  cluster.api.compact();
  await cluster.api.start();
  await waitFor(() => readFileSync(a.subnetFile, 'utf8').includes('FLANNEL_SUBNET=10.244.101.1/24'), 'subnet.env on the new podCIDR', {
    timeoutMs: 20_000,
    detail: () => `not ready: ${a.agent.notReadyReason() ?? 'no reason'}; phase ${a.agent.phase}`,
  });
  await waitFor(() => a.agent.isReady && ownNetworkSubnet(a) === NEW_CIDR && peerPrefixes(a, 'vxlan').length === 1, 'ready with the peer on the new podCIDR', 20_000);
});

// The agent's own reservation in host-local's store (src/backends/ipam-reservation.ts: `<dataDir>/<network>/<ip>`,
// `<container ID>\r\n<ifname>`, containernetworking/plugins plugins/ipam/host-local/backend/disk/backend.go)
// follows the own podCIDR: once the agent leases on the re-registered Node's new podCIDR, the file naming
// its own container ID in the old one (vxlan's source VIP, host-gw's bridge endpoint `.2`) is removed, as
// host-local's Release removes the files naming a container that is gone. Nothing else is: a pod's file, a
// torn one (no container ID) and one that cannot be read stay.
describe.each([
  ['vxlan', VXLAN_NET_CONF, 'flannel.4096', 'flanneld-source-vip\r\nsourcevip'],
  ['host-gw', HOSTGW_NET_CONF, 'cbr0', 'flanneld-host-endpoint\r\ncbr0_ep'],
] as const)('%s: the own reservation in host-local’s store, when the own Node is registered again with a new podCIDR', (backend, netConf, network, own) => {
  it('is removed from the old podCIDR and written in the new one; a pod’s, a torn and an unreadable file stay', async () => {
    cluster = await new TestCluster().start();
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: PEER_CIDR, publicIP: '10.0.0.11', backendType: backend }));
    cluster.addWindowsNode(WIN, OLD_CIDR, WIN_IP);
    const ipam = join(cluster.dir, WIN, 'ipam');
    const store = join(ipam, network);
    const vipArgs = backend === 'vxlan' ? [`--source-vip-file=${join(cluster.dir, WIN, 'sourcevip.json')}`, '--source-vip-compat-files='] : [];
    const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf, extraArgs: [`--cni-ipam-data-dir=${ipam}`, ...vipArgs] });
    await waitFor(() => a.agent.isReady && peerPrefixes(a, backend).length === 1, 'the agent ready with its peer');
    expect(readFileSync(join(store, '10.244.100.2'), 'utf8')).toBe(own);
    // A pod's address, a torn file (a power loss in host-local's write) and one that cannot be read as a file.
    writeFileSync(join(store, '10.244.100.3'), 'f00dpod\r\neth0');
    writeFileSync(join(store, '10.244.100.4'), '');
    mkdirSync(join(store, '10.244.100.5'));

    cluster.api.deleteNode(WIN);
    await waitFor(() => !a.agent.isReady, 'not ready once the own Node is deleted');
    cluster.api.addNode(bareNode({ name: WIN, podCIDR: NEW_CIDR, internalIP: WIN_IP }));
    await waitFor(() => a.agent.isReady && ownNetworkSubnet(a) === NEW_CIDR, 'ready on the new podCIDR', 20_000);

    expect(readFileSync(join(store, '10.244.101.2'), 'utf8')).toBe(own);
    expect(existsSync(join(store, '10.244.100.2'))).toBe(false);
    expect(readFileSync(join(store, '10.244.100.3'), 'utf8')).toBe('f00dpod\r\neth0');
    expect(readFileSync(join(store, '10.244.100.4'), 'utf8')).toBe('');
    expect(existsSync(join(store, '10.244.100.5'))).toBe(true);
  });
});

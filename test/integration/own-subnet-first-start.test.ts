// The own Node's podCIDR is another Node's at the agent's first start (a provisioning tool that sets
// spec.podCIDR, a Node restored from a backup, two nodes given one podCIDR by hand). Upstream lists the
// Nodes before it leases (flannel pkg/subnet/kube/kube.go: NewSubnetManager waits for its node informer's
// sync before AcquireLease) and then takes the podCIDR whatever the list holds. The built CLI builds its
// network and programs its peers while the list pages, but publishes nothing other programs read (the
// annotations other flanneld read, subnet.env the CNI plugin reads) until the complete list says no older
// Node has its podCIDR (docs/compatibility.md, "Who holds a contested subnet": the older Node keeps it; equal
// creationTimestamps, the smaller name). Otherwise it stops with FLANNEL_ERR_SUBNET_CONTESTED and a Warning
// Event, having written neither; the fix it names works.
import { afterEach, describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { bareNode, linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { TestCluster, VXLAN_NET_CONF, WIN_IP, waitFor } from '../support/cluster.js';
import type { SimAgent } from '../support/sim-node.js';
import type { HcnNetwork } from '../../src/hns/schema.js';

const CIDR = '10.244.9.0/24';
const NEW_CIDR = '10.244.10.0/24';
const CONTESTED = 'FLANNEL_ERR_SUBNET_CONTESTED';

let cluster: TestCluster;
afterEach(async () => {
  await cluster?.stop();
});

const flannelAnnotations = (node: string) => Object.keys(cluster.api.getNode(node)?.metadata.annotations ?? {}).filter((k) => k.startsWith('flannel.alpha.coreos.com/'));
const contestEvents = (node: string) => cluster.api.events({ kind: 'Node', name: node }).filter((e) => e['reason'] === 'FlannelSubnetContested');

/** How a start ends: the process exits (its code), or it gets ready (its /readyz answers 200). */
function outcome(agent: SimAgent): Promise<{ exited: number | null } | 'ready'> {
  return Promise.race([agent.exited.then((code) => ({ exited: code })), agent.waitReady(30_000).then(() => 'ready' as const)]);
}

/** The Overlay networks on the agent's simulated node (its state file outlives the process). */
const overlayNetworks = (agent: SimAgent) => agent.state.read().networks.filter((n) => n.Type === 'Overlay');
const subnetOf = (net: HcnNetwork | undefined) => net?.Ipams?.[0]?.Subnets?.[0]?.IpAddressPrefix;
const networkUnavailable = (node: string) => cluster.api.getNode(node)?.status?.conditions?.find((c) => c.type === 'NetworkUnavailable');

/** The coded error line the agent stopped with. */
const stoppedWith = (agent: SimAgent, code: string) => agent.lines.find((l) => l.level === 'error' && l['code'] === code);

/**
 * `win` starts on CIDR, which the older Node linux-1 has; linux-2 is its one other peer. The agent's state
 * dir (its simulated node) outlives the process, so a second start runs on what the first built.
 */
async function startContested(): Promise<{ sourceVipFile: string; args: string[]; agent: SimAgent }> {
  cluster = await new TestCluster().start();
  const older = linuxFlannelNode({ name: 'linux-1', podCIDR: CIDR, publicIP: '10.0.0.11', backendType: 'vxlan' });
  older.metadata.creationTimestamp = '2020-01-01T00:00:00Z';
  cluster.api.addNode(older);
  cluster.api.addNode(linuxFlannelNode({ name: 'linux-2', podCIDR: '10.244.2.0/24', publicIP: '10.0.0.12', backendType: 'vxlan' }));
  cluster.addWindowsNode('win', CIDR, WIN_IP);
  // kube-proxy's scripts read the source VIP file (src/backends/vxlan/source-vip.ts): it is held as subnet.env is.
  const sourceVipFile = join(dirname(cluster.stateOf('win').path), 'sourcevip.json');
  const args = [`--iface=${WIN_IP}`, `--source-vip-file=${sourceVipFile}`, '--source-vip-compat-files=none'];
  return { sourceVipFile, args, agent: await cluster.startProcess({ nodeName: 'win', netConf: VXLAN_NET_CONF, args }) };
}

describe('the own podCIDR another Node has at the first start', () => {
  it('an older Node has it: stops with FLANNEL_ERR_SUBNET_CONTESTED and an Event, no subnet.env, no source VIP file, no annotations; the fix named works', async () => {
    const { sourceVipFile, args, agent } = await startContested();

    expect({ outcome: await outcome(agent), log: '' }).toMatchObject({ outcome: { exited: 1 } });
    const err = stoppedWith(agent, CONTESTED);
    expect({ err, log: err ? '' : agent.dump() }).toMatchObject({ err: { node: 'win', subnet: CIDR, holder: 'linux-1' } });
    expect(err!.message).toMatch(/podCIDR 10\.244\.9\.0\/24 of Node "win" is held by the older Node "linux-1".*kubectl delete node linux-1/);
    expect(existsSync(agent.subnetFile)).toBe(false);
    expect(existsSync(sourceVipFile)).toBe(false);
    expect(flannelAnnotations('win')).toEqual([]);
    expect(cluster.api.getNode('win')?.status?.conditions?.find((c) => c.type === 'NetworkUnavailable')).toBeUndefined();
    expect(contestEvents('win')).toEqual([expect.objectContaining({ type: 'Warning', message: expect.stringContaining('the older Node linux-1 holds') })]);
    // The network it built while the list paged, its peer programmed.
    const [built] = overlayNetworks(agent);
    expect({ networks: overlayNetworks(agent).length, subnet: subnetOf(built), peers: agent.state.remoteSubnets(built.Name) }).toEqual({
      networks: 1,
      subnet: CIDR,
      peers: ['10.244.2.0/24'],
    });

    // The fix it names for a stale older Node: delete it; the next start (the same state dir) takes the
    // subnet and publishes everything on the network the refused start built.
    cluster.api.deleteNode('linux-1');
    const again = await cluster.startProcess({ nodeName: 'win', netConf: VXLAN_NET_CONF, args });
    expect(await outcome(again)).toBe('ready');
    expect(readFileSync(again.subnetFile, 'utf8')).toContain('FLANNEL_SUBNET=10.244.9.1/24');
    expect(JSON.parse(readFileSync(sourceVipFile, 'utf8'))).toMatchObject({ ip: '10.244.9.2', subnet: CIDR });
    expect(cluster.api.getNode('win')?.metadata.annotations?.['flannel.alpha.coreos.com/public-ip']).toBe(WIN_IP);
    await waitFor(() => networkUnavailable('win')?.status === 'False', 'NetworkUnavailable=False on win');
    // "the HNS network it built is reused": the same network (its ID), no second one, its peer kept.
    expect(overlayNetworks(again).map((n) => ({ id: n.ID, subnet: subnetOf(n) }))).toEqual([{ id: built.ID, subnet: CIDR }]);
    expect(again.state.remoteSubnets(built.Name)).toEqual(['10.244.2.0/24']);
    expect(again.lines.some((l) => l.message === 'reusing existing HNS network' && l['id'] === built.ID)).toBe(true);
  });

  it('refused, then the own Node registered again with a new podCIDR (kubelet restarted, kube-controller-manager assigns one): the next start moves the network onto it', async () => {
    const { sourceVipFile, args, agent } = await startContested();
    expect({ outcome: await outcome(agent), log: '' }).toMatchObject({ outcome: { exited: 1 } });
    expect(stoppedWith(agent, CONTESTED)).toMatchObject({ node: 'win', holder: 'linux-1' });
    const [built] = overlayNetworks(agent);
    expect(subnetOf(built)).toBe(CIDR);

    // The fix it names for the own Node: `kubectl delete node win`, the kubelet restarted registers it
    // again (a new uid) and kube-controller-manager assigns a free podCIDR; then flanneld starts again.
    // Another program's network on the node (Docker's `nat`): not flanneld's, so it stays whatever happens.
    const nat = agent.state.model().createNetwork('HcnCreateNetwork', {
      Name: 'nat',
      Type: 'NAT',
      Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: '172.20.16.0/20', Routes: [{ NextHop: '172.20.16.1', DestinationPrefix: '0.0.0.0/0' }] }] }],
      SchemaVersion: { Major: 2, Minor: 0 },
    });
    const oldUid = cluster.api.getNode('win')!.metadata.uid;
    cluster.api.deleteNode('win');
    const registered = cluster.api.addNode(bareNode({ name: 'win', podCIDR: NEW_CIDR, internalIP: WIN_IP }));
    expect(registered.metadata.uid).not.toBe(oldUid);
    const again = await cluster.startProcess({ nodeName: 'win', netConf: VXLAN_NET_CONF, args });
    expect({ outcome: await outcome(again), log: '' }).toEqual({ outcome: 'ready', log: '' });
    expect(readFileSync(again.subnetFile, 'utf8')).toContain('FLANNEL_SUBNET=10.244.10.1/24');
    expect(JSON.parse(readFileSync(sourceVipFile, 'utf8'))).toMatchObject({ ip: '10.244.10.2', subnet: NEW_CIDR });
    expect(cluster.api.getNode('win')?.metadata.annotations?.['flannel.alpha.coreos.com/public-ip']).toBe(WIN_IP);
    await waitFor(() => networkUnavailable('win')?.status === 'False', 'NetworkUnavailable=False on win');
    // One network, on the new podCIDR: the one on the old subnet, flanneld's by its name (net-conf's), is
    // replaced as at any restart on a new podCIDR; both peers (linux-1 keeps the old subnet) are programmed.
    const now = overlayNetworks(again);
    expect(now.map((n) => ({ name: n.Name, subnet: subnetOf(n) }))).toEqual([{ name: built.Name, subnet: NEW_CIDR }]);
    expect(now[0].ID).not.toBe(built.ID);
    expect(
      again.state
        .read()
        .networks.filter((n) => n.Type !== 'Overlay')
        .map((n) => n.ID),
    ).toEqual([nat.ID]);
    await again.state.waitFor(() => again.state.remoteSubnets(built.Name).length === 2, 'both peers programmed');
    expect(again.state.remoteSubnets(built.Name)).toEqual(['10.244.2.0/24', CIDR]);
    expect(again.lines.find((l) => l.message === 'deleting HNS network whose type, subnet, VNI, VXLAN port or adapter changed')).toMatchObject({
      id: built.ID,
      subnet: CIDR,
      want: NEW_CIDR,
    });
  });

  it('two Nodes created in the same second: exactly one proceeds, the one whose name sorts first', async () => {
    cluster = await new TestCluster().start();
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-2', podCIDR: '10.244.2.0/24', publicIP: '10.0.0.12', backendType: 'vxlan' }));
    for (const [name, ip] of [
      ['win-b', '10.0.0.3'],
      ['win-a', WIN_IP],
    ] as const) {
      const node = bareNode({ name, podCIDR: CIDR, internalIP: ip });
      node.metadata.creationTimestamp = '2024-05-01T10:00:00Z';
      cluster.api.addNode(node);
    }
    // Each on its own simulated host (the same adapter address on both: neither publishes the other's).
    const [a, b] = await Promise.all(['win-a', 'win-b'].map((nodeName) => cluster.startProcess({ nodeName, netConf: VXLAN_NET_CONF, args: [`--iface=${WIN_IP}`] })));
    const [ra, rb] = await Promise.all([outcome(a), outcome(b)]);
    expect({ a: ra, b: rb, log: ra === 'ready' ? '' : a.dump() }).toMatchObject({ a: 'ready', b: { exited: 1 } });
    expect(stoppedWith(b, CONTESTED)).toMatchObject({
      node: 'win-b',
      holder: 'win-a',
      message: expect.stringContaining('Node "win-a", created in the same second with a name that sorts first'),
    });
    expect(contestEvents('win-b')).toHaveLength(1);
    expect(contestEvents('win-a')).toEqual([]);
    expect(existsSync(b.subnetFile)).toBe(false);
    expect(flannelAnnotations('win-b')).toEqual([]);
    expect(readFileSync(a.subnetFile, 'utf8')).toContain('FLANNEL_SUBNET=10.244.9.1/24');
    await waitFor(() => flannelAnnotations('win-a').length > 0, 'win-a published');
  });
});

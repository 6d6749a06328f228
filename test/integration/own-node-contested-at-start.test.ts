// The own Node's podCIDR is an older Node's at the agent's first start (a provisioning tool that sets
// spec.podCIDR, a Node restored from a backup): the built CLI lists the Nodes before it leases, as upstream's
// kube subnet manager waits for its node informer's sync before AcquireLease (flannel
// pkg/subnet/kube/kube.go NewSubnetManager), and applies to itself the rule it applies to peers
// (src/peers/store.ts; docs/compatibility.md "Who holds a contested subnet": the older Node keeps it). It
// neither builds its network on that subnet nor publishes it: it is not ready with the reason and a fix, as
// when its Node is registered again with such a podCIDR (./own-node-reregistered.test.ts), and leases once
// the subnet is free.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { TestCluster, VXLAN_NET_CONF, WIN_IP, waitFor } from '../support/cluster.js';
import { runFlanneld } from '../support/flanneld-process.js';

const WIN = 'win';
const CIDR = '10.244.1.0/24';

let cluster: TestCluster;
beforeEach(async () => {
  cluster = await new TestCluster().start();
});
afterEach(() => cluster.stop());

const condition = () => cluster.api.getNode(WIN)?.status?.conditions?.find((c) => c.type === 'NetworkUnavailable');

describe('the own podCIDR held by an older Node at first start', () => {
  it('builds and publishes nothing, is not ready with the reason and a fix, a Warning Event; leases once the older Node is deleted', async () => {
    const peer = linuxFlannelNode({ name: 'linux-1', podCIDR: CIDR, publicIP: '10.0.0.11', backendType: 'vxlan' });
    peer.metadata.creationTimestamp = '2020-01-01T00:00:00Z';
    cluster.api.addNode(peer);
    cluster.addWindowsNode(WIN, CIDR, WIN_IP);
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: VXLAN_NET_CONF, args: [`--iface=${WIN_IP}`] });

    const c = await waitFor(() => condition()?.status === 'True' && condition(), 'NetworkUnavailable=True', { detail: () => agent.dump() });
    expect(c).toMatchObject({ reason: 'FlannelSubnetContested' });
    expect(c.message).toMatch(/the own Node "win" has podCIDR 10\.244\.1\.0\/24, which the older Node "linux-1" holds.*; fix: .*kubectl delete node win/);
    const readyz = await fetch(`http://127.0.0.1:${agent.port}/readyz`);
    expect(readyz.status).toBe(503);
    expect(await readyz.text()).toMatch(/^own-subnet-contested: the own Node "win" has podCIDR 10\.244\.1\.0\/24/m);
    const event = await waitFor(() => cluster.api.events({ kind: 'Node', name: WIN }).find((e) => e['reason'] === 'FlannelSubnetContested'), 'the Warning Event');
    expect(event).toMatchObject({ type: 'Warning', message: expect.stringContaining('the older Node linux-1 holds') });
    const st = await runFlanneld(['status', '--healthz-ip=127.0.0.1', `--healthz-port=${agent.port}`]);
    expect(st.status).toBe(1);
    expect(st.stdout).toMatch(/^Own Node +CONTESTED: the own Node "win" has podCIDR 10\.244\.1\.0\/24/m);

    // Nothing made or published on the older Node's subnet: no HNS network, no annotations, no subnet.env.
    expect(agent.state.read().networks).toEqual([]);
    expect(Object.keys(cluster.api.getNode(WIN)!.metadata.annotations ?? {}).filter((k) => k.startsWith('flannel.alpha.coreos.com/'))).toEqual([]);
    expect(existsSync(agent.subnetFile)).toBe(false);

    // The fix it names: the stale older Node deleted; the subnet is free and the agent leases it by itself.
    cluster.api.deleteNode('linux-1');
    await agent.waitReady();
    expect(readFileSync(agent.subnetFile, 'utf8')).toContain('FLANNEL_SUBNET=10.244.1.1/24');
    await waitFor(() => condition()?.status === 'False', 'NetworkUnavailable=False', { detail: () => agent.dump() });
    expect(cluster.api.getNode(WIN)!.metadata.annotations?.['flannel.alpha.coreos.com/public-ip']).toBe(WIN_IP);
  });
});

// A node configured for another cluster reaches no peer, and says so (src/peers/cluster-mismatch.ts): the
// built CLI on a host-gw node in a vxlan cluster rejects every peer for their backend type, so it is not
// ready (/readyz 503), its Node is NetworkUnavailable=True with the reason and a Warning Event says the
// same, `flanneld status` and `flanneld doctor` exit 1 naming the one fix: the net-conf's Backend. Applying
// that fix (and the restart it names) makes the node ready. A node with no peer at all stays ready.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { join } from 'node:path';
import type { CheckRow } from '../../src/commands/doctor-checks.js';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { HOSTGW_NET_CONF, TestCluster, VXLAN_NET_CONF, WIN_IP, waitFor } from '../support/cluster.js';
import { runFlanneld } from '../support/flanneld-process.js';
import type { SimAgent } from '../support/sim-node.js';

const WIN = 'win';

let cluster: TestCluster;
beforeEach(async () => {
  cluster = await new TestCluster().start();
});
afterEach(() => cluster.stop());

const condition = () => cluster.api.getNode(WIN)?.status?.conditions?.find((c) => c.type === 'NetworkUnavailable');
const readyz = async (a: SimAgent) => {
  const r = await fetch(`http://127.0.0.1:${a.port}/readyz`);
  return { status: r.status, body: await r.text() };
};
const status = (a: SimAgent) => runFlanneld(['status', '--healthz-ip=127.0.0.1', `--healthz-port=${a.port}`]);

describe('a node that reaches no peer is not healthy', () => {
  it('host-gw in a vxlan cluster: not ready, NetworkUnavailable and an Event with the reason, status and doctor fail with the fix; the fix works', async () => {
    await cluster.withNodes({ name: WIN, internalIP: WIN_IP });
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-2', podCIDR: '10.244.2.0/24', publicIP: '10.0.0.12', backendType: 'vxlan' }));
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: HOSTGW_NET_CONF, args: [`--iface=${WIN_IP}`] });

    const c = await waitFor(() => condition()?.status === 'True' && condition(), 'NetworkUnavailable=True', { detail: () => agent.dump() });
    expect(c).toMatchObject({ reason: 'BackendTypeMismatch' });
    expect(c.message).toContain('all 2 peers (linux-1, linux-2) rejected: they run backend "vxlan"');
    expect(c.message).toContain("fix: stop flanneld and remove this node's host-gw network (flanneld cleanup");
    expect(c.message).toContain('set "Backend": {"Type": "vxlan", "VNI": 4096, "Port": 4789} in this node\'s net-conf.json');

    const r = await readyz(agent);
    expect(r.status).toBe(503);
    expect(r.body).toContain('cluster-config: all 2 peers');
    const event = await waitFor(() => cluster.api.events({ kind: 'Node', name: WIN }).find((e) => e['reason'] === 'FlannelClusterConfigMismatch'), 'the Warning Event');
    expect(event).toMatchObject({ type: 'Warning' });

    const st = await status(agent);
    expect(st.status).toBe(1);
    expect(st.stdout).toMatch(/^Dataplane +NOT in sync \(phase running, reaches no peer: see Cluster\)$/m);
    expect(st.stdout).toMatch(/^Cluster +MISMATCH \(BackendTypeMismatch\): all 2 peers/m);
    expect(st.stdout).toMatch(/^ {2}fix +stop flanneld and remove this node's host-gw network/m);

    const dir = join(cluster.dir, WIN);
    const doctor = await runFlanneld(
      [
        'doctor',
        `--kubeconfig-file=${join(cluster.dir, 'kubeconfig')}`,
        `--net-config-path=${join(dir, 'net-conf.json')}`,
        `--subnet-file=${agent.subnetFile}`,
        '--dataplane=simulated',
        `--dataplane-state=${agent.state.path}`,
        '--healthz-ip=127.0.0.1',
        `--healthz-port=${agent.port}`,
        `--iface=${WIN_IP}`,
        '--json',
      ],
      { NODE_NAME: WIN },
    );
    expect(doctor.status).toBe(1);
    const row = (JSON.parse(doctor.stdout) as { checks: CheckRow[] }).checks.find((x) => x.id === 'cluster-config');
    expect(row).toMatchObject({ status: 'fail', fix: expect.stringContaining('set "Backend": {"Type": "vxlan"') });

    // The fix as it says: stop, cleanup with the net-conf it ran with, the Backend of net-conf.json, start.
    await agent.stop();
    const cleanup = await runFlanneld([
      'cleanup',
      `--net-config-path=${join(dir, 'net-conf.json')}`,
      `--subnet-file=${agent.subnetFile}`,
      '--dataplane=simulated',
      `--dataplane-state=${agent.state.path}`,
    ]);
    expect(cleanup.stdout).toMatch(/^removed HNS network cbr0 /m);
    const fixed = await cluster.startProcess({ nodeName: WIN, netConf: VXLAN_NET_CONF, args: [`--iface=${WIN_IP}`] });
    await waitFor(async () => (await readyz(fixed)).status === 200, 'ready after the fix', { timeoutMs: 20_000, detail: () => fixed.dump() });
    await waitFor(() => condition()?.status === 'False', 'NetworkUnavailable=False after the fix', { detail: () => fixed.dump() });
    expect((await status(fixed)).status).toBe(0);
  }, 60_000);

  it('a node with no peer at all stays ready', async () => {
    await cluster.withNodes({ name: WIN, internalIP: WIN_IP }, false);
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: HOSTGW_NET_CONF, args: [`--iface=${WIN_IP}`] });
    await agent.waitReady();
    await waitFor(() => condition()?.status === 'False', 'NetworkUnavailable=False');
    expect((await status(agent)).status).toBe(0);
  });
});

// A net-conf change under a running agent: the shared kube-flannel-cfg gets a new VNI (the kubelet
// refreshes the mounted file), the agent keeps its network and says, in its log and as an Event on its
// Node, what changed, that a restart applies it, and kube-proxy's new network name.
import { afterEach, describe, expect, it } from '@jest/globals';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { NET_CONF_CHANGED_REASON } from '../../src/subnet/net-conf-watch.js';
import { TestCluster, VXLAN_NET_CONF, WIN_IP, waitFor } from '../support/cluster.js';
import { logSink } from '../support/log-sink.js';

const WIN = 'win-1';
let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

describe('net-conf.json changed while the agent runs', () => {
  it('a VNI change: a warning and an Event naming flannel.4096 -> flannel.4097 for kube-proxy; the running network is kept', async () => {
    cluster = await new TestCluster().start();
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'vxlan' }));
    cluster.addWindowsNode(WIN, '10.244.100.0/24', WIN_IP);
    const sink = logSink('info');
    const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: VXLAN_NET_CONF, log: sink.log, netConfRecheckMs: 50 });
    await waitFor(() => a.agent.isReady && a.agent.phase === 'running', 'agent ready');

    writeFileSync(join(a.dir, 'net-conf.json'), JSON.stringify({ ...VXLAN_NET_CONF, Backend: { ...VXLAN_NET_CONF.Backend, VNI: 4097 } }));
    const event = await waitFor(() => cluster!.api.events({ kind: 'Node', name: WIN }).find((e) => e['reason'] === NET_CONF_CHANGED_REASON), 'the FlannelNetConfChanged Event');
    expect(event['type']).toBe('Warning');
    expect(String(event['message'])).toContain('Backend.VNI 4096 -> 4097');
    expect(String(event['message'])).toContain('restart flanneld on this node to apply them');
    expect(String(event['message'])).toContain("kube-proxy's --network-name (KUBE_NETWORK) must become flannel.4097");
    expect(sink.entries.find((e) => e['message'] === 'net-conf.json changed; a restart applies it')).toMatchObject({
      level: 'warn',
      component: 'net-conf',
      network: 'flannel.4096',
      newNetwork: 'flannel.4097',
    });
    // Nothing is applied under the running agent.
    expect(a.agent.phase).toBe('running');
    expect(a.sim.getNetworkByName('flannel.4096')).toBeDefined();
    expect(a.sim.getNetworkByName('flannel.4097')).toBeUndefined();
  });
});

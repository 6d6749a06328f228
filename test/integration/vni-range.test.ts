// VNI range and hostile peers through the built CLI: HNS and kube-proxy read IsolationId as a 16-bit
// number (hcsshim hcn/hcnpolicy.go RemoteSubnetRoutePolicySetting.IsolationId uint16), so net-conf is
// refused above 65535; peers that HNS cannot reach, or that would loop back to this node, are rejected.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { VXLAN_NET_CONF, waitFor, TestCluster } from '../support/cluster.js';

const WIN = 'win-1';
let cluster: TestCluster;
beforeEach(async () => {
  cluster = await (await new TestCluster().start()).withNodes({ name: WIN, internalIP: '10.0.0.7' }, false);
});
afterEach(() => cluster.stop());

describe('VNI range', () => {
  it('net-conf VNI 70000: a clear FLANNEL_ERR_NET_CONF, exit 1, nothing built', async () => {
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: { ...VXLAN_NET_CONF, Backend: { Type: 'vxlan', VNI: 70000 } }, args: ['--iface=10.0.0.7'] });
    expect(await agent.exited).toBe(1);
    const err = agent.lines.find((l) => l.level === 'error');
    expect(err).toMatchObject({ code: 'FLANNEL_ERR_NET_CONF', vni: 70000 });
    expect(existsSync(agent.state.path)).toBe(false); // refused before the dataplane was touched
  });

  it('peers at another VNI, at our own IP or at a link-local IP are rejected with a reason; the valid one is programmed', async () => {
    cluster.api.addNode(linuxFlannelNode({ name: 'good', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'vxlan' }));
    cluster.api.addNode(linuxFlannelNode({ name: 'other-vni', podCIDR: '10.244.2.0/24', publicIP: '10.0.0.12', backendType: 'vxlan', vni: 4097 }));
    cluster.api.addNode(linuxFlannelNode({ name: 'claims-our-ip', podCIDR: '10.244.3.0/24', publicIP: '10.0.0.7', backendType: 'vxlan' }));
    cluster.api.addNode(linuxFlannelNode({ name: 'apipa', podCIDR: '10.244.4.0/24', publicIP: '169.254.9.9', backendType: 'vxlan' }));
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: VXLAN_NET_CONF, args: ['--iface=10.0.0.7'] });
    await agent.waitReady();
    await agent.state.waitFor(() => agent.state.remoteSubnets('flannel.4096').join() === '10.244.1.0/24', 'only the valid peer');
    const metrics = await waitFor(async () => {
      const m = await agent.metrics();
      return /reason="public-ip-link-local"/.test(m) && m;
    }, 'the rejections in /metrics');
    expect(metrics).toMatch(/^flannel_leases_rejected_total\{reason="vni-mismatch"\} 1$/m);
    expect(metrics).toMatch(/^flannel_leases_rejected_total\{reason="public-ip-own"\} 1$/m);
    expect(metrics).toMatch(/^flannel_leases_rejected_total\{reason="public-ip-link-local"\} 1$/m);
    expect(metrics).toMatch(/^flannel_peers 1$/m);
  });
});

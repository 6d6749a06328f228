// A VXLAN port other than 4789 (issue 36 part 2), on each HNS profile: net-conf Backend.Port reaches HNS as
// a VxlanPort network policy at creation (hcsshim hcn/hcnpolicy.go VxlanPortPolicySetting, as OVN-Kubernetes
// go-controller/hybrid-overlay/pkg/controller/overlay_windows.go sets it), is refused below HNS 10.3
// (hcnglobals.go VxlanPortVersion) with a coded error naming the version, and a port change rebuilds the
// network. The whole agent against the fake API server, on the simulated node.
import { afterEach, describe, expect, it } from '@jest/globals';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { isFeatureSupported } from '../../src/hns/features.js';
import { expectHnsVersionRefusal, PROFILES } from '../support/hns-profiles.js';
import { TestCluster, VXLAN_NET_CONF, waitFor, WIN_IP, type RunningAgent } from '../support/cluster.js';

const WIN = 'win-1';
const WIN_CIDR = '10.244.100.0/24';
const withPort = (port: number) => ({ ...VXLAN_NET_CONF, Backend: { ...VXLAN_NET_CONF.Backend, Port: port } });

const network = (a: RunningAgent) => a.sim.snapshot().networks.find((n) => n.Name === 'flannel.4096');
const vxlanPorts = (a: RunningAgent) => (network(a)?.Policies ?? []).filter((p) => p.Type === 'VxlanPort').map((p) => p.Settings);
const routes = (a: RunningAgent) => (network(a)?.Policies ?? []).filter((p) => p.Type === 'RemoteSubnetRoute').length;

let cluster: TestCluster;
afterEach(async () => {
  await cluster?.stop();
});

async function start(): Promise<TestCluster> {
  const c = await new TestCluster().start();
  c.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'vxlan' }));
  c.addWindowsNode(WIN, WIN_CIDR, WIN_IP);
  return c;
}

describe.each(PROFILES)('Backend.Port 8472 on $os (HNS $hns)', ({ version }) => {
  if (isFeatureSupported(version, 'VxlanPort')) {
    it('the Overlay network carries {"Type": "VxlanPort", "Settings": {"Port": 8472}} and the peers are programmed', async () => {
      cluster = await start();
      const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: withPort(8472), hnsVersion: version });
      await waitFor(() => a.agent.isReady && routes(a) === 1, 'ready with one peer');
      expect(vxlanPorts(a)).toEqual([{ Port: 8472 }]);
    });

    it('a port change rebuilds the network (HNS takes the port at creation only); back to 4789 drops the policy', async () => {
      cluster = await start();
      let a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: VXLAN_NET_CONF, hnsVersion: version });
      await waitFor(() => a.agent.isReady && routes(a) === 1, 'ready on 4789');
      expect(vxlanPorts(a)).toEqual([]);
      const first = network(a)!.ID;
      await a.stop();

      a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: withPort(8472), hnsVersion: version });
      await waitFor(() => a.agent.network && network(a)?.ID !== first && routes(a) === 1, 'rebuilt on 8472');
      expect(vxlanPorts(a)).toEqual([{ Port: 8472 }]);
      const second = network(a)!.ID;
      await a.stop();

      a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: VXLAN_NET_CONF, hnsVersion: version });
      await waitFor(() => a.agent.network && network(a)?.ID !== second && routes(a) === 1, 'rebuilt on 4789');
      expect(vxlanPorts(a)).toEqual([]);
      expect(a.sim.snapshot().networks).toHaveLength(1);
    });
  } else {
    it('is refused before any network is created: FLANNEL_ERR_HNS_VERSION naming HNS 10.3', async () => {
      cluster = await start();
      const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: withPort(8472), hnsVersion: version });
      expectHnsVersionRefusal(await a.outcome, 'VxlanPort', version);
      expect(a.sim.snapshot().networks).toEqual([]);
    });
  }
});

// host-gw routes a peer's subnet via the peer's public IP, so that IP must be a host on the node's own
// network: a peer elsewhere (no route can use it as next hop; Windows' CreateIpForwardEntry2 refuses a next
// hop that is not on link) or at the network's broadcast address is rejected like any invalid lease
// (docs/errors.md, "Rejected peer leases"): counted in flannel_leases_rejected_total{reason}, no route
// written.
//
// On every HNS profile (../support/hns-profiles.ts): IPv4 host-gw makes its L2Bridge through the HNS v1 API
// and its host endpoint through HCN v2 (hcsshim hcn/hcnglobals.go V2ApiVersion, 9.2), which every profile
// has; the routes are IP Helper calls, which no HNS version gates.
import { afterEach, describe, expect, it } from '@jest/globals';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { METRIC } from '../../src/basics/metrics.js';
import { HOSTGW_NET_CONF, TestCluster, waitFor, type RunningAgent, WIN_IP } from '../support/cluster.js';
import { readMetric, readMetricTotal } from '../support/agent-signals.js';
import { PROFILES } from '../support/hns-profiles.js';

const WIN = 'win-1';

function peerRoutes(a: RunningAgent): string[] {
  return a.sim
    .snapshot()
    .routes.filter((r) => r.DestinationPrefix.startsWith('10.244.'))
    .map((r) => `${r.DestinationPrefix} via ${r.NextHop}`)
    .sort();
}

let cluster: TestCluster;
afterEach(async () => {
  await cluster?.stop();
});

describe.each(PROFILES)('host-gw peers that no route can reach, on $os (HNS $hns)', ({ version: hnsVersion }) => {
  it('a peer off the node network and one at its broadcast address are rejected; the on-link peer is routed', async () => {
    cluster = await new TestCluster().start();
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'host-gw' }));
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-2', podCIDR: '10.244.2.0/24', publicIP: '192.168.7.12', backendType: 'host-gw' }));
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-3', podCIDR: '10.244.3.0/24', publicIP: '10.0.0.255', backendType: 'host-gw' }));
    cluster.addWindowsNode(WIN, '10.244.100.0/24', WIN_IP);
    const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: HOSTGW_NET_CONF, hnsVersion });

    await waitFor(async () => a.agent.isReady && (await readMetricTotal(a.agent.metrics, METRIC.leasesRejected)) === 2 && peerRoutes(a).length === 1, 'one route, two rejections');
    expect(peerRoutes(a)).toEqual(['10.244.1.0/24 via 10.0.0.11']);
    expect(await readMetric(a.agent.metrics, METRIC.leasesRejected, { reason: 'public-ip-off-link' })).toBe(1);
    expect(await readMetric(a.agent.metrics, METRIC.leasesRejected, { reason: 'public-ip-broadcast' })).toBe(1);
  });
});

// The sdnbridge dual-stack recordings (test/fixtures/cni-traces/sdnbridge-dual-stack-*.json, README
// "sdnbridge, dual stack"), replayed against the network the agent builds for dual-stack host-gw: every
// call Microsoft's sdnbridge made for a dual-stack pod (ADD, then DEL) is sent again through the
// stand-ins' seam (test/support/cni-replay.ts) into the agent's simulated node. The recording's network
// was staged by the test harness, not by an agent, so the replay checks what the plugin depends on: the
// same HRESULT for every call, the network found by name as an L2Bridge with both subnets and their
// default routes, and the endpoint with both addresses and both default routes. Two answers differ by
// design, each asserted: the endpoint replies carry PrefixLength (24 and 64), as HNS fills it (the recording
// shows the CNI result's masks as /0 without it); and the same ADD on an IPv4-only network is refused now
// (HCN_E_INVALID_IP), where the recording shows the gap of the old simulator (exit 0).
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { bareNode, type FakeNode } from '../../src/demo/kube-fake/nodes.js';
import { HRESULT } from '../../src/hns/errors.js';
import { TestCluster, WIN_IP, waitFor, type RunningAgent } from '../support/cluster.js';
import { editState } from '../support/sim-dataplane.js';
import { loadTrace, newBindings, replayScenario, sdnbridgeUnexpected as unexpected } from '../support/cni-replay.js';
import { renderCniConfig } from '../../src/cni/conflist.js';
import { parseNetConf } from '../../src/subnet/net-conf.js';

const WIN = 'win-1';
/** The recorded network's subnets (sdnbridge-dual-stack-add.json inputs.networkCreatedBeforehand). */
const V4 = '10.244.3.0/24';
const V6 = 'fd00:10:244:3::/64';
const NET_CONF = { Network: '10.244.0.0/16', EnableIPv6: true, IPv6Network: 'fd00:10:244::/56', Backend: { Type: 'host-gw' } };

let cluster: TestCluster;
beforeEach(async () => {
  cluster = await new TestCluster().start();
});
afterEach(() => cluster.stop());

function windowsNode(): FakeNode {
  const n = bareNode({ name: WIN, podCIDR: V4, internalIP: WIN_IP });
  n.spec = { podCIDR: V4, podCIDRs: [V4, V6] };
  return n;
}

async function dualStackAgent(): Promise<RunningAgent> {
  cluster.api.addNode(windowsNode());
  const a = cluster.startAgent({
    nodeName: WIN,
    ip: WIN_IP,
    netConf: NET_CONF,
    before: (sim) =>
      editState(sim, (st) => st.adapters.filter((ad) => ad.IPAddress === WIN_IP).forEach((ad) => Object.assign(ad, { IPv6Address: 'fd00:10::2', IPv6PrefixLength: 64 }))),
  });
  await waitFor(() => a.agent.isReady, 'the agent is ready');
  return a;
}

describe('sdnbridge dual-stack replay against the agent network', () => {
  it('ADD then DEL: every call answered with the recorded HRESULT; the endpoint gets both addresses (with /24 and /64) and both default routes', async () => {
    const a = await dualStackAgent();
    const net = a.sim.getNetworkByName('cbr0')!;
    const b = newBindings({ ids: { '<NETWORK_ID>': net.ID! } });
    const add = await replayScenario(loadTrace('sdnbridge-dual-stack-add'), a.sim, b, { checkStateBefore: false, checkStateAfter: false });
    expect(add.mismatches.filter((m) => m.where.endsWith(' hr'))).toEqual([]);
    expect(unexpected(add.mismatches)).toEqual([]);
    const ep = a.sim.snapshot().endpoints.find((e) => e.Name?.startsWith('sdnbridgepod1'))!;
    expect(ep.IpConfigurations).toEqual([
      { IpAddress: '10.244.3.10', PrefixLength: 24 },
      { IpAddress: 'fd00:10:244:3::10', PrefixLength: 64 },
    ]);
    expect(ep.Routes?.map((r) => `${r.DestinationPrefix} via ${r.NextHop}`)).toEqual(['0.0.0.0/0 via 10.244.3.1', '::/0 via fd00:10:244:3::1']);
    // The PrefixLength differences are exactly the endpoint replies, nothing else.
    expect(add.mismatches.filter((m) => /PrefixLength/.test(m.where)).length).toBeGreaterThan(0);

    const del = await replayScenario(loadTrace('sdnbridge-dual-stack-del'), a.sim, b, { checkStateBefore: false, checkStateAfter: false });
    expect(del.mismatches.filter((m) => m.where.endsWith(' hr'))).toEqual([]);
    expect(unexpected(del.mismatches)).toEqual([]);
    expect(a.sim.snapshot().endpoints.map((e) => e.Name)).toEqual(['cbr0_ep']);
  });

  it('the same ADD on an IPv4-only cbr0 is refused at HcnCreateEndpoint (HCN_E_INVALID_IP), not accepted as recorded', async () => {
    cluster.api.addNode(bareNode({ name: WIN, podCIDR: V4, internalIP: WIN_IP }));
    const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: { Network: '10.244.0.0/16', Backend: { Type: 'host-gw' } } });
    await waitFor(() => a.agent.isReady, 'the agent is ready');
    const b = newBindings({ ids: { '<NETWORK_ID>': a.sim.getNetworkByName('cbr0')!.ID! } });
    const r = await replayScenario(loadTrace('sdnbridge-dual-stack-on-v4-network'), a.sim, b, { checkStateBefore: false, checkStateAfter: false });
    const create = r.mismatches.find((m) => /HcnCreateEndpoint hr/.test(m.where));
    expect(create).toMatchObject({ recorded: 0, live: HRESULT.HCN_E_INVALID_IP });
    expect(a.sim.snapshot().endpoints.filter((e) => e.Name?.startsWith('sdnbridgepod'))).toEqual([]);
  });

  it('cni-config for this node renders the sdnbridge conflist the recording used, with the agent endpoint as gateways', () => {
    const conf = renderCniConfig({
      netConf: parseNetConf(JSON.stringify(NET_CONF)),
      subnetFile: 'C:\\run\\flannel\\subnet.env',
      dataDir: 'C:\\var\\lib\\cni\\flannel',
      serviceCidr: '10.96.0.0/12',
      managementSubnet: '10.0.0.0/24',
      dnsServers: ['10.96.0.10'],
      dnsSearch: ['svc.cluster.local'],
      dualStack: { subnet: V4, ipv6Subnet: V6, ipv6ServiceCidr: 'fd00:10:96::/112' },
    });
    const recorded = loadTrace('sdnbridge-dual-stack-add').inputs.conflist as { cniVersion: string; plugins: Record<string, unknown>[] };
    const [mine] = (conf as { plugins: Record<string, unknown>[] }).plugins;
    const [theirs] = recorded.plugins;
    expect((conf as { cniVersion: string }).cniVersion).toBe(recorded.cniVersion); // 0.2.0: no raw-byte MAC in the result
    expect(mine['type']).toBe(theirs['type']);
    // The recording ran without loopbackDSR (sdnbridge's default, false); the conflist turns it on as it does
    // win-bridge's (src/cni/conflist.ts renderDualStackCniConfig).
    expect(mine['optionalFlags']).toEqual({ ...(theirs['optionalFlags'] as object), loopbackDSR: true });
    // The recording copied Microsoft's example, `dnsCapabilities`, a capability nothing fills; sdnbridge reads
    // runtimeConfig.dns, which containerd passes as the `dns` capability (src/cni/conflist.ts).
    expect(theirs['capabilities']).toEqual({ portMappings: true, dnsCapabilities: true });
    expect(mine['capabilities']).toEqual({ portMappings: true, dns: true });
    expect(mine['AdditionalArgs']).toEqual(theirs['AdditionalArgs']);
    expect((mine['ipam'] as { ranges: unknown }).ranges).toEqual([
      [{ subnet: V4, rangeStart: '10.244.3.3', gateway: '10.244.3.2' }],
      [{ subnet: V6, rangeStart: 'fd00:10:244:3::3', gateway: 'fd00:10:244:3::2' }],
    ]);
  });
});

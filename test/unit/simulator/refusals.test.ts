// The simulated HNS refuses what HNS refuses (src/simulator/refusals.ts names each rule's source):
// malformed RemoteSubnetRoute content (HCN_E_INVALID_POLICY, hcsshim hcn/hcnpolicy.go
// RemoteSubnetRoutePolicySetting: IsolationId is a uint16), a second endpoint on an IP the network already
// holds (kube-proxy winkernel hns.go: "a bug in Windows Server 2019 that can cause two endpoints to be
// created with the same IP address"), a local endpoint outside the network's subnets (HCN_E_INVALID_IP), a
// network on an adapter the host lacks (0x803B0006, microsoft/SDN#269, sig-windows-tools#291), v1 calls on
// a missing network (0x80070490, Azure/aks-engine#168), a Remove of a policy that is not there
// (HCN_E_POLICY_NOT_FOUND), and the three `policyBatches` modes.
import { describe, expect, it } from '@jest/globals';
import { DataplaneStateError, HnsError } from '../../../src/basics/errors.js';
import { SimulatedDataplane } from '../../../src/simulator/model.js';
import { parseDataplaneState } from '../../../src/simulator/state-file.js';
import { initialState, serializeState } from '../../../src/simulator/state.js';
import type { PolicyBatches } from '../../../src/simulator/refusals.js';
import { HnsClient } from '../../../src/hns/client.js';
import { HRESULT, isHnsRefusal, isNetworkGone } from '../../../src/hns/errors.js';
import type { HcnNetwork, HcnPolicy } from '../../../src/hns/schema.js';
import { SimulatedHnsTransport } from '../../../src/simulator/hns.js';
import { expectCode } from '../../support/errors.js';
import { addPolicy } from '../../support/sim-dataplane.js';

const V2 = { Major: 2, Minor: 0 };

function setup(mode?: PolicyBatches) {
  const dp = new SimulatedDataplane();
  if (mode) dp.store.state.policyBatches = mode;
  const t = new SimulatedHnsTransport(dp);
  return { dp, t, hns: new HnsClient(t) };
}

function overlay(adapter = 'Ethernet'): HcnNetwork {
  return {
    Name: 'flannel.4096',
    Type: 'Overlay',
    SchemaVersion: V2,
    Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: '10.244.1.0/24', Policies: [{ Type: 'VSID', Settings: { IsolationId: 4096 } }] }] }],
    Policies: [{ Type: 'NetAdapterName', Settings: { NetworkAdapterName: adapter } }],
  };
}

const rsr = (settings: Record<string, unknown> = {}): HcnPolicy => ({
  Type: 'RemoteSubnetRoute',
  Settings: { DestinationPrefix: '10.244.2.0/24', IsolationId: 4096, ProviderAddress: '10.0.0.3', DistributedRouterMacAddress: '0e:2a:0a:00:00:03', ...settings },
});
const prefix = (n: number) => rsr({ DestinationPrefix: `10.244.${n}.0/24` });
const prefixes = (dp: SimulatedDataplane, id: string) =>
  (dp.getNetwork(id)?.Policies ?? []).filter((p) => p.Type === 'RemoteSubnetRoute').map((p) => String(p.Settings?.['DestinationPrefix']));

describe('RemoteSubnetRoute content HNS refuses (HCN_E_INVALID_POLICY 0x803B000D)', () => {
  it.each([
    ['a prefix without a length', { DestinationPrefix: '10.244.2.0' }],
    ['a prefix length above 32', { DestinationPrefix: '10.244.2.0/33' }],
    ['a prefix that is no address', { DestinationPrefix: '10.244.2.x/24' }],
    ['an IPv6 prefix length above 128', { DestinationPrefix: 'fd00:10:244:2::/129' }],
    ['a malformed IPv6 prefix', { DestinationPrefix: 'fd00:::2/64' }],
    ['an IsolationId above uint16', { IsolationId: 65536 }],
    ['a negative IsolationId', { IsolationId: -1 }],
    ['an IsolationId as a string', { IsolationId: '4096' }],
    ['a provider address that is no IPv4', { ProviderAddress: '10.0.0' }],
    ['a MAC of five octets', { DistributedRouterMacAddress: '0e:2a:0a:00:03' }],
    ['a MAC with mixed separators', { DistributedRouterMacAddress: '0e-2a:0a-00:00-03' }],
    ['no MAC', { DistributedRouterMacAddress: undefined }],
  ])('%s', async (_what, settings) => {
    const { dp, hns } = setup();
    const net = await hns.createNetwork(overlay());
    const err = await expectCode(hns.addNetworkPolicies(net.ID!, [rsr(settings)]), HnsError, 'FLANNEL_ERR_HNS_CALL');
    expect(err.hresult).toBe(HRESULT.HCN_E_INVALID_POLICY);
    expect(isHnsRefusal(err)).toBe(true);
    expect(prefixes(dp, net.ID!)).toEqual([]);
  });

  it('accepts the MAC as flannel writes it (colons) and as HNS does (dashes), and IsolationId 65535', async () => {
    const { dp, hns } = setup();
    const net = await hns.createNetwork(overlay());
    await hns.addNetworkPolicies(net.ID!, [prefix(2), rsr({ DestinationPrefix: '10.244.3.0/24', DistributedRouterMacAddress: '0E-2A-0A-00-00-03', IsolationId: 65535 })]);
    expect(prefixes(dp, net.ID!)).toEqual(['10.244.2.0/24', '10.244.3.0/24']);
  });

  it('accepts an IPv6 DestinationPrefix (HNS takes IPv6 on dual-stack networks)', async () => {
    const { dp, hns } = setup();
    const net = await hns.createNetwork(overlay());
    await hns.addNetworkPolicies(net.ID!, [rsr({ DestinationPrefix: 'fd00:10:244:2::/64' })]);
    expect(prefixes(dp, net.ID!)).toEqual(['fd00:10:244:2::/64']);
  });

  it('refuses a malformed one in HcnCreateNetwork too', async () => {
    const { hns } = setup();
    const bad = { ...overlay(), Policies: [...overlay().Policies!, rsr({ IsolationId: 70000 })] };
    expect((await expectCode(hns.createNetwork(bad), HnsError, 'FLANNEL_ERR_HNS_CALL')).hresult).toBe(HRESULT.HCN_E_INVALID_POLICY);
  });
});

describe('endpoint addresses', () => {
  it('a second endpoint on an IP the network holds: 0x803B002F; outside the subnet: 0x803B001E; a remote one outside is fine', async () => {
    const { hns } = setup();
    const net = await hns.createNetwork(overlay());
    await hns.createEndpoint(net.ID!, { SchemaVersion: V2, Name: 'a', IpConfigurations: [{ IpAddress: '10.244.1.5' }] });
    const dup = await expectCode(hns.createEndpoint(net.ID!, { SchemaVersion: V2, Name: 'b', IpConfigurations: [{ IpAddress: '10.244.1.5' }] }), HnsError, 'FLANNEL_ERR_HNS_CALL');
    expect(dup.hresult).toBe(HRESULT.HCN_E_ADDR_INVALID_OR_RESERVED);
    const outside = await expectCode(
      hns.createEndpoint(net.ID!, { SchemaVersion: V2, Name: 'c', IpConfigurations: [{ IpAddress: '10.244.9.5' }] }),
      HnsError,
      'FLANNEL_ERR_HNS_CALL',
    );
    expect(outside.hresult).toBe(HRESULT.HCN_E_INVALID_IP);
    const remote = await hns.createEndpoint(net.ID!, { SchemaVersion: V2, Name: 'r', Flags: 1, IpConfigurations: [{ IpAddress: '10.244.9.5' }] });
    expect(remote.IpConfigurations?.[0]?.IpAddress).toBe('10.244.9.5');
    // the address HNS picks itself skips the held ones
    const picked = await hns.createEndpoint(net.ID!, { SchemaVersion: V2, Name: 'd' });
    expect(picked.IpConfigurations?.[0]?.IpAddress).toBe('10.244.1.2');
  });

  it('an IPv6 endpoint address on an IPv4-only network is refused (the gap sdnbridge-dual-stack-on-v4-network.json shows); a malformed one too', async () => {
    const { hns } = setup();
    const net = await hns.createNetwork(overlay());
    const err6 = await expectCode(
      hns.createEndpoint(net.ID!, { SchemaVersion: V2, Name: 'a', IpConfigurations: [{ IpAddress: 'fd00:10:244:1::5' }] }),
      HnsError,
      'FLANNEL_ERR_HNS_CALL',
    );
    expect(err6.hresult).toBe(HRESULT.HCN_E_INVALID_IP);
    for (const bad of ['10.244.1', 'fd00:::5', 'fe80::1%eth0']) {
      const err = await expectCode(hns.createEndpoint(net.ID!, { SchemaVersion: V2, Name: 'b', IpConfigurations: [{ IpAddress: bad }] }), HnsError, 'FLANNEL_ERR_HNS_CALL');
      expect(err.hresult).toBe(HRESULT.HCN_E_INVALID_IP);
    }
  });

  it('v1 POST /endpoints/ on an IP another endpoint holds is refused the same way', async () => {
    const { hns } = setup();
    const net = await hns.createNetwork(overlay());
    await hns.createEndpointV1({ Name: 'a', VirtualNetwork: net.ID!, IPAddress: '10.244.1.7' });
    const err = await expectCode(hns.createEndpointV1({ Name: 'b', VirtualNetwork: net.ID!, IPAddress: '10.244.1.7' }), HnsError, 'FLANNEL_ERR_HNS_CALL');
    expect(err.hresult).toBe(HRESULT.HCN_E_ADDR_INVALID_OR_RESERVED);
  });
});

describe('a network on an adapter the host does not have: HCN_E_ADAPTER_NOT_FOUND 0x803B0006, named by the agent', () => {
  it('v2 HcnCreateNetwork', async () => {
    const { hns } = setup();
    const err = await expectCode(hns.createNetwork(overlay('Ethernet 9')), HnsError, 'FLANNEL_ERR_HNS_ADAPTER_NOT_FOUND');
    expect(err.hresult).toBe(HRESULT.HCN_E_ADAPTER_NOT_FOUND);
    expect(err.context.adapter).toBe('Ethernet 9');
    expect(err.message).toContain('"Ethernet 9"');
  });

  it('v1 POST /networks/ (the envelope New-HnsNetwork showed in microsoft/SDN#269)', async () => {
    const { t, hns } = setup();
    const body = { Name: 'cbr0', Type: 'L2Bridge', NetworkAdapterName: 'Ethernet 9', Subnets: [{ AddressPrefix: '10.244.2.0/24', GatewayAddress: '10.244.2.1' }] };
    expect(JSON.parse(await t.hnsCall('POST', '/networks/', JSON.stringify(body)))).toEqual({
      Success: false,
      Error: 'An adapter was not found.',
      ErrorCode: 2151350278,
    });
    const err = await expectCode(hns.createNetworkV1(body), HnsError, 'FLANNEL_ERR_HNS_ADAPTER_NOT_FOUND');
    expect(err.message).toContain('"Ethernet 9"');
  });
});

describe('HNS v1 on a missing network: 0x80070490 Element not found, which the agent takes as "network gone"', () => {
  it('GET and DELETE /networks/<id>, POST /endpoints/', async () => {
    const { t, hns } = setup();
    const id = '5A2C5D1E-0000-4000-8000-000000000001';
    for (const [method, path, body] of [
      ['GET', `/networks/${id}`, ''],
      ['DELETE', `/networks/${id}`, ''],
      ['POST', '/endpoints/', JSON.stringify({ Name: 'x', VirtualNetwork: id, IPAddress: '10.244.1.9' })],
    ] as const) {
      expect(JSON.parse(await t.hnsCall(method, path, body))).toEqual({ Success: false, Error: 'Element not found.', ErrorCode: HRESULT.E_NOT_FOUND });
    }
    const err = await expectCode(hns.createEndpointV1({ Name: 'x', VirtualNetwork: id, IPAddress: '10.244.1.9' }), HnsError, 'FLANNEL_ERR_HNS_NOT_FOUND');
    expect(isNetworkGone(err)).toBe(true);
    expect(await hns.getNetworkV1(id)).toBeUndefined();
    await hns.deleteNetworkV1(id); // already gone counts as deleted
    // an endpoint that is missing is not the network
    const ep = await expectCode(hns.attachEndpointToHost(id), HnsError, 'FLANNEL_ERR_HNS_NOT_FOUND');
    expect(isNetworkGone(ep)).toBe(false);
  });
});

describe('policyBatches: how HcnModifyNetwork applies several policies', () => {
  const request = (type: 'Add' | 'Remove', policies: HcnPolicy[]) => JSON.stringify({ ResourceType: 'Policy', RequestType: type, Settings: { Policies: policies } });

  async function modify(mode: PolicyBatches | undefined, type: 'Add' | 'Remove', policies: HcnPolicy[], before: HcnPolicy[] = []) {
    const { dp, t, hns } = setup(mode);
    const net = await hns.createNetwork(overlay());
    for (const p of before) await hns.addNetworkPolicies(net.ID!, [p]);
    const h = await t.openNetwork(net.ID!);
    const err = await t.modifyNetwork(h, request(type, policies)).then(
      () => undefined,
      (e: unknown) => e as HnsError,
    );
    await t.closeNetwork(h);
    return { err: err?.hresult, left: prefixes(dp, net.ID!) };
  }

  const bad = rsr({ DestinationPrefix: '10.244.4.0/24', IsolationId: 70000 });

  it.each([
    [undefined, { err: HRESULT.HCN_E_INVALID_POLICY, left: [] }],
    ['atomic', { err: HRESULT.HCN_E_INVALID_POLICY, left: [] }],
    ['partial', { err: HRESULT.HCN_E_INVALID_POLICY, left: ['10.244.2.0/24', '10.244.3.0/24'] }],
    ['single', { err: HRESULT.HCN_E_REQUEST_UNSUPPORTED, left: [] }],
  ] as const)('Add [ok, ok, refused, ok] in mode %s', async (mode, want) => {
    expect(await modify(mode, 'Add', [prefix(2), prefix(3), bad, prefix(5)])).toEqual(want);
  });

  it.each([
    ['atomic', { err: HRESULT.HCN_E_POLICY_NOT_FOUND, left: ['10.244.2.0/24', '10.244.3.0/24'] }],
    ['partial', { err: HRESULT.HCN_E_POLICY_NOT_FOUND, left: ['10.244.3.0/24'] }],
    ['single', { err: HRESULT.HCN_E_REQUEST_UNSUPPORTED, left: ['10.244.2.0/24', '10.244.3.0/24'] }],
  ] as const)('Remove [held, missing, held] in mode %s', async (mode, want) => {
    expect(await modify(mode, 'Remove', [prefix(2), prefix(9), prefix(3)], [prefix(2), prefix(3)])).toEqual({ ...want, left: [...want.left] });
  });

  it('one policy per call is fine in every mode', async () => {
    for (const mode of ['atomic', 'partial', 'single'] as const) expect(await modify(mode, 'Add', [prefix(2)])).toEqual({ err: undefined, left: ['10.244.2.0/24'] });
  });

  it('a policy added behind the model (in place, as a test or another process does) is seen by the next call', async () => {
    const { dp, hns } = setup();
    const net = await hns.createNetwork(overlay());
    await hns.addNetworkPolicies(net.ID!, [prefix(2)]);
    addPolicy(dp, net.ID!, prefix(3));
    expect((await expectCode(hns.addNetworkPolicies(net.ID!, [prefix(3)]), HnsError, 'FLANNEL_ERR_HNS_EXISTS')).hresult).toBe(HRESULT.HCN_E_POLICY_ALREADY_EXISTS);
    await hns.removeNetworkPolicies(net.ID!, [prefix(3), prefix(2)]);
    expect(prefixes(dp, net.ID!)).toEqual([]);
  });

  it('the state file takes "policyBatches" and refuses another value', () => {
    const doc = { ...initialState('10.0.0.2'), policyBatches: 'partial' };
    expect(parseDataplaneState(serializeState(doc as never), 'node.json').policyBatches).toBe('partial');
    const err = expectCode(() => parseDataplaneState(JSON.stringify({ ...doc, policyBatches: 'some' }), 'node.json'), DataplaneStateError, 'FLANNEL_ERR_DATAPLANE_STATE');
    expect(err.context.entry).toBe('$.policyBatches');
  });
});

/** The staged network of sdnbridge-dual-stack-add.json (microsoft/windows-container-networking GetDefaultIpv6Ipams). */
function dualStack(
  type = 'L2Bridge',
  ipams: string[][] = [
    ['10.244.3.0/24', '0.0.0.0/0', '10.244.3.1'],
    ['fd00:10:244:3::/64', '::/0', 'fd00:10:244:3::1'],
  ],
): HcnNetwork {
  return {
    Name: 'cbr0',
    Type: type,
    SchemaVersion: V2,
    Ipams: ipams.map(([prefix, dest, hop]) => ({ Subnets: [{ IpAddressPrefix: prefix, Routes: [{ NextHop: hop, DestinationPrefix: dest }] }] })),
  };
}

describe('dual stack (IPv4 + IPv6)', () => {
  it('an endpoint takes one address per family, each inside a subnet of its family; the reply fills PrefixLength (/24, /64)', async () => {
    const { hns } = setup();
    const net = await hns.createNetwork(dualStack());
    const ep = await hns.createEndpoint(net.ID!, { SchemaVersion: V2, Name: 'pod1', IpConfigurations: [{ IpAddress: '10.244.3.10' }, { IpAddress: 'fd00:10:244:3::10' }] });
    expect(ep.IpConfigurations).toEqual([
      { IpAddress: '10.244.3.10', PrefixLength: 24 },
      { IpAddress: 'fd00:10:244:3::10', PrefixLength: 64 },
    ]);
    for (const ipcs of [
      [{ IpAddress: '10.244.3.11' }, { IpAddress: '10.244.3.12' }],
      [{ IpAddress: '10.244.3.11' }, { IpAddress: 'fd00:10:244:3::11' }, { IpAddress: 'fd00:10:244:3::12' }],
      [{ IpAddress: '10.244.3.11' }, { IpAddress: 'fd00:10:244:4::11' }],
    ]) {
      const err = await expectCode(hns.createEndpoint(net.ID!, { SchemaVersion: V2, Name: 'pod2', IpConfigurations: ipcs }), HnsError, 'FLANNEL_ERR_HNS_CALL');
      expect(err.hresult).toBe(HRESULT.HCN_E_INVALID_IP);
    }
  });

  it('IPv6 subnets only on L2Bridge, only with an IPv4 one, only from HNS 11.10 (HCN_E_REQUEST_UNSUPPORTED)', async () => {
    const cases: [HcnNetwork, { Major: number; Minor: number } | undefined][] = [
      [dualStack('Overlay'), undefined],
      [dualStack('L2Bridge', [['fd00:10:244:3::/64', '::/0', 'fd00:10:244:3::1']]), undefined],
      [dualStack(), { Major: 11, Minor: 9 }],
      [dualStack(), { Major: 10, Minor: 1 }],
    ];
    for (const [net, version] of cases) {
      const dp = new SimulatedDataplane();
      const hns = new HnsClient(new SimulatedHnsTransport(dp, version ? { version } : {}));
      const err = await expectCode(hns.createNetwork(net), HnsError, 'FLANNEL_ERR_HNS_CALL');
      expect(err.hresult).toBe(HRESULT.HCN_E_REQUEST_UNSUPPORTED);
    }
    const ok = new HnsClient(new SimulatedHnsTransport(new SimulatedDataplane(), { version: { Major: 11, Minor: 10 } }));
    await expect(ok.createNetwork(dualStack())).resolves.toMatchObject({ Type: 'L2Bridge' });
  });

  it('the host vNIC of a dual-stack endpoint holds both addresses; IPv6 forwarding is a flag of its own', async () => {
    const { dp, hns } = setup();
    const net = await hns.createNetwork(dualStack());
    const ep = await hns.createEndpoint(net.ID!, { SchemaVersion: V2, Name: 'cbr0_ep', IpConfigurations: [{ IpAddress: '10.244.3.2' }, { IpAddress: 'fd00:10:244:3::2' }] });
    await hns.attachEndpointToHost(ep.ID!);
    const vnic = dp.listAdapters().find((a) => a.Name === 'vEthernet (cbr0_ep)')!;
    expect([vnic.IPAddress, vnic.IPv6Address, vnic.IPv6PrefixLength]).toEqual(['10.244.3.2', 'fd00:10:244:3::2', 64]);
    dp.setForwarding(vnic.InterfaceIndex, true, 'ipv6');
    expect([dp.getForwarding(vnic.InterfaceIndex), dp.getForwarding(vnic.InterfaceIndex, 'ipv6')]).toEqual([false, true]);
  });
});

import { describe, it, expect } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FakeClock } from '../../support/fake-clock.js';
import { DataplaneStateError, FlannelError, HnsError } from '../../../src/basics/errors.js';
import { SimulatedDataplane } from '../../../src/simulator/model.js';
import type { DataplaneFs } from '../../../src/simulator/model.js';
import { HnsClient } from '../../../src/hns/client.js';
import { HRESULT } from '../../../src/hns/errors.js';
import type { HcnNetwork, HnsNetworkV1 } from '../../../src/hns/schema.js';
import { SimulatedHnsTransport } from '../../../src/simulator/hns.js';
import { ZERO_GUID } from '../../../src/hns/transport.js';
import { nodeIP, removeNetwork, removePolicy } from '../../support/sim-dataplane.js';

const GUID_RE = /^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$/;

function seq(): () => number {
  let x = 0.123;
  return () => (x = (x * 9301 + 0.49297) % 1);
}

function setup(opts: ConstructorParameters<typeof SimulatedDataplane>[0] = {}) {
  const dp = new SimulatedDataplane({ random: seq(), ...opts });
  const t = new SimulatedHnsTransport(dp);
  return { dp, t, hns: new HnsClient(t) };
}

function overlay(name = 'flannel.4096'): HcnNetwork {
  return {
    Name: name,
    Type: 'Overlay',
    Flags: 8,
    SchemaVersion: { Major: 2, Minor: 0 },
    Ipams: [
      {
        Type: 'Static',
        Subnets: [
          {
            IpAddressPrefix: '10.244.1.0/24',
            Policies: [{ Type: 'VSID', Settings: { IsolationId: 4096 } }],
            Routes: [{ NextHop: '10.244.1.1', DestinationPrefix: '0.0.0.0/0' }],
          },
        ],
      },
    ],
    Policies: [{ Type: 'NetAdapterName', Settings: { NetworkAdapterName: 'Ethernet' } }],
  };
}

const l2bridgeV1: HnsNetworkV1 = { Name: 'cbr0', Type: 'L2Bridge', Subnets: [{ AddressPrefix: '10.244.2.0/24', GatewayAddress: '10.244.2.1' }], DNSServerList: '10.96.0.10' };

function memFs(files: Map<string, string> = new Map()): DataplaneFs & { files: Map<string, string> } {
  return {
    files,
    readFileSync(file) {
      const v = files.get(file);
      if (v === undefined) throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
      return v;
    },
    writeFileSync(file, data) {
      files.set(file, data);
    },
    renameSync(from, to) {
      files.set(to, files.get(from)!);
      files.delete(from);
    },
    mkdirSync() {
      return undefined;
    },
  };
}

async function codeOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return (err as FlannelError).code;
  }
}

describe('SimulatedDataplane initial node', () => {
  it('has one physical adapter with the node IP and a default route via .1', () => {
    const { dp } = setup({ nodeIP: '192.168.5.7' });
    const s = dp.snapshot();
    expect(s.adapters).toEqual([{ Name: 'Ethernet', InterfaceIndex: 4, IPAddress: '192.168.5.7', PrefixLength: 24, Mtu: 1500, Forwarding: false }]);
    expect(s.routes).toEqual([{ DestinationPrefix: '0.0.0.0/0', NextHop: '192.168.5.1', InterfaceIndex: 4, Metric: 0 }]);
    expect(s.networks).toEqual([]);
    expect(s.endpoints).toEqual([]);
  });
});

describe('networks: v1 and v2 views of one object', () => {
  it('v2 create fills ID, ProviderAddress, DrMacAddress and moves the IP to vEthernet with a new index', async () => {
    const { dp, hns } = setup();
    const net = await hns.createNetwork(overlay());
    expect(net.ID).toMatch(GUID_RE);
    expect(net.Policies).toContainEqual({ Type: 'ProviderAddress', Settings: { ProviderAddress: '10.0.0.2' } });
    const drMac = net.Policies!.find((p) => p.Type === 'DrMacAddress');
    expect(drMac?.Settings?.Address).toMatch(/^00-15-5D-[0-9A-F]{2}-[0-9A-F]{2}-[0-9A-F]{2}$/);

    const s = dp.snapshot();
    const vnic = s.adapters.find((a) => a.Name === 'vEthernet (Ethernet)')!;
    expect(vnic).toMatchObject({ IPAddress: '10.0.0.2', PrefixLength: 24, Mtu: 1500, Forwarding: false });
    expect(vnic.InterfaceIndex).not.toBe(4);
    expect(s.adapters.find((a) => a.Name === 'Ethernet')!.IPAddress).toBe('');
    expect(s.routes).toEqual([{ DestinationPrefix: '0.0.0.0/0', NextHop: '10.0.0.1', InterfaceIndex: vnic.InterfaceIndex, Metric: 0 }]);
    expect(s.networks[0]).toEqual(net);

    // v1 view of the same object
    const v1 = await hns.getNetworkByNameV1('flannel.4096');
    expect(v1).toMatchObject({
      ID: net.ID,
      Name: 'flannel.4096',
      Type: 'Overlay',
      NetworkAdapterName: 'Ethernet',
      ManagementIP: '10.0.0.2',
      Subnets: [{ AddressPrefix: '10.244.1.0/24', GatewayAddress: '10.244.1.1', Policies: [{ Type: 'VSID', VSID: 4096 }] }],
    });
  });

  it('v1 create: ManagementIP empty in the POST answer, set on GET; stored as v2', async () => {
    const { dp, t, hns } = setup();
    const created = await hns.createNetworkV1(l2bridgeV1);
    expect(created.ID).toMatch(GUID_RE);
    expect(created.ManagementIP).toBe('');
    const ready = await hns.waitForManagementIP(created.ID!, { timeoutMs: 1000, intervalMs: 10 });
    expect(ready.ManagementIP).toBe('10.0.0.2');
    expect(ready.DNSServerList).toBe('10.96.0.10');
    expect(ready.NetworkAdapterName).toBe('Ethernet');

    const stored = dp.snapshot().networks[0];
    expect(stored).toMatchObject({
      Name: 'cbr0',
      Type: 'L2Bridge',
      SchemaVersion: { Major: 2, Minor: 0 },
      Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: '10.244.2.0/24', Routes: [{ NextHop: '10.244.2.1', DestinationPrefix: '0.0.0.0/0' }] }] }],
      Dns: { ServerList: ['10.96.0.10'] },
    });
    expect(stored.Policies).toContainEqual({ Type: 'ProviderAddress', Settings: { ProviderAddress: '10.0.0.2' } });
    expect(stored.Policies!.some((p) => p.Type === 'DrMacAddress')).toBe(false);

    const v2 = await hns.getNetworkByName('cbr0');
    expect(v2?.ID).toBe(created.ID);
    // raw v1 envelope
    const raw = JSON.parse(await t.hnsCall('GET', `/networks/${created.ID!.toLowerCase()}`, '')) as { Success: boolean; Output: { ID: string } };
    expect(raw.Success).toBe(true);
    expect(raw.Output.ID).toBe(created.ID);
  });

  it('waitForManagementIP polls while HNS has not filled it in', async () => {
    const dp = new SimulatedDataplane();
    const t = new SimulatedHnsTransport(dp, { managementIPPolls: 2 });
    const clock = new FakeClock({ instant: true, start: 0 });
    const sleeps = clock.sleeps;
    const hns = new HnsClient(t, { clock });
    const created = await hns.createNetworkV1(l2bridgeV1);
    const ready = await hns.waitForManagementIP(created.ID!, { timeoutMs: 1000, intervalMs: 50 });
    expect(ready.ManagementIP).toBe('10.0.0.2');
    expect(sleeps).toEqual([50, 50]);

    const t2 = new SimulatedHnsTransport(new SimulatedDataplane(), { managementIPPolls: 100 });
    const h2 = new HnsClient(t2, { clock });
    const c2 = await h2.createNetworkV1(l2bridgeV1);
    expect(await codeOf(h2.waitForManagementIP(c2.ID!, { timeoutMs: 200, intervalMs: 50 }))).toBe('FLANNEL_ERR_HNS_CALL');
  });

  it('duplicate name -> 0x803B0010 on v2 (thrown) and v1 (Success:false envelope)', async () => {
    const { t, hns } = setup();
    await hns.createNetwork(overlay());
    let err: unknown;
    try {
      await hns.createNetwork(overlay());
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(HnsError);
    expect((err as HnsError).code).toBe('FLANNEL_ERR_HNS_EXISTS');
    expect((err as HnsError).hresult).toBe(0x803b0010);
    expect((err as HnsError).context.network).toBe('flannel.4096');

    const env = JSON.parse(await t.hnsCall('POST', '/networks/', JSON.stringify({ Name: 'flannel.4096', Type: 'Overlay' }))) as { Success: boolean; ErrorCode: number };
    expect(env.Success).toBe(false);
    expect(env.ErrorCode).toBe(0x803b0010);
    expect(await codeOf(hns.createNetworkV1({ Name: 'flannel.4096', Type: 'L2Bridge' }))).toBe('FLANNEL_ERR_HNS_EXISTS');
  });

  it('deleting the last vSwitch network moves the IP back and drops the vNIC routes', async () => {
    const { dp, hns } = setup();
    const a = await hns.createNetwork(overlay('a'));
    const b = await hns.createNetworkV1({ ...l2bridgeV1, Name: 'b' });
    const vIdx = dp.snapshot().adapters.find((x) => x.Name === 'vEthernet (Ethernet)')!.InterfaceIndex;
    dp.createRoute({ DestinationPrefix: '10.244.9.0/24', NextHop: '10.0.0.9', InterfaceIndex: vIdx, Metric: 100 });
    await hns.deleteNetwork(a.ID!);
    expect(dp.snapshot().adapters.some((x) => x.Name === 'vEthernet (Ethernet)')).toBe(true);
    await hns.deleteNetworkV1(b.ID!);
    const s = dp.snapshot();
    expect(s.adapters).toEqual([{ Name: 'Ethernet', InterfaceIndex: 4, IPAddress: '10.0.0.2', PrefixLength: 24, Mtu: 1500, Forwarding: false }]);
    expect(s.routes).toEqual([{ DestinationPrefix: '0.0.0.0/0', NextHop: '10.0.0.1', InterfaceIndex: 4, Metric: 0 }]);
    // delete of a missing network is ok in the client, NOT_FOUND on the transport
    await hns.deleteNetwork(a.ID!);
    await hns.deleteNetworkV1(b.ID!);
    expect(await codeOf(new SimulatedHnsTransport(dp).deleteNetwork(a.ID!))).toBe('FLANNEL_ERR_HNS_NOT_FOUND');
    // the next vSwitch gets yet another index
    await hns.createNetwork(overlay('c'));
    expect(dp.snapshot().adapters.find((x) => x.Name === 'vEthernet (Ethernet)')!.InterfaceIndex).not.toBe(vIdx);
  });

  it('Filter is matched by field equality; malformed JSON -> 0x803B001B', async () => {
    const { t, hns } = setup();
    const a = await hns.createNetwork(overlay('a'));
    await hns.createNetwork({ ...overlay('b'), Type: 'Overlay' });
    expect(JSON.parse(await t.enumerateNetworks(JSON.stringify({ Filter: JSON.stringify({ Name: 'a' }) })))).toEqual([a.ID]);
    expect(JSON.parse(await t.enumerateNetworks(JSON.stringify({ Filter: JSON.stringify({ ID: a.ID!.toLowerCase() }) })))).toEqual([a.ID]);
    expect(JSON.parse(await t.enumerateNetworks(''))).toHaveLength(2);
    expect(await hns.getNetworkByName('nope')).toBeUndefined();
    let err: unknown;
    try {
      await t.enumerateNetworks('{"Filter":"{bad"}');
    } catch (e) {
      err = e;
    }
    expect((err as HnsError).hresult).toBe(HRESULT.HCN_E_INVALID_JSON);
    expect(await codeOf(t.hnsCall('POST', '/networks/', '{nope'))).toBe('FLANNEL_ERR_HNS_CALL');
  });
});

describe('the VxlanPort network policy at HcnCreateNetwork (hcsshim hcnglobals.go VxlanPortVersion 10.3)', () => {
  const withPort = (port: unknown): HcnNetwork => ({ ...overlay(), Policies: [...(overlay().Policies ?? []), { Type: 'VxlanPort', Settings: { Port: port } }] });
  const create = (version: { Major: number; Minor: number }, port: unknown) => {
    const dp = new SimulatedDataplane({ random: seq() });
    return { dp, created: new HnsClient(new SimulatedHnsTransport(dp, { version })).createNetwork(withPort(port)) };
  };

  it('from 10.3 the network carries it', async () => {
    const { created } = create({ Major: 10, Minor: 3 }, 8472);
    expect((await created).Policies).toContainEqual({ Type: 'VxlanPort', Settings: { Port: 8472 } });
  });

  it('below 10.3 HNS refuses the policy type (HCN_E_INVALID_POLICY_TYPE) and creates nothing', async () => {
    const { dp, created } = create({ Major: 9, Minor: 3 }, 8472);
    const err = await created.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HnsError);
    expect((err as HnsError).hresult).toBe(HRESULT.HCN_E_INVALID_POLICY_TYPE);
    expect(dp.snapshot().networks).toEqual([]);
  });

  it.each([0, 65536, '8472', -1])('a Port that is no uint16 UDP port (%j) is HCN_E_INVALID_POLICY', async (port) => {
    const { dp, created } = create({ Major: 15, Minor: 4 }, port);
    const err = await created.catch((e: unknown) => e);
    expect((err as HnsError).hresult).toBe(HRESULT.HCN_E_INVALID_POLICY);
    expect(dp.snapshot().networks).toEqual([]);
  });
});

describe('network policies (HcnModifyNetwork)', () => {
  const rsr = (prefix: string) => ({
    Type: 'RemoteSubnetRoute',
    Settings: { DestinationPrefix: prefix, IsolationId: 4096, ProviderAddress: '10.0.0.3', DistributedRouterMacAddress: '00-15-5D-AA-BB-CC' },
  });

  it('add twice -> 0x803B0012; remove missing -> HCN_E_POLICY_NOT_FOUND 0x803B0008 (transport); client remove is idempotent', async () => {
    const { dp, t, hns } = setup();
    const net = await hns.createNetwork(overlay());
    await hns.addNetworkPolicies(net.ID!, [rsr('10.244.3.0/24'), rsr('10.244.4.0/24')]);
    expect(dp.calls.get('HcnModifyNetwork')).toBe(1);

    const h = await t.openNetwork(net.ID!);
    const add = JSON.stringify({ ResourceType: 'Policy', RequestType: 'Add', Settings: { Policies: [rsr('10.244.3.0/24')] } });
    const remove = JSON.stringify({ ResourceType: 'Policy', RequestType: 'Remove', Settings: { Policies: [rsr('10.244.5.0/24')] } });
    const errs: HnsError[] = [];
    for (const body of [add, remove]) {
      try {
        await t.modifyNetwork(h, body);
      } catch (e) {
        errs.push(e as HnsError);
      }
    }
    await t.closeNetwork(h);
    expect(errs.map((e) => [e.code, e.hresult])).toEqual([
      ['FLANNEL_ERR_HNS_EXISTS', 0x803b0012],
      ['FLANNEL_ERR_HNS_NOT_FOUND', 0x803b0008],
    ]);

    expect(await codeOf(hns.addNetworkPolicies(net.ID!, [rsr('10.244.3.0/24')]))).toBe('FLANNEL_ERR_HNS_EXISTS');
    await hns.addNetworkPolicies(net.ID!, [rsr('10.244.3.0/24')], { ignoreExisting: true });
    await hns.addNetworkPolicies(net.ID!, [rsr('10.244.6.0/24')]);
    // The client makes exactly the calls asked of it: a batch HNS refuses as a whole (atomic) is thrown,
    // not retried one by one behind its caller's back (splitting is src/reconcile/writes.ts's).
    const modifies = () => dp.calls.get('HcnModifyNetwork') ?? 0;
    let before = modifies();
    expect(await codeOf(hns.addNetworkPolicies(net.ID!, [rsr('10.244.3.0/24'), rsr('10.244.7.0/24')], { ignoreExisting: true }))).toBe('FLANNEL_ERR_HNS_EXISTS');
    expect(modifies() - before).toBe(1);
    before = modifies();
    expect(await codeOf(hns.removeNetworkPolicies(net.ID!, [rsr('10.244.3.0/24'), rsr('10.244.5.0/24'), rsr('10.244.4.0/24')]))).toBe('FLANNEL_ERR_HNS_NOT_FOUND');
    expect(modifies() - before).toBe(1);
    // One policy already gone: removed, in one call.
    before = modifies();
    await hns.removeNetworkPolicies(net.ID!, [rsr('10.244.5.0/24')]);
    expect(modifies() - before).toBe(1);
    await hns.removeNetworkPolicies(net.ID!, [rsr('10.244.3.0/24'), rsr('10.244.4.0/24')]);
    const left = (await hns.getNetwork(net.ID!))!.Policies!.filter((p) => p.Type === 'RemoteSubnetRoute');
    expect(left.map((p) => p.Settings!.DestinationPrefix)).toEqual(['10.244.6.0/24']);
    expect(dp.openHandles).toBe(0);
  });

  it('hasNetwork opens and closes the network by ID (HcnOpenNetwork), no query of its policies: false once it is gone', async () => {
    const { dp, hns } = setup();
    const net = await hns.createNetwork(overlay());
    expect(await hns.hasNetwork(net.ID!)).toBe(true);
    expect(removeNetwork(dp, 'flannel.4096')).toBe(true);
    expect(await hns.hasNetwork(net.ID!)).toBe(false);
    expect(dp.openHandles).toBe(0);
  });

  it("removePolicy behind the agent's back", async () => {
    const { dp, hns } = setup();
    const net = await hns.createNetwork(overlay());
    await hns.addNetworkPolicies(net.ID!, [rsr('10.244.3.0/24')]);
    expect(removePolicy(dp, 'flannel.4096', 'RemoteSubnetRoute')).toBe(1);
    expect((await hns.getNetwork(net.ID!))!.Policies!.some((p) => p.Type === 'RemoteSubnetRoute')).toBe(false);
  });
});

describe('endpoints', () => {
  it('v1 create/attach: host vNIC with a new index; attach twice -> Success:false "already attached"', async () => {
    const { dp, t, hns } = setup();
    const net = await hns.createNetworkV1(l2bridgeV1);
    const ep = await hns.createEndpointV1({ Name: 'cbr0_ep', IPAddress: '10.244.2.2', VirtualNetwork: net.ID! });
    expect(ep).toMatchObject({
      Name: 'cbr0_ep',
      IPAddress: '10.244.2.2',
      PrefixLength: 24,
      GatewayAddress: '10.244.2.1',
      VirtualNetwork: net.ID,
      VirtualNetworkName: 'cbr0',
      State: 1,
    });
    expect(ep.MacAddress).toMatch(/^00-15-5D-/);
    await hns.attachEndpointToHost(ep.ID!);
    const vnic = dp.snapshot().adapters.find((a) => a.Name === 'vEthernet (cbr0_ep)')!;
    expect(vnic.IPAddress).toBe('10.244.2.2');
    expect(new Set(dp.snapshot().adapters.map((a) => a.InterfaceIndex)).size).toBe(3);

    const env = JSON.parse(await t.hnsCall('POST', `/endpoints/${ep.ID}/attach`, '{"SystemType":"Host","CompartmentId":1}')) as unknown;
    expect(env).toMatchObject({ Success: false, Error: 'This endpoint is already attached to the switch.' });
    await hns.attachEndpointToHost(ep.ID!); // ok in the client
    expect((await hns.getEndpointByNameV1('cbr0_ep'))!.State).toBe(2);

    // v2 view
    const v2 = await hns.listEndpoints(net.ID);
    expect(v2).toHaveLength(1);
    expect(v2[0]).toMatchObject({ ID: ep.ID, HostComputeNetwork: net.ID, IpConfigurations: [{ IpAddress: '10.244.2.2', PrefixLength: 24 }] });

    await hns.deleteEndpointV1(ep.ID!);
    await hns.deleteEndpointV1(ep.ID!);
    expect(dp.snapshot().adapters.some((a) => a.Name === 'vEthernet (cbr0_ep)')).toBe(false);
    expect(await codeOf(hns.attachEndpointToHost(ep.ID!))).toBe('FLANNEL_ERR_HNS_NOT_FOUND');
    expect(dp.openHandles).toBe(0);
  });

  it('remote endpoint (legacy vxlan) renders IsRemoteEndpoint and PA policy', async () => {
    const { hns } = setup();
    const net = await hns.createNetworkV1(l2bridgeV1);
    const ep = await hns.createEndpointV1({
      Name: 'remote_10.244.7.5',
      VirtualNetwork: net.ID!,
      IPAddress: '10.244.7.5',
      MacAddress: '0E-2A-0A-F4-07-05',
      IsRemoteEndpoint: true,
      Policies: [{ Type: 'PA', PA: '10.0.0.7' }],
    });
    expect(ep).toMatchObject({ IsRemoteEndpoint: true, MacAddress: '0E-2A-0A-F4-07-05', Policies: [{ Type: 'PA', PA: '10.0.0.7' }] });
    expect(await codeOf(hns.createEndpointV1({ Name: 'x', VirtualNetwork: '11111111-1111-1111-1111-111111111111' }))).toBe('FLANNEL_ERR_HNS_NOT_FOUND');
  });
});

describe('handles', () => {
  it('open handles return to 0 after HnsClient ops, even on failures', async () => {
    const { dp, t, hns } = setup();
    const net = await hns.createNetwork(overlay());
    await hns.getNetworkByName('flannel.4096');
    await hns.listEndpoints();
    dp.injections.failNext('HcnQueryNetworkProperties', HRESULT.E_FAIL);
    expect(await codeOf(hns.getNetwork(net.ID!))).toBe('FLANNEL_ERR_HNS_CALL');
    dp.injections.failNext('HcnModifyNetwork', HRESULT.E_ACCESSDENIED);
    expect(await codeOf(hns.addNetworkPolicies(net.ID!, [{ Type: 'HostRoute', Settings: {} }]))).toBe('FLANNEL_ERR_HNS_ACCESS_DENIED');
    expect(dp.openHandles).toBe(0);
    const h = await t.createNetwork(ZERO_GUID, JSON.stringify(overlay('x')));
    expect(dp.openHandles).toBe(1);
    await t.closeNetwork(h);
    expect(await codeOf(t.closeNetwork(h))).toBe('FLANNEL_ERR_HNS_CALL'); // E_HANDLE
    expect(dp.openHandles).toBe(0);
  });
});

describe('failure injection and latency', () => {
  it('failNext by name, prefix and regex; counts; v1 failures are envelopes', async () => {
    const { dp, hns } = setup();
    dp.injections.failNext('HNSCall', HRESULT.E_ACCESSDENIED, 2);
    expect(await codeOf(hns.listNetworksV1())).toBe('FLANNEL_ERR_HNS_ACCESS_DENIED');
    expect(await codeOf(hns.version())).toBe('FLANNEL_ERR_HNS_ACCESS_DENIED');
    expect(await hns.version()).toEqual({ Major: 15, Minor: 4 });
    dp.injections.failNext(/Enumerate/, HRESULT.E_FAIL);
    expect(await codeOf(hns.getNetworkByName('x'))).toBe('FLANNEL_ERR_HNS_CALL');
    expect(await hns.getNetworkByName('x')).toBeUndefined();
    expect(dp.calls.get('HNSCall GET /networks/')).toBe(1);
    expect(dp.calls.get('HcnEnumerateNetworks')).toBe(2);
  });

  it('failRate uses the injected random', async () => {
    const values = [0.1, 0.9, 0.4];
    const dp = new SimulatedDataplane({ random: () => values.shift() ?? 0.99 });
    const t = new SimulatedHnsTransport(dp);
    dp.injections.failRate(0.5, HRESULT.E_FAIL);
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await codeOf(t.enumerateNetworks('')));
    expect(results).toEqual(['FLANNEL_ERR_HNS_CALL', undefined, 'FLANNEL_ERR_HNS_CALL']);
    dp.injections.failRate(0, 0);
    expect(await codeOf(t.enumerateNetworks(''))).toBeUndefined();
  });

  it('latency per call and per item, plus stalls, sleep through the clock', async () => {
    const clock = new FakeClock({ instant: true, start: 0 });
    const sleeps = clock.sleeps;
    const dp = new SimulatedDataplane({ clock, latency: { hnsCallMs: 10, hnsPerItemMs: 2, routeCallMs: 1 } });
    const t = new SimulatedHnsTransport(dp);
    const h = await t.createNetwork(ZERO_GUID, JSON.stringify(overlay()));
    const body = (n: number) =>
      JSON.stringify({ ResourceType: 'Policy', RequestType: 'Add', Settings: { Policies: Array.from({ length: n }, (_, i) => ({ Type: 'X', Settings: { i } })) } });
    await t.modifyNetwork(h, body(5));
    dp.injections.stall('HcnCloseNetwork', 1000);
    await t.closeNetwork(h);
    await t.enumerateNetworks('');
    expect(sleeps).toEqual([10, 20, 1010, 12]);
  });
});

describe('persistence', () => {
  it('round trip through the state file (memory fs): atomic temp + rename', async () => {
    const mfs = memFs();
    const a = setup({ statePath: '/state/dp.json', fs: mfs });
    await a.hns.createNetwork(overlay());
    expect([...mfs.files.keys()]).toEqual(['/state/dp.json']);
    const b = new SimulatedDataplane({ statePath: '/state/dp.json', fs: mfs });
    expect(b.snapshot()).toEqual(a.dp.snapshot());
    expect(Object.keys(JSON.parse(mfs.files.get('/state/dp.json')!) as object)).toEqual(['networks', 'endpoints', 'routes', 'adapters']);
    expect(nodeIP(b)).toBe('10.0.0.2');
  });

  it('real fs: creates the directory and reloads', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-'));
    try {
      const file = path.join(dir, 'sub', 'state.json');
      const a = setup({ statePath: file });
      await a.hns.createNetworkV1(l2bridgeV1);
      const b = new SimulatedDataplane({ statePath: file });
      expect(b.snapshot()).toEqual(a.dp.snapshot());
      expect(fs.readdirSync(path.dirname(file))).toEqual(['state.json']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([['{not json'], ['{"networks":[]}'], ['[]']])('malformed %s -> FLANNEL_ERR_DATAPLANE_STATE', (content) => {
    const mfs = memFs(new Map([['/s.json', content]]));
    let err: unknown;
    try {
      new SimulatedDataplane({ statePath: '/s.json', fs: mfs });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DataplaneStateError);
    expect((err as FlannelError).code).toBe('FLANNEL_ERR_DATAPLANE_STATE');
    expect((err as FlannelError).context).toEqual({ file: '/s.json' });
  });
});

// kube-proxy's load balancers on the simulated node (src/simulator/load-balancers.ts), through the raw
// calls computenetwork.dll takes (SimulatedHnsTransport): the HCN schema of hcsshim hcn/hcnloadbalancer.go,
// the refusals each cited there, what an HNS restart does with them (kubernetes#139519: HNS restores them),
// v1 `GET /policylists/` (hcsshim internal/hns/hnspolicylist.go) and the open question of a duplicate
// remote-endpoint IP (state file `duplicateRemoteEndpointIp`). The request documents are kube-proxy's, as the
// recordings in test/fixtures/kube-proxy-traces show them.
import { describe, expect, it } from '@jest/globals';
import { HnsError } from '../../../src/basics/errors.js';
import { HnsClient } from '../../../src/hns/client.js';
import { HRESULT } from '../../../src/hns/errors.js';
import type { HcnEndpoint, HcnNetwork, HnsVersion } from '../../../src/hns/schema.js';
import { ZERO_GUID } from '../../../src/hns/transport.js';
import { SimulatedHnsTransport } from '../../../src/simulator/hns.js';
import { SimulatedDataplane } from '../../../src/simulator/model.js';
import { parseDataplaneState } from '../../../src/simulator/state-file.js';
import { DataplaneStateError } from '../../../src/basics/errors.js';

const QUERY = JSON.stringify({ SchemaVersion: { Major: 2, Minor: 0 } });

function overlay(): HcnNetwork {
  return {
    Name: 'flannel.4096',
    Type: 'Overlay',
    Flags: 8,
    SchemaVersion: { Major: 2, Minor: 0 },
    Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: '10.244.100.0/24', Routes: [{ NextHop: '10.244.100.1', DestinationPrefix: '0.0.0.0/0' }] }] }],
    Policies: [{ Type: 'NetAdapterName', Settings: { NetworkAdapterName: 'Ethernet' } }],
  };
}

/** kube-proxy's remote endpoint (winkernel hns.go createEndpoint, as recorded): Flags 1, PA of the peer. */
const remote = (ip: string, network: string): HcnEndpoint => ({
  HostComputeNetwork: network,
  Policies: [{ Type: 'ProviderAddress', Settings: { ProviderAddress: '10.0.0.11' } }],
  IpConfigurations: [{ IpAddress: ip }],
  MacAddress: `02-11-0a-f4-01-0${ip.split('.')[3]}`,
  Flags: 1,
  SchemaVersion: { Major: 2, Minor: 0 },
});

/** kube-proxy's load balancer for a Service port (winkernel hns.go getLoadBalancer, as recorded). */
const lb = (endpoints: string[], vip = '10.96.0.10', protocol = 17, port = 53) => ({
  HostComputeEndpoints: endpoints,
  SourceVIP: '10.244.100.2',
  FrontendVIPs: [vip],
  PortMappings: [{ Protocol: protocol, InternalPort: port, ExternalPort: port }],
  SchemaVersion: { Major: 2, Minor: 0 },
});

async function node(version?: HnsVersion) {
  const dp = new SimulatedDataplane();
  if (version) dp.store.update((s) => void (s.hnsVersion = `${version.Major}.${version.Minor}`));
  const t = new SimulatedHnsTransport(dp);
  const hns = new HnsClient(t);
  const net = await hns.createNetwork(overlay());
  const eps = [await hns.createEndpoint(net.ID!, remote('10.244.1.2', net.ID!)), await hns.createEndpoint(net.ID!, remote('10.244.1.3', net.ID!))];
  return { dp, t, hns, net, eps: eps.map((e) => e.ID!) };
}

async function hresultOf(p: Promise<unknown>): Promise<number | undefined> {
  try {
    await p;
  } catch (err) {
    if (err instanceof HnsError) return err.hresult;
    throw err;
  }
  return undefined;
}

async function create(t: SimulatedHnsTransport, settings: unknown): Promise<string> {
  const h = await t.createLoadBalancer(ZERO_GUID, JSON.stringify(settings));
  try {
    return (JSON.parse(await t.queryLoadBalancerProperties(h, QUERY)) as { ID: string }).ID;
  } finally {
    await t.closeLoadBalancer(h);
  }
}

describe('HcnCreateLoadBalancer and its reads', () => {
  it('the zero GUID lets HNS choose the ID; the answer is the settings with ID and SchemaVersion; enumerate, open, query and close find it', async () => {
    const { t, hns, eps, dp } = await node();
    const id = await create(t, lb(eps));
    expect(id).toMatch(/^[0-9A-F-]{36}$/);
    expect(await hns.listLoadBalancers()).toEqual([{ ...lb(eps), ID: id }]);
    expect(await hns.listLoadBalancerIds()).toEqual([id]);
    // kube-proxy's lookup of a port that never had one: a filter on an empty ID matches nothing.
    expect(JSON.parse(await t.enumerateLoadBalancers(JSON.stringify({ SchemaVersion: { Major: 2, Minor: 0 }, Filter: '{"ID":""}' })))).toEqual([]);
    expect(dp.openHandles).toBe(0);
  });

  it.each<[string, (eps: string[]) => unknown, number]>([
    ['no endpoints (kubernetes#106936)', () => lb([]), HRESULT.HCN_E_INVALID_ENDPOINT],
    ['a field HostComputeLoadBalancer does not have', (eps) => ({ ...lb(eps), Vip: '10.96.0.10' }), HRESULT.HCN_E_INVALID_JSON],
    ['a port outside uint16', (eps) => ({ ...lb(eps), PortMappings: [{ Protocol: 6, InternalPort: 70000, ExternalPort: 80 }] }), HRESULT.HCN_E_INVALID_JSON],
    ['FrontendVIPs not a list of strings', (eps) => ({ ...lb(eps), FrontendVIPs: '10.96.0.10' }), HRESULT.HCN_E_INVALID_JSON],
  ])('refused: %s', async (_what, settings, hresult) => {
    const { t, eps } = await node();
    expect(await hresultOf(t.createLoadBalancer(ZERO_GUID, JSON.stringify(settings(eps))))).toBe(hresult);
  });

  it('a frontend another load balancer holds is ERROR_ALREADY_EXISTS 0xb7 (kubernetes#139519); the same VIP and port on another protocol is not', async () => {
    const { t, eps, hns } = await node();
    await create(t, lb(eps, '10.96.0.10', 17, 53));
    await create(t, lb(eps, '10.96.0.10', 6, 53));
    expect(await hresultOf(t.createLoadBalancer(ZERO_GUID, JSON.stringify(lb(eps.slice(1), '10.96.0.10', 6, 53))))).toBe(HRESULT.E_ALREADY_EXISTS);
    expect(await hns.listLoadBalancerIds()).toHaveLength(2);
  });

  it('a missing one is ERROR_NOT_FOUND (hcsshim IsNotFoundError) to open, delete or modify', async () => {
    const { t } = await node();
    const id = '11111111-2222-4333-8444-555555555555';
    expect(await hresultOf(t.openLoadBalancer(id))).toBe(HRESULT.E_NOT_FOUND);
    expect(await hresultOf(t.deleteLoadBalancer(id))).toBe(HRESULT.E_NOT_FOUND);
  });

  it('HcnDeleteLoadBalancer removes it', async () => {
    const { t, eps, hns } = await node();
    const id = await create(t, lb(eps));
    await t.deleteLoadBalancer(id);
    expect(await hns.listLoadBalancerIds()).toEqual([]);
  });
});

describe('HcnModifyLoadBalancer (kube-proxy updateLoadBalancer)', () => {
  it('on HNS 15.4 replaces the settings and keeps the ID', async () => {
    const { t, eps, hns } = await node({ Major: 15, Minor: 4 });
    const id = await create(t, lb(eps));
    const h = await t.openLoadBalancer(id);
    await t.modifyLoadBalancer(h, JSON.stringify(lb(eps.slice(0, 1))));
    await t.closeLoadBalancer(h);
    expect(await hns.listLoadBalancers()).toEqual([{ ...lb(eps.slice(0, 1)), ID: id }]);
  });

  it('below HNS 15.4 (hcsshim ModifyLoadbalancerVersion) it is refused, nothing changed', async () => {
    const { t, eps, hns } = await node({ Major: 13, Minor: 2 });
    const id = await create(t, lb(eps));
    const h = await t.openLoadBalancer(id);
    expect(await hresultOf(t.modifyLoadBalancer(h, JSON.stringify(lb(eps.slice(0, 1)))))).toBe(HRESULT.HCN_E_INVALID_POLICY_TYPE);
    await t.closeLoadBalancer(h);
    expect((await hns.listLoadBalancers())[0].HostComputeEndpoints).toEqual(eps);
  });
});

describe('an HNS restart and the load balancers (kubernetes#139519)', () => {
  it('they are gone while HNS restores them, then back with their IDs; a create meanwhile for a restored frontend then clashes', async () => {
    const { t, eps, hns, dp } = await node();
    const id = await create(t, lb(eps));
    const effects = dp.restartHns();
    expect(effects.loadBalancersRehydrating).toBe(1);
    expect(await hns.listLoadBalancerIds()).toEqual([]);
    expect(dp.snapshot().rehydratingLoadBalancers?.map((x) => x.ID)).toEqual([id]);
    expect(dp.rehydrateLoadBalancers()).toBe(1);
    expect(await hns.listLoadBalancerIds()).toEqual([id]);
    expect(dp.snapshot().rehydratingLoadBalancers).toBeUndefined();
    // What kube-proxy met in kubernetes#139519: the restored load balancer holds the frontend (the
    // non-persistent Overlay network is made again first, as the agent does).
    const net = await hns.createNetwork(overlay());
    const again = await hns.createEndpoint(net.ID!, remote('10.244.1.2', net.ID!));
    expect(await hresultOf(t.createLoadBalancer(ZERO_GUID, JSON.stringify(lb([again.ID!]))))).toBe(HRESULT.E_ALREADY_EXISTS);
  });
});

describe('HNS v1 GET /policylists/ (hcsshim internal/hns/hnspolicylist.go)', () => {
  it('answers the empty list: nothing on the node makes a v1 policy list, kube-proxy load balancers included', async () => {
    const { t, eps } = await node();
    await create(t, lb(eps));
    expect(JSON.parse(await t.hnsCall('GET', '/policylists/', ''))).toEqual({ Success: true, Output: [] });
  });
});

describe('a second remote endpoint with an IP a remote endpoint holds (state file duplicateRemoteEndpointIp)', () => {
  it.each<[string | undefined, number | undefined]>([
    [undefined, HRESULT.HCN_E_ADDR_INVALID_OR_RESERVED],
    ['refuse', HRESULT.HCN_E_ADDR_INVALID_OR_RESERVED],
    ['accept', undefined],
  ])('%s: kube-proxy asking again for 10.244.1.2 -> %s', async (mode, hresult) => {
    const { dp, hns, net } = await node();
    if (mode) dp.store.update((s) => void (s.duplicateRemoteEndpointIp = mode as 'refuse' | 'accept'));
    expect(await hresultOf(hns.createEndpoint(net.ID!, remote('10.244.1.2', net.ID!)))).toBe(hresult);
  });

  it('accept still refuses a local endpoint on a held IP, and a remote one on the IP a local endpoint holds', async () => {
    const { dp, hns, net } = await node();
    dp.store.update((s) => void (s.duplicateRemoteEndpointIp = 'accept'));
    const local = await hns.createEndpoint(net.ID!, { Name: 'pod', IpConfigurations: [{ IpAddress: '10.244.100.3' }], SchemaVersion: { Major: 2, Minor: 0 } });
    expect(local.ID).toBeDefined();
    expect(await hresultOf(hns.createEndpoint(net.ID!, { ...remote('10.244.1.2', net.ID!), Flags: 0 }))).toBe(HRESULT.HCN_E_ADDR_INVALID_OR_RESERVED);
    expect(await hresultOf(hns.createEndpoint(net.ID!, remote('10.244.100.3', net.ID!)))).toBe(HRESULT.HCN_E_ADDR_INVALID_OR_RESERVED);
  });
});

describe('the state file: loadBalancers, rehydratingLoadBalancers, duplicateRemoteEndpointIp', () => {
  const base = { networks: [], endpoints: [], routes: [], adapters: [] };
  const parse = (extra: Record<string, unknown>) => parseDataplaneState(JSON.stringify({ ...base, ...extra }), 'state.json');

  it('takes load balancers as HcnQueryLoadBalancerProperties returns them', () => {
    const doc = parse({ loadBalancers: [{ ...lb(['A']), ID: 'B' }], rehydratingLoadBalancers: [], duplicateRemoteEndpointIp: 'accept' });
    expect(doc.loadBalancers?.[0].FrontendVIPs).toEqual(['10.96.0.10']);
  });

  it.each<[string, Record<string, unknown>, string]>([
    ['not a list', { loadBalancers: {} }, '$.loadBalancers'],
    ['no ID', { loadBalancers: [lb(['A'])] }, '$.loadBalancers[0].ID'],
    ['a field hcsshim does not have', { rehydratingLoadBalancers: [{ ID: 'B', Vips: [] }] }, '$.rehydratingLoadBalancers[0]'],
    ['a mode no one defined', { duplicateRemoteEndpointIp: 'sometimes' }, '$.duplicateRemoteEndpointIp'],
  ])('a malformed entry (%s) is FLANNEL_ERR_DATAPLANE_STATE naming it', (_what, extra, entry) => {
    let err: unknown;
    try {
      parse(extra);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DataplaneStateError);
    expect((err as DataplaneStateError).context.entry).toBe(entry);
  });
});

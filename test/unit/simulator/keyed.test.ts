// The simulator's keyed view (src/simulator/keyed.ts): calls find policies, endpoints, routes and namespaces
// by key instead of scanning the document, and answer exactly as a scan of the document would: the
// earliest of duplicates goes first, the lowest free address is handed out, a change made behind the
// model's back is seen by the next call, a shared file's changes by another process too, and the
// document written to the file is always current.
import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { HnsError, RouteError } from '../../../src/basics/errors.js';
import type { HcnNetwork, HcnPolicy } from '../../../src/hns/schema.js';
import { SimulatedDataplane } from '../../../src/simulator/model.js';
import { addPolicy, addRoute, editState } from '../../support/sim-dataplane.js';
import { expectCode } from '../../support/errors.js';

const rsr = (prefix: string, extra: Record<string, unknown> = {}): HcnPolicy => ({
  Type: 'RemoteSubnetRoute',
  Settings: { DestinationPrefix: prefix, IsolationId: 4096, ProviderAddress: '10.0.0.3', DistributedRouterMacAddress: '00-15-5D-AA-BB-CC', ...extra },
});

const V2 = { SchemaVersion: { Major: 2, Minor: 0 } };
const overlay: HcnNetwork = { ...V2, Name: 'flannel.4096', Type: 'Overlay', Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: '10.244.7.0/24' }] }] };

function node(statePath?: string) {
  const dp = new SimulatedDataplane({ statePath });
  const net = dp.createNetwork('HcnCreateNetwork', overlay);
  const prefixes = () =>
    dp
      .getNetwork(net.ID!)!
      .Policies!.filter((p) => p.Type === 'RemoteSubnetRoute')
      .map((p) => p.Settings as { DestinationPrefix: string; Note?: string })
      .map((s) => (s.Note ? `${s.DestinationPrefix} ${s.Note}` : s.DestinationPrefix));
  const add = (...ps: HcnPolicy[]) => dp.modifyNetworkPolicies('HcnModifyNetwork', net.ID!, 'Add', ps);
  const remove = (...ps: HcnPolicy[]) => dp.modifyNetworkPolicies('HcnModifyNetwork', net.ID!, 'Remove', ps);
  return { dp, net, prefixes, add, remove };
}

describe('simulator keyed view', () => {
  it('policies: order kept, key order inside Settings ignored, a held copy refused, removal by content', () => {
    const { prefixes, add, remove } = node();
    add(rsr('10.244.1.0/24'), rsr('10.244.2.0/24'));
    add(rsr('10.244.3.0/24'));
    const reordered: HcnPolicy = {
      Settings: { DistributedRouterMacAddress: '00-15-5D-AA-BB-CC', ProviderAddress: '10.0.0.3', IsolationId: 4096, DestinationPrefix: '10.244.2.0/24' },
      Type: 'RemoteSubnetRoute',
    };
    expect(expectCode(() => add(reordered), HnsError, 'FLANNEL_ERR_HNS_EXISTS').hresult).toBe(0x803b0012);
    remove(reordered);
    expect(prefixes()).toEqual(['10.244.1.0/24', '10.244.3.0/24']);
    add(rsr('10.244.2.0/24'));
    expect(prefixes()).toEqual(['10.244.1.0/24', '10.244.3.0/24', '10.244.2.0/24']);
  });

  it('a policy held twice (written behind the model) is removed earliest first, then refused as missing', () => {
    const { dp, prefixes, add, remove } = node();
    add(rsr('10.244.1.0/24'));
    // Behind the model's back, after the view was built: the next calls see it.
    addPolicy(dp, 'flannel.4096', rsr('10.244.9.0/24', { Note: 'first' }));
    addPolicy(dp, 'flannel.4096', rsr('10.244.1.0/24'));
    editState(dp, (s) => s.networks[0].Policies!.push(rsr('10.244.9.0/24', { Note: 'first' }), rsr('10.244.5.0/24')));
    expect(expectCode(() => add(rsr('10.244.5.0/24')), HnsError, 'FLANNEL_ERR_HNS_EXISTS').hresult).toBe(0x803b0012);
    remove(rsr('10.244.1.0/24'));
    expect(prefixes()).toEqual(['10.244.9.0/24 first', '10.244.1.0/24', '10.244.9.0/24 first', '10.244.5.0/24']);
    remove(rsr('10.244.9.0/24', { Note: 'first' }), rsr('10.244.9.0/24', { Note: 'first' }));
    expect(prefixes()).toEqual(['10.244.1.0/24', '10.244.5.0/24']);
    remove(rsr('10.244.1.0/24'));
    expect(expectCode(() => remove(rsr('10.244.1.0/24')), HnsError, 'FLANNEL_ERR_HNS_NOT_FOUND').hresult).toBe(0x803b0008);
    expect(prefixes()).toEqual(['10.244.5.0/24']);
  });

  it('endpoints: the lowest free address is handed out, a released one again first; a held IP is refused', () => {
    const { dp, net } = node();
    const create = (name: string, ip?: string) =>
      dp.createEndpoint('HcnCreateEndpoint', net.ID!, { ...V2, Name: name, ...(ip ? { IpConfigurations: [{ IpAddress: ip, PrefixLength: 24 }] } : {}) });
    const ipOf = (e: { IpConfigurations?: { IpAddress: string }[] }) => e.IpConfigurations![0].IpAddress;
    const a = create('a');
    const b = create('b');
    const c = create('c', '10.244.7.4');
    expect([ipOf(a), ipOf(b), ipOf(create('d'))]).toEqual(['10.244.7.2', '10.244.7.3', '10.244.7.5']);
    dp.deleteEndpoint('HcnDeleteEndpoint', b.ID!);
    dp.deleteEndpoint('HcnDeleteEndpoint', a.ID!);
    expect([ipOf(create('e')), ipOf(create('f')), ipOf(create('g'))]).toEqual(['10.244.7.2', '10.244.7.3', '10.244.7.6']);
    expect(expectCode(() => create('h', '10.244.7.4'), HnsError, 'FLANNEL_ERR_HNS_CALL').hresult).toBe(0x803b002f);
    // An ID is held whatever its case.
    expect(expectCode(() => dp.createEndpoint('HcnCreateEndpoint', net.ID!, { ...V2, Name: 'x' }, c.ID!.toLowerCase()), HnsError, 'FLANNEL_ERR_HNS_EXISTS').hresult).toBe(
      0x80070057,
    );
    expect(dp.listEndpoints().map((e) => e.Name)).toEqual(['c', 'd', 'e', 'f', 'g']);
  });

  it('routes: a duplicate written behind the model is deleted one at a time; the default route is the lowest metric', () => {
    const dp = new SimulatedDataplane();
    const r = { DestinationPrefix: '10.244.1.0/24', NextHop: '10.0.0.11', InterfaceIndex: 4, Metric: 0 };
    dp.createRoute(r);
    expect(expectCode(() => dp.createRoute(r), RouteError, 'FLANNEL_ERR_ROUTE').status).toBe(5010);
    addRoute(dp, { ...r, Metric: 7 });
    dp.deleteRoute(r);
    expect(dp.listRoutes().filter((x) => x.DestinationPrefix === r.DestinationPrefix)).toEqual([{ ...r, Metric: 7 }]);
    dp.deleteRoute(r);
    expect(expectCode(() => dp.deleteRoute(r), RouteError, 'FLANNEL_ERR_ROUTE').status).toBe(1168);
    expect(dp.defaultRouteInterfaceIndex()).toBe(4);
    editState(dp, (s) => {
      s.adapters.push({ Name: 'Ethernet 2', InterfaceIndex: 9, IPAddress: '10.1.0.2', PrefixLength: 24, Mtu: 1500, Forwarding: false });
      s.routes.push({ DestinationPrefix: '0.0.0.0/0', NextHop: '10.1.0.1', InterfaceIndex: 9, Metric: -1 });
    });
    expect(dp.defaultRouteInterfaceIndex()).toBe(9);
    dp.deleteRoute({ DestinationPrefix: '0.0.0.0/0', NextHop: '10.1.0.1', InterfaceIndex: 9, Metric: -1 });
    expect(dp.defaultRouteInterfaceIndex()).toBe(4);
  });

  it('namespaces: members by endpoint, NamespaceId one past the highest held', () => {
    const { dp, net } = node();
    const ep = dp.createEndpoint('HcnCreateEndpoint', net.ID!, { ...V2, Name: 'pod' });
    const ns1 = dp.createNamespace('HcnCreateNamespace', {});
    const ns2 = dp.createNamespace('HcnCreateNamespace', {});
    expect([ns1.NamespaceId, ns2.NamespaceId]).toEqual([1, 2]);
    dp.modifyNamespace('HcnModifyNamespace', ns2.ID, { ResourceType: 'Endpoint', RequestType: 'Add', Settings: { EndpointId: ep.ID } });
    expect(dp.getNamespace(ns2.ID)!.Resources).toEqual([{ Type: 'Endpoint', Data: { ID: ep.ID } }]);
    dp.deleteNamespace('HcnDeleteNamespace', ns2.ID);
    expect(dp.getEndpoint(ep.ID!)!.HostComputeNamespace).toBeUndefined();
    expect(dp.createNamespace('HcnCreateNamespace', {}).NamespaceId).toBe(2);
    dp.deleteEndpoint('HcnDeleteEndpoint', ep.ID!);
    expect(dp.listNamespaces().map((n) => [n.NamespaceId, n.Resources])).toEqual([
      [1, []],
      [2, []],
    ]);
  });

  it('a shared file: every write holds the current document; another process changes what the next call sees', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sim-keyed-'));
    try {
      const file = path.join(dir, 'dataplane.json');
      const { dp, net, add } = node(file);
      add(rsr('10.244.1.0/24'));
      dp.createRoute({ DestinationPrefix: '10.244.1.0/24', NextHop: '10.0.0.11', InterfaceIndex: 5, Metric: 0 });
      const onDisk = () => JSON.parse(fs.readFileSync(file, 'utf8')) as ReturnType<SimulatedDataplane['snapshot']>;
      expect(onDisk().networks[0].Policies!.filter((p) => p.Type === 'RemoteSubnetRoute')).toHaveLength(1);
      expect(onDisk().routes.some((r) => r.DestinationPrefix === '10.244.1.0/24')).toBe(true);
      // Another process adds the same policy: this model's next Add of it is refused.
      addPolicy(new SimulatedDataplane({ statePath: file }), 'flannel.4096', rsr('10.244.2.0/24'));
      expect(expectCode(() => add(rsr('10.244.2.0/24')), HnsError, 'FLANNEL_ERR_HNS_EXISTS').hresult).toBe(0x803b0012);
      // A refused call leaves the file as it was.
      expect(onDisk().networks[0].Policies!.filter((p) => p.Type === 'RemoteSubnetRoute')).toHaveLength(2);
      expect(dp.getNetwork(net.ID!)!.Policies).toEqual(onDisk().networks[0].Policies);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

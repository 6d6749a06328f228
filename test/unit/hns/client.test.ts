import { describe, it, expect } from '@jest/globals';
import { HnsError } from '../../../src/basics/errors.js';
import { Metrics, METRIC } from '../../../src/basics/metrics.js';
import { HnsClient, hcnQuery } from '../../../src/hns/client.js';
import { versionAtLeast } from '../../../src/hns/features.js';
import { HRESULT, hnsError } from '../../../src/hns/errors.js';
import type { HcnHandle, HnsTransport } from '../../../src/hns/transport.js';
import { SimulatedDataplane } from '../../../src/simulator/model.js';
import { SimulatedHnsTransport } from '../../../src/simulator/hns.js';
import { readMetric } from '../../support/agent-signals.js';

/** A scripted transport: records calls, answers hnsCall from a table. */
class FakeTransport implements HnsTransport {
  calls: string[] = [];
  v1: Record<string, string> = {};
  closeFails = false;
  async hnsCall(method: string, path: string, request: string): Promise<string> {
    this.calls.push(`${method} ${path} ${request}`);
    const r = this.v1[`${method} ${path}`];
    if (r === undefined) throw hnsError(`HNSCall ${method} ${path}`, HRESULT.E_FAIL);
    return r;
  }
  async enumerateNetworks(query: string) {
    this.calls.push(`enum ${query}`);
    return '["AAAA"]';
  }
  async createNetwork(id: string): Promise<HcnHandle> {
    this.calls.push(`create ${id}`);
    return { kind: 'network', id: 'AAAA' };
  }
  async openNetwork(id: string): Promise<HcnHandle> {
    this.calls.push(`open ${id}`);
    return { kind: 'network', id };
  }
  async modifyNetwork(_h: HcnHandle, settings: string) {
    this.calls.push(`modify ${settings}`);
  }
  async queryNetworkProperties() {
    this.calls.push('query');
    return '{"ID":"AAAA","Name":"other","Type":"Overlay","SchemaVersion":{"Major":2,"Minor":0}}';
  }
  async deleteNetwork() {
    throw hnsError('HcnDeleteNetwork', HRESULT.HCN_E_NETWORK_NOT_FOUND);
  }
  async closeNetwork() {
    this.calls.push('close');
    if (this.closeFails) throw hnsError('HcnCloseNetwork', HRESULT.E_HANDLE);
  }
  async enumerateEndpoints() {
    return '[]';
  }
  async createEndpoint(): Promise<HcnHandle> {
    throw new Error('unused');
  }
  async openEndpoint(): Promise<HcnHandle> {
    throw new Error('unused');
  }
  async modifyEndpoint() {}
  async queryEndpointProperties() {
    return '{}';
  }
  async deleteEndpoint() {}
  async closeEndpoint() {}
  async enumerateLoadBalancers() {
    return '[]';
  }
  async openLoadBalancer(): Promise<HcnHandle> {
    throw new Error('unused');
  }
  async queryLoadBalancerProperties() {
    return '{}';
  }
  async closeLoadBalancer() {}
}

describe('HnsClient', () => {
  it('version is read once and cached; RemoteSubnet needs 9.2', async () => {
    const t = new FakeTransport();
    t.v1['GET /globals/version'] = '{"Success":true,"Output":{"Major":9,"Minor":1}}';
    const hns = new HnsClient(t);
    expect(await hns.version()).toEqual({ Major: 9, Minor: 1 });
    await expect(hns.requireFeature('RemoteSubnet', 'vxlan', 'use host-gw')).rejects.toMatchObject({ code: 'FLANNEL_ERR_HNS_VERSION' });
    expect(t.calls.filter((c) => c.startsWith('GET /globals/version'))).toHaveLength(1);
  });

  it.each([
    [{ Major: 9, Minor: 2 }, true],
    [{ Major: 9, Minor: 1 }, false],
    [{ Major: 10, Minor: 0 }, true],
    [{ Major: 8, Minor: 9 }, false],
  ])('versionAtLeast(%j, 9.2) = %s', (v, want) => {
    expect(versionAtLeast(v, { Major: 9, Minor: 2 })).toBe(want);
  });

  it('a failed version read is not cached', async () => {
    const dp = new SimulatedDataplane();
    const hns = new HnsClient(new SimulatedHnsTransport(dp, { version: { Major: 9, Minor: 2 } }));
    dp.injections.failNext('HNSCall GET /globals/version', HRESULT.E_FAIL);
    await expect(hns.version()).rejects.toBeInstanceOf(HnsError);
    expect(await hns.requireFeature('RemoteSubnet', 'vxlan', 'use host-gw')).toEqual({ Major: 9, Minor: 2 });
  });

  it('counts calls and errors per op in metrics and adds context to errors', async () => {
    const metrics = new Metrics();
    const t = new FakeTransport();
    t.v1['GET /networks/'] = '{"Success":false,"Error":"Access is denied."}';
    const hns = new HnsClient(t, { metrics });
    let err: unknown;
    try {
      await hns.getNetworkByNameV1('cbr0');
    } catch (e) {
      err = e;
    }
    expect((err as HnsError).code).toBe('FLANNEL_ERR_HNS_ACCESS_DENIED');
    expect((err as HnsError).context.network).toBe('cbr0');
    await hns.deleteNetwork('ABCD'); // not found = ok, not an error
    expect(await readMetric(metrics, METRIC.dataplaneCalls, { op: 'hns.getNetworkByNameV1' })).toBe(1);
    expect(await readMetric(metrics, METRIC.dataplaneErrors, { op: 'hns.getNetworkByNameV1' })).toBe(1);
    expect(await readMetric(metrics, METRIC.dataplaneCalls, { op: 'hns.deleteNetwork' })).toBe(1);
    expect(await readMetric(metrics, METRIC.dataplaneErrors, { op: 'hns.deleteNetwork' })).toBe(0);
  });

  it('getNetworkByName sends the Name filter as a JSON string and compares the name exactly', async () => {
    const t = new FakeTransport();
    const hns = new HnsClient(t);
    expect(await hns.getNetworkByName('flannel.4096')).toBeUndefined(); // HNS returned "other"
    const q = JSON.parse(t.calls[0].slice('enum '.length)) as unknown;
    expect(q).toEqual({ SchemaVersion: { Major: 2, Minor: 0 }, Flags: 0, Filter: '{"Name":"flannel.4096"}' });
    expect(t.calls).toEqual([t.calls[0], 'open AAAA', 'query', 'close']);
  });

  it('createNetwork uses the zero GUID and closes the handle even when close fails', async () => {
    const t = new FakeTransport();
    t.closeFails = true;
    const hns = new HnsClient(t);
    const net = await hns.createNetwork({ Name: 'other', Type: 'Overlay', SchemaVersion: { Major: 2, Minor: 0 } });
    expect(net.ID).toBe('AAAA');
    expect(t.calls).toEqual(['create 00000000-0000-0000-0000-000000000000', 'query', 'close']);
  });

  it('policy modify body and one call for all policies', async () => {
    const t = new FakeTransport();
    const hns = new HnsClient(t);
    await hns.addNetworkPolicies('AAAA', [{ Type: 'A' }, { Type: 'B' }]);
    await hns.removeNetworkPolicies('AAAA', []);
    const modifies = t.calls.filter((c) => c.startsWith('modify '));
    expect(modifies).toHaveLength(1);
    expect(JSON.parse(modifies[0].slice(7))).toEqual({ ResourceType: 'Policy', RequestType: 'Add', Settings: { Policies: [{ Type: 'A' }, { Type: 'B' }] } });
  });

  it('attach sends the host body; v1 endpoint ops against the simulator', async () => {
    const t = new FakeTransport();
    t.v1['POST /endpoints/E1/attach'] = '{"Success":false,"Error":"This endpoint is already attached to the switch."}';
    await new HnsClient(t).attachEndpointToHost('E1');
    expect(t.calls).toEqual(['POST /endpoints/E1/attach {"SystemType":"Host","CompartmentId":1}']);
  });

  it('hcnQuery', () => {
    expect(JSON.parse(hcnQuery())).toEqual({ SchemaVersion: { Major: 2, Minor: 0 }, Flags: 0 });
    expect(JSON.parse((JSON.parse(hcnQuery({ VirtualNetwork: 'X' })) as { Filter: string }).Filter)).toEqual({ VirtualNetwork: 'X' });
  });

  it('v2 endpoints: create/list/delete on the simulator, handles closed', async () => {
    const dp = new SimulatedDataplane();
    const hns = new HnsClient(new SimulatedHnsTransport(dp));
    const net = await hns.createNetwork({
      Name: 'n',
      Type: 'Overlay',
      SchemaVersion: { Major: 2, Minor: 0 },
      Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: '10.244.1.0/24' }] }],
    });
    const ep = await hns.createEndpoint(net.ID!, { Name: 'e', SchemaVersion: { Major: 2, Minor: 0 } });
    expect(ep.IpConfigurations).toEqual([{ IpAddress: '10.244.1.2', PrefixLength: 24 }]);
    expect((await hns.listEndpoints(net.ID)).map((e) => e.ID)).toEqual([ep.ID]);
    expect(await hns.listEndpoints('11111111-1111-1111-1111-111111111111')).toEqual([]);
    expect((await hns.getEndpoint(ep.ID!))?.Name).toBe('e');
    await hns.deleteEndpoint(ep.ID!);
    await hns.deleteEndpoint(ep.ID!);
    expect(await hns.getEndpoint(ep.ID!)).toBeUndefined();
    expect((await hns.listNetworks()).map((n) => n.Name)).toEqual(['n']);
    expect(dp.openHandles).toBe(0);
  });
});

// HCN namespaces of the simulated node, driven through the raw calls hcsshim makes (hcn/hcnnamespace.go:
// HcnCreateNamespace with the zero GUID, HcnEnumerateNamespaces with a Filter on ID, HcnModifyNamespace
// with {ResourceType:"Endpoint",RequestType:"Add"|"Remove",Settings:{EndpointId}}, HcnQueryNamespaceProperties
// answering Resources [{Type:"Endpoint",Data:{ID}}]) and the endpoint's own HostComputeNamespace, which
// the CNI plugins' DEL reads (containernetworking/plugins pkg/hns endpoint_windows.go RemoveHcnEndpoint).
import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataplaneStateError, HnsError } from '../../../src/basics/errors.js';
import { parseDataplaneState } from '../../../src/simulator/state-file.js';
import { SimulatedDataplane } from '../../../src/simulator/model.js';
import { SimulatedHnsTransport } from '../../../src/simulator/hns.js';
import { SimulatedHcnNamespaces } from '../../../src/simulator/namespaces.js';
import { ZERO_GUID } from '../../../src/hns/transport.js';
import { expectCode } from '../../support/errors.js';

const QUERY = JSON.stringify({ SchemaVersion: { Major: 2, Minor: 0 }, Flags: 0 });
const byId = (id: string) => JSON.stringify({ SchemaVersion: { Major: 2, Minor: 0 }, Flags: 0, Filter: JSON.stringify({ ID: id }) });

async function node(statePath?: string) {
  const dp = new SimulatedDataplane({ statePath });
  const hns = new SimulatedHnsTransport(dp);
  const net = await hns.createNetwork(ZERO_GUID, JSON.stringify({ Name: 'cbr0', Type: 'L2Bridge', Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: '10.244.3.0/24' }] }] }));
  const ep = await hns.createEndpoint(net, ZERO_GUID, JSON.stringify({ Name: 'pod1_cbr0', IpConfigurations: [{ IpAddress: '10.244.3.5' }] }));
  await hns.closeEndpoint(ep);
  await hns.closeNetwork(net);
  return { dp, hns, ns: new SimulatedHcnNamespaces(dp), endpointId: ep.id };
}

describe('HCN namespaces in the simulated node', () => {
  it('create, add an endpoint, query, remove, delete: the shapes hcsshim reads', async () => {
    const { dp, ns, endpointId } = await node();
    const h = await ns.createNamespace(ZERO_GUID, JSON.stringify({ Type: 'Host', SchemaVersion: { Major: 2, Minor: 0 } }));
    const id = h.id;
    await ns.closeNamespace(h);
    expect(JSON.parse(await ns.enumerateNamespaces(byId(id.toLowerCase())))).toEqual([id]);
    expect(JSON.parse(await ns.enumerateNamespaces(byId('11111111-2222-3333-4444-555555555555')))).toEqual([]);

    const open = await ns.openNamespace(id);
    await ns.modifyNamespace(open, JSON.stringify({ ResourceType: 'Endpoint', RequestType: 'Add', Settings: { EndpointId: endpointId } }));
    expect(JSON.parse(await ns.queryNamespaceProperties(open, QUERY))).toEqual({
      ID: id,
      NamespaceId: 1,
      Type: 'Host',
      SchemaVersion: { Major: 2, Minor: 0 },
      Resources: [{ Type: 'Endpoint', Data: { ID: endpointId } }],
    });
    expect(dp.getEndpoint(endpointId)!.HostComputeNamespace).toBe(id);

    await ns.modifyNamespace(open, JSON.stringify({ ResourceType: 'Endpoint', RequestType: 'Remove', Settings: { EndpointId: endpointId } }));
    expect(dp.getNamespace(id)!.Resources).toEqual([]);
    expect(dp.getEndpoint(endpointId)!.HostComputeNamespace).toBeUndefined();
    // Removing it again: the endpoint is not in the namespace.
    const again = await expectCode(
      ns.modifyNamespace(open, JSON.stringify({ ResourceType: 'Endpoint', RequestType: 'Remove', Settings: { EndpointId: endpointId } })),
      HnsError,
      'FLANNEL_ERR_HNS_NOT_FOUND',
    );
    expect(again.hresult).toBe(0x80070490);
    await ns.closeNamespace(open);
    expect(dp.openHandles).toBe(0);

    await ns.deleteNamespace(id);
    expect(dp.listNamespaces()).toEqual([]);
  });

  it('a missing namespace is 0x80070490 (hcsshim IsNotFoundError: hcs.ErrElementNotFound); a closed handle is E_HANDLE', async () => {
    const { ns } = await node();
    const missing = '11111111-2222-3333-4444-555555555555';
    expect((await expectCode(ns.openNamespace(missing), HnsError, 'FLANNEL_ERR_HNS_NOT_FOUND')).hresult).toBe(0x80070490);
    expect((await expectCode(ns.deleteNamespace(missing), HnsError, 'FLANNEL_ERR_HNS_NOT_FOUND')).hresult).toBe(0x80070490);
    const h = await ns.createNamespace(ZERO_GUID, '{}');
    await ns.closeNamespace(h);
    expect((await expectCode(ns.queryNamespaceProperties(h, QUERY), HnsError, 'FLANNEL_ERR_HNS_CALL')).hresult).toBe(0x80070006);
  });

  it('an endpoint in one namespace cannot be added to another; deleting the endpoint empties its namespace', async () => {
    const { dp, ns, endpointId } = await node();
    const a = await ns.createNamespace(ZERO_GUID, '{}');
    const b = await ns.createNamespace(ZERO_GUID, '{}');
    const add = JSON.stringify({ ResourceType: 'Endpoint', RequestType: 'Add', Settings: { EndpointId: endpointId } });
    await ns.modifyNamespace(a, add);
    expect((await expectCode(ns.modifyNamespace(b, add), HnsError, 'FLANNEL_ERR_HNS_ATTACHED')).hresult).toBe(0x803b0014);
    dp.deleteEndpoint('HcnDeleteEndpoint', endpointId);
    expect(dp.getNamespace(a.id)!.Resources).toEqual([]);
  });

  it('namespaces persist in the state file, and a malformed one is a coded error naming the entry', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-ns-'));
    try {
      const file = join(dir, 'dataplane.json');
      const { ns } = await node(file);
      const h = await ns.createNamespace(ZERO_GUID, '{}');
      const state = parseDataplaneState(readFileSync(file, 'utf8'), file);
      expect(state.namespaces).toEqual([{ ID: h.id, NamespaceId: 1, Type: 'Host', SchemaVersion: { Major: 2, Minor: 0 } }]);
      const bad = JSON.stringify({ ...state, namespaces: [{ ID: 7 }] });
      const err = expectCode(() => parseDataplaneState(bad, file), DataplaneStateError, 'FLANNEL_ERR_DATAPLANE_STATE');
      expect(err.context.entry).toBe('$.namespaces[0].ID');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// Endpoint ACL rules and SetPolicy IP sets through HnsClient on the simulated HNS (src/hns/client.ts,
// src/simulator/acl-objects.ts, refusals.ts): what HNS takes and refuses, each refusal's HRESULT (cited in
// refusals.ts: hcsshim#1059 observed 0x803B000D for `LocalAddresses: "Any"`, the rest modelled), the
// version gates of hcsshim hcn/hcnglobals.go (SetPolicyVersion 13.0, NestedIpSetVersion 15.0,
// AclSupportForProtocol252Version 11.0), the order Azure NPM keeps (a set exists before a rule names it
// and outlives it: npm/pkg/dataplane/dataplane_windows.go, ipsets/ipsetmanager_windows.go), one
// HcnModify* per call, `faults` rules on the new calls, and the state file round trip.
import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { HnsError } from '../../../src/basics/errors.js';
import { HnsClient } from '../../../src/hns/client.js';
import { HRESULT, isHnsRefusal } from '../../../src/hns/errors.js';
import type { AclPolicySetting, HcnPolicyRequest, HnsVersion, SetPolicySetting } from '../../../src/hns/schema.js';
import { SimulatedHnsTransport } from '../../../src/simulator/hns.js';
import { SimulatedDataplane } from '../../../src/simulator/model.js';
import type { PolicyBatches } from '../../../src/simulator/refusals.js';
import { parseDataplaneState } from '../../../src/simulator/state-file.js';
import { expectCode } from '../../support/errors.js';
import { editState } from '../../support/sim-dataplane.js';

const V2 = { Major: 2, Minor: 0 };
const v = (text: string): HnsVersion => ({ Major: Number(text.split('.')[0]), Minor: Number(text.split('.')[1]) });

async function node(opts: { version?: string; statePath?: string; batches?: PolicyBatches } = {}) {
  const dp = new SimulatedDataplane({ statePath: opts.statePath });
  if (opts.batches) editState(dp, (s) => void (s.policyBatches = opts.batches));
  const hns = new HnsClient(new SimulatedHnsTransport(dp, opts.version ? { version: v(opts.version) } : {}));
  const net = await hns.createNetwork({
    Name: 'cbr0',
    Type: 'L2Bridge',
    SchemaVersion: V2,
    Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: '10.244.1.0/24', Routes: [{ NextHop: '10.244.1.1', DestinationPrefix: '0.0.0.0/0' }] }] }],
  });
  const pod = async (name: string, ip: string, Flags?: number) =>
    (await hns.createEndpoint(net.ID!, { Name: name, SchemaVersion: V2, IpConfigurations: [{ IpAddress: ip, PrefixLength: 24 }], ...(Flags ? { Flags } : {}) })).ID!;
  const a = await pod('pod-a', '10.244.1.10');
  const acls = async (id = a) => (await hns.getEndpointAcls(id)) ?? [];
  const setIds = async () => ((await hns.getSetPolicies(net.ID!)) ?? []).map((s) => `${s.Id}=${s.Values}`);
  return { dp, hns, net: net.ID!, a, pod, acls, setIds };
}

const acl = (o: Partial<AclPolicySetting> = {}): AclPolicySetting => ({
  Id: 'acl-1',
  Protocols: '6',
  Action: 'Allow',
  Direction: 'In',
  RemoteAddresses: '10.244.1.11',
  LocalPorts: '80',
  RuleType: 'Switch',
  Priority: 100,
  ...o,
});
const ipset = (Id: string, values: string[]): SetPolicySetting => ({ Id, Name: `name-${Id}`, PolicyType: 'IPSET', Values: values.join(',') });
const nested = (Id: string, members: string[]): SetPolicySetting => ({ Id, Name: `name-${Id}`, PolicyType: 'NESTEDIPSET', Values: members.join(',') });

async function refused(p: Promise<unknown>, hresult: number, code: HnsError['code'] = 'FLANNEL_ERR_HNS_CALL'): Promise<HnsError> {
  const err = await expectCode(p, HnsError, code);
  expect(err.hresult).toBe(hresult);
  return err;
}

describe('endpoint ACL rules (HcnModifyEndpoint)', () => {
  it('adds and removes rules by their settings, Id included; one HcnModifyEndpoint per call, every handle closed', async () => {
    const { dp, hns, a, acls } = await node();
    const rules = [
      acl(),
      acl({ Id: 'acl-2', Action: 'Block', RemoteAddresses: undefined, LocalPorts: undefined, Protocols: undefined, Priority: 200 }),
      acl({ Id: 'acl-3', Direction: 'Out', RemoteAddresses: '10.96.0.0/12,fd00::/108', RemotePorts: '53,8000-8100', LocalPorts: undefined, Protocols: '17' }),
      acl({ Id: 'acl-4', RuleType: 'Host', Priority: undefined, Protocols: '256', LocalPorts: undefined }),
    ];
    await hns.addEndpointAcls(a, rules);
    expect(dp.calls.get('HcnModifyEndpoint')).toBe(1);
    expect(await acls()).toEqual(rules);
    // The query returns them among the endpoint's policies, as HNS does.
    expect((await hns.getEndpoint(a))!.Policies).toEqual(rules.map((r) => ({ Type: 'ACL', Settings: r })));
    await hns.removeEndpointAcls(a, [rules[1], rules[3]]);
    expect(dp.calls.get('HcnModifyEndpoint')).toBe(2);
    expect((await acls()).map((r) => r.Id)).toEqual(['acl-1', 'acl-3']);
    await hns.addEndpointAcls(a, []);
    expect(dp.calls.get('HcnModifyEndpoint')).toBe(2);
    expect(dp.openHandles).toBe(0);
  });

  it.each<[string, Record<string, unknown>]>([
    ['an address field holding "Any" (hcsshim#1059, observed)', { LocalAddresses: 'Any' }],
    ['Action Pass (a TierAcl action)', { Action: 'Pass' }],
    ['Action in lower case', { Action: 'allow' }],
    ['no Action', { Action: undefined }],
    ['Direction Both', { Direction: 'Both' }],
    ['RuleType Firewall', { RuleType: 'Firewall' }],
    ['Priority above uint16', { Priority: 65536 }],
    ['a negative Priority', { Priority: -1 }],
    ['a fractional Priority', { Priority: 1.5 }],
    ['Priority as a string', { Priority: '100' }],
    ['Protocols by name', { Protocols: 'TCP' }],
    ['Protocols as a list', { Protocols: '6,17' }],
    ['Protocols above 256', { Protocols: '257' }],
    ['port 0', { LocalPorts: '0' }],
    ['a port above 65535', { LocalPorts: '70000' }],
    ['a backwards range', { LocalPorts: '90-80' }],
    ['ports split by ;', { LocalPorts: '80;81' }],
    ['ports on ICMP', { Protocols: '1' }],
    ['ports on any protocol', { Protocols: undefined }],
    ['a prefix length above 32', { RemoteAddresses: '10.244.0.0/33' }],
    ['a set Id the network lacks', { RemoteAddresses: 'azure-npm-404' }],
    ['a key spelt ID (Azure NPM: "HNS is not happy with ID")', { Id: undefined, ID: 'acl-1' }],
    ['Id as a number', { Id: 7 }],
  ])('%s: HCN_E_INVALID_POLICY 0x803B000D, nothing stored', async (_what, change) => {
    const { hns, a, acls } = await node();
    const err = await refused(hns.addEndpointAcls(a, [{ ...acl(), ...change }]), HRESULT.HCN_E_INVALID_POLICY);
    expect(isHnsRefusal(err)).toBe(true);
    expect(err.context).toMatchObject({ endpointId: a, policyType: 'ACL' });
    expect(await acls()).toEqual([]);
  });

  it('a rule held or repeated is HCN_E_POLICY_ALREADY_EXISTS; a request is applied whole or not at all', async () => {
    const { hns, a, acls } = await node();
    await hns.addEndpointAcls(a, [acl()]);
    await refused(hns.addEndpointAcls(a, [acl({ Id: 'acl-2' }), acl()]), HRESULT.HCN_E_POLICY_ALREADY_EXISTS, 'FLANNEL_ERR_HNS_EXISTS');
    await refused(hns.addEndpointAcls(a, [acl({ Id: 'acl-2' }), acl({ Id: 'acl-2' })]), HRESULT.HCN_E_POLICY_ALREADY_EXISTS, 'FLANNEL_ERR_HNS_EXISTS');
    await refused(hns.addEndpointAcls(a, [acl({ Id: 'acl-2' }), acl({ Id: 'acl-3', Action: 'Deny' as 'Block' })]), HRESULT.HCN_E_INVALID_POLICY);
    expect((await acls()).map((r) => r.Id)).toEqual(['acl-1']);
    // The same Id on two rules is HNS's to take (Azure NPM gives one Id to all rules of a policy).
    await hns.addEndpointAcls(a, [acl({ Priority: 101 })]);
    expect((await acls()).map((r) => `${r.Id}@${r.Priority}`)).toEqual(['acl-1@100', 'acl-1@101']);
  });

  it('Remove of a rule the endpoint does not hold (other settings, same Id) is HCN_E_POLICY_NOT_FOUND, nothing removed', async () => {
    const { hns, a, acls } = await node();
    await hns.addEndpointAcls(a, [acl(), acl({ Id: 'acl-2', Priority: 300 })]);
    await refused(hns.removeEndpointAcls(a, [acl({ Id: 'acl-2', Priority: 300 }), acl({ Priority: 999 })]), HRESULT.HCN_E_POLICY_NOT_FOUND, 'FLANNEL_ERR_HNS_NOT_FOUND');
    await refused(hns.removeEndpointAcls(a, [acl(), acl()]), HRESULT.HCN_E_POLICY_NOT_FOUND, 'FLANNEL_ERR_HNS_NOT_FOUND');
    expect((await acls()).map((r) => r.Id)).toEqual(['acl-1', 'acl-2']);
  });

  it('a remote endpoint takes no rules (0x803B000F); a missing endpoint is not found; other policies and RequestTypes are not modelled', async () => {
    const { dp, hns, a, pod } = await node();
    const remote = await pod('', '10.244.9.9', 1);
    await refused(hns.addEndpointAcls(remote, [acl()]), HRESULT.HCN_E_INVALID_REMOTE_ENDPOINT_OPERATION);
    await refused(hns.addEndpointAcls('0F0F0F0F-0000-0000-0000-000000000000', [acl()]), HRESULT.HCN_E_ENDPOINT_NOT_FOUND, 'FLANNEL_ERR_HNS_NOT_FOUND');
    const t = new SimulatedHnsTransport(dp);
    const modify = async (request: unknown) => {
      const h = await t.openEndpoint(a);
      try {
        await t.modifyEndpoint(h, JSON.stringify(request));
      } finally {
        await t.closeEndpoint(h);
      }
    };
    const req = (RequestType: string, Policies: unknown[]): HcnPolicyRequest => ({ ResourceType: 'Policy', RequestType, Settings: { Policies } }) as HcnPolicyRequest;
    await refused(modify(req('Add', [{ Type: 'OutBoundNAT', Settings: { Exceptions: ['10.0.0.0/8'] } }])), HRESULT.E_INVALIDARG);
    await refused(modify(req('Update', [{ Type: 'ACL', Settings: acl() }])), HRESULT.E_INVALIDARG);
    await refused(modify({ ResourceType: 'Port', RequestType: 'Add', Settings: {} }), HRESULT.E_INVALIDARG);
    expect(await hns.getEndpointAcls(a)).toEqual([]);
    expect(await hns.getEndpointAcls('0F0F0F0F-0000-0000-0000-000000000000')).toBeUndefined();
  });

  it('HcnCreateEndpoint judges the ACL rules it is given as HcnModifyEndpoint does', async () => {
    const { hns, net } = await node();
    const body = (Settings: Record<string, unknown>) => ({
      Name: 'pod-c',
      SchemaVersion: V2,
      IpConfigurations: [{ IpAddress: '10.244.1.12' }],
      Policies: [{ Type: 'ACL', Settings }],
    });
    await refused(hns.createEndpoint(net, body({ ...acl(), RemoteAddresses: 'Any' })), HRESULT.HCN_E_INVALID_POLICY);
    const ep = await hns.createEndpoint(net, body({ ...acl() }));
    expect(await hns.getEndpointAcls(ep.ID!)).toEqual([acl()]);
  });
});

describe('SetPolicy IP sets (HcnModifyNetwork)', () => {
  it('Add, Update (replaces Values), Remove by Id; one HcnModifyNetwork per call', async () => {
    const { dp, hns, net, setIds } = await node();
    await hns.addSetPolicies(net, [ipset('azure-npm-1', ['10.244.1.11', '10.244.2.0/24']), ipset('azure-npm-2', [])]);
    expect(await setIds()).toEqual(['azure-npm-1=10.244.1.11,10.244.2.0/24', 'azure-npm-2=']);
    await hns.updateSetPolicies(net, [ipset('azure-npm-2', ['10.244.1.12', 'fd00:10:244:1::12'])]);
    expect(await setIds()).toEqual(['azure-npm-1=10.244.1.11,10.244.2.0/24', 'azure-npm-2=10.244.1.12,fd00:10:244:1::12']);
    // Remove needs the Id only (Azure NPM removes sets as it read them).
    await hns.removeSetPolicies(net, [{ ...ipset('azure-npm-1', []), Values: 'whatever' }]);
    expect(await setIds()).toEqual(['azure-npm-2=10.244.1.12,fd00:10:244:1::12']);
    expect(dp.calls.get('HcnModifyNetwork')).toBe(3);
    expect(dp.openHandles).toBe(0);
  });

  it.each<[string, Record<string, unknown>, number]>([
    ['no Id', { Id: '' }, HRESULT.HCN_E_INVALID_POLICY],
    ['PolicyType in another case', { PolicyType: 'IpSet' }, HRESULT.HCN_E_INVALID_POLICY],
    ['the Go field name Type instead of PolicyType', { PolicyType: undefined, Type: 'IPSET' }, HRESULT.HCN_E_INVALID_POLICY],
    ['Values as an array', { Values: ['10.0.0.1'] }, HRESULT.HCN_E_INVALID_POLICY],
    ['a member that is no address', { Values: '10.0.0.300' }, HRESULT.HCN_E_INVALID_POLICY],
    ['a member with a nomatch suffix', { Values: '10.0.0.0/24 nomatch' }, HRESULT.HCN_E_INVALID_POLICY],
    ['Name as a number', { Name: 5 }, HRESULT.HCN_E_INVALID_POLICY],
    ['a NESTEDIPSET naming a set the network lacks', { PolicyType: 'NESTEDIPSET', Values: 'azure-npm-404' }, HRESULT.HCN_E_INVALID_JSON_REFERENCE],
    ['a NESTEDIPSET naming a NESTEDIPSET', { PolicyType: 'NESTEDIPSET', Values: 'azure-npm-list' }, HRESULT.HCN_E_INVALID_POLICY],
  ])('%s: refused, nothing stored', async (_what, change, hresult) => {
    const { hns, net, setIds } = await node();
    await hns.addSetPolicies(net, [ipset('azure-npm-1', ['10.244.1.11'])]);
    await hns.addSetPolicies(net, [nested('azure-npm-list', ['azure-npm-1'])]);
    const err = await refused(hns.addSetPolicies(net, [{ ...ipset('azure-npm-9', []), ...change }]), hresult);
    expect(isHnsRefusal(err)).toBe(true);
    expect(await setIds()).toEqual(['azure-npm-1=10.244.1.11', 'azure-npm-list=azure-npm-1']);
  });

  it('Add of a held Id is HCN_E_POLICY_ALREADY_EXISTS; Update of a missing one HCN_E_POLICY_NOT_FOUND; an Update may not change PolicyType', async () => {
    const { hns, net, setIds } = await node();
    await hns.addSetPolicies(net, [ipset('azure-npm-1', ['10.244.1.11'])]);
    await refused(hns.addSetPolicies(net, [ipset('azure-npm-1', ['10.244.1.12'])]), HRESULT.HCN_E_POLICY_ALREADY_EXISTS, 'FLANNEL_ERR_HNS_EXISTS');
    await refused(hns.updateSetPolicies(net, [ipset('azure-npm-2', [])]), HRESULT.HCN_E_POLICY_NOT_FOUND, 'FLANNEL_ERR_HNS_NOT_FOUND');
    await refused(hns.removeSetPolicies(net, [ipset('azure-npm-2', [])]), HRESULT.HCN_E_POLICY_NOT_FOUND, 'FLANNEL_ERR_HNS_NOT_FOUND');
    await hns.addSetPolicies(net, [ipset('azure-npm-2', [])]);
    await refused(hns.updateSetPolicies(net, [nested('azure-npm-1', ['azure-npm-2'])]), HRESULT.HCN_E_INVALID_POLICY);
    expect(await setIds()).toEqual(['azure-npm-1=10.244.1.11', 'azure-npm-2=']);
  });

  it('a set exists before a rule or a NESTEDIPSET names it, and cannot be removed while one does (0x803B002C)', async () => {
    const { hns, net, a, acls, setIds } = await node();
    const rule = acl({ RemoteAddresses: 'azure-npm-list' });
    await refused(hns.addEndpointAcls(a, [rule]), HRESULT.HCN_E_INVALID_POLICY);
    // Member sets first, then the nested set: in one request, in order.
    await hns.addSetPolicies(net, [ipset('azure-npm-1', ['10.244.1.11']), nested('azure-npm-list', ['azure-npm-1'])]);
    await hns.addEndpointAcls(a, [rule, acl({ Id: 'acl-2', RemoteAddresses: 'azure-npm-1', Priority: 101 })]);
    const inUse = await refused(hns.removeSetPolicies(net, [ipset('azure-npm-list', [])]), HRESULT.HCN_E_ENTITY_HAS_REFERENCES);
    expect(isHnsRefusal(inUse)).toBe(true);
    expect(inUse.context).toMatchObject({ networkId: net, set: 'azure-npm-list' });
    await hns.removeEndpointAcls(a, [rule]);
    // azure-npm-1 is still named by acl-2 and by the nested set.
    await refused(hns.removeSetPolicies(net, [ipset('azure-npm-1', [])]), HRESULT.HCN_E_ENTITY_HAS_REFERENCES);
    await hns.removeSetPolicies(net, [nested('azure-npm-list', [])]);
    await refused(hns.removeSetPolicies(net, [ipset('azure-npm-1', [])]), HRESULT.HCN_E_ENTITY_HAS_REFERENCES);
    await hns.removeEndpointAcls(a, [(await acls())[0]]);
    await hns.removeSetPolicies(net, [ipset('azure-npm-1', [])]);
    expect(await setIds()).toEqual([]);
    // Deleting an endpoint takes its rules' references with it.
    await hns.addSetPolicies(net, [ipset('azure-npm-3', [])]);
    await hns.addEndpointAcls(a, [acl({ RemoteAddresses: 'azure-npm-3' })]);
    await hns.deleteEndpoint(a);
    await hns.removeSetPolicies(net, [ipset('azure-npm-3', [])]);
  });

  it.each<[PolicyBatches, string[]]>([
    ['atomic', ['azure-npm-0=']],
    ['partial', ['azure-npm-0=', 'azure-npm-1=10.244.1.11']],
  ])('policyBatches %s: a batch refused part-way', async (batches, after) => {
    const { hns, net, setIds } = await node({ batches });
    await hns.addSetPolicies(net, [ipset('azure-npm-0', [])]);
    await refused(hns.addSetPolicies(net, [ipset('azure-npm-1', ['10.244.1.11']), ipset('azure-npm-0', [])]), HRESULT.HCN_E_POLICY_ALREADY_EXISTS, 'FLANNEL_ERR_HNS_EXISTS');
    expect(await setIds()).toEqual(after);
  });

  it('policyBatches single: two sets in one request are refused (0x803B0015)', async () => {
    const { hns, net, setIds } = await node({ batches: 'single' });
    await refused(hns.addSetPolicies(net, [ipset('azure-npm-1', []), ipset('azure-npm-2', [])]), HRESULT.HCN_E_REQUEST_UNSUPPORTED);
    expect(await setIds()).toEqual([]);
  });

  it('SetPolicy mixed with other network policies in one request is not modelled (E_INVALIDARG)', async () => {
    const { dp, net, setIds } = await node();
    const rsr = {
      Type: 'RemoteSubnetRoute',
      Settings: { DestinationPrefix: '10.244.2.0/24', IsolationId: 4096, ProviderAddress: '10.0.0.3', DistributedRouterMacAddress: '0e:2a:0a:00:00:03' },
    };
    expect(() => dp.modifyNetworkPolicies('HcnModifyNetwork', net, 'Add', [{ Type: 'SetPolicy', Settings: { ...ipset('azure-npm-1', []) } }, rsr])).toThrow(HnsError);
    expect(await setIds()).toEqual([]);
  });
});

describe('the HNS version (state file `hnsVersion`, else SimulatedHnsOptions.version, else 15.4)', () => {
  it.each<[string, { set: number; nested: number; acl: number; protocol252: number }]>([
    ['9.5', { set: HRESULT.HCN_E_INVALID_POLICY_TYPE, nested: HRESULT.HCN_E_INVALID_POLICY_TYPE, acl: 0, protocol252: HRESULT.HCN_E_INVALID_POLICY }],
    ['11.0', { set: HRESULT.HCN_E_INVALID_POLICY_TYPE, nested: HRESULT.HCN_E_INVALID_POLICY_TYPE, acl: 0, protocol252: 0 }],
    ['13.2', { set: 0, nested: HRESULT.HCN_E_INVALID_POLICY_TYPE, acl: 0, protocol252: 0 }],
    ['15.4', { set: 0, nested: 0, acl: 0, protocol252: 0 }],
  ])('HNS %s', async (version, want) => {
    const { hns, net, a } = await node({ version });
    expect(await hns.version()).toEqual(v(version));
    const outcome = (p: Promise<unknown>) =>
      p.then(
        () => 0,
        (err: unknown) => (err instanceof HnsError ? (err.hresult ?? -1) : -2),
      );
    expect({
      acl: await outcome(hns.addEndpointAcls(a, [acl()])),
      protocol252: await outcome(hns.addEndpointAcls(a, [acl({ Id: 'vxlan', Protocols: '252', LocalPorts: undefined })])),
      set: await outcome(hns.addSetPolicies(net, [ipset('azure-npm-1', [])])),
      nested: await outcome(hns.addSetPolicies(net, [nested('azure-npm-list', [])])),
    }).toEqual(want);
  });

  it('the state file names the version every process on the node reports, over the option', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sim-acl-'));
    try {
      const file = path.join(dir, 'dataplane.json');
      const { dp, hns, net } = await node({ statePath: file, version: '13.2' });
      expect(await hns.version()).toEqual({ Major: 13, Minor: 2 });
      editState(dp, (s) => void (s.hnsVersion = '9.5'));
      const other = new HnsClient(new SimulatedHnsTransport(new SimulatedDataplane({ statePath: file }), { version: { Major: 15, Minor: 4 } }));
      expect(await other.version()).toEqual({ Major: 9, Minor: 5 });
      await refused(other.addSetPolicies(net, [ipset('azure-npm-1', [])]), HRESULT.HCN_E_INVALID_POLICY_TYPE);
      // With neither, the newest profile: Windows Server 2025's HNS 15.4.
      expect(await new HnsClient(new SimulatedHnsTransport(new SimulatedDataplane())).version()).toEqual({ Major: 15, Minor: 4 });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('faults and the state file', () => {
  it('`faults` rules fire on HcnModifyEndpoint and on a SetPolicy HcnModifyNetwork, matched on the request', async () => {
    const { dp, hns, net, a, acls, setIds } = await node();
    editState(dp, (s) => {
      s.faults = [
        { op: 'HcnModifyEndpoint', match: '"Id":"acl-7"', hresult: '0x80004005', remaining: 1 },
        { op: 'HcnModifyNetwork', match: 'azure-npm-7', hresult: '0x803B0020', remaining: 1 },
      ];
    });
    await refused(hns.addEndpointAcls(a, [acl({ Id: 'acl-7' })]), HRESULT.E_FAIL);
    await refused(hns.addSetPolicies(net, [ipset('azure-npm-7', [])]), HRESULT.HCN_E_MANAGER_STOPPED);
    await hns.addEndpointAcls(a, [acl({ Id: 'acl-7' })]);
    await hns.addSetPolicies(net, [ipset('azure-npm-7', [])]);
    expect((await acls()).map((r) => r.Id)).toEqual(['acl-7']);
    expect(await setIds()).toEqual(['azure-npm-7=']);
    expect(dp.snapshot().faults!.map((f) => f.remaining)).toEqual([0, 0]);
  });

  it('rules and sets persist in the state file; another process reads them, with the references they make', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sim-acl-'));
    try {
      const file = path.join(dir, 'dataplane.json');
      const first = await node({ statePath: file });
      await first.hns.addSetPolicies(first.net, [ipset('azure-npm-1', ['10.244.1.11'])]);
      await first.hns.addEndpointAcls(first.a, [
        acl({ RemoteAddresses: 'azure-npm-1' }),
        acl({ Id: 'acl-2', Direction: 'Out', LocalPorts: undefined, RemotePorts: '53', Protocols: '17' }),
      ]);
      const text = fs.readFileSync(file, 'utf8');
      expect(parseDataplaneState(text, file)).toEqual(first.dp.snapshot());
      const doc = JSON.parse(text) as { endpoints: { Name: string; Policies: unknown[] }[]; networks: { Policies: { Type: string }[] }[] };
      expect(doc.endpoints.find((e) => e.Name === 'pod-a')!.Policies).toEqual([
        { Type: 'ACL', Settings: acl({ RemoteAddresses: 'azure-npm-1' }) },
        { Type: 'ACL', Settings: acl({ Id: 'acl-2', Direction: 'Out', LocalPorts: undefined, RemotePorts: '53', Protocols: '17' }) },
      ]);
      expect(doc.networks[0].Policies.filter((p) => p.Type === 'SetPolicy')).toEqual([{ Type: 'SetPolicy', Settings: ipset('azure-npm-1', ['10.244.1.11']) }]);

      const second = new HnsClient(new SimulatedHnsTransport(new SimulatedDataplane({ statePath: file })));
      expect((await second.getEndpointAcls(first.a))!.map((r) => r.Id)).toEqual(['acl-1', 'acl-2']);
      expect(await second.getSetPolicies(first.net)).toEqual([ipset('azure-npm-1', ['10.244.1.11'])]);
      await refused(second.removeSetPolicies(first.net, [ipset('azure-npm-1', [])]), HRESULT.HCN_E_ENTITY_HAS_REFERENCES);
      await second.removeEndpointAcls(first.a, [acl({ RemoteAddresses: 'azure-npm-1' })]);
      await second.removeSetPolicies(first.net, [ipset('azure-npm-1', [])]);
      // The first process sees the second's changes on its next call.
      expect((await first.acls()).map((r) => r.Id)).toEqual(['acl-2']);
      expect(await first.setIds()).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an HNS restart drops the endpoints with their rules and the sets added since the network was created', async () => {
    const { dp, hns, net, a } = await node();
    await hns.addSetPolicies(net, [ipset('azure-npm-1', [])]);
    await hns.addEndpointAcls(a, [acl()]);
    dp.restartHns();
    expect(await hns.getEndpointAcls(a)).toBeUndefined();
    expect(await hns.getSetPolicies(net)).toEqual([]);
  });
});

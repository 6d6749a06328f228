// The simulated dataplane's state file: parse and validate one document (docs/simulator.md). Pure. Networks, endpoints and load balancers follow the HCN v2 schema (hcsshim hcn/hcnnetwork.go,
// hcn/hcnendpoint.go, hcn/hcnloadbalancer.go, hcn/hcnpolicy.go: a policy is {Type, Settings} and Settings may be absent), routes
// iphlpapi's MIB_IPFORWARD_ROW2 reduced. A file edited by hand or by another tool must give a coded
// error naming the file and the entry, never a TypeError deep inside the model.
import { DataplaneStateError } from '../basics/errors.js';
import { MAX_JSON_DEPTH, jsonTooDeep } from '../basics/json-depth.js';
import { isIp4 } from '../basics/ip4.js';
import { parseIp6 } from '../basics/ip6.js';
import type { HnsVersion } from '../hns/schema.js';
import { parseFaultRules } from './faults.js';
import { DUPLICATE_REMOTE_ENDPOINT_IP_MODES, POLICY_BATCH_MODES, type DuplicateRemoteEndpointIp, type PolicyBatches } from './refusals.js';
import { loadBalancerShapeProblem } from './load-balancers.js';
import { VNIC_SETTINGS_MODES, type DataplaneState, type SimAdapter, type VnicSettings } from './state.js';

type Kind = 'string' | 'number' | 'boolean' | 'object' | 'array';
type Obj = Record<string, unknown>;

function kindOf(v: unknown): Kind | 'null' | 'other' {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  const t = typeof v;
  return t === 'string' || t === 'number' || t === 'boolean' || t === 'object' ? t : 'other';
}

class Shape {
  constructor(private readonly fail: (why: string, entry: string) => never) {}

  object(v: unknown, at: string): Obj {
    if (kindOf(v) !== 'object') this.fail(`${at} must be an object, got ${kindOf(v)}`, at);
    return v as Obj;
  }

  /** Each element of the array at `at` (absent allowed when `optional`). */
  each(o: Obj, key: string, at: string, optional: boolean, check: (item: unknown, at: string) => void): void {
    const v = o[key];
    if (v === undefined && optional) return;
    if (!Array.isArray(v)) this.fail(`${at}.${key} must be an array, got ${kindOf(v)}`, `${at}.${key}`);
    (v as unknown[]).forEach((item, i) => check(item, `${at}.${key}[${i}]`));
  }

  fields(o: Obj, at: string, required: Record<string, Kind>, optional: Record<string, Kind> = {}): void {
    for (const [k, want] of Object.entries(required)) {
      if (kindOf(o[k]) !== want) this.fail(`${at}.${k} must be a ${want}, got ${kindOf(o[k])}`, `${at}.${k}`);
    }
    for (const [k, want] of Object.entries(optional)) {
      if (o[k] !== undefined && kindOf(o[k]) !== want) this.fail(`${at}.${k} must be a ${want} when present, got ${kindOf(o[k])}`, `${at}.${k}`);
    }
  }

  policy = (v: unknown, at: string): void => {
    this.fields(this.object(v, at), at, { Type: 'string' }, { Settings: 'object' });
  };

  network = (v: unknown, at: string): void => {
    const n = this.object(v, at);
    this.fields(n, at, { Name: 'string', Type: 'string' }, { ID: 'string', Flags: 'number', MacPool: 'object', Dns: 'object', SchemaVersion: 'object' });
    this.each(n, 'Policies', at, true, this.policy);
    this.each(n, 'Ipams', at, true, (ipam, ipamAt) => {
      const i = this.object(ipam, ipamAt);
      this.fields(i, ipamAt, {}, { Type: 'string' });
      this.each(i, 'Subnets', ipamAt, true, (sub, subAt) => {
        const s = this.object(sub, subAt);
        this.fields(s, subAt, { IpAddressPrefix: 'string' });
        this.each(s, 'Policies', subAt, true, this.policy);
        this.each(s, 'Routes', subAt, true, (r, rAt) => this.fields(this.object(r, rAt), rAt, { DestinationPrefix: 'string' }, { NextHop: 'string', Metric: 'number' }));
      });
    });
  };

  endpoint = (v: unknown, at: string): void => {
    const e = this.object(v, at);
    this.fields(
      e,
      at,
      {},
      { Name: 'string', ID: 'string', HostComputeNetwork: 'string', HostComputeNamespace: 'string', MacAddress: 'string', Flags: 'number', SchemaVersion: 'object' },
    );
    this.each(e, 'Policies', at, true, this.policy);
    this.each(e, 'IpConfigurations', at, true, (c, cAt) => this.fields(this.object(c, cAt), cAt, { IpAddress: 'string' }, { PrefixLength: 'number' }));
  };

  /** hcsshim hcn/hcnnamespace.go HostComputeNamespace (Resources are rendered from the endpoints, not stored). */
  namespace = (v: unknown, at: string): void => {
    this.fields(this.object(v, at), at, { ID: 'string', NamespaceId: 'number', Type: 'string', SchemaVersion: 'object' });
  };

  route = (v: unknown, at: string): void => {
    this.fields(this.object(v, at), at, { DestinationPrefix: 'string', NextHop: 'string', InterfaceIndex: 'number', Metric: 'number' });
  };

  adapter = (v: unknown, at: string): void => {
    const a = this.object(v, at);
    this.fields(
      a,
      at,
      { Name: 'string', InterfaceIndex: 'number', IPAddress: 'string' },
      { PrefixLength: 'number', Mtu: 'number', Forwarding: 'boolean', IPv6Address: 'string', IPv6PrefixLength: 'number', ForwardingV6: 'boolean', Dhcp: 'boolean' },
    );
    if (a.DnsServers !== undefined && !(Array.isArray(a.DnsServers) && a.DnsServers.every((d) => typeof d === 'string' && (isIp4(d) || parseIp6(d) !== undefined)))) {
      this.fail(`${at}.DnsServers must be a list of IP addresses`, `${at}.DnsServers`);
    }
    if (!Number.isInteger(a.InterfaceIndex)) this.fail(`${at}.InterfaceIndex must be an integer`, `${at}.InterfaceIndex`);
    if (a.IPAddress !== '' && !isIp4(a.IPAddress as string)) this.fail(`${at}.IPAddress ${JSON.stringify(a.IPAddress)} is not an IPv4 address ('' for none)`, `${at}.IPAddress`);
  };
}

/** The state file's `hnsVersion` ("15.4") as HNS reports it ({Major: 15, Minor: 4}); undefined when it is not that form. */
export function parseHnsVersion(v: unknown): HnsVersion | undefined {
  const m = typeof v === 'string' ? /^(\d{1,5})\.(\d{1,5})$/.exec(v) : null;
  return m ? { Major: Number(m[1]), Minor: Number(m[2]) } : undefined;
}

/**
 * Parse and validate the text of the state file `file` (networks, endpoints, routes, adapters, namespaces, faults, policyBatches, hnsVersion,
 * loadBalancers, rehydratingLoadBalancers, duplicateRemoteEndpointIp, vnicSettings). Throws FLANNEL_ERR_DATAPLANE_STATE naming the
 * file and the first bad entry (e.g. `networks[0].Policies[2].Type must be a string, got null`; `entry` in its context).
 */
export function parseDataplaneState(text: string, file: string): DataplaneState {
  const fail = (why: string, entry?: string): never => {
    throw new DataplaneStateError('FLANNEL_ERR_DATAPLANE_STATE', `simulated dataplane state file ${file} is malformed: ${why}; delete it to start from a fresh node, or fix it`, {
      file,
      entry,
    });
  };
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    fail(`it is not JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  if (jsonTooDeep(doc)) fail(`it nests arrays or objects deeper than ${MAX_JSON_DEPTH} levels`);
  if (kindOf(doc) !== 'object' || !['networks', 'endpoints', 'routes', 'adapters'].every((k) => Array.isArray((doc as Obj)[k]))) {
    fail('expected {"networks":[],"endpoints":[],"routes":[],"adapters":[]}');
  }
  const shape = new Shape(fail);
  const o = doc as Obj;
  shape.each(o, 'networks', '$', false, shape.network);
  shape.each(o, 'endpoints', '$', false, shape.endpoint);
  shape.each(o, 'routes', '$', false, shape.route);
  shape.each(o, 'adapters', '$', false, shape.adapter);
  shape.each(o, 'namespaces', '$', true, shape.namespace);
  const names = (o.adapters as SimAdapter[]).map((a) => a.Name.toLowerCase());
  const dup = names.find((n, i) => names.indexOf(n) !== i);
  if (dup !== undefined) fail(`two adapters are named ${JSON.stringify(dup)}`);
  const state = doc as DataplaneState;
  // An operator may add an adapter by hand without PrefixLength, Mtu and Forwarding.
  state.adapters = (state.adapters as Partial<SimAdapter>[]).map((a) => ({ PrefixLength: a.IPAddress ? 24 : 0, Mtu: 1500, Forwarding: false, ...a }) as SimAdapter);
  if (o.policyBatches !== undefined && !POLICY_BATCH_MODES.includes(o.policyBatches as PolicyBatches)) {
    fail(`"policyBatches" must be one of ${POLICY_BATCH_MODES.map((m) => JSON.stringify(m)).join(', ')}, got ${JSON.stringify(o.policyBatches)}`, '$.policyBatches');
  }
  if (o.hnsInstance !== undefined && !(Number.isSafeInteger(o.hnsInstance) && (o.hnsInstance as number) >= 1)) {
    fail(`"hnsInstance" must be a whole number >= 1, got ${JSON.stringify(o.hnsInstance)}`, '$.hnsInstance');
  }
  if (
    o.serviceRestarts !== undefined &&
    (typeof o.serviceRestarts !== 'object' ||
      o.serviceRestarts === null ||
      Array.isArray(o.serviceRestarts) ||
      !Object.values(o.serviceRestarts).every((n) => Number.isSafeInteger(n) && (n as number) >= 0))
  ) {
    fail(`"serviceRestarts" must map service names to whole numbers >= 0, got ${JSON.stringify(o.serviceRestarts)}`, '$.serviceRestarts');
  }
  if (o.hnsVersion !== undefined && parseHnsVersion(o.hnsVersion) === undefined) {
    fail(`"hnsVersion" must be "<major>.<minor>" as HNS reports it (e.g. "9.5", "13.2", "15.4"), got ${JSON.stringify(o.hnsVersion)}`, '$.hnsVersion');
  }
  for (const key of ['loadBalancers', 'rehydratingLoadBalancers'] as const) {
    shape.each(o, key, '$', true, (lb, at) => {
      const problem = loadBalancerShapeProblem(lb, at);
      if (problem) fail(problem, at);
      if (typeof (lb as Obj).ID !== 'string') fail(`${at}.ID must be a string (the load balancer's GUID)`, `${at}.ID`);
    });
  }
  if (o.duplicateRemoteEndpointIp !== undefined && !DUPLICATE_REMOTE_ENDPOINT_IP_MODES.includes(o.duplicateRemoteEndpointIp as DuplicateRemoteEndpointIp)) {
    fail(
      `"duplicateRemoteEndpointIp" must be one of ${DUPLICATE_REMOTE_ENDPOINT_IP_MODES.map((m) => JSON.stringify(m)).join(', ')}, got ${JSON.stringify(o.duplicateRemoteEndpointIp)}`,
      '$.duplicateRemoteEndpointIp',
    );
  }
  if (o.vnicSettings !== undefined && !VNIC_SETTINGS_MODES.includes(o.vnicSettings as VnicSettings)) {
    fail(`"vnicSettings" must be one of ${VNIC_SETTINGS_MODES.map((m) => JSON.stringify(m)).join(', ')}, got ${JSON.stringify(o.vnicSettings)}`, '$.vnicSettings');
  }
  if (o.faults !== undefined) {
    const faults = parseFaultRules(o.faults);
    if (!Array.isArray(faults)) return fail(faults.problem, faults.entry);
    state.faults = faults;
  }
  return state;
}

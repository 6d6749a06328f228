// HnsTransport over the SimulatedDataplane: an in-memory HNS answering the raw JSON calls as
// vmcompute.dll!HNSCall (v1) and computenetwork.dll!Hcn* (v2) do. Mirrors the call shapes hcsshim uses in
// internal/hns/hnsfuncs.go, hnsnetwork.go, hnsendpoint.go (v1) and hcn/hcnnetwork.go, hcnendpoint.go (v2).
// v1 objects are rendered from the stored v2 objects, as HNS does.
import { HnsError } from '../errors.js';
import type { ErrorContext } from '../errors.js';
import type { SimulatedDataplane } from '../dataplane/simulated.js';
import { jsonEqual } from '../dataplane/simulated.js';
import { contains } from '../ip4.js';
import { HRESULT, hnsError, hresultText, parseErrorRecord } from './errors.js';
import type { HcnEndpoint, HcnNetwork, HcnPolicy, HcnSubnet, HnsEndpointV1, HnsNetworkV1, HnsSubnetV1, HnsVersion } from './schema.js';
import { HCN_SCHEMA_V2, policySetting } from './schema.js';
import type { HcnHandle, HnsTransport } from './transport.js';

export interface SimulatedHnsOptions {
  /** What `GET /globals/version` reports. Default 13.2 (Windows Server 2022). */
  version?: HnsVersion;
  /** GETs of a new L2Bridge/Overlay network that still show an empty ManagementIP (the vNIC coming up). Default 0. */
  managementIPPolls?: number;
}

/** hcn EndpointFlagsRemoteEndpoint. */
const ENDPOINT_FLAG_REMOTE = 1;

type Method = 'GET' | 'POST' | 'DELETE';

// ---- v1 <-> v2 rendering ----

/** v1 policy `{"Type":"VSID","VSID":4096}` -> v2 `{"Type":"VSID","Settings":{"IsolationId":4096}}`. */
export function policyV1toV2(p: unknown): HcnPolicy {
  const { Type, ...rest } = (p ?? {}) as Record<string, unknown>;
  const type = String(Type);
  if (type === 'VSID') return { Type: 'VSID', Settings: { IsolationId: rest.VSID } };
  if (type === 'PA') return { Type: 'ProviderAddress', Settings: { ProviderAddress: rest.PA } };
  return { Type: type, Settings: rest };
}

export function policyV2toV1(p: HcnPolicy): Record<string, unknown> {
  const s = p.Settings ?? {};
  if (p.Type === 'VSID') return { Type: 'VSID', VSID: s.IsolationId };
  if (p.Type === 'ProviderAddress') return { Type: 'PA', PA: s.ProviderAddress };
  return { Type: p.Type, ...s };
}

/** Network policies that surface as v1 fields rather than v1 policies. */
const V1_FIELD_POLICIES = new Set(['NetAdapterName', 'ProviderAddress']);


function gatewayOf(subnet: HcnSubnet): string | undefined {
  return subnet.Routes?.find((r) => r.DestinationPrefix === '0.0.0.0/0')?.NextHop;
}

/** The v1 view (`GET /networks/<id>`) of a stored v2 network. */
export function networkV2toV1(net: HcnNetwork, withManagementIP = true): HnsNetworkV1 {
  const subnets: HnsSubnetV1[] = (net.Ipams ?? []).flatMap((ipam) =>
    (ipam.Subnets ?? []).map((s) => {
      const out: HnsSubnetV1 = { AddressPrefix: s.IpAddressPrefix };
      const gw = gatewayOf(s);
      if (gw) out.GatewayAddress = gw;
      if (s.Policies?.length) out.Policies = s.Policies.map(policyV2toV1);
      return out;
    }),
  );
  const v1: HnsNetworkV1 = {
    ID: net.ID,
    Name: net.Name,
    Type: net.Type,
    Policies: (net.Policies ?? []).filter((p) => !V1_FIELD_POLICIES.has(p.Type)).map(policyV2toV1),
    Subnets: subnets,
    ManagementIP: withManagementIP ? (policySetting(net.Policies, 'ProviderAddress', 'ProviderAddress') ?? '') : '',
  };
  const adapter = policySetting(net.Policies, 'NetAdapterName', 'NetworkAdapterName');
  if (adapter) v1.NetworkAdapterName = adapter;
  if (net.MacPool?.Ranges?.length) v1.MacPools = net.MacPool.Ranges.map((r) => ({ ...r }));
  if (net.Dns?.Domain) v1.DNSSuffix = net.Dns.Domain;
  if (net.Dns?.ServerList?.length) v1.DNSServerList = net.Dns.ServerList.join(',');
  return v1;
}

/** v1 `POST /networks/` body -> the v2 object HNS stores. */
export function networkV1toV2(v1: HnsNetworkV1): HcnNetwork {
  const net: HcnNetwork = { Name: v1.Name, Type: v1.Type, SchemaVersion: { ...HCN_SCHEMA_V2 }, Flags: 0 };
  const policies = (v1.Policies ?? []).map(policyV1toV2);
  if (v1.NetworkAdapterName) policies.push({ Type: 'NetAdapterName', Settings: { NetworkAdapterName: v1.NetworkAdapterName } });
  net.Policies = policies;
  if (v1.Subnets?.length) {
    net.Ipams = [
      {
        Type: 'Static',
        Subnets: v1.Subnets.map((s) => {
          const sub: HcnSubnet = { IpAddressPrefix: s.AddressPrefix };
          if (s.GatewayAddress) sub.Routes = [{ NextHop: s.GatewayAddress, DestinationPrefix: '0.0.0.0/0' }];
          if (s.Policies?.length) sub.Policies = s.Policies.map(policyV1toV2);
          return sub;
        }),
      },
    ];
  }
  if (v1.MacPools?.length) net.MacPool = { Ranges: v1.MacPools.map((r) => ({ ...r })) };
  const servers = v1.DNSServerList?.split(',').map((s) => s.trim()).filter(Boolean) ?? [];
  if (v1.DNSSuffix || servers.length) net.Dns = { ...(v1.DNSSuffix ? { Domain: v1.DNSSuffix } : {}), ...(servers.length ? { ServerList: servers } : {}) };
  return net;
}

/** v1 view of a stored v2 endpoint. */
export function endpointV2toV1(ep: HcnEndpoint, net: HcnNetwork | undefined, attached: boolean): HnsEndpointV1 {
  const ipc = ep.IpConfigurations?.[0];
  const v1: HnsEndpointV1 = {
    ID: ep.ID,
    Name: ep.Name ?? '',
    VirtualNetwork: ep.HostComputeNetwork,
    Policies: (ep.Policies ?? []).map(policyV2toV1),
    MacAddress: ep.MacAddress,
    IsRemoteEndpoint: ((ep.Flags ?? 0) & ENDPOINT_FLAG_REMOTE) !== 0,
    State: attached ? 2 : 1,
  };
  if (net) v1.VirtualNetworkName = net.Name;
  if (ipc) {
    v1.IPAddress = ipc.IpAddress;
    if (ipc.PrefixLength !== undefined) v1.PrefixLength = ipc.PrefixLength;
    const subnet = net?.Ipams?.flatMap((i) => i.Subnets ?? []).find((s) => contains(s.IpAddressPrefix, ipc.IpAddress));
    const gw = subnet && gatewayOf(subnet);
    if (gw) v1.GatewayAddress = gw;
  }
  return v1;
}

/** v1 `POST /endpoints/` body -> the v2 object HNS stores. */
export function endpointV1toV2(v1: HnsEndpointV1, prefixLength: number | undefined): HcnEndpoint {
  const ep: HcnEndpoint = {
    Name: v1.Name,
    Policies: (v1.Policies ?? []).map(policyV1toV2),
    Flags: v1.IsRemoteEndpoint ? ENDPOINT_FLAG_REMOTE : 0,
    SchemaVersion: { ...HCN_SCHEMA_V2 },
  };
  if (v1.MacAddress) ep.MacAddress = v1.MacAddress;
  if (v1.IPAddress) {
    const pl = v1.PrefixLength ?? prefixLength;
    ep.IpConfigurations = [{ IpAddress: v1.IPAddress, ...(pl !== undefined ? { PrefixLength: pl } : {}) }];
  }
  return ep;
}

// ---- v2 query filters ----

const GUID_KEYS = new Set(['ID', 'HostComputeNetwork', 'VirtualNetwork', 'HostComputeNamespace']);

function filterMatches(obj: Record<string, unknown>, filter: Record<string, unknown>, aliases: Record<string, string>): boolean {
  return Object.entries(filter).every(([key, want]) => {
    const have = obj[aliases[key] ?? key];
    if (typeof want === 'string' && typeof have === 'string') {
      return GUID_KEYS.has(key) ? want.toUpperCase() === have.toUpperCase() : want === have;
    }
    return jsonEqual(have, want);
  });
}

export class SimulatedHnsTransport implements HnsTransport {
  private readonly version: HnsVersion;
  private readonly managementIPPolls: number;
  private readonly pendingManagementIP = new Map<string, number>();
  private readonly open = new Set<HcnHandle>();

  constructor(
    private readonly dp: SimulatedDataplane,
    opts: SimulatedHnsOptions = {},
  ) {
    this.version = opts.version ?? { Major: 13, Minor: 2 };
    this.managementIPPolls = opts.managementIPPolls ?? 0;
  }

  // ================================================================ v1

  async hnsCall(method: Method, path: string, request: string): Promise<string> {
    const route = parsePath(method, path);
    const op = `HNSCall ${method} ${route.template}`;
    let body: unknown;
    if (request.trim() !== '') {
      try {
        body = JSON.parse(request);
      } catch {
        throw hnsError(op, HRESULT.HCN_E_INVALID_JSON, hresultText(HRESULT.HCN_E_INVALID_JSON), { path });
      }
    }
    try {
      const output = await this.v1(op, method, route, body, `${path} ${request}`);
      return JSON.stringify(output === undefined ? { Success: true } : { Success: true, Output: output });
    } catch (err) {
      if (!(err instanceof HnsError)) throw err;
      const text = typeof err.context.hnsError === 'string' ? err.context.hnsError : err.message;
      return JSON.stringify({ Success: false, Error: text, ...(err.hresult !== undefined ? { ErrorCode: err.hresult } : {}) });
    }
  }

  private async v1(op: string, method: Method, route: ParsedPath, body: unknown, input: string): Promise<unknown> {
    const dp = this.dp;
    switch (route.template) {
      case '/globals/version':
        if (method !== 'GET') break;
        await dp.enter(op, 'hns', 0, input);
        return { ...this.version };
      case '/networks/':
        if (method === 'GET') {
          const nets = dp.listNetworks();
          await dp.enter(op, 'hns', nets.length, input);
          return nets.map((n) => this.networkV1(n));
        }
        if (method === 'POST') {
          await dp.enter(op, 'hns', 0, input);
          const v1 = requireObject<HnsNetworkV1>(op, body);
          const created = dp.createNetwork(op, networkV1toV2(v1), v1.ID);
          if (this.managementIPPolls > 0) this.pendingManagementIP.set(created.ID!, this.managementIPPolls);
          // HNS answers before the host vNIC is up: ManagementIP is empty until a later GET (hcsshim polls).
          return networkV2toV1(created, false);
        }
        break;
      case '/networks/{id}': {
        await dp.enter(op, 'hns', 0, input);
        const id = route.id!;
        if (method === 'GET') {
          const net = dp.getNetwork(id);
          if (!net) throw hnsError(op, HRESULT.HCN_E_NETWORK_NOT_FOUND, hresultText(HRESULT.HCN_E_NETWORK_NOT_FOUND), { networkId: id });
          return this.networkV1(net);
        }
        if (method === 'DELETE') {
          dp.deleteNetwork(op, id);
          return undefined;
        }
        break;
      }
      case '/endpoints/':
        if (method === 'GET') {
          const eps = dp.listEndpoints();
          await dp.enter(op, 'hns', eps.length, input);
          return eps.map((e) => this.endpointV1(e));
        }
        if (method === 'POST') {
          await dp.enter(op, 'hns', 0, input);
          const v1 = requireObject<HnsEndpointV1>(op, body);
          const net = v1.VirtualNetwork
            ? dp.getNetwork(v1.VirtualNetwork)
            : v1.VirtualNetworkName
              ? dp.getNetworkByName(v1.VirtualNetworkName)
              : undefined;
          if (!net) {
            throw hnsError(op, HRESULT.HCN_E_NETWORK_NOT_FOUND, hresultText(HRESULT.HCN_E_NETWORK_NOT_FOUND), {
              network: v1.VirtualNetwork ?? v1.VirtualNetworkName,
            });
          }
          const prefix = net.Ipams?.flatMap((i) => i.Subnets ?? []).find((s) => v1.IPAddress && contains(s.IpAddressPrefix, v1.IPAddress));
          const pl = prefix ? Number(prefix.IpAddressPrefix.split('/')[1]) : undefined;
          const created = dp.createEndpoint(op, net.ID!, endpointV1toV2(v1, pl), v1.ID);
          return this.endpointV1(created);
        }
        break;
      case '/endpoints/{id}': {
        await dp.enter(op, 'hns', 0, input);
        const id = route.id!;
        if (method === 'GET') {
          const ep = dp.getEndpoint(id);
          if (!ep) throw hnsError(op, HRESULT.HCN_E_ENDPOINT_NOT_FOUND, hresultText(HRESULT.HCN_E_ENDPOINT_NOT_FOUND), { endpointId: id });
          return this.endpointV1(ep);
        }
        if (method === 'DELETE') {
          dp.deleteEndpoint(op, id);
          return undefined;
        }
        break;
      }
      case '/endpoints/{id}/attach': {
        if (method !== 'POST') break;
        await dp.enter(op, 'hns', 0, input);
        const req = requireObject<{ SystemType?: string }>(op, body);
        if (req.SystemType !== 'Host') {
          throw hnsError(op, HRESULT.E_INVALIDARG, 'The parameter is incorrect. (only SystemType Host is modelled)', { endpointId: route.id });
        }
        dp.attachEndpointToHost(op, route.id!);
        return undefined;
      }
    }
    await dp.enter(op, 'hns', 0, input);
    throw hnsError(op, HRESULT.E_INVALIDARG, `The parameter is incorrect. (${method} ${route.template} is not an HNS v1 call)`);
  }

  private networkV1(net: HcnNetwork): HnsNetworkV1 {
    const pending = this.pendingManagementIP.get(net.ID!);
    if (pending !== undefined) {
      if (pending <= 1) this.pendingManagementIP.delete(net.ID!);
      else this.pendingManagementIP.set(net.ID!, pending - 1);
      return networkV2toV1(net, false);
    }
    return networkV2toV1(net, true);
  }

  private endpointV1(ep: HcnEndpoint): HnsEndpointV1 {
    const net = ep.HostComputeNetwork ? this.dp.getNetwork(ep.HostComputeNetwork) : undefined;
    return endpointV2toV1(ep, net, this.dp.isAttachedToHost(ep.ID!));
  }

  // ================================================================ v2

  /** Run a v2 call; a failure surfaces as Windows does (negative HRESULT + ErrorRecord JSON) and is mapped by errors.ts. */
  private async v2<T>(op: string, fn: () => T | Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof HnsError)) throw err;
      const text = typeof err.context.hnsError === 'string' ? err.context.hnsError : err.message;
      const errorRecord = JSON.stringify({ Success: false, Error: text, ErrorCode: err.hresult ?? HRESULT.E_FAIL });
      const rec = parseErrorRecord(errorRecord);
      const { op: _op, hresult: _hr, hnsError: _text, ...context } = err.context;
      throw hnsError(op, rec?.hresult ?? err.hresult, rec?.error, context as ErrorContext);
    }
  }

  private parseJson(op: string, json: string, emptyOk: boolean): Record<string, unknown> {
    if (emptyOk && json.trim() === '') return {};
    try {
      const v: unknown = JSON.parse(json);
      if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
    } catch {
      // fall through
    }
    throw hnsError(op, HRESULT.HCN_E_INVALID_JSON, hresultText(HRESULT.HCN_E_INVALID_JSON));
  }

  private filterOf(op: string, query: string): Record<string, unknown> {
    const q = this.parseJson(op, query, true);
    if (q.Filter === undefined || q.Filter === '') return {};
    if (typeof q.Filter !== 'string') throw hnsError(op, HRESULT.HCN_E_INVALID_JSON, 'Filter must be a JSON string.');
    return this.parseJson(op, q.Filter, true);
  }

  private handle(kind: 'network' | 'endpoint', id: string): HcnHandle {
    const h: HcnHandle = { kind, id: id.toUpperCase() };
    this.open.add(h);
    this.dp.openHandles++;
    return h;
  }

  private checkHandle(op: string, h: HcnHandle, kind: 'network' | 'endpoint'): void {
    if (!this.open.has(h) || h.kind !== kind) throw hnsError(op, HRESULT.E_HANDLE, hresultText(HRESULT.E_HANDLE));
  }

  private closeHandle(op: string, h: HcnHandle, kind: 'network' | 'endpoint'): void {
    this.checkHandle(op, h, kind);
    this.open.delete(h);
    this.dp.openHandles--;
  }

  enumerateNetworks(query: string): Promise<string> {
    const op = 'HcnEnumerateNetworks';
    return this.v2(op, async () => {
      const filter = this.filterOf(op, query);
      const ids = this.dp
        .listNetworks()
        .filter((n) => filterMatches(n as unknown as Record<string, unknown>, filter, {}))
        .map((n) => n.ID!);
      await this.dp.enter(op, 'hns', ids.length, query);
      return JSON.stringify(ids);
    });
  }

  createNetwork(id: string, settings: string): Promise<HcnHandle> {
    const op = 'HcnCreateNetwork';
    return this.v2(op, async () => {
      const body = this.parseJson(op, settings, false) as unknown as HcnNetwork;
      await this.dp.enter(op, 'hns', 0, `${id} ${settings}`);
      const net = this.dp.createNetwork(op, body, id);
      return this.handle('network', net.ID!);
    });
  }

  openNetwork(id: string): Promise<HcnHandle> {
    const op = 'HcnOpenNetwork';
    return this.v2(op, async () => {
      await this.dp.enter(op, 'hns', 0, id);
      if (!this.dp.getNetwork(id)) throw hnsError(op, HRESULT.HCN_E_NETWORK_NOT_FOUND, hresultText(HRESULT.HCN_E_NETWORK_NOT_FOUND), { networkId: id });
      return this.handle('network', id);
    });
  }

  modifyNetwork(network: HcnHandle, settings: string): Promise<void> {
    const op = 'HcnModifyNetwork';
    return this.v2(op, async () => {
      this.checkHandle(op, network, 'network');
      const req = this.parseJson(op, settings, false);
      const policies = (req.Settings as { Policies?: unknown } | undefined)?.Policies;
      if (req.ResourceType !== 'Policy' || !Array.isArray(policies)) {
        throw hnsError(op, HRESULT.E_INVALIDARG, 'The parameter is incorrect. (expected {"ResourceType":"Policy","RequestType":..,"Settings":{"Policies":[..]}})', {
          networkId: network.id,
        });
      }
      await this.dp.enter(op, 'hns', policies.length, `${network.id} ${settings}`);
      this.dp.modifyNetworkPolicies(op, network.id, String(req.RequestType), policies as HcnPolicy[]);
    });
  }

  queryNetworkProperties(network: HcnHandle, query: string): Promise<string> {
    const op = 'HcnQueryNetworkProperties';
    return this.v2(op, async () => {
      this.checkHandle(op, network, 'network');
      this.parseJson(op, query, true);
      await this.dp.enter(op, 'hns', 0, `${network.id} ${query}`);
      const net = this.dp.getNetwork(network.id);
      if (!net) throw hnsError(op, HRESULT.HCN_E_NETWORK_NOT_FOUND, hresultText(HRESULT.HCN_E_NETWORK_NOT_FOUND), { networkId: network.id });
      return JSON.stringify(net);
    });
  }

  deleteNetwork(id: string): Promise<void> {
    const op = 'HcnDeleteNetwork';
    return this.v2(op, async () => {
      await this.dp.enter(op, 'hns', 0, id);
      this.dp.deleteNetwork(op, id);
    });
  }

  closeNetwork(network: HcnHandle): Promise<void> {
    const op = 'HcnCloseNetwork';
    return this.v2(op, async () => {
      this.closeHandle(op, network, 'network');
      await this.dp.enter(op, 'hns', 0, network.id);
    });
  }

  enumerateEndpoints(query: string): Promise<string> {
    const op = 'HcnEnumerateEndpoints';
    return this.v2(op, async () => {
      const filter = this.filterOf(op, query);
      const ids = this.dp
        .listEndpoints()
        .filter((e) => filterMatches(e as unknown as Record<string, unknown>, filter, { VirtualNetwork: 'HostComputeNetwork' }))
        .map((e) => e.ID!);
      await this.dp.enter(op, 'hns', ids.length, query);
      return JSON.stringify(ids);
    });
  }

  createEndpoint(network: HcnHandle, id: string, settings: string): Promise<HcnHandle> {
    const op = 'HcnCreateEndpoint';
    return this.v2(op, async () => {
      this.checkHandle(op, network, 'network');
      const body = this.parseJson(op, settings, false) as unknown as HcnEndpoint;
      await this.dp.enter(op, 'hns', 0, `${network.id} ${id} ${settings}`);
      const ep = this.dp.createEndpoint(op, network.id, body, id);
      return this.handle('endpoint', ep.ID!);
    });
  }

  openEndpoint(id: string): Promise<HcnHandle> {
    const op = 'HcnOpenEndpoint';
    return this.v2(op, async () => {
      await this.dp.enter(op, 'hns', 0, id);
      if (!this.dp.getEndpoint(id)) throw hnsError(op, HRESULT.HCN_E_ENDPOINT_NOT_FOUND, hresultText(HRESULT.HCN_E_ENDPOINT_NOT_FOUND), { endpointId: id });
      return this.handle('endpoint', id);
    });
  }

  modifyEndpoint(endpoint: HcnHandle, settings: string): Promise<void> {
    const op = 'HcnModifyEndpoint';
    return this.v2(op, async () => {
      this.checkHandle(op, endpoint, 'endpoint');
      this.parseJson(op, settings, false);
      await this.dp.enter(op, 'hns', 0, `${endpoint.id} ${settings}`);
      throw hnsError(op, HRESULT.E_INVALIDARG, 'The parameter is incorrect. (endpoint modification is not modelled by the simulator)', {
        endpointId: endpoint.id,
      });
    });
  }

  queryEndpointProperties(endpoint: HcnHandle, query: string): Promise<string> {
    const op = 'HcnQueryEndpointProperties';
    return this.v2(op, async () => {
      this.checkHandle(op, endpoint, 'endpoint');
      this.parseJson(op, query, true);
      await this.dp.enter(op, 'hns', 0, `${endpoint.id} ${query}`);
      const ep = this.dp.getEndpoint(endpoint.id);
      if (!ep) throw hnsError(op, HRESULT.HCN_E_ENDPOINT_NOT_FOUND, hresultText(HRESULT.HCN_E_ENDPOINT_NOT_FOUND), { endpointId: endpoint.id });
      return JSON.stringify(ep);
    });
  }

  deleteEndpoint(id: string): Promise<void> {
    const op = 'HcnDeleteEndpoint';
    return this.v2(op, async () => {
      await this.dp.enter(op, 'hns', 0, id);
      this.dp.deleteEndpoint(op, id);
    });
  }

  closeEndpoint(endpoint: HcnHandle): Promise<void> {
    const op = 'HcnCloseEndpoint';
    return this.v2(op, async () => {
      this.closeHandle(op, endpoint, 'endpoint');
      await this.dp.enter(op, 'hns', 0, endpoint.id);
    });
  }
}

interface ParsedPath {
  template: string;
  id?: string;
}

/** `/networks/ABC` -> `{template: '/networks/{id}', id: 'ABC'}` (query strings and case of the path ignored). */
function parsePath(_method: Method, raw: string): ParsedPath {
  const p = raw.split('?')[0]!.replace(/\/+$/, '');
  const parts = p.split('/').filter(Boolean);
  const [head, id, tail] = parts;
  const coll = head?.toLowerCase();
  if (coll === 'globals' && id?.toLowerCase() === 'version' && parts.length === 2) return { template: '/globals/version' };
  if ((coll === 'networks' || coll === 'endpoints') && parts.length === 1) return { template: `/${coll}/` };
  if ((coll === 'networks' || coll === 'endpoints') && parts.length === 2) return { template: `/${coll}/{id}`, id };
  if (coll === 'endpoints' && parts.length === 3 && tail?.toLowerCase() === 'attach') return { template: '/endpoints/{id}/attach', id };
  return { template: raw };
}

function requireObject<T>(op: string, body: unknown): T {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw hnsError(op, HRESULT.E_INVALIDARG, 'The parameter is incorrect. (a JSON object body is required)');
  }
  return body as T;
}

// HnsTransport over the SimulatedDataplane: an in-memory HNS answering the raw JSON calls as
// computenetwork.dll!Hcn* (v2) does, with handles, query filters and ErrorRecords; HNSCall (v1) is
// ./hns-v1.ts. Mirrors the call shapes hcsshim uses in hcn/hcnnetwork.go, hcnendpoint.go, hcnloadbalancer.go
// (HcnEnumerate*, HcnOpen*, HcnQuery*Properties, HcnModifyNetwork) and hcn/hcnerrors.go (checkForErrors).
// The load-balancer calls that write (create, modify, delete) are kube-proxy's and are not part of
// HnsTransport: the Windows tier's server (test/windows/sim-server.ts) serves them to the stand-in DLL.
import { HnsError } from '../basics/errors.js';
import type { SimulatedDataplane } from './model.js';
import { jsonEqual } from './state.js';
import { HRESULT, hnsError, hresultText, parseErrorRecord } from '../hns/errors.js';
import type { HcnEndpoint, HcnNetwork, HcnPolicy, HnsVersion } from '../hns/schema.js';
import { loadBalancerNotFound } from './load-balancers.js';
import { SimulatedHnsV1 } from './hns-v1.js';
import { refuseIPv6Network, refuseVxlanPort } from './refusals.js';
import { NEWEST_HNS_VERSION } from './state.js';
import type { HcnHandle, HnsTransport } from '../hns/transport.js';

export interface SimulatedHnsOptions {
  /**
   * The HNS version (what `GET /globals/version` reports and what the calls are judged by) when the state
   * file names none (`hnsVersion`, docs/simulator.md). Default NEWEST_HNS_VERSION, 15.4 (Windows Server 2025).
   */
  version?: HnsVersion;
  /** GETs of a new L2Bridge/Overlay network that still show an empty ManagementIP (the vNIC coming up). Default 0. */
  managementIPPolls?: number;
}

/** v2 query filter keys that hold GUIDs (compared case-insensitively). */
const GUID_KEYS = new Set(['ID', 'HostComputeNetwork', 'VirtualNetwork', 'HostComputeNamespace']);

export function filterMatches(obj: Record<string, unknown>, filter: Record<string, unknown>, aliases: Record<string, string>): boolean {
  return Object.entries(filter).every(([key, want]) => {
    const have = obj[aliases[key] ?? key];
    if (typeof want === 'string' && typeof have === 'string') {
      return GUID_KEYS.has(key) ? want.toUpperCase() === have.toUpperCase() : want === have;
    }
    return jsonEqual(have, want);
  });
}

/** An Hcn* call's JSON argument as HNS takes it: an object (or, where `emptyOk`, an empty string), else HCN_E_INVALID_JSON. */
export function parseHcnJson(op: string, json: string, emptyOk: boolean): Record<string, unknown> {
  if (emptyOk && json.trim() === '') return {};
  try {
    const v: unknown = JSON.parse(json);
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw hnsError(op, HRESULT.HCN_E_INVALID_JSON, hresultText(HRESULT.HCN_E_INVALID_JSON));
}

export class SimulatedHnsTransport implements HnsTransport {
  private readonly v1: SimulatedHnsV1;
  private readonly open = new Set<HcnHandle>();
  private readonly defaultVersion: HnsVersion;

  constructor(
    private readonly dp: SimulatedDataplane,
    opts: SimulatedHnsOptions = {},
  ) {
    this.defaultVersion = opts.version ?? NEWEST_HNS_VERSION;
    this.v1 = new SimulatedHnsV1(dp, { version: () => this.version(), managementIPPolls: opts.managementIPPolls ?? 0 });
  }

  /** The node's HNS version: the state file's `hnsVersion`, else the option's, else the newest. */
  private version(): HnsVersion {
    return this.dp.hnsVersion() ?? this.defaultVersion;
  }

  hnsCall(method: 'GET' | 'POST' | 'DELETE', path: string, request: string): Promise<string> {
    return this.v1.call(method, path, request);
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
      throw hnsError(op, rec?.hresult ?? err.hresult, rec?.error, context);
    }
  }

  private filterOf(op: string, query: string): Record<string, unknown> {
    const q = parseHcnJson(op, query, true);
    if (q.Filter === undefined || q.Filter === '') return {};
    if (typeof q.Filter !== 'string') throw hnsError(op, HRESULT.HCN_E_INVALID_JSON, 'Filter must be a JSON string.');
    return parseHcnJson(op, q.Filter, true);
  }

  private handle(kind: HcnHandle['kind'], id: string): HcnHandle {
    const h: HcnHandle = { kind, id: id.toUpperCase() };
    this.open.add(h);
    this.dp.openHandles++;
    return h;
  }

  private checkHandle(op: string, h: HcnHandle, kind: HcnHandle['kind']): void {
    if (!this.open.has(h) || h.kind !== kind) throw hnsError(op, HRESULT.E_HANDLE, hresultText(HRESULT.E_HANDLE));
  }

  private closeHandle(op: string, h: HcnHandle, kind: HcnHandle['kind']): void {
    this.checkHandle(op, h, kind);
    this.open.delete(h);
    this.dp.openHandles--;
  }

  enumerateNetworks(query: string): Promise<string> {
    const op = 'HcnEnumerateNetworks';
    return this.v2(op, async () => {
      const filter = this.filterOf(op, query);
      const ids = this.dp.networkIds((n) => filterMatches(n as unknown as Record<string, unknown>, filter, {}), 'Policies' in filter);
      await this.dp.enter(op, 'hns', ids.length, query);
      return JSON.stringify(ids);
    });
  }

  createNetwork(id: string, settings: string): Promise<HcnHandle> {
    const op = 'HcnCreateNetwork';
    return this.v2(op, async () => {
      const body = parseHcnJson(op, settings, false) as unknown as HcnNetwork;
      await this.dp.enter(op, 'hns', 0, `${id} ${settings}`);
      const ctx = { network: body.Name };
      const refused = refuseIPv6Network(op, body, this.version(), ctx) ?? refuseVxlanPort(op, body, this.version(), ctx);
      if (refused) throw refused;
      const net = this.dp.createNetwork(op, body, id);
      return this.handle('network', net.ID!);
    });
  }

  openNetwork(id: string): Promise<HcnHandle> {
    const op = 'HcnOpenNetwork';
    return this.v2(op, async () => {
      await this.dp.enter(op, 'hns', 0, id);
      if (!this.dp.hasNetwork(id)) throw hnsError(op, HRESULT.HCN_E_NETWORK_NOT_FOUND, hresultText(HRESULT.HCN_E_NETWORK_NOT_FOUND), { networkId: id });
      return this.handle('network', id);
    });
  }

  modifyNetwork(network: HcnHandle, settings: string): Promise<void> {
    const op = 'HcnModifyNetwork';
    return this.v2(op, async () => {
      this.checkHandle(op, network, 'network');
      const req = parseHcnJson(op, settings, false);
      const policies = (req.Settings as { Policies?: unknown } | undefined)?.Policies;
      if (req.ResourceType !== 'Policy' || !Array.isArray(policies)) {
        throw hnsError(op, HRESULT.E_INVALIDARG, 'The parameter is incorrect. (expected {"ResourceType":"Policy","RequestType":..,"Settings":{"Policies":[..]}})', {
          networkId: network.id,
        });
      }
      await this.dp.enter(op, 'hns', policies.length, `${network.id} ${settings}`);
      this.dp.modifyNetworkPolicies(op, network.id, String(req.RequestType), policies as HcnPolicy[], this.version());
    });
  }

  queryNetworkProperties(network: HcnHandle, query: string): Promise<string> {
    const op = 'HcnQueryNetworkProperties';
    return this.v2(op, async () => {
      this.checkHandle(op, network, 'network');
      parseHcnJson(op, query, true);
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
      const ids = this.dp.endpointIds((e) => filterMatches(e as unknown as Record<string, unknown>, filter, { VirtualNetwork: 'HostComputeNetwork' }), 'Policies' in filter);
      await this.dp.enter(op, 'hns', ids.length, query);
      return JSON.stringify(ids);
    });
  }

  createEndpoint(network: HcnHandle, id: string, settings: string): Promise<HcnHandle> {
    const op = 'HcnCreateEndpoint';
    return this.v2(op, async () => {
      this.checkHandle(op, network, 'network');
      const body = parseHcnJson(op, settings, false) as unknown as HcnEndpoint;
      await this.dp.enter(op, 'hns', 0, `${network.id} ${id} ${settings}`);
      const ep = this.dp.createEndpoint(op, network.id, body, id, this.version());
      return this.handle('endpoint', ep.ID!);
    });
  }

  openEndpoint(id: string): Promise<HcnHandle> {
    const op = 'HcnOpenEndpoint';
    return this.v2(op, async () => {
      await this.dp.enter(op, 'hns', 0, id);
      if (!this.dp.hasEndpoint(id)) throw hnsError(op, HRESULT.HCN_E_ENDPOINT_NOT_FOUND, hresultText(HRESULT.HCN_E_ENDPOINT_NOT_FOUND), { endpointId: id });
      return this.handle('endpoint', id);
    });
  }

  /** HcnModifyEndpoint: ResourceType Policy with ACL rules (./acl-objects.ts); any other modification is not modelled (E_INVALIDARG). */
  modifyEndpoint(endpoint: HcnHandle, settings: string): Promise<void> {
    const op = 'HcnModifyEndpoint';
    return this.v2(op, async () => {
      this.checkHandle(op, endpoint, 'endpoint');
      const req = parseHcnJson(op, settings, false);
      const policies = (req.Settings as { Policies?: unknown } | undefined)?.Policies;
      await this.dp.enter(op, 'hns', Array.isArray(policies) ? policies.length : 0, `${endpoint.id} ${settings}`);
      if (req.ResourceType !== 'Policy' || !Array.isArray(policies)) {
        throw hnsError(
          op,
          HRESULT.E_INVALIDARG,
          'The parameter is incorrect. (only {"ResourceType":"Policy","RequestType":..,"Settings":{"Policies":[..]}} is modelled by the simulator)',
          {
            endpointId: endpoint.id,
          },
        );
      }
      this.dp.modifyEndpointPolicies(op, endpoint.id, String(req.RequestType), policies as HcnPolicy[], this.version());
    });
  }

  queryEndpointProperties(endpoint: HcnHandle, query: string): Promise<string> {
    const op = 'HcnQueryEndpointProperties';
    return this.v2(op, async () => {
      this.checkHandle(op, endpoint, 'endpoint');
      parseHcnJson(op, query, true);
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

  // ================================================================ v2 load balancers (./load-balancers.ts)

  enumerateLoadBalancers(query: string): Promise<string> {
    const op = 'HcnEnumerateLoadBalancers';
    return this.v2(op, async () => {
      const filter = this.filterOf(op, query);
      const ids = this.dp.loadBalancerIds((lb) => filterMatches(lb as Record<string, unknown>, filter, {}));
      await this.dp.enter(op, 'hns', ids.length, query);
      return JSON.stringify(ids);
    });
  }

  /** HcnCreateLoadBalancer (kube-proxy's; the zero GUID lets HNS choose the ID). */
  createLoadBalancer(id: string, settings: string): Promise<HcnHandle> {
    const op = 'HcnCreateLoadBalancer';
    return this.v2(op, async () => {
      const body = parseHcnJson(op, settings, false);
      await this.dp.enter(op, 'hns', 0, `${id} ${settings}`);
      return this.handle('loadBalancer', this.dp.createLoadBalancer(op, body, id).ID!);
    });
  }

  openLoadBalancer(id: string): Promise<HcnHandle> {
    const op = 'HcnOpenLoadBalancer';
    return this.v2(op, async () => {
      await this.dp.enter(op, 'hns', 0, id);
      if (!this.dp.getLoadBalancer(id)) throw loadBalancerNotFound(op, id);
      return this.handle('loadBalancer', id);
    });
  }

  /** HcnModifyLoadBalancer (kube-proxy's updateLoadBalancer): the whole HostComputeLoadBalancer, from HNS 15.4. */
  modifyLoadBalancer(loadBalancer: HcnHandle, settings: string): Promise<void> {
    const op = 'HcnModifyLoadBalancer';
    return this.v2(op, async () => {
      this.checkHandle(op, loadBalancer, 'loadBalancer');
      const body = parseHcnJson(op, settings, false);
      await this.dp.enter(op, 'hns', 0, `${loadBalancer.id} ${settings}`);
      this.dp.modifyLoadBalancer(op, loadBalancer.id, body, this.version());
    });
  }

  queryLoadBalancerProperties(loadBalancer: HcnHandle, query: string): Promise<string> {
    const op = 'HcnQueryLoadBalancerProperties';
    return this.v2(op, async () => {
      this.checkHandle(op, loadBalancer, 'loadBalancer');
      parseHcnJson(op, query, true);
      await this.dp.enter(op, 'hns', 0, `${loadBalancer.id} ${query}`);
      const lb = this.dp.getLoadBalancer(loadBalancer.id);
      if (!lb) throw loadBalancerNotFound(op, loadBalancer.id);
      return JSON.stringify(lb);
    });
  }

  /** HcnDeleteLoadBalancer (kube-proxy's). */
  deleteLoadBalancer(id: string): Promise<void> {
    const op = 'HcnDeleteLoadBalancer';
    return this.v2(op, async () => {
      await this.dp.enter(op, 'hns', 0, id);
      this.dp.deleteLoadBalancer(op, id);
    });
  }

  closeLoadBalancer(loadBalancer: HcnHandle): Promise<void> {
    const op = 'HcnCloseLoadBalancer';
    return this.v2(op, async () => {
      this.closeHandle(op, loadBalancer, 'loadBalancer');
      await this.dp.enter(op, 'hns', 0, loadBalancer.id);
    });
  }
}

// The simulated HNS v1 API: vmcompute.dll!HNSCall over the SimulatedDataplane, answering the paths
// hcsshim internal/hns calls (hnsfuncs.go hnsCall; hnsnetwork.go, hnsendpoint.go, hnsglobals.go, the list
// of hnspolicylist.go) with the Success/Output/Error envelope HNS returns. Objects are rendered from the stored v2 objects
// (src/hns/v1-view.ts), as HNS does; a missing network is ERROR_NOT_FOUND here (v1Answer). Used by
// SimulatedHnsTransport (./hns.ts).
import { HnsError } from '../basics/errors.js';
import type { SimulatedDataplane } from './model.js';
import { contains } from '../basics/ip4.js';
import { refuseIPv6Network } from './refusals.js';
import { HRESULT, hnsError, hresultText } from '../hns/errors.js';
import type { HcnEndpoint, HcnNetwork, HnsEndpointV1, HnsNetworkV1, HnsVersion } from '../hns/schema.js';
import { endpointV1toV2, endpointV2toV1, networkV1toV2, networkV2toV1 } from '../hns/v1-view.js';

type Method = 'GET' | 'POST' | 'DELETE';

export interface SimulatedHnsV1Options {
  /** What `GET /globals/version` reports (asked at each call: the state file may name it). */
  version: () => HnsVersion;
  /** GETs of a new network that still show an empty ManagementIP (the vNIC coming up). */
  managementIPPolls: number;
}

export class SimulatedHnsV1 {
  private readonly pendingManagementIP = new Map<string, number>();

  constructor(
    private readonly dp: SimulatedDataplane,
    private readonly opts: SimulatedHnsV1Options,
  ) {}

  async call(method: Method, path: string, request: string): Promise<string> {
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
      const [hresult, text] = v1Answer(err);
      return JSON.stringify({ Success: false, Error: text, ...(hresult !== undefined ? { ErrorCode: hresult } : {}) });
    }
  }

  private async v1(op: string, method: Method, route: ParsedPath, body: unknown, input: string): Promise<unknown> {
    const dp = this.dp;
    switch (route.template) {
      case '/globals/version':
        if (method !== 'GET') break;
        await dp.enter(op, 'hns', 0, input);
        return { ...this.opts.version() };
      case '/networks/':
        if (method === 'GET') {
          const nets = dp.listNetworks();
          await dp.enter(op, 'hns', nets.length, input);
          return nets.map((n) => this.networkV1(n));
        }
        if (method === 'POST') {
          await dp.enter(op, 'hns', 0, input);
          const v1 = requireObject<HnsNetworkV1>(op, body);
          const v2 = networkV1toV2(v1);
          const refused = refuseIPv6Network(op, v2, this.opts.version(), { network: v1.Name });
          if (refused) throw refused;
          const created = dp.createNetwork(op, v2, v1.ID);
          if (this.opts.managementIPPolls > 0) this.pendingManagementIP.set(created.ID!, this.opts.managementIPPolls);
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
          const net = v1.VirtualNetwork || v1.VirtualNetworkName ? dp.getNetworkHead({ id: v1.VirtualNetwork || undefined, name: v1.VirtualNetworkName }) : undefined;
          if (!net) {
            throw hnsError(op, HRESULT.HCN_E_NETWORK_NOT_FOUND, hresultText(HRESULT.HCN_E_NETWORK_NOT_FOUND), {
              network: v1.VirtualNetwork ?? v1.VirtualNetworkName,
            });
          }
          const prefix = net.Ipams?.flatMap((i) => i.Subnets ?? []).find((s) => v1.IPAddress && contains(s.IpAddressPrefix, v1.IPAddress));
          const pl = prefix ? Number(prefix.IpAddressPrefix.split('/')[1]) : undefined;
          const created = dp.createEndpoint(op, net.ID!, endpointV1toV2(v1, pl), v1.ID, this.opts.version());
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
      case '/policylists/':
        // hcsshim internal/hns/hnspolicylist.go HNSListPolicyListRequest: the node's v1 policy lists (ELB
        // policies of v1 load balancers). Nothing on the simulated node makes one (kube-proxy's kernelspace
        // mode writes HCN v2 load balancers, ./load-balancers.ts; whether HNS would also list those here is
        // not published), so the honest answer is the empty list. kube-proxy winkernel asks it as its
        // kernelspace gate and again to clean up old lists at start (test/fixtures/kube-proxy-traces).
        if (method !== 'GET') break;
        await dp.enter(op, 'hns', 0, input);
        return [];
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
    const net = ep.HostComputeNetwork ? this.dp.getNetworkHead({ id: ep.HostComputeNetwork }) : undefined;
    return endpointV2toV1(ep, net, this.dp.isAttachedToHost(ep.ID!));
  }
}

/**
 * The v1 envelope's code and text for a failure. HNSCall answers a call on a missing network with
 * ERROR_NOT_FOUND 0x80070490 "Element not found." where HCN says HCN_E_NETWORK_NOT_FOUND (observed:
 * Azure/aks-engine#168 "Failed to create endpoint: hnsCall failed in Win32: Element not found. (0x490)"
 * on a node whose network was gone, #853 "HNS failed with error : Element not found").
 */
function v1Answer(err: HnsError): [number | undefined, string] {
  if (err.hresult === HRESULT.HCN_E_NETWORK_NOT_FOUND) return [HRESULT.E_NOT_FOUND, hresultText(HRESULT.E_NOT_FOUND)!];
  return [err.hresult, typeof err.context.hnsError === 'string' ? err.context.hnsError : err.message];
}

interface ParsedPath {
  template: string;
  id?: string;
}

/** `/networks/ABC` -> `{template: '/networks/{id}', id: 'ABC'}` (query strings and case of the path ignored). */
function parsePath(_method: Method, raw: string): ParsedPath {
  const p = raw.split('?')[0].replace(/\/+$/, '');
  const parts = p.split('/').filter(Boolean);
  const [head, id, tail] = parts;
  const coll = head?.toLowerCase();
  if (coll === 'globals' && id?.toLowerCase() === 'version' && parts.length === 2) return { template: '/globals/version' };
  if (coll === 'policylists' && parts.length === 1) return { template: '/policylists/' };
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

// The raw HNS boundary: JSON strings in and out, exactly as the Windows DLLs move them.
// v1 = vmcompute.dll!HNSCall; v2 = computenetwork.dll!Hcn*: the entry points hcsshim declares in
// internal/hns/hns.go (`_hnsCall`) and hcn/hcn.go (`hcnCreateNetwork` ...). Implementations: win32
// (./win32-transport.ts, on the DLLs through ../win32/) and simulated (src/simulator/hns.ts, in-memory HNS); ./timed.ts
// decorates either with the per-call timeout and measures each call (`hnsCallOp` below names an HNSCall).
// Everything above this interface runs unchanged on Linux.
//
// Contract for implementations: a negative HRESULT, a non-empty ErrorRecord (v2) or a `Success:false`
// envelope (v1) is thrown as an HnsError built by `hnsError()` in ./errors.ts, so both transports map
// HNS's failures to the same codes. Returned strings are the DLL's output, unparsed.

/** Opaque handle to an opened HCN network, endpoint or load balancer (a pointer on Windows). */
export interface HcnHandle {
  readonly kind: 'network' | 'endpoint' | 'loadBalancer';
  readonly id: string;
}

export interface HnsTransport {
  /** HNS v1: `HNSCall(method, path, request, &response)`; returns the response envelope JSON. */
  hnsCall(method: 'GET' | 'POST' | 'DELETE', path: string, request: string): Promise<string>;

  /** `HcnEnumerateNetworks(query)`: JSON array of network GUID strings. */
  enumerateNetworks(query: string): Promise<string>;
  /** `HcnCreateNetwork(id, settings)`; the zero GUID lets HNS choose the ID. */
  createNetwork(id: string, settings: string): Promise<HcnHandle>;
  openNetwork(id: string): Promise<HcnHandle>;
  modifyNetwork(network: HcnHandle, settings: string): Promise<void>;
  queryNetworkProperties(network: HcnHandle, query: string): Promise<string>;
  deleteNetwork(id: string): Promise<void>;
  closeNetwork(network: HcnHandle): Promise<void>;

  enumerateEndpoints(query: string): Promise<string>;
  createEndpoint(network: HcnHandle, id: string, settings: string): Promise<HcnHandle>;
  openEndpoint(id: string): Promise<HcnHandle>;
  modifyEndpoint(endpoint: HcnHandle, settings: string): Promise<void>;
  queryEndpointProperties(endpoint: HcnHandle, query: string): Promise<string>;
  deleteEndpoint(id: string): Promise<void>;
  closeEndpoint(endpoint: HcnHandle): Promise<void>;

  /**
   * kube-proxy's load balancers (hcsshim hcn/hcnloadbalancer.go), read only: the agent and doctor look at
   * them and never create, modify or delete one (kube-proxy owns them), so this seam has no call that could.
   */
  enumerateLoadBalancers(query: string): Promise<string>;
  openLoadBalancer(id: string): Promise<HcnHandle>;
  queryLoadBalancerProperties(loadBalancer: HcnHandle, query: string): Promise<string>;
  closeLoadBalancer(loadBalancer: HcnHandle): Promise<void>;
}

export const ZERO_GUID = '00000000-0000-0000-0000-000000000000';

/** The HNS v1 paths hcsshim calls (internal/hns: hnsglobals.go, hnsnetwork.go, hnsendpoint.go), as templates. */
const V1_PATHS: readonly [RegExp, string][] = [
  [/^\/globals\/version$/, '/globals/version'],
  [/^\/(networks|endpoints)$/, '/$1/'],
  [/^\/(networks|endpoints)\/[^/]+$/, '/$1/{id}'],
  [/^\/endpoints\/[^/]+\/attach$/, '/endpoints/{id}/attach'],
];

/**
 * The name of one HNSCall in /metrics and in the simulated node's call counts: `HNSCall <METHOD> <path>`
 * with IDs as `{id}` (`HNSCall GET /networks/{id}`); a path hcsshim does not call is `HNSCall <METHOD>
 * other`, so the names are a fixed set. Query string, trailing slash and case are ignored, as HNS does.
 */
export function hnsCallOp(method: 'GET' | 'POST' | 'DELETE', path: string): string {
  const p = path.split('?')[0].replace(/\/+$/, '').toLowerCase();
  for (const [re, template] of V1_PATHS) if (re.test(p)) return `HNSCall ${method} ${p.replace(re, template)}`;
  return `HNSCall ${method} other`;
}

// kube-proxy's load balancers on the simulated node: HCN HostComputeLoadBalancer objects (hcsshim
// hcn/hcnloadbalancer.go) in the state file's `loadBalancers`, and the pure changes HcnCreateLoadBalancer,
// HcnModifyLoadBalancer, HcnDeleteLoadBalancer and an HNS restart make to them. kube-proxy (winkernel
// hns.go getLoadBalancer, updateLoadBalancer, deleteLoadBalancer) makes the calls that write them, through
// computenetwork.dll (the Windows test tier's stand-in forwards them to ./hns.ts); the agent and doctor only
// read them (src/hns/transport.ts has no write). The rules, each from its source:
//  * the document is hcsshim's HostComputeLoadBalancer {ID, HostComputeEndpoints, SourceVIP, FrontendVIPs,
//    PortMappings [{Protocol, InternalPort, ExternalPort, DistributionType, Flags}], SchemaVersion, Flags},
//    every field `omitempty`; a field of another JSON type, a port outside uint16 or a number outside
//    uint32 is HCN_E_INVALID_JSON 0x803B001B (modelled: the document does not fit the schema);
//  * the zero GUID lets HNS choose the ID (hcsshim createLoadBalancer passes `guid.GUID{}`), and HNS answers
//    the stored object with its ID and SchemaVersion;
//  * no endpoints: refused (observed, kubernetes#106936 "HNS returns an error while plumbing the LB policy if
//    the endpoints list is empty"; the code is not published: HCN_E_INVALID_ENDPOINT 0x803B000C modelled);
//  * a frontend (a FrontendVIP, or the node's addresses when there is none, with a mapping's Protocol and
//    ExternalPort) another load balancer holds: ERROR_ALREADY_EXISTS 0x800700B7 (observed, kubernetes#139519:
//    "hcnCreateLoadBalancer failed in Win32: Cannot create a file when that file already exists. (0xb7)"
//    when kube-proxy created again a load balancer HNS had restored);
//  * a missing one: ERROR_NOT_FOUND 0x80070490, which hcsshim's IsNotFoundError (hcn/hcnerrors.go) matches;
//  * HcnModifyLoadBalancer takes the whole HostComputeLoadBalancer and replaces the settings, the ID kept
//    (hcsshim HostComputeLoadBalancer.Update -> updateLoadBalancer), from HNS 15.4 (hcn/hcnglobals.go
//    ModifyLoadbalancerVersion); older: ./refusals.ts refuseUnsupported;
//  * an HNS restart does not lose them: "the actual HNS LoadBalancer objects were never deleted. After HNS
//    restarted, the LoadBalancers were restored through the HNS backup/restore (rehydration) mechanism"
//    (kubernetes#139519, fixed in kube-proxy by PR #139503). They are gone while HNS restores them and come
//    back with their IDs: `restartHns` moves them to `rehydratingLoadBalancers`, `rehydrateLoadBalancers`
//    (HNS done restoring) puts them back.
// Not modelled (no source says what HNS does): whether HostComputeEndpoints must name endpoints HNS holds,
// what SourceVIP must be.
import type { ErrorContext } from '../basics/errors.js';
import { HRESULT, hnsError, hresultText } from '../hns/errors.js';
import { MODIFY_LOAD_BALANCER_VERSION } from '../hns/features.js';
import { HCN_SCHEMA_V2, sameId, type HcnLoadBalancer, type HnsVersion } from '../hns/schema.js';
import { ZERO_GUID, type SimIds } from './objects.js';
import { fail, refuseUnsupported } from './refusals.js';
import type { DataplaneState } from './state.js';

type Obj = Record<string, unknown>;

const UINT16 = 0xffff;
const UINT32 = 0xffffffff;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isUint = (v: unknown, max: number): boolean => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= max;
const stringList = (v: unknown): boolean => Array.isArray(v) && v.every((x) => typeof x === 'string');

const LB_FIELDS: Record<string, (v: unknown) => boolean> = {
  ID: (v) => typeof v === 'string',
  HostComputeEndpoints: stringList,
  SourceVIP: (v) => typeof v === 'string',
  FrontendVIPs: stringList,
  PortMappings: (v) => Array.isArray(v),
  SchemaVersion: (v) => isObj(v) && isUint(v.Major, UINT32) && isUint(v.Minor, UINT32),
  Flags: (v) => isUint(v, UINT32),
};
const MAPPING_FIELDS: Record<string, (v: unknown) => boolean> = {
  Protocol: (v) => isUint(v, UINT32),
  InternalPort: (v) => isUint(v, UINT16),
  ExternalPort: (v) => isUint(v, UINT16),
  DistributionType: (v) => isUint(v, UINT32),
  Flags: (v) => isUint(v, UINT32),
};

/**
 * What does not fit hcsshim's HostComputeLoadBalancer in `v` (`at` names where), or undefined. The state
 * file's entries are judged by it too (./state-file.ts).
 */
export function loadBalancerShapeProblem(v: unknown, at = 'the load balancer'): string | undefined {
  if (!isObj(v)) return `${at} must be an object`;
  for (const [k, x] of Object.entries(v)) {
    const check = LB_FIELDS[k];
    if (!check) return `${at} has no field ${JSON.stringify(k)} (hcsshim HostComputeLoadBalancer)`;
    if (!check(x)) return `${at}.${k} ${JSON.stringify(x)} is not what HostComputeLoadBalancer holds there`;
  }
  for (const [i, m] of ((v.PortMappings as unknown[] | undefined) ?? []).entries()) {
    if (!isObj(m)) return `${at}.PortMappings[${i}] must be an object`;
    for (const [k, x] of Object.entries(m)) {
      const check = MAPPING_FIELDS[k];
      if (!check) return `${at}.PortMappings[${i}] has no field ${JSON.stringify(k)} (hcsshim LoadBalancerPortMapping)`;
      if (!check(x)) return `${at}.PortMappings[${i}].${k} ${JSON.stringify(x)} is not a ${k.endsWith('Port') ? 'uint16' : 'uint32'}`;
    }
  }
  return undefined;
}

/** The frontends a load balancer holds: `vip|protocol|externalPort` ('' for the VIP when it names none). */
function frontendsOf(lb: HcnLoadBalancer): string[] {
  const vips = lb.FrontendVIPs?.length ? lb.FrontendVIPs : [''];
  return vips.flatMap((vip) => (lb.PortMappings ?? []).map((m) => `${vip}|${m.Protocol ?? 0}|${m.ExternalPort ?? 0}`));
}

/** A missing load balancer: ERROR_NOT_FOUND (hcsshim IsNotFoundError). */
export const loadBalancerNotFound = (op: string, id: string) => hnsError(op, HRESULT.E_NOT_FOUND, hresultText(HRESULT.E_NOT_FOUND), { loadBalancerId: id });

/** The settings as HNS takes them: the shape checked, no endpoints refused, no frontend another load balancer holds. */
function judge(state: DataplaneState, op: string, settings: Obj, self: string | undefined, ctx: ErrorContext): HcnLoadBalancer {
  const problem = loadBalancerShapeProblem(settings);
  if (problem) throw fail(op, HRESULT.HCN_E_INVALID_JSON, problem, ctx);
  const lb = settings as HcnLoadBalancer;
  if (!lb.HostComputeEndpoints?.length) throw fail(op, HRESULT.HCN_E_INVALID_ENDPOINT, 'a load balancer needs at least one endpoint', ctx);
  const mine = new Set(frontendsOf(lb));
  for (const other of state.loadBalancers ?? []) {
    if (self !== undefined && sameId(other.ID, self)) continue;
    const taken = frontendsOf(other).find((f) => mine.has(f));
    if (taken !== undefined) {
      const [vip, protocol, port] = taken.split('|');
      throw fail(op, HRESULT.E_ALREADY_EXISTS, `load balancer ${other.ID ?? '?'} holds ${vip || 'the node'}:${port} protocol ${protocol}`, { ...ctx, existing: other.ID });
    }
  }
  return lb;
}

export function findLoadBalancer(state: DataplaneState, id: string): HcnLoadBalancer | undefined {
  return state.loadBalancers?.find((lb) => sameId(lb.ID, id));
}

/** HcnCreateLoadBalancer: the zero GUID (or none) lets HNS choose the ID. Returns the stored object. */
export function createLoadBalancer(state: DataplaneState, ids: SimIds, op: string, settings: Obj, id?: string): HcnLoadBalancer {
  const ctx: ErrorContext = { frontendVIPs: Array.isArray(settings.FrontendVIPs) ? settings.FrontendVIPs.join(',') : undefined };
  const lb = structuredClone(judge(state, op, settings, undefined, ctx));
  const useId = id && !ZERO_GUID.test(id) ? id.toUpperCase() : ids.guid();
  if (findLoadBalancer(state, useId)) throw fail(op, HRESULT.E_ALREADY_EXISTS, `a load balancer with ID ${useId} exists`, ctx);
  const stored: HcnLoadBalancer = { ...lb, SchemaVersion: lb.SchemaVersion ?? { ...HCN_SCHEMA_V2 }, ID: useId };
  (state.loadBalancers ??= []).push(stored);
  return structuredClone(stored);
}

/** HcnModifyLoadBalancer (HNS 15.4 and later): the new settings replace the old, the ID is kept. */
export function modifyLoadBalancer(state: DataplaneState, op: string, id: string, settings: Obj, version: HnsVersion): void {
  const ctx: ErrorContext = { loadBalancerId: id };
  const old = refuseUnsupported(op, 'HcnModifyLoadBalancer', MODIFY_LOAD_BALANCER_VERSION, version, ctx);
  if (old) throw old;
  const held = findLoadBalancer(state, id);
  if (!held) throw loadBalancerNotFound(op, id);
  const lb = structuredClone(judge(state, op, settings, held.ID, ctx));
  const stored: HcnLoadBalancer = { ...lb, SchemaVersion: lb.SchemaVersion ?? held.SchemaVersion ?? { ...HCN_SCHEMA_V2 }, ID: held.ID };
  state.loadBalancers = state.loadBalancers!.map((x) => (x === held ? stored : x));
}

/** HcnDeleteLoadBalancer. */
export function deleteLoadBalancer(state: DataplaneState, op: string, id: string): void {
  const held = findLoadBalancer(state, id);
  if (!held) throw loadBalancerNotFound(op, id);
  state.loadBalancers = state.loadBalancers!.filter((x) => x !== held);
}

/** An HNS restart: the load balancers are gone until HNS has restored them (kubernetes#139519). Returns how many. */
export function holdForRehydration(state: DataplaneState): number {
  const held = state.loadBalancers ?? [];
  if (held.length === 0) return 0;
  state.rehydratingLoadBalancers = [...(state.rehydratingLoadBalancers ?? []), ...held];
  state.loadBalancers = [];
  return held.length;
}

/**
 * HNS has restored what it held at the restart (its backup/restore, kubernetes#139519), with their IDs.
 * What HNS does with one kube-proxy created again meanwhile for the same frontend is not published: every
 * held one comes back. Returns how many.
 */
export function rehydrateLoadBalancers(state: DataplaneState): number {
  const pending = state.rehydratingLoadBalancers ?? [];
  delete state.rehydratingLoadBalancers;
  if (pending.length > 0) state.loadBalancers = [...(state.loadBalancers ?? []), ...pending];
  return pending.length;
}

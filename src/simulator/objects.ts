// HNS objects of the simulated node: networks and endpoints in the HCN v2 schema, changed the way HNS
// changes them (hcsshim hcn/hcnnetwork.go, hcnendpoint.go, internal/hns/hnsnetwork.go, hnsendpoint.go
// describe the objects): IDs, the vSwitch bound on the first L2Bridge/Overlay network, ProviderAddress
// and DrMacAddress policies, and HNS's HRESULTs. Pure functions on the state document.
import type { ErrorContext, HnsError } from '../errors.js';
import { HRESULT, hnsError, hresultText } from '../hns/errors.js';
import type { HcnEndpoint, HcnNetwork, HcnPolicy } from '../hns/schema.js';
import { HCN_SCHEMA_V2, policySetting, sameId } from '../hns/schema.js';
import { nthAddress, parseCidr, sizeOf } from '../ip4.js';
import { adapterNotFound, policyNotFound, refuseBatch, refuseEndpointAddress, refuseNetworkPolicy } from './refusals.js';
import { boundAdapterName, ensureVSwitch, physicalAdapterFor, releaseVSwitch } from './host.js';
import { isVSwitchType, vEthernetName, type DataplaneState, type SimAdapter } from './state.js';

/** Where new IDs, MACs and interface indexes come from (the model's random source and counter). */
export interface SimIds {
  guid(): string;
  mac(): string;
  /** A new interface index (Windows does not hand a removed adapter's index to the next one). */
  ifIndex(): number;
}

/** The all-zero GUID: a caller that leaves the ID to HNS (sim-namespaces.ts too). */
export const ZERO_GUID = /^0{8}-0{4}-0{4}-0{4}-0{12}$/;

/**
 * HcnCreateNetwork semantics. `id` undefined or the zero GUID: HNS picks one. Throws HnsError
 * (0x803B0010 duplicate name/ID, 0x80070057 bad settings, 0x803B0006 no such adapter, 0x803B000D bad policy).
 */
export function createNetwork(state: DataplaneState, ids: SimIds, op: string, settings: HcnNetwork, id?: string): HcnNetwork {
  const ctx: ErrorContext = { network: settings?.Name };
  if (typeof settings !== 'object' || settings === null || typeof settings.Name !== 'string' || settings.Name === '' || typeof settings.Type !== 'string') {
    throw hnsError(op, HRESULT.E_INVALIDARG, 'The parameter is incorrect. (Name and Type are required)', ctx);
  }
  if (state.networks.some((n) => n.Name === settings.Name)) {
    throw hnsError(op, HRESULT.HCN_E_NETWORK_ALREADY_EXISTS, hresultText(HRESULT.HCN_E_NETWORK_ALREADY_EXISTS), ctx);
  }
  const useId = id && !ZERO_GUID.test(id) ? id.toUpperCase() : ids.guid();
  if (state.networks.some((n) => sameId(n.ID, useId))) {
    throw hnsError(op, HRESULT.HCN_E_NETWORK_ALREADY_EXISTS, `A network with ID ${useId} already exists.`, ctx);
  }
  const net: HcnNetwork = structuredClone(settings);
  net.ID = useId;
  net.SchemaVersion = net.SchemaVersion ?? { ...HCN_SCHEMA_V2 };
  net.Flags = net.Flags ?? 0;
  net.Policies = [...(net.Policies ?? [])];
  for (const p of net.Policies) {
    if (typeof p !== 'object' || p === null || typeof p.Type !== 'string') {
      throw hnsError(op, HRESULT.E_INVALIDARG, 'The parameter is incorrect. (policy without Type)', ctx);
    }
    const refused = refuseNetworkPolicy(op, p, ctx);
    if (refused) throw refused;
  }
  if (isVSwitchType(net.Type)) {
    const wanted = policySetting(net.Policies, 'NetAdapterName', 'NetworkAdapterName');
    const phys = physicalAdapterFor(state, wanted);
    if (!phys) throw adapterNotFound(op, wanted, ctx);
    if (!wanted) net.Policies.push({ Type: 'NetAdapterName', Settings: { NetworkAdapterName: phys.Name } });
    const vnic = ensureVSwitch(state, phys, () => ids.ifIndex());
    if (!net.Policies.some((p) => p.Type === 'ProviderAddress')) {
      net.Policies.push({ Type: 'ProviderAddress', Settings: { ProviderAddress: vnic.IPAddress } });
    }
    if (net.Type.toLowerCase() === 'overlay' && !net.Policies.some((p) => p.Type === 'DrMacAddress')) {
      net.Policies.push({ Type: 'DrMacAddress', Settings: { Address: ids.mac() } });
    }
  }
  state.networks.push(net);
  return structuredClone(net);
}

/** HcnDeleteNetwork / DELETE /networks/<id>: also removes its endpoints. 0x803B0001 when missing. */
export function deleteNetwork(state: DataplaneState, op: string, id: string): void {
  const net = state.networks.find((n) => sameId(n.ID, id));
  if (!net) throw hnsError(op, HRESULT.HCN_E_NETWORK_NOT_FOUND, hresultText(HRESULT.HCN_E_NETWORK_NOT_FOUND), { networkId: id });
  for (const ep of state.endpoints.filter((e) => sameId(e.HostComputeNetwork, net.ID))) dropEndpoint(state, ep);
  state.networks = state.networks.filter((n) => n !== net);
  if (isVSwitchType(net.Type)) releaseVSwitch(state, boundAdapterName(net));
}

/**
 * HcnModifyNetwork with ResourceType Policy, as the state file's `policyBatches` says (sim-refusals.ts):
 * Add refuses a policy that is already there or repeated (0x803B0012) or malformed (0x803B000D); Remove
 * refuses one that is missing (0x803B0008). `atomic` (default): a refusal is thrown and nothing changes.
 * `partial`: the policies before the refused one are applied and the refusal is returned for the caller
 * to throw once the change is stored. `single`: more than one policy in a request is refused.
 * Policies are matched by a canonical key through an index kept between calls (policyIndex).
 */
export function modifyNetworkPolicies(state: DataplaneState, op: string, id: string, requestType: string, policies: HcnPolicy[]): HnsError | undefined {
  const net = state.networks.find((n) => sameId(n.ID, id));
  const ctx: ErrorContext = { networkId: id };
  if (!net) throw hnsError(op, HRESULT.HCN_E_NETWORK_NOT_FOUND, hresultText(HRESULT.HCN_E_NETWORK_NOT_FOUND), ctx);
  if (!Array.isArray(policies) || policies.some((p) => typeof p !== 'object' || p === null || typeof p.Type !== 'string')) {
    throw hnsError(op, HRESULT.E_INVALIDARG, 'The parameter is incorrect. (Settings.Policies must be [{Type, Settings}])', ctx);
  }
  if (requestType !== 'Add' && requestType !== 'Remove') {
    throw hnsError(op, HRESULT.E_INVALIDARG, `The parameter is incorrect. (RequestType ${requestType} is not modelled)`, ctx);
  }
  const batchRefused = refuseBatch(op, state.policyBatches, policies.length, ctx);
  if (batchRefused) throw batchRefused;
  const current = net.Policies ?? [];
  const held = policyIndex(current);
  let refusal: HnsError | undefined;
  if (requestType === 'Add') {
    const added: HcnPolicy[] = [];
    const adding = new Set<string>();
    for (const p of policies) {
      const k = keyOf(p);
      refusal =
        held.has(k) || adding.has(k)
          ? hnsError(op, HRESULT.HCN_E_POLICY_ALREADY_EXISTS, hresultText(HRESULT.HCN_E_POLICY_ALREADY_EXISTS), { ...ctx, policyType: p.Type })
          : refuseNetworkPolicy(op, p, ctx);
      if (refusal) break;
      adding.add(k);
      added.push(p);
    }
    if (refusal && state.policyBatches !== 'partial') throw refusal;
    for (const k of adding) held.set(k, 1);
    net.Policies = [...current, ...added.map(cloneKeyed)];
  } else {
    const drop = new Map<string, number>();
    for (const p of policies) {
      const k = keyOf(p);
      if ((held.get(k) ?? 0) <= (drop.get(k) ?? 0)) {
        refusal = policyNotFound(op, p, ctx);
        break;
      }
      drop.set(k, (drop.get(k) ?? 0) + 1);
    }
    if (refusal && state.policyBatches !== 'partial') throw refusal;
    for (const [k, n] of drop) {
      const left = (held.get(k) ?? 0) - n;
      if (left > 0) held.set(k, left);
      else held.delete(k);
    }
    net.Policies = current.filter((c) => {
      const k = keyOf(c);
      const n = drop.get(k) ?? 0;
      if (n > 0) drop.set(k, n - 1);
      return n === 0;
    });
  }
  indexes.set(net.Policies, { length: net.Policies.length, last: net.Policies.at(-1), counts: held });
  return refusal;
}

/**
 * The policies of a network by key, kept between calls so that deciding a call costs its own policies'
 * lookups, not a key computed for every policy the network holds (thousands on a large cluster). Storing
 * the outcome is still one plain pass over the held policies (Add copies the array, Remove filters it),
 * without key work: the index keeps counts, not positions. An index is tied to the array
 * it describes and rebuilt when that array was changed in place (a test adding a policy behind the model's
 * back); policy objects are never changed in place.
 */
interface PolicyIndex {
  length: number;
  last: HcnPolicy | undefined;
  counts: Map<string, number>;
}
const indexes = new WeakMap<HcnPolicy[], PolicyIndex>();
const keys = new WeakMap<object, string>();

function policyIndex(policies: HcnPolicy[]): Map<string, number> {
  const ix = indexes.get(policies);
  if (ix && ix.length === policies.length && ix.last === policies.at(-1)) return ix.counts;
  const counts = new Map<string, number>();
  for (const p of policies) counts.set(keyOf(p), (counts.get(keyOf(p)) ?? 0) + 1);
  return counts;
}

function keyOf(p: HcnPolicy): string {
  let k = keys.get(p);
  if (k === undefined) {
    k = policyKey(p);
    keys.set(p, k);
  }
  return k;
}

/** The stored copy of a request's policy, its key carried over. */
function cloneKeyed(p: HcnPolicy): HcnPolicy {
  const c = structuredClone(p);
  keys.set(c, keyOf(p));
  return c;
}

/** A policy's identity for HNS: its JSON with keys sorted and undefined members left out (as jsonEqual). */
function policyKey(p: unknown): string {
  return JSON.stringify(p, (_k, v: unknown) =>
    typeof v === 'object' && v !== null && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v)
            .filter(([, x]) => x !== undefined)
            .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}

/** HcnCreateEndpoint: allocates an IP from the network's first subnet and a MAC when not given. */
export function createEndpoint(state: DataplaneState, ids: SimIds, op: string, networkId: string, settings: HcnEndpoint, id?: string): HcnEndpoint {
  const ctx: ErrorContext = { networkId, endpoint: settings?.Name };
  const net = state.networks.find((n) => sameId(n.ID, networkId));
  if (!net) throw hnsError(op, HRESULT.HCN_E_NETWORK_NOT_FOUND, hresultText(HRESULT.HCN_E_NETWORK_NOT_FOUND), ctx);
  // kube-proxy creates its endpoints without a Name (winkernel hns.go createEndpoint): HNS accepts that.
  if (typeof settings !== 'object' || settings === null || (settings.Name !== undefined && typeof settings.Name !== 'string')) {
    throw hnsError(op, HRESULT.E_INVALIDARG, 'The parameter is incorrect. (Name must be a string)', ctx);
  }
  const useId = id && !ZERO_GUID.test(id) ? id.toUpperCase() : ids.guid();
  // One pass: the ID must be new, and the IPs the network's endpoints hold are what a new one may not take.
  const used = new Set<string>();
  for (const e of state.endpoints) {
    if (sameId(e.ID, useId)) throw hnsError(op, HRESULT.E_INVALIDARG, `An endpoint with ID ${useId} already exists.`, ctx);
    if (sameId(e.HostComputeNetwork, net.ID)) for (const c of e.IpConfigurations ?? []) used.add(c.IpAddress);
  }
  const refused = refuseEndpointAddress(op, net, settings, used, ctx);
  if (refused) throw refused;
  const ep: HcnEndpoint = structuredClone(settings);
  ep.ID = useId;
  ep.HostComputeNetwork = net.ID;
  ep.SchemaVersion = ep.SchemaVersion ?? { ...HCN_SCHEMA_V2 };
  ep.Flags = ep.Flags ?? 0;
  ep.Policies = ep.Policies ?? [];
  ep.MacAddress = ep.MacAddress || ids.mac();
  if (!ep.IpConfigurations?.length) {
    const alloc = allocateIp(net, used);
    if (alloc) ep.IpConfigurations = [alloc];
  }
  state.endpoints.push(ep);
  return structuredClone(ep);
}

function allocateIp(net: HcnNetwork, used: ReadonlySet<string>): { IpAddress: string; PrefixLength: number } | undefined {
  const subnet = net.Ipams?.[0]?.Subnets?.[0]?.IpAddressPrefix;
  const c = subnet ? parseCidr(subnet) : undefined;
  if (!c) return undefined;
  // HNS hands out from .2 (.1 is the gateway), never the broadcast address.
  for (let off = 2; off < sizeOf(c.prefix) - 1; off++) {
    const ip = nthAddress(c, off);
    if (!used.has(ip)) return { IpAddress: ip, PrefixLength: c.prefix };
  }
  return undefined;
}

/** HcnDeleteEndpoint / DELETE /endpoints/<id>. 0x803B0002 when missing. */
export function deleteEndpoint(state: DataplaneState, op: string, id: string): void {
  const ep = state.endpoints.find((e) => sameId(e.ID, id));
  if (!ep) throw hnsError(op, HRESULT.HCN_E_ENDPOINT_NOT_FOUND, hresultText(HRESULT.HCN_E_ENDPOINT_NOT_FOUND), { endpointId: id });
  dropEndpoint(state, ep);
}

function dropEndpoint(state: DataplaneState, ep: HcnEndpoint): void {
  const adapter = hostAdapterOf(state, ep);
  if (adapter) {
    state.adapters = state.adapters.filter((a) => a !== adapter);
    state.routes = state.routes.filter((r) => r.InterfaceIndex !== adapter.InterfaceIndex);
  }
  state.endpoints = state.endpoints.filter((e) => e !== ep);
}

/** The host vNIC of an attached endpoint: `vEthernet (<name>)` (its ID when it has no name). */
const hostVNicName = (ep: HcnEndpoint): string => vEthernetName(ep.Name || ep.ID!);

function hostAdapterOf(state: DataplaneState, ep: HcnEndpoint): SimAdapter | undefined {
  return state.adapters.find((a) => a.Name === hostVNicName(ep));
}

export function isAttachedToHost(state: DataplaneState, id: string): boolean {
  const ep = state.endpoints.find((e) => sameId(e.ID, id));
  return ep !== undefined && hostAdapterOf(state, ep) !== undefined;
}

/** Attach to the host compartment: a new adapter `vEthernet (<name>)` with the endpoint's IP. */
export function attachEndpointToHost(state: DataplaneState, ids: SimIds, op: string, id: string): SimAdapter {
  const ep = state.endpoints.find((e) => sameId(e.ID, id));
  if (!ep) throw hnsError(op, HRESULT.HCN_E_ENDPOINT_NOT_FOUND, hresultText(HRESULT.HCN_E_ENDPOINT_NOT_FOUND), { endpointId: id });
  if (hostAdapterOf(state, ep)) {
    throw hnsError(op, HRESULT.HCN_E_ENDPOINT_ALREADY_ATTACHED, hresultText(HRESULT.HCN_E_ENDPOINT_ALREADY_ATTACHED), { endpointId: id, endpoint: ep.Name });
  }
  const ipc = ep.IpConfigurations?.[0];
  const adapter: SimAdapter = {
    Name: hostVNicName(ep),
    InterfaceIndex: ids.ifIndex(),
    IPAddress: ipc?.IpAddress ?? '',
    PrefixLength: ipc?.PrefixLength ?? 0,
    Mtu: 1500,
    Forwarding: false,
  };
  state.adapters.push(adapter);
  return { ...adapter };
}

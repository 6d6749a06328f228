// HNS objects of the simulated node: networks and endpoints in the HCN v2 schema, changed the way HNS
// changes them (hcsshim hcn/hcnnetwork.go, hcnendpoint.go, internal/hns/hnsnetwork.go, hnsendpoint.go
// describe the objects): IDs, the vSwitch bound on the first L2Bridge/Overlay network, ProviderAddress
// and DrMacAddress policies, and HNS's HRESULTs. Pure functions: creating and deleting a network change
// the state document as a whole; the calls made per item (policies, endpoints) go through its keyed view.
import type { ErrorContext, HnsError } from '../basics/errors.js';
import { HRESULT, hnsError, hresultText } from '../hns/errors.js';
import type { HcnEndpoint, HcnNetwork, HcnPolicy, HnsVersion } from '../hns/schema.js';
import { ACL_POLICY, ENDPOINT_FLAG_REMOTE, HCN_SCHEMA_V2, SET_POLICY, policySetting, sameId } from '../hns/schema.js';
import { modifySetPolicies } from './acl-objects.js';
import { contains, nthAddress, parseCidr, sizeOf } from '../basics/ip4.js';
import { contains6 } from '../basics/ip6.js';
import { allocationSubnet, keepKey, policyKey, type KeyedState } from './keyed.js';
import { adapterNotFound, policyNotFound, refuseAcl, refuseBatch, refuseEndpointAddress, refuseNetworkPolicy } from './refusals.js';
import { boundAdapterName, ensureVSwitch, physicalAdapterFor, releaseVSwitch } from './host.js';
import { isVSwitchType, vEthernetName, type DataplaneState, type SimAdapter } from './state.js';

/** Where new IDs, MACs and interface indexes come from (the model's random source and counter). */
export interface SimIds {
  guid(): string;
  mac(): string;
  /** A new interface index (Windows does not hand a removed adapter's index to the next one). */
  ifIndex(): number;
}

/** The all-zero GUID: a caller that leaves the ID to HNS (./namespaces.ts too). */
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
  const dropped = new Set(state.endpoints.filter((e) => sameId(e.HostComputeNetwork, net.ID)));
  const vnicNames = new Set([...dropped].map(hostVNicName));
  const vnics = new Set(state.adapters.filter((a) => vnicNames.has(a.Name)));
  const gone = new Set([...vnics].map((a) => a.InterfaceIndex));
  state.adapters = state.adapters.filter((a) => !vnics.has(a));
  state.routes = state.routes.filter((r) => !gone.has(r.InterfaceIndex));
  state.endpoints = state.endpoints.filter((e) => !dropped.has(e));
  state.networks = state.networks.filter((n) => n !== net);
  if (isVSwitchType(net.Type)) releaseVSwitch(state, boundAdapterName(net));
}

/**
 * HcnModifyNetwork with ResourceType Policy, as the state file's `policyBatches` says (./refusals.ts):
 * Add refuses a policy that is already there or repeated (0x803B0012) or malformed (0x803B000D); Remove
 * refuses one that is missing (0x803B0008). `atomic` (default): a refusal is thrown and nothing changes.
 * `partial`: the policies before the refused one are applied and the refusal is returned for the caller
 * to throw once the change is stored. `single`: more than one policy in a request is refused.
 * Policies are found by their canonical key (./keyed.ts): a call costs its own policies, not the network's.
 * A request of SetPolicy IP sets only is ./acl-objects.ts modifySetPolicies'; one mixing them with other
 * policies is not modelled (E_INVALIDARG).
 */
export function modifyNetworkPolicies(view: KeyedState, op: string, id: string, requestType: string, policies: HcnPolicy[], version: HnsVersion): HnsError | undefined {
  const net = view.network(id);
  const ctx: ErrorContext = { networkId: id };
  if (!net) throw hnsError(op, HRESULT.HCN_E_NETWORK_NOT_FOUND, hresultText(HRESULT.HCN_E_NETWORK_NOT_FOUND), ctx);
  if (!Array.isArray(policies) || policies.some((p) => typeof p !== 'object' || p === null || typeof p.Type !== 'string')) {
    throw hnsError(op, HRESULT.E_INVALIDARG, 'The parameter is incorrect. (Settings.Policies must be [{Type, Settings}])', ctx);
  }
  let sets = 0;
  for (const p of policies) if (p.Type === SET_POLICY) sets++;
  if (sets > 0 && sets === policies.length) return modifySetPolicies(view, op, net, requestType, policies, version);
  if (sets > 0) throw hnsError(op, HRESULT.E_INVALIDARG, 'The parameter is incorrect. (SetPolicy mixed with other policies in one request is not modelled)', ctx);
  if (requestType !== 'Add' && requestType !== 'Remove') {
    throw hnsError(op, HRESULT.E_INVALIDARG, `The parameter is incorrect. (RequestType ${requestType} is not modelled)`, ctx);
  }
  const batchRefused = refuseBatch(op, view.doc.policyBatches, policies.length, ctx);
  if (batchRefused) throw batchRefused;
  const held = view.policies(net);
  let refusal: HnsError | undefined;
  if (requestType === 'Add') {
    const added: HcnPolicy[] = [];
    // A request's own repeats are looked for only when it has several policies (a node event's has one).
    const adding = policies.length > 1 ? new Set<string>() : undefined;
    for (const p of policies) {
      const k = policyKey(p);
      refusal =
        held.count(k) > 0 || adding?.has(k)
          ? hnsError(op, HRESULT.HCN_E_POLICY_ALREADY_EXISTS, hresultText(HRESULT.HCN_E_POLICY_ALREADY_EXISTS), { ...ctx, policyType: p.Type })
          : refuseNetworkPolicy(op, p, ctx);
      if (refusal) break;
      adding?.add(k);
      added.push(p);
    }
    if (refusal && view.doc.policyBatches !== 'partial') throw refusal;
    for (const p of added) held.add(keepKey(p, structuredClone(p)));
  } else {
    const drop = new Map<string, number>();
    for (const p of policies) {
      const k = policyKey(p);
      if (held.count(k) <= (drop.get(k) ?? 0)) {
        refusal = policyNotFound(op, p, ctx);
        break;
      }
      drop.set(k, (drop.get(k) ?? 0) + 1);
    }
    if (refusal && view.doc.policyBatches !== 'partial') throw refusal;
    // The earliest held copies go first, as a filter over the network's array would take them.
    for (const [k, n] of drop) for (let i = 0; i < n; i++) held.delete(held.first(k)!);
  }
  view.policiesChanged(net);
  return refusal;
}

/**
 * HcnCreateEndpoint: allocates an IP from the network's first subnet and a MAC when not given. ACL rules
 * it is given are judged as HcnModifyEndpoint judges them (./refusals.ts refuseAcl).
 */
export function createEndpoint(view: KeyedState, ids: SimIds, op: string, networkId: string, settings: HcnEndpoint, version: HnsVersion, id?: string): HcnEndpoint {
  const ctx: ErrorContext = { networkId, endpoint: settings?.Name };
  const net = view.network(networkId);
  if (!net) throw hnsError(op, HRESULT.HCN_E_NETWORK_NOT_FOUND, hresultText(HRESULT.HCN_E_NETWORK_NOT_FOUND), ctx);
  // kube-proxy creates its endpoints without a Name (winkernel hns.go createEndpoint): HNS accepts that.
  if (typeof settings !== 'object' || settings === null || (settings.Name !== undefined && typeof settings.Name !== 'string')) {
    throw hnsError(op, HRESULT.E_INVALIDARG, 'The parameter is incorrect. (Name must be a string)', ctx);
  }
  const useId = id && !ZERO_GUID.test(id) ? id.toUpperCase() : ids.guid();
  if (view.endpoint(useId)) throw hnsError(op, HRESULT.E_INVALIDARG, `An endpoint with ID ${useId} already exists.`, ctx);
  // The IPs the network's endpoints hold are what a new one may not take.
  const used = view.ipsOf(net);
  // DuplicateRemoteEndpointIp `accept`: a remote endpoint may share an IP that only remote endpoints of the network hold.
  const remoteDuplicateOk = (ip: string) =>
    view.doc.duplicateRemoteEndpointIp === 'accept' &&
    view.endpoints
      .values()
      .filter((e) => sameId(e.HostComputeNetwork, net.ID) && e.IpConfigurations?.some((c) => c.IpAddress === ip))
      .every((e) => ((e.Flags ?? 0) & ENDPOINT_FLAG_REMOTE) !== 0);
  const refused = refuseEndpointAddress(op, net, settings, used, ctx, remoteDuplicateOk);
  if (refused) throw refused;
  const sets = view.setsOf(net);
  for (const p of Array.isArray(settings.Policies) ? settings.Policies : []) {
    const badAcl = p?.Type === ACL_POLICY ? refuseAcl(op, p, version, (setId) => sets.has(setId), ctx) : undefined;
    if (badAcl) throw badAcl;
  }
  const ep: HcnEndpoint = structuredClone(settings);
  ep.ID = useId;
  ep.HostComputeNetwork = net.ID;
  ep.SchemaVersion = ep.SchemaVersion ?? { ...HCN_SCHEMA_V2 };
  ep.Flags = ep.Flags ?? 0;
  ep.Policies = ep.Policies ?? [];
  ep.MacAddress = ep.MacAddress || ids.mac();
  if (!ep.IpConfigurations?.length) {
    const alloc = allocateIp(view, net);
    if (alloc) ep.IpConfigurations = [alloc];
  } else if (ep.IpConfigurations.some((c) => c.IpAddress.includes(':'))) {
    // HNS answers an endpoint with the prefix length of the subnet each address lies in (hcsshim
    // hcn/hcnendpoint.go IpConfig.PrefixLength; sdnbridge builds the CNI result's masks from it, so the
    // recording sdnbridge-dual-stack-add.json, made without it, shows `/0`). Filled for dual-stack
    // endpoints; an IPv4-only endpoint's reply stays as the recorded win-bridge/win-overlay traces show it.
    const subnets = (net.Ipams ?? []).flatMap((i) => i.Subnets ?? []).map((s) => s.IpAddressPrefix);
    ep.IpConfigurations = ep.IpConfigurations.map((c) => (c.PrefixLength !== undefined ? c : { ...c, PrefixLength: prefixLengthOf(subnets, c.IpAddress) }));
  }
  view.addEndpoint(ep);
  return structuredClone(ep);
}

/**
 * The lowest free address of the network's first subnet: HNS hands out from .2 (.1 is the gateway), never
 * the broadcast address. The search starts below the lowest address that may be free (./keyed.ts), so
 * handing out n addresses costs O(n), not O(n^2).
 */
function allocateIp(view: KeyedState, net: HcnNetwork): { IpAddress: string; PrefixLength: number } | undefined {
  const subnet = allocationSubnet(net);
  const c = subnet ? parseCidr(subnet) : undefined;
  if (!c) return undefined;
  const used = view.ipsOf(net);
  for (let off = Math.max(2, view.allocFrom(net)); off < sizeOf(c.prefix) - 1; off++) {
    const ip = nthAddress(c, off);
    if (used.has(ip)) continue;
    view.allocated(net, off);
    return { IpAddress: ip, PrefixLength: c.prefix };
  }
  return undefined;
}

/** The prefix length of the subnet of `ip`'s family that holds it (refuseEndpointAddress made sure one does); 0 when none. */
function prefixLengthOf(subnets: string[], ip: string): number {
  const v6 = ip.includes(':');
  const hit = subnets.find((s) => typeof s === 'string' && (v6 ? s.includes(':') && contains6(s, ip) : !s.includes(':') && contains(s, ip)));
  return hit === undefined ? 0 : Number(hit.split('/')[1]);
}

/** HcnDeleteEndpoint / DELETE /endpoints/<id>. 0x803B0002 when missing. */
export function deleteEndpoint(view: KeyedState, op: string, id: string): void {
  const ep = view.endpoint(id);
  if (!ep) throw hnsError(op, HRESULT.HCN_E_ENDPOINT_NOT_FOUND, hresultText(HRESULT.HCN_E_ENDPOINT_NOT_FOUND), { endpointId: id });
  const adapter = hostAdapterOf(view.doc, ep);
  if (adapter) {
    view.doc.adapters = view.doc.adapters.filter((a) => a !== adapter);
    for (const r of view.routes.values()) if (r.InterfaceIndex === adapter.InterfaceIndex) view.deleteRoute(r);
  }
  view.deleteEndpoint(ep);
}

/** The host vNIC of an attached endpoint: `vEthernet (<name>)` (its ID when it has no name). */
const hostVNicName = (ep: HcnEndpoint): string => vEthernetName(ep.Name || ep.ID!);

function hostAdapterOf(state: DataplaneState, ep: HcnEndpoint): SimAdapter | undefined {
  return state.adapters.find((a) => a.Name === hostVNicName(ep));
}

export function isAttachedToHost(view: KeyedState, id: string): boolean {
  const ep = view.endpoint(id);
  return ep !== undefined && hostAdapterOf(view.doc, ep) !== undefined;
}

/** Attach to the host compartment: a new adapter `vEthernet (<name>)` with the endpoint's IP. */
export function attachEndpointToHost(view: KeyedState, ids: SimIds, op: string, id: string): SimAdapter {
  const ep = view.endpoint(id);
  if (!ep) throw hnsError(op, HRESULT.HCN_E_ENDPOINT_NOT_FOUND, hresultText(HRESULT.HCN_E_ENDPOINT_NOT_FOUND), { endpointId: id });
  if (hostAdapterOf(view.doc, ep)) {
    throw hnsError(op, HRESULT.HCN_E_ENDPOINT_ALREADY_ATTACHED, hresultText(HRESULT.HCN_E_ENDPOINT_ALREADY_ATTACHED), { endpointId: id, endpoint: ep.Name });
  }
  const ipc = ep.IpConfigurations?.find((c) => !c.IpAddress.includes(':'));
  const ipc6 = ep.IpConfigurations?.find((c) => c.IpAddress.includes(':'));
  const adapter: SimAdapter = {
    Name: hostVNicName(ep),
    InterfaceIndex: ids.ifIndex(),
    IPAddress: ipc?.IpAddress ?? '',
    PrefixLength: ipc?.PrefixLength ?? 0,
    Mtu: 1500,
    Forwarding: false,
    // A dual-stack endpoint's host vNIC holds its IPv6 address too (Get-NetIPAddress on `vEthernet (cbr0_ep)`).
    ...(ipc6 ? { IPv6Address: ipc6.IpAddress, IPv6PrefixLength: ipc6.PrefixLength ?? 64 } : {}),
  };
  view.doc.adapters.push(adapter);
  return { ...adapter };
}

/** HCN NetworkFlags EnableNonPersistent (hcsshim hcn/hcnnetwork.go): the network does not survive an HNS restart or a reboot. */
const NON_PERSISTENT_NETWORK_FLAG = 8;
/** The network policies HNS sets (or is given) at creation, which it restores with a persisted network. */
const CREATION_POLICIES = new Set(['NetAdapterName', 'ProviderAddress', 'DrMacAddress']);

/** What an HNS restart took away. */
export interface HnsRestartEffects {
  networksDropped: string[];
  endpointsDropped: number;
  policiesDropped: number;
}

/**
 * The "HNS restarted" fault: what a restart (or crash) of the Host Network Service leaves behind. HNS
 * restores only what it persisted: networks created without the non-persistent flag come back with their
 * ID and their creation policies; non-persistent networks (flannel's Overlay network) are gone, and so is
 * every endpoint with its host vNIC (microsoft/Windows-Containers#278 and #516: an HNS crash or a Windows
 * update wipes container networking; kubernetes#110674 and sig-windows-tools#77: the policies added later
 * are lost too). Policies added through HcnModifyNetwork (RemoteSubnetRoute) are dropped (kube-proxy's load
 * balancers are not: ./load-balancers.ts holdForRehydration). The service runs
 * in a new process (what AKS's scheduled task watches: Azure/AgentBaker#2085): `hnsInstance` moves on.
 */
export function restartHns(state: DataplaneState): HnsRestartEffects {
  const effects: HnsRestartEffects = { networksDropped: [], endpointsDropped: state.endpoints.length, policiesDropped: 0 };
  for (const net of [...state.networks]) {
    if (((net.Flags ?? 0) & NON_PERSISTENT_NETWORK_FLAG) !== 0) {
      deleteNetwork(state, 'HNS restart', net.ID!);
      effects.networksDropped.push(net.Name);
    }
  }
  const vnics = new Set(state.endpoints.map(hostVNicName));
  const gone = new Set(state.adapters.filter((a) => vnics.has(a.Name)).map((a) => a.InterfaceIndex));
  state.adapters = state.adapters.filter((a) => !gone.has(a.InterfaceIndex));
  state.routes = state.routes.filter((r) => !gone.has(r.InterfaceIndex));
  state.endpoints = [];
  for (const net of state.networks) {
    const kept = (net.Policies ?? []).filter((p) => CREATION_POLICIES.has(p.Type));
    effects.policiesDropped += (net.Policies ?? []).length - kept.length;
    net.Policies = kept;
  }
  state.hnsInstance = (state.hnsInstance ?? 1) + 1;
  return effects;
}

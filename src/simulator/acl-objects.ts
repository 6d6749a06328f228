// ACL rules on endpoints and SetPolicy IP sets on networks, changed as HNS changes them: HcnModifyEndpoint
// and HcnModifyNetwork with ResourceType Policy (hcsshim hcn/hcnendpoint.go ModifyEndpointSettingRequest
// with PolicyEndpointRequest, hcn/hcnnetwork.go ModifyNetworkSettingRequest with PolicyNetworkRequest,
// RequestType of hcn/hcn.go). What each request must satisfy is ./refusals.ts; what the rules mean for a
// packet, ./acl.ts. Pure functions over the keyed view (./keyed.ts): a call costs its own items.
import type { ErrorContext, HnsError } from '../basics/errors.js';
import { SET_POLICY_VERSION, V2_API_VERSION } from '../hns/features.js';
import { HRESULT, hnsError, hresultText } from '../hns/errors.js';
import { ACL_POLICY, ENDPOINT_FLAG_REMOTE, SET_POLICY, type HcnNetwork, type HcnPolicy, type HnsVersion } from '../hns/schema.js';
import { setOf } from './acl.js';
import { keepKey, policyKey, type KeyedState } from './keyed.js';
import { fail, policyNotFound, refuseAcl, refuseBatch, refuseSetPolicy, refuseUnsupported } from './refusals.js';

const notModelled = (op: string, what: string, ctx: ErrorContext): HnsError =>
  hnsError(op, HRESULT.E_INVALIDARG, `The parameter is incorrect. (${what} is not modelled by the simulator)`, ctx);

/**
 * HcnModifyEndpoint with ResourceType Policy, ACL rules only (other endpoint policies are not modelled:
 * E_INVALIDARG). A request is applied whole or not at all.
 *  * Add: each rule as refuseAcl judges it (HNS >= 9.2, src/hns/features.ts V2_API_VERSION); a rule the endpoint already holds, or repeated in the request, is refused with
 *    HCN_E_POLICY_ALREADY_EXISTS 0x803B0012 (modelled, as for network policies);
 *  * Remove: each rule is found by its whole settings, Id included (Azure NPM's fake HNS,
 *    network/hnswrapper/hnsv2wrapperfake.go RemovePolicy, compares them whole); one the endpoint does not
 *    hold: HCN_E_POLICY_NOT_FOUND 0x803B0008 (modelled);
 *  * a remote endpoint (EndpointFlagsRemoteEndpoint, kube-proxy's) takes no rules:
 *    HCN_E_INVALID_REMOTE_ENDPOINT_OPERATION 0x803B000F (modelled: ACLs go on the pods of this node, Azure
 *    NPM dataplane_windows.go getLocalPodEndpoints);
 *  * Update and Refresh are not modelled (E_INVALIDARG): HNS's Update replaces every policy of the
 *    endpoint (hcsshim hcn/hcn.go "replaces settings with the ones provided").
 */
export function modifyEndpointAcls(view: KeyedState, op: string, id: string, requestType: string, policies: HcnPolicy[], version: HnsVersion): void {
  const ctx: ErrorContext = { endpointId: id };
  const ep = view.endpoint(id);
  if (!ep) throw hnsError(op, HRESULT.HCN_E_ENDPOINT_NOT_FOUND, hresultText(HRESULT.HCN_E_ENDPOINT_NOT_FOUND), ctx);
  if (policies.some((p) => typeof p !== 'object' || p === null || p.Type !== ACL_POLICY)) throw notModelled(op, 'an endpoint policy other than ACL', ctx);
  if (requestType !== 'Add' && requestType !== 'Remove') throw notModelled(op, `RequestType ${requestType} on an endpoint`, ctx);
  const old = refuseUnsupported(op, 'HCN v2 (ACL endpoint policies through HcnModifyEndpoint)', V2_API_VERSION, version, ctx);
  if (old) throw old;
  if (((ep.Flags ?? 0) & ENDPOINT_FLAG_REMOTE) !== 0) {
    throw hnsError(op, HRESULT.HCN_E_INVALID_REMOTE_ENDPOINT_OPERATION, hresultText(HRESULT.HCN_E_INVALID_REMOTE_ENDPOINT_OPERATION), ctx);
  }
  const net = ep.HostComputeNetwork === undefined ? undefined : view.network(ep.HostComputeNetwork);
  const sets = net ? view.setsOf(net) : new Map<string, HcnPolicy>();
  const held = view.endpointPolicies(ep);
  const seen = new Map<string, number>();
  for (const p of policies) {
    const k = policyKey(p);
    const times = (seen.get(k) ?? 0) + 1;
    seen.set(k, times);
    if (requestType === 'Add') {
      const refused = refuseAcl(op, p, version, (setId) => sets.has(setId), ctx);
      if (refused) throw refused;
      if (held.count(k) > 0 || times > 1) throw hnsError(op, HRESULT.HCN_E_POLICY_ALREADY_EXISTS, hresultText(HRESULT.HCN_E_POLICY_ALREADY_EXISTS), { ...ctx, policyType: p.Type });
    } else if (held.count(k) < times) {
      throw fail(op, HRESULT.HCN_E_POLICY_NOT_FOUND, 'no such ACL rule on the endpoint', { ...ctx, policyType: p.Type });
    }
  }
  for (const p of policies) {
    if (requestType === 'Add') view.changeAcl(ep, keepKey(p, structuredClone(p)), 1);
    else view.changeAcl(ep, held.first(policyKey(p))!, -1);
  }
}

/**
 * HcnModifyNetwork whose policies are all SetPolicy IP sets (HNS >= 13.0: hcsshim hcnglobals.go
 * SetPolicyVersion; below it refuseUnsupported). Sets are found by Id (Azure NPM keys them so:
 * ipsetmanager_windows.go segregateSetPolicies, and its fake HNS hnsv2wrapperfake.go):
 *  * Add: refuseSetPolicy; an Id the network holds, or repeated in the request: HCN_E_POLICY_ALREADY_EXISTS
 *    0x803B0012 (modelled; NPM sends Update for sets that exist, applyIPSets);
 *  * Update: replaces the set's Values (hcsshim hcn/hcn.go RequestTypeUpdate "replaces settings with the
 *    ones provided"); a set the network lacks: HCN_E_POLICY_NOT_FOUND 0x803B0008 (modelled; NPM's fake:
 *    "could not find ... ipset"); another PolicyType: HCN_E_INVALID_POLICY (modelled);
 *  * Remove: a set the network lacks: HCN_E_POLICY_NOT_FOUND; a set an ACL rule of an endpoint of the network
 *    or a NESTEDIPSET still names: HCN_E_ENTITY_HAS_REFERENCES 0x803B002C (modelled: the code HCN defines
 *    for it; NPM removes ACLs before sets, dataplane_windows.go "Otherwise we won't be able to delete ipsets
 *    referenced by ACLs", and nested sets before their members, ipsetmanager_windows.go modifySetPolicies).
 * Items are applied in order, so a request may add a set and a NESTEDIPSET naming it. The state file's
 * `policyBatches` applies as for other network policies (./objects.ts modifyNetworkPolicies): the refusal
 * is thrown (atomic: after undoing the items before it) or returned (partial: those items stay).
 */
export function modifySetPolicies(view: KeyedState, op: string, net: HcnNetwork, requestType: string, policies: HcnPolicy[], version: HnsVersion): HnsError | undefined {
  const ctx: ErrorContext = { networkId: net.ID, policyType: SET_POLICY };
  const old = refuseUnsupported(op, 'SetPolicy', SET_POLICY_VERSION, version, ctx);
  if (old) throw old;
  if (requestType !== 'Add' && requestType !== 'Remove' && requestType !== 'Update') throw notModelled(op, `RequestType ${requestType} of SetPolicy`, ctx);
  const batchRefused = refuseBatch(op, view.doc.policyBatches, policies.length, ctx);
  if (batchRefused) throw batchRefused;
  const sets = view.setsOf(net);
  const kindOf = (setId: string) => setOf(sets.get(setId))?.PolicyType;
  const undo: (() => void)[] = [];
  const change = (p: HcnPolicy, delta: 1 | -1) => {
    view.changeSet(net, p, delta);
    undo.push(() => view.changeSet(net, p, delta > 0 ? -1 : 1));
  };
  let refusal: HnsError | undefined;
  for (const p of policies) {
    const setId = setOf(p)?.Id;
    const c = { ...ctx, set: typeof setId === 'string' ? setId : undefined };
    const held = typeof setId === 'string' ? sets.get(setId) : undefined;
    if (requestType === 'Add') {
      refusal =
        refuseSetPolicy(op, p, version, kindOf, ctx) ?? (held ? hnsError(op, HRESULT.HCN_E_POLICY_ALREADY_EXISTS, hresultText(HRESULT.HCN_E_POLICY_ALREADY_EXISTS), c) : undefined);
      if (!refusal) change(keepKey(p, structuredClone(p)), 1);
    } else if (!held) {
      refusal = policyNotFound(op, p, c);
    } else if (requestType === 'Remove') {
      const refs = view.setReferences(net, setId!);
      refusal = refs > 0 ? fail(op, HRESULT.HCN_E_ENTITY_HAS_REFERENCES, `${refs} ACL rules or nested sets still name set ${setId}`, c) : undefined;
      if (!refusal) change(held, -1);
    } else {
      refusal =
        refuseSetPolicy(op, p, version, kindOf, ctx) ??
        (setOf(p)!.PolicyType !== setOf(held)!.PolicyType
          ? fail(op, HRESULT.HCN_E_INVALID_POLICY, `an Update cannot turn ${setOf(held)!.PolicyType} ${setId} into ${setOf(p)!.PolicyType}`, c)
          : undefined);
      if (!refusal) {
        change(held, -1);
        change(keepKey(p, structuredClone(p)), 1);
      }
    }
    if (refusal) break;
  }
  if (refusal && view.doc.policyBatches !== 'partial') {
    for (const u of undo.reverse()) u();
    throw refusal;
  }
  return refusal;
}

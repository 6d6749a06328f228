// What to write to make an endpoint's ACL rules and the network's IP sets what ./translate.ts wants: the
// generic plan (src/reconcile/plan.ts, the agent's one diff) keyed by Id, on the agent's own objects only.
// An object is the agent's when its Id starts with AGENT_ID_PREFIX; any other rule or set (kube-proxy's,
// another agent's, an operator's) is never planned, so never removed. A rule's Id is a digest of its content,
// so a changed rule is a remove and an add; an IP set keeps its Id while its members change, so a changed
// set is an update (Azure NPM writes sets with RequestType Update the same way,
// npm/pkg/dataplane/ipsets/ipsetmanager_windows.go). Apply in this order, so no rule names a missing set and
// a set goes only once nothing names it: set adds and updates, rule removes, rule adds, set removes.
import { ACL_POLICY, SET_POLICY } from '../hns/schema.js';
import type { AclPolicySetting, HcnPolicy, SetPolicySetting } from '../hns/schema.js';
import { planReconcile } from '../reconcile/plan.js';
import type { PlanOps } from '../reconcile/plan.js';
import { AGENT_ID_PREFIX } from './translate.js';

export function isAgentId(id: unknown): id is string {
  return typeof id === 'string' && id.startsWith(AGENT_ID_PREFIX);
}

/** The agent's ACL rules among an endpoint's policies as HNS returns them (other policies and rules left out). */
export function agentAcls(policies: readonly HcnPolicy[] | undefined): AclPolicySetting[] {
  return (policies ?? []).flatMap((p) => (p.Type === ACL_POLICY && isAgentId(p.Settings?.Id) ? [p.Settings as unknown as AclPolicySetting] : []));
}

/** The agent's IP sets among a network's policies as HNS returns them. */
export function agentSets(policies: readonly HcnPolicy[] | undefined): SetPolicySetting[] {
  return (policies ?? []).flatMap((p) => (p.Type === SET_POLICY && isAgentId(p.Settings?.Id) ? [p.Settings as unknown as SetPolicySetting] : []));
}

const ACL_FIELDS = ['Action', 'Direction', 'RuleType', 'Priority', 'Protocols', 'LocalAddresses', 'RemoteAddresses', 'LocalPorts', 'RemotePorts'] as const;

/** A field's value, a field left out read as its empty value (hcsshim writes with omitempty). */
const field = (r: AclPolicySetting, f: (typeof ACL_FIELDS)[number]): string | number => r[f] ?? (f === 'Priority' ? 0 : '');

/** The same rule: every field the agent writes equal. */
export function sameAcl(a: AclPolicySetting, d: AclPolicySetting): boolean {
  return ACL_FIELDS.every((f) => field(a, f) === field(d, f));
}

const ACL_OPS: PlanOps<AclPolicySetting, AclPolicySetting> = { actualKey: (a) => a.Id!, desiredKey: (d) => d.Id!, same: sameAcl };

const SET_OPS: PlanOps<SetPolicySetting, SetPolicySetting> = {
  actualKey: (a) => a.Id,
  desiredKey: (d) => d.Id,
  same: (a, d) => a.Name === d.Name && a.PolicyType === d.PolicyType && a.Values === d.Values,
};

export interface AclPlan {
  remove: AclPolicySetting[];
  add: AclPolicySetting[];
}

export interface SetPlan {
  add: SetPolicySetting[];
  update: SetPolicySetting[];
  remove: SetPolicySetting[];
}

/** One endpoint: the agent's rules as read against the rules wanted. Rules of others in `actual` are ignored. */
export function planEndpointAcls(actual: readonly AclPolicySetting[], desired: readonly AclPolicySetting[]): AclPlan {
  const plan = planReconcile(
    actual.filter((a) => isAgentId(a.Id)),
    desired,
    ACL_OPS,
  );
  return { remove: [...plan.remove, ...plan.replace.map((r) => r.from)], add: [...plan.add, ...plan.replace.map((r) => r.to)] };
}

/** The network: the agent's IP sets as read against the sets wanted. */
export function planSets(actual: readonly SetPolicySetting[], desired: readonly SetPolicySetting[]): SetPlan {
  const plan = planReconcile(
    actual.filter((a) => isAgentId(a.Id)),
    desired,
    SET_OPS,
  );
  return { add: plan.add, update: plan.replace.map((r) => r.to), remove: plan.remove };
}

// `flanneld cleanup`'s NetworkPolicy step: the ACL rules and SetPolicy IP sets the NetworkPolicy controller
// (src/policy/controller.ts) wrote on the agent's network and its endpoints, removed; on its own with
// `--network-policy-only` (after turning --network-policy off: nothing else removes them, and they keep
// enforcing the last policies), and before the network in a full cleanup. Only what is provably the agent's:
// a rule or set whose Id has the agent's prefix (src/netpol/diff.ts isAgentId); every other rule and set
// (kube-proxy's, another engine's, an operator's) is kept. Rules go before the sets they name and the sets
// only once every rule of the agent is gone: HNS refuses deleting a set a rule or a nested set still names
// (HCN_E_ENTITY_HAS_REFERENCES, src/simulator/acl-objects.ts; Azure NPM's order,
// npm/pkg/dataplane/dataplane_windows.go: "clean-up ACLs before ipsets"), and nested sets before the sets
// they hold. A read that fails is unknown: nothing is removed on a guess, and the report says so.
import { errorMessage } from '../basics/errors.js';
import type { HnsClient } from '../hns/client.js';
import type { HcnEndpoint, SetPolicySetting } from '../hns/schema.js';
import { agentAcls, agentSets } from '../netpol/diff.js';

export interface NetpolCleanupReport {
  /** `<verb> <what>` lines, in the order done. */
  did(what: string): void;
  /** What was left because its state is unknown (a failed read or removal). */
  unknown: string[];
  kept: string[];
}

/** The agent's rules on each endpoint of network `networkId`, then its sets on the network; returns how many objects it removed. */
export async function removeNetpolObjects(hns: HnsClient, network: { id: string; name: string }, dryRun: boolean, report: NetpolCleanupReport): Promise<number> {
  let endpoints: HcnEndpoint[];
  let sets: SetPolicySetting[];
  try {
    endpoints = await hns.listEndpoints(network.id);
    sets = agentSets((await hns.getNetwork(network.id))?.Policies);
  } catch (err) {
    report.unknown.push(`NetworkPolicy rules on the endpoints of HNS network ${network.name}: reading them failed (${errorMessage(err)}); removed no rule and no IP set`);
    return 0;
  }
  let removed = 0;
  let rulesLeft = false;
  for (const ep of endpoints) {
    const rules = agentAcls(ep.Policies);
    if (rules.length === 0 || ep.ID === undefined) continue;
    const what = `${rules.length} NetworkPolicy rule${rules.length === 1 ? '' : 's'} (${rules.map((r) => r.Id).join(', ')}) from HNS endpoint ${ep.Name ?? '?'} (${ep.IpConfigurations?.[0]?.IpAddress ?? '?'}, ID ${ep.ID})`;
    try {
      if (!dryRun) await hns.removeEndpointAcls(ep.ID, rules);
      report.did(what);
      removed += rules.length;
    } catch (err) {
      rulesLeft = true;
      report.unknown.push(`${rules.length} NetworkPolicy rules on HNS endpoint ${ep.Name ?? '?'} (ID ${ep.ID}): removing them failed (${errorMessage(err)}); run cleanup again`);
    }
  }
  if (rulesLeft) {
    for (const s of sets) report.kept.push(`IP set ${s.Id}: rules HNS did not remove may still name it`);
    return removed;
  }
  // Nested sets first: a set goes only once nothing names it.
  const ordered = [...sets.filter((s) => s.PolicyType !== 'IPSET'), ...sets.filter((s) => s.PolicyType === 'IPSET')];
  if (ordered.length === 0) return removed;
  try {
    if (!dryRun) await hns.removeSetPolicies(network.id, ordered);
    for (const s of ordered) report.did(`IP set ${s.Id} from HNS network ${network.name}`);
    removed += ordered.length;
  } catch (err) {
    report.unknown.push(`IP sets ${ordered.map((s) => s.Id).join(', ')} on HNS network ${network.name}: removing them failed (${errorMessage(err)}); run cleanup again`);
  }
  return removed;
}

// What deploy/base/10-rbac.yml grants the DaemonSet pod's ServiceAccount, as the RBAC authorizer resolves it
// (kubernetes pkg/registry/rbac/validation/rule.go VisitRulesFor): the rules of every ClusterRole a
// ClusterRoleBinding binds it to, everywhere, and of every Role a RoleBinding binds it to, in that binding's
// namespace only. The fake API server enforces them (src/demo/kube-fake/rbac-startup.ts rbacAllows).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadAllYaml } from '@kubernetes/client-node';
import type { NamespacedRules, PolicyRule } from '../../src/demo/kube-fake/rbac-startup.js';

/** The namespace deploy/base/kustomization.yaml puts every namespaced object in. */
const NAMESPACE = 'kube-flannel';
const SERVICE_ACCOUNT = { kind: 'ServiceAccount', name: 'flannel-windows', namespace: NAMESPACE };

interface RbacDoc {
  kind?: string;
  metadata?: { name?: string; namespace?: string };
  rules?: PolicyRule[];
  roleRef?: { kind?: string; name?: string };
  subjects?: { kind?: string; name?: string; namespace?: string }[];
}

/** The ClusterRoles' rules (`rules`) and the Roles' by namespace (`namespaced`) that bind the DaemonSet's ServiceAccount. */
export function daemonSetRbac(): { rules: PolicyRule[]; namespaced: NamespacedRules } {
  const docs = loadAllYaml(readFileSync(join(process.cwd(), 'deploy', 'base', '10-rbac.yml'), 'utf8')) as RbacDoc[];
  const ns = (d: RbacDoc) => d.metadata?.namespace ?? NAMESPACE;
  const bindsPod = (b: RbacDoc) =>
    (b.subjects ?? []).some((s) => s.kind === SERVICE_ACCOUNT.kind && s.name === SERVICE_ACCOUNT.name && (s.namespace ?? ns(b)) === SERVICE_ACCOUNT.namespace);
  const role = (kind: string, name: string | undefined, namespace?: string) =>
    docs.find((d) => d.kind === kind && d.metadata?.name === name && (namespace === undefined || ns(d) === namespace))?.rules ?? [];
  const rules = docs.filter((d) => d.kind === 'ClusterRoleBinding' && bindsPod(d)).flatMap((b) => role('ClusterRole', b.roleRef?.name));
  const namespaced: Record<string, PolicyRule[]> = {};
  for (const b of docs.filter((d) => d.kind === 'RoleBinding' && bindsPod(d))) {
    // A RoleBinding may name a Role of its namespace or a ClusterRole, granted in its namespace (rule.go GetRoleReferenceRules).
    const granted = b.roleRef?.kind === 'ClusterRole' ? role('ClusterRole', b.roleRef.name) : role('Role', b.roleRef?.name, ns(b));
    namespaced[ns(b)] = [...(namespaced[ns(b)] ?? []), ...granted];
  }
  return { rules, namespaced };
}

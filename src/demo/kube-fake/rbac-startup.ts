// The 403s a kube-apiserver answers the agent before RBAC grants it: while the apiserver starts, before
// its RBAC authorizer's informers have synced, and while the agent's ClusterRole or its binding is not
// applied (the DaemonSet applied first). The RBAC authorizer (plugin/pkg/auth/authorizer/rbac/rbac.go
// Authorize) then has no opinion; it gives a reason only for the errors it met resolving the user's rules:
// a binding whose ClusterRole is not there (not synced yet, or applied later) gives
// `RBAC: clusterrole.rbac.authorization.k8s.io "flannel-windows" not found`, no binding at all gives none.
// The message is the one k8s.io/apiserver builds
// (pkg/endpoints/handlers/responsewriters/errors.go forbiddenMessage, and apimachinery
// pkg/api/errors NewForbidden: `<resource> "<name>" is forbidden: User "<user>" cannot <verb> resource
// "<resource>[/<subresource>]" in API group "" at the cluster scope: <reason>`). Once bound, a ClusterRole
// grants only its rules: a request is allowed when one rule matches its verb, API group, resource (with
// its subresource) and name (kubernetes pkg/apis/rbac/v1/evaluation_helpers.go RuleAllows; `*` matches
// any), denied without a reason otherwise (rbac.go Authorize: no rule allows, no error met). A Role bound
// by a RoleBinding grants its rules in its own namespace only: the authorizer visits the ClusterRoleBindings'
// rules for every request, the RoleBindings' of the request's namespace only for a namespaced one
// (pkg/registry/rbac/validation/rule.go VisitRulesFor). Pure.
import type { JsonObject } from './responses.js';

export const RBAC_NOT_SYNCED_REASON = 'RBAC: clusterrole.rbac.authorization.k8s.io "flannel-windows" not found';

/**
 * What RBAC grants the agent's user now: its ClusterRole and binding (`granted`), no binding for it
 * (`unbound`), or a binding whose ClusterRole is not there yet (`role-missing`).
 */
export type RbacGrant = 'granted' | 'unbound' | 'role-missing';

/** The authorizer's reason for a denial under `grant` ('' for none); undefined when it allows. */
export function rbacDenialReason(grant: RbacGrant): string | undefined {
  return grant === 'granted' ? undefined : grant === 'role-missing' ? RBAC_NOT_SYNCED_REASON : '';
}

/** Whether `path` is a resource request (the rest, discovery, every authenticated user may read: bootstrap policy system:discovery). */
export function isResourcePath(path: string): boolean {
  return RESOURCE_PATH.test(path);
}

const RESOURCE_PATH = /^\/apis?\/(?:([^/]+)\/)?v1\/(?:namespaces\/([^/]+)\/)?([^/]+)(?:\/([^/]+))?(?:\/([^/]+))?$/;

/** A ClusterRole's or Role's rule (rbac.authorization.k8s.io/v1 PolicyRule; nonResourceURLs not modelled). */
export interface PolicyRule {
  apiGroups?: readonly string[];
  resources?: readonly string[];
  resourceNames?: readonly string[];
  verbs: readonly string[];
}

/** What a resource request asks (k8s.io/apiserver pkg/endpoints/request RequestInfo). */
interface ResourceRequest {
  verb: string;
  group: string;
  namespace: string | undefined;
  resource: string;
  subresource: string | undefined;
  name: string;
}

function resourceRequest(method: string, path: string, query: Record<string, string>): ResourceRequest | undefined {
  const m = RESOURCE_PATH.exec(path);
  if (!m) return undefined;
  const name = m[4] === undefined ? '' : decodeURIComponent(m[4]);
  const watch = query.watch === 'true' || query.watch === '1';
  const verbs: Record<string, string> = { GET: name === '' ? (watch ? 'watch' : 'list') : 'get', POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };
  return {
    verb: verbs[method] ?? method.toLowerCase(),
    group: path.startsWith('/apis/') ? (m[1] ?? '') : '',
    namespace: m[2] === undefined ? undefined : decodeURIComponent(m[2]),
    resource: m[3],
    subresource: m[5],
    name,
  };
}

/** The rules RoleBindings grant the user, by namespace: each namespace's Roles' rules. */
export type NamespacedRules = Readonly<Record<string, readonly PolicyRule[]>>;

/**
 * Whether one of the ClusterRole's `rules`, or of the Roles bound in the request's namespace (`namespaced`),
 * allows the request (evaluation_helpers.go RuleAllows; rule.go VisitRulesFor); non-resource paths always.
 */
export function rbacAllows(rules: readonly PolicyRule[], method: string, path: string, query: Record<string, string>, namespaced: NamespacedRules = {}): boolean {
  const r = resourceRequest(method, path, query);
  if (!r) return true;
  const has = (xs: readonly string[] | undefined, x: string) => (xs ?? []).some((y) => y === '*' || y === x);
  const combined = r.subresource ? `${r.resource}/${r.subresource}` : r.resource;
  const inNamespace = r.namespace !== undefined && Object.hasOwn(namespaced, r.namespace) ? namespaced[r.namespace] : [];
  return [...rules, ...inNamespace].some(
    (rule) =>
      has(rule.verbs, r.verb) &&
      has(rule.apiGroups, r.group) &&
      (has(rule.resources, combined) || (r.subresource !== undefined && (rule.resources ?? []).includes(`*/${r.subresource}`))) &&
      (!rule.resourceNames?.length || rule.resourceNames.includes(r.name)),
  );
}

/** The Forbidden message and Status details for a request denied with `reason` ('' for none). */
export function rbacForbiddenMessage(
  method: string,
  path: string,
  query: Record<string, string>,
  user: string,
  reason = RBAC_NOT_SYNCED_REASON,
): { message: string; details: JsonObject } {
  const because = reason === '' ? '' : `: ${reason}`;
  const r = resourceRequest(method, path, query);
  if (!r) {
    const message = `forbidden: User "${user}" cannot ${method.toLowerCase()} path "${path}"${because}`;
    return { message, details: {} };
  }
  const { verb, group, namespace, resource, subresource: sub, name } = r;
  const scope = namespace === undefined ? 'at the cluster scope' : `in the namespace "${namespace}"`;
  const what = `User "${user}" cannot ${verb} resource "${sub ? `${resource}/${sub}` : resource}" in API group "${group}" ${scope}${because}`;
  const qualified = group === '' ? resource : `${resource}.${group}`;
  const message = name === '' ? `${qualified} is forbidden: ${what}` : `${qualified} "${name}" is forbidden: ${what}`;
  return { message, details: { ...(name === '' ? {} : { name }), ...(group === '' ? {} : { group }), kind: resource } };
}

// The 403s a kube-apiserver answers the agent before RBAC grants it: while the apiserver starts, before
// its RBAC authorizer's informers have synced, and while the agent's ClusterRole or its binding is not
// applied (the DaemonSet applied first). The RBAC authorizer (plugin/pkg/auth/authorizer/rbac/rbac.go
// Authorize) then has no opinion; it gives a reason only for the errors it met resolving the user's rules:
// a binding whose ClusterRole is not there (not synced yet, or applied later) gives
// `RBAC: clusterrole.rbac.authorization.k8s.io "flannel-windows" not found`, no binding at all gives none.
// The message is the one k8s.io/apiserver builds
// (pkg/endpoints/handlers/responsewriters/errors.go forbiddenMessage, and apimachinery
// pkg/api/errors NewForbidden: `<resource> "<name>" is forbidden: User "<user>" cannot <verb> resource
// "<resource>[/<subresource>]" in API group "" at the cluster scope: <reason>`). Pure.
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

/** The Forbidden message and Status details for a request denied with `reason` ('' for none). */
export function rbacForbiddenMessage(
  method: string,
  path: string,
  query: Record<string, string>,
  user: string,
  reason = RBAC_NOT_SYNCED_REASON,
): { message: string; details: JsonObject } {
  const because = reason === '' ? '' : `: ${reason}`;
  const m = RESOURCE_PATH.exec(path);
  if (!m) {
    const message = `forbidden: User "${user}" cannot ${method.toLowerCase()} path "${path}"${because}`;
    return { message, details: {} };
  }
  const group = path.startsWith('/apis/') ? (m[1] ?? '') : '';
  const namespace = m[2] === undefined ? undefined : decodeURIComponent(m[2]);
  const resource = m[3];
  const name = m[4] === undefined ? '' : decodeURIComponent(m[4]);
  const sub = m[5];
  const watch = query.watch === 'true' || query.watch === '1';
  const verbs: Record<string, string> = { GET: name === '' ? (watch ? 'watch' : 'list') : 'get', POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };
  const verb = verbs[method] ?? method.toLowerCase();
  const scope = namespace === undefined ? 'at the cluster scope' : `in the namespace "${namespace}"`;
  const what = `User "${user}" cannot ${verb} resource "${sub ? `${resource}/${sub}` : resource}" in API group "${group}" ${scope}${because}`;
  const qualified = group === '' ? resource : `${resource}.${group}`;
  const message = name === '' ? `${qualified} is forbidden: ${what}` : `${qualified} "${name}" is forbidden: ${what}`;
  return { message, details: { ...(name === '' ? {} : { name }), ...(group === '' ? {} : { group }), kind: resource } };
}

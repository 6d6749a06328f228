// The 403 a kube-apiserver answers while it starts, before its RBAC authorizer's informers have synced:
// the ClusterRoleBinding is known but not yet its ClusterRole, so the request is denied with the RBAC
// authorizer's reason (plugin/pkg/auth/authorizer/rbac/rbac.go: `RBAC: clusterrole.rbac.authorization.k8s.io
// "flannel-windows" not found`). The message is the one k8s.io/apiserver builds
// (pkg/endpoints/handlers/responsewriters/errors.go forbiddenMessage, and apimachinery
// pkg/api/errors NewForbidden: `<resource> "<name>" is forbidden: User "<user>" cannot <verb> resource
// "<resource>[/<subresource>]" in API group "" at the cluster scope: <reason>`). Pure.
import type { JsonObject } from './responses.js';

export const RBAC_NOT_SYNCED_REASON = 'RBAC: clusterrole.rbac.authorization.k8s.io "flannel-windows" not found';

/** The Forbidden message and Status details for a request denied before RBAC synced. */
export function rbacNotSyncedMessage(method: string, path: string, query: Record<string, string>, user: string): { message: string; details: JsonObject } {
  const m = /^\/apis?\/(?:([^/]+)\/)?v1\/(?:namespaces\/([^/]+)\/)?([^/]+)(?:\/([^/]+))?(?:\/([^/]+))?$/.exec(path);
  if (!m) {
    const message = `forbidden: User "${user}" cannot ${method.toLowerCase()} path "${path}": ${RBAC_NOT_SYNCED_REASON}`;
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
  const what = `User "${user}" cannot ${verb} resource "${sub ? `${resource}/${sub}` : resource}" in API group "${group}" ${scope}: ${RBAC_NOT_SYNCED_REASON}`;
  const qualified = group === '' ? resource : `${resource}.${group}`;
  const message = name === '' ? `${qualified} is forbidden: ${what}` : `${qualified} "${name}" is forbidden: ${what}`;
  return { message, details: { ...(name === '' ? {} : { name }), ...(group === '' ? {} : { group }), kind: resource } };
}

// How the kube subnet manager reads an API failure: its HTTP status, a short description (the Status
// message, never headers), whether it is worth retrying (client-go's rule: 408/409/429/5xx and network
// errors are transient), the bounded retry of one call, and the KubeError a caller finally sees.
// flannel pkg/subnet/kube/kube.go gets the retries from client-go and wraps errors with fmt.Errorf.
import { retryWithBackoff } from '../basics/clock.js';
import type { Clock } from '../basics/clock.js';
import { errorMessage, KubeError } from '../basics/errors.js';
import type { Logger } from '../basics/log.js';

/** HTTP status of a KubeApiError (or any error carrying one), undefined for network errors and timeouts. */
export function httpStatus(err: unknown): number | undefined {
  if (err === null || typeof err !== 'object') return undefined;
  const e = err as { statusCode?: unknown };
  return typeof e.statusCode === 'number' ? e.statusCode : undefined;
}

/** A short description of an API failure: HTTP status and the Status message, never headers. */
export function describe(err: unknown): string {
  const code = httpStatus(err);
  if (code === undefined) return errorMessage(err);
  const body = (err as { body?: unknown }).body;
  let msg: string | undefined;
  if (typeof body === 'string') {
    try {
      const parsed = JSON.parse(body) as { message?: unknown };
      if (typeof parsed?.message === 'string') msg = parsed.message;
    } catch {
      msg = body.slice(0, 200);
    }
  }
  return `HTTP ${code}${msg ? `: ${msg}` : ''}`;
}

export function retryable(err: unknown): boolean {
  const code = httpStatus(err);
  if (code === undefined) return true; // connection refused/reset, timeouts: the API blip
  return code === 408 || code === 409 || code === 429 || code >= 500;
}

/**
 * What needs RBAC beyond the agent's own: a flag's feature (`--network-policy`), or `flanneld doctor` run in the
 * DaemonSet pod with its ServiceAccount (deploy/README.md), which reads the Services and EndpointSlices.
 */
export type RbacFeature = 'network-policy' | 'doctor';

/** How deploy/base/10-rbac.yml's comment names the feature above each of its rules. */
export const RBAC_FEATURE_TAG: Readonly<Record<RbacFeature, string>> = { 'network-policy': '--network-policy', doctor: 'flanneld doctor' };

export interface RbacRule {
  /** The API group ('' for core). */
  group: string;
  resource: string;
  verbs: readonly string[];
  /** The feature that needs the rule; absent: the agent always does. */
  feature?: RbacFeature;
}

/**
 * Every rule the agent needs, as deploy/base's ClusterRole flannel-windows grants them (a test holds
 * the two equal): a 403 names all those of the enabled features, so the fix is one edit of the ClusterRole.
 * --network-policy lists and watches what src/policy/sources.ts NETPOL_RESOURCES names; doctor lists the Services
 * and EndpointSlices (src/commands/doctor-gather.ts), get/list only; kube-proxy's ClusterRole system:node-proxier
 * lists and watches the same (kubernetes plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go).
 */
export const AGENT_RBAC_RULES: readonly RbacRule[] = [
  { group: '', resource: 'pods', verbs: ['get'] },
  { group: '', resource: 'nodes', verbs: ['get', 'list', 'watch'] },
  { group: '', resource: 'nodes/status', verbs: ['patch'] },
  { group: '', resource: 'events', verbs: ['create', 'patch'] },
  { group: '', resource: 'pods', verbs: ['list', 'watch'], feature: 'network-policy' },
  { group: '', resource: 'namespaces', verbs: ['list', 'watch'], feature: 'network-policy' },
  { group: 'networking.k8s.io', resource: 'networkpolicies', verbs: ['list', 'watch'], feature: 'network-policy' },
  { group: '', resource: 'services', verbs: ['get', 'list'], feature: 'doctor' },
  { group: 'discovery.k8s.io', resource: 'endpointslices', verbs: ['get', 'list'], feature: 'doctor' },
];

/** `pods: get; nodes: get, list, watch; ...`: the rules the agent needs with `features` on (`<resource>.<group>` outside core). */
export function rbacNeeds(features: readonly RbacFeature[]): string {
  return AGENT_RBAC_RULES.filter((r) => r.feature === undefined || features.includes(r.feature))
    .map((r) => `${r.group === '' ? r.resource : `${r.resource}.${r.group}`}: ${r.verbs.join(', ')}`)
    .join('; ');
}

/** What the agent always needs. */
export const AGENT_RBAC_TEXT = rbacNeeds([]);

/** The Status message of an API failure (undefined without one). */
function statusMessage(err: unknown): string | undefined {
  const body = (err as { body?: unknown } | null)?.body;
  if (typeof body !== 'string') return undefined;
  try {
    const m = (JSON.parse(body) as { message?: unknown })?.message;
    return typeof m === 'string' ? m : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A refusal by the NodeRestriction admission plugin (kubernetes plugin/pkg/admission/noderestriction
 * admission.go: `node %q is not allowed to modify node %q`): the credentials are a node's (a kubelet's),
 * and another node's. Not an RBAC matter and never transient.
 */
export function nodeRestriction(err: unknown): { identity: string; target: string } | undefined {
  if (httpStatus(err) !== 403) return undefined;
  const m = /node "([^"]{1,253})" is not allowed to modify node "([^"]{1,253})"/.exec(statusMessage(err) ?? '');
  return m ? { identity: m[1], target: m[2] } : undefined;
}

/** How the agent gets its RBAC: the ClusterRole and binding of deploy/base, applied with the DaemonSet; what it needs with `features` on. */
export function rbacFix(features: readonly RbacFeature[]): string {
  return `apply flannel-windows' ClusterRole and ClusterRoleBinding (kubectl apply -k deploy/overlays/<your overlay>, or deploy/base/10-rbac.yml); it needs ${rbacNeeds(features)}`;
}

export const RBAC_FIX = rbacFix([]);

/**
 * A 403 from the RBAC authorizer (not NodeRestriction): the permission the API server says is missing,
 * as `<resource>: <verb>` (its Forbidden message, k8s.io/apiserver endpoints/handlers/responsewriters
 * forbiddenMessage: `User "<u>" cannot <verb> resource "<resource>[/<sub>]" ...`), and the fix.
 * Undefined for any other failure.
 */
export function rbacRefusal(err: unknown, features: readonly RbacFeature[] = []): { permission: string; fix: string } | undefined {
  if (httpStatus(err) !== 403 || nodeRestriction(err) !== undefined) return undefined;
  const m = /cannot ([a-z]{1,32}) resource "([a-z0-9./-]{1,128})"/.exec(statusMessage(err) ?? '');
  return { permission: m ? `${m[2]}: ${m[1]}` : 'unknown (the API server did not say)', fix: rbacFix(features) };
}

/**
 * Log one retried failure of `call`: an RBAC refusal as what it is (the permission and the fix: it ends
 * when the ClusterRole is applied, not when the network recovers), anything else as a failed call.
 */
export function logApiRetry(log: Logger, call: string, err: unknown, fields: Record<string, unknown>, features: readonly RbacFeature[] = []): void {
  const refusal = rbacRefusal(err, features);
  if (refusal) log.warn('the API server refuses the agent (RBAC); retrying until its ClusterRole grants it', { call, ...refusal, ...fields, error: describe(err) });
  else log.warn('kubernetes API call failed, retrying', { call, ...fields, error: describe(err) });
}

/** What to do about a failure with this status (a 403: the RBAC of the agent with `features` on). */
function hintFor(err: unknown, features: readonly RbacFeature[]): string {
  const status = httpStatus(err);
  if (status === 401) return '; check the credentials in the kubeconfig / service account token';
  if (status !== 403) return '';
  const nr = nodeRestriction(err);
  if (nr) {
    return (
      `; the API server's NodeRestriction admission refused it: the agent's credentials are those of node "${nr.identity}", ` +
      `which may modify only itself, not node "${nr.target}": set NODE_NAME to "${nr.identity}" if that is this node, ` +
      'or run the agent with its ServiceAccount (or the credentials of this node)'
    );
  }
  return `; ${rbacFix(features)}`;
}

/** FLANNEL_ERR_KUBE for a failed call; a 403 names the RBAC the agent needs with `features` on. */
export function kubeError(what: string, err: unknown, features: readonly RbacFeature[] = []): KubeError {
  const status = httpStatus(err);
  return new KubeError('FLANNEL_ERR_KUBE', `${what}: ${describe(err)}${hintFor(err, features)}`, { status }, { cause: err });
}

/**
 * Retryable while the agent starts: a 403 too, except a NodeRestriction refusal. An apiserver answers 403
 * for about 100 ms after it starts, until its RBAC informers synced, and for as long as the agent's
 * ClusterRole or its binding is not applied (a DaemonSet applied before its RBAC): the RBAC authorizer
 * (kubernetes plugin/pkg/auth/authorizer/rbac/rbac.go Authorize) has no opinion, with the reason
 * `RBAC: clusterrole.rbac.authorization.k8s.io "flannel-windows" not found` while the binding names a
 * ClusterRole that does not exist yet. Both end without a restart of the agent.
 */
export function retryableAtStartUp(err: unknown): boolean {
  return retryable(err) || (httpStatus(err) === 403 && nodeRestriction(err) === undefined);
}

/**
 * The answer's Retry-After in ms (429 or 5xx), which is waited before the own backoff when longer, as
 * client-go does (rest/request.go checkWait, rest/with_retry.go Before: the delay is the larger of
 * the backoff and `Retry-After`). It is the API server's instruction under API Priority and Fairness.
 */
export function retryAfterMs(err: unknown): number | undefined {
  if (err === null || typeof err !== 'object') return undefined;
  const v = (err as { retryAfterMs?: unknown }).retryAfterMs;
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : undefined;
}

export interface ApiRetryOptions {
  clock: Clock;
  log: Logger;
  backoffBaseMs: number;
  backoffCapMs: number;
  /** How long a failing call is retried before its error is returned. */
  timeoutMs: number;
  /** Which failures are retried (default `retryable`). */
  retryable?: (err: unknown) => boolean;
  /** The features whose RBAC a 403 names besides the agent's own (rbacFix). */
  rbacFeatures?: readonly RbacFeature[];
}

/** Retry `fn` on retryable failures with capped backoff, for at most `timeoutMs`; then kubeError(what). */
export async function retryApiCall<T>(what: string, fn: () => Promise<T>, o: ApiRetryOptions, signal: AbortSignal): Promise<T> {
  const onRetry = (err: unknown, attempt: number, delayMs: number) => logApiRetry(o.log, what, err, { attempt, delayMs }, o.rbacFeatures);
  try {
    return await retryWithBackoff(fn, { ...o, retryable: o.retryable ?? retryable, onRetry, minDelayMs: retryAfterMs }, signal);
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    throw kubeError(what, err, o.rbacFeatures);
  }
}

// The public IPs the own Node's annotations ask for, read once at start, before the external interface
// is chosen. Mirrors flannel main.go, which calls the kube subnet manager's GetStoredPublicIP
// (pkg/subnet/kube/kube.go: one GET of the own Node, errors only logged) and, with no --iface, hands the
// IP to ipmatch.LookupExtIface to pick the interface holding it. This agent also tries
// `public-ip-overwrite` (it is the node's own address when the node has several NICs and no NAT).
import type { KubeConfig } from '../../kube/kubeconfig.js';
import { systemClock, type Clock } from '../../basics/clock.js';
import { errorMessage } from '../../basics/errors.js';
import { isIp4 } from '../../basics/ip4.js';
import { isGlobalUnicast6 } from '../../basics/ip6.js';
import type { Logger } from '../../basics/log.js';
import { normalizeAnnotationPrefix } from '../../config/annotation-prefix.js';
import { subnetTimings, type SubnetTimings } from '../timings.js';
import { annotationKeys } from './annotations.js';
import { retryApiCall, retryableAtStartUp, type RbacFeature } from '../../kube/api-error.js';
import { KubeHttp } from '../../kube/http.js';
import { projectNode } from './node-list-watch.js';

export interface NodePublicIPs {
  /** `<prefix>/public-ip-overwrite`, when a valid IPv4. */
  publicIPOverwrite?: string;
  /** `<prefix>/node-public-ip`, when a valid IPv4. */
  nodePublicIP?: string;
  /** `<prefix>/public-ipv6-overwrite` and `<prefix>/node-public-ipv6`, when valid global IPv6 addresses. */
  publicIPv6Overwrite?: string;
  nodePublicIPv6?: string;
}

/** The two annotations out of a raw Node, through the lease projection (invalid values dropped). Pure. */
export function nodePublicIPsOf(node: unknown, annotationPrefix: string): NodePublicIPs {
  const rec = projectNode(node, annotationKeys(normalizeAnnotationPrefix(annotationPrefix)), true);
  const valid = (v: string | undefined) => (v !== undefined && isIp4(v.trim()) ? v.trim() : undefined);
  const out: NodePublicIPs = {};
  const overwrite = valid(rec?.publicIPOverwrite);
  const nodeIP = valid(rec?.nodePublicIP);
  if (overwrite) out.publicIPOverwrite = overwrite;
  if (nodeIP) out.nodePublicIP = nodeIP;
  const valid6 = (v: string | undefined) => (v !== undefined && isGlobalUnicast6(v.trim()) ? v.trim() : undefined);
  const overwrite6 = valid6(rec?.publicIPv6Overwrite);
  const node6 = valid6(rec?.nodePublicIPv6);
  if (overwrite6) out.publicIPv6Overwrite = overwrite6;
  if (node6) out.nodePublicIPv6 = node6;
  return out;
}

/**
 * GET the own Node (raw JSON, with a deadline like every other API request) and return its public-IP
 * annotations. A 403 or 5xx within the start-up window (an API server still starting, a ClusterRole not
 * applied yet: own-node.ts) is retried with the subnet manager's backoff; any failure after that, or a
 * timeout, is logged and yields none. The deadline, the backoff and the window are the subnet manager's
 * timings (../timings.ts).
 */
export async function readNodePublicIPs(opts: {
  kubeConfig: KubeConfig;
  nodeName: string;
  annotationPrefix: string;
  log: Logger;
  clock?: Clock;
  signal?: AbortSignal;
  timings?: Partial<SubnetTimings>;
  /** The features whose RBAC a 403 names besides the agent's own (../../kube/api-error.ts rbacFix). */
  rbacFeatures?: readonly RbacFeature[];
}): Promise<NodePublicIPs> {
  const clock = opts.clock ?? systemClock;
  const signal = opts.signal ?? new AbortController().signal;
  try {
    const http = new KubeHttp(opts.kubeConfig, clock);
    const path = `/api/v1/nodes/${encodeURIComponent(opts.nodeName)}`;
    const t = subnetTimings('kube', opts.timings);
    const get = () => http.json({ method: 'GET', path, timeoutMs: t.requestTimeoutMs, signal });
    const retry = {
      clock,
      log: opts.log,
      backoffBaseMs: t.backoffBaseMs,
      backoffCapMs: t.backoffCapMs,
      timeoutMs: t.startUpWindowMs,
      retryable: retryableAtStartUp,
      rbacFeatures: opts.rbacFeatures ?? [],
    };
    const node = await retryApiCall(`reading node "${opts.nodeName}"`, get, retry, signal);
    return nodePublicIPsOf(node, opts.annotationPrefix);
  } catch (err) {
    opts.log.warn('could not read the own node for its public-ip annotations; choosing the interface without them', { node: opts.nodeName, error: errorMessage(err) });
    return {};
  }
}

// The public IPs the own Node's annotations ask for, read once at start, before the external interface
// is chosen. Mirrors flannel main.go, which calls the kube subnet manager's GetStoredPublicIP
// (pkg/subnet/kube/kube.go: one GET of the own Node, errors only logged) and, with no --iface, hands the
// IP to ipmatch.LookupExtIface to pick the interface holding it. This agent also tries
// `public-ip-overwrite` (it is the node's own address when the node has several NICs and no NAT).
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { errorMessage } from '../../errors.js';
import { isIp4 } from '../../ip4.js';
import type { Logger } from '../../log.js';
import { annotationKeys, normalizeAnnotationPrefix } from './annotations.js';

export interface NodePublicIPs {
  /** `<prefix>/public-ip-overwrite`, when a valid IPv4. */
  publicIPOverwrite?: string;
  /** `<prefix>/node-public-ip`, when a valid IPv4. */
  nodePublicIP?: string;
}

/** The two annotations out of a Node's annotation map (invalid values dropped). Pure. */
export function nodePublicIPsOf(annotations: Record<string, string> | undefined, annotationPrefix: string): NodePublicIPs {
  const keys = annotationKeys(normalizeAnnotationPrefix(annotationPrefix));
  const pick = (key: string) => {
    const v = annotations?.[key]?.trim();
    return v && isIp4(v) ? v : undefined;
  };
  const out: NodePublicIPs = {};
  const overwrite = pick(keys.publicIPOverwrite);
  const nodeIP = pick(keys.nodePublicIP);
  if (overwrite) out.publicIPOverwrite = overwrite;
  if (nodeIP) out.nodePublicIP = nodeIP;
  return out;
}

/** GET the own Node and return its public-IP annotations; any failure is logged and yields none. */
export async function readNodePublicIPs(opts: { kubeConfig: KubeConfig; nodeName: string; annotationPrefix: string; log: Logger }): Promise<NodePublicIPs> {
  try {
    const node = await opts.kubeConfig.makeApiClient(CoreV1Api).readNode({ name: opts.nodeName });
    return nodePublicIPsOf(node.metadata?.annotations, opts.annotationPrefix);
  } catch (err) {
    opts.log.warn('could not read the own node for its public-ip annotations; choosing the interface without them', { node: opts.nodeName, error: errorMessage(err) });
    return {};
  }
}

// The objects the fake API server holds (core/v1 Node and Pod, reduced to what flannel reads) and
// builders for the Nodes of a test cluster: a bare Node as the kubelet registers it, and a Node annotated
// exactly as Linux flanneld's kube subnet manager annotates it (flannel pkg/subnet/kube/kube.go).
import { systemClock } from '../../basics/clock.js';
import { octets } from '../../basics/ip4.js';
import { DEFAULT_ANNOTATION_PREFIX, normalizeAnnotationPrefix } from '../../config/annotation-prefix.js';
import { annotationKeys, encodeBackendData } from '../../subnet/kube/annotations.js';
import type { JsonObject } from './responses.js';

export interface FakeObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  creationTimestamp?: string;
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  [k: string]: unknown;
}

export interface FakeNode {
  apiVersion?: string;
  kind?: string;
  metadata: FakeObjectMeta;
  spec?: { podCIDR?: string; podCIDRs?: string[]; [k: string]: unknown };
  status?: { conditions?: JsonObject[]; addresses?: JsonObject[]; [k: string]: unknown };
  [k: string]: unknown;
}

export interface FakePod {
  apiVersion?: string;
  kind?: string;
  metadata: FakeObjectMeta & { namespace: string };
  spec?: { nodeName?: string; [k: string]: unknown };
  status?: JsonObject;
  [k: string]: unknown;
}

/** An RFC 3339 timestamp in whole seconds, as the apiserver writes metav1.Time. */
export function kubeTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

export interface LinuxFlannelNodeOptions {
  name: string;
  podCIDR: string;
  publicIP: string;
  backendType: 'vxlan' | 'host-gw';
  /** vxlan only, default 4096. */
  vni?: number;
  /** vxlan only, default `0e:2a:` + the public IP's octets in hex. */
  vtepMAC?: string;
  /** `--kube-annotation-prefix` as given to flanneld (default flannel.alpha.coreos.com). */
  prefix?: string;
}

function readyCondition(): JsonObject {
  const t = kubeTime(systemClock.now());
  return { type: 'Ready', status: 'True', lastHeartbeatTime: t, lastTransitionTime: t, reason: 'KubeletReady', message: 'kubelet is posting ready status' };
}

/** A Node without flannel annotations (as the kubelet registers it, podCIDR set by the controller). */
export function bareNode(opts: { name: string; podCIDR?: string; internalIP?: string }): FakeNode {
  const node: FakeNode = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: opts.name, labels: { 'kubernetes.io/hostname': opts.name, 'kubernetes.io/os': 'linux' }, annotations: {} },
    spec: {},
    status: { conditions: [readyCondition()], addresses: [] },
  };
  if (opts.podCIDR !== undefined) node.spec = { podCIDR: opts.podCIDR, podCIDRs: [opts.podCIDR] };
  if (opts.internalIP !== undefined) node.status!.addresses = [{ type: 'InternalIP', address: opts.internalIP }];
  return node;
}

/** `0e:2a:` + the address's octets in hex: a locally administered MAC unique per public IP (00s for a hostile non-address). */
function defaultVtepMac(publicIP: string): string {
  const o = octets(publicIP) ?? [0, 0, 0, 0];
  return ['0e', '2a', ...o.map((b) => b.toString(16).padStart(2, '0'))].join(':');
}

/** A Node annotated exactly as upstream Linux flanneld (kube subnet manager) annotates it. */
export function linuxFlannelNode(opts: LinuxFlannelNodeOptions): FakeNode {
  const keys = annotationKeys(normalizeAnnotationPrefix(opts.prefix ?? DEFAULT_ANNOTATION_PREFIX));
  const node = bareNode({ name: opts.name, podCIDR: opts.podCIDR, internalIP: opts.publicIP });
  const data = opts.backendType === 'vxlan' ? { VNI: opts.vni ?? 4096, VtepMAC: opts.vtepMAC ?? defaultVtepMac(opts.publicIP) } : null;
  node.metadata.annotations = {
    [keys.backendData]: encodeBackendData(data),
    [keys.backendType]: opts.backendType,
    [keys.kubeSubnetManager]: 'true',
    [keys.publicIP]: opts.publicIP,
  };
  return node;
}

/** A Pod bound to a node (for POD_NAME/POD_NAMESPACE resolution). */
export function podOnNode(opts: { name: string; namespace: string; nodeName?: string }): FakePod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: opts.name, namespace: opts.namespace },
    spec: opts.nodeName === undefined ? {} : { nodeName: opts.nodeName },
    status: { phase: 'Running' },
  };
}

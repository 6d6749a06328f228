// flannel's Node annotations: keys and backend-data encoding (the prefix is normalised once, by
// ../../config/annotation-prefix.ts). Mirrors flannel pkg/subnet/kube/annotations.go and the backend-data
// writers of pkg/backend/vxlan.
import type { VxlanBackendData } from '../lease.js';

export interface AnnotationKeys {
  kubeSubnetManager: string;
  backendType: string;
  backendData: string;
  publicIP: string;
  publicIPOverwrite: string;
  nodePublicIP: string;
  backendV6Data: string;
  publicIPv6: string;
  publicIPv6Overwrite: string;
  nodePublicIPv6: string;
}

/** Annotation keys for a normalised prefix (e.g. `flannel.alpha.coreos.com/`). */
export function annotationKeys(normalizedPrefix: string): AnnotationKeys {
  const k = (s: string) => normalizedPrefix + s;
  return {
    kubeSubnetManager: k('kube-subnet-manager'),
    backendType: k('backend-type'),
    backendData: k('backend-data'),
    publicIP: k('public-ip'),
    publicIPOverwrite: k('public-ip-overwrite'),
    nodePublicIP: k('node-public-ip'),
    backendV6Data: k('backend-v6-data'),
    publicIPv6: k('public-ipv6'),
    publicIPv6Overwrite: k('public-ipv6-overwrite'),
    nodePublicIPv6: k('node-public-ipv6'),
  };
}

/**
 * Encode backend-data exactly as Linux flanneld does: vxlan `{"VNI":4096,"VtepMAC":"00:15:5d:b3:ac:db"}`
 * (key order VNI, VtepMAC; lower-case colon MAC); host-gw (no data) the four characters `null`.
 */
export function encodeBackendData(data: VxlanBackendData | null): string {
  if (data === null) return 'null';
  return JSON.stringify({ VNI: data.VNI, VtepMAC: data.VtepMAC });
}

/** Parse a backend-data annotation; malformed JSON yields `undefined` (the lease is then rejected). */
export function decodeBackendData(raw: string | undefined): unknown {
  if (raw === undefined || raw === '') return null;
  try {
    return JSON.parse(raw) as unknown;
  } catch {
    return undefined;
  }
}

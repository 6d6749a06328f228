// flannel's Node annotations: prefix rules, keys and backend-data encoding.
// Mirrors flannel pkg/subnet/kube/annotations.go and the backend-data writers of pkg/backend/vxlan.
import { ConfigError } from '../../errors.js';
import type { VxlanBackendData } from '../lease.js';

const PREFIX_RE = /^(?:[a-z0-9_-]+\.)+[a-z0-9_-]+\/(?:[a-z0-9_-]+-)?$/;

export const DEFAULT_ANNOTATION_PREFIX = 'flannel.alpha.coreos.com';

/**
 * Normalise `--kube-annotation-prefix` as upstream does: at most one `/`; without `/` append `/`;
 * if it ends in neither `/` nor `-` append `-`; the result must match flannel's pattern.
 */
export function normalizeAnnotationPrefix(prefix: string): string {
  const slashes = prefix.split('/').length - 1;
  if (slashes > 1) {
    throw new ConfigError(
      'FLANNEL_ERR_ANNOTATION_PREFIX',
      `subnet/kube: annotation prefix ${prefix} contains more than one / character; use a DNS name such as ${DEFAULT_ANNOTATION_PREFIX}`,
      { prefix },
    );
  }
  let p = prefix;
  if (slashes === 0) p += '/';
  if (!p.endsWith('/') && !p.endsWith('-')) p += '-';
  if (!PREFIX_RE.test(p)) {
    throw new ConfigError(
      'FLANNEL_ERR_ANNOTATION_PREFIX',
      `subnet/kube: annotation prefix ${prefix} is invalid: it must look like ${DEFAULT_ANNOTATION_PREFIX} (lower-case DNS labels, optionally /name)`,
      { prefix },
    );
  }
  return p;
}

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

/** HNS prints MACs as `00-15-5D-B3-AC-DB`; flannel publishes `00:15:5d:b3:ac:db`. */
export function macToFlannel(mac: string): string {
  return mac.replace(/-/g, ':').toLowerCase();
}

/** flannel `00:15:5d:b3:ac:db` to HNS `00-15-5D-B3-AC-DB`. */
export function macToHns(mac: string): string {
  return mac.replace(/:/g, '-').toUpperCase();
}

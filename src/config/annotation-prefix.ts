// --kube-annotation-prefix, normalised once when the configuration is parsed; the kube subnet manager,
// the demo's fake API server and the bench take it from here. Mirrors the prefix rules of flannel
// pkg/subnet/kube/annotations.go (newAnnotations).
import { ConfigError } from '../basics/errors.js';

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
      `--kube-annotation-prefix ${prefix} contains more than one / character; use a DNS name such as ${DEFAULT_ANNOTATION_PREFIX}`,
      { prefix },
    );
  }
  let p = prefix;
  if (slashes === 0) p += '/';
  if (!p.endsWith('/') && !p.endsWith('-')) p += '-';
  if (!PREFIX_RE.test(p)) {
    throw new ConfigError(
      'FLANNEL_ERR_ANNOTATION_PREFIX',
      `--kube-annotation-prefix ${prefix} is invalid: it must look like ${DEFAULT_ANNOTATION_PREFIX} (lower-case DNS labels, optionally /name)`,
      { prefix },
    );
  }
  return p;
}

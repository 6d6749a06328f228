// Node patches as the apiserver applies them: JSON merge patch (RFC 7386) and, for a strategic merge
// patch, the lists merged by key instead of replaced (the patchMergeKey tags of k8s.io/api core/v1
// types.go; k8s.io/apimachinery pkg/util/strategicpatch). `$patch: delete` removes a keyed item, other
// `$` directives are ignored. Pure.
import type { JsonObject } from './responses.js';

/** Lists merged by key under a strategic merge patch (k8s.io/api core/v1 patchMergeKey tags). */
const MERGE_KEYS: Record<string, string> = {
  '.status.conditions': 'type',
  '.status.addresses': 'type',
  '.spec.taints': 'key',
};

/** JSON merge patch (RFC 7386), plus the merge-by-key lists of a strategic merge patch. */
export function mergePatch(target: unknown, patch: unknown, strategic: boolean, path: string): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) {
    const key = MERGE_KEYS[path];
    if (strategic && key && Array.isArray(patch) && Array.isArray(target)) return mergeList(target, patch, key);
    return structuredClone(patch);
  }
  const out: JsonObject = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as JsonObject) } : {};
  for (const [k, v] of Object.entries(patch as JsonObject)) {
    if (strategic && k.startsWith('$')) continue;
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v, strategic, `${path}.${k}`);
  }
  return out;
}

function mergeList(target: unknown[], patch: unknown[], key: string): unknown[] {
  const out = target.map((x) => structuredClone(x));
  for (const item of patch) {
    if (item === null || typeof item !== 'object') continue;
    const id = (item as JsonObject)[key];
    const i = out.findIndex((x) => x !== null && typeof x === 'object' && (x as JsonObject)[key] === id);
    if ((item as JsonObject).$patch === 'delete') {
      if (i >= 0) out.splice(i, 1);
    } else if (i >= 0) out[i] = mergePatch(out[i], item, true, '');
    else out.push(structuredClone(item));
  }
  return out;
}

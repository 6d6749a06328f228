// metav1.LabelSelector semantics: k8s.io/apimachinery pkg/apis/meta/v1/helpers.go LabelSelectorAsSelector
// (a nil selector is labels.Nothing(), an empty one labels.Everything(), otherwise every matchLabels entry
// and every matchExpressions requirement must hold) and pkg/labels/selector.go Requirement.Matches (In:
// the key is there with one of the values; NotIn: the key is absent or its value is none of them; Exists;
// DoesNotExist). What a nil selector means inside a NetworkPolicyPeer is the peer's rule, not the
// selector's (networking/v1 types.go NetworkPolicyPeer; ./intent.ts).
import type { LabelSelector, LabelSelectorRequirement } from './types.js';

function requirementMatches(r: LabelSelectorRequirement, labels: Readonly<Record<string, string>>): boolean {
  const has = Object.prototype.hasOwnProperty.call(labels, r.key);
  switch (r.operator) {
    case 'In':
      return has && r.values.includes(labels[r.key]);
    case 'NotIn':
      return !has || !r.values.includes(labels[r.key]);
    case 'Exists':
      return has;
    case 'DoesNotExist':
      return !has;
  }
}

/** Does the selector select an object with these labels? `undefined` (nil) selects nothing, `{}` everything. */
export function selectorMatches(selector: LabelSelector | undefined, labels: Readonly<Record<string, string>>): boolean {
  if (selector === undefined) return false;
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) {
    if (!Object.prototype.hasOwnProperty.call(labels, k) || labels[k] !== v) return false;
  }
  return (selector.matchExpressions ?? []).every((r) => requirementMatches(r, labels));
}

/**
 * One text per meaning: matchLabels by key, requirements sorted with their values sorted and deduplicated
 * (a selector's requirements are ANDed and its values are a set, so their order means nothing). Two
 * selectors with the same text select the same objects; IP set keys are built from it.
 */
export function selectorKey(selector: LabelSelector): string {
  const labels = Object.entries(selector.matchLabels ?? {})
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`);
  const exprs = (selector.matchExpressions ?? []).map((r) => `${r.key} ${r.operator} (${[...new Set(r.values)].sort().join(',')})`).sort();
  return `{${[...labels, ...new Set(exprs)].join(';')}}`;
}

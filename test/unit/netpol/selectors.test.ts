// metav1.LabelSelector semantics (src/netpol/selectors.ts), table by table as apimachinery's
// LabelSelectorAsSelector and Requirement.Matches define them, and the canonical key IP sets are named by.
import { describe, expect, it } from '@jest/globals';
import { selectorKey, selectorMatches } from '../../../src/netpol/selectors.js';
import type { LabelSelector } from '../../../src/netpol/types.js';

const labels = { app: 'web', tier: 'front', empty: '' };

describe('selectorMatches', () => {
  it.each<[string, LabelSelector | undefined, boolean]>([
    ['nil selects nothing', undefined, false],
    ['{} selects everything', {}, true],
    ['empty matchLabels and matchExpressions select everything', { matchLabels: {}, matchExpressions: [] }, true],
    ['matchLabels equal', { matchLabels: { app: 'web' } }, true],
    ['matchLabels: every entry must hold', { matchLabels: { app: 'web', tier: 'back' } }, false],
    ['matchLabels: a missing key', { matchLabels: { other: 'x' } }, false],
    ['matchLabels: an empty value matches an empty label', { matchLabels: { empty: '' } }, true],
    ['matchLabels: an empty value does not match a missing label', { matchLabels: { missing: '' } }, false],
    ['In: one of the values', { matchExpressions: [{ key: 'app', operator: 'In', values: ['db', 'web'] }] }, true],
    ['In: none of the values', { matchExpressions: [{ key: 'app', operator: 'In', values: ['db'] }] }, false],
    ['In: the key missing', { matchExpressions: [{ key: 'missing', operator: 'In', values: ['x'] }] }, false],
    ['NotIn: none of the values', { matchExpressions: [{ key: 'app', operator: 'NotIn', values: ['db'] }] }, true],
    ['NotIn: one of the values', { matchExpressions: [{ key: 'app', operator: 'NotIn', values: ['web'] }] }, false],
    ['NotIn: the key missing matches', { matchExpressions: [{ key: 'missing', operator: 'NotIn', values: ['x'] }] }, true],
    ['Exists', { matchExpressions: [{ key: 'tier', operator: 'Exists', values: [] }] }, true],
    ['Exists: an empty value exists', { matchExpressions: [{ key: 'empty', operator: 'Exists', values: [] }] }, true],
    ['Exists: missing', { matchExpressions: [{ key: 'missing', operator: 'Exists', values: [] }] }, false],
    ['DoesNotExist: missing', { matchExpressions: [{ key: 'missing', operator: 'DoesNotExist', values: [] }] }, true],
    ['DoesNotExist: present', { matchExpressions: [{ key: 'app', operator: 'DoesNotExist', values: [] }] }, false],
    ['matchLabels AND matchExpressions, both hold', { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['front'] }] }, true],
    ['matchLabels AND matchExpressions, one fails', { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['front'] }] }, false],
  ])('%s', (_what, selector, expected) => {
    expect(selectorMatches(selector, labels)).toBe(expected);
  });

  it('a label named like an Object.prototype member is only a label when the object has it', () => {
    expect(selectorMatches({ matchExpressions: [{ key: 'constructor', operator: 'Exists', values: [] }] }, {})).toBe(false);
    expect(selectorMatches({ matchExpressions: [{ key: 'toString', operator: 'NotIn', values: ['x'] }] }, {})).toBe(true);
  });
});

describe('selectorKey', () => {
  it('one text per meaning: order of labels, requirements and values does not matter', () => {
    const a: LabelSelector = {
      matchLabels: { b: '2', a: '1' },
      matchExpressions: [
        { key: 'z', operator: 'In', values: ['y', 'x', 'x'] },
        { key: 'k', operator: 'Exists', values: [] },
      ],
    };
    const b: LabelSelector = {
      matchLabels: { a: '1', b: '2' },
      matchExpressions: [
        { key: 'k', operator: 'Exists', values: [] },
        { key: 'z', operator: 'In', values: ['x', 'y'] },
      ],
    };
    expect(selectorKey(a)).toBe(selectorKey(b));
    expect(selectorKey(a)).toBe('{a=1;b=2;k Exists ();z In (x,y)}');
  });

  it('different meanings, different texts', () => {
    expect(selectorKey({})).toBe('{}');
    expect(selectorKey({ matchLabels: { a: '1' } })).not.toBe(selectorKey({ matchLabels: { a: '2' } }));
    expect(selectorKey({ matchExpressions: [{ key: 'a', operator: 'In', values: ['1'] }] })).not.toBe(
      selectorKey({ matchExpressions: [{ key: 'a', operator: 'NotIn', values: ['1'] }] }),
    );
  });
});

// The simulated HNS's policy identity (src/simulator/keyed.ts canonicalJson): written out by hand, it must
// give exactly the text of the JSON.stringify-with-a-sorting-replacer it replaced (kept below as the
// oracle), for the policies the agent sends and for any JSON value.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { canonicalJson, policyKey } from '../../../src/simulator/keyed.js';
import { heapAfterGc } from '../../support/heap.js';

/** The earlier canonical form: each object rebuilt from its defined entries, sorted by key. */
function oracle(v: unknown): string | undefined {
  return JSON.stringify(v, (_k, x: unknown) =>
    typeof x === 'object' && x !== null && !Array.isArray(x)
      ? Object.fromEntries(
          Object.entries(x)
            .filter(([, y]) => y !== undefined)
            .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : x,
  );
}

describe('canonicalJson', () => {
  it.each<[string, unknown, string | undefined]>([
    [
      'a RemoteSubnetRoute, keys out of order',
      { Type: 'RemoteSubnetRoute', Settings: { ProviderAddress: '10.0.0.3', DestinationPrefix: '10.244.1.0/24', IsolationId: 4096 } },
      '{"Settings":{"DestinationPrefix":"10.244.1.0/24","IsolationId":4096,"ProviderAddress":"10.0.0.3"},"Type":"RemoteSubnetRoute"}',
    ],
    ['undefined members left out', { b: undefined, a: 1, c: () => 1 }, '{"a":1}'],
    ['undefined in an array as null', [undefined, 1, { z: 1, y: [] }], '[null,1,{"y":[],"z":1}]'],
    ['array-index keys first, ascending', { b: 1, 10: 'x', a: 2, 9: 'y' }, '{"9":"y","10":"x","a":2,"b":1}'],
    ['keys needing escapes', { 'q"': 1, '\n': 2 }, '{"\\n":2,"q\\"":1}'],
    ['upper case before lower (code units)', { a: 1, B: 2, _: 3 }, '{"B":2,"_":3,"a":1}'],
    ['scalars', 'x', '"x"'],
    ['a number not finite as null', { n: Number.NaN }, '{"n":null}'],
    ['undefined alone', undefined, undefined],
    ['an empty object', {}, '{}'],
  ])('%s', (_name, value, text) => {
    expect(canonicalJson(value)).toBe(text);
    expect(oracle(value)).toBe(text);
  });

  it('equals the sorting replacer on any JSON value, and on objects with undefined members', () => {
    const withUndefined = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.jsonValue({ maxDepth: 2 }),
        fc.constant(undefined),
        fc.array(tie('value'), { maxLength: 4 }),
        fc.dictionary(fc.string({ maxLength: 4 }), tie('value'), { maxKeys: 6 }),
      ),
    })).value;
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), withUndefined), (v) => expect(canonicalJson(v)).toBe(oracle(v))),
      { numRuns: 500 },
    );
  });

  it('is the policy key, kept per object', () => {
    const p = { Type: 'RemoteSubnetRoute' as const, Settings: { IsolationId: 4096, DestinationPrefix: '10.244.1.0/24' } };
    expect(policyKey(p)).toBe(oracle(p));
    expect(policyKey(p)).toBe(policyKey(p));
  });

  it('keeps one string per policy key, not a tree of its parts', () => {
    // A key built by `+=` stays a tree of its ~21 parts in V8 (about 0.8 KB for this policy); the simulated HNS
    // keeps a key per policy, 21 MB of the bench process's heap at 20,000 peers (docs/performance.md, session 13).
    const n = 5000;
    const policies = Array.from({ length: n }, (_, i) => ({
      Type: 'RemoteSubnetRoute' as const,
      Settings: { IsolationId: 4096, DestinationPrefix: `10.${i >> 8}.${i & 255}.0/24`, ProviderAddress: `192.168.${i >> 8}.${i & 255}` },
    }));
    const before = heapAfterGc();
    const keys = policies.map(policyKey);
    const perKey = (heapAfterGc() - before) / n;
    expect(keys[n - 1]).toBe(oracle(policies[n - 1]));
    // The text is about 110 characters: one flat string and the WeakMap's entry, about 160 bytes (880 as a tree).
    expect(perKey).toBeLessThan(400);
  });
});

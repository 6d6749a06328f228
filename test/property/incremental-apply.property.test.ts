// Property: incremental apply (each change written as its own delta against the cached last read, no
// read) followed by a resync leaves the same dataplane as one full pass (read everything, diff, write),
// whatever happens in between: failed writes, refused items, drift behind the agent's back.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { Reconciler } from '../../src/reconcile/reconciler.js';
import { MapSink } from '../support/refusal-sink.js';
import { FakeDriver, itemKey } from '../support/fake-driver.js';
import { FakeClock, flush } from '../support/fake-clock.js';
import { ItemSet } from '../support/desired-set.js';

/** An item `key=val`: the key is the part before `=`, the same item is the same text. */
const label = (i: { key: string; val: number }) => `${i.key}=${i.val}`;

type Op =
  | { kind: 'set'; key: string; val: number }
  | { kind: 'del'; key: string }
  | { kind: 'driftRemove'; key: string }
  | { kind: 'driftAdd'; key: string; val: number }
  | { kind: 'fail'; n: number }
  | { kind: 'refuse'; key: string; val: number }
  | { kind: 'tick'; ms: number };

const keyArb = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f');
const valArb = fc.integer({ min: 0, max: 2 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('set' as const), key: keyArb, val: valArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('del' as const), key: keyArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('driftRemove' as const), key: keyArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('driftAdd' as const), key: keyArb, val: valArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('fail' as const), n: fc.integer({ min: 1, max: 2 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('refuse' as const), key: keyArb, val: valArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 3000 }) }) },
);

const canon = (items: readonly string[]) => [...items].sort();

describe('incremental apply', () => {
  it('followed by a resync leaves the same dataplane as a full pass', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.record({ key: keyArb, val: valArb }), { maxLength: 6 }), fc.array(opArb, { maxLength: 30 }), async (initial, ops) => {
        const clock = new FakeClock();
        // An HNS-like store: batches of 3, atomic; an add of an existing item is an error.
        const store = new FakeDriver({ batch: 3 });
        store.existingIsError = true;
        store.actual = initial.map(label);
        const items = new ItemSet<string>((d) => store.desiredKey(d));

        const r = new Reconciler<string, string>({ sink: new MapSink(), desired: items.store, driver: store, clock, resyncMs: 10_000, backoffBaseMs: 100, backoffCapMs: 1000 });
        const desired = new Map<string, string>();
        items.markListed();
        const ac = new AbortController();
        const done = r.run(ac.signal);
        await flush();
        for (const op of ops) {
          if (op.kind === 'set') {
            desired.set(op.key, label(op));
            items.updatePeers([[op.key, [label(op)]]]);
          } else if (op.kind === 'del') {
            desired.delete(op.key);
            items.updatePeers([[op.key, undefined]]);
          } else if (op.kind === 'driftRemove') store.actual = store.actual.filter((i) => itemKey(i) !== op.key);
          else if (op.kind === 'driftAdd') store.actual.push(label(op));
          else if (op.kind === 'fail') {
            store.failNext += op.n;
            store.failReads += op.n;
          } else if (op.kind === 'refuse') store.refused.add(label(op));
          else await clock.advance(op.ms);
          await flush();
        }
        // Without faults or drift the deltas alone (no read since the first pass) already made it exact.
        if (!ops.some((o) => o.kind === 'driftAdd' || o.kind === 'driftRemove' || o.kind === 'fail' || o.kind === 'refuse')) {
          expect(canon(store.actual)).toEqual(canon([...desired.values()]));
        }
        // The dataplane recovers; what a full pass would make of the dataplane as it stands now:
        store.failNext = 0;
        store.failReads = 0;
        store.refused.clear();
        const full = new FakeDriver({ batch: 3 });
        full.existingIsError = true;
        full.actual = [...store.actual];
        const freshItems = new ItemSet<string>((d) => full.desiredKey(d));
        const fresh = new Reconciler<string, string>({ sink: new MapSink(), desired: freshItems.store, driver: full });
        freshItems.updatePeers([...desired].map(([k, d]) => [k, [d]]));
        freshItems.markListed();
        expect((await fresh.pass()).ok).toBe(true);

        // ... and what the running loop makes of it by the next resync (refused items' backoff is capped at 1 s).
        await clock.advance(10_000);
        await clock.advance(10_000);
        ac.abort();
        await done;
        expect(canon(store.actual)).toEqual(canon(full.actual));
        expect(canon(store.actual)).toEqual(canon([...desired.values()]));
      }),
      { numRuns: 300 },
    );
    // About 1 s alone; 300 runs of many setImmediate turns each took over 30 s while the Wine tests held
    // both cores of the shared machine in a full `npm test`.
  }, 120_000);

  it('a change written incrementally needs no read of the dataplane', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.record({ key: keyArb, val: valArb }), { minLength: 1, maxLength: 20 }), async (changes) => {
        const clock = new FakeClock();
        const store = new FakeDriver({ batch: 3 });
        const items = new ItemSet<string>((d) => store.desiredKey(d));

        const r = new Reconciler<string, string>({ sink: new MapSink(), desired: items.store, driver: store, clock, resyncMs: 10_000 });
        items.markListed();
        const ac = new AbortController();
        const done = r.run(ac.signal);
        await flush();
        const desired = new Map<string, string>();
        for (const c of changes) {
          desired.set(c.key, label(c));
          items.updatePeers([[c.key, [label(c)]]]);
          await flush();
        }
        expect(store.reads).toBe(1); // the first pass only
        expect(canon(store.actual)).toEqual(canon([...desired.values()]));
        ac.abort();
        await done;
      }),
      { numRuns: 100 },
    );
  });
});

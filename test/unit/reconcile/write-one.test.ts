// writePlan's one-write path (src/reconcile/writes.ts writeOne: a node event's plan of one addition or one
// removal) against its batched path (writePlanInBatches), case by case: the same outcome, the same calls,
// the same refusals told to the sink and the same cache. The failures are HNS's as src/hns/errors.ts
// hnsFailure sorts them: a refusal of what the request carried, a removal of a policy already gone (hcsshim
// hcn/hcnerrors.go), the network gone, anything else transient.
import { describe, expect, it } from '@jest/globals';
import { ActualCache } from '../../../src/reconcile/plan.js';
import { Refusals } from '../../../src/reconcile/refusals.js';
import { writePlan, writePlanInBatches, type ReconcileDriver, type WriteFailure } from '../../../src/reconcile/writes.js';
import { FakeClock } from '../../support/fake-clock.js';
import { MapSink } from '../../support/refusal-sink.js';

type Answer = 'ok' | WriteFailure;
type Refused = 'never' | 'backing off' | 'due';

class Failed extends Error {
  constructor(readonly kind: WriteFailure) {
    super(`write failed: ${kind}`);
  }
}

const key = (s: string): string => s.split('=')[0];

/** A driver of `key=value` items whose every write answers `answer`; `calls` records them. */
function driver(answer: Answer, toActual: boolean): ReconcileDriver<string, string> & { calls: string[] } {
  const calls: string[] = [];
  const write = (op: string) => async (items: string[]) => {
    calls.push(`${op} ${items.join(',')}`);
    if (answer !== 'ok') throw new Failed(answer);
  };
  return {
    calls,
    name: 'one',
    driftKind: 'policy',
    actualKey: key,
    desiredKey: key,
    same: (a, d) => a === d,
    readActual: () => Promise.resolve([]),
    add: write('add'),
    remove: write('remove'),
    failure: (e) => (e instanceof Failed ? e.kind : 'transient'),
    batch: 200,
    ...(toActual ? { toActual: (d: string) => d } : {}),
  };
}

const NOW = 1_000_000;

/** A fresh world: the cache holds `held`, the key was refused as `refused` says, and the driver answers `answer`. */
function world(answer: Answer, refused: Refused, toActual: boolean, held: string[]) {
  const clock = new FakeClock({ start: NOW - 10_000 }); // a refusal now waits 250 ms
  const sink = new MapSink();
  const refusals = new Refusals(sink, clock, { baseMs: 250, capMs: 30_000 });
  if (refused !== 'never') refusals.refused('a', new Failed('refused'));
  clock.t = refused === 'backing off' ? NOW - 10_000 + 100 : NOW;
  sink.clearings.length = 0;
  const cache = new ActualCache(held, key);
  return { d: driver(answer, toActual), sink, refusals, cache, clock };
}

const ANSWERS: Answer[] = ['ok', 'refused', 'absent', 'transient', 'gone'];
const REFUSED: Refused[] = ['never', 'backing off', 'due'];

// Per case, what writeOne must do (and the batched path does): calls, added, removed, refused, failed.
const cases: [op: 'add' | 'remove', answer: Answer, refused: Refused, want: { calls: number; done: boolean; refused: boolean; failed: boolean }][] = [];
for (const op of ['add', 'remove'] as const) {
  for (const answer of ANSWERS) {
    for (const refused of REFUSED) {
      const waits = refused === 'backing off';
      const done = !waits && (answer === 'ok' || (op === 'remove' && answer === 'absent'));
      const isRefused = !waits && answer === 'refused';
      cases.push([op, answer, refused, { calls: waits ? 0 : 1, done, refused: isRefused, failed: !waits && !done && !isRefused }]);
    }
  }
}

describe('writePlan of one addition or one removal, against the batched writes', () => {
  it.each(cases)('%s answered %s, key refused: %s', async (op, answer, refused, want) => {
    for (const toActual of [true, false]) {
      const held = op === 'remove' ? ['a=1', 'b=2'] : ['b=2'];
      const plan = { add: op === 'add' ? ['a=1'] : [], remove: op === 'remove' ? ['a=1'] : [], replace: [], unchanged: 0 };
      const one = world(answer, refused, toActual, held);
      const batched = world(answer, refused, toActual, held);
      const opts = (w: ReturnType<typeof world>) => ({ early: false, now: w.clock.now(), refusals: w.refusals, cache: w.cache });
      const got = await writePlan(one.d, plan, opts(one));
      const ref = await writePlanInBatches(batched.d, plan, opts(batched));

      expect(got).toEqual(ref);
      expect(one.d.calls).toEqual(batched.d.calls);
      expect([...one.sink.refusedNow.keys()]).toEqual([...batched.sink.refusedNow.keys()]);
      expect(one.sink.clearings).toEqual(batched.sink.clearings);
      expect(one.cache.values().sort()).toEqual(batched.cache.values().sort());
      expect(one.refusals.keys()).toEqual(batched.refusals.keys());

      expect(got.calls).toBe(want.calls);
      expect(got[op === 'add' ? 'added' : 'removed']).toBe(want.done ? 1 : 0);
      expect(got.refused).toBe(want.refused ? 1 : 0);
      expect(got.failure instanceof Failed).toBe(want.failed);
      if (want.done) expect(one.sink.clearings).toEqual(refused === 'due' ? [['a', 'written']] : []);
      const cached = one.cache.get('a');
      if (want.done) expect(cached).toEqual(op === 'remove' || !toActual ? [] : ['a=1']);
      else expect(cached).toEqual(op === 'remove' ? ['a=1'] : []);
    }
  });

  it('before the complete list a plan of one removal writes nothing', async () => {
    const w = world('ok', 'never', true, ['a=1']);
    const out = await writePlan(w.d, { add: [], remove: ['a=1'], replace: [], unchanged: 0 }, { early: true, now: NOW, refusals: w.refusals, cache: w.cache });
    expect(out).toMatchObject({ removed: 0, attempted: 0, calls: 0 });
    expect(w.d.calls).toEqual([]);
    expect(w.cache.get('a')).toEqual(['a=1']);
  });
});

import { describe, it, expect } from '@jest/globals';
import { ActualCache, planKeys, planReconcile } from '../../../src/reconcile/plan.js';
import { Reconciler } from '../../../src/reconcile/reconciler.js';
import { MapSink } from '../../support/refusal-sink.js';
import type { PlanOps } from '../../../src/reconcile/plan.js';
import { Metrics, METRIC } from '../../../src/basics/metrics.js';
import { FakeClock, flush } from '../../support/fake-clock.js';
import { FakeDriver, itemKey } from '../../support/fake-driver.js';
import { ItemSet } from '../../support/desired-set.js';
import { readMetric } from '../../support/agent-signals.js';

// Items are "key=value" strings on both sides: key = the part before '=', same = equal strings.
const ops: PlanOps<string, string> = {
  actualKey: (a) => a.split('=')[0],
  desiredKey: (d) => d.split('=')[0],
  same: (a, d) => a === d,
};
/** An item as a peer of its own, named by its key. */
const alone = (d: string) => [itemKey(d), [d]] as const;

const planCases: [string, string[], string[], { add: string[]; remove: string[]; replace: [string, string][]; unchanged: number }][] = [
  ['empty', [], [], { add: [], remove: [], replace: [], unchanged: 0 }],
  ['add to empty', [], ['a=1', 'b=1'], { add: ['a=1', 'b=1'], remove: [], replace: [], unchanged: 0 }],
  ['remove stale', ['a=1', 'x=9'], ['a=1'], { add: [], remove: ['x=9'], replace: [], unchanged: 1 }],
  ['remove all', ['a=1', 'b=2'], [], { add: [], remove: ['a=1', 'b=2'], replace: [], unchanged: 0 }],
  ['replace changed', ['a=1', 'b=1'], ['a=1', 'b=2'], { add: [], remove: [], replace: [['b=1', 'b=2']], unchanged: 1 }],
  ['duplicates, one same', ['a=2', 'a=1', 'a=1'], ['a=1'], { add: [], remove: ['a=2', 'a=1'], replace: [], unchanged: 1 }],
  ['duplicates, none same', ['a=2', 'a=3'], ['a=1'], { add: [], remove: ['a=3'], replace: [['a=2', 'a=1']], unchanged: 0 }],
  ['duplicate desired: first wins', [], ['a=1', 'a=2'], { add: ['a=1'], remove: [], replace: [], unchanged: 0 }],
  ['mixed', ['a=1', 'b=1', 'x=1'], ['a=1', 'b=2', 'c=1'], { add: ['c=1'], remove: ['x=1'], replace: [['b=1', 'b=2']], unchanged: 1 }],
];

describe('planReconcile', () => {
  it.each(planCases)('%s', (_n, actual, desired, want) => {
    const p = planReconcile(actual, desired, ops);
    expect({ ...p, replace: p.replace.map((r) => [r.from, r.to]) }).toEqual(want);
  });
});

// The incremental pass's plan: the same cases, each key named once (the actual side's keys first, as
// planReconcile lists them), against the cache and the desired items by key.
describe('planKeys', () => {
  it.each(planCases)('%s', (_n, actual, desired, want) => {
    const byKey = new Map<string, string>();
    for (const d of desired) if (!byKey.has(itemKey(d))) byKey.set(itemKey(d), d);
    const keys = new Set([...actual.map(itemKey), ...byKey.keys()]);
    const p = planKeys(keys, { desired: (k) => byKey.get(k) }, new ActualCache(actual, itemKey), ops);
    expect({ ...p, replace: p.replace.map((r) => [r.from, r.to]) }).toEqual(want);
  });

  it('plans only the keys it is given', () => {
    const p = planKeys(['b'], { desired: (k) => ({ a: 'a=2', b: 'b=2' })[k] }, new ActualCache(['a=1', 'b=1', 'x=1'], itemKey), ops);
    expect(p).toEqual({ add: [], remove: [], replace: [{ from: 'b=1', to: 'b=2' }], unchanged: 0 });
  });
});

function setup(over: { resyncMs?: number } = {}) {
  const clock = new FakeClock();
  const driver = new FakeDriver({ incremental: false });
  const metrics = new Metrics();
  const items = new ItemSet<string>((d) => driver.desiredKey(d));

  const r = new Reconciler({ sink: new MapSink(), desired: items.store, driver, clock, metrics, resyncMs: over.resyncMs ?? 10_000, backoffBaseMs: 250, backoffCapMs: 1000 });
  const ac = new AbortController();
  return { clock, driver, metrics, r, ac, items };
}

describe('Reconciler', () => {
  it('reads once and writes only the difference, removals before additions', async () => {
    const { driver, r, items } = setup();
    driver.actual = ['a=1', 'b=1', 'x=1'];
    items.updatePeers(['a=1', 'b=2', 'c=1'].map(alone));
    items.markListed();
    expect(await r.pass()).toEqual({ ok: true, added: 1, removed: 1, replaced: 1 });
    expect(driver.log).toEqual(['read', 'remove x=1,b=1', 'add c=1,b=2']);
    expect(driver.actual.sort()).toEqual(['a=1', 'b=2', 'c=1']);
    driver.log = [];
    expect(await r.pass()).toEqual({ ok: true, added: 0, removed: 0, replaced: 0 });
    expect(driver.log).toEqual(['read']);
    expect(r.status()).toMatchObject({ inSync: true, passes: 2, consecutiveFailures: 0 });
  });

  it('before the complete list a due resync waits for the list: the loop arms no timer again and again', async () => {
    // An early pass (additions while the Node list pages) starts the resync clock; a list that takes longer than
    // the resync interval (18 s at 50,000 Nodes, docs/performance.md) must not turn the idle loop into a spin of
    // zero-delay timers until it ends.
    const { clock, driver, r, ac, items } = setup({ resyncMs: 10_000 });
    let armed = 0;
    const after = clock.after.bind(clock);
    clock.after = (ms, fn) => {
      if (++armed > 100) ac.abort(); // a spin: stop it so the test fails rather than hangs
      return after(ms, fn);
    };
    items.updatePeers([alone('a=1')]);
    const done = r.run(ac.signal);
    await flush();
    expect(driver.actual).toEqual(['a=1']); // the early pass
    await clock.advance(30_000);
    expect(armed).toBeLessThanOrEqual(2);
    expect(ac.signal.aborted).toBe(false);
    items.markListed();
    await flush();
    expect(r.status().inSync).toBe(true); // the list's end ends the wait: the pass runs at once
    ac.abort();
    await done;
  });

  it('a failure stays dirty and retries with capped exponential backoff, then succeeds', async () => {
    const { clock, driver, metrics, r, ac, items } = setup();
    driver.failAdds = 4;
    items.updatePeers([alone('a=1')]);
    items.markListed();
    const done = r.run(ac.signal);
    await flush();
    expect(driver.log.filter((l) => l.startsWith('add')).length).toBe(1);
    expect(r.status()).toMatchObject({ consecutiveFailures: 1, inSync: false });
    expect(clock.pending()).toEqual([250]);
    await clock.advance(249);
    expect(driver.log.filter((l) => l.startsWith('add')).length).toBe(1);
    await clock.advance(1);
    expect(driver.log.filter((l) => l.startsWith('add')).length).toBe(2);
    expect(clock.pending()).toEqual([500]);
    await clock.advance(500);
    expect(clock.pending()).toEqual([1000]); // 1000 = cap
    await clock.advance(1000);
    expect(clock.pending()).toEqual([1000]);
    expect(r.status().inSync).toBe(false);
    await clock.advance(1000);
    expect(driver.actual).toEqual(['a=1']);
    expect(r.status().inSync).toBe(true);
    expect(r.status()).toMatchObject({ consecutiveFailures: 0, inSync: true, passes: 5, lastSuccessAt: clock.t });
    expect(await readMetric(metrics, METRIC.applyPasses, { result: 'error' })).toBe(4);
    expect(await readMetric(metrics, METRIC.applyPasses, { result: 'ok' })).toBe(1);
    expect(await readMetric(metrics, METRIC.lastApplySuccess)).toBe(Math.floor(clock.t / 1000));
    expect(clock.pending()).toEqual([10_000]); // idle: only the resync timer
    ac.abort();
    await done;
  });

  it('histograms: event-to-dataplane latency spans the retries; pass durations by result; status says what is programmed', async () => {
    const { clock, driver, metrics, r, ac, items } = setup();
    driver.failAdds = 2;
    const t0 = clock.t;
    items.updatePeers(['a=1', 'b=1'].map(alone));
    items.markListed();
    const done = r.run(ac.signal);
    await flush();
    expect(r.status()).toMatchObject({ lastPassOk: false, lastError: { at: t0, message: 'HNS said no' } });
    expect(r.isProgrammed('a')).toBe(false);
    await clock.advance(250 + 500); // two backoffs, then success
    expect(r.status()).toMatchObject({ lastPassOk: true, inSync: true });
    expect(r.isProgrammed('a') && r.isProgrammed('b')).toBe(true);
    const text = await metrics.render();
    // One change, applied 0.75 s later after two failed passes.
    expect(text).toContain('flannel_event_to_dataplane_seconds_count 1\n');
    expect(text).toContain('flannel_event_to_dataplane_seconds_sum 0.75\n');
    expect(text).toContain('flannel_apply_pass_duration_seconds_count{result="error"} 2\n');
    expect(text).toContain('flannel_apply_pass_duration_seconds_count{result="ok"} 1\n');
    ac.abort();
    await done;
  });

  it('the resync timer re-reads and repairs drift', async () => {
    const { clock, driver, r, ac, items } = setup({ resyncMs: 5000 });
    items.updatePeers(['a=1', 'b=1'].map(alone));
    items.markListed();
    const done = r.run(ac.signal);
    await flush();
    expect(r.status().inSync).toBe(true);
    driver.actual = ['b=1', 'zombie=1']; // someone deleted a=1 and added a stray item
    driver.log = [];
    await clock.advance(4999);
    expect(driver.log).toEqual([]);
    await clock.advance(1);
    expect(driver.log).toEqual(['read', 'remove zombie=1', 'add a=1']);
    expect(driver.actual.sort()).toEqual(['a=1', 'b=1']);
    ac.abort();
    await done;
  });

  it('a change during a pass triggers another pass', async () => {
    const { driver, r, ac, items } = setup();
    let release!: () => void;
    driver.gate = new Promise<void>((res) => (release = res));
    items.updatePeers([alone('a=1')]);
    items.markListed();
    const done = r.run(ac.signal);
    await flush();
    expect(driver.log).toEqual(['read']);
    items.updatePeers(['a=1', 'b=1'].map(alone));
    driver.gate = undefined;
    release();
    await flush();
    // The pass plans after its read, so it already writes b=1; the change still wakes a second pass (this
    // driver has no toActual, so every pass reads).
    expect(driver.log).toEqual(['read', 'add a=1,b=1', 'read']);
    expect(r.status()).toMatchObject({ inSync: true, passes: 2 });
    ac.abort();
    await done;
  });

  it('a change wakes the idle loop immediately; abort ends run()', async () => {
    const { clock, driver, r, ac, items } = setup();
    items.markListed();
    const done = r.run(ac.signal);
    await flush();
    expect(driver.log).toEqual(['read']);
    items.updatePeers([alone('a=1')]);
    await flush();
    expect(driver.log).toEqual(['read', 'read', 'add a=1']);
    ac.abort();
    await done;
    expect(clock.pending()).toEqual([]);
  });

  it('waitForFirstPass rejects when its signal aborts', async () => {
    const { r } = setup();
    const ac = new AbortController();
    const p = r.waitForFirstPass(ac.signal);
    ac.abort(new Error('stop'));
    await expect(p).rejects.toThrow('stop');
  });

  it('failed removal: plain additions still go ahead, replacements wait', async () => {
    const { driver, r, items } = setup();
    driver.actual = ['b=1', 'x=1'];
    driver.remove = async () => {
      throw new Error('remove failed');
    };
    items.updatePeers(['b=2', 'c=1'].map(alone));
    items.markListed();
    const res = await r.pass();
    expect(res).toMatchObject({ ok: false, added: 1, removed: 0, replaced: 0 });
    expect(driver.actual).toEqual(['b=1', 'x=1', 'c=1']);
    expect(r.status()).toMatchObject({ inSync: false, consecutiveFailures: 1 });
  });
});

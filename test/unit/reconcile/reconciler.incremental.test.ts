// The Reconciler's incremental apply (Felix felix/dataplane/windows/vxlan_mgr.go: record desired, mark
// dirty, apply later), refused items, the first-pass signal, early additions and the network-gone rebuild.
import { describe, expect, it } from '@jest/globals';
import { PeerProblems } from '../../../src/peers/problems.js';
import { Reconciler } from '../../../src/reconcile/reconciler.js';
import { FakeDriver, itemKey } from '../../support/fake-driver.js';
import { Metrics, METRIC } from '../../../src/basics/metrics.js';
import { FakeClock, flush } from '../../support/fake-clock.js';
import { logSink } from '../../support/log-sink.js';
import { ItemSet } from '../../support/desired-set.js';
import { readMetric } from '../../support/agent-signals.js';

/** An item as a peer of its own, named by its key. */
const alone = (d: string) => [itemKey(d), [d]] as const;

function setup(opts: { batch?: number; rebuild?: () => Promise<void>; owner?: string } = {}) {
  const clock = new FakeClock();
  const dp = new FakeDriver();
  dp.batch = opts.batch;
  const metrics = new Metrics();
  const sink = logSink();
  const items = new ItemSet<string>((d) => dp.desiredKey(d));
  // The network's sink: the peers' problems ledger, naming each refused item's peer as the store says.
  const problems = new PeerProblems({ driver: dp.name, clock, log: sink.log, metrics, owner: (k) => items.store.owner(k) });

  const r = new Reconciler({
    desired: items.store,
    sink: problems,
    driver: dp,
    clock,
    metrics,
    log: sink.log,
    resyncMs: 10_000,
    backoffBaseMs: 1000,
    backoffCapMs: 8000,
    rebuild: opts.rebuild,
    owner: opts.owner ?? 'peer', // the network's loop
  });
  const ac = new AbortController();
  /** The loop's status with the refused items as the ledger lists them (the network's status, src/backends/route-network.ts). */
  const status = () => ({ ...r.status(), refusedItems: problems.refusedItems() });
  return { clock, dp, metrics, r, ac, items, status, lines: sink.entries };
}

describe('incremental apply', () => {
  it('an event writes only its delta with no read; the resync period still reads and repairs drift', async () => {
    const { clock, dp, r, ac, items } = setup();
    dp.actual = ['a=1', 'b=1'];
    items.updatePeers(['a=1', 'b=1'].map(alone));
    items.markListed();
    const done = r.run(ac.signal);
    await flush();
    expect(dp.log).toEqual(['read']);
    dp.log = [];
    await clock.advance(3000);
    items.updatePeers([alone('c=1')]);
    await flush();
    items.updatePeers([['a', undefined], alone('b=2')]);
    await flush();
    expect(dp.log).toEqual(['add c=1', 'remove a=1,b=1', 'add b=2']);
    expect(dp.actual.sort()).toEqual(['b=2', 'c=1']);
    expect(r.status()).toMatchObject({ inSync: true });
    // Someone deletes c=1 behind our back: the cache does not know, the resync (10 s after the last read) does.
    dp.actual = ['b=2'];
    dp.log = [];
    expect(clock.pending()).toEqual([7000]);
    await clock.advance(7000);
    expect(dp.log).toEqual(['read', 'add c=1']);
    ac.abort();
    await done;
  });

  it('node events arm no timer: the resync timer stays armed across them and fires on time', async () => {
    const { clock, dp, r, ac, items } = setup();
    dp.actual = ['a=1'];
    items.updatePeers([alone('a=1')]);
    items.markListed();
    const done = r.run(ac.signal);
    await flush();
    const armed = clock.sleeps.length;
    for (let i = 0; i < 5; i++) {
      await clock.advance(1000);
      items.updatePeers([alone(`n${i}=1`)]);
      await flush();
    }
    expect(dp.log.filter((l) => l.startsWith('add'))).toHaveLength(5);
    expect(clock.sleeps.length).toBe(armed);
    expect(clock.pending()).toEqual([5000]);
    dp.log = [];
    await clock.advance(5000);
    expect(dp.log[0]).toBe('read');
    ac.abort();
    await done;
  });

  it('a burst of events coalesces into one batch', async () => {
    const { dp, r, ac, items } = setup({ batch: 100 });
    items.markListed();
    const done = r.run(ac.signal);
    await flush();
    dp.log = [];
    for (const k of ['a', 'b', 'c', 'd']) items.updatePeers([alone(`${k}=1`)]);
    await flush();
    expect(dp.log).toEqual(['add a=1,b=1,c=1,d=1']);
    ac.abort();
    await done;
  });

  it('after a failed write the next pass reads before writing again', async () => {
    const { clock, dp, r, ac, items } = setup();
    items.markListed();
    const done = r.run(ac.signal);
    await flush();
    dp.log = [];
    dp.failNext = 1;
    items.updatePeers([alone('a=1')]);
    await flush();
    expect(dp.log).toEqual(['add a=1']);
    await clock.advance(1000);
    expect(dp.log).toEqual(['add a=1', 'read', 'add a=1']);
    ac.abort();
    await done;
  });

  it('a rebind (the network rebuilt) is diffed against a fresh read', async () => {
    const { dp, r, ac, items } = setup();
    items.markListed();
    const done = r.run(ac.signal);
    await flush();
    dp.log = [];
    items.updatePeers([alone('a=1')]);
    r.rebind(dp);
    await flush();
    expect(dp.log).toEqual(['read', 'add a=1']);
    ac.abort();
    await done;
  });

  it('releases what incremental writes kept open after each full pass only', async () => {
    const { clock, dp, r, ac, items } = setup();
    items.markListed();
    const done = r.run(ac.signal);
    await flush();
    expect(dp.released).toBe(1);
    items.updatePeers([alone('a=1')]);
    await flush();
    expect(dp.released).toBe(1);
    await clock.advance(10_000); // the resync: a full pass
    expect(dp.released).toBe(2);
    ac.abort();
    await done;
  });
});

describe('pass log lines', () => {
  it('name the peers a pass added and removed: the first 10, then a count', async () => {
    const { r, lines, items } = setup();
    const peers = Array.from({ length: 12 }, (_, i) => [`node-${String(i).padStart(2, '0')}`, [`k${i}=1`]] as const);
    items.updatePeers(peers);
    items.markListed();
    await r.pass();
    const info = () => lines.filter((l) => l['level'] === 'info' && l['message'] === 'reconcile pass');
    expect(info().at(-1)).toMatchObject({ added: 12, addedPeers: 'node-00, node-01, node-02, node-03, node-04, node-05, node-06, node-07, node-08, node-09 (+2 more)' });
    expect(info().at(-1)).not.toHaveProperty('removedPeers');
    items.updatePeers([
      ['node-03', undefined],
      ['node-05', undefined],
      ['node-20', ['k20=1']],
    ]);
    await r.pass();
    // The second pass is incremental: routine, at debug.
    expect(lines.filter((l) => l['message'] === 'reconcile pass').at(-1)).toMatchObject({
      level: 'debug',
      added: 1,
      removed: 2,
      addedPeers: 'node-20',
      removedPeers: 'node-03, node-05',
    });
  });

  it('4,000 node events: each pass at debug, at info one summary a minute of what the passes did, none for a quiet minute', async () => {
    const { clock, r, ac, items, lines } = setup();
    items.markListed();
    const done = r.run(ac.signal);
    await flush();
    // 4,000 Node events over 200 s, ten every 500 ms, each ten one incremental pass (400 passes).
    for (let i = 0; i < 4000; i += 10) {
      items.updatePeers(Array.from({ length: 10 }, (_, j) => alone(`n${i + j}=1`)));
      await clock.advance(500);
    }
    await clock.advance(60_000); // the last minute's summary comes with the next pass (the resync)
    const info = lines.filter((l) => l['level'] === 'info');
    expect(info.filter((l) => l['message'] === 'reconcile pass')).toEqual([]);
    const summaries = info.filter((l) => l['message'] === 'reconcile summary');
    expect(summaries.length).toBeGreaterThanOrEqual(3);
    expect(summaries.length).toBeLessThanOrEqual(5); // 200 s of events: one line a minute
    expect(summaries.reduce((n, l) => n + Number(l['added']), 0)).toBe(4000);
    expect(summaries[0]).toMatchObject({ driver: 'fake', removed: 0, errors: 0 });
    expect(Number(summaries[0]['passes'])).toBeGreaterThan(100);
    expect(lines.filter((l) => l['message'] === 'reconcile pass' && l['level'] === 'debug').length).toBeGreaterThanOrEqual(400);
    // A quiet ten minutes (resync passes that change nothing): no summary.
    const before = summaries.length;
    await clock.advance(600_000);
    expect(lines.filter((l) => l['message'] === 'reconcile summary')).toHaveLength(before);
    ac.abort();
    await done;
  });
});

describe('refused items', () => {
  it('one refused item in a batch: the rest land, it is retried with backoff, counted, and logged once', async () => {
    const { clock, dp, r, ac, metrics, lines, items, status } = setup({ batch: 8 });
    dp.refused.add('e=1');
    items.updatePeers(['a=1', 'b=1', 'c=1', 'd=1', 'e=1', 'f=1', 'g=1', 'h=1'].map((d) => [`node-${d.split('=')[0]}`, [d]]));
    items.markListed();
    const first = r.waitForFirstPass();
    const done = r.run(ac.signal);
    await first;
    await flush();
    expect(dp.actual.sort()).toEqual(['a=1', 'b=1', 'c=1', 'd=1', 'f=1', 'g=1', 'h=1']);
    expect(status()).toMatchObject({ inSync: false, refusedItems: [expect.objectContaining({ prefix: 'e', node: 'node-e' })], consecutiveFailures: 0 });
    expect(r.status().lastSuccessAt).toBe(clock.t);
    expect(await readMetric(metrics, METRIC.refusedItems, { driver: 'fake' })).toBe(1);
    expect(await readMetric(metrics, METRIC.refusals, { driver: 'fake' })).toBe(1);
    const warned = lines.filter((l) => l['level'] === 'warn' && String(l['message']).includes('refused'));
    expect(warned).toEqual([expect.objectContaining({ node: 'node-e', prefix: 'e', hresult: 'refused' })]);
    const passLines = (level: string) => lines.filter((l) => l['level'] === level && l['message'] === 'reconcile pass');
    expect(passLines('info')).toEqual([expect.objectContaining({ added: 7, refused: 1, addedPeers: 'node-a, node-b, node-c, node-d, node-f, node-g, node-h' })]);

    // Retried on its own backoff (1 s, 2 s, 4 s ...), each time alone, and logged only once.
    dp.log = [];
    expect(clock.pending()).toEqual([1000]);
    await clock.advance(1000);
    expect(dp.log).toEqual(['read', 'add e=1']);
    await clock.advance(2000);
    expect(dp.log).toEqual(['read', 'add e=1', 'read', 'add e=1']);
    expect(await readMetric(metrics, METRIC.refusals, { driver: 'fake' })).toBe(3);
    expect(lines.filter((l) => l['level'] === 'warn' && String(l['message']).includes('refused')).length).toBe(1);
    // The retries answered alike are no news: their pass lines are debug, the info line stays the first one.
    expect(passLines('info')).toHaveLength(1);
    expect(passLines('debug')).toHaveLength(2);

    // Meanwhile other peers are written as usual.
    dp.log = [];
    items.updatePeers([alone('z=1')]);
    await flush();
    expect(dp.log).toEqual(['read', 'add z=1']);

    // HNS takes it at last.
    dp.refused.clear();
    await clock.advance(4000);
    expect(dp.actual).toContain('e=1');
    expect(status()).toMatchObject({ inSync: true, refusedItems: [] });
    expect(await readMetric(metrics, METRIC.refusedItems, { driver: 'fake' })).toBe(0);
    ac.abort();
    await done;
  });

  it('a refused removal keeps the replacement back; a peer that goes away is no longer retried', async () => {
    const { clock, dp, r, ac, items, status } = setup();
    dp.actual = ['a=1', 'b=1'];
    dp.refused.add('a=1');
    items.updatePeers(['a=2', 'b=1'].map(alone));
    items.markListed();
    const done = r.run(ac.signal);
    await flush();
    expect(dp.actual).toEqual(['a=1', 'b=1']);
    expect(dp.log).toEqual(['read', 'remove a=1']);
    expect(status().refusedItems.length).toBe(1);
    items.updatePeers([['a', undefined]]);
    dp.refused.clear();
    await flush();
    expect(dp.actual).toEqual(['b=1']);
    expect(status()).toMatchObject({ refusedItems: [], inSync: true });
    await clock.advance(60_000);
    ac.abort();
    await done;
  });

  // Found by test/property/incremental-apply.property.test.ts (refuse e=2, e=2 appears by drift, desire e=2):
  // the refused key's backoff ended, but no pass ever wrote it again (the dataplane already held it), so the
  // loop woke at once for it, forever, and never idled.
  it.each([
    ['incremental (cached read)', true],
    ['full passes only (no toActual)', false],
  ])(
    'a refused item that shows up in the dataplane by other means is no longer retried: %s',
    async (_name, cached) => {
      const { clock, dp, r, ac, lines, items, status } = setup();
      if (!cached) delete (dp as { toActual?: unknown }).toActual;
      items.markListed();
      const done = r.run(ac.signal);
      await flush();
      dp.refused.add('e=2');
      items.updatePeers([alone('e=2')]);
      await flush();
      expect(status().refusedItems.length).toBe(1);
      dp.actual.push('e=2'); // someone else wrote it (or HNS took it after all)
      await clock.advance(30_000);
      expect(status()).toMatchObject({ refusedItems: [], inSync: true });
      expect(lines).toContainEqual(expect.objectContaining({ message: expect.stringContaining('previously refused'), prefix: 'e' }));
      const reads = dp.log.filter((l) => l === 'read').length;
      await clock.advance(30_000);
      expect(dp.log.filter((l) => l === 'read').length - reads).toBeLessThanOrEqual(3); // resyncs only
      ac.abort();
      await done;
    },
    10_000,
  );

  it('the first pass counts as tried even when it fails as a whole (NetworkUnavailable does not wait for HNS)', async () => {
    const { dp, r, ac, items } = setup();
    dp.failNext = 1;
    items.updatePeers([alone('a=1')]);
    items.markListed();
    const first = r.waitForFirstPass();
    const done = r.run(ac.signal);
    await first;
    expect(r.status()).toMatchObject({ consecutiveFailures: 1, lastSuccessAt: undefined });
    ac.abort();
    await done;
  });
});

describe('health', () => {
  it('lastGoodAt: now while idle after a success; frozen at the last success while passes fail', async () => {
    const { clock, dp, r, ac, items } = setup();
    items.markListed();
    const done = r.run(ac.signal);
    await flush();
    const t0 = clock.t;
    await clock.advance(5000);
    expect(r.status().lastGoodAt).toBe(clock.t);
    dp.failNext = 100;
    items.updatePeers([alone('a=1')]);
    await clock.advance(20_000);
    expect(r.status()).toMatchObject({ lastSuccessAt: t0, lastGoodAt: t0 });
    dp.failNext = 0;
    await clock.advance(10_000);
    expect(r.status().lastGoodAt).toBe(clock.t);
    ac.abort();
    await done;
  });
});

describe('before the first complete list', () => {
  it('passes only add: nothing is removed or replaced, and nothing counts as in sync', async () => {
    const { dp, r, ac, items } = setup();
    dp.actual = ['a=1', 'stale=1'];
    let tried = false;
    void r.waitForFirstPass().then(() => (tried = true));
    const done = r.run(ac.signal);
    items.updatePeers(['a=2', 'b=1'].map(alone));
    await flush();
    expect(dp.log).toEqual(['read', 'add b=1']);
    items.updatePeers([alone('c=1')]);
    await flush();
    expect(dp.log).toEqual(['read', 'add b=1', 'add c=1']);
    expect(dp.actual.sort()).toEqual(['a=1', 'b=1', 'c=1', 'stale=1']);
    expect(r.status()).toMatchObject({ inSync: false });
    expect(tried).toBe(false);
    items.markListed();
    await flush();
    expect(dp.actual.sort()).toEqual(['a=2', 'b=1', 'c=1']);
    expect(tried).toBe(true);
    ac.abort();
    await done;
  });
});

describe('drift', () => {
  it('a resync that finds items it had programmed gone re-adds them and counts flannel_drift_repairs_total by kind; a new peer is no drift', async () => {
    const { clock, dp, r, ac, items, metrics, lines } = setup();
    items.updatePeers(['a=1', 'b=1'].map(alone));
    items.markListed();
    const done = r.run(ac.signal);
    await flush();
    expect(dp.actual.sort()).toEqual(['a=1', 'b=1']);
    items.updatePeers([alone('c=1')]);
    await flush();
    expect(await readMetric(metrics, METRIC.driftRepairs, { kind: 'policy' })).toBe(0);
    dp.actual = ['c=1']; // HNS restarted: the policies added after creation are gone
    await clock.advance(10_000);
    await flush();
    expect(dp.actual.sort()).toEqual(['a=1', 'b=1', 'c=1']);
    expect(await readMetric(metrics, METRIC.driftRepairs, { kind: 'policy' })).toBe(2);
    expect(lines.filter((l) => l['message'] === 'peer items programmed before are gone from the dataplane (HNS restarted, or someone removed them); re-adding them')).toEqual([
      expect.objectContaining({ level: 'warn', items: 2 }),
    ]);
    ac.abort();
    await done;
  });

  it("the log lines name the items' owners by the loop's noun (the NetworkPolicy controller's: pod)", async () => {
    const { clock, dp, r, ac, items, lines } = setup({ owner: 'pod' });
    items.updatePeers(['a=1', 'b=1'].map(alone));
    items.markListed();
    const done = r.run(ac.signal);
    await flush();
    expect(lines.filter((l) => l['addedPods'] === 'a, b')).toHaveLength(1);
    dp.actual = [];
    await clock.advance(10_000);
    await flush();
    expect(lines.filter((l) => l['message'] === 'pod items programmed before are gone from the dataplane (HNS restarted, or someone removed them); re-adding them')).toEqual([
      expect.objectContaining({ items: 2, pods: 'a, b' }),
    ]);
    dp.gone = true;
    items.updatePeers([alone('c=1')]);
    await flush();
    expect(lines.map((l) => l['message'])).toContain(
      "the HNS network is gone (HNS restarted, or it was deleted outside flanneld); recreating it with the same subnet and writing every pod's items again",
    );
    ac.abort();
    await done;
  });

  it('requestRebuild runs the rebuild hook before the next pass (HNS lost objects the driver does not read)', async () => {
    let rebuilds = 0;
    const { dp, r, ac, items } = setup({
      rebuild: () => {
        rebuilds++;
        return Promise.resolve();
      },
    });
    items.updatePeers([alone('a=1')]);
    items.markListed();
    const done = r.run(ac.signal);
    await flush();
    dp.log = [];
    r.requestRebuild();
    await flush();
    expect(rebuilds).toBe(1);
    expect(dp.log).toEqual(['read']);
    ac.abort();
    await done;
  });
});

describe('network gone', () => {
  it('a pass that finds the network gone calls the rebuild hook at once, then reads and reprograms everything', async () => {
    let rebuilds = 0;
    const { dp, r, ac, metrics, items } = setup({
      rebuild: async () => {
        rebuilds++;
        dp.gone = false;
        dp.actual = [];
      },
    });
    items.updatePeers(['a=1', 'b=1'].map(alone));
    items.markListed();
    const done = r.run(ac.signal);
    await flush();
    dp.gone = true;
    dp.log = [];
    items.updatePeers([alone('c=1')]);
    await flush();
    expect(rebuilds).toBe(1);
    expect(dp.log).toEqual(['add c=1', 'read', 'add a=1,b=1,c=1']);
    expect(r.status()).toMatchObject({ missing: false, inSync: true });
    expect(await readMetric(metrics, METRIC.networkRebuilds, { result: 'ok' })).toBe(1);
    ac.abort();
    await done;
  });

  it('without a rebuild hook, a gone network is a failure retried with backoff, and missing until a pass succeeds', async () => {
    const { clock, dp, r, ac, items } = setup();
    dp.gone = true;
    items.markListed();
    const done = r.run(ac.signal);
    await flush();
    expect(r.status()).toMatchObject({ missing: true, consecutiveFailures: 1 });
    dp.gone = false;
    await clock.advance(1000);
    expect(r.status()).toMatchObject({ missing: false, consecutiveFailures: 0 });
    ac.abort();
    await done;
  });

  it('while the rebuild fails the network stays missing and the rebuild is retried with backoff', async () => {
    let attempts = 0;
    const { clock, dp, r, ac, metrics, items } = setup({
      rebuild: async () => {
        if (++attempts < 3) throw new Error('HcnCreateNetwork failed');
        dp.gone = false;
      },
    });
    dp.gone = true;
    items.markListed();
    const done = r.run(ac.signal);
    await flush();
    expect(r.status().missing).toBe(true);
    expect(attempts).toBe(1);
    await clock.advance(2000);
    expect(attempts).toBe(2);
    expect(r.status().missing).toBe(true);
    await clock.advance(4000);
    expect(attempts).toBe(3);
    expect(r.status()).toMatchObject({ missing: false, consecutiveFailures: 0 });
    expect(await readMetric(metrics, METRIC.networkRebuilds, { result: 'error' })).toBe(2);
    ac.abort();
    await done;
  });
});

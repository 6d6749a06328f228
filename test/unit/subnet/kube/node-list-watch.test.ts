// The Node list-watch (src/subnet/kube/node-list-watch.ts, on src/kube/list-watch.ts) with its list and watch injected as functions,
// the way client-node's ListWatch (src/cache.ts) takes a listFn and a Watch: scripted list pages and
// watch streams, on virtual time. The wire shapes (paged list with metadata.continue, watch events
// ADDED/MODIFIED/DELETED/BOOKMARK/ERROR, 410 Gone as an ERROR Status) are the API server's:
// https://kubernetes.io/docs/reference/using-api/api-concepts/ (retrieving large results sets in
// chunks; efficient detection of changes; watch bookmarks).
import { describe, it, expect } from '@jest/globals';
import { METRIC, Metrics } from '../../../../src/basics/metrics.js';
import { linuxFlannelNode } from '../../../../src/demo/kube-fake/api-server.js';
import { silentLogger } from '../../../../src/basics/log.js';
import { PeerStore } from '../../../../src/peers/store.js';
import type { Lease, LeaseUpdate } from '../../../../src/subnet/lease.js';
import { annotationKeys } from '../../../../src/subnet/kube/annotations.js';
import { normalizeAnnotationPrefix } from '../../../../src/config/annotation-prefix.js';
import { LIST_NODES_BOUND, NodeListWatch } from '../../../../src/subnet/kube/node-list-watch.js';
import type { ListPageFn, WatchFn } from '../../../../src/kube/list-watch.js';
import { FakeClock, flush } from '../../../support/fake-clock.js';
import { logSink } from '../../../support/log-sink.js';
import { readMetric } from '../../../support/agent-signals.js';

const keys = annotationKeys(normalizeAnnotationPrefix('flannel.alpha.coreos.com'));

function node(name: string, octet: number, rv: string, podCIDR = `10.244.${octet}.0/24`): unknown {
  const n = linuxFlannelNode({ name, podCIDR, publicIP: `10.0.0.${octet}`, backendType: 'host-gw' });
  return { ...n, metadata: { ...n.metadata, resourceVersion: rv } };
}

type Event = [type: string, object: unknown];
interface WatchScript {
  events: Event[];
  /** How the stream ends: closed by the server, or failed. */
  end: 'close' | 'fail';
}
interface Script {
  /** Each list is its pages, each page its items; `rv` is the list's resourceVersion. */
  lists: { rv: string; pages: unknown[][] }[];
  watches: WatchScript[];
}

interface Result {
  updates: string[];
  raw: LeaseUpdate[];
  /** `list(continue)` and `watch(rv)` in call order. */
  calls: string[];
  timeouts: { timeoutSeconds: number; silenceMs: number }[];
  metrics: Metrics;
}

/** `peers:a=10.244.1.0/24,b=-` (`-`: no lease: deleted, or no usable lease now), `listed:a,b`. */
function summary(u: LeaseUpdate): string {
  if (u.kind === 'listed') return `listed:${[...u.keys].join(',')}`;
  return `peers:${u.peers.map((p) => `${p.key}=${p.lease?.subnet ?? '-'}`).join(',')}`;
}

async function run(script: Script): Promise<Result> {
  const clock = new FakeClock();
  const metrics = new Metrics();
  const ctrl = new AbortController();
  const calls: string[] = [];
  const timeouts: Result['timeouts'] = [];
  let list = script.lists.shift();
  const listFn: ListPageFn = (page) => {
    calls.push(`list(${page.continue ?? ''})`);
    if (!list) {
      ctrl.abort();
      return Promise.reject(new Error('script used up'));
    }
    const i = page.continue === undefined ? 0 : Number(page.continue);
    const last = i === list.pages.length - 1;
    const answer = { metadata: { resourceVersion: list.rv, ...(last ? {} : { continue: String(i + 1) }) }, items: list.pages[i] };
    if (last) list = script.lists.shift();
    return Promise.resolve(answer);
  };
  const watchFn: WatchFn = (query, onEvent, opts) => {
    calls.push(`watch(${query.resourceVersion})`);
    timeouts.push({ timeoutSeconds: query.timeoutSeconds, silenceMs: opts.silenceMs });
    const w = script.watches.shift();
    if (!w) {
      ctrl.abort();
      return Promise.reject(new Error('script used up'));
    }
    for (const [type, object] of w.events) onEvent(type, object);
    return w.end === 'close' ? Promise.resolve() : Promise.reject(new Error('connection reset'));
  };
  const lw = new NodeListWatch({
    list: listFn,
    watch: watchFn,
    keys,
    log: silentLogger(),
    metrics,
    clock,
    random: () => 0.5,
    listPageSize: 2,
  });
  const updates: string[] = [];
  const raw: LeaseUpdate[] = [];
  let done = false;
  void lw
    .run((u) => {
      raw.push(u);
      updates.push(summary(u));
    }, ctrl.signal)
    .finally(() => (done = true));
  for (let i = 0; !done && i < 50; i++) {
    await flush();
    const next = clock.pending()[0];
    if (next !== undefined) await clock.advance(next);
  }
  expect(done).toBe(true);
  return { updates, raw, calls, timeouts, metrics };
}

describe('NodeListWatch with injected list and watch', () => {
  it.each<[string, Script, string[], string[]]>([
    [
      'a paged first list: each page as it arrives, then the keys listed; the watch starts at the list version',
      { lists: [{ rv: '10', pages: [[node('a', 1, '3'), node('b', 2, '4')], [node('c', 3, '5')]] }], watches: [] },
      ['peers:a=10.244.1.0/24,b=10.244.2.0/24', 'peers:c=10.244.3.0/24', 'listed:a,b,c'],
      ['list()', 'list(1)', 'watch(10)'],
    ],
    [
      'watch events: an addition, a change flannel ignores, a removal',
      {
        lists: [{ rv: '10', pages: [[node('a', 1, '3')]] }],
        watches: [
          {
            events: [
              ['ADDED', node('b', 2, '11')],
              ['MODIFIED', node('a', 1, '12')],
              ['DELETED', node('a', 1, '13')],
            ],
            end: 'close',
          },
        ],
      },
      // The ignored change now carries a's unchanged lease: the peer store drops it (see the PeerStore case below).
      ['peers:a=10.244.1.0/24', 'listed:a', 'peers:b=10.244.2.0/24', 'peers:a=10.244.1.0/24', 'peers:a=-'],
      ['list()', 'watch(10)', 'watch(13)'],
    ],
    [
      'a changed podCIDR is a new lease for the node',
      { lists: [{ rv: '10', pages: [[node('a', 1, '3')]] }], watches: [{ events: [['MODIFIED', node('a', 1, '11', '10.244.9.0/24')]], end: 'close' }] },
      ['peers:a=10.244.1.0/24', 'listed:a', 'peers:a=10.244.9.0/24'],
      ['list()', 'watch(10)', 'watch(11)'],
    ],
    [
      'a bookmark moves the resume point and delivers nothing',
      { lists: [{ rv: '10', pages: [[node('a', 1, '3')]] }], watches: [{ events: [['BOOKMARK', { metadata: { resourceVersion: '20' } }]], end: 'close' }] },
      ['peers:a=10.244.1.0/24', 'listed:a'],
      ['list()', 'watch(10)', 'watch(20)'],
    ],
    [
      '410 Gone: relist, page by page again, listing the keys without the node deleted meanwhile',
      {
        lists: [
          { rv: '10', pages: [[node('a', 1, '3')], [node('b', 2, '4')]] },
          { rv: '30', pages: [[node('b', 2, '4')], [node('c', 3, '25')]] },
        ],
        watches: [{ events: [['ERROR', { kind: 'Status', code: 410, reason: 'Expired' }]], end: 'close' }],
      },
      ['peers:a=10.244.1.0/24', 'peers:b=10.244.2.0/24', 'listed:a,b', 'peers:b=10.244.2.0/24', 'peers:c=10.244.3.0/24', 'listed:b,c'],
      ['list()', 'list(1)', 'watch(10)', 'list()', 'list(1)', 'watch(30)'],
    ],
    [
      'a failed watch relists',
      {
        lists: [
          { rv: '10', pages: [[node('a', 1, '3')]] },
          { rv: '15', pages: [[node('a', 1, '3')]] },
        ],
        watches: [{ events: [['ADDED', node('b', 2, '11')]], end: 'fail' }],
      },
      ['peers:a=10.244.1.0/24', 'listed:a', 'peers:b=10.244.2.0/24', 'peers:a=10.244.1.0/24', 'listed:a'],
      ['list()', 'watch(10)', 'list()', 'watch(15)'],
    ],
  ])('%s', async (_name, script, updates, calls) => {
    const r = await run(script);
    expect(r.updates).toEqual(updates);
    expect(r.calls).toEqual(calls);
  });

  it('asks for a jittered server-side timeout and abandons a watch silent 10 s longer', async () => {
    const r = await run({ lists: [{ rv: '10', pages: [[]] }], watches: [] });
    expect(r.timeouts).toEqual([{ timeoutSeconds: 35, silenceMs: 45_000 }]);
  });

  it('skips and counts a Node that cannot be read; the rest of the list still counts', async () => {
    const r = await run({
      lists: [{ rv: '10', pages: [[node('a', 1, '3'), { metadata: { name: 42 } }]] }],
      watches: [
        {
          events: [
            ['ADDED', { metadata: {} }],
            ['ADDED', node('b', 2, '11')],
          ],
          end: 'close',
        },
      ],
    });
    expect(r.updates).toEqual(['peers:a=10.244.1.0/24', 'listed:a', 'peers:b=10.244.2.0/24']);
    expect(await readMetric(r.metrics, METRIC.kubeObjectsSkipped, { resource: 'nodes', where: 'list' })).toBe(1);
    expect(await readMetric(r.metrics, METRIC.kubeObjectsSkipped, { resource: 'nodes', where: 'watch' })).toBe(1);
  });

  it('a Node without a usable lease is delivered as such (no lease) and is not among the keys listed', async () => {
    const plain = { metadata: { name: 'linux-1', resourceVersion: '4' }, spec: { podCIDR: '10.244.7.0/24' } };
    const r = await run({ lists: [{ rv: '10', pages: [[node('a', 1, '3'), plain]] }], watches: [{ events: [['MODIFIED', plain]], end: 'close' }] });
    expect(r.updates).toEqual(['peers:a=10.244.1.0/24,linux-1=-', 'listed:a', 'peers:linux-1=-']);
  });

  it('a heartbeat (a MODIFIED with nothing flannel reads changed) changes no item in the peer store', async () => {
    const r = await run({
      lists: [{ rv: '10', pages: [[node('a', 1, '3'), node('b', 2, '4')]] }],
      watches: [
        {
          events: [
            ['MODIFIED', node('a', 1, '12')],
            ['MODIFIED', node('b', 2, '13', '10.244.9.0/24')],
          ],
          end: 'close',
        },
      ],
    });
    const store = new PeerStore<Lease>({
      ownSubnet: '10.244.0.0/24',
      validation: { network: '10.244.0.0/16', subnetLen: 24, backendType: 'host-gw' },
      items: { desiredFor: (l) => [l], desiredKey: (l) => l.key },
    });
    expect(r.updates.slice(0, 2)).toEqual(['peers:a=10.244.1.0/24,b=10.244.2.0/24', 'listed:a,b']);
    for (const u of r.raw.slice(0, 2)) store.apply(u);
    expect(store.takeDirty().sort()).toEqual(['a', 'b']);
    // The watch: a's heartbeat (its unchanged lease) marks nothing, b's new podCIDR marks b.
    const dirty = r.raw.slice(2).map((u) => {
      store.apply(u);
      return store.takeDirty();
    });
    expect(dirty).toEqual([[], ['b']]);
  });
});

// Never hammer the API server (docs/architecture.md, "Bounds on the list and watch loop"): servers that
// misbehave, counting their requests over 15 s of virtual time. Each request past REQUEST_CAP aborts the
// run, so a loop that spins without ever pausing (as this one did before its bounds) ends with a count
// over the ceiling instead of hanging.
type Hostile = 'watch-410' | 'watch-one-event' | 'repeated-continue' | 'endless-continue';
const REQUEST_CAP = 2000;

async function hostile(
  mode: Hostile,
  listPageSize = 2,
  random: () => number = () => 0,
): Promise<{ lists: number; watches: number; entries: Record<string, unknown>[]; lw: NodeListWatch; updates: string[] }> {
  const clock = new FakeClock();
  const ctrl = new AbortController();
  const counts = { lists: 0, watches: 0 };
  const capped = () => {
    if (counts.lists + counts.watches <= REQUEST_CAP) return false;
    ctrl.abort();
    return true;
  };
  let token = 0;
  const list: ListPageFn = (page) => {
    counts.lists++;
    if (capped()) return Promise.reject(new Error('request cap'));
    const cont = mode === 'repeated-continue' ? 'same-token' : mode === 'endless-continue' ? `t${++token}` : undefined;
    const items = page.continue === undefined ? [node('a', 1, '3')] : [];
    return Promise.resolve({ metadata: { resourceVersion: '10', ...(cont ? { continue: cont } : {}) }, items });
  };
  const watch: WatchFn = (_query, onEvent) => {
    counts.watches++;
    if (capped()) return Promise.reject(new Error('request cap'));
    if (mode === 'watch-410') onEvent('ERROR', { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' });
    else onEvent('MODIFIED', node('a', 1, String(100 + counts.watches)));
    return Promise.resolve();
  };
  const { log, entries } = logSink('info');
  const lw = new NodeListWatch({ list, watch, keys, log, metrics: new Metrics(), clock, random, listPageSize });
  const updates: string[] = [];
  const done = lw.run((u) => updates.push(summary(u)), ctrl.signal);
  await clock.advance(15_000);
  ctrl.abort();
  await done;
  return { ...counts, entries, lw, updates };
}

// The jitter at both extremes (as test/unit/basics/relist.test.ts does): the counts hold whatever it draws.
describe.each<[string, () => number]>([
  ['jitter 0', () => 0],
  ['jitter 0.999', () => 0.999],
])('NodeListWatch against a misbehaving API server, %s', (_jitter, random) => {
  it('a watch that always answers 410 Gone: a handful of lists and watches in 15 s, each relist after a logged pause', async () => {
    const r = await hostile('watch-410', 2, random);
    expect(r.watches).toBeGreaterThanOrEqual(2);
    expect(r.lists).toBeLessThanOrEqual(5);
    expect(r.watches).toBeLessThanOrEqual(5);
    const pauses = r.entries.filter((e) => String(e.message).includes('410 Gone') && typeof e.delayMs === 'number');
    expect(pauses.length).toBe(r.lists);
  });

  it('a watch closed after one event: a handful of watches in 15 s, each after a logged pause', async () => {
    const r = await hostile('watch-one-event', 2, random);
    expect(r.lists).toBe(1);
    expect(r.watches).toBeGreaterThanOrEqual(2);
    expect(r.watches).toBeLessThanOrEqual(5);
    expect(r.entries.filter((e) => e.message === 'node watch closed early by the server, backing off').length).toBe(r.watches);
  });

  it('a list that repeats its continue token fails each round with FLANNEL_ERR_KUBE_LIST (logged), never syncs, a handful of pages in 15 s', async () => {
    const r = await hostile('repeated-continue', 2, random);
    expect(r.lists).toBeLessThanOrEqual(10); // two pages per round
    expect(r.watches).toBe(0);
    expect(r.updates.some((u) => u.startsWith('listed'))).toBe(false); // never a complete list
    expect(r.updates.length).toBeGreaterThan(0); // each round's first page was delivered
    const failures = r.entries.filter((e) => e.message === 'listing nodes failed, backing off');
    expect(failures.length).toBe(r.lists / 2);
    expect(failures.every((e) => e.code === 'FLANNEL_ERR_KUBE_LIST' && e.level === 'warn')).toBe(true);
  });

  it('a list whose fresh continue tokens bring pages that do not advance fails on the first such page with FLANNEL_ERR_KUBE_LIST', async () => {
    const r = await hostile('endless-continue', 250, random);
    expect(r.updates.some((u) => u.startsWith('listed'))).toBe(false); // never a complete list
    expect(r.lists % 2).toBe(0); // two pages a round: the first, and the empty one that does not advance
    expect(r.lists / 2).toBeLessThanOrEqual(5);
    const failures = r.entries.filter((e) => e.message === 'listing nodes failed, backing off');
    expect(failures.length).toBe(r.lists / 2);
    expect(failures.every((e) => e.code === 'FLANNEL_ERR_KUBE_LIST')).toBe(true);
  });
});

// The list is bounded by what it keeps and how long it takes, not by its page count: a cluster of 20,000
// or 50,000 Nodes (small Node objects, the list function pages them as the apiserver does, in name order
// with an opaque token) lists completely; a page repeated under a fresh token is caught.
describe('NodeListWatch: large clusters and list loops', () => {
  const small = (i: number) => ({
    metadata: { name: `n${String(i).padStart(6, '0')}`, annotations: { [keys.kubeSubnetManager]: 'true', [keys.backendType]: 'host-gw', [keys.publicIP]: '10.0.0.1' } },
    spec: { podCIDR: `10.${(i >> 8) & 255}.${i & 255}.0/24` },
  });

  async function listAll(total: number, opts: { repeatPageAt?: number; pageSize?: number } = {}) {
    const clock = new FakeClock();
    const ctrl = new AbortController();
    const pageSize = opts.pageSize ?? 250;
    let pages = 0;
    const list: ListPageFn = (page) => {
      pages++;
      let start = page.continue === undefined ? 0 : Number((JSON.parse(Buffer.from(page.continue, 'base64').toString()) as { start: number }).start);
      // A proxy that serves one page again under a new token.
      if (opts.repeatPageAt !== undefined && pages === opts.repeatPageAt) start -= pageSize;
      const end = Math.min(total, start + pageSize);
      const items = [];
      for (let i = start; i < end; i++) items.push(small(i));
      const cont = end < total ? Buffer.from(JSON.stringify({ rv: 7, start: end, page: pages })).toString('base64') : undefined;
      return Promise.resolve({ metadata: { resourceVersion: '7', ...(cont ? { continue: cont } : {}) }, items });
    };
    const watch: WatchFn = () => {
      ctrl.abort();
      return Promise.resolve();
    };
    const { log, entries } = logSink('info');
    let listed: number | undefined;
    let peers = 0;
    const lw = new NodeListWatch({ list, watch, keys, log, metrics: new Metrics(), clock, random: () => 0, listPageSize: pageSize });
    const done = lw.run((u) => {
      if (u.kind === 'listed') listed = u.keys.size;
      else peers += u.peers.length;
      if (u.kind === 'listed' || pages > 1000) ctrl.abort();
    }, ctrl.signal);
    for (let i = 0; i < 20 && !ctrl.signal.aborted; i++) {
      await flush();
      const next = clock.pending()[0];
      if (next !== undefined) await clock.advance(next);
    }
    ctrl.abort();
    await done;
    return { listed, peers, pages, entries };
  }

  it.each([20_000, 20_001, 50_000])('%d Nodes: one complete list, every page, no failure', async (total) => {
    const r = await listAll(total);
    expect(r.listed).toBe(total);
    expect(r.peers).toBe(total);
    expect(r.pages).toBe(Math.ceil(total / 250));
    expect(r.entries.filter((e) => e.message === 'listing nodes failed, backing off')).toHaveLength(0);
    expect(r.entries.find((e) => e.message === 'node list synced')).toMatchObject({ nodes: total, pages: r.pages });
  });

  it('each page is asked for before the page before it is handed on (the server makes it meanwhile); a failed list abandons the page asked ahead', async () => {
    const order: string[] = [];
    const signals: AbortSignal[] = [];
    const ctrl = new AbortController();
    const list: ListPageFn = (page, signal) => {
      const i = Number(page.continue ?? 0);
      order.push(`ask ${i}`);
      signals.push(signal);
      // Page 2 is served again under a fresh token: the list fails there (it does not advance).
      const at = i === 3 ? 2 : i;
      return Promise.resolve({ metadata: { resourceVersion: '7', continue: String(i + 1) }, items: [small(at)] });
    };
    const watch: WatchFn = () => Promise.resolve();
    const { log, entries } = logSink('info');
    const lw = new NodeListWatch({ list, watch, keys, log, metrics: new Metrics(), clock: new FakeClock(), random: () => 0, listPageSize: 1 });
    const done = lw.run((u) => {
      if (u.kind === 'peers') order.push(`page ${u.peers[0].key.slice(1).replace(/^0+/, '') || '0'}`);
    }, ctrl.signal);
    for (let i = 0; i < 20 && !entries.some((e) => e.message === 'listing nodes failed, backing off'); i++) await flush();
    const abandoned = signals[4].aborted; // asked ahead of page 3, which failed the list
    ctrl.abort();
    await done;
    expect(order.slice(0, 8)).toEqual(['ask 0', 'ask 1', 'page 0', 'ask 2', 'page 1', 'ask 3', 'page 2', 'ask 4']);
    expect(abandoned).toBe(true);
  });

  it('a page served again under a fresh token (the list would loop): FLANNEL_ERR_KUBE_LIST on that page', async () => {
    const r = await listAll(2000, { repeatPageAt: 4 });
    const failure = r.entries.find((e) => e.message === 'listing nodes failed, backing off');
    expect(failure).toMatchObject({ code: 'FLANNEL_ERR_KUBE_LIST' });
    expect(String(failure!['error'])).toContain('page 4 of the Node list does not advance');
  });

  it('the bound is on Nodes kept, far above the largest supported cluster', () => {
    expect(LIST_NODES_BOUND).toBeGreaterThanOrEqual(40 * 5000);
  });
});

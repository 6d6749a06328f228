// Rejection spam: thousands of distinct peers each rejected (a cluster where every Linux node is still
// on VNI 1, or a hostile one) must not make the agent keep a copy of each rejected lease and each
// message. Counted, not timed: what the problems ledger (src/peers/problems.ts) keeps per node, and
// what the Event recorder (src/kube/event-recorder.ts) holds: its aggregation records stay at
// client-go's 10 messages (k8s.io/client-go tools/record/events_cache.go EventAggregate:
// `record.localKeys.PopAny()`, "do not grow our local key set any larger than max"), its caches at
// their LRU size, its queue at maxQueuedEvents (1000), and a message at 1 kB. The recorder's holdings are
// read as /metrics shows them (flannel_node_events_queued, flannel_node_event_cache_entries{cache}).
import { describe, expect, it } from '@jest/globals';
import { silentLogger } from '../../src/basics/log.js';
import { Metrics, METRIC } from '../../src/basics/metrics.js';
import { KubeEventRecorder, MAX_EVENT_MESSAGE } from '../../src/kube/event-recorder.js';
import type { KubeHttp } from '../../src/kube/http.js';
import { MAX_KEPT_MESSAGE, PeerProblems, peerRejectedEvent } from '../../src/peers/problems.js';
import { readMetric } from '../support/agent-signals.js';
import { FakeClock } from '../support/fake-clock.js';

const cacheEntries = (metrics: Metrics, cache: string) => readMetric(metrics, METRIC.nodeEventCacheEntries, { cache });

const PEERS = 3000;
/** A rejected lease as large as an annotation may be (1 kB of backend-data, node-list-watch.ts MAX_ANNOTATION_LENGTH). */
const bigSig = (i: number) => `vtep-mac-invalid||["10.244.${i >> 8}.${i & 255}.0/24","10.0.0.1","vxlan",${JSON.stringify({ VtepMAC: 'x'.repeat(1000) + i })}]`;
const bigMessage = (i: number) => `backend-data of node-${i} is not valid: ${'y'.repeat(3000)}`;

describe('what is kept per rejected peer', () => {
  it(`${PEERS} distinct rejected peers: the problems ledger keeps a bounded record each, not the lease or the whole message`, () => {
    const rl = new PeerProblems({ log: silentLogger(), metrics: new Metrics(), clock: new FakeClock() });
    for (let i = 0; i < PEERS; i++) rl.reject({ node: `node-${i}`, reason: 'vtep-mac-invalid', sig: bigSig(i), message: bigMessage(i), fields: {} });
    expect(rl.nodesKept).toBe(PEERS);
    // What each record holds, read through the ledger's own list: the key, a fixed-size digest and a cut message.
    const kept = rl.list().filter((p) => p.kind === 'rejected');
    expect(kept).toHaveLength(PEERS);
    const perNode = kept.reduce((n, p) => n + p.key.length + p.sig.length + p.message.length, 0) / PEERS;
    expect(perNode).toBeLessThanOrEqual(MAX_KEPT_MESSAGE + 44 + 16);
    // Still a new rejection when what is rejected changes, and not when it does not.
    expect(rl.reject({ node: 'node-1', reason: 'vtep-mac-invalid', sig: bigSig(1), message: 'm', fields: {} })).toBe(false);
    expect(rl.reject({ node: 'node-1', reason: 'vtep-mac-invalid', sig: bigSig(2), message: 'm', fields: {} })).toBe(true);
    expect(rl.rejection('node-2')?.message.length).toBeLessThanOrEqual(MAX_KEPT_MESSAGE);
  });

  it(`${PEERS} distinct PeerRejected Events: aggregation keeps 10 messages, every message at most 1 kB`, async () => {
    const clock = new FakeClock();
    const metrics = new Metrics();
    const sent: string[] = [];
    // Creates and patches both carry the message (a patch: count, lastTimestamp, message).
    const json = (req: { body: { message: string; metadata?: { name: string } } }) => {
      sent.push(req.body.message);
      return Promise.resolve({ metadata: req.body.metadata, count: 1 });
    };
    const r = new KubeEventRecorder({ http: { json } as unknown as KubeHttp, nodeName: 'win', clock, log: silentLogger(), metrics });
    for (let i = 0; i < PEERS; i++) {
      clock.t += 100;
      r.record(peerRejectedEvent(`node-${i}`, 'vtep-mac-invalid', bigMessage(i)));
    }
    await r.flush();
    expect(await cacheEntries(metrics, 'aggregate-messages')).toBeLessThanOrEqual(10);
    expect(await cacheEntries(metrics, 'dedup')).toBeLessThanOrEqual(10);
    expect(await cacheEntries(metrics, 'dedup')).toBeGreaterThan(0);
    expect(await readMetric(metrics, METRIC.nodeEventsDropped, { reason: 'rate-limit' })).toBe(PEERS - sent.length);
    expect(sent.length).toBeGreaterThan(0);
    expect(Math.max(...sent.map((m) => m.length))).toBeLessThanOrEqual(MAX_EVENT_MESSAGE);
    expect(sent.at(-1)).toMatch(/^\(combined from similar events\): /);
  });

  it('the recorder against an API server that never answers: its queue stays bounded', async () => {
    const clock = new FakeClock();
    const metrics = new Metrics();
    const http = { json: () => new Promise<never>(() => undefined) } as unknown as KubeHttp;
    const r = new KubeEventRecorder({ http, nodeName: 'win', clock, log: silentLogger(), metrics });
    for (let i = 0; i < PEERS; i++) {
      clock.t += 300_000; // a token each time: the spam filter lets every one through
      r.record(peerRejectedEvent(`node-${i}`, 'vtep-mac-invalid', bigMessage(i)));
    }
    // One write is in flight (never answered), the rest wait in the queue or were dropped.
    const queued = await readMetric(metrics, METRIC.nodeEventsQueued);
    expect(queued).toBeLessThanOrEqual(1000);
    expect(queued).toBeGreaterThan(0);
    expect(await readMetric(metrics, METRIC.nodeEventsDropped, { reason: 'queue-full' })).toBe(PEERS - 1 - queued);
    expect(await cacheEntries(metrics, 'aggregate-messages')).toBeLessThanOrEqual(10);
    expect(await cacheEntries(metrics, 'dedup')).toBeLessThanOrEqual(4096);
    expect(await cacheEntries(metrics, 'names')).toBeLessThanOrEqual(4096);
  });
});

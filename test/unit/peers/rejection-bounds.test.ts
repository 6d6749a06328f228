// Rejection spam: thousands of distinct peers each rejected (a cluster where every Linux node is still
// on VNI 1, or a hostile one) must not make the agent keep a copy of each rejected lease and each
// message. Counted, not timed: what the problems ledger (src/peers/problems.ts) keeps per node, and
// what the Event recorder (src/kube/event-recorder.ts) holds: its aggregation records stay at
// client-go's 10 messages (k8s.io/client-go tools/record/events_cache.go EventAggregate:
// `record.localKeys.PopAny()`, "do not grow our local key set any larger than max"), its caches at
// their LRU size, its queue at maxQueuedEvents (1000), and a message at 1 kB. The recorder's holdings are
// read as /metrics shows them (flannel_node_events_queued, flannel_node_event_cache_entries{cache}).
import { describe, expect, it } from '@jest/globals';
import { PeerStore } from '../../../src/peers/store.js';
import type { Lease } from '../../../src/subnet/lease.js';
import { silentLogger } from '../../../src/basics/log.js';
import { Metrics, METRIC } from '../../../src/basics/metrics.js';
import { KubeEventRecorder, MAX_EVENT_MESSAGE } from '../../../src/kube/event-recorder.js';
import type { KubeHttp } from '../../../src/kube/http.js';
import { MAX_KEPT_MESSAGE, PeerProblems, peerRejectedEvent } from '../../../src/peers/problems.js';
import { eventsSettled, readMetric } from '../../support/agent-signals.js';
import { FakeClock } from '../../support/fake-clock.js';
import { heapAfterGc } from '../../support/heap.js';

const cacheEntries = (metrics: Metrics, cache: string) => readMetric(metrics, METRIC.nodeEventCacheEntries, { cache });

/**
 * A hostile peer lease as the list-watch hands it over: every annotation as long as it may be (1 kB,
 * node-list-watch.ts MAX_ANNOTATION_LENGTH), each text its own (JSON.parse makes fresh strings, as
 * for a Node read from the API server).
 */
const hostileLease = (i: number): Lease =>
  JSON.parse(
    JSON.stringify({
      key: `node-${i}`,
      subnet: `10.${128 + (i >> 8)}.${i & 255}.0/24`,
      publicIP: `${'p'.repeat(1000)}${i}`,
      backendType: `${'t'.repeat(1000)}${i}`,
      backendData: { VNI: 4096, VtepMAC: `${'x'.repeat(1000)}${i}` },
    }),
  ) as Lease;

const PEERS = 3000;
/** A rejected lease as large as an annotation may be (1 kB of backend-data, node-list-watch.ts MAX_ANNOTATION_LENGTH). */
const bigSig = (i: number) => `vtep-mac-invalid||["10.244.${i >> 8}.${i & 255}.0/24","10.0.0.1","vxlan",${JSON.stringify({ VtepMAC: 'x'.repeat(1000) + i })}]`;
const bigMessage = (i: number) => `backend-data of node-${i} is not valid: ${'y'.repeat(3000)}`;

describe('what is kept per rejected peer', () => {
  it(`${PEERS} distinct rejected peers: the problems ledger keeps a bounded record each, not the lease or the whole message`, async () => {
    // Warmed up first, so the code compiled for the ledger (heap too) is not counted against the records.
    const warm = new PeerProblems({ log: silentLogger(), metrics: new Metrics(), clock: new FakeClock() });
    for (let i = 0; i < 300; i++) warm.reject({ node: `warm-${i}`, reason: 'vtep-mac-invalid', sig: bigSig(i), message: bigMessage(i), fields: {} });
    await new Promise((r) => setImmediate(r));
    const rl = new PeerProblems({ log: silentLogger(), metrics: new Metrics(), clock: new FakeClock() });
    const before = heapAfterGc();
    for (let i = 0; i < PEERS; i++) rl.reject({ node: `node-${i}`, reason: 'vtep-mac-invalid', sig: bigSig(i), message: bigMessage(i), fields: {} });
    await new Promise((r) => setImmediate(r)); // the log lines' stream writes (process.nextTick) are done
    const perNode = (heapAfterGc() - before) / PEERS;
    expect(rl.rejectedCount).toBe(PEERS);
    // What each node costs, in bytes (about 1.2 kB): the record with a fixed-size digest of the 1 kB signature
    // and the 3 kB message cut to MAX_KEPT_MESSAGE characters, and its log state; neither of them whole.
    expect(perNode).toBeLessThan(1536);
    // Still a new rejection when what is rejected changes, and not when it does not.
    expect(rl.reject({ node: 'node-1', reason: 'vtep-mac-invalid', sig: bigSig(1), message: 'm', fields: {} })).toBe(false);
    expect(rl.reject({ node: 'node-1', reason: 'vtep-mac-invalid', sig: bigSig(2), message: 'm', fields: {} })).toBe(true);
    expect(rl.rejection('node-2')?.message.length).toBeLessThanOrEqual(MAX_KEPT_MESSAGE);
  });

  // Counted in bytes, not only in records: what a rejected node costs must not grow with what its lease
  // holds. The store keeps a rejected node's subnet, its public IP cut short and a digest of its content
  // (for the change filter), not the lease; the ledger a cut message that holds no longer text alive.
  it(`${PEERS} hostile leases through the peer store: each rejected node keeps at most 1.5 kB of heap, whatever its lease holds`, async () => {
    const before = heapAfterGc();
    const metrics = new Metrics();
    const store = new PeerStore<string>({
      ownSubnet: '10.128.0.0/24',
      validation: { network: '10.128.0.0/9', subnetLen: 24, backendType: 'vxlan', vni: 4096 },
      items: { desiredFor: (l) => [l.subnet], desiredKey: (d) => d },
      log: silentLogger(),
      metrics,
      clock: new FakeClock(),
    });
    for (let i = 1; i <= PEERS; i++) store.apply({ kind: 'peers', peers: [{ key: `node-${i}`, lease: hostileLease(i) }] });
    store.apply({ kind: 'listed', keys: new Set(Array.from({ length: PEERS }, (_, i) => `node-${i + 1}`)) });
    await new Promise((r) => setImmediate(r)); // the log lines' stream writes (process.nextTick) are done
    const perNode = (heapAfterGc() - before) / PEERS;
    expect(store.size).toBe(0);
    expect(store.rejected()).toHaveLength(PEERS);
    expect(perNode).toBeLessThan(1536);
    expect(store.rejected()[0]).toMatchObject({ key: 'node-1', subnet: '10.128.1.0/24', reason: 'backend-type-mismatch', publicIP: expect.stringMatching(/^p{61}\.\.\.$/) });
    expect(store.rejected()[0].message.length).toBeLessThan(200);
    // Still the change filter: the same hostile lease again is no news, another one is.
    const counted = () => readMetric(metrics, METRIC.leasesRejected, { reason: 'backend-type-mismatch' });
    expect(await counted()).toBe(PEERS);
    store.apply({ kind: 'peers', peers: [{ key: 'node-1', lease: hostileLease(1) }] });
    expect(await counted()).toBe(PEERS);
    store.apply({ kind: 'peers', peers: [{ key: 'node-1', lease: { ...hostileLease(1), backendData: { VNI: 4096, VtepMAC: 'y' } } }] });
    expect(await counted()).toBe(PEERS + 1);
    // Fixed, it is accepted; deleted, nothing of it is kept.
    store.apply({
      kind: 'peers',
      peers: [{ key: 'node-1', lease: { ...hostileLease(1), publicIP: '10.0.0.1', backendType: 'vxlan', backendData: { VNI: 4096, VtepMAC: '0e:2a:0a:00:00:01' } } }],
    });
    expect(store.size).toBe(1);
    store.apply({ kind: 'peers', peers: [{ key: 'node-2', lease: undefined }] });
    expect(store.rejected()).toHaveLength(PEERS - 2);
    store.apply({ kind: 'peers', peers: [{ key: 'node-2', lease: hostileLease(2) }] }); // its lease again is news
    expect(await counted()).toBe(PEERS + 2);
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
    await eventsSettled(metrics, PEERS);
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

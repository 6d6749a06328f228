// Rejection spam: thousands of distinct peers each rejected (a cluster where every Linux node is still
// on VNI 1, or a hostile one) must not make the agent keep a copy of each rejected lease and each
// message. Counted, not timed: what the problems ledger (src/peers/problems.ts) keeps per node, and
// what the Event recorder (src/subnet/kube/event-recorder.ts) holds: its aggregation records stay at
// client-go's 10 messages (k8s.io/client-go tools/record/events_cache.go EventAggregate:
// `record.localKeys.PopAny()`, "do not grow our local key set any larger than max"), its caches at
// their LRU size, its queue at maxQueuedEvents (1000), and a message at 1 kB.
import { describe, expect, it } from '@jest/globals';
import { silentLogger } from '../../src/log.js';
import { Metrics } from '../../src/metrics.js';
import { EventCorrelator, KubeEventRecorder, MAX_EVENT_MESSAGE } from '../../src/subnet/kube/event-recorder.js';
import type { KubeHttp } from '../../src/subnet/kube/http.js';
import { MAX_KEPT_MESSAGE, PeerProblems, peerRejectedEvent } from '../../src/peers/problems.js';
import { FakeClock } from '../support/fake-clock.js';

const PEERS = 3000;
/** A rejected lease as large as an annotation may be (1 kB of backend-data, node-list-watch.ts MAX_ANNOTATION_LENGTH). */
const bigSig = (i: number) => `vtep-mac-invalid||["10.244.${i >> 8}.${i & 255}.0/24","10.0.0.1","vxlan",${JSON.stringify({ VtepMAC: 'x'.repeat(1000) + i })}]`;
const bigMessage = (i: number) => `backend-data of node-${i} is not valid: ${'y'.repeat(3000)}`;

describe('what is kept per rejected peer', () => {
  it(`${PEERS} distinct rejected peers: the problems ledger keeps a bounded record each, not the lease or the whole message`, () => {
    const rl = new PeerProblems({ log: silentLogger(), metrics: new Metrics(), clock: new FakeClock() });
    for (let i = 0; i < PEERS; i++) rl.reject({ node: `node-${i}`, reason: 'vtep-mac-invalid', sig: bigSig(i), message: bigMessage(i), fields: {} });
    expect(rl.nodesKept).toBe(PEERS);
    const perNode = rl.keptChars() / PEERS;
    expect(perNode).toBeLessThanOrEqual(MAX_KEPT_MESSAGE + 44 + 16 + 16);
    // Still a new rejection when what is rejected changes, and not when it does not.
    expect(rl.reject({ node: 'node-1', reason: 'vtep-mac-invalid', sig: bigSig(1), message: 'm', fields: {} })).toBe(false);
    expect(rl.reject({ node: 'node-1', reason: 'vtep-mac-invalid', sig: bigSig(2), message: 'm', fields: {} })).toBe(true);
    expect(rl.rejection('node-2')?.message.length).toBeLessThanOrEqual(MAX_KEPT_MESSAGE);
  });

  it(`${PEERS} distinct PeerRejected Events: aggregation keeps 10 messages, every message at most 1 kB`, () => {
    const clock = new FakeClock();
    const c = new EventCorrelator('win', () => clock.now());
    const sent: string[] = [];
    for (let i = 0; i < PEERS; i++) {
      clock.t += 100;
      const w = c.correlate(peerRejectedEvent(`node-${i}`, 'vtep-mac-invalid', bigMessage(i)));
      if (w) sent.push(w.event.message);
    }
    expect(c.retained().aggregateMessages).toBeLessThanOrEqual(10);
    expect(c.retained().seen).toBeLessThanOrEqual(10);
    expect(sent.length).toBeGreaterThan(0);
    expect(Math.max(...sent.map((m) => m.length))).toBeLessThanOrEqual(MAX_EVENT_MESSAGE);
    expect(sent.at(-1)).toMatch(/^\(combined from similar events\): /);
  });

  it('the recorder against an API server that never answers: its queue stays bounded', () => {
    const clock = new FakeClock();
    const http = { json: () => new Promise<never>(() => undefined) } as unknown as KubeHttp;
    const r = new KubeEventRecorder({ http, nodeName: 'win', clock, log: silentLogger() });
    for (let i = 0; i < PEERS; i++) {
      clock.t += 300_000; // a token each time: the spam filter lets every one through
      r.record(peerRejectedEvent(`node-${i}`, 'vtep-mac-invalid', bigMessage(i)));
    }
    const kept = r.retained();
    expect(kept.queued).toBeLessThanOrEqual(1000);
    expect(kept.aggregateMessages).toBeLessThanOrEqual(10);
    expect(kept.seen).toBeLessThanOrEqual(4096);
  });
});

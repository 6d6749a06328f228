// KubeEventRecorder's background writer (src/kube/event-recorder.ts): a write queued after drain()
// found the queue empty but before `draining` was cleared (the .finally() a microtask later) used to stay
// queued until some later record() came along; now the writer drains again. No internals are reached:
// the second event is recorded at every microtask offset from the first write's answer up to past the
// writer's end, so one of them falls in that gap whichever tick it is. What was written and dropped is
// read from the recorder's metrics (flannel_node_events_*, docs/metrics.md).
import { describe, expect, it } from '@jest/globals';
import { silentLogger } from '../../../src/basics/log.js';
import { Metrics, METRIC } from '../../../src/basics/metrics.js';
import type { NodeEvent } from '../../../src/node-events.js';
import { KubeEventRecorder } from '../../../src/kube/event-recorder.js';
import type { KubeHttp } from '../../../src/kube/http.js';
import { eventsSettled, readMetric } from '../../support/agent-signals.js';
import { FakeClock } from '../../support/fake-clock.js';

const warn = (message: string): NodeEvent => ({ type: 'Warning', reason: 'FlannelPeerRejected', message });

/** Run `f` `n` microtasks from now (0: now). */
function afterMicrotasks(n: number, f: () => void): void {
  if (n === 0) f();
  else void Promise.resolve().then(() => afterMicrotasks(n - 1, f));
}

/** More microtasks than the writer takes from an answer to its end (send, drain, finally): the gap was at 2. */
const SWEEP = 30;

describe('KubeEventRecorder', () => {
  it.each(Array.from({ length: SWEEP }, (_, k) => k))('writes an event recorded %i microtasks after the last answer (the writer ending)', async (k) => {
    const posted: string[] = [];
    const metrics = new Metrics();
    let recorded: () => void = () => undefined;
    const second = new Promise<void>((r) => (recorded = r));
    const http = {
      json: (req: { method: string; body: { message: string; metadata: { name: string } } }) => {
        const answer = Promise.resolve({ metadata: { name: req.body.metadata.name }, count: 1 });
        // The first reaction to the answer: runs before the writer's own `await` sees it.
        if (posted.length === 0) void answer.then(() => afterMicrotasks(k, () => (rec.record(warn('peer linux-2 rejected')), recorded())));
        posted.push(req.body.message);
        return answer;
      },
    } as unknown as KubeHttp;
    const rec = new KubeEventRecorder({ http, nodeName: 'win-1', clock: new FakeClock(), log: silentLogger(), metrics });
    rec.record(warn('peer linux-1 rejected'));
    await second;
    await eventsSettled(metrics, 2);
    expect(posted).toEqual(['peer linux-1 rejected', 'peer linux-2 rejected']);
    expect(await readMetric(metrics, METRIC.nodeEventsWritten)).toBe(2);
    expect(await readMetric(metrics, METRIC.nodeEventsQueued)).toBe(0);
    for (const reason of ['rate-limit', 'queue-full', 'write-failed']) expect(await readMetric(metrics, METRIC.nodeEventsDropped, { reason })).toBe(0);
  });
});

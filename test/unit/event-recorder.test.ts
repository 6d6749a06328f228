// KubeEventRecorder's background writer (src/subnet/kube/event-recorder.ts): a write queued after drain()
// found the queue empty but before `draining` was cleared (the .finally() a microtask later) used to stay
// queued until some later record() came along; now the writer drains again.
import { describe, expect, it } from '@jest/globals';
import { silentLogger } from '../../src/log.js';
import type { NodeEvent } from '../../src/node-events.js';
import { KubeEventRecorder } from '../../src/subnet/kube/event-recorder.js';
import type { KubeHttp } from '../../src/subnet/kube/http.js';
import { FakeClock } from '../support/fake-clock.js';

const warn = (message: string): NodeEvent => ({ type: 'Warning', reason: 'FlannelPeerRejected', message });

describe('KubeEventRecorder', () => {
  it('writes an event recorded between drain() finding the queue empty and `draining` being cleared', async () => {
    const posted: string[] = [];
    const http = {
      json: (req: { method: string; body: { message: string; metadata: { name: string } } }) => {
        posted.push(req.body.message);
        return Promise.resolve({ metadata: { name: req.body.metadata.name }, count: 1 });
      },
    } as unknown as KubeHttp;
    const rec = new KubeEventRecorder({ http, nodeName: 'win-1', clock: new FakeClock(), log: silentLogger() });
    // The first drain() settles; a reaction on it registered before the recorder's .finally() runs first:
    // exactly the gap.
    const internals = rec as unknown as { drain: () => Promise<void> };
    const drain = internals.drain.bind(rec);
    let inGap = false;
    internals.drain = () => {
      internals.drain = drain;
      const p = drain();
      void p.then(() => {
        inGap = true;
        rec.record(warn('peer linux-2 rejected'));
      });
      return p;
    };
    rec.record(warn('peer linux-1 rejected'));
    await rec.flush();
    expect(inGap).toBe(true);
    expect(posted).toEqual(['peer linux-1 rejected', 'peer linux-2 rejected']);
    expect({ written: rec.written, dropped: rec.dropped }).toEqual({ written: 2, dropped: 0 });
  });
});

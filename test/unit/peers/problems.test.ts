// The peers' problems ledger (src/peers/problems.ts): a rejected peer (validation) and a refused one (the
// dataplane refused its item) are one record with a kind, and go through one mechanism: news is logged
// at warn once, counted, raised as an Event and listed; a repeat is not news. The metric names and Event
// reasons are the ones docs/metrics.md and docs/compatibility.md name, unchanged.
import { describe, expect, it } from '@jest/globals';
import { HRESULT, hnsError } from '../../../src/hns/errors.js';
import { Metrics } from '../../../src/basics/metrics.js';
import { NODE_EVENT_REASON, type NodeEvent } from '../../../src/node-events.js';
import { PeerProblems } from '../../../src/peers/problems.js';
import { FakeClock } from '../../support/fake-clock.js';
import { logSink } from '../../support/log-sink.js';

describe('PeerProblems', () => {
  it('a rejected and a refused peer: one record each with its kind, one warn line, one Event, counted', async () => {
    const clock = new FakeClock();
    const metrics = new Metrics();
    const events: NodeEvent[] = [];
    const { log, entries } = logSink();
    const p = new PeerProblems({ driver: 'vxlan', clock, log, metrics, events: { record: (e) => events.push(e) }, owner: () => 'linux-3' });
    const rejection = { node: 'linux-2', reason: 'vni-mismatch' as const, sig: 'a', message: 'VNI 1 is not 4096', fields: { subnet: '10.244.2.0/24' } };
    expect(p.reject(rejection)).toBe(true);
    expect(p.reject(rejection)).toBe(false); // the same verdict again: no news
    const refusal = hnsError('HcnModifyNetwork', HRESULT.E_INVALIDARG, undefined, {});
    expect(p.refused('10.244.3.0/24', refusal, { attempts: 1, retryInMs: 250 })).toBe(true);
    expect(p.refused('10.244.3.0/24', refusal, { attempts: 2, retryInMs: 500 })).toBe(false); // a retry answered alike
    expect(p.rejection('linux-2')).toEqual({ reason: 'vni-mismatch', message: 'VNI 1 is not 4096' });
    expect(p.refusedItems()).toEqual([{ node: 'linux-3', prefix: '10.244.3.0/24', answer: '0x80070057', attempts: 2, since: clock.t, error: expect.any(String) }]);
    expect(events.map((e) => e.reason)).toEqual([NODE_EVENT_REASON.peerRejected, NODE_EVENT_REASON.peerRefused]);
    expect(entries.filter((e) => e.level === 'warn').map((e) => e.message)).toEqual([
      'peer lease rejected',
      'the dataplane refused one peer item; the other peers are programmed, this one is retried with backoff',
    ]);
    const text = await metrics.render();
    expect(text).toContain('flannel_leases_rejected_total{reason="vni-mismatch"} 1\n');
    expect(text).toContain('flannel_dataplane_refusals_total{driver="vxlan"} 2\n'); // every refused write counts
    expect(text).toContain('flannel_dataplane_refused_items{driver="vxlan"} 1\n');
    expect(entries.find((e) => e.level === 'warn' && String(e.message).startsWith('the dataplane refused'))).toMatchObject({ attempts: 1, retryInMs: 250 });
    p.accepted('linux-2');
    p.cleared('10.244.3.0/24', 'written');
    expect(p.rejection('linux-2')).toBeUndefined();
    expect(p.refusedItems()).toEqual([]);
    expect(entries.at(-1)).toMatchObject({ level: 'info', message: 'the dataplane accepted a previously refused item', node: 'linux-3', attempts: 3 });
    expect(p.reject(rejection)).toBe(true); // accepted in between: a later rejection is news again
  });
});

// Retry-After on a 429 or 5xx: client-go waits it before its own backoff, the larger of the two
// (k8s.io/client-go rest/request.go checkWait + retryAfterSeconds: whole seconds, 429 and 5xx only;
// rest/with_retry.go Before: `if r.retryAfter.Wait > delay { delay = r.retryAfter.Wait }`). Under API
// Priority and Fairness it is the API server's explicit instruction. Here: the header as read
// (retryAfterHeader), the start-up calls' retry (retryApiCall) and the Node list-watch's pause.
import { describe, expect, it } from '@jest/globals';
import { KubeApiError } from '../../../src/basics/errors.js';
import { normalizeAnnotationPrefix } from '../../../src/config/annotation-prefix.js';
import { Metrics } from '../../../src/basics/metrics.js';
import { annotationKeys } from '../../../src/subnet/kube/annotations.js';
import { retryApiCall } from '../../../src/kube/api-error.js';
import { retryAfterHeader } from '../../../src/kube/http.js';
import { NodeListWatch } from '../../../src/subnet/kube/node-list-watch.js';
import { FakeClock, flush } from '../../support/fake-clock.js';
import { logSink } from '../../support/log-sink.js';

const tooMany = (retryAfterMs?: number, status = 429) => new KubeApiError('FLANNEL_ERR_KUBE_API', `GET /api/v1/nodes: HTTP ${status}`, { status }, { body: '', retryAfterMs });

describe('retryAfterHeader', () => {
  it.each<[number, string | undefined, number | undefined]>([
    [429, '20', 20_000],
    [503, '3', 3000],
    [500, ' 7 ', 7000],
    [429, '0', undefined],
    [429, undefined, undefined],
    [429, 'Wed, 21 Oct 2015 07:28:00 GMT', undefined],
    [429, '1.5', undefined],
    [403, '20', undefined],
    [409, '20', undefined],
    [429, '86400', 600_000],
  ])('HTTP %d, Retry-After %p -> %p ms', (status, header, ms) => {
    expect(retryAfterHeader(status, header)).toBe(ms);
  });
});

describe('the waits', () => {
  it('retryApiCall (start-up patches): Retry-After 20 s before its own 10 ms backoff', async () => {
    const clock = new FakeClock({ instant: true, start: 0 });
    const { log, entries } = logSink();
    let calls = 0;
    const fn = () => (calls++ < 2 ? Promise.reject(tooMany(calls === 1 ? 20_000 : undefined)) : Promise.resolve('ok'));
    const out = await retryApiCall('patch', fn, { clock, log, backoffBaseMs: 10, backoffCapMs: 100, timeoutMs: 60_000 }, new AbortController().signal);
    expect(out).toBe('ok');
    expect(clock.sleeps).toEqual([20_000, 20]);
    expect(entries.map((e) => e['delayMs'])).toEqual([20_000, 20]);
  });

  it('the Node list: a 429 with Retry-After 20 s pauses 20 s, not the 0.8 s of the backoff', async () => {
    const clock = new FakeClock();
    const { log, entries } = logSink();
    const ctrl = new AbortController();
    let lists = 0;
    const lw = new NodeListWatch({
      list: () => {
        lists++;
        if (lists >= 3) ctrl.abort();
        return Promise.reject(tooMany(lists === 1 ? 20_000 : undefined, lists === 2 ? 503 : 429));
      },
      watch: () => Promise.reject(new Error('not reached')),
      keys: annotationKeys(normalizeAnnotationPrefix('flannel.alpha.coreos.com')),
      log,
      metrics: new Metrics(),
      clock,
      random: () => 0,
      listPageSize: 250,
    });
    const done = lw.run(() => undefined, ctrl.signal);
    for (let i = 0; i < 10 && !ctrl.signal.aborted; i++) {
      await flush();
      const next = clock.pending()[0];
      if (next !== undefined) await clock.advance(next);
    }
    await done;
    const pauses = entries.filter((e) => e['message'] === 'listing nodes failed, backing off').map((e) => e['delayMs']);
    expect(pauses).toEqual([20_000, 1600]);
  });
});

// --restart-service-on-hns-restart's wait (src/backends/service-restart.ts) on virtual time: the service is
// restarted once after an HNS restart, when every load balancer HNS held before it is back (HNS restores them:
// kubernetes#139519), or after the wait anyway (kube-proxy makes them again only when restarted:
// kubernetes#135802); never twice for one wait.
import { describe, expect, it } from '@jest/globals';
import { HostError } from '../../../src/basics/errors.js';
import { ServiceRestarter } from '../../../src/backends/service-restart.js';
import { FakeClock, flush } from '../../support/fake-clock.js';
import { logSink } from '../../support/log-sink.js';

function setup(opts: { waitMs?: number; restartFails?: boolean } = {}) {
  const clock = new FakeClock();
  const sink = logSink('debug');
  let ids: string[] | Error = [];
  const restarts: number[] = [];
  const r = new ServiceRestarter({
    service: 'kubeproxy',
    host: {
      restartService: async () => {
        if (opts.restartFails) throw new HostError('FLANNEL_ERR_SERVICE', 'ControlService failed with 5', { status: 5 });
        restarts.push(clock.now());
      },
    },
    loadBalancerIds: async () => {
      if (ids instanceof Error) throw ids;
      return ids;
    },
    clock,
    log: sink.log,
    waitMs: opts.waitMs ?? 120_000,
    pollMs: 10_000,
  });
  return { r, clock, sink, restarts, set: (v: string[] | Error) => (ids = v) };
}

const messages = (entries: Record<string, unknown>[]) => entries.map((e) => e['message']);

describe('ServiceRestarter', () => {
  it('waits for every load balancer HNS held before the restart, then restarts the service once', async () => {
    const { r, clock, sink, restarts, set } = setup();
    set(['A', 'B']);
    await r.remember();
    set([]); // the HNS restart: gone while HNS restores them
    const signal = new AbortController().signal;
    r.restartAfterHnsRestart(signal);
    await flush();
    expect(restarts).toEqual([]);
    expect(sink.entries.find((e) => e['message'] === "waiting for HNS to restore kube-proxy's load balancers before restarting the service")).toMatchObject({
      loadBalancers: 2,
      notRestored: 2,
    });
    set(['a']); // one back (HNS prints IDs upper case; compared without case)
    await clock.advance(10_000);
    expect(restarts).toEqual([]);
    set(['A', 'B', 'C']);
    await clock.advance(10_000);
    expect(restarts).toHaveLength(1);
    await r.idle();
    await clock.advance(600_000);
    expect(restarts).toHaveLength(1);
    expect(messages(sink.entries)).toContain('restarted service after the HNS restart');
  });

  it('restarts anyway when they are not back after the wait, saying how many HNS did not restore', async () => {
    const { r, clock, sink, restarts, set } = setup({ waitMs: 30_000 });
    set(['A', 'B']);
    await r.remember();
    set(['B']);
    r.restartAfterHnsRestart(new AbortController().signal);
    await clock.advance(29_000);
    expect(restarts).toEqual([]);
    await clock.advance(1_000);
    expect(restarts).toHaveLength(1);
    expect(sink.entries.find((e) => e['level'] === 'warn')).toMatchObject({ service: 'kubeproxy', loadBalancers: 2, notRestored: 1, waitedMs: 30_000 });
  });

  it('restarts at once when HNS held none, or when what it held is not known (the read failed)', async () => {
    for (const before of [[] as string[], new Error('HNS did not answer')]) {
      const { r, restarts, set, sink } = setup();
      set(before);
      await r.remember();
      r.restartAfterHnsRestart(new AbortController().signal);
      await r.idle();
      expect(restarts).toHaveLength(1);
      if (before instanceof Error) expect(sink.entries.find((e) => e['message'] === 'restarting service after the HNS restart')).toMatchObject({ why: expect.any(String) });
    }
  });

  it('an HNS restart seen while a wait runs joins it: one restart for both; the snapshot is not taken meanwhile', async () => {
    const { r, clock, restarts, set, sink } = setup();
    set(['A']);
    await r.remember();
    set([]);
    const signal = new AbortController().signal;
    r.restartAfterHnsRestart(signal);
    await flush();
    await r.remember(); // a check during the wait: ignored
    r.restartAfterHnsRestart(signal);
    set(['A']);
    await clock.advance(10_000);
    await r.idle();
    expect(restarts).toHaveLength(1);
    expect(messages(sink.entries)).toContain('HNS restarted again while waiting to restart the service; the restart under way stands for both');
  });

  it('a refused restart is logged with its code; the agent goes on', async () => {
    const { r, sink } = setup({ restartFails: true });
    await r.remember();
    r.restartAfterHnsRestart(new AbortController().signal);
    await r.idle();
    expect(sink.entries.find((e) => e['level'] === 'error')).toMatchObject({ service: 'kubeproxy', code: 'FLANNEL_ERR_SERVICE' });
  });

  it('the agent stopping ends the wait without a restart', async () => {
    const { r, restarts, set } = setup();
    set(['A']);
    await r.remember();
    set([]);
    const stop = new AbortController();
    r.restartAfterHnsRestart(stop.signal);
    await flush();
    stop.abort();
    await r.idle();
    expect(restarts).toEqual([]);
  });
});

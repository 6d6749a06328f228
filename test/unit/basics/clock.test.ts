// retryWithBackoff (src/basics/clock.ts), which the kube API calls and the etcd lease keeper share: capped
// exponential pauses on the injected clock, a deadline, and failures that are not worth a retry.
import { describe, expect, it } from '@jest/globals';
import { retryWithBackoff } from '../../../src/basics/clock.js';
import { FakeClock } from '../../support/fake-clock.js';

class Permanent extends Error {}

async function run(failures: (Error | undefined)[], timeoutMs = 10_000) {
  const clock = new FakeClock({ instant: true, start: 0 });
  const notes: [number, number][] = [];
  let calls = 0;
  const fn = () => {
    const f = failures[calls++];
    return f ? Promise.reject(f) : Promise.resolve(`ok after ${calls}`);
  };
  const o = {
    clock,
    backoffBaseMs: 100,
    backoffCapMs: 400,
    timeoutMs,
    retryable: (e: unknown) => !(e instanceof Permanent),
    onRetry: (_e: unknown, a: number, d: number) => notes.push([a, d]),
  };
  const out = await retryWithBackoff(fn, o, new AbortController().signal).then(
    (v) => v,
    (e: Error) => e,
  );
  return { out, notes, calls };
}

describe('retryWithBackoff', () => {
  it('pauses 100, 200, 400, 400 (capped) and returns the first success', async () => {
    const r = await run([new Error('a'), new Error('b'), new Error('c'), new Error('d')]);
    expect(r.out).toBe('ok after 5');
    expect(r.notes).toEqual([
      [1, 100],
      [2, 200],
      [3, 400],
      [4, 400],
    ]);
  });

  it('throws a failure that is not retryable at once, as it is', async () => {
    const p = new Permanent('no');
    const r = await run([new Error('a'), p]);
    expect(r.out).toBe(p);
    expect(r.calls).toBe(2);
  });

  it('throws the failure that comes after the deadline', async () => {
    const last = new Error('late');
    const r = await run([new Error('a'), new Error('b'), last], 250);
    expect(r.out).toBe(last);
    expect(r.notes).toEqual([
      [1, 100],
      [2, 200],
    ]);
  });

  it('an aborted signal stops it with the abort reason', async () => {
    const ac = new AbortController();
    const reason = new Error('stop');
    ac.abort(reason);
    const o = { clock: new FakeClock(), backoffBaseMs: 1, backoffCapMs: 1, timeoutMs: 1, retryable: () => true, onRetry: () => undefined };
    await expect(retryWithBackoff(() => Promise.resolve(1), o, ac.signal)).rejects.toBe(reason);
  });
});

// The relist-with-backoff loop (src/subnet/relist.ts) on virtual time: scripted list and watch results,
// and the times at which the loop lists and watches again. The shape follows client-go's
// Reflector.ListAndWatch (tools/cache/reflector.go): list, watch from the list's version, relist on
// 410 Gone / compaction, back off (capped exponential) on failures and start afresh after a good run.
import { describe, it, expect } from '@jest/globals';
import { METRIC, Metrics } from '../../src/health/metrics.js';
import { runRelistLoop } from '../../src/subnet/relist.js';
import type { ListWatchSource, RetryNote, WatchEnd } from '../../src/subnet/relist.js';
import { FakeClock, flush } from '../support/fake-clock.js';

/** 'fail', 'fatal', or the snapshot's single item. */
type ListStep = string;
type WatchStep = WatchEnd<string> | 'throw';

interface Run {
  /** `list@t` / `watch(cursor)@t`, t in ms of virtual time since the start. */
  calls: string[];
  retries: RetryNote[];
  reconnects: number;
  /** How the loop ended; 'pending' when it never settled (a hang). */
  result: 'resolved' | 'rejected' | 'pending';
}

const BASE = 100;
const CAP = 500;

/** Run the loop over scripted steps; once the script is used up the source aborts the loop. */
async function run(lists: ListStep[], watches: WatchStep[]): Promise<Run> {
  const clock = new FakeClock();
  const t0 = clock.now();
  const metrics = new Metrics();
  const ctrl = new AbortController();
  const calls: string[] = [];
  const retries: RetryNote[] = [];
  const source: ListWatchSource<string> = {
    list: () => {
      calls.push(`list@${clock.now() - t0}`);
      const step = lists.shift();
      if (step === undefined) {
        ctrl.abort();
        return Promise.reject(new Error('aborted'));
      }
      if (step === 'fail' || step === 'fatal') return Promise.reject(new Error(step));
      return Promise.resolve(step);
    },
    watch: (cursor) => {
      calls.push(`watch(${cursor})@${clock.now() - t0}`);
      const step = watches.shift();
      if (step === 'throw') return Promise.reject(new Error('revoked'));
      if (step === undefined) {
        ctrl.abort();
        return Promise.resolve({ kind: 'aborted' });
      }
      return Promise.resolve(step);
    },
    onRetry: (note) => retries.push(note),
    isFatal: (err) => err instanceof Error && err.message === 'fatal',
  };
  let result: Run['result'] | undefined;
  runRelistLoop(source, { clock, metrics, backoffBaseMs: BASE, backoffCapMs: CAP }, ctrl.signal).then(
    () => (result = 'resolved'),
    () => (result = 'rejected'),
  );
  for (let i = 0; result === undefined && i < 100; i++) {
    await flush();
    const next = clock.pending()[0];
    if (next !== undefined) await clock.advance(next);
  }
  return { calls, retries, reconnects: metrics.get(METRIC.apiReconnects), result: result ?? 'pending' };
}

const broken = (cursor?: string, progressed = false, err?: unknown): WatchEnd<string> => ({ kind: 'broken', cursor, progressed, err });

describe('runRelistLoop', () => {
  it.each<[string, ListStep[], WatchStep[], string[], number[]]>([
    ['list failures back off 100, 200, then the watch starts from the list', ['fail', 'fail', 'r1'], [], ['list@0', 'list@100', 'list@300', 'watch(r1)@300'], [100, 200]],
    [
      'list failures are capped at 500',
      ['fail', 'fail', 'fail', 'fail', 'fail', 'r1'],
      [],
      ['list@0', 'list@100', 'list@300', 'list@700', 'list@1200', 'list@1700', 'watch(r1)@1700'],
      [100, 200, 400, 500, 500],
    ],
    [
      'a clean close resumes at once from its cursor',
      ['r1'],
      [
        { kind: 'closed', cursor: 'r5' },
        { kind: 'closed', cursor: 'r9' },
      ],
      ['list@0', 'watch(r1)@0', 'watch(r5)@0', 'watch(r9)@0'],
      [],
    ],
    ['a stale watch relists at once', ['r1', 'r7'], [{ kind: 'stale' }], ['list@0', 'watch(r1)@0', 'list@0', 'watch(r7)@0'], []],
    [
      'a broken watch without a cursor relists after a backoff',
      ['r1', 'r2'],
      [broken(undefined, false, new Error('reset'))],
      ['list@0', 'watch(r1)@0', 'list@100', 'watch(r2)@100'],
      [100],
    ],
    [
      'broken watches with a cursor resume, backing off 100, 200, 400',
      ['r1'],
      [broken('r2'), broken('r3'), broken('r4')],
      ['list@0', 'watch(r1)@0', 'watch(r2)@100', 'watch(r3)@300', 'watch(r4)@700'],
      [100, 200, 400],
    ],
    [
      'a broken watch that had progressed starts the backoff afresh',
      ['r1'],
      [broken('r2'), broken('r3'), broken('r4', true)],
      ['list@0', 'watch(r1)@0', 'watch(r2)@100', 'watch(r3)@300', 'watch(r4)@400'],
      [100, 200, 100],
    ],
    [
      'a successful relist starts the backoff afresh',
      ['fail', 'fail', 'r1', 'r2'],
      [broken()],
      ['list@0', 'list@100', 'list@300', 'watch(r1)@300', 'list@400', 'watch(r2)@400'],
      [100, 200, 100],
    ],
  ])('%s', async (_name, lists, watches, calls, delays) => {
    const r = await run(lists, watches);
    expect(r.calls).toEqual(calls);
    expect(r.retries.map((n) => n.delayMs)).toEqual(delays);
    expect(r.result).toBe('resolved');
  });

  it('counts every list after the first as a reconnect', async () => {
    const r = await run(['r1', 'fail', 'r2', 'r3'], [{ kind: 'stale' }, broken(undefined, false, new Error('x'))]);
    expect(r.reconnects).toBe(2);
  });

  it('tells each retry its phase, error and attempt (from 1 since the last good run)', async () => {
    const err = new Error('reset');
    const r = await run(['fail', 'r1'], [broken('r1', false, err), broken('r1')]);
    expect(r.retries.map(({ phase, attempt, err: e }) => [phase, attempt, e === undefined ? '-' : (e as Error).message])).toEqual([
      ['list', 1, 'fail'],
      ['watch', 1, 'reset'],
      ['watch', 2, '-'],
    ]);
  });

  it.each<[string, ListStep[], WatchStep[], string[]]>([
    ['a fatal list error ends the loop with that error', ['fail', 'fatal'], [], ['list@0', 'list@100']],
    ['a throwing watch ends the loop with its error', ['r1'], ['throw'], ['list@0', 'watch(r1)@0']],
  ])('%s', async (_name, lists, watches, calls) => {
    const r = await run(lists, watches);
    expect(r.calls).toEqual(calls);
    expect(r.result).toBe('rejected');
  });

  it('an abort during a backoff pause ends the loop at once', async () => {
    const clock = new FakeClock();
    const ctrl = new AbortController();
    let lists = 0;
    const source: ListWatchSource<string> = {
      list: () => {
        lists++;
        return Promise.reject(new Error('down'));
      },
      watch: () => Promise.resolve({ kind: 'aborted' }),
    };
    const done = runRelistLoop(source, { clock, metrics: new Metrics(), backoffBaseMs: BASE, backoffCapMs: CAP }, ctrl.signal);
    await flush();
    expect(clock.pending()).toEqual([100]);
    ctrl.abort();
    await expect(done).resolves.toBeUndefined();
    expect(lists).toBe(1);
    expect(clock.pending()).toEqual([]);
  });
});

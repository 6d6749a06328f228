// The agent's parts (src/agent/part.ts) and the readiness loop over them (src/agent/readiness.ts): each part's
// problems count in the parts' order, the first is what the Node is told (the NetworkUnavailable reason, as
// the kube subnet manager's reportPodNetwork writes it), a part mends what it can before the Node hears of it,
// each part is told of its own changes, and a part whose run rejects is reported so the agent stops. The
// integration tests drive the real parts (cluster-mismatch, readiness-condition, cni-replay, net-conf-change).
import { describe, expect, it } from '@jest/globals';
import { runParts, type AgentPart, type PodNetworkProblem } from '../../../src/agent/part.js';
import { PodNetworkReadiness } from '../../../src/agent/readiness.js';
import { silentLogger } from '../../../src/basics/log.js';
import type { SubnetManager } from '../../../src/subnet/lease.js';
import { FakeClock, flush } from '../../support/fake-clock.js';

const problem = (check: string, detail = `${check} detail`): PodNetworkProblem => ({ check, reason: `${check}-reason`, detail, fix: `${check} fix` });

/** A part whose problems the test sets, recording what it was told. */
class FakePart implements AgentPart {
  current: PodNetworkProblem[] = [];
  changes: { now: string[]; before: string[] | undefined }[] = [];
  repairs = 0;
  constructor(
    readonly name: string,
    private readonly mend?: () => void,
  ) {}
  problems(): PodNetworkProblem[] {
    return this.current;
  }
  changed(now: readonly PodNetworkProblem[], before: readonly PodNetworkProblem[] | undefined): void {
    this.changes.push({ now: now.map((p) => p.check), before: before?.map((p) => p.check) });
  }
  get repair(): AgentPart['repair'] {
    return this.mend
      ? () => {
          this.repairs++;
          this.mend!();
          return Promise.resolve();
        }
      : undefined;
  }
}

/** What the subnet manager was told, in order (undefined: nothing keeps the node from serving pods). */
function reporter() {
  const told: ({ reason: string; message: string } | undefined)[] = [];
  const manager = { reportPodNetwork: (p: { reason: string; message: string } | undefined) => Promise.resolve(void told.push(p)) } as unknown as SubnetManager;
  return { told, manager };
}

describe('the readiness loop over the parts', () => {
  it('tells the Node the first problem in the parts order, each part its own changes, and wakes at once when a read differs', async () => {
    const clock = new FakeClock();
    const [a, b] = [new FakePart('a'), new FakePart('b')];
    const { told, manager } = reporter();
    const readiness = new PodNetworkReadiness({ parts: [a, b], subnetManager: manager, clock, log: silentLogger(), intervalMs: 3_600_000 });
    a.current = [problem('a1')];
    b.current = [problem('b1')];
    const ac = new AbortController();
    const running = readiness.run(ac.signal);
    await flush();
    expect(told).toEqual([{ reason: 'a1-reason', message: 'a1 detail; fix: a1 fix' }]);
    expect(a.changes).toEqual([{ now: ['a1'], before: undefined }]);
    expect(b.changes).toEqual([{ now: ['b1'], before: undefined }]);
    expect(readiness.problems().map((p) => p.check)).toEqual(['a1', 'b1']);
    expect(readiness.byPart().map((ps) => ps.map((p) => p.check))).toEqual([['a1'], ['b1']]);

    // The interval is an hour away: only the read that sees the change wakes the loop.
    a.current = [];
    expect(readiness.problems().map((p) => p.check)).toEqual(['b1']);
    await flush();
    expect(told.at(-1)).toEqual({ reason: 'b1-reason', message: 'b1 detail; fix: b1 fix' });
    expect(a.changes.at(-1)).toEqual({ now: [], before: ['a1'] });
    expect(b.changes).toHaveLength(2);

    // Nothing new: the Node is not told again.
    await readiness.checked();
    expect(told).toHaveLength(2);
    b.current = [];
    await readiness.checked();
    expect(told.at(-1)).toBeUndefined();
    expect(told).toHaveLength(3);
    ac.abort();
    await running;
  });

  it('a part mends what it can before the Node is told, and its problems are read again', async () => {
    const clock = new FakeClock();
    const mending = new FakePart('mending', () => (mending.current = []));
    const other = new FakePart('other');
    const { told, manager } = reporter();
    const readiness = new PodNetworkReadiness({ parts: [mending, other], subnetManager: manager, clock, log: silentLogger() });
    mending.current = [problem('fixable')];
    const ac = new AbortController();
    const running = readiness.run(ac.signal);
    await readiness.checked();
    expect(mending.repairs).toBe(1);
    expect(told).toEqual([undefined]);
    expect(mending.changes).toEqual([{ now: [], before: undefined }]);
    // A part without problems is not asked to mend.
    other.current = [problem('other')];
    await readiness.checked();
    expect(mending.repairs).toBe(1);
    expect(told.at(-1)?.reason).toBe('other-reason');
    ac.abort();
    await running;
  });

  it('checks again every interval', async () => {
    const clock = new FakeClock();
    const part = new FakePart('p');
    const { told, manager } = reporter();
    const readiness = new PodNetworkReadiness({ parts: [part], subnetManager: manager, clock, log: silentLogger(), intervalMs: 10_000 });
    const ac = new AbortController();
    const running = readiness.run(ac.signal);
    await flush();
    part.current = [problem('later')]; // no read rings: the next interval finds it
    await clock.advance(10_000);
    await flush();
    expect(told).toEqual([undefined, { reason: 'later-reason', message: 'later detail; fix: later fix' }]);
    ac.abort();
    await running;
  });
});

describe('runParts', () => {
  it('runs every part until the signal aborts; the first that rejects is reported, a part without run is fine', async () => {
    const ac = new AbortController();
    const failures: [string, unknown][] = [];
    let stopped = 0;
    const waits: AgentPart = {
      name: 'waits',
      run: (signal) => new Promise((resolve) => signal.addEventListener('abort', () => resolve(void stopped++), { once: true })),
    };
    const boom = new Error('boom');
    const fails: AgentPart = { name: 'fails', run: () => Promise.reject(boom) };
    const passive: AgentPart = { name: 'passive', problems: () => [] };
    const done = runParts([waits, fails, passive], ac.signal, (part, err) => {
      failures.push([part.name, err]);
      ac.abort(err);
    });
    await flush();
    expect(failures).toEqual([['fails', boom]]);
    await done;
    expect(stopped).toBe(1);
  });

  it('a part that rejects because the run ended is not a failure', async () => {
    const ac = new AbortController();
    const failures: string[] = [];
    const part: AgentPart = { name: 'aborts', run: (signal) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted')), { once: true })) };
    const done = runParts([part], ac.signal, (p) => failures.push(p.name));
    ac.abort();
    await done;
    expect(failures).toEqual([]);
  });
});

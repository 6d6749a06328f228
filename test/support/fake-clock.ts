// The one fake Clock for tests. By default sleeps resolve only when the test advances time (loop tests
// on virtual time); with `instant` every sleep returns at once and moves time forward by what it asked.
// Either way each sleep is recorded in `sleeps`. An instant clock wins every race against real work, so
// never give it to something that races a sleep against a call (src/hns/timed.ts times every call out).
import { sleepAfter, type Clock } from '../../src/basics/clock.js';

export async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise<void>((r) => setImmediate(r));
}

export class FakeClock implements Clock {
  t: number;
  timers: { at: number; resolve: () => void }[] = [];
  /** Every sleep asked for, in ms, in order. */
  readonly sleeps: number[] = [];
  private readonly instant: boolean;

  constructor(opts: { instant?: boolean; start?: number } = {}) {
    this.instant = opts.instant === true;
    this.t = opts.start ?? 1_000_000;
  }
  now(): number {
    return this.t;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (!this.instant) return sleepAfter((m, fn) => this.after(m, fn), ms, signal);
    this.sleeps.push(ms);
    this.t += ms;
    return Promise.resolve();
  }
  after(ms: number, fn: () => void): () => void {
    this.sleeps.push(ms);
    if (this.instant) {
      this.t += ms;
      let live = true;
      queueMicrotask(() => live && fn());
      return () => (live = false);
    }
    const timer = { at: this.t + ms, resolve: fn };
    this.timers.push(timer);
    return () => (this.timers = this.timers.filter((x) => x !== timer));
  }
  /** Pending sleeps, as ms from now, ascending. */
  pending(): number[] {
    return this.timers.map((x) => x.at - this.t).sort((a, b) => a - b);
  }
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      await flush();
      const due = this.timers.filter((x) => x.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.t = due.at;
      this.timers = this.timers.filter((x) => x !== due);
      due.resolve();
    }
    this.t = end;
    await flush();
  }
}

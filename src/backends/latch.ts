// The reconcile loop's two wake-ups. A Latch is a one-shot event: `open()` once, and every `wait()`
// (before or after) resolves; a wait rejects when its own signal aborts first. An Alarm is a sleep on the
// injected clock that a change cuts short.
import { abortReason } from '../clock.js';
import type { Clock } from '../clock.js';

export class Latch {
  private isOpen = false;
  private readonly waiters: (() => void)[] = [];

  open(): void {
    if (this.isOpen) return;
    this.isOpen = true;
    for (const w of this.waiters.splice(0)) w();
  }

  wait(signal?: AbortSignal): Promise<void> {
    if (this.isOpen) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(abortReason(signal));
      const done = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        const i = this.waiters.indexOf(done);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(abortReason(signal!));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(done);
    });
  }
}

/** A sleep that `ring()` cuts short (a change arrived while the reconcile loop idles). */
export class Alarm {
  private ringer: (() => void) | undefined;

  ring(): void {
    this.ringer?.();
  }

  /** Sleep `ms` on `clock`; true when rung first, false when the time passed or `signal` aborted. */
  async sleep(clock: Clock, ms: number, signal: AbortSignal): Promise<boolean> {
    const ac = new AbortController();
    const onAbort = () => ac.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    let rung = false;
    this.ringer = () => {
      rung = true;
      ac.abort();
    };
    try {
      await clock.sleep(ms, ac.signal);
    } catch {
      // rung or aborted
    } finally {
      this.ringer = undefined;
      signal.removeEventListener('abort', onAbort);
    }
    return rung;
  }
}

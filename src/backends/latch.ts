// A one-shot event: `open()` once, and every `wait()` (before or after) resolves; a wait rejects when
// its own signal aborts first.
export class Latch {
  private isOpen = false;
  private readonly waiters: (() => void)[] = [];

  get opened(): boolean {
    return this.isOpen;
  }

  open(): void {
    if (this.isOpen) return;
    this.isOpen = true;
    for (const w of this.waiters.splice(0)) w();
  }

  wait(signal?: AbortSignal): Promise<void> {
    if (this.isOpen) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const done = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        const i = this.waiters.indexOf(done);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(signal!.reason);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(done);
    });
  }
}

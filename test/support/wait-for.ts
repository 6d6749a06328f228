// Polling for a condition on real timers: the integration, fault and Windows tests drive real processes
// and servers, whose progress no fake clock controls. (Loop tests on virtual time use ./fake-clock.ts.)

export interface WaitOptions {
  /** Give up after this long (default 10 s). */
  timeoutMs?: number;
  /** Time between checks (default 25 ms). */
  intervalMs?: number;
  /** Checked every round: a message to fail with at once (e.g. the process under test has exited). */
  failIf?: () => string | undefined;
  /** Appended to the timeout message (e.g. the tail of a process's log). */
  detail?: () => string;
}

/**
 * Resolve with the first value of `fn` that is neither undefined nor false. A throw from `fn` counts as
 * "not yet" and is quoted in the timeout message. `opts` may be just the timeout in ms.
 */
export async function waitFor<T>(fn: () => T | undefined | false | Promise<T | undefined | false>, what: string, opts: number | WaitOptions = {}): Promise<T> {
  const { timeoutMs = 10_000, intervalMs = 25, failIf, detail } = typeof opts === 'number' ? { timeoutMs: opts } : opts;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
    } catch (err) {
      last = err;
    }
    const failure = failIf?.();
    if (failure !== undefined) throw new Error(failure);
    if (Date.now() > deadline) {
      const cause = last === undefined ? '' : `: ${last instanceof Error ? last.message : JSON.stringify(last)}`;
      throw new Error(`timed out waiting for ${what}${cause}${detail ? `; ${detail()}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

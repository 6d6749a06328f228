// The clock seam: time and sleeping enter through this interface so tests can drive them.

export interface Clock {
  now(): number;
  /** Resolve after `ms`, or reject with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(abortReason(signal));
      const t = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(t);
        reject(abortReason(signal!));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

/**
 * The reason an aborted signal carries. It is an Error: every abort in this code passes one, and a bare
 * abort() gives a DOMException (AbortError).
 */
export function abortReason(signal: AbortSignal): Error {
  return signal.reason as Error;
}

/** Capped exponential backoff: base * 2^attempt, at most cap. */
export function backoffDelay(attempt: number, baseMs: number, capMs: number): number {
  return Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30));
}

/** Sleep that resolves `false` instead of rejecting when `signal` aborts (true after a full sleep). */
export async function pause(clock: Clock, ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await clock.sleep(ms, signal);
    return true;
  } catch {
    return false;
  }
}

// The clock seam: time, sleeping and randomness enter through these so tests can drive them. The only
// module that touches Date.now, setTimeout and Math.random; everything else takes a Clock or a Random.

export interface Clock {
  now(): number;
  /** Resolve after `ms`, or reject with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * Call `fn` after `ms` unless the returned cancel runs first: a timer that a settled call stops without
   * an AbortController (whose abort dispatches an Event; a profile of 10 node events a second found that
   * per HNS call).
   */
  after(ms: number, fn: () => void): () => void;
}

/** A sleep built on `after`: the one shape every Clock's sleep takes. */
export function sleepAfter(after: Clock['after'], ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(abortReason(signal));
    const onAbort = () => {
      cancel();
      reject(abortReason(signal!));
    };
    const cancel = after(ms, () => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

const after = (ms: number, fn: () => void): (() => void) => {
  const t = setTimeout(fn, ms);
  return () => clearTimeout(t);
};

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) => sleepAfter(after, ms, signal),
  after,
};

/**
 * The reason an aborted signal carries. It is an Error: every abort in this code passes one, and a bare
 * abort() gives a DOMException (AbortError).
 */
export function abortReason(signal: AbortSignal): Error {
  return signal.reason as Error;
}

/**
 * Resolves once `holds()` is true: asked now, and again each time the owner of `checks` runs them (after
 * every change of what `holds` reads); rejects with the abort reason once `signal` aborts first.
 */
export function whenHolds(checks: Set<() => void>, holds: () => boolean, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = () => {
      checks.delete(check);
      signal.removeEventListener('abort', aborted);
    };
    const check = () => {
      if (!holds()) return;
      done();
      resolve();
    };
    const aborted = () => {
      done();
      reject(abortReason(signal));
    };
    if (signal.aborted) return reject(abortReason(signal));
    signal.addEventListener('abort', aborted, { once: true });
    checks.add(check);
    check();
  });
}

/** What `p` settles with, or a rejection with the abort reason once `signal` aborts first (`p` goes on). */
export function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const aborted = () => reject(abortReason(signal));
    if (signal.aborted) return aborted();
    signal.addEventListener('abort', aborted, { once: true });
    const done = () => signal.removeEventListener('abort', aborted);
    p.then(
      (v) => {
        done();
        resolve(v);
      },
      (err: unknown) => {
        done();
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}

/** Capped exponential backoff: base * 2^attempt, at most cap. */
export function backoffDelay(attempt: number, baseMs: number, capMs: number): number {
  return Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30));
}

export interface RetryOptions {
  clock: Clock;
  backoffBaseMs: number;
  backoffCapMs: number;
  /** How long failures are retried; the first failure after that is thrown. */
  timeoutMs: number;
  /** Whether a failure is worth another try (others are thrown at once). */
  retryable: (err: unknown) => boolean;
  /** Before each pause: the failure, the attempt it was (from 1) and the pause. */
  onRetry: (err: unknown, attempt: number, delayMs: number) => void;
  /** The least pause a failure asks for (an HTTP Retry-After), when longer than the backoff. */
  minDelayMs?: (err: unknown) => number | undefined;
}

/**
 * Run `fn` until it succeeds, pausing with capped exponential backoff after each retryable failure, for at
 * most `timeoutMs`. Throws the failure it stops on as it is (the caller wraps it), or the abort reason.
 */
export async function retryWithBackoff<T>(fn: () => Promise<T>, o: RetryOptions, signal: AbortSignal): Promise<T> {
  const deadline = o.clock.now() + o.timeoutMs;
  for (let attempt = 0; ; attempt++) {
    signal.throwIfAborted();
    try {
      return await fn();
    } catch (err) {
      if (signal.aborted || !o.retryable(err) || o.clock.now() >= deadline) throw err;
      const delayMs = Math.max(backoffDelay(attempt, o.backoffBaseMs, o.backoffCapMs), o.minDelayMs?.(err) ?? 0);
      o.onRetry(err, attempt + 1, delayMs);
      await o.clock.sleep(delayMs, signal);
    }
  }
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

/** A [0,1) random source (IDs, MACs, jitter), injected like the clock so tests can make it deterministic. */
export type Random = () => number;

export const systemRandom: Random = () => Math.random();

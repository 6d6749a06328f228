// How the kube subnet manager reads an API failure: its HTTP status, a short description (the Status
// message, never headers), whether it is worth retrying (client-go's rule: 408/409/429/5xx and network
// errors are transient), the bounded retry of one call, and the KubeError a caller finally sees.
// flannel pkg/subnet/kube/kube.go gets the retries from client-go and wraps errors with fmt.Errorf.
import { retryWithBackoff } from '../../clock.js';
import type { Clock } from '../../clock.js';
import { errorMessage, KubeError } from '../../errors.js';
import type { Logger } from '../../log.js';

/** HTTP status of a KubeApiError (or any error carrying one), undefined for network errors and timeouts. */
export function httpStatus(err: unknown): number | undefined {
  if (err === null || typeof err !== 'object') return undefined;
  const e = err as { statusCode?: unknown };
  return typeof e.statusCode === 'number' ? e.statusCode : undefined;
}

/** A short description of an API failure: HTTP status and the Status message, never headers. */
export function describe(err: unknown): string {
  const code = httpStatus(err);
  if (code === undefined) return errorMessage(err);
  const body = (err as { body?: unknown }).body;
  let msg: string | undefined;
  if (typeof body === 'string') {
    try {
      const parsed = JSON.parse(body) as { message?: unknown };
      if (typeof parsed?.message === 'string') msg = parsed.message;
    } catch {
      msg = body.slice(0, 200);
    }
  }
  return `HTTP ${code}${msg ? `: ${msg}` : ''}`;
}

export function retryable(err: unknown): boolean {
  const code = httpStatus(err);
  if (code === undefined) return true; // connection refused/reset, timeouts: the API blip
  return code === 408 || code === 409 || code === 429 || code >= 500;
}

export function kubeError(what: string, err: unknown): KubeError {
  const status = httpStatus(err);
  const hint =
    status === 401
      ? '; check the credentials in the kubeconfig / service account token'
      : status === 403
        ? "; check flannel's ClusterRole (nodes: get, list, watch; nodes/status: patch; pods: get)"
        : '';
  return new KubeError('FLANNEL_ERR_KUBE', `${what}: ${describe(err)}${hint}`, { status }, { cause: err });
}

export interface ApiRetryOptions {
  clock: Clock;
  log: Logger;
  backoffBaseMs: number;
  backoffCapMs: number;
  /** How long a failing call is retried before its error is returned. */
  timeoutMs: number;
}

/** Retry `fn` on retryable failures with capped backoff, for at most `timeoutMs`; then kubeError(what). */
export async function retryApiCall<T>(what: string, fn: () => Promise<T>, o: ApiRetryOptions, signal: AbortSignal): Promise<T> {
  const onRetry = (err: unknown, attempt: number, delayMs: number) => o.log.warn('kubernetes API call failed, retrying', { call: what, attempt, delayMs, error: describe(err) });
  try {
    return await retryWithBackoff(fn, { ...o, retryable, onRetry }, signal);
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    throw kubeError(what, err);
  }
}

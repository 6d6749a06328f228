// The fake API server's answers: JSON bodies and the `Status` object a failing request gets, with the
// HTTP code and `reason` the apiserver pairs (k8s.io/apimachinery pkg/apis/meta/v1 types.go StatusReason,
// pkg/api/errors). client-go and client-node read `reason` and `code`, not the message.
import type { ServerResponse } from 'node:http';

export type JsonObject = Record<string, unknown>;

const REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  409: 'Conflict',
  410: 'Expired',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/** A Kubernetes `Status` failure object. */
export function kubeStatus(code: number, reason: string, message: string, details?: JsonObject): JsonObject {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, ...(details ? { details } : {}), code };
}

export function sendJson(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/** Answer with a `Status` failure whose reason matches `code`. */
export function sendStatus(res: ServerResponse, code: number, message: string, details?: JsonObject): void {
  sendJson(res, code, kubeStatus(code, REASONS[code] ?? 'Unknown', message, details));
}

/** Start a chunked 200 (a watch stream, or a request held open after its headers). */
export function startStream(res: ServerResponse): void {
  res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
}

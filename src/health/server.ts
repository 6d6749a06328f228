// /healthz, /readyz and /metrics. Mirrors flannel main.go mustRunHealthz (same paths, status codes and
// bodies, no trailing newline) plus a Prometheus text endpoint. Unlike upstream (whose /healthz always
// answers 200), /healthz answers 503 once the reconcile loop is wedged (`isHealthy`), so the kubelet's
// liveness probe or the service manager restarts the agent.
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { HostError } from '../basics/errors.js';
import type { Metrics } from '../basics/metrics.js';
import { serveStatus, type StatusReport } from './status.js';
import type { Logger } from '../basics/log.js';
import { silentLogger } from '../basics/log.js';

export interface HealthServerOptions {
  /** Listen address (`--healthz-ip`). */
  host: string;
  /** Listen port (`--healthz-port`); 0 lets the OS pick a free one (the agent starts no server for 0). */
  port: number;
  metrics: Metrics;
  /** True once subnet.env has been written (and while the HNS network exists). */
  isReady: () => boolean;
  /** Why the agent is not ready although it runs (the CNI config check), for the 503 body. */
  notReadyReason?: () => string | undefined;
  /** The agent's account of this node for GET /status (./status.ts). */
  status?: () => Promise<StatusReport>;
  /** False once no reconcile pass has succeeded for --healthz-stale-after; default always true. */
  isHealthy?: () => boolean;
  log?: Logger;
}

export interface HealthServer {
  /** The port actually listened on. */
  port: number;
  close(): Promise<void>;
}

const HEALTHZ_BODY = 'flanneld is running';
const READY_BODY = 'flanneld is ready';
const NOT_READY_BODY = 'flanneld is not ready yet';
export const UNHEALTHY_BODY = 'flanneld is not healthy: no reconcile pass succeeded within --healthz-stale-after';
const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/**
 * The 503 body of /readyz: upstream's text, then one line per reason (`<check>: <what>; fix: <step>`) when the
 * agent gives any. The header names no cause: a reason may be the CNI config (pods cannot start), a cluster
 * configuration mismatch (pods start but reach no peer), a contested subnet or the own Node gone.
 */
function notReadyBody(reason: string | undefined): string {
  return reason ? `flanneld is not ready\n${reason}` : NOT_READY_BODY;
}

function send(res: ServerResponse, status: number, body: string, contentType = 'text/plain; charset=utf-8', head = false): void {
  res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) });
  res.end(head ? undefined : body);
}

/**
 * The listen failure as FLANNEL_ERR_HEALTHZ_LISTEN naming the flag to change (Node's own error is a bare
 * `listen EADDRINUSE: address already in use 0.0.0.0:10277`). errno values: libuv's, as net.Server reports them.
 */
export function listenError(err: Error, host: string, port: number): HostError {
  const errno = (err as NodeJS.ErrnoException).code ?? '';
  const where = `--healthz-ip ${host} --healthz-port ${port}`;
  const message =
    errno === 'EADDRINUSE'
      ? `cannot serve /healthz on ${where}: the port is in use (another flanneld, or another program, listens there); stop it or pass another --healthz-port (0 turns the health server off)`
      : errno === 'EADDRNOTAVAIL'
        ? `cannot serve /healthz on ${where}: ${host} is not an address of this host; pass one of its addresses (or 0.0.0.0) as --healthz-ip`
        : errno === 'EACCES'
          ? `cannot serve /healthz on ${where}: permission denied for that port; pass another --healthz-port`
          : `cannot serve /healthz on ${where}: ${err.message}; check --healthz-ip and --healthz-port`;
  return new HostError('FLANNEL_ERR_HEALTHZ_LISTEN', message, { host, port, errno });
}

export function startHealthServer(opts: HealthServerOptions): Promise<HealthServer> {
  const log = opts.log ?? silentLogger();
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? '/').split('?')[0];
    const head = req.method === 'HEAD';
    if (req.method !== 'GET' && !head) {
      send(res, 404, '404 page not found\n');
      return;
    }
    try {
      switch (path) {
        case '/healthz':
          return (opts.isHealthy?.() ?? true) ? send(res, 200, HEALTHZ_BODY, undefined, head) : send(res, 503, UNHEALTHY_BODY, undefined, head);
        case '/readyz':
          if (opts.isReady()) return send(res, 200, READY_BODY, undefined, head);
          return send(res, 503, notReadyBody(opts.notReadyReason?.()), undefined, head);
        case '/metrics':
          return void opts.metrics.render().then(
            (body) => send(res, 200, body, METRICS_CONTENT_TYPE, head),
            () => send(res, 500, 'internal error\n'),
          );
        case '/status':
          return void serveStatus(req, res, { source: opts.status, head, log });
        default:
          return send(res, 404, '404 page not found\n', undefined, head);
      }
    } catch (err) {
      log.error('health handler failed', { path, error: err instanceof Error ? err.message : String(err) });
      if (!res.headersSent) send(res, 500, 'internal error\n');
      else res.destroy();
    }
  };

  const server = createServer(handler);
  return new Promise<HealthServer>((resolve, reject) => {
    const onError = (err: Error) => reject(listenError(err, opts.host, opts.port));
    server.once('error', onError);
    server.listen(opts.port, opts.host, () => {
      server.off('error', onError);
      server.on('error', (err) => log.error('health server error', { error: err.message }));
      const port = (server.address() as AddressInfo).port;
      log.info('health server listening', { host: opts.host, port });
      resolve({
        port,
        close: () =>
          new Promise<void>((res, rej) => {
            server.close((err) => (err ? rej(err) : res()));
            server.closeAllConnections();
          }),
      });
    });
  });
}

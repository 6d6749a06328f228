// Raw JSON requests to the Kubernetes API server, each with a deadline, and a watch stream with a
// silence watchdog. @kubernetes/client-node still provides the kubeconfig, authentication and TLS
// (KubeConfig.applyToHTTPSOptions through ./credentials.ts: the bearer/exec/token-file headers and the
// http(s) Agent with CA, client certificate and insecure-skip-tls-verify); what it does not give is a
// deadline and a decode we choose:
// - its typed API (CoreV1Api) deserializes every Node into the full model, and one Node with a
//   wrong-typed field (status.conditions, spec.taints) makes the whole list throw;
// - its Watch (client-node src/watch.ts) only hands back its AbortController once the response headers
//   have arrived, so a watch whose server never answers cannot be abandoned, and it has no idle timer.
// Upstream flanneld gets both from client-go (rest.Config.Timeout, reflector watch timeouts;
// pkg/subnet/kube/kube.go builds the informer). Watch lines are newline-delimited JSON
// (https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes); they
// are split on '\n' by hand (./watch-lines.ts, each byte scanned once, a line capped at 16 MiB), which
// bench/kube-api.mjs measured faster than readline (client-node's way).
import http from 'node:http';
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { abortReason } from '../basics/clock.js';
import type { Clock } from '../basics/clock.js';
import type { Metrics } from '../basics/metrics.js';
import { errorMessage, FlannelError, KubeAnswerError, KubeApiError, KubeError, KubeTimeoutError, KubeWatchError } from '../basics/errors.js';
import { userAgent } from '../basics/version.js';
import { readMark, requestCredentials, resetTokensOlderThan } from './credentials.js';
import type { ListPageFn, WatchFn } from './list-watch.js';
import { WatchLineSplitter, withoutFields } from './watch-lines.js';
import type { DroppedField } from './watch-lines.js';

export type Query = Record<string, string | number | boolean | undefined>;

export interface KubeRequest {
  method: 'GET' | 'PATCH' | 'POST';
  path: string;
  query?: Query;
  body?: unknown;
  contentType?: string;
  /** Deadline for the whole exchange, headers and body. */
  timeoutMs: number;
  signal: AbortSignal;
  /** Fields of the answer never read, left out of the text before it is parsed (./watch-lines.ts withoutFields). */
  unread?: readonly DroppedField[];
}

/** Largest response body read (a list page of 100 Nodes is ~1 MB; hostile annotations can be larger). */
const MAX_BODY_BYTES = 256 * 1024 * 1024;
const MAX_ERROR_BODY = 4096;
const USER_AGENT = userAgent();

/** The largest answer joined in a client's kept buffer (BodyJoiner); a larger one gets a buffer of its own. */
const MAX_KEPT_BODY_BYTES = 8 * 1024 * 1024;

/**
 * Joins an answer's chunks in one buffer kept for the life of the client, grown (by a quarter more than
 * asked) to the largest answer up to MAX_KEPT_BODY_BYTES, instead of a new buffer per answer. A list of
 * 5,000 Nodes is 34 pages of 1.6 MB: a new buffer for each left the allocator holding about 5 MB more
 * after the list (glibc's heap kept the freed blocks: with its mmap threshold fixed by
 * MALLOC_MMAP_THRESHOLD_, 7 MB less; docs/performance.md "RSS at 5,000 Nodes").
 */
class BodyJoiner {
  private kept = Buffer.allocUnsafeSlow(0);

  /** `chunks` joined, emptied; the bytes are valid until the next call. */
  join(chunks: Buffer[]): Buffer {
    let size = 0;
    for (const c of chunks) size += c.length;
    if (size > MAX_KEPT_BODY_BYTES) return Buffer.concat(chunks.splice(0), size);
    if (this.kept.length < size) this.kept = Buffer.allocUnsafeSlow(Math.min(MAX_KEPT_BODY_BYTES, Math.ceil(size * 1.25)));
    let at = 0;
    for (const c of chunks) at += c.copy(this.kept, at);
    chunks.length = 0;
    return this.kept.subarray(0, size);
  }
}

/**
 * The text of an answer's bytes (without the `unread` fields), the chunks released before it returns:
 * they may not still be referenced while the caller parses the text. A buffer alive during the parse
 * outlives the scavenges the parse triggers, is promoted, and its memory (outside V8's heap) comes back
 * only at a full GC: held across JSON.parse, the 2-3 MB buffer of each list page raised the agent's RSS
 * after a 5,000-Node list by about 17 MB (docs/performance.md). The joined bytes are the client's kept
 * buffer, which is meant to stay.
 */
function bodyText(chunks: Buffer[], joiner: BodyJoiner, unread: readonly DroppedField[] | undefined): string {
  const bytes = joiner.join(chunks);
  return unread ? withoutFields(bytes, unread) : bytes.toString('utf8');
}

interface Prepared {
  url: URL;
  options: http.RequestOptions;
  /** The Authorization header sent (compared after a 401). */
  authorization: string | undefined;
}

/** The TLS options an https agent's connections are made with (its `options`): what a kept connection must match. */
const TLS_OPTIONS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;

export class KubeHttp {
  /** The keep-alive agent of the requests and what it was made from (see `connections`). */
  private pooled: { key: string; agent: http.Agent } | undefined;
  private readonly joiner = new BodyJoiner();

  constructor(
    private readonly kc: KubeConfig,
    private readonly clock: Clock,
  ) {}

  /**
   * The agent a request goes through. client-node makes a new one for every request (KubeConfig
   * applyToHTTPSOptions): a new connection and TLS handshake per request, each of a 50,000-Node list's
   * 334 pages its own (docs/performance.md, 50,000 Nodes). Its plain https (or http) agent is replaced by
   * one keep-alive agent, kept while the TLS material it is made with stays the same (a client certificate
   * renewed on disk, read again for every request as client-go's cert rotation does,
   * transport/cert_rotation.go, gets a new one), as client-go keeps its connection to the API server. A
   * proxy's agent is used as made. Only GETs are sent over it (a GET that meets a connection the server
   * just closed fails, and its list is retried; a PATCH or POST is not sent twice), and not a watch: it
   * holds its connection for its whole run and is ended by aborting it.
   */
  private connections(made: http.Agent | undefined): http.Agent | undefined {
    if (made === undefined || (made.constructor !== https.Agent && made.constructor !== http.Agent)) return made;
    const options = (made as https.Agent).options; // http.Agent has them too (untyped)
    const material = TLS_OPTIONS.flatMap((k) => [k, ...[options[k]].flat().map((v) => (Buffer.isBuffer(v) ? v.toString('base64') : (JSON.stringify(v) ?? '')))]);
    const key = [made.constructor.name, ...material].join('\0');
    if (this.pooled?.key !== key) {
      // The old agent is left to its requests in flight; its idle sockets are unref'd and closed by the server.
      const tls = Object.fromEntries(TLS_OPTIONS.filter((k) => options[k] !== undefined).map((k) => [k, options[k]]));
      this.pooled = { key, agent: made instanceof https.Agent ? new https.Agent({ ...tls, keepAlive: true }) : new http.Agent({ keepAlive: true }) };
    }
    return this.pooled.agent;
  }

  /** `keep`: over the kept connections (`connections`). */
  private async prepare(path: string, query: Query | undefined, method: string, keep: boolean, contentType?: string): Promise<Prepared> {
    const cluster = this.kc.getCurrentCluster();
    if (!cluster) throw new KubeError('FLANNEL_ERR_KUBE', 'the kubeconfig has no current cluster: set current-context to a context naming a cluster with a server');
    const url = new URL(cluster.server.replace(/\/+$/, '') + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const creds = await requestCredentials(this.kc);
    // Every request names the agent, as client-go's rest.Config.UserAgent does (../basics/version.ts).
    const headers: Record<string, string> = { Accept: 'application/json', 'User-Agent': USER_AGENT, ...creds.headers };
    if (contentType) headers['Content-Type'] = contentType;
    return { url, options: { method, headers, agent: keep ? this.connections(creds.agent) : creds.agent }, authorization: headers['authorization'] };
  }

  private send(p: Prepared, body: string | undefined, signal: AbortSignal): http.ClientRequest {
    const mod = p.url.protocol === 'https:' ? https : http;
    const req = mod.request(p.url, { ...p.options, signal });
    req.end(body);
    return req;
  }

  /** One request whose JSON answer is returned; rejects with KubeApiError, KubeTimeoutError, KubeAnswerError or a network error. */
  async json(r: KubeRequest): Promise<unknown> {
    const what = `${r.method} ${r.path}`;
    const ctrl = new AbortController();
    const onAbort = () => ctrl.abort(r.signal.reason);
    r.signal.addEventListener('abort', onAbort, { once: true });
    if (r.signal.aborted) onAbort();
    // The deadline covers the credentials too (an exec plugin or token file read), then headers and body.
    let stopDeadline = () => {};
    const timedOut = new Promise<never>((_resolve, reject) => {
      stopDeadline = this.clock.after(r.timeoutMs, () => {
        const err = new KubeTimeoutError('FLANNEL_ERR_KUBE_TIMEOUT', `${what}: no complete answer within ${r.timeoutMs} ms`, { timeoutMs: r.timeoutMs });
        ctrl.abort(err);
        reject(err);
      });
    });
    timedOut.catch(() => undefined);
    const body = r.body === undefined ? undefined : JSON.stringify(r.body);
    const attempt = async (): Promise<unknown> => {
      const started = readMark();
      const p = await this.prepare(r.path, r.query, r.method, r.method === 'GET', r.contentType);
      try {
        return await this.exchange(p, body, ctrl.signal, what, r.unread);
      } catch (err) {
        // A 401 after a token file rotated: re-read it (client-go's ResetTokenOlderThan) and, when the
        // token changed, send the request once more (./credentials.ts).
        if (!(err instanceof KubeApiError) || err.statusCode !== 401 || !resetTokensOlderThan(this.kc, started)) throw err;
        const again = await this.prepare(r.path, r.query, r.method, r.method === 'GET', r.contentType);
        if (again.authorization === p.authorization) throw err;
        return await this.exchange(again, body, ctrl.signal, what, r.unread);
      }
    };
    try {
      return await Promise.race([attempt(), timedOut]);
    } finally {
      stopDeadline();
      r.signal.removeEventListener('abort', onAbort);
    }
  }

  private exchange(p: Prepared, body: string | undefined, signal: AbortSignal, what: string, unread?: readonly DroppedField[]): Promise<unknown> {
    return new Promise<unknown>((resolve, reject) => {
      const fail = (err: unknown) => reject(signal.aborted ? abortReason(signal) : err);
      const req = this.send(p, body, signal);
      req.on('error', fail);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_BODY_BYTES) {
            res.destroy(new KubeAnswerError('FLANNEL_ERR_KUBE_ANSWER', `${what}: answer larger than ${MAX_BODY_BYTES} bytes`, { maxBytes: MAX_BODY_BYTES }));
            return;
          }
          chunks.push(c);
        });
        // The answer broke off (the connection reset after the headers), unless already coded (too large).
        res.on('error', (err) =>
          fail(coded(err, () => new KubeAnswerError('FLANNEL_ERR_KUBE_ANSWER', `${what}: the answer broke off after ${size} bytes: ${errorMessage(err)}`, {}, { cause: err }))),
        );
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          const ok = status >= 200 && status <= 299;
          const text = bodyText(chunks, this.joiner, ok ? unread : undefined);
          if (!ok) return reject(apiError(what, status, text.slice(0, MAX_ERROR_BODY), res.headers['retry-after']));
          try {
            resolve(JSON.parse(text) as unknown);
          } catch (err) {
            reject(new KubeAnswerError('FLANNEL_ERR_KUBE_ANSWER', `${what}: the answer is not JSON: ${errorMessage(err)}`, {}, { cause: err }));
          }
        });
      });
    });
  }

  /**
   * A watch: `onEvent(type, object)` for every line until the server ends the stream (resolves), or an
   * error, a non-200 answer, `silenceMs` without a byte (headers included), a line longer than
   * MAX_WATCH_LINE_BYTES (FLANNEL_ERR_KUBE_WATCH_LINE), a connection cut mid-stream
   * (FLANNEL_ERR_KUBE_WATCH_BROKEN) or the signal (rejects). The bytes split into lines are counted in
   * `metrics` when given (flannel_watch_bytes_scanned_total).
   */
  async watch(
    path: string,
    query: Query,
    onEvent: (type: unknown, object: unknown) => void,
    opts: { silenceMs: number; signal: AbortSignal; onBadLine?: (line: string) => void; unread?: readonly DroppedField[]; metrics?: Metrics },
  ): Promise<void> {
    const what = `watch ${path}`;
    const started = readMark();
    const p = await this.prepare(path, { ...query, watch: true }, 'GET', false);
    const ctrl = new AbortController();
    const onAbort = () => ctrl.abort(opts.signal.reason);
    opts.signal.addEventListener('abort', onAbort, { once: true });
    if (opts.signal.aborted) onAbort();
    let last = this.clock.now();
    const watchdog = async () => {
      for (;;) {
        const idle = this.clock.now() - last;
        if (idle >= opts.silenceMs) {
          ctrl.abort(new KubeTimeoutError('FLANNEL_ERR_KUBE_TIMEOUT', `${what}: nothing received for ${opts.silenceMs} ms`, { timeoutMs: opts.silenceMs }));
          return;
        }
        await this.clock.sleep(opts.silenceMs - idle, ctrl.signal);
      }
    };
    try {
      await new Promise<void>((resolve, reject) => {
        watchdog().catch(() => undefined);
        const req = this.send(p, undefined, ctrl.signal);
        const fail = (err: unknown) => reject(ctrl.signal.aborted ? abortReason(ctrl.signal) : err);
        req.on('error', fail);
        req.on('response', (res) => {
          last = this.clock.now();
          const status = res.statusCode ?? 0;
          if (status !== 200) {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (c: string) => (text = (text + c).slice(0, MAX_ERROR_BODY)));
            res.on('end', () => {
              // A 401: token files are re-read for the next watch (client-go's ResetTokenOlderThan).
              if (status === 401) resetTokensOlderThan(this.kc, started);
              reject(apiError(what, status, text, res.headers['retry-after']));
            });
            res.on('error', fail);
            return;
          }
          const lines = new WatchLineSplitter(what, { metrics: opts.metrics });
          let ended = false;
          res.on('data', (chunk: Buffer) => {
            last = this.clock.now();
            let complete: Buffer[];
            try {
              complete = lines.pushBytes(chunk);
            } catch (err) {
              res.destroy(err as Error);
              return;
            }
            for (const bytes of complete) {
              // Only the fields read are decoded (withoutFields), not the whole line.
              const line = opts.unread ? withoutFields(bytes, opts.unread) : bytes.toString('utf8');
              if (line.trim() === '') continue;
              let ev: { type?: unknown; object?: unknown };
              try {
                ev = JSON.parse(line) as { type?: unknown; object?: unknown };
              } catch {
                opts.onBadLine?.(line.slice(0, 200));
                continue;
              }
              onEvent(ev?.type, ev?.object);
            }
          });
          // The stream broke (a reset after the headers), unless already coded (a line past the bound).
          res.on('error', (err) => fail(coded(err, () => brokenWatch(what, errorMessage(err), err))));
          res.on('end', () => {
            ended = true;
            resolve();
          });
          res.on('close', () => (ended ? resolve() : fail(brokenWatch(what, 'the connection closed in the middle of the stream'))));
        });
      });
    } finally {
      ctrl.abort();
      opts.signal.removeEventListener('abort', onAbort);
    }
  }
}

/** The longest Retry-After honoured (a larger one is cut to it: a proxy's typo never stalls the agent for hours). */
const MAX_RETRY_AFTER_S = 600;

/**
 * `Retry-After` in ms on a 429 or 5xx, as client-go reads it (rest/request.go checkWait and
 * retryAfterSeconds: whole seconds only, other statuses and forms ignored); bounded by MAX_RETRY_AFTER_S.
 */
export function retryAfterHeader(status: number, header: string | undefined): number | undefined {
  if (status !== 429 && status < 500) return undefined;
  if (header === undefined || !/^\s*\d{1,9}\s*$/.test(header)) return undefined;
  const s = Number(header);
  return s > 0 ? Math.min(s, MAX_RETRY_AFTER_S) * 1000 : undefined;
}

function apiError(what: string, status: number, body: string, retryAfter?: string): KubeApiError {
  const retryAfterMs = retryAfterHeader(status, retryAfter);
  return new KubeApiError('FLANNEL_ERR_KUBE_API', `${what}: HTTP ${status}`, { status, ...(retryAfterMs !== undefined ? { retryAfterMs } : {}) }, { body, retryAfterMs });
}

/** `err` when it already carries a code (ours), else the coded error `wrap` makes. */
function coded(err: unknown, wrap: () => FlannelError): unknown {
  return err instanceof FlannelError ? err : wrap();
}

function brokenWatch(what: string, how: string, cause?: unknown): KubeWatchError {
  return new KubeWatchError('FLANNEL_ERR_KUBE_WATCH_BROKEN', `${what}: ${how}; the list-watch loop starts a new round after its backoff`, {}, { cause });
}

/**
 * The list of `path` over `http`, one page per call, each with a `timeoutMs` deadline (KubeListWatch's
 * list); the `unread` fields of its objects are cut from the text before it is parsed (./watch-lines.ts).
 */
export function kubeListFn(http: KubeHttp, path: string, timeoutMs: number, unread?: readonly DroppedField[]): ListPageFn {
  return (page, signal) => http.json({ method: 'GET', path, query: { limit: page.limit, continue: page.continue }, timeoutMs, signal, unread });
}

/**
 * The watch of `path` over `http` (KubeListWatch's watch), its `unread` fields cut as the list's; the bytes
 * of its streams counted in `metrics`.
 */
export function kubeWatchFn(http: KubeHttp, path: string, opts: { metrics?: Metrics; unread?: readonly DroppedField[] } = {}): WatchFn {
  return (query, onEvent, o) => http.watch(path, { ...query }, onEvent, { ...o, unread: opts.unread, metrics: opts.metrics });
}

// Downloading one install-cni source into a file, bounded in size and time, hashing it on the way.
//
// The body is streamed to disk (never held in memory) and refused past `maxBytes`, whether or not the
// server sent a Content-Length (a chunked body has none). Three deadlines, on the injected clock:
// - connect: from each request (each redirect hop) until its response headers arrive: a server that
//   accepts the connection and never answers;
// - idle: the longest pause between two pieces of the body: a server that stops sending;
// - overall: the whole download, redirects included: a server that trickles a byte every few seconds
//   keeps the idle deadline happy and is stopped by this one.
// GitHub release assets answer with a redirect to their storage host, so redirects are followed (at most
// MAX_REDIRECTS, http and https only), as `curl -L` and the Go http.Client upstream's scripts use do.
// docs/bounds.md gives each number and its reason.
import { createHash } from 'node:crypto';
import * as nodeFs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { Transform, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { abortReason, systemClock, type Clock } from '../basics/clock.js';
import { CniInstallError, errorMessage } from '../basics/errors.js';

export interface DownloadLimits {
  /** Largest download accepted, in bytes. */
  maxBytes: number;
  /** From sending a request until its response headers arrive. */
  connectTimeoutMs: number;
  /** Longest pause between two pieces of the body. */
  idleTimeoutMs: number;
  /** The whole download, redirects included. */
  overallTimeoutMs: number;
}

const MiB = 1024 * 1024;

/** The defaults; docs/bounds.md says why each is that number. */
export const DOWNLOAD_LIMITS: DownloadLimits = {
  maxBytes: 256 * MiB,
  connectTimeoutMs: 30_000,
  idleTimeoutMs: 60_000,
  overallTimeoutMs: 15 * 60_000,
};

const MAX_REDIRECTS = 5;

export interface DownloadOptions {
  limits?: Partial<DownloadLimits>;
  clock?: Clock;
  /** Opens the file the body is written to (injected by tests to count what is written). */
  createWriteStream?: (path: string) => Writable;
}

export interface Downloaded {
  sha256: string;
  bytes: number;
}

type Deadline = 'connect' | 'idle' | 'overall';

function timeoutError(url: string, deadline: Deadline, ms: number, received: number): CniInstallError {
  const what = {
    connect: 'no answer',
    idle: 'nothing more received',
    overall: 'the download not finished',
  }[deadline];
  return new CniInstallError(
    'FLANNEL_ERR_CNI_TIMEOUT',
    `cannot download ${url}: ${what} within ${ms} ms (the ${deadline} deadline; ${received} bytes received); check the URL and the node's access to it`,
    { source: url, deadline, timeoutMs: ms, received },
  );
}

export function tooLargeError(source: string, limit: 'download' | 'entry' | 'total', max: number, read: number, detail = ''): CniInstallError {
  const what = { download: 'the download is', entry: 'an archive entry is', total: 'the archive unpacks to' }[limit];
  return new CniInstallError(
    'FLANNEL_ERR_CNI_TOO_LARGE',
    `${source}: ${what} larger than the ${max} bytes allowed${detail} (no CNI plugin release is near that size); check the source`,
    { source, limit, max, read },
  );
}

/** One GET: the response once its headers arrived (connect deadline), following no redirect. */
function get(url: URL, signal: AbortSignal, clock: Clock, connectMs: number, onTimeout: (err: Error) => void): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const headers = new AbortController();
    clock.sleep(connectMs, headers.signal).then(
      () => onTimeout(timeoutError(url.href, 'connect', connectMs, 0)),
      () => undefined,
    );
    const mod = url.protocol === 'https:' ? https : http;
    const req = mod.get(url, { signal, headers: { 'User-Agent': 'flanneld-install-cni' } }, (res) => {
      headers.abort();
      resolve(res);
    });
    req.on('error', (err) => {
      headers.abort();
      reject(signal.aborted ? abortReason(signal) : err);
    });
  });
}

/**
 * Download `url` into `dest` (created; the caller removes it), bounded by the limits. Resolves with the
 * SHA-256 and size; rejects with FLANNEL_ERR_CNI_TOO_LARGE, FLANNEL_ERR_CNI_TIMEOUT or FLANNEL_ERR_CNI_SOURCE.
 */
export async function downloadToFile(url: string, dest: string, o: DownloadOptions = {}): Promise<Downloaded> {
  const limits = { ...DOWNLOAD_LIMITS, ...o.limits };
  const clock = o.clock ?? systemClock;
  const ctrl = new AbortController();
  const stop = (err: Error) => ctrl.abort(err);
  let received = 0;
  let last = clock.now();
  const timers = new AbortController();
  clock.sleep(limits.overallTimeoutMs, timers.signal).then(
    () => stop(timeoutError(url, 'overall', limits.overallTimeoutMs, received)),
    () => undefined,
  );
  const idleWatch = async () => {
    for (;;) {
      const idle = clock.now() - last;
      if (idle >= limits.idleTimeoutMs) return stop(timeoutError(url, 'idle', limits.idleTimeoutMs, received));
      await clock.sleep(limits.idleTimeoutMs - idle, timers.signal);
    }
  };
  try {
    let target = new URL(url);
    let res: http.IncomingMessage;
    for (let hops = 0; ; hops++) {
      if (target.protocol !== 'http:' && target.protocol !== 'https:') {
        throw new CniInstallError('FLANNEL_ERR_CNI_SOURCE', `cannot download ${url}: redirected to ${target.protocol} (only http and https are followed)`, { source: url });
      }
      res = await get(target, ctrl.signal, clock, limits.connectTimeoutMs, stop);
      const location = res.headers.location;
      if (res.statusCode !== undefined && [301, 302, 303, 307, 308].includes(res.statusCode) && location) {
        res.resume();
        if (hops >= MAX_REDIRECTS) {
          throw new CniInstallError('FLANNEL_ERR_CNI_SOURCE', `cannot download ${url}: more than ${MAX_REDIRECTS} redirects`, { source: url });
        }
        target = new URL(location, target);
        continue;
      }
      break;
    }
    const status = res.statusCode ?? 0;
    if (status < 200 || status > 299) {
      res.resume();
      throw new CniInstallError('FLANNEL_ERR_CNI_SOURCE', `cannot download ${url}: HTTP ${status} ${res.statusMessage ?? ''}`.trimEnd(), { source: url, status });
    }
    const length = Number(res.headers['content-length'] ?? 0);
    if (length > limits.maxBytes) {
      res.destroy();
      throw tooLargeError(url, 'download', limits.maxBytes, 0, ` (Content-Length ${length})`);
    }
    last = clock.now();
    idleWatch().catch(() => undefined);
    const hash = createHash('sha256');
    const meter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        last = clock.now();
        if (received + chunk.length > limits.maxBytes) return done(tooLargeError(url, 'download', limits.maxBytes, received));
        received += chunk.length;
        hash.update(chunk);
        done(null, chunk);
      },
    });
    const out = (o.createWriteStream ?? ((p: string) => nodeFs.createWriteStream(p, { flags: 'wx', mode: 0o600 })))(dest);
    await pipeline(res, meter, out, { signal: ctrl.signal });
    return { sha256: hash.digest('hex'), bytes: received };
  } catch (err) {
    if (ctrl.signal.aborted) throw abortReason(ctrl.signal);
    if (err instanceof CniInstallError) throw err;
    throw new CniInstallError('FLANNEL_ERR_CNI_SOURCE', `cannot download ${url}: ${errorMessage(err)}; check the URL and the node's access to it`, { source: url }, { cause: err });
  } finally {
    timers.abort();
    ctrl.abort(new Error('download finished'));
  }
}

// Builds the etcd v3 client from flanneld's etcd flags: endpoints, TLS (key + cert + optional CA,
// server verified), username/password. Mirrors flannel pkg/subnet/etcd/registry.go (EtcdConfig,
// newTlsConfig, newEtcdClient) on the `etcd3` npm client (grpc-js).
// An endpoint may carry its credentials as URL userinfo (`http://user:pass@host:2379`): they become the
// client's etcd authentication (etcd3 `auth: {username, password}`, the same as --etcd-username and
// --etcd-password) and are removed from the host grpc dials, which would otherwise name its target
// `dns:user:pass@host` in every error. The password, and the private key, are registered with the log's
// redactor (src/basics/log-safe.ts registerSecret) so no message can carry them.
import { Etcd3, isRecoverableError } from 'etcd3';
import type { IOptions } from 'etcd3';
import { backoffDelay, systemClock } from '../../basics/clock.js';
import type { Clock } from '../../basics/clock.js';
import { ConfigError, errorMessage } from '../../basics/errors.js';
import { hostFileReader } from '../../basics/fs.js';
import type { FileReader } from '../../basics/fs.js';
import { silentLogger } from '../../basics/log.js';
import type { Logger } from '../../basics/log.js';
import { registerPemSecret, registerSecret } from '../../basics/log-safe.js';

export interface EtcdClientConfig {
  /** `--etcd-endpoints`, e.g. `http://127.0.0.1:2379`; `https://` endpoints use TLS. */
  endpoints: string[];
  keyfile: string;
  certfile: string;
  cafile: string;
  username: string;
  password: string;
  /** Deadline of every unary call (default 10 s). */
  requestTimeoutMs?: number;
  /** Reconnect backoff of watches made with the client's own watch() builder (default 100 ms doubling to 5 s). The subnet manager does not use it: its peer watch (lease-watch.ts) runs raw watch streams (registry.openWatchStream) on the relist loop's timers. */
  watchBackoffBaseMs?: number;
  watchBackoffCapMs?: number;
  log?: Logger;
  /** Reads the TLS files (default: the host's files). */
  files?: FileReader;
  /** Wall-clock time for gRPC call deadlines and the circuit breaker (default: the system clock). */
  clock?: Clock;
}

type WatchBackoff = NonNullable<NonNullable<IOptions['faultHandling']>['watchBackoff']>;
type HostPolicy = ReturnType<NonNullable<NonNullable<IOptions['faultHandling']>['host']>>;

/**
 * Per-endpoint circuit breaker in place of the client's default (3 consecutive recoverable failures
 * open it for 5 s), with one difference: a call refused while open fails with the endpoint's last
 * real error, not "Execution prevented because the circuit breaker is open", so our retries, their
 * logs and the final FLANNEL_ERR_ETCD keep naming the cause (TLS verification, refused, ...).
 */
class HostBreaker {
  private failures = 0;
  private openUntil = 0;
  private lastError: unknown;
  constructor(private readonly clock: Clock) {}
  async execute<T>(fn: () => T | Promise<T>): Promise<T> {
    if (this.failures >= 3 && this.clock.now() < this.openUntil) throw this.lastError;
    try {
      const result = await fn();
      this.failures = 0;
      return result;
    } catch (err) {
      if (err instanceof Error && isRecoverableError(err)) {
        this.lastError = err;
        if (++this.failures >= 3) this.openUntil = this.clock.now() + 5000;
      }
      throw err;
    }
  }
}

/** Capped exponential backoff in the shape the client's watch manager expects. */
class CappedBackoff {
  constructor(
    private readonly attempt: number,
    private readonly baseMs: number,
    private readonly capMs: number,
  ) {}
  get duration(): number {
    return backoffDelay(this.attempt, this.baseMs, this.capMs);
  }
  next(): CappedBackoff {
    return new CappedBackoff(this.attempt + 1, this.baseMs, this.capMs);
  }
}

function readPem(files: FileReader, path: string, what: string): Buffer {
  try {
    return files.readBytes(path);
  } catch (err) {
    throw new ConfigError('FLANNEL_ERR_CONFIG', `cannot read ${what} ${path}: ${errorMessage(err)}`, { path }, { cause: err });
  }
}

/** The client's private key, its key material registered with the log's redactor. */
function readKey(files: FileReader, path: string): Buffer {
  const key = readPem(files, path, '--etcd-keyfile');
  registerPemSecret('etcd-keyfile', key);
  return key;
}

interface Endpoints {
  hosts: string[];
  /** Credentials given as URL userinfo, the same on every endpoint that has them. */
  userinfo?: { username: string; password: string };
}

function decode(part: string, endpoint: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new ConfigError('FLANNEL_ERR_CONFIG', `invalid etcd endpoint "${redactedEndpoint(endpoint)}": its user:password is not valid percent-encoding`, {
      endpoint: redactedEndpoint(endpoint),
    });
  }
}

/** The endpoint with everything up to its last `@` (the userinfo, which may hold a `/`) as `***`. */
function redactedEndpoint(e: string): string {
  return e.replace(/^((?:https?:\/\/)?).*@/s, '$1***@');
}

/**
 * Register the password of an endpoint's userinfo (up to the last `@`) with the log's redactor before
 * the endpoint is validated: a password the pattern refuses (one holding `/`) still never reaches a log
 * line or stderr, whatever message quotes it. Both its raw and its decoded form.
 */
function registerUserinfoPassword(e: string, index: number): void {
  const at = e.lastIndexOf('@');
  if (at < 0) return;
  const info = e.slice(0, at).replace(/^https?:\/\//, '');
  const colon = info.indexOf(':');
  if (colon < 0) return;
  const raw = info.slice(colon + 1);
  registerSecret(`etcd-endpoint-password:${index}`, raw);
  let decoded: string | undefined;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    decoded = undefined;
  }
  registerSecret(`etcd-endpoint-password-decoded:${index}`, decoded !== raw ? decoded : undefined);
}

/**
 * Validate the endpoint list; `host:port` without a scheme is accepted as the Go client does. Userinfo
 * (`user:pass@`) is taken off each host and returned once; endpoints that disagree on it, or userinfo
 * without a password, are refused (FLANNEL_ERR_CONFIG).
 */
function checkEndpoints(endpoints: string[]): Endpoints {
  const out = endpoints.map((e) => e.trim()).filter((e) => e !== '');
  if (out.length === 0) throw new ConfigError('FLANNEL_ERR_CONFIG', '--etcd-endpoints is empty; give e.g. --etcd-endpoints=http://127.0.0.1:2379');
  const hosts: string[] = [];
  let userinfo: Endpoints['userinfo'];
  out.forEach(registerUserinfoPassword);
  for (const e of out) {
    const m = /^((?:https?:\/\/)?)(?:([^@/\s]*)@)?([^@/\s]+:\d+)\/?$/.exec(e);
    if (!m) {
      throw new ConfigError('FLANNEL_ERR_CONFIG', `invalid etcd endpoint "${redactedEndpoint(e)}": use http://host:port or https://host:port`, { endpoint: redactedEndpoint(e) });
    }
    const [, scheme, info, hostPort] = m;
    hosts.push(scheme + hostPort);
    if (info === undefined) continue;
    const colon = info.indexOf(':');
    if (colon <= 0 || colon === info.length - 1) {
      throw new ConfigError(
        'FLANNEL_ERR_CONFIG',
        `etcd endpoint "${redactedEndpoint(e)}" carries a user without a password: give both as http://user:password@host:port, or use --etcd-username and --etcd-password-file`,
        { endpoint: redactedEndpoint(e) },
      );
    }
    const creds = { username: decode(info.slice(0, colon), e), password: decode(info.slice(colon + 1), e) };
    if (userinfo && (userinfo.username !== creds.username || userinfo.password !== creds.password)) {
      throw new ConfigError(
        'FLANNEL_ERR_CONFIG',
        'the --etcd-endpoints carry different user:password credentials: etcd authenticates one user per client; give the same one on all, or none',
        {
          flag: 'etcd-endpoints',
        },
      );
    }
    userinfo = creds;
  }
  return { hosts, userinfo };
}

/** The etcd user: --etcd-username/--etcd-password, or the endpoints' userinfo; both given -> FLANNEL_ERR_CONFIG. */
function etcdAuth(cfg: EtcdClientConfig, userinfo: Endpoints['userinfo']): IOptions['auth'] {
  const flags = cfg.username !== '' || cfg.password !== '';
  if (flags && userinfo) {
    throw new ConfigError(
      'FLANNEL_ERR_CONFIG',
      '--etcd-endpoints carry user:password and --etcd-username/--etcd-password are set too: give the credentials one way only (--etcd-password-file keeps the password out of the process list)',
      { flag: 'etcd-endpoints' },
    );
  }
  if (userinfo) return userinfo;
  return flags ? { username: cfg.username, password: cfg.password } : undefined;
}

/** The options createEtcdClient hands `new Etcd3()`, built without a connection (never logged: it holds the password). */
export function etcdClientOptions(cfg: EtcdClientConfig): IOptions {
  const log = cfg.log ?? silentLogger();
  registerSecret('etcd-password', cfg.password);
  const { hosts, userinfo } = checkEndpoints(cfg.endpoints);
  const auth = etcdAuth(cfg, userinfo);
  const timeout = cfg.requestTimeoutMs ?? 10_000;
  const files = cfg.files ?? hostFileReader;
  const clock = cfg.clock ?? systemClock;
  const opts: IOptions = {
    hosts,
    dialTimeout: timeout,
    defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: clock.now() + timeout }),
    faultHandling: {
      host: () => new HostBreaker(clock) as unknown as HostPolicy,
      watchBackoff: new CappedBackoff(0, cfg.watchBackoffBaseMs ?? 100, cfg.watchBackoffCapMs ?? 5000) as unknown as WatchBackoff,
    },
  };
  if (cfg.keyfile !== '' && cfg.certfile !== '') {
    opts.credentials = {
      // No --etcd-cafile: grpc verifies the server against the system roots.
      rootCertificate: (cfg.cafile !== '' ? readPem(files, cfg.cafile, '--etcd-cafile') : null) as Buffer,
      privateKey: readKey(files, cfg.keyfile),
      certChain: readPem(files, cfg.certfile, '--etcd-certfile'),
    };
  } else {
    if (cfg.keyfile !== '' || cfg.certfile !== '') {
      log.warn('only one of --etcd-keyfile and --etcd-certfile is set; TLS client authentication needs both, not using them');
    }
    if (hosts.some((h) => h.startsWith('https://'))) {
      if (cfg.cafile !== '') opts.credentials = { rootCertificate: readPem(files, cfg.cafile, '--etcd-cafile') };
    } else {
      log.warn('no certificate provided: connecting to etcd with http. This is insecure');
    }
  }
  if (auth) opts.auth = auth;
  return opts;
}

export function createEtcdClient(cfg: EtcdClientConfig): Etcd3 {
  return new Etcd3(etcdClientOptions(cfg));
}

// Builds the etcd v3 client from flanneld's etcd flags: endpoints, TLS (key + cert + optional CA,
// server verified), username/password. Mirrors flannel pkg/subnet/etcd/registry.go (EtcdConfig,
// newTlsConfig, newEtcdClient) on the `etcd3` npm client (grpc-js).
import { Etcd3, isRecoverableError } from 'etcd3';
import type { IOptions } from 'etcd3';
import { backoffDelay, systemClock } from '../../clock.js';
import type { Clock } from '../../clock.js';
import { ConfigError, errorMessage } from '../../errors.js';
import { hostFileReader } from '../../host/files.js';
import type { FileReader } from '../../host/files.js';
import { silentLogger } from '../../log.js';
import type { Logger } from '../../log.js';

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

/** Validate the endpoint list; `host:port` without a scheme is accepted as the Go client does. */
function checkEndpoints(endpoints: string[]): string[] {
  const out = endpoints.map((e) => e.trim()).filter((e) => e !== '');
  if (out.length === 0) throw new ConfigError('FLANNEL_ERR_CONFIG', '--etcd-endpoints is empty; give e.g. --etcd-endpoints=http://127.0.0.1:2379');
  for (const e of out) {
    if (!/^(https?:\/\/)?[^/\s]+:\d+\/?$/.test(e)) {
      throw new ConfigError('FLANNEL_ERR_CONFIG', `invalid etcd endpoint "${e}": use http://host:port or https://host:port`, { endpoint: e });
    }
  }
  return out.map((e) => e.replace(/\/$/, ''));
}

/** The options handed to `new Etcd3()` (exported for tests; never logged: it holds the password). */
export function etcdClientOptions(cfg: EtcdClientConfig): IOptions {
  const log = cfg.log ?? silentLogger();
  const hosts = checkEndpoints(cfg.endpoints);
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
      privateKey: readPem(files, cfg.keyfile, '--etcd-keyfile'),
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
  if (cfg.username !== '' || cfg.password !== '') {
    opts.auth = { username: cfg.username, password: cfg.password };
  }
  return opts;
}

export function createEtcdClient(cfg: EtcdClientConfig): Etcd3 {
  return new Etcd3(etcdClientOptions(cfg));
}

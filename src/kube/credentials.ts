// The kubeconfig user's credentials for each request, as client-go handles them:
// - A token file (kubeconfig `tokenFile`, client-go's field, clientcmd/api/v1/types.go AuthInfo; and
//   `token-file`, the name client-node reads; the in-cluster service account token, which kubelet
//   rotates) is a cached token source, client-go transport/token_source.go NewCachedFileTokenSource:
//   the file is re-read once its token is a minute old (less 10 s leeway), trimmed
//   (strings.TrimSpace), an empty or unreadable file keeps the token read last (logged), and a 401
//   resets every token read before that request started (tokenSourceTransport.RoundTrip ->
//   ResetTokenOlderThan). client-go then returns the 401; KubeHttp sends a request (not a watch) once
//   more when the re-read token differs, so a rotated file fails no list, get or write. A watch is not
//   resent: it fails with the 401 (KubeApiError) and the next watch its caller starts carries the
//   re-read token. The token file wins over a `token` in
//   the same user, as client-go documents (a fallback until the file is first read).
//   client-node 1.4 reads `token-file` once at load, untrimmed (a trailing newline made an illegal
//   header), and ignores `tokenFile`; its FileAuth (in-cluster) re-reads every 60 s on the wall clock,
//   untrimmed, and never on a 401. Both are replaced by the source here.
// - An exec credential plugin runs in client-node's ExecAuth (client-node src/exec_auth.ts), which collects the
//   plugin's whole stderr and rejects with it as the error message. client-go passes the plugin's stderr
//   to its own stderr and never into an error (plugin/pkg/client/auth/exec/exec.go). Here the spawn
//   ExecAuth uses keeps only the first MAX_PLUGIN_STDERR_CHARS of it, and a failure becomes
//   FLANNEL_ERR_KUBE_AUTH, whose message the log's redactor cleans (`token=...`, src/basics/log-safe.ts).
// - Every bearer token and basic-auth credential a request carries is registered with the log's
//   redactor (registerSecret, one slot per source: a rotated token replaces the one before), so no log
//   line carries it whatever its source.
import { dirname, isAbsolute, join } from 'node:path';
import { validateHeaderName, validateHeaderValue } from 'node:http';
import type http from 'node:http';
import type https from 'node:https';
import type { KubeConfig, User } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import type { Clock } from '../basics/clock.js';
import { errorMessage, FlannelError, KubeError } from '../basics/errors.js';
import { MAX_CONFIG_FILE_BYTES, readRegularFile } from '../basics/fs.js';
import type { Logger } from '../basics/log.js';
import { registerSecret } from '../basics/log-safe.js';

/** client-go NewCachedFileTokenSource: period one minute, leeway 10 s. */
const TOKEN_FILE_PERIOD_MS = 60_000;
const TOKEN_FILE_LEEWAY_MS = 10_000;
/** What is kept of an exec credential plugin's stderr (the rest is dropped as it arrives). */
export const MAX_PLUGIN_STDERR_CHARS = 4096;
/** The auth-provider name this module's authenticator answers to (client-node's own providers do not). */
const PROVIDER = 'flanneld-token-file';

export interface TokenSourceOptions {
  clock: Clock;
  log?: Logger;
  /** Used until the file is first read (the kubeconfig user's `token`), as client-go documents. */
  fallback?: string;
  /** Reads the file (default: a regular file of at most 1 MiB, src/basics/fs.ts). */
  readFile?: (path: string) => string;
}

/**
 * Token reads are ordered by this counter rather than by time: client-go compares wall-clock times
 * (a token read during a request is not reset by its 401), which an injected clock that stands still
 * would make equal.
 */
let readSeq = 0;

/** The mark a request takes as it starts, for resetTokensOlderThan after a 401. */
export function readMark(): number {
  return readSeq;
}

/** A token read from a file, cached for a minute, reset by a 401 (client-go's cachingTokenSource over a fileTokenSource). */
class CachedFileTokenSource {
  private cached: string | undefined;
  private expiry = 0;
  /** readSeq when the cached token was read. */
  private readAt = 0;

  constructor(
    readonly path: string,
    private readonly o: TokenSourceOptions,
  ) {
    this.cached = o.fallback?.trim() || undefined;
  }

  token(): string {
    const now = this.o.clock.now();
    if (this.cached !== undefined && this.expiry - TOKEN_FILE_LEEWAY_MS > now) return this.cached;
    let fresh: string;
    try {
      const text = (this.o.readFile ?? ((p) => readRegularFile(p, MAX_CONFIG_FILE_BYTES, 'the token file')))(this.path).trim();
      if (text === '') throw new Error('the file is empty');
      fresh = text;
    } catch (err) {
      if (this.cached === undefined) {
        throw new KubeError(
          'FLANNEL_ERR_KUBE_AUTH',
          `cannot read the bearer token file ${this.path}: ${errorMessage(err)}; check the kubeconfig's tokenFile or the service account mount`,
          {
            file: this.path,
          },
        );
      }
      this.o.log?.error('Unable to rotate the token from its file, keeping the one read last', { file: this.path, error: errorMessage(err) });
      this.expiry = now + TOKEN_FILE_PERIOD_MS;
      return this.cached;
    }
    registerSecret(`token-file:${this.path}`, fresh);
    this.cached = fresh;
    this.readAt = ++readSeq;
    this.expiry = now + TOKEN_FILE_PERIOD_MS;
    return fresh;
  }

  /** Forget a token read before `mark` (from readMark(), taken as a request answered 401 started). */
  resetTokenOlderThan(mark: number): void {
    if (this.readAt <= mark) this.expiry = 0;
  }
}

/** client-node Authenticator for users whose auth provider is PROVIDER: one source per token file. */
class TokenFileAuthenticator {
  readonly sources = new Map<string, CachedFileTokenSource>();
  constructor(private readonly o: TokenSourceOptions) {}

  source(path: string, fallback?: string): CachedFileTokenSource {
    let s = this.sources.get(path);
    if (!s) this.sources.set(path, (s = new CachedFileTokenSource(path, { ...this.o, fallback })));
    return s;
  }

  isAuthProvider(user: User): boolean {
    return isTokenFileUser(user);
  }

  applyAuthentication(user: User, opts: { headers?: http.OutgoingHttpHeaders }): Promise<void> {
    const path = (user.authProvider as { config: { path: string } }).config.path;
    opts.headers ??= {};
    opts.headers['Authorization'] = `Bearer ${this.source(path).token()}`;
    return Promise.resolve();
  }
}

const installed = new WeakMap<KubeConfig, TokenFileAuthenticator>();

function authenticator(kc: KubeConfig, o: TokenSourceOptions): TokenFileAuthenticator {
  let a = installed.get(kc);
  if (!a) {
    a = new TokenFileAuthenticator(o);
    kc.addAuthenticator(a);
    installed.set(kc, a);
  }
  return a;
}

/** True for a user made by tokenFileUser. */
export function isTokenFileUser(user: User): boolean {
  return (user.authProvider as { name?: unknown } | undefined)?.name === PROVIDER;
}

/** The kubeconfig user of a token file: client-node's own token handling is bypassed for it. */
export function tokenFileUser(name: string, path: string): User {
  return { name, authProvider: { name: PROVIDER, config: { path } } };
}

/**
 * A kubeconfig's text with `tokenFile` / `token-file` taken out of its users (client-node would read
 * `token-file` once, at load), and the token file of each such user (relative paths resolved against
 * the kubeconfig's directory, as client-go's ResolveLocalPaths does). Throws what js-yaml throws.
 */
export function extractTokenFiles(text: string, kubeconfigFile: string): { text: string; tokenFiles: Map<string, string> } {
  const tokenFiles = new Map<string, string>();
  const doc = yaml.load(text) as { users?: unknown } | null | undefined;
  if (!doc || typeof doc !== 'object' || !Array.isArray(doc.users)) return { text, tokenFiles };
  for (const entry of doc.users as unknown[]) {
    const e = entry as { name?: unknown; user?: Record<string, unknown> } | null;
    const user = e?.user;
    if (!user || typeof user !== 'object' || typeof e.name !== 'string') continue;
    const file = [user['tokenFile'], user['token-file']].find((f): f is string => typeof f === 'string' && f.trim() !== '');
    delete user['tokenFile'];
    delete user['token-file'];
    if (file !== undefined) tokenFiles.set(e.name, isAbsolute(file) ? file : join(dirname(kubeconfigFile), file));
  }
  return { text: tokenFiles.size > 0 ? JSON.stringify(doc) : text, tokenFiles };
}

/**
 * Serve each user of `tokenFiles` (user name -> path) from a cached token source; the user's `token`, if
 * any, is the fallback until the file is first read. Users with an exec or auth-provider plugin keep it.
 */
export function useTokenFiles(kc: KubeConfig, tokenFiles: Map<string, string>, o: TokenSourceOptions): void {
  if (tokenFiles.size === 0) return;
  const auth = authenticator(kc, o);
  const users = kc.users.map((u) => {
    const path = tokenFiles.get(u.name);
    if (path === undefined || u.exec || u.authProvider) return u;
    auth.source(path, u.token);
    return { ...tokenFileUser(u.name, path), certData: u.certData, certFile: u.certFile, keyData: u.keyData, keyFile: u.keyFile, impersonateUser: u.impersonateUser };
  });
  kc.loadFromOptions({ clusters: kc.clusters, users, contexts: kc.contexts, currentContext: kc.currentContext });
}

/** The token source behind the in-cluster user (tokenFileUser), registered on `kc`. */
export function useInClusterToken(kc: KubeConfig, path: string, o: TokenSourceOptions): void {
  authenticator(kc, o).source(path);
}

/** After a 401 to a request that started at `mark` (readMark()): forget file tokens read before; true when `kc` has any. */
export function resetTokensOlderThan(kc: KubeConfig, mark: number): boolean {
  const a = installed.get(kc);
  if (!a) return false;
  for (const s of a.sources.values()) s.resetTokenOlderThan(mark);
  return a.sources.size > 0;
}

/** The shape of child_process.spawn that matters here (client-node's ExecAuth.execFn). */
type Spawn = (...args: never[]) => { stderr: NodeJS.ReadableStream | null };

/** `base` (a spawn) whose child's stderr hands on at most `maxChars` (then one truncation note). */
export function stderrBoundedSpawn<S extends Spawn>(maxChars: number, base: S): S {
  return ((...args: Parameters<S>) => {
    const child = base(...args);
    const stderr = child.stderr;
    if (stderr) {
      const on = stderr.on.bind(stderr);
      let kept = 0;
      stderr.on = ((event: string, listener: (...a: unknown[]) => void) => {
        if (event !== 'data') return on(event, listener);
        return on('data', (chunk: string | Buffer) => {
          if (kept > maxChars) return;
          const s = chunk.toString();
          const room = maxChars - kept;
          kept += s.length;
          listener(s.length <= room ? s : `${s.slice(0, room)}\n[stderr truncated at ${maxChars} characters]`);
        });
      }) as typeof stderr.on;
    }
    return child;
  }) as S;
}

/** Bound the stderr client-node's exec credential plugin runner keeps (it spawns with ExecAuth.execFn). */
export function boundExecPluginStderr(kc: KubeConfig): void {
  const list = (kc as unknown as { authenticators?: unknown[] }).authenticators ?? [];
  for (const a of list) {
    if (a !== null && typeof a === 'object' && 'execFn' in a && typeof a.execFn === 'function') {
      const runner = a as { execFn: Spawn };
      runner.execFn = stderrBoundedSpawn(MAX_PLUGIN_STDERR_CHARS, runner.execFn);
    }
  }
}

export interface RequestCredentials {
  /** Lower-case header names (authorization, impersonate-user, ...). */
  headers: Record<string, string>;
  agent: http.Agent | undefined;
}

/**
 * The headers and TLS agent of one request: client-node's applyToHTTPSOptions (token, token file, exec
 * plugin, basic auth, client certificate), its headers named in lower case and its basic auth as a
 * header, as client-node's applyToFetchOptions makes them into node-fetch Headers (which the kubeconfig
 * bundle then never loads: packaging/kubeconfig-bundle.mjs). Each header is checked as Node's http client
 * checks it. A failing plugin or token file, or a header Node would refuse -> KubeError FLANNEL_ERR_KUBE_AUTH.
 */
export async function requestCredentials(kc: KubeConfig): Promise<RequestCredentials> {
  const opts: https.RequestOptions = {};
  const headers: Record<string, string> = {};
  try {
    await kc.applyToHTTPSOptions(opts);
    for (const [key, val] of Object.entries(opts.headers ?? {})) {
      if (val === undefined || (Array.isArray(val) && val.length === 0)) continue;
      const name = key.toLowerCase();
      const value = Array.isArray(val) ? val.join(', ') : String(val);
      // Headers.append for each value of a list, Headers.set for one value.
      headers[name] = Array.isArray(val) && headers[name] !== undefined ? `${headers[name]}, ${value}` : value;
      validateHeaderName(name);
      validateHeaderValue(name, headers[name]);
    }
    if (opts.auth) headers['authorization'] = 'Basic ' + Buffer.from(opts.auth).toString('base64');
  } catch (err) {
    if (err instanceof FlannelError) throw err;
    const msg = errorMessage(err)
      .slice(0, MAX_PLUGIN_STDERR_CHARS + 64)
      .trim();
    throw new KubeError('FLANNEL_ERR_KUBE_AUTH', `the kubeconfig user's credential plugin or token file failed - ${msg}`, {}, { cause: err });
  }
  const credential = /^(?:Bearer|Basic)\s+(.+)$/i.exec(headers['authorization'] ?? '')?.[1];
  if (credential !== undefined) {
    registerSecret('kube-request-credential', credential);
    const basic = /^Basic/i.test(headers['authorization'] ?? '');
    registerSecret('kube-basic-password', basic ? Buffer.from(credential, 'base64').toString('utf8').split(':').slice(1).join(':') : undefined);
  }
  return { headers, agent: opts.agent as http.Agent | undefined };
}

// Integration test support: Debian's etcd (`apt-get install etcd-server`) on free loopback ports in a
// temp data dir; stop / restart on the same ports; compaction. Suites use `describeEtcd`, which skips
// (one printed line) when the binary is missing, and fails instead when CI=true.
// TLS: makeTestCa/issueCert write throwaway PKI with `openssl`; EtcdServer({ tls }) serves https with
// client-cert auth. Auth: EtcdServer.enableAuth adds root + prefix-scoped users and turns auth on.
// Calls: EtcdServer.grpcCalls counts the calls of one gRPC method from etcd's own metrics.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect, createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import { freePort } from './free-port.js';

function commandPath(cmd: string): string | undefined {
  const r = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  const p = r.stdout.trim();
  return r.status === 0 && p !== '' ? p : undefined;
}

export function etcdBinary(): string | undefined {
  return commandPath('etcd');
}

export function opensslBinary(): string | undefined {
  return commandPath('openssl');
}

export interface DescribeEtcdOptions {
  /** Also needs `openssl` (TLS suites); same skip / fail-under-CI rule as the etcd binary. */
  openssl?: boolean;
}

/** `describe` when etcd (and openssl if asked) is installed; otherwise one skip line (or a failing test under CI=true). */
export function describeEtcd(name: string, fn: () => void, opts: DescribeEtcdOptions = {}): void {
  const missing: string[] = [];
  if (etcdBinary() === undefined) missing.push('etcd binary not found (apt-get install etcd-server)');
  if (opts.openssl && opensslBinary() === undefined) missing.push('openssl not found (apt-get install openssl)');
  if (missing.length === 0) {
    describe(name, fn);
    return;
  }
  if (process.env['CI'] === 'true') {
    describe(name, () => {
      it(missing.some((m) => m.startsWith('etcd')) ? 'needs the etcd binary' : 'needs openssl', () => {
        throw new Error(`${missing.join('; ')} but CI=true`);
      });
    });
    return;
  }
  process.stderr.write(`skipping "${name}": ${missing.join('; ')}\n`);
  describe.skip(name, fn);
}

// ---- throwaway PKI (openssl) -------------------------------------------------------------------------

export interface TestCa {
  certFile: string;
  keyFile: string;
}

export interface TestCert {
  certFile: string;
  keyFile: string;
}

function openssl(args: string[]): void {
  execFileSync(opensslBinary() ?? 'openssl', args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 15_000 });
}

/** A self-signed CA (EC P-256, 1 day) as `<dir>/<name>.crt` + `<name>.key`. */
export function makeTestCa(dir: string, name: string): TestCa {
  const certFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  // prettier-ignore
  openssl([
    'req', '-x509', '-new', '-nodes', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
    '-keyout', keyFile, '-out', certFile, '-days', '1', '-subj', `/CN=${name}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return { certFile, keyFile };
}

/**
 * A leaf certificate signed by `ca`: server certs carry SAN IP:127.0.0.1 / DNS:localhost and
 * serverAuth, client certs clientAuth (Go's etcd checks the extended key usage of both).
 */
export function issueCert(ca: TestCa, dir: string, name: string, kind: 'server' | 'client'): TestCert {
  const certFile = join(dir, `${name}.crt`);
  const keyFile = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  writeFileSync(
    ext,
    [
      'basicConstraints=critical,CA:FALSE',
      'keyUsage=critical,digitalSignature,keyEncipherment',
      kind === 'server' ? 'extendedKeyUsage=serverAuth' : 'extendedKeyUsage=clientAuth',
      ...(kind === 'server' ? ['subjectAltName=IP:127.0.0.1,DNS:localhost'] : []),
      '',
    ].join('\n'),
  );
  openssl(['req', '-new', '-nodes', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-keyout', keyFile, '-out', csr, '-subj', `/CN=${name}`]);
  // prettier-ignore
  openssl([
    'x509', '-req', '-in', csr, '-CA', ca.certFile, '-CAkey', ca.keyFile, '-CAcreateserial',
    '-out', certFile, '-days', '1', '-extfile', ext,
  ]);
  return { certFile, keyFile };
}

/** What EtcdServer needs for https with client-cert auth, and what its admin client presents. */
export interface EtcdTls {
  /** Trusted CA of client certs (`--trusted-ca-file`) and of the server cert for the admin client. */
  caFile: string;
  server: TestCert;
  /** The admin client's certificate (signed by caFile). */
  client: TestCert;
}

export interface EtcdServerOptions {
  /** Serve clients over https with `--client-cert-auth` (mTLS). */
  tls?: EtcdTls;
}

export interface EtcdUser {
  name: string;
  password: string;
  /** The user's role gets readwrite on this key prefix only. */
  readwritePrefix: string;
}

/** GET <endpoint>/health, presenting the admin client cert under TLS; true when etcd says healthy. */
function probeHealth(endpoint: string, tls: EtcdTls | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    const url = new URL('/health', endpoint);
    const opts = tls
      ? { ca: readFileSync(tls.caFile), cert: readFileSync(tls.client.certFile), key: readFileSync(tls.client.keyFile), timeout: 1000, agent: false as const }
      : { timeout: 1000, agent: false as const };
    const req = (tls ? httpsRequest : httpRequest)(url, opts, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => {
        try {
          const h = (JSON.parse(body) as { health?: unknown }).health;
          resolve(h === 'true' || h === true);
        } catch {
          resolve(false);
        }
      });
      res.on('error', () => resolve(false));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(false));
    req.end();
  });
}

export class EtcdServer {
  readonly dataDir = mkdtempSync(join(tmpdir(), 'flanneld-etcd-'));
  private proc: ChildProcess | undefined;
  private clientPort = 0;
  private peerPort = 0;
  private output = '';
  private admin: Etcd3 | undefined;
  /** Set by enableAuth: the admin client then authenticates as root. */
  private rootPassword: string | undefined;

  constructor(private readonly opts: EtcdServerOptions = {}) {}

  get endpoint(): string {
    return `${this.opts.tls ? 'https' : 'http'}://127.0.0.1:${this.clientPort}`;
  }

  async start(): Promise<this> {
    if (this.clientPort === 0) {
      this.clientPort = await freePort();
      this.peerPort = await freePort();
    }
    const bin = etcdBinary();
    if (!bin) throw new Error('etcd binary not found: apt-get install etcd-server');
    const peer = `http://127.0.0.1:${this.peerPort}`;
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('ETCD')) env[k] = v;
    const proc = spawn(
      bin,
      [
        '--name=flannel-test',
        `--data-dir=${join(this.dataDir, 'data')}`,
        `--listen-client-urls=${this.endpoint}`,
        `--advertise-client-urls=${this.endpoint}`,
        `--listen-peer-urls=${peer}`,
        `--initial-advertise-peer-urls=${peer}`,
        `--initial-cluster=flannel-test=${peer}`,
        '--log-level=error',
        ...(this.opts.tls
          ? [`--cert-file=${this.opts.tls.server.certFile}`, `--key-file=${this.opts.tls.server.keyFile}`, '--client-cert-auth', `--trusted-ca-file=${this.opts.tls.caFile}`]
          : []),
      ],
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.proc = proc;
    this.output = '';
    const keep = (b: Buffer) => {
      this.output = (this.output + b.toString()).slice(-4000);
    };
    proc.stdout?.on('data', keep);
    proc.stderr?.on('data', keep);
    const deadline = Date.now() + 15_000;
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`etcd exited with ${proc.exitCode}: ${this.output}`);
      if (await probeHealth(this.endpoint, this.opts.tls)) return this;
      if (Date.now() > deadline) throw new Error(`etcd did not become healthy: ${this.output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async stop(): Promise<void> {
    const p = this.proc;
    this.proc = undefined;
    if (!p || p.exitCode !== null) return;
    const exited = new Promise<void>((r) => p.once('exit', () => r()));
    p.kill('SIGTERM');
    const t = setTimeout(() => p.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(t);
  }

  /** Stop and start again on the same ports with the same data. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** A client for test setup (put/delete/compact). */
  client(): Etcd3 {
    const tls = this.opts.tls;
    this.admin ??= new Etcd3({
      hosts: this.endpoint,
      ...(tls ? { credentials: { rootCertificate: readFileSync(tls.caFile), certChain: readFileSync(tls.client.certFile), privateKey: readFileSync(tls.client.keyFile) } } : {}),
      ...(this.rootPassword !== undefined ? { auth: { username: 'root', password: this.rootPassword } } : {}),
    });
    return this.admin;
  }

  /**
   * Turn on etcd authentication: user `root` (role root) with `rootPassword`, and each of `users`
   * with a role of its own name granting readwrite on its prefix. client() is root afterwards.
   */
  async enableAuth(rootPassword: string, users: EtcdUser[] = []): Promise<void> {
    const c = this.client();
    await c.role('root').create();
    await c.user('root').create(rootPassword);
    await c.user('root').addRole('root');
    for (const u of users) {
      await c.role(u.name).create();
      await c.role(u.name).grant({ permission: 'Readwrite', range: c.range({ prefix: u.readwritePrefix }) });
      await c.user(u.name).create(u.password);
      await c.user(u.name).addRole(u.name);
    }
    await c.auth.authEnable();
    this.admin?.close();
    this.admin = undefined;
    this.rootPassword = rootPassword;
  }

  /**
   * How many calls of the gRPC `method` (e.g. `LeaseTimeToLive`) etcd has started since it started,
   * from its own Prometheus metrics at `<endpoint>/metrics` (`grpc_server_started_total`, go-grpc-prometheus,
   * served on the client URL: etcd's Documentation/metrics.md). Plain http only.
   */
  async grpcCalls(method: string): Promise<number> {
    if (this.opts.tls) throw new Error('grpcCalls reads /metrics over plain http only');
    const text = await (await fetch(new URL('/metrics', this.endpoint))).text();
    let n = 0;
    for (const line of text.split('\n')) {
      if (line.startsWith('grpc_server_started_total{') && line.includes(`grpc_method="${method}"`)) n += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    return n;
  }

  /** Compact the history up to the current revision (watches from older revisions get "compacted"). */
  async compact(): Promise<string> {
    const c = this.client();
    const res = await c.get('compaction-probe').exec();
    const rev = res.header.revision;
    await c.maintenance.status();
    await c.kv.compact({ revision: rev, physical: true });
    return rev;
  }

  async destroy(): Promise<void> {
    this.admin?.close();
    this.admin = undefined;
    await this.stop();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/** A loopback TCP proxy to etcd that tests can cut (drop all connections, refuse new ones) and restore. */
export class TcpProxy {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  private cut = false;
  port = 0;

  constructor(private readonly targetPort: number) {}

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    const server = createServer((client) => {
      if (this.cut) return client.destroy();
      const upstream = connect(this.targetPort, '127.0.0.1');
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream);
      upstream.pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    this.server = server;
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const addr = server.address();
    this.port = typeof addr === 'object' && addr ? addr.port : 0;
    return this;
  }

  /** Drop every connection and refuse new ones until restore(). */
  disconnect(): void {
    this.cut = true;
    for (const s of this.sockets) s.destroy();
  }

  restore(): void {
    this.cut = false;
  }

  async stop(): Promise<void> {
    this.disconnect();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

/** The client port of a started EtcdServer (for TcpProxy). */
export function etcdPort(server: EtcdServer): number {
  return Number(new URL(server.endpoint).port);
}

// Integration test support: Debian's etcd (`apt-get install etcd-server`) on free loopback ports in a
// temp data dir; stop / restart on the same ports; compaction. Suites use `describeEtcd`, which skips
// (one printed line) when the binary is missing, and fails instead when CI=true.
import { spawn, spawnSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import type { Server, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from '@jest/globals';
import { Etcd3 } from 'etcd3';

export function etcdBinary(): string | undefined {
  const r = spawnSync('sh', ['-c', 'command -v etcd'], { encoding: 'utf8' });
  const p = r.stdout.trim();
  return r.status === 0 && p !== '' ? p : undefined;
}

/** `describe` when etcd is installed; otherwise one skip line (or a failing test under CI=true). */
export function describeEtcd(name: string, fn: () => void): void {
  if (etcdBinary() !== undefined) {
    describe(name, fn);
    return;
  }
  if (process.env['CI'] === 'true') {
    describe(name, () => {
      it('needs the etcd binary', () => {
        throw new Error('etcd binary not found but CI=true: apt-get install etcd-server');
      });
    });
    return;
  }
  process.stderr.write(`skipping "${name}": etcd binary not found (apt-get install etcd-server)\n`);
  describe.skip(name, fn);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

export class EtcdServer {
  readonly dataDir = mkdtempSync(join(tmpdir(), 'flanneld-etcd-'));
  private proc: ChildProcess | undefined;
  private clientPort = 0;
  private peerPort = 0;
  private output = '';
  private admin: Etcd3 | undefined;

  get endpoint(): string {
    return `http://127.0.0.1:${this.clientPort}`;
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
      try {
        const res = await fetch(`${this.endpoint}/health`, { signal: AbortSignal.timeout(1000) });
        const body = (await res.json()) as { health?: unknown };
        if (body.health === 'true' || body.health === true) return this;
      } catch {
        // not up yet
      }
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
    this.admin ??= new Etcd3({ hosts: this.endpoint });
    return this.admin;
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

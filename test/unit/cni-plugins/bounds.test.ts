// install-cni against hostile sources (docs/bounds.md): a local HTTP server that sends a chunked body without
// end, one that declares a huge Content-Length, one that never answers, one that stops and one that
// trickles a byte every 5 s; archives with a zip-bomb entry, a tar.gz that inflates without end, plugin
// names on symlinks, hard links, devices and `..` paths, and plugins that are not PE images. Each counts
// what was written to disk (the download's write stream) or inflated (the error's `read`) and asserts the
// code. The deadlines run on a FakeClock: the tests advance it once the server has done its part.
// Before these bounds the download was `await res.arrayBuffer()` (the endless body filled memory, the silent
// servers hung for ever) and any entry named like a plugin whose data began with "MZ" was installed.
import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import tarStream from 'tar-stream';
import { isPeImage, readPlugins } from '../../../src/cni-plugins/archive.js';
import { DOWNLOAD_LIMITS, downloadToFile } from '../../../src/cni-plugins/download.js';
import { installCniPlugins, type InstallFs } from '../../../src/cni-plugins/install.js';
import { CniInstallError } from '../../../src/basics/errors.js';
import { expectCode } from '../../support/errors.js';
import { FakeClock } from '../../support/fake-clock.js';
import { peImage } from '../../support/pe.js';
import { waitFor } from '../../support/wait-for.js';

const require = createRequire(import.meta.url);
const MiB = 1024 * 1024;
const scratch = fs.mkdtempSync(join(tmpdir(), 'flanneld-cni-bounds-'));
afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));
let n = 0;
const fileOf = (data: Buffer) => {
  const p = join(scratch, `archive-${n++}`);
  fs.writeFileSync(p, data);
  return p;
};
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

interface TarEntry {
  name: string;
  data?: Buffer;
  type?: 'file' | 'symlink' | 'link' | 'character-device' | 'fifo';
  linkname?: string;
}
async function tgz(entries: TarEntry[]): Promise<Buffer> {
  const pack = tarStream.pack();
  for (const e of entries)
    pack.entry(
      { name: e.name, type: e.type ?? 'file', linkname: e.linkname, mode: 0o755 },
      e.type === undefined || e.type === 'file' ? (e.data ?? Buffer.alloc(0)) : Buffer.alloc(0),
    );
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack) chunks.push(c as Buffer);
  return gzipSync(Buffer.concat(chunks));
}

async function zipOf(entries: { name: string; data: Buffer; mode?: number }[]): Promise<Buffer> {
  // yazl (our zip writer, packaging/build.mjs) ships no types.
  const yazl = require('yazl') as { ZipFile: new () => { addBuffer(b: Buffer, name: string, o?: { mode?: number }): void; end(): void; outputStream: AsyncIterable<Buffer> } };
  const zip = new yazl.ZipFile();
  for (const e of entries) zip.addBuffer(e.data, e.name, e.mode === undefined ? {} : { mode: e.mode });
  zip.end();
  const chunks: Buffer[] = [];
  for await (const c of zip.outputStream) chunks.push(c);
  return Buffer.concat(chunks);
}

/** A write stream that counts and keeps nothing: what the download wrote to disk. */
function countingSink(): { open: (p: string) => Writable; written: () => number } {
  let written = 0;
  return {
    open: () =>
      new Writable({
        write(chunk: Buffer, _enc, done) {
          written += chunk.length;
          done();
        },
      }),
    written: () => written,
  };
}

describe('downloads from a hostile server', () => {
  let server: Server | undefined;
  let requests = 0;
  let responses: ServerResponse[] = [];
  async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
    requests = 0;
    responses = [];
    server = createServer((req, res) => {
      requests++;
      responses.push(res);
      handler(req, res);
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
    return `http://127.0.0.1:${(server.address() as { port: number }).port}/cni-plugins.tgz`;
  }
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    server = undefined;
  });

  it('a chunked body without end stops at the size cap; no more than the cap reaches the disk, and the temp dir is gone', async () => {
    let sent = 0;
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream' }); // no Content-Length: chunked
      const chunk = Buffer.alloc(64 * 1024, 7);
      const pump = () => {
        while (!res.destroyed) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
      };
      pump();
    });
    let written = 0;
    const counting: InstallFs = {
      ...fs,
      createWriteStream: ((p: string, o: never) => {
        const ws = fs.createWriteStream(p, o);
        const write = ws.write.bind(ws) as (c: Buffer, cb?: () => void) => boolean;
        ws.write = ((c: Buffer, ...rest: never[]) => {
          written += c.length;
          return write(c, ...rest);
        }) as typeof ws.write;
        return ws;
      }) as typeof fs.createWriteStream,
    };
    const tmpDir = fs.mkdtempSync(join(scratch, 'tmp-'));
    const err = await expectCode(
      installCniPlugins({ sources: [{ location: url, sha256: '0'.repeat(64) }], binDir: join(scratch, 'bin-endless'), tmpDir, fs: counting, limits: { maxBytes: 1 * MiB } }),
      CniInstallError,
      'FLANNEL_ERR_CNI_TOO_LARGE',
    );
    expect(err.context).toMatchObject({ limit: 'download', max: 1 * MiB });
    expect(written).toBeGreaterThan(0);
    expect(written).toBeLessThanOrEqual(1 * MiB);
    expect(sent).toBeGreaterThan(1 * MiB);
    expect(fs.readdirSync(tmpDir)).toEqual([]);
    expect(fs.existsSync(join(scratch, 'bin-endless'))).toBe(false);
  });

  it('a Content-Length over the cap is refused before the body is read', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Length': String(4 * 1024 * MiB) });
      res.write(Buffer.alloc(1024));
    });
    const sink = countingSink();
    const err = await expectCode(downloadToFile(url, 'unused', { createWriteStream: sink.open }), CniInstallError, 'FLANNEL_ERR_CNI_TOO_LARGE');
    expect(err.context).toMatchObject({ limit: 'download', max: DOWNLOAD_LIMITS.maxBytes, read: 0 });
    expect(sink.written()).toBe(0);
  });

  it('a server that accepts and never answers hits the connect deadline', async () => {
    const url = await serve(() => undefined);
    const clock = new FakeClock();
    const sink = countingSink();
    const p = downloadToFile(url, 'unused', { clock, createWriteStream: sink.open });
    const result = expectCode(p, CniInstallError, 'FLANNEL_ERR_CNI_TIMEOUT');
    await waitFor(() => requests === 1, 'the request to arrive');
    await clock.advance(DOWNLOAD_LIMITS.connectTimeoutMs);
    const err = await result;
    expect(err.context).toMatchObject({ deadline: 'connect', timeoutMs: 30_000, received: 0 });
    expect(sink.written()).toBe(0);
  });

  it('a server that stops sending hits the idle deadline', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200);
      res.write('MZ');
    });
    const clock = new FakeClock();
    const sink = countingSink();
    const result = expectCode(downloadToFile(url, 'unused', { clock, createWriteStream: sink.open }), CniInstallError, 'FLANNEL_ERR_CNI_TIMEOUT');
    await waitFor(() => sink.written() === 2, 'the two bytes to be written', { intervalMs: 1 });
    await clock.advance(DOWNLOAD_LIMITS.idleTimeoutMs);
    const err = await result;
    expect(err.context).toMatchObject({ deadline: 'idle', received: 2 });
  });

  it('a server trickling one byte every 5 s (never idle long enough) hits the overall deadline', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200);
      res.write('x');
    });
    const clock = new FakeClock();
    const sink = countingSink();
    let settled = false;
    const result = expectCode(downloadToFile(url, 'unused', { clock, createWriteStream: sink.open }), CniInstallError, 'FLANNEL_ERR_CNI_TIMEOUT').finally(() => (settled = true));
    let bytes = 0;
    while (!settled) {
      bytes++;
      await waitFor(() => settled || sink.written() === bytes, `byte ${bytes} to be written`, { intervalMs: 1 });
      await clock.advance(5_000);
      if (!responses[0].destroyed) responses[0].write('x');
    }
    const err = await result;
    expect(err.context).toMatchObject({ deadline: 'overall', timeoutMs: DOWNLOAD_LIMITS.overallTimeoutMs });
    // One byte per 5 s for the 15 minutes: 180 bytes, and then it ends.
    expect(err.context.received).toBe(DOWNLOAD_LIMITS.overallTimeoutMs / 5_000);
    expect(sink.written()).toBe(DOWNLOAD_LIMITS.overallTimeoutMs / 5_000);
  });
});

describe('hostile archives', () => {
  const small = { maxEntryBytes: 1 * MiB, maxTotalBytes: 4 * MiB };
  const rest = (except: string) => ['flannel.exe', 'win-overlay.exe', 'win-bridge.exe', 'host-local.exe'].filter((f) => f !== except).map((f) => ({ name: f, data: peImage(f) }));

  it('a zip bomb entry is refused on its declared size, before a byte is inflated', async () => {
    const bomb = await zipOf([...rest('win-bridge.exe'), { name: 'win-bridge.exe', data: Buffer.alloc(32 * MiB) }]);
    expect(bomb.length).toBeLessThan(1 * MiB); // it is a bomb: 32 MiB of zeros in a few KB
    const err = await expectCode(readPlugins(fileOf(bomb), 'bomb.zip', small), CniInstallError, 'FLANNEL_ERR_CNI_TOO_LARGE');
    expect(err.context).toMatchObject({ limit: 'entry', max: 1 * MiB });
    // Only the plugins before it were inflated (three tiny PE stubs).
    expect(err.context.read).toBeLessThan(1024);
  });

  it('a tar.gz plugin entry over the cap is refused on its header', async () => {
    const bomb = await tgz([{ name: 'win-bridge.exe', data: Buffer.alloc(8 * MiB) }]);
    const err = await expectCode(readPlugins(fileOf(bomb), 'bomb.tgz', small), CniInstallError, 'FLANNEL_ERR_CNI_TOO_LARGE');
    expect(err.context).toMatchObject({ limit: 'entry' });
    expect(err.context.read).toBeLessThan(1 * MiB);
  });

  it('a tar.gz that inflates past the total cap (entries we would skip) stops there', async () => {
    const bomb = await tgz(Array.from({ length: 16 }, (_, i) => ({ name: `junk-${i}.bin`, data: Buffer.alloc(1 * MiB) })));
    const err = await expectCode(readPlugins(fileOf(bomb), 'bomb.tgz', small), CniInstallError, 'FLANNEL_ERR_CNI_TOO_LARGE');
    expect(err.context).toMatchObject({ limit: 'total', max: 4 * MiB });
    expect(err.context.read).toBeLessThanOrEqual(4 * MiB);
  });

  it.each<[string, TarEntry]>([
    ['a symlink', { name: 'win-bridge.exe', type: 'symlink', linkname: '/etc/passwd' }],
    ['a hard link', { name: 'win-bridge.exe', type: 'link', linkname: 'flannel.exe' }],
    ['a character device', { name: 'win-bridge.exe', type: 'character-device' }],
    ['a FIFO', { name: 'win-bridge.exe', type: 'fifo' }],
    ['a ../ path', { name: '../../Windows/System32/win-bridge.exe', data: peImage('b') }],
    ['an absolute path', { name: '/opt/cni/bin/win-bridge.exe', data: peImage('b') }],
  ])('a tar.gz with the plugin as %s is refused', async (_what, entry) => {
    const archive = await tgz([{ name: 'flannel.exe', data: peImage('f') }, entry]);
    const err = await expectCode(readPlugins(fileOf(archive), 'hostile.tgz'), CniInstallError, 'FLANNEL_ERR_CNI_ENTRY');
    expect(err.context.entry).toBe(entry.name);
  });

  it('a zip with the plugin as a symlink (Unix mode 120777) is refused', async () => {
    const archive = await zipOf([{ name: 'win-bridge.exe', data: Buffer.from('/etc/passwd'), mode: 0o120777 }]);
    const err = await expectCode(readPlugins(fileOf(archive), 'hostile.zip'), CniInstallError, 'FLANNEL_ERR_CNI_ENTRY');
    expect(err.context.entry).toBe('win-bridge.exe');
  });

  it('a zip with the plugin under ../ is refused', async () => {
    // yazl will not write a ../ name; write xx/ and patch it (same length, local and central header).
    const good = await zipOf([{ name: 'xx/win-bridge.exe', data: peImage('b') }]);
    const hostile = Buffer.from(good.toString('latin1').replaceAll('xx/win-bridge.exe', '../win-bridge.exe'), 'latin1');
    const err = await expectCode(readPlugins(fileOf(hostile), 'hostile.zip'), CniInstallError, 'FLANNEL_ERR_CNI_ENTRY');
    expect(err.context.entry).toBe('../win-bridge.exe');
  });

  it.each([
    ['a text file starting with MZ, in a tar.gz', 'plugins.tgz', () => tgz([{ name: 'win-bridge.exe', data: Buffer.from('MZ but no PE header at all') }])],
    [
      'an MZ header whose e_lfanew points past the end, in a zip',
      'plugins.zip',
      () => zipOf([{ name: 'win-bridge.exe', data: Buffer.concat([peImage('b').subarray(0, 0x3c), Buffer.from([0xff, 0xff, 0, 0])]) }]),
    ],
    ['a bare flannel-amd64.exe that is not a PE image', 'flannel-amd64.exe', async () => Buffer.concat([Buffer.from('MZ'), Buffer.alloc(200)])],
  ])('%s is refused as FLANNEL_ERR_CNI_NOT_PE', async (_what, name, make) => {
    await expectCode(readPlugins(fileOf(await make()), name), CniInstallError, 'FLANNEL_ERR_CNI_NOT_PE');
  });

  // A real Windows executable, built here with the Windows harness's toolchain (mingw-w64, which .ci/run
  // installs): the check accepts what a linker really writes, not only the minimal header of peImage.
  const mingw = 'x86_64-w64-mingw32-gcc';
  const hasMingw = (() => {
    try {
      execFileSync(mingw, ['--version'], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  })();
  (hasMingw ? it : it.skip)('a Windows executable built with mingw-w64 is a PE image, and installs as a plugin', async () => {
    const src = join(scratch, 'plugin.c');
    const exe = join(scratch, 'win-bridge.exe');
    fs.writeFileSync(src, 'int main(void) { return 0; }\n');
    execFileSync(mingw, ['-O2', '-o', exe, src]);
    const data = fs.readFileSync(exe);
    expect(isPeImage(data)).toBe(true);
    const archive = await tgz(['flannel.exe', 'win-overlay.exe', 'host-local.exe'].map((f) => ({ name: f, data: peImage(f) })).concat([{ name: 'win-bridge.exe', data }]));
    const binDir = join(scratch, 'bin-mingw');
    await installCniPlugins({ sources: [{ location: fileOf(archive), sha256: sha(archive) }], binDir });
    expect(fs.readFileSync(join(binDir, 'win-bridge.exe'))).toEqual(data);
  });

  it('a local source that is a FIFO is refused without reading it (a read would block)', async () => {
    const fifo = join(scratch, 'plugins.fifo');
    execFileSync('mkfifo', [fifo]);
    const err = await expectCode(
      installCniPlugins({ sources: [{ location: fifo, sha256: sha(Buffer.alloc(0)) }], binDir: join(scratch, 'bin-fifo') }),
      CniInstallError,
      'FLANNEL_ERR_CNI_SOURCE',
    );
    expect(err.context.source).toBe(fifo);
  });

  it('a FIFO in place of an installed plugin is not read (it would block): the plugin is installed again', async () => {
    const archive = await tgz(['flannel.exe', 'win-overlay.exe', 'win-bridge.exe', 'host-local.exe'].map((f) => ({ name: f, data: peImage(f) })));
    const sources = [{ location: fileOf(archive), sha256: sha(archive) }];
    const binDir = join(scratch, 'bin-fifo-plugin');
    await installCniPlugins({ sources, binDir });
    fs.rmSync(join(binDir, 'host-local.exe'));
    execFileSync('mkfifo', [join(binDir, 'host-local.exe')]);
    const report = await installCniPlugins({ sources, binDir });
    expect(report).toMatchObject({ fromRecord: false, installed: ['host-local.exe'] });
    expect(fs.readFileSync(join(binDir, 'host-local.exe'))).toEqual(peImage('host-local.exe'));
  });

  it('a local source over the size cap is refused on its size', async () => {
    const big = fileOf(Buffer.alloc(2 * MiB));
    const err = await expectCode(
      installCniPlugins({ sources: [{ location: big, sha256: sha(Buffer.alloc(2 * MiB)) }], binDir: join(scratch, 'bin-big'), limits: { maxBytes: 1 * MiB } }),
      CniInstallError,
      'FLANNEL_ERR_CNI_TOO_LARGE',
    );
    expect(err.context).toMatchObject({ limit: 'download', read: 0 });
  });
});

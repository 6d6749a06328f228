// The pure parts of install-cni: what a download is (by magic bytes), which plugin a published name
// stands for (flannel-io/cni-plugin publishes flannel-amd64.exe; the CNI config's "type": "flannel"
// makes containerd run flannel.exe), --sha256 values, and archives that hold a plugin twice or under a
// directory (only the base name is ever used). Hostile sources and archives: bounds.test.ts.
import { describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import tarStream from 'tar-stream';
import { pluginFileFor, readPlugins, sourceKind } from '../../../src/cni-plugins/archive.js';
import { installCniPlugins, normalizeSha256 } from '../../../src/cni-plugins/install.js';
import { FlannelError } from '../../../src/basics/errors.js';
import { peImage } from '../../support/pe.js';
import { FakeClock } from '../../support/fake-clock.js';

const scratch = fs.mkdtempSync(join(tmpdir(), 'flanneld-cni-plugins-'));
let n = 0;
/** `data` in a file of its own (readPlugins reads a file). */
function fileOf(data: Buffer): string {
  const p = join(scratch, `source-${n++}`);
  fs.writeFileSync(p, data);
  return p;
}

async function tgz(files: Record<string, string | Buffer>): Promise<Buffer> {
  const pack = tarStream.pack();
  for (const [name, data] of Object.entries(files)) pack.entry({ name }, data);
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack) chunks.push(c as Buffer);
  return gzipSync(Buffer.concat(chunks));
}

describe('cni-plugins', () => {
  it.each([
    [Buffer.from('PK\x03\x04rest'), 'zip'],
    [gzipSync('x'), 'tgz'],
    [Buffer.from('MZ\x90\x00'), 'exe'],
    [Buffer.from('<html>Not Found</html>'), undefined],
    [Buffer.alloc(0), undefined],
  ])('sourceKind(%j) = %s', (data, kind) => {
    expect(sourceKind(data)).toBe(kind);
  });

  it.each([
    ['flannel-amd64.exe', 'flannel.exe'],
    ['./win-overlay.exe', 'win-overlay.exe'],
    ['cni\\bin\\HOST-LOCAL.EXE', 'host-local.exe'],
    ['https://github.com/flannel-io/cni-plugin/releases/download/v1.9.1-flannel3/flannel-amd64.exe', 'flannel.exe'],
    ['https://mirror.example/cni/flannel-amd64.exe?X-Amz-Signature=abc#x', 'flannel.exe'],
    ['static.exe', undefined],
    ['flannel', undefined],
  ])('pluginFileFor(%s) = %s', (name, file) => {
    expect(pluginFileFor(name)).toBe(file);
  });

  it.each([
    ['A'.repeat(64), 'a'.repeat(64)],
    [`sha256:${'0'.repeat(64)}`, '0'.repeat(64)],
    [` ${'f'.repeat(64)} `, 'f'.repeat(64)],
    ['a'.repeat(63), undefined],
    ['g'.repeat(64), undefined],
  ])('normalizeSha256(%s) = %s', (raw, want) => {
    expect(normalizeSha256(raw)).toBe(want);
  });

  it('reads only the wanted plugins, by base name: a directory in the archive places nothing anywhere', async () => {
    const plugins = await readPlugins(fileOf(await tgz({ 'bin/win-bridge.exe': peImage('b'), './static.exe': peImage('s'), 'x/host-local.exe': peImage('h') })), 'a.tgz');
    expect([...plugins.keys()].sort()).toEqual(['host-local.exe', 'win-bridge.exe']);
    expect(plugins.get('win-bridge.exe')).toEqual(peImage('b'));
  });

  it('refuses an archive holding one plugin twice, a bare exe of another name, and something that is no archive', async () => {
    const codes = await Promise.all(
      [
        readPlugins(fileOf(await tgz({ 'flannel.exe': peImage('1'), 'flannel-amd64.exe': peImage('2') })), 'dup.tgz'),
        readPlugins(fileOf(peImage('x')), 'kube-proxy.exe'),
        readPlugins(fileOf(Buffer.from('<html>')), 'page.html'),
      ].map((p) =>
        p.then(
          () => 'no error',
          (e: unknown) => (e instanceof FlannelError ? e.code : String(e)),
        ),
      ),
    );
    expect(codes).toEqual(['FLANNEL_ERR_CNI_ARCHIVE', 'FLANNEL_ERR_CNI_ARCHIVE', 'FLANNEL_ERR_CNI_ARCHIVE']);
  });
});

describe('install-cni replacing a running plugin (Windows: EPERM/EBUSY while the .exe runs)', () => {
  async function setup() {
    const dir = fs.mkdtempSync(join(tmpdir(), 'flanneld-cni-unit-'));
    const archive = await tgz({ 'flannel.exe': peImage('f'), 'win-overlay.exe': peImage('o'), 'win-bridge.exe': peImage('b'), 'host-local.exe': peImage('h') });
    fs.writeFileSync(join(dir, 'p.tgz'), archive);
    const sources = [{ location: join(dir, 'p.tgz'), sha256: createHash('sha256').update(archive).digest('hex') }];
    return { dir, sources, binDir: join(dir, 'bin') };
  }
  /** node:fs whose rename onto `name` fails with `code` the first `times` calls (a plugin in use on Windows). */
  const busyRename = (name: string, code: string, times = Infinity) => ({
    ...fs,
    renameSync: (a: fs.PathLike, b: fs.PathLike) => {
      if (String(b).endsWith(name) && times-- > 0) throw Object.assign(new Error(`${code}: operation not permitted, rename`), { code });
      fs.renameSync(a, b);
    },
  });

  it('retries a busy rename with growing waits, then succeeds', async () => {
    const { dir, sources, binDir } = await setup();
    const clock = new FakeClock({ instant: true });
    const report = await installCniPlugins({ sources, binDir, clock, fs: busyRename('win-bridge.exe', 'EBUSY', 2) });
    expect(report.installed).toEqual(['flannel.exe', 'win-overlay.exe', 'win-bridge.exe', 'host-local.exe']);
    expect(clock.sleeps).toEqual([50, 100]);
    expect(fs.readFileSync(join(binDir, 'win-bridge.exe'))).toEqual(peImage('b'));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('gives up after about 5 s with a coded error naming what was replaced and what was kept', async () => {
    const { dir, sources, binDir } = await setup();
    fs.mkdirSync(binDir);
    fs.writeFileSync(join(binDir, 'win-bridge.exe'), 'MZ old');
    const clock = new FakeClock({ instant: true });
    const err = await installCniPlugins({ sources, binDir, clock, fs: busyRename('win-bridge.exe', 'EPERM') }).then(
      () => undefined,
      (e: unknown) => e as FlannelError,
    );
    expect(err?.code).toBe('FLANNEL_ERR_CNI_INSTALL');
    expect(err?.context).toMatchObject({ replaced: 'flannel.exe,win-overlay.exe', kept: 'win-bridge.exe,host-local.exe' });
    expect(clock.sleeps.reduce((a, b) => a + b, 0)).toBe(5050);
    expect(fs.readFileSync(join(binDir, 'win-bridge.exe'), 'utf8')).toBe('MZ old');
    expect(fs.readdirSync(binDir).sort()).toEqual(['flannel.exe', 'win-bridge.exe', 'win-overlay.exe']); // no temp dir left
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

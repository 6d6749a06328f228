// The pure parts of install-cni: what a download is (by magic bytes), which plugin a published name
// stands for (flannel-io/cni-plugin publishes flannel-amd64.exe; the CNI config's "type": "flannel"
// makes containerd run flannel.exe), --sha256 values, and archives that hold a plugin twice or under a
// path that tries to leave the directory (only the base name is ever used).
import { describe, expect, it } from '@jest/globals';
import { gzipSync } from 'node:zlib';
import tarStream from 'tar-stream';
import { pluginFileFor, readPlugins, sourceKind } from '../../src/cni-plugins/archive.js';
import { normalizeSha256 } from '../../src/cni-plugins/install.js';
import { FlannelError } from '../../src/errors.js';

async function tgz(files: Record<string, string>): Promise<Buffer> {
  const pack = tarStream.pack();
  for (const [name, text] of Object.entries(files)) pack.entry({ name }, text);
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

  it('reads only the wanted plugins, by base name: a ../ path cannot place a file anywhere', async () => {
    const plugins = await readPlugins(await tgz({ '../../evil/win-bridge.exe': 'MZ b', './static.exe': 'MZ s', 'x/host-local.exe': 'MZ h' }), 'a.tgz');
    expect([...plugins.keys()].sort()).toEqual(['host-local.exe', 'win-bridge.exe']);
    expect(plugins.get('win-bridge.exe')!.toString()).toBe('MZ b');
  });

  it('refuses an archive holding one plugin twice, a bare exe of another name, and something that is no archive', async () => {
    const codes = await Promise.all(
      [
        readPlugins(await tgz({ 'flannel.exe': 'MZ 1', 'flannel-amd64.exe': 'MZ 2' }), 'dup.tgz'),
        readPlugins(Buffer.from('MZ x'), 'kube-proxy.exe'),
        readPlugins(Buffer.from('<html>'), 'page.html'),
      ].map((p) => p.then(() => 'no error', (e: unknown) => (e instanceof FlannelError ? e.code : String(e)))),
    );
    expect(codes).toEqual(['FLANNEL_ERR_CNI_ARCHIVE', 'FLANNEL_ERR_CNI_ARCHIVE', 'FLANNEL_ERR_CNI_ARCHIVE']);
  });
});

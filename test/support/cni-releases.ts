// Stand-ins for the CNI plugin releases src/cni-plugins/pinned.json pins, laid out as upstream publishes
// them, for tests that install them (no download is possible here, and the real binaries are not
// shipped): flannel-io/cni-plugin's bare `flannel-amd64.exe`; containernetworking/plugins'
// cni-plugins-windows-amd64-<tag>.tgz with `./win-overlay.exe`-style entries and more plugins than
// flannel needs; microsoft/windows-container-networking's windows-container-networking-cni-amd64-<tag>.zip,
// made by its Makefile's `release` target (`zip -j`: flat entries sdnbridge.exe, sdnoverlay.exe, nat.exe).
// Each plugin is a minimal PE image naming itself and the release (./pe.ts).
import { createRequire } from 'node:module';
import { gzipSync } from 'node:zlib';
import tarStream from 'tar-stream';
import pinned from '../../src/cni-plugins/pinned.json' with { type: 'json' };
import { peImage } from './pe.js';
import { releaseFileName, testRelease, type TestRelease } from './pinned-build.js';

const require = createRequire(import.meta.url);

/** A minimal PE image whose body names the plugin and release. */
export const exe = (name: string, release: string): Buffer => peImage(` ${name} ${release} ` + 'x'.repeat(2000));

export async function zipOf(files: Record<string, Buffer>): Promise<Buffer> {
  // yazl (our zip writer, packaging/build.mjs) ships no types.
  const yazl = require('yazl') as { ZipFile: new () => { addBuffer(b: Buffer, name: string): void; end(): void; outputStream: AsyncIterable<Buffer> } };
  const zip = new yazl.ZipFile();
  for (const [name, data] of Object.entries(files)) zip.addBuffer(data, name);
  zip.end();
  const chunks: Buffer[] = [];
  for await (const c of zip.outputStream) chunks.push(c);
  return Buffer.concat(chunks);
}

export async function tgzOf(files: Record<string, Buffer>): Promise<Buffer> {
  const pack = tarStream.pack();
  for (const [name, data] of Object.entries(files)) pack.entry({ name, mode: 0o755 }, data);
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack) chunks.push(c as Buffer);
  return gzipSync(Buffer.concat(chunks));
}

/** The windows-container-networking release zip's layout (`zip -j` of its out/ folder). */
export const wcnZip = (release: string): Promise<Buffer> =>
  zipOf({ 'nat.exe': exe('nat.exe', release), 'sdnbridge.exe': exe('sdnbridge.exe', release), 'sdnoverlay.exe': exe('sdnoverlay.exe', release) });

/** One stand-in release file, the pin that names it and the plugins it holds. */
export interface FakeRelease {
  file: string;
  data: Buffer;
  pin: TestRelease;
  plugins: Record<string, Buffer>;
}

/**
 * A stand-in for every pinned release, under the real release's file name (what --pinned-dir looks for),
 * with pins on `urlBase` (default: the real GitHub URLs, never fetched when the files are local).
 */
export async function fakeReleases(urlBase?: string): Promise<{ releases: FakeRelease[]; dualStack: FakeRelease[] }> {
  const tag = 'test';
  const plugins = {
    flannel: { 'flannel.exe': exe('flannel.exe', tag) },
    cni: { 'win-overlay.exe': exe('win-overlay.exe', tag), 'win-bridge.exe': exe('win-bridge.exe', tag), 'host-local.exe': exe('host-local.exe', tag) },
    wcn: { 'sdnbridge.exe': exe('sdnbridge.exe', tag) },
  };
  const data: Record<string, Buffer> = {
    flannel: plugins.flannel['flannel.exe'],
    'cni-plugins': await tgzOf({
      './win-overlay.exe': plugins.cni['win-overlay.exe'],
      './win-bridge.exe': plugins.cni['win-bridge.exe'],
      './host-local.exe': plugins.cni['host-local.exe'],
      './static.exe': exe('static.exe', tag),
    }),
    'windows-container-networking': await wcnZip(tag),
  };
  const held: Record<string, Record<string, Buffer>> = { flannel: plugins.flannel, 'cni-plugins': plugins.cni, 'windows-container-networking': plugins.wcn };
  const fake = (r: { name: string; url: string; provides: object }): FakeRelease => {
    const url = urlBase ? `${urlBase}${new URL(r.url).pathname}` : r.url;
    const d = data[r.name];
    if (!d) throw new Error(`no stand-in for the pinned release ${r.name}`);
    const provides = Object.fromEntries(Object.entries(r.provides).filter((e): e is [string, string] => typeof e[1] === 'string'));
    return { file: releaseFileName(r.url), data: d, pin: testRelease(r.name, url, d, provides), plugins: held[r.name] };
  };
  return { releases: pinned.releases.map(fake), dualStack: pinned.dualStack.map(fake) };
}

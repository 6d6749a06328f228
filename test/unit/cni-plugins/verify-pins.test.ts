// `flanneld install-cni --verify-pins`: the first real download of the pinned releases (here from a
// local mirror with GitHub's paths) is compared with src/cni-plugins/pinned.json and recorded; a
// mismatch is FLANNEL_ERR_CNI_HASH (exit 1) and nothing is installed.
import { afterEach, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import * as nodeFs from 'node:fs';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { command, pinnedLocation } from '../../../src/commands/install-cni.js';
import { checkPins, mirrored, PINS_RECORD } from '../../../src/cni-plugins/verify-pins.js';
import { DOWNLOAD_LIMITS } from '../../../src/cni-plugins/download.js';
import { loadSource } from '../../../src/cni-plugins/install.js';
import { systemClock } from '../../../src/basics/clock.js';
import pinned from '../../../src/cni-plugins/pinned.json' with { type: 'json' };

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
let server: Server | undefined;
let dir: string | undefined;
afterEach(async () => {
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
  server = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A mirror of github.com serving `files` by path; returns its base URL and the paths asked for. */
async function mirror(files: Record<string, Buffer>): Promise<{ url: string; asked: string[] }> {
  const asked: string[] = [];
  server = createServer((req, res) => {
    asked.push(req.url ?? '');
    const body = files[req.url ?? ''];
    res.writeHead(body ? 200 : 404).end(body);
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/github`, asked };
}

describe('install-cni --pinned --pinned-dir (the plugins inside the image)', () => {
  it('takes a pinned file from the folder when it is there, with the same SHA-256 pin, and downloads nothing', async () => {
    const m = await mirror({});
    dir = mkdtempSync(join(tmpdir(), 'flanneld-pinned-dir-'));
    const local = join(dir, 'cni-plugins');
    mkdirSync(local);
    for (const r of [...pinned.releases, ...pinned.dualStack]) writeFileSync(join(local, r.url.split('/').pop()!), 'a tampered file');
    const err: string[] = [];
    const code = await command.run(['--pinned', '--pinned-dir', local, '--mirror', m.url, '--bin-dir', join(dir, 'bin')], {
      stdout: () => undefined,
      stderr: (t) => err.push(t),
      env: {},
      platform: 'linux',
    });
    expect(code).toBe(1);
    expect(err.join('')).toContain(`${join(local, 'flannel-amd64.exe')} has SHA-256 ${sha(Buffer.from('a tampered file'))}`);
    expect(m.asked).toEqual([]);
    expect(pinnedLocation('https://github.com/o/r/releases/download/v1/a.tgz', '', '/img/cni', () => false)).toBe('https://github.com/o/r/releases/download/v1/a.tgz');
    expect(pinnedLocation('https://github.com/o/r/releases/download/v1/a.tgz', '', '/img/cni', () => true)).toBe(join('/img/cni', 'a.tgz'));
  });
});

describe('install-cni --verify-pins', () => {
  it('downloads each pinned release (the dual-stack sdnbridge one too), records its SHA-256 beside the plugins, and fails on a mismatch without installing', async () => {
    const all = [...pinned.releases, ...pinned.dualStack];
    const paths = all.map((r) => new URL(r.url).pathname);
    const files = Object.fromEntries(paths.map((p, i) => [`/github${p}`, Buffer.from(`not the release ${i}`)]));
    const m = await mirror(files);
    dir = mkdtempSync(join(tmpdir(), 'flanneld-pins-'));
    const out: string[] = [];
    const err: string[] = [];
    const code = await command.run(['--verify-pins', '--mirror', m.url, '--bin-dir', dir], { stdout: (t) => out.push(t), stderr: (t) => err.push(t), env: {}, platform: 'linux' });
    expect(code).toBe(1);
    expect(err.join('')).toMatch(/\[FLANNEL_ERR_CNI_HASH\]/);
    expect(m.asked).toEqual(paths.map((p) => `/github${p}`));
    const record = JSON.parse(readFileSync(join(dir, PINS_RECORD), 'utf8')) as { checkedAt: string; releases: { name: string; pinned: string; actual: string; match: boolean }[] };
    expect(record.releases).toEqual(all.map((r, i) => expect.objectContaining({ name: r.name, pinned: r.sha256, actual: sha(files[`/github${paths[i]}`]), match: false })));
    expect(out.join('')).toContain(`MISMATCH ${pinned.releases[0].name}`);
    expect(out.join('')).toContain(`MISMATCH windows-container-networking v0.3.1`);
    expect(readdirSync(dir)).toEqual([PINS_RECORD]); // nothing installed
  });

  it('a download that matches its pin is recorded as a match', async () => {
    const body = Buffer.from('the release');
    const m = await mirror({ '/github/o/r/releases/download/v1/a.exe': body });
    const checks = await checkPins([{ name: 'a', version: 'v1', url: 'https://github.com/o/r/releases/download/v1/a.exe', sha256: sha(body) }], { mirror: m.url });
    expect(checks).toEqual([{ name: 'a', version: 'v1', url: `${m.url}/o/r/releases/download/v1/a.exe`, pinned: sha(body), actual: sha(body), match: true }]);
  });

  it('loadSource returns the SHA-256 it computed from the bytes (what --verify-pins records)', async () => {
    dir = mkdtempSync(join(tmpdir(), 'flanneld-load-source-'));
    const file = join(dir, 'a.zip');
    const body = Buffer.from('the release');
    writeFileSync(file, body);
    const got = await loadSource({ location: file, sha256: sha(body) }, dir, 0, { limits: DOWNLOAD_LIMITS, clock: systemClock, fs: nodeFs });
    expect(got).toEqual({ path: file, sha256: sha(body) });
  });

  it('--mirror rewrites only github.com URLs; it is refused with --source', async () => {
    expect(mirrored('https://github.com/a/b', 'https://m.example/gh/')).toBe('https://m.example/gh/a/b');
    expect(mirrored('https://example.com/a', 'https://m.example')).toBe('https://example.com/a');
    // A source that matches its --sha256 and a bin dir holding one file: refused before either is used.
    dir = mkdtempSync(join(tmpdir(), 'flanneld-pins-mirror-'));
    const source = join(dir, 'x.zip');
    writeFileSync(source, 'an archive');
    const bin = join(dir, 'bin');
    mkdirSync(bin);
    writeFileSync(join(bin, 'host-local.exe'), 'the installed plugin');
    const err: string[] = [];
    const code = await command.run(['--source', source, '--sha256', sha(Buffer.from('an archive')), '--bin-dir', bin, '--mirror', 'https://m'], {
      stdout: () => undefined,
      stderr: (t) => err.push(t),
      env: {},
      platform: 'linux',
    });
    expect(code).toBe(2);
    expect(readdirSync(bin)).toEqual(['host-local.exe']);
    expect(readFileSync(join(bin, 'host-local.exe'), 'utf8')).toBe('the installed plugin');
    expect(err.join('')).toMatch(/--mirror applies to --pinned and --verify-pins only/);
  });
});

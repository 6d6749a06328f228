// `flanneld install-cni` through the built binary (dist/main.js), against archives shaped like the upstream
// releases (containernetworking/plugins' cni-plugins-windows-amd64-<tag>.tgz with `./win-overlay.exe`
// entries; flannel-io/cni-plugin's bare flannel-amd64.exe asset; a zip) served by a real HTTP server on
// 127.0.0.1, and from file paths: the hash is checked before anything is written, a bad hash or a corrupt
// archive leaves the installed plugins as they were, and a rerun with the same files writes nothing.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pinned from '../../src/cni-plugins/pinned.json' with { type: 'json' };
import { MAIN, runFlanneld } from '../support/flanneld-process.js';
import { exe, tgzOf, wcnZip, zipOf } from '../support/cni-releases.js';

const PLUGINS = ['flannel.exe', 'win-overlay.exe', 'win-bridge.exe', 'host-local.exe'];
/** A modification time long before the test. */
const PAST = new Date('2020-01-01T00:00:00Z');

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

const run = (args: string[]) => runFlanneld(['install-cni', ...args]);

let dir: string;
let server: Server;
let base: string;
const served = new Map<string, Buffer>();
const requests: string[] = [];
let zipV1: Buffer;
let tgzV2: Buffer;
let flannelV2: Buffer;

beforeAll(async () => {
  if (!existsSync(MAIN)) throw new Error('dist/main.js is missing: run `npm run build` first (npm test does)');
  dir = mkdtempSync(join(tmpdir(), 'flanneld-install-cni-'));
  zipV1 = await zipOf(Object.fromEntries(PLUGINS.map((p) => [`cni/bin/${p}`, exe(p, 'v1')])));
  // containernetworking/plugins' layout: ./<plugin>.exe entries, more plugins than we need.
  tgzV2 = await tgzOf({
    './win-overlay.exe': exe('win-overlay.exe', 'v2'),
    './win-bridge.exe': exe('win-bridge.exe', 'v2'),
    './host-local.exe': exe('host-local.exe', 'v2'),
    './static.exe': exe('static.exe', 'v2'),
    './README.md': Buffer.from('readme'),
  });
  flannelV2 = exe('flannel.exe', 'v2');
  served.set('/plugins-v1.zip', zipV1);
  served.set('/cni-plugins-windows-amd64-v2.tgz', tgzV2);
  served.set('/broken.tgz', tgzV2.subarray(0, Math.floor(tgzV2.length / 2)));
  served.set('/broken.zip', Buffer.concat([zipV1.subarray(0, 200), Buffer.alloc(300), zipV1.subarray(500)]));
  served.set(
    '/no-bridge.zip',
    await zipOf({ 'flannel.exe': exe('flannel.exe', 'v3'), 'win-overlay.exe': exe('win-overlay.exe', 'v3'), 'host-local.exe': exe('host-local.exe', 'v3') }),
  );
  writeFileSync(join(dir, 'flannel-amd64.exe'), flannelV2);
  server = createServer((req, res) => {
    requests.push(req.url ?? '');
    if (req.url === '/huge.tgz') {
      // Says 4 GiB and sends a little: the agent must refuse on the header, not read on.
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(4 * 1024 ** 3) });
      res.write(Buffer.alloc(1024));
      return;
    }
    const body = served.get(req.url ?? '');
    res.writeHead(body ? 200 : 404, { 'Content-Type': 'application/octet-stream' });
    res.end(body ?? 'not found');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});

afterAll(async () => {
  await new Promise<void>((r) => server.close(() => r()));
  rmSync(dir, { recursive: true, force: true });
});

const binDir = () => join(dir, 'opt', 'cni', 'bin');
const installed = () => Object.fromEntries(PLUGINS.map((p) => [p, readFileSync(join(binDir(), p)).toString('latin1')]));
const RECORD = '.flanneld-install-cni.json';
const leftovers = () => readdirSync(binDir()).filter((f) => !PLUGINS.includes(f) && f !== RECORD);

describe('flanneld install-cni', () => {
  it('a bad hash is refused before anything is written (the bin dir is not even created)', async () => {
    const r = await run(['--source', `${base}/plugins-v1.zip`, '--sha256', sha(Buffer.from('other')), '--bin-dir', binDir()]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('[FLANNEL_ERR_CNI_HASH]');
    expect(r.stderr).toContain(sha(zipV1)); // names the actual hash
    expect(requests).toContain('/plugins-v1.zip');
    expect(existsSync(binDir())).toBe(false);
  });

  it('installs the four plugins from a zip served over HTTP', async () => {
    const r = await run(['--source', `${base}/plugins-v1.zip`, '--sha256', sha(zipV1).toUpperCase(), '--bin-dir', binDir()]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(
      r.stdout
        .trim()
        .split('\n')
        .map((l) => l.split(' ')[1]),
    ).toEqual(PLUGINS);
    for (const p of PLUGINS) expect(installed()[p]).toBe(exe(p, 'v1').toString('latin1'));
    expect(leftovers()).toEqual([]); // the temporary directory is gone
  });

  it('a rerun with the same sources downloads nothing and writes nothing (the install record matches)', async () => {
    // Dated in the past, so that any write would show as a new modification time.
    for (const p of PLUGINS) utimesSync(join(binDir(), p), PAST, PAST);
    const before = PLUGINS.map((p) => statSync(join(binDir(), p)).mtimeMs);
    const seen = requests.length;
    const r = await run(['--source', `${base}/plugins-v1.zip`, '--sha256', sha(zipV1), '--bin-dir', binDir()]);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^already installed: .*nothing downloaded or written\n$/);
    expect(requests.length).toBe(seen);
    expect(PLUGINS.map((p) => statSync(join(binDir(), p)).mtimeMs)).toEqual(before);
  });

  it('without the record, the same files are downloaded and compared, and nothing is written', async () => {
    rmSync(join(binDir(), RECORD));
    const before = PLUGINS.map((p) => statSync(join(binDir(), p)).mtimeMs);
    const seen = requests.length;
    const r = await run(['--source', `${base}/plugins-v1.zip`, '--sha256', sha(zipV1), '--bin-dir', binDir()]);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^already installed: .* are the same files; nothing written\n$/);
    expect(requests.length).toBe(seen + 1);
    expect(PLUGINS.map((p) => statSync(join(binDir(), p)).mtimeMs)).toEqual(before);
    expect(existsSync(join(binDir(), RECORD))).toBe(true);
  });

  it('a plugin changed behind our back is noticed despite the record, and restored', async () => {
    writeFileSync(join(binDir(), 'host-local.exe'), 'MZ tampered');
    const seen = requests.length;
    const r = await run(['--source', `${base}/plugins-v1.zip`, '--sha256', sha(zipV1), '--bin-dir', binDir()]);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^installed host-local\.exe /);
    expect(requests.length).toBe(seen + 1);
    expect(installed()['host-local.exe']).toBe(exe('host-local.exe', 'v1').toString('latin1'));
  });

  it.each([
    ['a truncated .tgz', '/broken.tgz'],
    ['a damaged .zip', '/broken.zip'],
  ])('%s (with its own, matching hash) is a coded error and the old plugins stay', async (_what, path) => {
    const body = served.get(path)!;
    const r = await run(['--source', `${base}${path}`, '--sha256', sha(body), '--source', join(dir, 'flannel-amd64.exe'), '--sha256', sha(flannelV2), '--bin-dir', binDir()]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('[FLANNEL_ERR_CNI_ARCHIVE]');
    for (const p of PLUGINS) expect(installed()[p]).toBe(exe(p, 'v1').toString('latin1'));
    expect(leftovers()).toEqual([]);
  });

  it('an archive without win-bridge.exe is refused and nothing changes', async () => {
    const body = served.get('/no-bridge.zip')!;
    const r = await run(['--source', `${base}/no-bridge.zip`, '--sha256', sha(body), '--bin-dir', binDir()]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('win-bridge.exe');
    expect(r.stderr).toContain('[FLANNEL_ERR_CNI_ARCHIVE]');
    for (const p of PLUGINS) expect(installed()[p]).toBe(exe(p, 'v1').toString('latin1'));
  });

  it('an HTTP 404 is a coded download error', async () => {
    const r = await run(['--source', `${base}/missing.tgz`, '--sha256', sha(tgzV2), '--bin-dir', binDir()]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('HTTP 404');
    expect(r.stderr).toContain('[FLANNEL_ERR_CNI_SOURCE]');
  });

  it('a download that says it is 4 GiB is refused on its Content-Length, and nothing changes', async () => {
    const r = await run(['--source', `${base}/huge.tgz`, '--sha256', sha(tgzV2), '--bin-dir', binDir()]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('[FLANNEL_ERR_CNI_TOO_LARGE]');
    for (const p of PLUGINS) expect(installed()[p]).toBe(exe(p, 'v1').toString('latin1'));
  });

  it('an archive whose win-bridge.exe is no PE image is refused, and nothing changes', async () => {
    const body = await zipOf({ ...Object.fromEntries(PLUGINS.map((p) => [p, exe(p, 'v5')])), 'win-bridge.exe': Buffer.from('MZ this is a text file') });
    served.set('/not-pe.zip', body);
    const r = await run(['--source', `${base}/not-pe.zip`, '--sha256', sha(body), '--bin-dir', binDir()]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('[FLANNEL_ERR_CNI_NOT_PE]');
    for (const p of PLUGINS) expect(installed()[p]).toBe(exe(p, 'v1').toString('latin1'));
  });

  /** The upstream layout: containernetworking/plugins' .tgz over HTTP, flannel-io/cni-plugin's bare exe from a path. */
  const upstreamV2 = () => ['--source', `${base}/cni-plugins-windows-amd64-v2.tgz`, '--sha256', sha(tgzV2), '--source', join(dir, 'flannel-amd64.exe'), '--sha256', sha(flannelV2)];

  it('upgrades from the upstream layout: a .tgz over HTTP plus the bare flannel-amd64.exe from a file path', async () => {
    const r = await run([...upstreamV2(), '--bin-dir', binDir()]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    for (const p of PLUGINS) expect(installed()[p]).toBe(exe(p, 'v2').toString('latin1'));
    expect(existsSync(join(binDir(), 'static.exe'))).toBe(false); // only the plugins flannel needs
    expect(leftovers()).toEqual([]);
  });

  it('a local zip path works too, and only the changed files are rewritten', async () => {
    const mixed = await zipOf({
      'flannel.exe': flannelV2,
      'win-overlay.exe': exe('win-overlay.exe', 'v2'),
      'win-bridge.exe': exe('win-bridge.exe', 'v4'),
      'host-local.exe': exe('host-local.exe', 'v2'),
    });
    writeFileSync(join(dir, 'mixed.zip'), mixed);
    const r = await run([`--source=${join(dir, 'mixed.zip')}`, `--sha256=sha256:${sha(mixed)}`, '--bin-dir', binDir()]);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^installed win-bridge\.exe \(sha256 [0-9a-f]{64}\)\nunchanged flannel\.exe\n/);
    expect(installed()['win-bridge.exe']).toBe(exe('win-bridge.exe', 'v4').toString('latin1'));
  });

  // The dual-stack conflist runs Microsoft's sdnbridge (src/cni/conflist.ts); its release is the
  // windows-container-networking zip (flat sdnbridge.exe, sdnoverlay.exe, nat.exe: its Makefile's `zip -j`).
  it('--sdnbridge also installs sdnbridge.exe, from the windows-container-networking zip beside the other sources', async () => {
    const wcn = await wcnZip('v1');
    writeFileSync(join(dir, 'windows-container-networking-cni-amd64-v1.zip'), wcn);
    const r = await run(['--sdnbridge', ...upstreamV2(), '--source', join(dir, 'windows-container-networking-cni-amd64-v1.zip'), '--sha256', sha(wcn), '--bin-dir', binDir()]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^installed sdnbridge\.exe \(sha256 [0-9a-f]{64}\)$/m);
    expect(readFileSync(join(binDir(), 'sdnbridge.exe')).toString('latin1')).toBe(exe('sdnbridge.exe', 'v1').toString('latin1'));
    for (const other of ['sdnoverlay.exe', 'nat.exe']) expect(existsSync(join(binDir(), other))).toBe(false); // only what the conflist runs
  });

  it('--sdnbridge without a source holding it is refused, naming the release, and nothing changes', async () => {
    const before = installed();
    const r = await run(['--sdnbridge', '--source', `${base}/plugins-v1.zip`, '--sha256', sha(zipV1), '--bin-dir', binDir()]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('[FLANNEL_ERR_CNI_ARCHIVE]');
    expect(r.stderr).toContain('sdnbridge.exe');
    expect(r.stderr).toContain('windows-container-networking');
    expect(installed()).toEqual(before);
  });

  it('--net-config-path: a net-conf that enables IPv6 needs sdnbridge.exe too; an IPv4 one, or its IPv4 half (--ipv4-only), does not', async () => {
    const dual = join(dir, 'net-conf-dual.json');
    writeFileSync(dual, JSON.stringify({ Network: '10.244.0.0/16', EnableIPv6: true, IPv6Network: 'fd00:10:244::/56', Backend: { Type: 'host-gw' } }));
    const v4 = join(dir, 'net-conf-v4.json');
    writeFileSync(v4, JSON.stringify({ Network: '10.244.0.0/16', Backend: { Type: 'host-gw' } }));
    const sources = ['--source', `${base}/plugins-v1.zip`, '--sha256', sha(zipV1), '--bin-dir', binDir()];
    const refused = await run(['--net-config-path', dual, ...sources]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('sdnbridge.exe');
    const ok = await run(['--net-config-path', v4, ...sources]);
    expect([ok.status, ok.stderr]).toEqual([0, '']);
    // A node that runs the dual-stack net-conf's IPv4 half (the agent's --ipv4-only; FLANNELD_IPV4_ONLY from
    // the DaemonSet's ConfigMap reaches this init container too) renders win-bridge: no sdnbridge.exe.
    const ipv4Only = await runFlanneld(['install-cni', '--net-config-path', dual, ...sources], { FLANNELD_IPV4_ONLY: 'true' });
    expect([ipv4Only.status, ipv4Only.stderr]).toEqual([0, '']);
    const flag = await run(['--ipv4-only', '--net-config-path', dual, ...sources]);
    expect([flag.status, flag.stderr]).toEqual([0, '']);
  });

  it.each([
    [['--sha256', 'ab'], 'flag -source is required'],
    [['--source', 'x.zip'], 'give one --sha256 per --source'],
    [['--source', 'x.zip', '--sha256', 'zz'], 'expected 64 hex digits'],
    [['--pinned', '--source', 'x.zip', '--sha256', 'a'.repeat(64)], 'exclude each other'],
  ])('flag errors exit 2: %j', async (args, text) => {
    const r = await run(args);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(text);
  });

  it('--help names the platform default bin dir only', async () => {
    const r = await run(['--help']);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^Usage: flanneld install-cni /);
    expect(r.stdout).toContain('(default "/opt/cni/bin")');
    expect(r.stdout).not.toContain('C:\\opt');
  });
});

/** A containerd config.toml in `dir` (containerd 2.1's shape, test/fixtures/containerd/containerd-2.1.toml) whose CNI table is `cni`. */
function containerdConfig(name: string, cni: string): string {
  const path = join(dir, name);
  writeFileSync(path, `version = 3\n[plugins.'io.containerd.cri.v1.runtime'.cni]\n${cni}\n`);
  return path;
}

describe('flanneld install-cni: containerd config.toml (src/cni/containerd-config.ts)', () => {
  const zipSource = () => ['--source', `${base}/plugins-v1.zip`, '--sha256', sha(zipV1)];

  it('without --bin-dir the plugins go to bin_dirs[0] of --containerd-config', async () => {
    const target = join(dir, 'containerd-bin');
    const config = containerdConfig('bin-dirs.toml', `bin_dir = ''\nbin_dirs = ['${target}', '/opt/cni/bin']`);
    const r = await run([...zipSource(), '--containerd-config', config]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    for (const p of PLUGINS) expect(readFileSync(join(target, p)).toString('latin1')).toBe(exe(p, 'v1').toString('latin1'));
  });

  it("a --bin-dir that is not containerd's is used as given, with a warning naming both fixes", async () => {
    const config = containerdConfig('bin-dir.toml', `bin_dir = '${join(dir, 'containerd-old')}'`);
    const r = await run([...zipSource(), '--containerd-config', config, '--bin-dir', binDir()]);
    expect(r.status).toBe(0);
    expect(existsSync(join(dir, 'containerd-old'))).toBe(false);
    expect(r.stderr).toContain(`warning: --bin-dir ${binDir()} is not where containerd runs CNI plugins from: ${join(dir, 'containerd-old')} (bin_dir in ${config})`);
    expect(r.stderr).toContain(`pass --bin-dir ${join(dir, 'containerd-old')}`);
  });

  it('a malformed containerd config without --bin-dir: FLANNEL_ERR_CONTAINERD_CONFIG, nothing downloaded or written', async () => {
    const config = join(dir, 'broken.toml');
    writeFileSync(config, 'version = 3\n[plugins\n');
    const before = requests.length;
    const r = await run([...zipSource(), '--containerd-config', config]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('[FLANNEL_ERR_CONTAINERD_CONFIG]');
    expect(requests.length).toBe(before);
  });

  it('a missing containerd config: the --bin-dir default, no warning', async () => {
    const r = await run([...zipSource(), '--containerd-config', join(dir, 'absent.toml'), '--bin-dir', binDir()]);
    expect(r.status).toBe(0);
    expect(r.stderr).toBe('');
  });
});

describe('src/cni-plugins/pinned.json', () => {
  it('pins each upstream release by URL and SHA-256, with where the hash came from: the four flannel plugins always, sdnbridge for dual-stack', () => {
    const provided = (list: readonly { sha256: string; url: string; repository: string; version: string; sha256Checked: string; provides: object }[]) => {
      const out: string[] = [];
      for (const r of list) {
        expect(r.sha256).toMatch(/^[0-9a-f]{64}$/);
        expect(r.url.startsWith(`https://github.com/${r.repository}/releases/download/${r.version}/`)).toBe(true);
        expect(r.sha256Checked).toMatch(/^copied from .* not downloaded and re-hashed here|^copied from .*Not downloaded and re-hashed here/);
        for (const [file, asset] of Object.entries(r.provides) as [string, string][]) {
          out.push(file);
          expect(r.url.endsWith(`/${asset}`) || r.url.endsWith('.tgz') || r.url.endsWith('.zip')).toBe(true);
        }
      }
      return out.sort();
    };
    expect(provided(pinned.releases)).toEqual([...PLUGINS].sort());
    expect(provided(pinned.dualStack)).toEqual(['sdnbridge.exe']);
    expect(pinned.dualStack[0].url).toBe('https://github.com/microsoft/windows-container-networking/releases/download/v0.3.1/windows-container-networking-cni-amd64-v0.3.1.zip');
  });
});

// A server that trickles the body (one byte at a time, never idle long enough for the idle deadline)
// and a mirror URL with credentials in it: the total deadline (--download-timeout) stops the first,
// and no message shows the second's password (it goes to the init container's log).
describe('flanneld install-cni: total deadline and credentials in URLs', () => {
  let trickle: Server;
  let trickleBase: string;
  const timers = new Set<NodeJS.Timeout>();
  beforeAll(async () => {
    trickle = createServer((req, res) => {
      if (req.url === '/trickle.tgz') {
        res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
        const t = setInterval(() => res.write(Buffer.alloc(1)), 200);
        timers.add(t);
        res.on('close', () => clearInterval(t));
        return;
      }
      res.writeHead(404);
      res.end('not found');
    });
    await new Promise<void>((r) => trickle.listen(0, '127.0.0.1', () => r()));
    trickleBase = `127.0.0.1:${(trickle.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    for (const t of timers) clearInterval(t);
    trickle.closeAllConnections();
    await new Promise<void>((r) => trickle.close(() => r()));
  });

  it('a trickling download is stopped by --download-timeout: FLANNEL_ERR_CNI_TIMEOUT, the overall deadline', async () => {
    const r = await run(['--source', `http://${trickleBase}/trickle.tgz`, '--sha256', sha(tgzV2), '--bin-dir', binDir(), '--download-timeout', '2']);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('[FLANNEL_ERR_CNI_TIMEOUT]');
    expect(r.stderr).toContain('the overall deadline');
  });

  it('--download-timeout must be whole seconds from 1', async () => {
    const r = await run(['--source', `http://${trickleBase}/trickle.tgz`, '--sha256', sha(tgzV2), '--bin-dir', binDir(), '--download-timeout', '0']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('download-timeout');
  });

  it('URL userinfo is redacted in every message', async () => {
    const r = await run(['--source', `http://mirroruser:S3cretMirrorPw@${trickleBase}/flannel-amd64.exe`, '--sha256', sha(tgzV2), '--bin-dir', binDir()]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('HTTP 404');
    expect(r.stderr).toContain('http://***@');
    expect(r.stderr + r.stdout).not.toContain('S3cretMirrorPw');
  });
});

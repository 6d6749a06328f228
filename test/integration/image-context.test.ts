// `npm run package:image-context` (packaging/image-context.mjs) on a zip laid out like the one
// `npm run package:windows` writes, and Dockerfile.windows read as BuildKit would: COPY-only (so
// `docker buildx build --platform windows/amd64` works on Linux), FROM the HostProcess base image, every
// COPY source present in the context, and flanneld.exe where the DaemonSet runs it
// ($CONTAINER_SANDBOX_MOUNT_POINT\flanneld\flanneld.exe). docker buildx is not available here, so the
// image itself is not built by the tests.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import pinned from '../../src/cni-plugins/pinned.json' with { type: 'json' };
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';

const require = createRequire(import.meta.url);
const SCRIPT = join(process.cwd(), 'packaging', 'image-context.mjs');
const DOCKERFILE = join(process.cwd(), 'Dockerfile.windows');
const BASE_IMAGE = 'mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0';

async function writeZip(path: string, files: Record<string, string>): Promise<void> {
  // yazl (our zip writer, packaging/build.mjs) ships no types.
  const yazl = require('yazl') as { ZipFile: new () => { addBuffer(b: Buffer, name: string): void; end(): void; outputStream: NodeJS.ReadableStream } };
  const zip = new yazl.ZipFile();
  for (const [name, text] of Object.entries(files)) zip.addBuffer(Buffer.from(text), name);
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(path));
}

/** Dockerfile instructions (continuations joined, comments dropped): [keyword, rest]. */
function instructions(text: string): [string, string][] {
  const lines = text
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
  return lines.map((l) => {
    const m = /^(\w+)\s+(.*)$/.exec(l)!;
    return [m[1].toUpperCase(), m[2]];
  });
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'flanneld-image-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const run = (args: string[]) => spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8', timeout: 30_000 });

describe('Dockerfile.windows', () => {
  const ins = instructions(readFileSync(DOCKERFILE, 'utf8'));

  it('is COPY-only (no RUN or ADD: nothing executes on Linux) and FROM the HostProcess base image', () => {
    expect(ins.map(([k]) => k).filter((k) => !['ARG', 'FROM', 'LABEL', 'ENV', 'COPY', 'ENTRYPOINT'].includes(k))).toEqual([]);
    const args = Object.fromEntries(ins.filter(([k]) => k === 'ARG').map(([, v]) => v.split('=') as [string, string]));
    const from = ins.find(([k]) => k === 'FROM')![1].replace(/\$\{(\w+)\}/g, (_m, n: string) => args[n] ?? '');
    expect(from).toBe(BASE_IMAGE);
  });

  it('the check is not vacuous: a RUN step is caught', () => {
    expect(instructions('FROM x\nRUN \\\n  echo hi\n').map(([k]) => k)).toEqual(['FROM', 'RUN']);
  });
});

describe('npm run package:image-context', () => {
  const zipFiles = {
    'flanneld.exe': 'MZ flanneld',
    'flanneld-service.exe': 'MZ service host',
    'node_modules/ffi-rs/package.json': '{"name":"ffi-rs"}',
    'node_modules/@yuuang/ffi-rs-win32-x64-msvc/ffi-rs.win32-x64-msvc.node': 'MZ addon',
    'scripts/start.ps1': '# start',
    'README.txt': 'readme',
  };

  it('lays out the context from the zip; every COPY source exists; flanneld.exe is where the DaemonSet runs it', async () => {
    const zip = join(dir, 'flanneld-windows-amd64.zip');
    await writeZip(zip, zipFiles);
    const out = join(dir, 'ctx');
    const r = run(['--zip', zip, '--out-dir', out, '--image', 'registry.example.com:5000/flanneld-windows:1.2.3']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    for (const [name, text] of Object.entries(zipFiles)) expect(readFileSync(join(out, 'flanneld', ...name.split('/')), 'utf8')).toBe(text);
    expect(readFileSync(join(out, 'Dockerfile.windows'), 'utf8')).toBe(readFileSync(DOCKERFILE, 'utf8'));
    const ins = instructions(readFileSync(DOCKERFILE, 'utf8'));
    const args = Object.fromEntries(ins.filter(([k]) => k === 'ARG').map(([, v]) => v.split('=') as [string, string]));
    for (const [, rest] of ins.filter(([k]) => k === 'COPY')) {
      const src = rest.split(/\s+/)[0].replace(/\$\{(\w+)\}/g, (_m, n: string) => args[n] ?? '');
      expect([src, existsSync(join(out, src))]).toEqual([src, true]);
    }
    expect(args['CNI_PLUGINS']).toBe('no-cni-plugins'); // the default: no plugins inside, the init container downloads them
    // deploy/base/40-daemonset-windows.yml runs (Join-Path $env:CONTAINER_SANDBOX_MOUNT_POINT 'flanneld\flanneld.exe').
    const ds = readFileSync(join(process.cwd(), 'deploy', 'base', '40-daemonset-windows.yml'), 'utf8');
    expect(ds).toContain("'flanneld\\flanneld.exe'");
    expect(existsSync(join(out, 'flanneld', 'flanneld.exe'))).toBe(true);
    // The lines to paste: the buildx command and the overlay's images entry (registry port kept in the name).
    expect(r.stdout).toContain(`docker buildx build --platform windows/amd64 --build-arg VERSION=`);
    expect(r.stdout).toContain(`-t registry.example.com:5000/flanneld-windows:1.2.3 --push ${out}`);
    expect(r.stdout).toContain('newName: registry.example.com:5000/flanneld-windows\n    newTag: "1.2.3"');
  });

  it('--cni-plugins puts the pinned release files in the context after checking their SHA-256, for CNI_PLUGINS=cni-plugins', async () => {
    const zip = join(dir, 'flanneld-windows-amd64.zip');
    await writeZip(zip, zipFiles);
    const plugins = join(dir, 'plugins');
    mkdirSync(plugins, { recursive: true });
    for (const r of pinned.releases) writeFileSync(join(plugins, r.url.split('/').pop()!), 'not the release');
    const bad = run(['--zip', zip, '--out-dir', join(dir, 'ctx4'), '--cni-plugins', plugins]);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/has SHA-256 [0-9a-f]{64}, not the pinned /);
    // The pinned files themselves cannot be fetched here: the copy is checked with pins of what is there.
    const sha = createHash('sha256').update('not the release').digest('hex');
    const releases = pinned.releases.map((p) => ({ ...p, sha256: sha }));
    const dualStack = pinned.dualStack.map((p) => ({ ...p, sha256: sha }));
    const { imageContext } = (await import(SCRIPT)) as { imageContext: (o: object) => Promise<{ plugins: string[] }> };
    // sdnbridge's release (dual-stack nodes only) is taken when it is there, and not asked for otherwise.
    const ctx = await imageContext({ zip, outDir: join(dir, 'ctx5'), image: '', cniPlugins: plugins, releases, dualStack });
    const names = pinned.releases.map((p) => p.url.split('/').pop()!);
    expect(ctx.plugins).toEqual(names);
    for (const n of names) expect(readFileSync(join(dir, 'ctx5', 'cni-plugins', n), 'utf8')).toBe('not the release');
    const wcn = pinned.dualStack[0].url.split('/').pop()!;
    writeFileSync(join(plugins, wcn), 'not the release');
    const withSdnbridge = await imageContext({ zip, outDir: join(dir, 'ctx6'), image: '', cniPlugins: plugins, releases, dualStack });
    expect(withSdnbridge.plugins).toEqual([...names, wcn]);
  });

  it('refuses a zip that is not a flanneld-windows package, and a missing zip', async () => {
    const zip = join(dir, 'other.zip');
    await writeZip(zip, { 'README.txt': 'x' });
    const r = run(['--zip', zip, '--out-dir', join(dir, 'ctx2')]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('lacks flanneld.exe, node_modules/ffi-rs/package.json');
    const missing = run(['--zip', join(dir, 'nope.zip'), '--out-dir', join(dir, 'ctx3')]);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('run npm run package:windows first');
  });

  it('refuses a zip whose deploy/ or scripts/ holds a file git does not track (an operator overlay)', async () => {
    const zip = join(dir, 'untracked.zip');
    await writeZip(zip, { ...zipFiles, 'deploy/overlays/my-cluster/kustomization.yaml': 'images: [registry.internal/x]' });
    const out = join(dir, 'ctx4');
    const r = run(['--zip', zip, '--out-dir', out]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('holds files git does not track: deploy/overlays/my-cluster/kustomization.yaml');
    expect(existsSync(out)).toBe(false);
  });
});

// What packaging/build.mjs takes from the repository (repoEntries): only git-tracked files of scripts/ and
// deploy/, checked on a scratch git repository holding an untracked overlay and an untracked script.
describe('the zip takes only git-tracked files from the repository', () => {
  it('leaves out an untracked deploy/overlays/my-cluster and an untracked script', async () => {
    const repo = join(dir, 'repo');
    const write = (rel: string, text: string) => {
      mkdirSync(join(repo, ...rel.split('/').slice(0, -1)), { recursive: true });
      writeFileSync(join(repo, ...rel.split('/')), text);
    };
    write('scripts/start.ps1', '# start');
    write('deploy/base/kustomization.yaml', 'resources: []');
    write('deploy/overlays/example/kustomization.yaml', 'resources: [../../base]');
    const git = (...args: string[]) => spawnSync('git', ['-C', repo, '-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { encoding: 'utf8' });
    expect(git('init', '-q').status).toBe(0);
    expect(git('add', '.').status).toBe(0);
    expect(git('commit', '-qm', 'x').status).toBe(0);
    write('deploy/overlays/my-cluster/kustomization.yaml', 'images: [registry.internal/x]');
    write('scripts/local.ps1', '# mine');
    const { repoEntries } = (await import(join(process.cwd(), 'packaging', 'build.mjs'))) as { repoEntries: (r: string) => { name: string }[] };
    expect(repoEntries(repo).map((e) => e.name)).toEqual(['scripts/start.ps1', 'deploy/base/kustomization.yaml', 'deploy/overlays/example/kustomization.yaml']);
    const { trackedFiles } = (await import(join(process.cwd(), 'packaging', 'tracked-files.mjs'))) as { trackedFiles: (r: string, d: string) => string[] };
    expect(() => trackedFiles(join(dir, 'no-git-here'), join(dir, 'no-git-here', 'deploy'))).toThrow(/package from a git checkout/);
  });
});

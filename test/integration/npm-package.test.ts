// The npm package (`npm pack`: package.json `files` and `bin`) as a Linux admin runs it to edit the shared
// net-conf (docs/install.md, "2. The net-conf (vxlan)"): no Windows, no flanneld.exe. The packed tarball is unpacked
// as npm installs it (package/ with bin/ and dist/), its dependencies taken from this checkout's
// node_modules as an install would provide them, and its `flanneld` shim run.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAIN } from '../support/flanneld-process.js';

const PKG = JSON.parse(readFileSync(join(process.cwd(), 'package.json'), 'utf8')) as { version: string; bin: { flanneld: string } };
const env = { PATH: process.env['PATH'] ?? '' };
let dir: string;
let bin: string;

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error('dist/main.js is missing: run `npm run build` first (npm test does)');
  dir = mkdtempSync(join(tmpdir(), 'flanneld-npm-package-'));
  const pack = spawnSync('npm', ['pack', '--pack-destination', dir], { encoding: 'utf8', env: { ...env, HOME: process.env['HOME'] ?? dir } });
  expect(pack.status).toBe(0);
  const tgz = readdirSync(dir).find((f) => f.endsWith('.tgz'))!;
  expect(spawnSync('tar', ['-xzf', join(dir, tgz), '-C', dir]).status).toBe(0);
  symlinkSync(join(process.cwd(), 'node_modules'), join(dir, 'package', 'node_modules'));
  bin = join(dir, 'package', PKG.bin.flanneld);
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the npm package on Linux: flanneld netconf set-vni', () => {
  it('answers --help after the verb', () => {
    const r = spawnSync(bin, ['netconf', 'set-vni', '--help'], { encoding: 'utf8', env });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^Usage: flanneld netconf set-vni/);
  });

  it('edits a net-conf.json from stdin', () => {
    const input = '{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan"}}';
    const r = spawnSync(bin, ['netconf', 'set-vni'], { encoding: 'utf8', env, input });
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ Network: '10.244.0.0/16', Backend: { Type: 'vxlan', VNI: 4096, Port: 4789 } });
  });

  it('docs/install.md says how to get it', () => {
    const readme = readFileSync(join(process.cwd(), 'docs', 'install.md'), 'utf8');
    expect(readme).toContain('npm ci && npm run build && npm pack');
    expect(readme).toContain(`npx --yes --package=./flanneld-windows-${PKG.version}.tgz flanneld netconf set-vni`);
  });
});

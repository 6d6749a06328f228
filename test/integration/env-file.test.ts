// `--env-file` as an operator types it. Node 20 reads `--env-file` even after the script name
// (nodejs/node#54232; only arguments after `--` are left alone, nodejs/node#54237): `node dist/main.js
// --env-file=x` fails inside Node ("node: x: not found", exit 9) before flanneld runs. The `flanneld`
// command npm installs (package.json bin: bin/flanneld.mjs) starts Node with `--` before itself, and the
// spelling --flanneld-env-file is never read by Node. The packaged flanneld.exe: test/windows/env-file.test.ts.
import { beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAIN } from '../support/flanneld-process.js';

const PKG = JSON.parse(readFileSync(join(process.cwd(), 'package.json'), 'utf8')) as { bin: { flanneld: string } };
const BIN = join(process.cwd(), PKG.bin.flanneld);
const env = { PATH: process.env['PATH'] ?? '' };
let dir: string;
let present: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'env-file-'));
  present = join(dir, 'flanneld.env');
  // A value flanneld itself rejects: its error proves flanneld read the file.
  writeFileSync(present, 'FLANNELD_LOG_LEVEL=chatty\nFLANNELD_DATAPLANE=simulated\n');
});

describe.each([
  ['the installed flanneld command (package.json bin)', (args: string[]) => spawnSync(BIN, args, { encoding: 'utf8', env })],
  ['node -- dist/main.js', (args: string[]) => spawnSync(process.execPath, ['--', MAIN, ...args], { encoding: 'utf8', env })],
])('%s', (_how, run) => {
  it.each(['--env-file=', '--env-file ', '-env-file=', '--flanneld-env-file='])('%sFILE: flanneld reads it', (flag) => {
    const args = flag.endsWith(' ') ? [flag.trim(), present] : [flag + present];
    const r = run(args);
    expect(r.stderr).toContain('"chatty" for flag -log-level');
    expect(r.status).toBe(2);
  });

  it("--env-file=MISSING: flanneld's own error naming the file, exit 2 (not Node's exit 9)", () => {
    const r = run([`--env-file=${join(dir, 'missing.env')}`]);
    expect(r.stderr).toMatch(/^flanneld: cannot read env file .*missing\.env/);
    expect(r.status).toBe(2);
  });
});

it("node dist/main.js --flanneld-env-file=MISSING: flanneld's own error (Node never reads this spelling)", () => {
  const r = spawnSync(process.execPath, [MAIN, `--flanneld-env-file=${join(dir, 'missing.env')}`], { encoding: 'utf8', env });
  expect(r.stderr).toMatch(/^flanneld: cannot read env file .*missing\.env/);
  expect(r.status).toBe(2);
});

// `flanneld.exe --flanneld-env-file=FILE` and the old `--env-file=FILE` (the single executable of
// `npm run package:windows`) under Wine: the file reaches flanneld, and a missing one named with
// --flanneld-env-file gives flanneld's own error naming it, not Node's "FILE: not found" (Node reads
// --env-file after the script too: nodejs/node#54232; the node side: test/integration/env-file.test.ts).
import { beforeAll, describe, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CACHE,
  buildWindowsArtifacts,
  ensurePackage,
  ensurePrefix,
  ensureWindowsNode,
  expectRun,
  mustFailWhenSkipped,
  runUnderWine,
  winPath,
  windowsHarness,
  type BuiltPackage,
} from '../support/windows.js';

const harness = windowsHarness();

if (!harness.run && mustFailWhenSkipped()) {
  describe('Windows harness (env-file)', () => {
    it('requires wine64 and mingw-w64 under CI', () => {
      throw new Error(`${harness.reason} (.ci/run installs them; CI=true does not allow skipping)`);
    });
  });
}

(harness.run ? describe : describe.skip)('flanneld.exe --env-file under Wine', () => {
  let pkg: BuiltPackage;
  let dir: string;
  beforeAll(async () => {
    const build = await buildWindowsArtifacts();
    const [, nodeExe] = await Promise.all([ensurePrefix(build), ensureWindowsNode()]);
    pkg = await ensurePackage(nodeExe);
    mkdirSync(join(CACHE, 'runs'), { recursive: true });
    dir = mkdtempSync(join(CACHE, 'runs', 'env-file-'));
    writeFileSync(join(dir, 'flanneld.env'), 'FLANNELD_LOG_LEVEL=chatty\r\nFLANNELD_DATAPLANE=simulated\r\n');
  }, 400_000);

  const exe = () => join(pkg.dir, 'flanneld.exe');

  it.each(['--env-file=', '--flanneld-env-file='])(
    '%sFILE: flanneld reads it',
    async (flag) => {
      const r = await runUnderWine(exe(), [flag + winPath(join(dir, 'flanneld.env'))], { timeoutMs: 60_000 });
      expectRun(r, `flanneld.exe ${flag}FILE`, { code: 2, stderr: /"chatty" for flag -log-level/ });
    },
    90_000,
  );

  // With --env-file=MISSING the Node inside the exe stops first ("flanneld.exe: MISSING: not found"):
  // that is why the flag's name is --flanneld-env-file (docs/flags.md).
  it.each(['--flanneld-env-file=', '-env-file='])(
    "%sMISSING: flanneld's own error naming the file, exit 2",
    async (flag) => {
      const r = await runUnderWine(exe(), [flag + winPath(join(dir, 'missing.env'))], { timeoutMs: 60_000 });
      expectRun(r, `flanneld.exe ${flag}MISSING`, { code: 2, stderr: /flanneld: cannot read env file .*missing\.env/ });
    },
    90_000,
  );
});

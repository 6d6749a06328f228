// A build of flanneld that pins other CNI plugin releases: a copy of the built CLI (dist/) whose
// dist/cni-plugins/pinned.json names the test's own release files. The pins are part of a build (install-cni
// imports pinned.json), so this is how a test runs `install-cni --pinned` (and a readiness fix that names it)
// end to end without the real releases, which cannot be downloaded here. Everything else is the build
// under test, byte for byte; node_modules and package.json are the repository's.
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { MAIN } from './flanneld-process.js';

/** One pinned release, in pinned.json's shape. */
export interface TestRelease {
  name: string;
  repository: string;
  version: string;
  url: string;
  sha256: string;
  provides: Record<string, string>;
  sha256Checked: string;
}

/** A release whose file is `data`, published at `url` (its file name is the URL's last part). */
export function testRelease(name: string, url: string, data: Buffer, provides: Record<string, string>): TestRelease {
  return {
    name,
    repository: `test/${name}`,
    version: 'v0.0.0-test',
    url,
    sha256: createHash('sha256').update(data).digest('hex'),
    provides,
    sha256Checked: 'computed by the test from the file it serves',
  };
}

/** The file name a pinned URL's release is kept under (in --pinned-dir, in the image). */
export const releaseFileName = (url: string): string => basename(new URL(url).pathname);

/**
 * Copy dist/ into `dir` with these pins; returns the copy's main.js. `releases` are always installed by
 * `--pinned`, `dualStack` with `--sdnbridge` (src/cni-plugins/pinned.json's two lists).
 */
export function pinnedBuild(dir: string, pins: { releases: TestRelease[]; dualStack: TestRelease[] }): string {
  if (!existsSync(MAIN)) throw new Error('dist/main.js is missing: run `npm run build` first (npm test does)');
  const root = join(process.cwd());
  mkdirSync(dir, { recursive: true });
  cpSync(join(root, 'dist'), join(dir, 'dist'), { recursive: true });
  writeFileSync(join(dir, 'package.json'), readFileSync(join(root, 'package.json')));
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
  writeFileSync(join(dir, 'dist', 'cni-plugins', 'pinned.json'), JSON.stringify({ $comment: 'test pins', ...pins }, null, 2));
  return join(dir, 'dist', 'main.js');
}

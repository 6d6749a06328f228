#!/usr/bin/env node
// `npm run build` step after tsc: writes the commit the build is made from into dist/basics/build-commit.js
// (src/basics/build-commit.ts is its empty stand-in), for the User-Agent (src/basics/version.ts). The commit is
// $FLANNELD_COMMIT when set (an image built without .git), else `git rev-parse HEAD`, else empty.
//
// Usage: node packaging/stamp-commit.mjs [DIST_DIR]   (default: dist/ of this repository)
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const dist = resolve(process.argv[2] ?? join(REPO, 'dist'));

function commit() {
  const env = (process.env.FLANNELD_COMMIT ?? '').trim();
  if (env !== '') return env;
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: REPO, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '';
  }
}

const sha = commit();
if (!/^[0-9a-zA-Z._-]*$/.test(sha)) throw new Error(`stamp-commit: not a commit: ${JSON.stringify(sha)}`);
writeFileSync(join(dist, 'basics', 'build-commit.js'), `// Stamped by packaging/stamp-commit.mjs.\nexport const BUILD_COMMIT = ${JSON.stringify(sha)};\n`);

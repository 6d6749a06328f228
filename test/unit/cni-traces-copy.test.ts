// test/fixtures/cni-traces is a copy of the recorded CNI plugin runs (the repository must not depend on the
// project's shared folder). When that folder is there beside the repository, `../shared/cni-traces` from the
// main checkout or `../../shared/cni-traces` from a worktree under it, every recorded trace the copy holds
// must be byte-identical to the recording, so the copy cannot drift silently. Without the folder (CI, a
// fresh clone) this skips with one line. The copy's README.md is its own document: it says which files were
// left out and where the plugin binaries are instead, so it is the one file not compared.
import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const FIXTURES = join(REPO, 'test', 'fixtures', 'cni-traces');
const CANDIDATES = [join(REPO, '..', 'shared', 'cni-traces'), join(REPO, '..', '..', 'shared', 'cni-traces')];
const SHARED = CANDIDATES.find((d) => existsSync(d));
/** The copy's own annotated README (see the header). */
const NOT_COMPARED = new Set(['README.md']);

if (!SHARED) process.stderr.write(`cni-traces copy check skipped: no shared/cni-traces beside the repository (${CANDIDATES.join(', ')})\n`);

describe('test/fixtures/cni-traces is the recording, byte for byte', () => {
  const copied = readdirSync(FIXTURES)
    .filter((f) => !NOT_COMPARED.has(f))
    .sort();

  it('the copy holds recorded traces', () => {
    expect(copied.filter((f) => f.endsWith('.json')).length).toBeGreaterThan(0);
  });

  (SHARED ? it : it.skip)('every file of the recording the copy also holds is byte-identical to it', () => {
    const both = readdirSync(SHARED!).filter((f) => copied.includes(f));
    expect(both.length).toBeGreaterThan(0);
    expect(both.filter((f) => !readFileSync(join(FIXTURES, f)).equals(readFileSync(join(SHARED!, f))))).toEqual([]);
  });
});

// test/fixtures/cni-traces and test/fixtures/kube-proxy-traces are copies of recorded runs (the repository must
// not depend on the project's shared folder). When the recording is there beside the repository,
// `../shared/<folder>` from the main checkout or `../../shared/<folder>` from a worktree under it, every
// recorded trace a copy holds must be byte-identical to the recording, so the copy cannot drift silently.
// Without the folder (CI, a fresh clone) this skips with one line. A copy's README.md is its own document: it
// says which files were left out and where the binaries are instead, so it is the one file not compared.
import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
/** The copy's own annotated README (see the header). */
const NOT_COMPARED = new Set(['README.md']);

describe.each(['cni-traces', 'kube-proxy-traces'])('test/fixtures/%s is the recording, byte for byte', (folder) => {
  const fixtures = join(REPO, 'test', 'fixtures', folder);
  const candidates = [join(REPO, '..', 'shared', folder), join(REPO, '..', '..', 'shared', folder)];
  const shared = candidates.find((d) => existsSync(d));
  if (!shared) process.stderr.write(`${folder} copy check skipped: no shared/${folder} beside the repository (${candidates.join(', ')})\n`);
  const copied = readdirSync(fixtures)
    .filter((f) => !NOT_COMPARED.has(f))
    .sort();

  it('the copy holds recorded traces', () => {
    expect(copied.filter((f) => f.endsWith('.json')).length).toBeGreaterThan(0);
  });

  (shared ? it : it.skip)('every file of the recording the copy also holds is byte-identical to it', () => {
    const both = readdirSync(shared!).filter((f) => copied.includes(f));
    expect(both.length).toBeGreaterThan(0);
    expect(both.filter((f) => !readFileSync(join(fixtures, f)).equals(readFileSync(join(shared!, f))))).toEqual([]);
  });
});

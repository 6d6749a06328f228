// writeFileAtomicSync (src/basics/fs.ts), the one atomic replace of a small file (the CNI conflist, boot.json,
// routes.json, the source VIP file, the simulated node's state file): a write that fails leaves the old file
// and no temporary file beside it. The full disk is the state-fs harness's (test/support/state-fs.ts: a
// torn temp file, then ENOSPC).
import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeFileAtomicSync } from '../../../src/basics/fs.js';
import { StateFs } from '../../support/state-fs.js';

const dir = mkdtempSync(join(tmpdir(), 'fs-write-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('writeFileAtomicSync', () => {
  it('replaces the file; no temporary file stays', () => {
    const path = join(dir, 'ok.json');
    writeFileAtomicSync(path, 'one');
    writeFileAtomicSync(path, 'two');
    expect(readFileSync(path, 'utf8')).toBe('two');
    expect(readdirSync(dir).filter((n) => n.startsWith('ok.json'))).toEqual(['ok.json']);
  });

  it('a full disk (ENOSPC while writing the temporary file): the error is thrown, the old file stays, the torn temporary file is removed', () => {
    const sub = mkdtempSync(join(dir, 'full-'));
    const path = join(sub, 'boot.json');
    writeFileSync(path, 'old');
    const disk = new StateFs();
    disk.mode = 'enospc';
    expect(() => writeFileAtomicSync(path, 'a new document', disk.fs)).toThrow(expect.objectContaining({ code: 'ENOSPC' }));
    expect(readFileSync(path, 'utf8')).toBe('old');
    expect(readdirSync(sub)).toEqual(['boot.json']);
  });
});

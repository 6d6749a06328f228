// readRegularFile (src/fs-read.ts), the one reader of files named by flags: only regular files, under a
// cap. A FIFO must not block (it used to stall start-up and SIGTERM until a writer came), /dev/zero must
// not fill the heap: both are FLANNEL_ERR_INPUT_FILE before a byte is read (issue 18 §3).
import { afterAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../src/errors.js';
import { readRegularFile, readRegularFileBytes } from '../../src/fs-read.js';
import { expectCode } from '../support/errors.js';

const dir = mkdtempSync(join(tmpdir(), 'fs-read-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('readRegularFile', () => {
  it('reads a regular file up to and including the cap', () => {
    writeFileSync(join(dir, 'ok'), 'abcd');
    expect(readRegularFile(join(dir, 'ok'), 4, '--net-config-path')).toBe('abcd');
    writeFileSync(join(dir, 'empty'), '');
    expect(readRegularFileBytes(join(dir, 'empty'), 4, 'x').length).toBe(0);
  });

  it('a file over the cap: FLANNEL_ERR_INPUT_FILE too-large', () => {
    writeFileSync(join(dir, 'big'), 'abcde');
    expect(expectCode(() => readRegularFile(join(dir, 'big'), 4, '--net-config-path'), ConfigError, 'FLANNEL_ERR_INPUT_FILE').context).toMatchObject({
      reason: 'too-large',
      maxBytes: 4,
    });
  });

  it.each([
    ['a FIFO (mkfifo), without waiting for a writer', () => (execFileSync('mkfifo', [join(dir, 'fifo')]), join(dir, 'fifo'))],
    ['a character device (/dev/zero)', () => '/dev/zero'],
    ['a directory', () => dir],
  ])('%s: FLANNEL_ERR_INPUT_FILE not-regular', (_name, path) => {
    const p = path();
    expect(expectCode(() => readRegularFile(p, 1024, '--kubeconfig-file'), ConfigError, 'FLANNEL_ERR_INPUT_FILE').context).toMatchObject({
      path: p,
      what: '--kubeconfig-file',
      reason: 'not-regular',
    });
  });

  it('a missing file: node ENOENT, for the caller to explain', () => {
    expect(() => readRegularFile(join(dir, 'nope'), 4, 'x')).toThrow(expect.objectContaining({ code: 'ENOENT' }));
  });
});

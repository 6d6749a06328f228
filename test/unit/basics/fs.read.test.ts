// readRegularFile (src/basics/fs.ts), the one reader of files named by flags: only regular files, under a
// cap. A FIFO must not block (it used to stall start-up and SIGTERM until a writer came), /dev/zero must
// not fill the heap: both are FLANNEL_ERR_INPUT_FILE before a byte is read (docs/errors.md).
import { afterAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '../../../src/basics/errors.js';
import { readRegularFile, readRegularFileBytes } from '../../../src/basics/fs.js';
import { hostFiles } from '../../../src/basics/fs.js';
import { readSubnetEnv } from '../../../src/subnet/subnet-env.js';
import { expectCode } from '../../support/errors.js';

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

// The readers wired to the host (src/basics/fs.ts) for `--source-vip-file` and `--subnet-file`. A writer is
// started on the FIFO first, so a blocking read would return its text (and the assertion fail) rather than
// hang; the non-blocking open refuses the FIFO before the writer is needed, and the writer is then killed.
describe('host readers of files named by flags: a FIFO is refused, not read', () => {
  function withWriter<T>(name: string, text: string, fn: (fifo: string) => T): T {
    const fifo = join(dir, name);
    execFileSync('mkfifo', [fifo]);
    const writer = spawn('sh', ['-c', 'printf "%s" "$1" > "$2"', 'sh', text, fifo], { stdio: 'ignore' });
    try {
      return fn(fifo);
    } finally {
      writer.kill('SIGKILL');
    }
  }

  it('--source-vip-file (hostFiles.readFileSync): FLANNEL_ERR_INPUT_FILE not-regular', () => {
    withWriter('source-vip-fifo', '{"ip4":{"ip":"10.244.1.2/24"}}', (fifo) => {
      expect(expectCode(() => hostFiles.readFileSync(fifo, 'utf8'), ConfigError, 'FLANNEL_ERR_INPUT_FILE').context).toMatchObject({ reason: 'not-regular' });
    });
  });

  it('--subnet-file (readSubnetEnv): FLANNEL_ERR_SUBNET_ENV naming the FIFO; a missing file is still "none yet"', async () => {
    await withWriter('subnet-env-fifo', 'FLANNEL_NETWORK=10.244.0.0/16\n', async (fifo) => {
      const err = await readSubnetEnv(fifo).then(
        (text) => new Error(`read ${JSON.stringify(text)}`),
        (e: unknown) => e,
      );
      expect(err).toMatchObject({ code: 'FLANNEL_ERR_SUBNET_ENV' });
      expect((err as Error).message).toContain('FIFO');
    });
    await expect(readSubnetEnv(join(dir, 'no-subnet.env'))).resolves.toBeUndefined();
  });
});

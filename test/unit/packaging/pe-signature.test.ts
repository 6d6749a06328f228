// packaging/pe-signature.mjs against real PE files: a mingw-w64 executable signed with osslsigncode
// (a throwaway self-signed certificate from openssl), stripped, must equal what `osslsigncode
// remove-signature` writes, byte for byte, and osslsigncode must find no signature in it. The Windows
// package test (test/windows/package.test.ts) checks the same on the built flanneld.exe.
import { describe, expect, it } from '@jest/globals';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// @ts-expect-error: a plain .mjs packaging script without type declarations
import { peChecksum, peLayout, securityDirectory, stripSignature } from '../../../packaging/pe-signature.mjs';

type Strip = (b: Buffer) => { image: Buffer; removed: number };
const strip = stripSignature as Strip;
const secDir = securityDirectory as (b: Buffer) => { offset: number; size: number };

const has = (cmd: string) => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
const tools = ['x86_64-w64-mingw32-gcc', 'osslsigncode', 'openssl'].filter((t) => !has(t));
const run = tools.length === 0 || process.env['CI'] === 'true' ? it : it.skip;

describe('stripping the Authenticode signature', () => {
  run('gives what osslsigncode remove-signature gives, and an image with no security directory', () => {
    if (tools.length > 0) throw new Error(`missing ${tools.join(', ')} (apt-get install gcc-mingw-w64-x86-64 osslsigncode openssl)`);
    const dir = mkdtempSync(join(tmpdir(), 'flanneld-pe-'));
    try {
      const at = (f: string) => join(dir, f);
      writeFileSync(at('a.c'), 'int main(void) { return 0; }\n');
      execFileSync('x86_64-w64-mingw32-gcc', ['-O2', '-s', '-o', at('a.exe'), at('a.c')]);
      execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', at('k.pem'), '-out', at('c.pem'), '-days', '2', '-subj', '/CN=flanneld-test'], {
        stdio: 'ignore',
      });
      execFileSync('osslsigncode', ['sign', '-certs', at('c.pem'), '-key', at('k.pem'), '-in', at('a.exe'), '-out', at('signed.exe')], { stdio: 'ignore' });
      execFileSync('osslsigncode', ['remove-signature', '-in', at('signed.exe'), '-out', at('removed.exe')], { stdio: 'ignore' });
      const unsigned = readFileSync(at('a.exe'));
      const signed = readFileSync(at('signed.exe'));
      expect(secDir(unsigned)).toEqual({ offset: 0, size: 0 });
      expect(secDir(signed).size).toBeGreaterThan(0);
      // The checksum algorithm agrees with the linker's.
      expect((peChecksum as (b: Buffer) => number)(unsigned)).toBe(unsigned.readUInt32LE((peLayout as (b: Buffer) => { checksum: number })(unsigned).checksum));

      const { image, removed } = strip(signed);
      expect(removed).toBe(signed.length - unsigned.length);
      expect(image.equals(readFileSync(at('removed.exe')))).toBe(true);
      expect(secDir(image)).toEqual({ offset: 0, size: 0 });
      writeFileSync(at('stripped.exe'), image);
      const verify = spawnSync('osslsigncode', ['verify', '-in', at('stripped.exe')], { encoding: 'utf8' });
      expect(verify.stdout + verify.stderr).toMatch(/No signature found/);
      // Unsigned input is returned as it is.
      expect(strip(unsigned)).toEqual({ image: unsigned, removed: 0 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses what is not a PE image', () => {
    expect(() => strip(Buffer.from('not an executable, just text long enough to have a header of sixty-four bytes'))).toThrow(/not a PE file/);
  });
});

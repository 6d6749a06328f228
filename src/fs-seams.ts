// The file seam: the node's file system as src/subnet and src/backends use it, node:fs behind the small
// interfaces they take as options (neither imports node:fs itself). A basic module beside ./fs-read.ts and
// ./fs-atomic.ts: it owns the interfaces and their real defaults (frozen) and imports no layer above it.
// Tests pass other implementations as options (the agent's `fs`) to inject a full or read-only disk.
import * as syncFs from 'node:fs';
import { existsSync } from 'node:fs';
import * as nodeFs from 'node:fs/promises';
import type { AtomicWriteFs } from './fs-atomic.js';
import { MAX_CONFIG_FILE_BYTES, readRegularFile, readRegularFileBytes } from './fs-read.js';

/**
 * Synchronous reads of small configuration files: kubeconfig, service account token, TLS PEM files. The
 * host's reads take regular files of at most 1 MiB (src/fs-read.ts); `what` names the file's flag in that error.
 */
export interface FileReader {
  readText(path: string, what?: string): string;
  readBytes(path: string, what?: string): Buffer;
  exists(path: string): boolean;
}

export const hostFileReader: FileReader = {
  readText: (p, what = 'the file') => readRegularFile(p, MAX_CONFIG_FILE_BYTES, what),
  readBytes: (p, what = 'the file') => readRegularFileBytes(p, MAX_CONFIG_FILE_BYTES, what),
  exists: (p) => existsSync(p),
};

/** The file operations subnet.env needs (src/subnet/subnet-env.ts): its read and its atomic write (temp file, fsync, rename). */
export interface SubnetEnvFs {
  mkdir(path: string, opts: { recursive: true }): Promise<unknown>;
  open(
    path: string,
    flags: string,
    mode?: number,
  ): Promise<{
    writeFile(data: string, encoding: 'utf8'): Promise<void>;
    sync(): Promise<void>;
    close(): Promise<void>;
  }>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  readFile(path: string, encoding: 'utf8'): Promise<string>;
}

export const nodeSubnetEnvFs: Readonly<SubnetEnvFs> = Object.freeze({
  mkdir: (p, o) => nodeFs.mkdir(p, o),
  open: (p, f, m) => nodeFs.open(p, f, m),
  rename: (a, b) => nodeFs.rename(a, b),
  unlink: (p) => nodeFs.unlink(p),
  // --subnet-file: a regular file of at most 1 MiB (a FIFO is refused, not waited on); ENOENT as node's.
  readFile: (p: string) => Promise.resolve().then(() => readRegularFile(p, MAX_CONFIG_FILE_BYTES, '--subnet-file')),
} satisfies SubnetEnvFs);

/** The source VIP's files and its host-local reservation (src/backends/vxlan/source-vip.ts). */
export interface SourceVipFs extends AtomicWriteFs {
  readFileSync(path: string, encoding: 'utf8'): string;
  readdirSync(path: string): string[];
}

/**
 * The real SourceVipFs: the source VIP's files and its host-local reservation (src/backends/vxlan/source-vip.ts). The recorded
 * source VIP (`--source-vip-file` and the scripts' files) is read as a regular file of at most 1 MiB: a FIFO
 * there is refused at once (and then replaced by the write), never waited on.
 */
export const hostFiles: SourceVipFs = {
  ...syncFs,
  readFileSync: (p: string) => readRegularFile(p, MAX_CONFIG_FILE_BYTES, 'the source VIP file'),
};

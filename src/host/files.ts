// The node's file system as src/subnet and src/backends use it: node:fs behind the small interfaces they
// take as options (neither imports node:fs itself). These are the real defaults; tests pass others, or
// swap a member of nodeSubnetEnvFs to inject a full disk.
import * as syncFs from 'node:fs';
import { existsSync } from 'node:fs';
import * as nodeFs from 'node:fs/promises';
import type { SourceVipFs } from '../backends/vxlan/source-vip.js';
import { MAX_CONFIG_FILE_BYTES, readRegularFile, readRegularFileBytes } from '../fs-read.js';
import type { SubnetEnvFs } from '../subnet/subnet-env.js';

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

/** subnet.env's reads and its atomic write (temp file, fsync, rename). */
export const nodeSubnetEnvFs: SubnetEnvFs = {
  mkdir: (p, o) => nodeFs.mkdir(p, o),
  open: (p, f, m) => nodeFs.open(p, f, m),
  rename: (a, b) => nodeFs.rename(a, b),
  unlink: (p) => nodeFs.unlink(p),
  // --subnet-file: a regular file of at most 1 MiB (a FIFO is refused, not waited on); ENOENT as node's.
  readFile: (p) => Promise.resolve().then(() => readRegularFile(p, MAX_CONFIG_FILE_BYTES, '--subnet-file')),
};

/**
 * The source VIP's files and its host-local reservation (src/backends/vxlan/source-vip.ts). The recorded
 * source VIP (`--source-vip-file` and the scripts' files) is read as a regular file of at most 1 MiB: a FIFO
 * there is refused at once (and then replaced by the write), never waited on.
 */
export const hostFiles: SourceVipFs = {
  ...syncFs,
  readFileSync: (p: string) => readRegularFile(p, MAX_CONFIG_FILE_BYTES, 'the source VIP file'),
};

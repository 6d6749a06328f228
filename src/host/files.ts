// The node's file system as src/subnet and src/backends use it: node:fs behind the small interfaces they
// take as options (neither imports node:fs itself). These are the real defaults; tests pass others, or
// swap a member of nodeSubnetEnvFs to inject a full disk.
import * as syncFs from 'node:fs';
import { existsSync, readFileSync } from 'node:fs';
import * as nodeFs from 'node:fs/promises';
import type { SourceVipFs } from '../backends/vxlan/source-vip.js';
import type { SubnetEnvFs } from '../subnet/subnet-env.js';

/** Synchronous reads of small configuration files: kubeconfig, service account token, TLS PEM files. */
export interface FileReader {
  readText(path: string): string;
  readBytes(path: string): Buffer;
  exists(path: string): boolean;
}

export const hostFileReader: FileReader = {
  readText: (p) => readFileSync(p, 'utf8'),
  readBytes: (p) => readFileSync(p),
  exists: (p) => existsSync(p),
};

/** subnet.env's reads and its atomic write (temp file, fsync, rename). */
export const nodeSubnetEnvFs: SubnetEnvFs = {
  mkdir: (p, o) => nodeFs.mkdir(p, o),
  open: (p, f, m) => nodeFs.open(p, f, m),
  rename: (a, b) => nodeFs.rename(a, b),
  unlink: (p) => nodeFs.unlink(p),
  readFile: (p, e) => nodeFs.readFile(p, e),
};

/** The source VIP's files and its host-local reservation (src/backends/vxlan/source-vip.ts). */
export const hostFiles: SourceVipFs = syncFs;

// Replace a small file atomically (temp file in the same directory, then rename), creating its
// directory: a reader sees the old file or the new one, never half of one. subnet.env has its own
// async, fsync'ing writer (src/subnet/subnet-env.ts) because the CNI plugin reads it on every pod start.
import * as nodeFs from 'node:fs';
import { dirname } from 'node:path';

/** The file-system calls needed (node:fs by default; tests inject failures). */
export interface AtomicWriteFs {
  writeFileSync(path: string, data: string): void;
  renameSync(from: string, to: string): void;
  mkdirSync(path: string, opts: { recursive: true }): unknown;
}

export function writeFileAtomicSync(path: string, text: string, fs: AtomicWriteFs = nodeFs): void {
  fs.mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, path);
}

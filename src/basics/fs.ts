// The agent's file access, one job in three parts: the bounded read of a file named by a flag, the atomic
// replace of a small file, and the file seams. A basic module: it imports no layer above it.
//
// Read a file named by a flag (net-conf.json, the env file, the kubeconfig, the etcd password file, a
// token file, the simulated node's state file): only a regular file, and at most `maxBytes` of it. A FIFO
// would block the thread (and with it SIGTERM) until some writer appeared, /dev/zero would fill the heap:
// both are refused with FLANNEL_ERR_INPUT_FILE before a byte is read. The file is opened non-blocking
// (O_NONBLOCK: opening a FIFO for reading does not wait for a writer) and checked with fstat on the open
// descriptor, so what is checked is what is read. The caps are in docs/errors.md (FLANNEL_ERR_INPUT_FILE).
//
// Replace a small file atomically (temp file in the same directory, then rename), creating its
// directory: a reader sees the old file or the new one, never half of one. subnet.env has its own
// async, fsync'ing writer (src/subnet/subnet-env.ts) because the CNI plugin reads it on every pod start.
//
// The file seams: the node's file system as src/subnet and src/backends use it, node:fs behind the small
// interfaces they take as options (neither imports node:fs itself), with their real defaults (frozen).
// Tests pass other implementations as options (the agent's `fs`) to inject a full or read-only disk.
import * as nodeFs from 'node:fs';
import { existsSync } from 'node:fs';
import * as fsPromises from 'node:fs/promises';
import { dirname } from 'node:path';
import { ConfigError } from './errors.js';

/** The cap of configuration files: 1 MiB, the most a ConfigMap or Secret (what mounts them) can hold. */
export const MAX_CONFIG_FILE_BYTES = 1024 * 1024;

/** The node:fs calls used (tests may inject others). */
export type ReadFs = Pick<typeof nodeFs, 'openSync' | 'fstatSync' | 'readSync' | 'closeSync'>;

function describeKind(st: nodeFs.Stats): string {
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  if (st.isDirectory()) return 'a directory';
  return 'not a regular file';
}

/**
 * The bytes of the regular file at `path`, at most `maxBytes` of them. Throws ConfigError
 * FLANNEL_ERR_INPUT_FILE when it is not a regular file or is larger than the cap (`what` names it in the
 * message, e.g. "--net-config-path"); a failing open (ENOENT, EACCES) throws node's error unchanged, for
 * the caller's own message.
 */
export function readRegularFileBytes(path: string, maxBytes: number, what: string, fs: ReadFs = nodeFs): Buffer {
  const fd = fs.openSync(path, nodeFs.constants.O_RDONLY | (nodeFs.constants.O_NONBLOCK ?? 0));
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) {
      throw new ConfigError('FLANNEL_ERR_INPUT_FILE', `${what} ${path} is ${describeKind(st)}, not a regular file; point it at a regular file`, {
        path,
        what,
        reason: 'not-regular',
      });
    }
    const tooLarge = () =>
      new ConfigError('FLANNEL_ERR_INPUT_FILE', `${what} ${path} is larger than ${maxBytes} bytes, the most this agent reads of it; is it the right file?`, {
        path,
        what,
        reason: 'too-large',
        maxBytes,
      });
    if (st.size > maxBytes) throw tooLarge();
    // A file that grows while it is read is caught too: the buffer grows once, to the cap and one byte.
    let buf = Buffer.alloc(Math.min(st.size, maxBytes) + 1);
    let n = 0;
    for (;;) {
      if (n === buf.length) {
        if (buf.length > maxBytes) throw tooLarge();
        const grown = Buffer.alloc(maxBytes + 1);
        buf.copy(grown);
        buf = grown;
      }
      const r = fs.readSync(fd, buf, n, buf.length - n, null);
      if (r === 0) break;
      n += r;
    }
    return buf.subarray(0, n);
  } finally {
    fs.closeSync(fd);
  }
}

/** readRegularFileBytes as UTF-8 text. */
export function readRegularFile(path: string, maxBytes: number, what: string, fs: ReadFs = nodeFs): string {
  return readRegularFileBytes(path, maxBytes, what, fs).toString('utf8');
}

/** The file-system calls needed (node:fs by default; tests inject failures). */
export interface AtomicWriteFs {
  writeFileSync(path: string, data: string): void;
  renameSync(from: string, to: string): void;
  mkdirSync(path: string, opts: { recursive: true }): unknown;
  /** Removes the temporary file of a failed write; an fs without it leaves that file behind. */
  unlinkSync?(path: string): void;
}

/**
 * Replace `path` with `text` (temp file `<path>.tmp-<pid>`, then rename). A failed write or rename (a full
 * disk: ENOSPC after part of the temp file landed) throws node's error and removes the temp file, so
 * nothing half-written stays beside the file (in containerd's conf dir every file is a candidate config).
 */
export function writeFileAtomicSync(path: string, text: string, fs: AtomicWriteFs = nodeFs): void {
  fs.mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  try {
    fs.writeFileSync(tmp, text);
    fs.renameSync(tmp, path);
  } catch (err) {
    try {
      fs.unlinkSync?.(tmp);
    } catch {
      // never created, or already gone
    }
    throw err;
  }
}

/**
 * Synchronous reads of small configuration files: kubeconfig, service account token, TLS PEM files. The
 * host's reads take regular files of at most 1 MiB (readRegularFile above); `what` names the file's flag in that error.
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
  mkdir: (p, o) => fsPromises.mkdir(p, o),
  open: (p, f, m) => fsPromises.open(p, f, m),
  rename: (a, b) => fsPromises.rename(a, b),
  unlink: (p) => fsPromises.unlink(p),
  // --subnet-file: a regular file of at most 1 MiB (a FIFO is refused, not waited on); ENOENT as node's.
  readFile: (p: string) => Promise.resolve().then(() => readRegularFile(p, MAX_CONFIG_FILE_BYTES, '--subnet-file')),
} satisfies SubnetEnvFs);

/** The source VIP's files and its host-local reservation (src/backends/vxlan/source-vip.ts). */
export interface SourceVipFs extends AtomicWriteFs {
  readFileSync(path: string, encoding: 'utf8'): string;
  readdirSync(path: string): string[];
  /** Removes a reservation of the agent's left from an earlier podCIDR (src/backends/ipam-reservation.ts). */
  unlinkSync(path: string): void;
}

/**
 * The real SourceVipFs: the source VIP's files and its host-local reservation (src/backends/vxlan/source-vip.ts). The recorded
 * source VIP (`--source-vip-file` and the scripts' files) is read as a regular file of at most 1 MiB: a FIFO
 * there is refused at once (and then replaced by the write), never waited on.
 */
export const hostFiles: SourceVipFs = {
  ...nodeFs,
  readFileSync: (p: string) => readRegularFile(p, MAX_CONFIG_FILE_BYTES, 'the source VIP file'),
};

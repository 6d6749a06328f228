// Read a file named by a flag (net-conf.json, the env file, the kubeconfig, the etcd password file, a
// token file, the simulated node's state file): only a regular file, and at most `maxBytes` of it. A FIFO
// would block the thread (and with it SIGTERM) until some writer appeared, /dev/zero would fill the heap:
// both are refused with FLANNEL_ERR_INPUT_FILE before a byte is read. The file is opened non-blocking
// (O_NONBLOCK: opening a FIFO for reading does not wait for a writer) and checked with fstat on the open
// descriptor, so what is checked is what is read. The caps are in docs/errors.md (FLANNEL_ERR_INPUT_FILE).
import * as nodeFs from 'node:fs';
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

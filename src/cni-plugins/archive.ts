// Reading the CNI plugin executables out of what upstream publishes: a zip (microsoft/windows-container-
// networking's windows-container-networking-cni-amd64-<tag>.zip with flat sdnbridge.exe, sdnoverlay.exe and
// nat.exe entries, its Makefile's `zip -j`; our own bundles), a gzipped tar (containernetworking/plugins' cni-plugins-windows-amd64-
// <tag>.tgz, whose entries are `./win-overlay.exe`, ...; flannel-io/cni-plugin's cni-plugin-flannel-
// windows-amd64-<tag>.tgz holding `flannel-amd64.exe`) or a bare executable (flannel-io/cni-plugin's
// `flannel-amd64.exe` release asset). The archive is read from a file; only the wanted executables are
// kept, in memory, by their base name; nothing is written here, so an archive can never place a file
// outside the plugin directory. zip: yauzl (validates entry names, checks each entry's CRC-32 and size);
// tar: tar-stream over node:zlib.
//
// Bounded (docs/bounds.md gives the numbers and why): each plugin entry's uncompressed size, checked on
// the size its header declares before a byte is inflated and again on what is inflated; and everything a
// tar.gz inflates to (a tar must be inflated whole to reach its entries, so a gzip bomb of entries we skip
// is stopped too). Only a regular file becomes a plugin: a plugin name on a symlink, a hard link, a device
// or a FIFO entry, or under a path that leaves the archive (`..`, absolute), is refused
// (FLANNEL_ERR_CNI_ENTRY), as is a plugin that is not a PE image (FLANNEL_ERR_CNI_NOT_PE).
import * as nodeFs from 'node:fs';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import tarStream from 'tar-stream';
import yauzl from 'yauzl';
import { CniInstallError, errorMessage, FlannelError } from '../basics/errors.js';
import type { CniPluginFile } from '../cni/plugins.js';
import { tooLargeError } from './download.js';

export interface ArchiveLimits {
  /** Largest plugin executable, uncompressed. */
  maxEntryBytes: number;
  /** Most a source may inflate to (a .tgz: every entry; a zip: the plugin entries read). */
  maxTotalBytes: number;
}

const MiB = 1024 * 1024;

/** The defaults; docs/bounds.md says why each is that number. */
export const ARCHIVE_LIMITS: ArchiveLimits = { maxEntryBytes: 64 * MiB, maxTotalBytes: 512 * MiB };

/** Names a plugin is published under -> the name the CNI runtime looks for (`"type": "flannel"` -> flannel.exe). */
const PUBLISHED_AS: Readonly<Record<string, CniPluginFile>> = {
  'flannel.exe': 'flannel.exe',
  'flannel-amd64.exe': 'flannel.exe',
  'win-overlay.exe': 'win-overlay.exe',
  'win-bridge.exe': 'win-bridge.exe',
  'host-local.exe': 'host-local.exe',
  'sdnbridge.exe': 'sdnbridge.exe',
};

export type SourceKind = 'zip' | 'tgz' | 'exe';

/** The plugin file an entry or download name stands for, if any (case-insensitive, any directory; a URL's query is ignored). */
export function pluginFileFor(name: string): CniPluginFile | undefined {
  const base = name
    .replace(/[?#].*$/, '')
    .split(/[\\/]/)
    .pop()!
    .toLowerCase();
  return PUBLISHED_AS[base];
}

/** What a downloaded file is, by its first bytes (names and Content-Types lie; magic numbers do not). */
export function sourceKind(data: Buffer): SourceKind | undefined {
  if (data.length >= 4 && data.readUInt32LE(0) === 0x04034b50) return 'zip'; // "PK\3\4"
  if (data.length >= 2 && data[0] === 0x1f && data[1] === 0x8b) return 'tgz';
  if (data.length >= 2 && data[0] === 0x4d && data[1] === 0x5a) return 'exe'; // "MZ"
  return undefined;
}

/**
 * A PE image, as Windows loads one: the MS-DOS header's "MZ", at 0x3C the file offset of the PE
 * signature ("PE\0\0"), followed by the 20-byte COFF file header
 * (https://learn.microsoft.com/en-us/windows/win32/debug/pe-format, "MS-DOS Stub" and "Signature").
 * "MZ" alone is what a text file starting with those letters also has.
 */
export function isPeImage(data: Buffer): boolean {
  if (data.length < 0x40 || data[0] !== 0x4d || data[1] !== 0x5a) return false;
  const peOffset = data.readUInt32LE(0x3c);
  return peOffset >= 0x40 && peOffset + 4 + 20 <= data.length && data.readUInt32BE(peOffset) === 0x50450000;
}

/** A path that leaves the directory it is unpacked in: a `..` component, or absolute (`/x`, `\x`, `C:x`). */
function leavesArchive(name: string): boolean {
  return /^[\\/]|^[A-Za-z]:/.test(name) || name.split(/[\\/]/).includes('..');
}

function archiveError(source: string, message: string, cause?: unknown): CniInstallError {
  return new CniInstallError('FLANNEL_ERR_CNI_ARCHIVE', `${source}: ${message}`, { source }, { cause });
}

function entryError(source: string, entry: string, what: string): CniInstallError {
  return new CniInstallError(
    'FLANNEL_ERR_CNI_ENTRY',
    `${source}: refusing ${entry}: ${what}; a plugin must be a regular file inside the archive, so this is not an upstream release`,
    { source, entry },
  );
}

/** Add one found plugin; the same plugin twice in one source is refused (which one would win?), as is a non-PE one. */
function take(out: Map<CniPluginFile, Buffer>, source: string, entry: string, data: Buffer): void {
  const file = pluginFileFor(entry)!;
  if (out.has(file)) throw archiveError(source, `holds ${file} twice (again as ${entry}); give an archive with one copy of each plugin`);
  if (!isPeImage(data)) {
    throw new CniInstallError('FLANNEL_ERR_CNI_NOT_PE', `${source}: ${entry} is not a Windows executable (no PE header); this is not a CNI plugin release`, {
      source,
      entry,
      bytes: data.length,
    });
  }
  out.set(file, data);
}

/** Bytes read so far and the checks on them. */
class Budget {
  total = 0;
  constructor(
    private readonly source: string,
    private readonly limits: ArchiveLimits,
  ) {}
  /** Before an entry: the size its header declares. */
  declare(entry: string, size: number): void {
    if (size > this.limits.maxEntryBytes) throw tooLargeError(this.source, 'entry', this.limits.maxEntryBytes, this.total, ` (${entry} declares ${size} bytes)`);
  }
  /** While reading an entry: `entryBytes` read of it so far. */
  entry(entry: string, entryBytes: number): void {
    if (entryBytes > this.limits.maxEntryBytes) throw tooLargeError(this.source, 'entry', this.limits.maxEntryBytes, this.total, ` (${entry})`);
  }
  /** Everything inflated: count `n` more bytes. */
  add(n: number): void {
    if (this.total + n > this.limits.maxTotalBytes) throw tooLargeError(this.source, 'total', this.limits.maxTotalBytes, this.total);
    this.total += n;
  }
}

/** S_IFMT of a zip entry made on Unix (high 16 bits of the external attributes), 0 when not recorded. */
function zipFileType(entry: yauzl.Entry): number {
  return entry.versionMadeBy >> 8 === 3 ? (entry.externalFileAttributes >>> 16) & 0o170000 : 0;
}
const S_IFREG = 0o100000;

async function readZip(path: string, source: string, budget: Budget): Promise<Map<CniPluginFile, Buffer>> {
  const out = new Map<CniPluginFile, Buffer>();
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.open(path, { lazyEntries: true, autoClose: true, strictFileNames: false, validateEntrySizes: true }, (err, z) => (err ? reject(err) : resolve(z))),
  );
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('error', (err: Error) =>
        reject(/^(invalid relative path|absolute path): /.test(err.message) ? entryError(source, err.message.replace(/^[^:]*: /, ''), 'its path leaves the archive') : err),
      );
      zip.on('end', () => resolve());
      zip.on('entry', (entry: yauzl.Entry) => {
        if (entry.fileName.endsWith('/') || pluginFileFor(entry.fileName) === undefined) {
          zip.readEntry();
          return;
        }
        try {
          const type = zipFileType(entry);
          if (type !== 0 && type !== S_IFREG) throw entryError(source, entry.fileName, `it is not a regular file (mode ${(type >> 12).toString(8)}xxxx: a symlink or a device)`);
          budget.declare(entry.fileName, entry.uncompressedSize);
        } catch (e) {
          return reject(e);
        }
        zip.openReadStream(entry, (err, stream) => {
          if (err) return reject(err);
          const chunks: Buffer[] = [];
          let size = 0;
          stream.on('data', (c: Buffer) => {
            try {
              size += c.length;
              budget.entry(entry.fileName, size);
              budget.add(c.length);
              chunks.push(c);
            } catch (e) {
              stream.destroy();
              reject(e);
            }
          });
          stream.on('error', reject);
          stream.on('end', () => {
            try {
              take(out, source, entry.fileName, Buffer.concat(chunks));
              zip.readEntry();
            } catch (e) {
              reject(e);
            }
          });
        });
      });
      zip.readEntry();
    });
  } finally {
    zip.close();
  }
  return out;
}

async function readTgz(path: string, source: string, budget: Budget, fs: Pick<typeof nodeFs, 'createReadStream'>): Promise<Map<CniPluginFile, Buffer>> {
  const out = new Map<CniPluginFile, Buffer>();
  const extract = tarStream.extract();
  extract.on('entry', (header, stream, next) => {
    // next() once: an error passed to it also destroys this entry's stream, which then reports it here.
    let settled = false;
    const finish = (err?: unknown) => {
      if (settled) return;
      settled = true;
      next(err as Error | undefined);
    };
    stream.on('error', finish);
    const wanted = pluginFileFor(header.name) !== undefined;
    try {
      if (wanted && leavesArchive(header.name)) throw entryError(source, header.name, 'its path leaves the archive');
      if (wanted && header.type !== 'file') throw entryError(source, header.name, `it is a ${header.type ?? 'special'} entry, not a regular file`);
      if (wanted) budget.declare(header.name, header.size ?? 0);
    } catch (e) {
      return finish(e);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (data: unknown) => {
      if (!wanted) return;
      const c = data as Buffer;
      size += c.length;
      try {
        budget.entry(header.name, size);
      } catch (e) {
        stream.destroy(e as Error);
        return;
      }
      chunks.push(c);
    });
    stream.on('end', () => {
      try {
        if (wanted) take(out, source, header.name, Buffer.concat(chunks));
        finish();
      } catch (e) {
        finish(e);
      }
    });
    stream.resume();
  });
  const meter = new Transform({
    transform(chunk: Buffer, _enc, done) {
      try {
        budget.add(chunk.length);
        done(null, chunk);
      } catch (e) {
        done(e as Error);
      }
    },
  });
  await pipeline(fs.createReadStream(path), createGunzip(), meter, extract);
  return out;
}

function firstBytes(path: string, fs: Pick<typeof nodeFs, 'openSync' | 'readSync' | 'closeSync'>): Buffer {
  const fd = fs.openSync(path, 'r');
  try {
    const head = Buffer.alloc(4);
    return head.subarray(0, fs.readSync(fd, head, 0, 4, 0));
  } finally {
    fs.closeSync(fd);
  }
}

export type ArchiveFs = Pick<typeof nodeFs, 'createReadStream' | 'openSync' | 'readSync' | 'closeSync' | 'statSync' | 'readFileSync'>;

/**
 * The plugin executables in one downloaded file at `path`. `name` is the download's own name (URL or
 * path), used for messages and for a bare executable. Throws FLANNEL_ERR_CNI_ARCHIVE when the file is
 * neither a zip, a gzipped tar nor a Windows executable, or is corrupt (bad gzip stream, truncated tar,
 * zip CRC or structure errors); FLANNEL_ERR_CNI_TOO_LARGE, FLANNEL_ERR_CNI_ENTRY, FLANNEL_ERR_CNI_NOT_PE
 * as the module comment says.
 */
export async function readPlugins(path: string, name: string, limits: Partial<ArchiveLimits> = {}, fs: ArchiveFs = nodeFs): Promise<Map<CniPluginFile, Buffer>> {
  const budget = new Budget(name, { ...ARCHIVE_LIMITS, ...limits });
  const kind = sourceKind(firstBytes(path, fs));
  try {
    switch (kind) {
      case 'zip':
        return await readZip(path, name, budget);
      case 'tgz':
        return await readTgz(path, name, budget, fs);
      case 'exe': {
        const file = pluginFileFor(name);
        if (!file) throw archiveError(name, `is a bare executable whose name is not one of ${Object.keys(PUBLISHED_AS).join(', ')}`);
        budget.declare(name, fs.statSync(path).size);
        const out = new Map<CniPluginFile, Buffer>();
        take(out, name, name, fs.readFileSync(path));
        return out;
      }
      default:
        throw archiveError(name, 'is not a zip, a .tgz or a Windows executable (unknown first bytes)');
    }
  } catch (err) {
    if (err instanceof FlannelError) throw err;
    throw archiveError(name, `is not a readable ${kind === 'zip' ? 'zip' : 'gzipped tar'} archive (${errorMessage(err)}); download it again`, err);
  }
}

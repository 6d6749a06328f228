// Reading the CNI plugin executables out of what upstream publishes: a zip (microsoft/windows-container-
// networking, our own bundles), a gzipped tar (containernetworking/plugins' cni-plugins-windows-amd64-
// <tag>.tgz, whose entries are `./win-overlay.exe`, ...; flannel-io/cni-plugin's cni-plugin-flannel-
// windows-amd64-<tag>.tgz holding `flannel-amd64.exe`) or a bare executable (flannel-io/cni-plugin's
// `flannel-amd64.exe` release asset). Only the wanted executables are read, in memory, by their base
// name; nothing is written here, so an archive can never place a file outside the plugin directory.
// zip: yauzl (validates entry names, checks each entry's CRC-32); tar: tar-stream over node:zlib.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import tarStream from 'tar-stream';
import yauzl from 'yauzl';
import { CniInstallError, errorMessage, FlannelError } from '../errors.js';

/** The plugins the flannel CNI config needs on Windows: the meta-plugin, both delegates and the IPAM. */
export const CNI_PLUGIN_FILES = ['flannel.exe', 'win-overlay.exe', 'win-bridge.exe', 'host-local.exe'] as const;
export type CniPluginFile = (typeof CNI_PLUGIN_FILES)[number];

/** Names a plugin is published under -> the name the CNI runtime looks for (`"type": "flannel"` -> flannel.exe). */
const PUBLISHED_AS: Readonly<Record<string, CniPluginFile>> = {
  'flannel.exe': 'flannel.exe',
  'flannel-amd64.exe': 'flannel.exe',
  'win-overlay.exe': 'win-overlay.exe',
  'win-bridge.exe': 'win-bridge.exe',
  'host-local.exe': 'host-local.exe',
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

function archiveError(source: string, message: string, cause?: unknown): CniInstallError {
  return new CniInstallError('FLANNEL_ERR_CNI_ARCHIVE', `${source}: ${message}`, { source }, { cause });
}

/** Add one found plugin; the same plugin twice in one source is refused (which one would win?). */
function take(out: Map<CniPluginFile, Buffer>, source: string, entry: string, data: Buffer): void {
  const file = pluginFileFor(entry)!;
  if (out.has(file)) throw archiveError(source, `holds ${file} twice (again as ${entry}); give an archive with one copy of each plugin`);
  out.set(file, data);
}

async function readZip(data: Buffer, source: string): Promise<Map<CniPluginFile, Buffer>> {
  const out = new Map<CniPluginFile, Buffer>();
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.fromBuffer(data, { lazyEntries: true, strictFileNames: false, validateEntrySizes: true }, (err, z) => (err ? reject(err) : resolve(z))),
  );
  await new Promise<void>((resolve, reject) => {
    zip.on('error', reject);
    zip.on('end', () => resolve());
    zip.on('entry', (entry: yauzl.Entry) => {
      if (entry.fileName.endsWith('/') || pluginFileFor(entry.fileName) === undefined) {
        zip.readEntry();
        return;
      }
      zip.openReadStream(entry, (err, stream) => {
        if (err) return reject(err);
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
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
  return out;
}

async function readTgz(data: Buffer, source: string): Promise<Map<CniPluginFile, Buffer>> {
  const out = new Map<CniPluginFile, Buffer>();
  const extract = tarStream.extract();
  extract.on('entry', (header, stream, next) => {
    const wanted = header.type === 'file' && pluginFileFor(header.name) !== undefined;
    const chunks: Buffer[] = [];
    stream.on('data', (c: unknown) => {
      if (wanted) chunks.push(c as Buffer);
    });
    stream.on('end', () => {
      try {
        if (wanted) take(out, source, header.name, Buffer.concat(chunks));
        next();
      } catch (e) {
        next(e as Error);
      }
    });
    stream.resume();
  });
  await pipeline(Readable.from([data]), createGunzip(), extract);
  return out;
}

/**
 * The plugin executables in one downloaded file. `name` is the download's own name (URL or path), used
 * for a bare executable. Throws FLANNEL_ERR_CNI_ARCHIVE when the file is neither a zip, a gzipped tar nor
 * a Windows executable, or is corrupt (bad gzip stream, truncated tar, zip CRC or structure errors).
 */
export async function readPlugins(data: Buffer, name: string): Promise<Map<CniPluginFile, Buffer>> {
  const kind = sourceKind(data);
  try {
    switch (kind) {
      case 'zip':
        return await readZip(data, name);
      case 'tgz':
        return await readTgz(data, name);
      case 'exe': {
        const file = pluginFileFor(name);
        if (!file) throw archiveError(name, `is a bare executable whose name is not one of ${Object.keys(PUBLISHED_AS).join(', ')}`);
        return new Map([[file, data]]);
      }
      default:
        throw archiveError(name, 'is not a zip, a .tgz or a Windows executable (unknown first bytes)');
    }
  } catch (err) {
    if (err instanceof FlannelError) throw err;
    throw archiveError(name, `is not a readable ${kind === 'zip' ? 'zip' : 'gzipped tar'} archive (${errorMessage(err)}); download it again`, err);
  }
}

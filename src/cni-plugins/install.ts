// `flanneld install-cni`: put flannel.exe, win-overlay.exe, win-bridge.exe and host-local.exe (and, for the
// dual-stack conflist, sdnbridge.exe) into the CNI bin directory from archives the operator names by URL
// or path, each with its SHA-256.
//
// Order, so a bad download never touches the node: every source is streamed to a temporary file (a URL;
// ./download.ts bounds its size and time) or read where it is (a path: a regular file under the same size
// cap), and its SHA-256 compared with the one given BEFORE anything is written to the bin directory; then
// the plugins are read out of it (./archive.ts bounds each and the total, and checks each is a PE image);
// only when all the wanted ones are there are the changed ones written to a temporary directory inside the bin
// directory and renamed into place (same volume: each rename replaces one file whole). Files already equal
// byte for byte are left alone, so a second run writes nothing. The temporary download directory is
// removed whatever happens.
//
// A record of the last install (INSTALL_RECORD in the bin dir: the sources' SHA-256 and each plugin's)
// lets a rerun with the same sources finish without downloading anything, as long as every plugin on
// disk still has the recorded hash (the DaemonSet's init container runs this on every pod start).
import { createHash } from 'node:crypto';
import * as nodeFs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock, type Clock } from '../basics/clock.js';
import { CniInstallError, errorMessage } from '../basics/errors.js';
import { writeFileAtomicSync } from '../basics/fs.js';
import { readRegularFileBytes, type ReadFs } from '../basics/fs.js';
import { CNI_PLUGIN_FILES, type CniPluginFile } from '../cni/plugins.js';
import { ARCHIVE_LIMITS, readPlugins, type ArchiveLimits } from './archive.js';
import pinned from './pinned.json' with { type: 'json' };
import { DOWNLOAD_LIMITS, downloadToFile, tooLargeError, type DownloadLimits } from './download.js';

/** The record of the last install, in the bin dir. */
export const INSTALL_RECORD = '.flanneld-install-cni.json';
/** The record is a few hundred bytes; a larger one is not ours and is ignored (a full install follows). */
export const MAX_RECORD_BYTES = 64 * 1024;

interface InstallRecord {
  /** SHA-256 of each source, sorted (the location does not matter: same bytes, same plugins). */
  sources: string[];
  files: Record<string, string>;
}

export interface PluginSource {
  /** https:// or http:// URL, or a local path. */
  location: string;
  /** Expected SHA-256 of the whole file, hex. */
  sha256: string;
}

export interface InstallOptions {
  sources: readonly PluginSource[];
  binDir: string;
  /** The plugins to install, every one of which a source must hold (default CNI_PLUGIN_FILES); others found are ignored. */
  plugins?: readonly CniPluginFile[];
  /** Size caps and deadlines of a download and of an archive (defaults DOWNLOAD_LIMITS, ARCHIVE_LIMITS). */
  limits?: Partial<DownloadLimits & ArchiveLimits>;
  /** The clock of the download deadlines and of the waits between rename attempts (default systemClock). */
  clock?: Clock;
  /** Where downloads are kept until installed (default: the OS temporary directory). */
  tmpDir?: string;
  fs?: InstallFs;
}

export type InstallFs = Pick<
  typeof nodeFs,
  | 'readFileSync'
  | 'existsSync'
  | 'mkdirSync'
  | 'mkdtempSync'
  | 'writeFileSync'
  | 'renameSync'
  | 'rmSync'
  | 'statSync'
  | 'createReadStream'
  | 'createWriteStream'
  | 'openSync'
  | 'readSync'
  | 'closeSync'
  | 'fstatSync'
>;

/**
 * Windows refuses to replace an executable that is running (a plugin mid-ADD) with EPERM/EBUSY/EACCES;
 * plugins run for well under a second, so a replace is retried for about 5 s before it counts as failed.
 */
const RENAME_RETRY_MS = [50, 100, 200, 400, 800, 1000, 1000, 1500];
const BUSY = new Set(['EPERM', 'EBUSY', 'EACCES']);

async function renameWithRetry(from: string, to: string, fs: Pick<typeof nodeFs, 'renameSync'>, clock: Clock): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      fs.renameSync(from, to);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? '';
      if (!BUSY.has(code) || attempt >= RENAME_RETRY_MS.length) throw err;
      await clock.sleep(RENAME_RETRY_MS[attempt]);
    }
  }
}

export interface InstallReport {
  /** Plugins written (new or changed), in the order of the plugins asked for. */
  installed: CniPluginFile[];
  /** Plugins already there with the same content. */
  unchanged: CniPluginFile[];
  /** True when the install record matched and nothing was downloaded. */
  fromRecord: boolean;
  /** SHA-256 of each installed file, for the log. */
  sha256: Record<CniPluginFile, string>;
}

function sha256Hex(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Validate a --sha256 value: 64 hex digits (any case; `sha256:` prefix as GitHub shows digests). */
export function normalizeSha256(raw: string): string | undefined {
  const v = raw
    .trim()
    .toLowerCase()
    .replace(/^sha256:/, '');
  return /^[0-9a-f]{64}$/.test(v) ? v : undefined;
}

function isUrl(location: string): boolean {
  return /^https?:\/\//i.test(location);
}

/** SHA-256 of a local file, read as a stream under the size cap (a file growing while read stops there too). */
async function hashLocalFile(path: string, maxBytes: number, fs: Pick<typeof nodeFs, 'createReadStream'>): Promise<string> {
  const hash = createHash('sha256');
  let read = 0;
  for await (const chunk of fs.createReadStream(path)) {
    read += (chunk as Buffer).length;
    if (read > maxBytes) throw tooLargeError(path, 'download', maxBytes, read - (chunk as Buffer).length);
    hash.update(chunk as Buffer);
  }
  return hash.digest('hex');
}

/**
 * Bring one source to a file and check its SHA-256; nothing is written to the bin dir. A URL is downloaded
 * into `tmp`; a path is used where it is, if it is a regular file within the size cap. Returns the file and
 * the SHA-256 computed from its bytes (what `--verify-pins` records).
 */
export async function loadSource(
  src: PluginSource,
  tmp: string,
  index: number,
  o: { limits: DownloadLimits; clock: Clock; fs: InstallFs },
): Promise<{ path: string; sha256: string }> {
  let path: string;
  let actual: string;
  if (isUrl(src.location)) {
    path = join(tmp, `source-${index}`);
    actual = (await downloadToFile(src.location, path, { limits: o.limits, clock: o.clock, createWriteStream: (p) => o.fs.createWriteStream(p, { flags: 'wx', mode: 0o600 }) }))
      .sha256;
  } else {
    path = src.location;
    try {
      const st = o.fs.statSync(path);
      if (!st.isFile()) {
        throw new CniInstallError('FLANNEL_ERR_CNI_SOURCE', `${path} is not a regular file (a directory, a pipe or a device); give the archive's path`, { source: path });
      }
      if (st.size > o.limits.maxBytes) throw tooLargeError(path, 'download', o.limits.maxBytes, 0, ` (${st.size} bytes)`);
      actual = await hashLocalFile(path, o.limits.maxBytes, o.fs);
    } catch (err) {
      if (err instanceof CniInstallError) throw err;
      throw new CniInstallError('FLANNEL_ERR_CNI_SOURCE', `cannot read ${path}: ${errorMessage(err)}`, { source: path }, { cause: err });
    }
  }
  if (actual !== src.sha256) {
    throw new CniInstallError(
      'FLANNEL_ERR_CNI_HASH',
      `${src.location} has SHA-256 ${actual}, not the expected ${src.sha256}: the download is damaged or not the release you pinned; nothing was installed`,
      { source: src.location, expected: src.sha256, actual },
    );
  }
  return { path, sha256: actual };
}

function sameContent(path: string, data: Buffer, fs: Pick<typeof nodeFs, 'readFileSync' | 'existsSync' | 'statSync'>): boolean {
  if (!fs.existsSync(path)) return false;
  try {
    const st = fs.statSync(path);
    if (!st.isFile() || st.size !== data.length) return false; // not read: it differs anyway
    const have = fs.readFileSync(path);
    return have.length === data.length && have.equals(data);
  } catch {
    return false;
  }
}

/** The plugins on disk when they are exactly what the record of an install of these sources says. */
function recordedInstall(binDir: string, sources: readonly PluginSource[], plugins: readonly CniPluginFile[], fs: ReadFs): InstallReport | undefined {
  /** A file of the bin dir, read only when it is a regular file of a plausible size (a FIFO would block); else throws. */
  const read = (name: string, max: number): Buffer => readRegularFileBytes(join(binDir, name), max, 'the CNI bin dir file', fs);
  try {
    const text = read(INSTALL_RECORD, MAX_RECORD_BYTES);
    const rec = JSON.parse(text.toString('utf8')) as InstallRecord;
    const wanted = sources.map((s) => s.sha256).sort();
    if (JSON.stringify(rec.sources) !== JSON.stringify(wanted)) return undefined;
    const sha256 = {} as Record<CniPluginFile, string>;
    for (const f of plugins) {
      const data = read(f, ARCHIVE_LIMITS.maxEntryBytes);
      sha256[f] = sha256Hex(data);
      if (rec.files[f] !== sha256[f]) return undefined;
    }
    return { installed: [], unchanged: [...plugins], sha256, fromRecord: true };
  } catch {
    return undefined; // no record, unreadable, or a plugin missing: do the full install
  }
}

/** `file`'s upstream release, as src/cni-plugins/pinned.json pins it: `<repository> <version> (<file name>)`. */
function releaseHolding(file: CniPluginFile): string | undefined {
  const r = [...pinned.releases, ...pinned.dualStack].find((x) => Object.keys(x.provides).includes(file));
  return r && `${r.repository} ${r.version} (${new URL(r.url).pathname.split('/').pop() ?? ''})`;
}

export async function installCniPlugins(opts: InstallOptions): Promise<InstallReport> {
  const fs = opts.fs ?? nodeFs;
  const plugins = opts.plugins ?? CNI_PLUGIN_FILES;
  const recorded = recordedInstall(opts.binDir, opts.sources, plugins, fs);
  if (recorded) return recorded;
  const found = await readSources(opts, fs);
  const missing = plugins.filter((f) => !found.has(f));
  if (missing.length > 0) {
    const releases = missing.map((f) => `${f}: ${releaseHolding(f) ?? 'no pinned release'}`).join('; ');
    throw new CniInstallError(
      'FLANNEL_ERR_CNI_ARCHIVE',
      `the sources hold no ${missing.join(', ')}; add a --source that has ${missing.length === 1 ? 'it' : 'them'} (the upstream release${missing.length === 1 ? '' : 's'}, pinned in src/cni-plugins/pinned.json: ${releases}); nothing was installed`,
      { missing: missing.join(',') },
    );
  }

  const report: InstallReport = { installed: [], unchanged: [], sha256: {} as Record<CniPluginFile, string>, fromRecord: false };
  for (const f of plugins) {
    const { data } = found.get(f)!;
    report.sha256[f] = sha256Hex(data);
    (sameContent(join(opts.binDir, f), data, fs) ? report.unchanged : report.installed).push(f);
  }
  const record: InstallRecord = { sources: opts.sources.map((s) => s.sha256).sort(), files: report.sha256 };
  if (report.installed.length === 0) {
    writeRecord(opts.binDir, record, fs);
    return report;
  }

  fs.mkdirSync(opts.binDir, { recursive: true });
  const tmp = fs.mkdtempSync(join(opts.binDir, '.install-cni-'));
  const done: CniPluginFile[] = [];
  try {
    for (const f of report.installed) fs.writeFileSync(join(tmp, f), found.get(f)!.data, { mode: 0o755 });
    for (const f of report.installed) {
      await renameWithRetry(join(tmp, f), join(opts.binDir, f), fs, opts.clock ?? systemClock);
      done.push(f);
    }
  } catch (err) {
    const left = report.installed.filter((f) => !done.includes(f));
    throw new CniInstallError(
      'FLANNEL_ERR_CNI_INSTALL',
      `cannot write the plugins into ${opts.binDir}: ${errorMessage(err)}; ${done.length > 0 ? `${done.join(', ')} replaced, ` : ''}${left.join(', ')} left as they were: run install-cni again`,
      { binDir: opts.binDir, replaced: done.join(','), kept: left.join(',') },
      { cause: err },
    );
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  writeRecord(opts.binDir, record, fs);
  return report;
}

/** The plugins of every source, each source hashed and checked first; downloads are removed after. */
async function readSources(opts: InstallOptions, fs: InstallFs): Promise<Map<CniPluginFile, { data: Buffer; from: string }>> {
  const limits = { ...DOWNLOAD_LIMITS, ...opts.limits };
  const clock = opts.clock ?? systemClock;
  const found = new Map<CniPluginFile, { data: Buffer; from: string }>();
  const tmp = fs.mkdtempSync(join(opts.tmpDir ?? tmpdir(), 'flanneld-install-cni-'));
  try {
    for (const [i, src] of opts.sources.entries()) {
      const { path } = await loadSource(src, tmp, i, { limits, clock, fs });
      for (const [file, content] of await readPlugins(path, src.location, opts.limits, fs)) {
        const prev = found.get(file);
        if (prev) {
          throw new CniInstallError('FLANNEL_ERR_CNI_ARCHIVE', `${file} is in both ${prev.from} and ${src.location}; give it once`, { file });
        }
        found.set(file, { data: content, from: src.location });
      }
      if (path.startsWith(tmp)) fs.rmSync(path, { force: true }); // one download on disk at a time
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  return found;
}

/** Best effort: without a record the next run downloads and compares again. */
function writeRecord(binDir: string, record: InstallRecord, fs: Pick<typeof nodeFs, 'writeFileSync' | 'renameSync' | 'mkdirSync'>): void {
  try {
    writeFileAtomicSync(join(binDir, INSTALL_RECORD), JSON.stringify(record, null, 2) + '\n', fs);
  } catch {
    // ignored
  }
}

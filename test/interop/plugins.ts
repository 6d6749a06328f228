// The upstream Windows CNI plugins (flannel.exe, win-overlay.exe, win-bridge.exe, host-local.exe) run under
// Wine as the container runtime runs them: CNI_* in the environment, the network config on stdin, the result
// on stdout (CNI SPEC "Parameters", containerd's go-cni / libcni invoke/exec.go). They reach the simulated
// node through the stand-in DLLs, which hcsshim loads from the prefix's system32 only.
//
// The binaries cannot be distributed with this project. The tier runs only when FLANNEL_CNI_PLUGINS_DIR
// names a folder holding them (docs/testing.md "The interop tier"), in one of two forms:
//  * the official release files this build pins (src/cni-plugins/pinned.json: flannel-io/cni-plugin's
//    `flannel-amd64.exe` and containernetworking/plugins' `cni-plugins-windows-amd64-<tag>.tgz`), each
//    checked against its pin and installed with the project's own install-cni code into the tier's cache;
//  * the four .exe files with a `SHA256SUMS` the user supplies (`sha256sum` format), each checked against it.
// Without the variable the tier skips with one line, under CI=true too; with it, a file that does not
// match its hash fails the tier.
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync, lstatSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { basename, dirname, join } from 'node:path';
import pinned from '../../src/cni-plugins/pinned.json' with { type: 'json' };
import { installCniPlugins } from '../../src/cni-plugins/install.js';
import { CACHE, driveC, wineEnv, winPath } from '../support/windows.js';

export const PLUGINS = ['flannel.exe', 'win-overlay.exe', 'win-bridge.exe', 'host-local.exe'] as const;

/** The variable that names the plugins' folder. */
export const PLUGINS_DIR_VARIABLE = 'FLANNEL_CNI_PLUGINS_DIR';

/** The release files of the pins, by file name (the last part of each pinned URL). */
export function pinnedReleaseFiles(): { file: string; sha256: string }[] {
  return pinned.releases.map((r) => ({ file: basename(new URL(r.url).pathname), sha256: r.sha256 }));
}

/** What FLANNEL_CNI_PLUGINS_DIR holds: nothing set (skip), a form the tier can use, or why it cannot. */
export type PluginsFolder =
  { kind: 'unset'; reason: string } | { kind: 'release'; dir: string } | { kind: 'listed'; dir: string; sums: Map<string, string> } | { kind: 'unusable'; reason: string };

/** `sha256sum` output: `<64 hex>  <name>` (or ` *<name>`) per line. */
export function parseSha256Sums(text: string): Map<string, string> {
  const sums = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const m = /^([0-9a-fA-F]{64}) [ *](.+)$/.exec(line.trim());
    if (m) sums.set(basename(m[2].trim()), m[1].toLowerCase());
  }
  return sums;
}

/** Read FLANNEL_CNI_PLUGINS_DIR (sync: it decides at load time whether the tier's tests are defined). */
export function pluginsFolder(env: NodeJS.ProcessEnv = process.env): PluginsFolder {
  const dir = env[PLUGINS_DIR_VARIABLE];
  if (!dir) {
    return {
      kind: 'unset',
      reason: `Interop tier skipped: ${PLUGINS_DIR_VARIABLE} is not set (a folder with the pinned release files or the four plugins and a SHA256SUMS; docs/testing.md "The interop tier")`,
    };
  }
  const release = pinnedReleaseFiles();
  if (release.every((r) => existsSync(join(dir, r.file)))) return { kind: 'release', dir };
  const sumsFile = join(dir, 'SHA256SUMS');
  if (PLUGINS.every((p) => existsSync(join(dir, p))) && existsSync(sumsFile)) return { kind: 'listed', dir, sums: parseSha256Sums(readFileSync(sumsFile, 'utf8')) };
  return {
    kind: 'unusable',
    reason: `${PLUGINS_DIR_VARIABLE}=${dir} holds neither the pinned release files (${release.map((r) => r.file).join(', ')}) nor ${PLUGINS.join(', ')} with a SHA256SUMS`,
  };
}

/**
 * The folder the tier runs the plugins from, every file checked against its hash: release files are
 * installed (hashed against the pins first) into the tier's cache; listed files are checked in place.
 * Rejects on a mismatch: the user named this folder, so a wrong file is an error, not a skip.
 */
export async function preparePlugins(folder: PluginsFolder): Promise<string> {
  if (folder.kind === 'unset' || folder.kind === 'unusable') throw new Error(folder.reason);
  if (folder.kind === 'release') {
    const binDir = join(CACHE, 'cni-plugins-bin');
    const sources = pinnedReleaseFiles().map((r) => ({ location: join(folder.dir, r.file), sha256: r.sha256 }));
    await installCniPlugins({ sources, binDir });
    return binDir;
  }
  for (const p of PLUGINS) {
    const f = join(folder.dir, p);
    const want = folder.sums.get(p);
    if (!want) throw new Error(`${join(folder.dir, 'SHA256SUMS')} lists no hash for ${p}`);
    const got = createHash('sha256').update(readFileSync(f)).digest('hex');
    if (got !== want) throw new Error(`${f} does not match SHA256SUMS (sha256 ${got}, listed ${want})`);
  }
  return folder.dir;
}

/**
 * host-local's data dir. flannel replaces the delegate's whole `ipam`, so host-local keeps its default
 * `/var/lib/cni/networks` (plugins/ipam/host-local/backend/disk/backend.go defaultDataDir), which a
 * Windows Go program passes on as a rooted path and Wine takes as a Unix path. Link that Unix path to
 * the prefix's `C:\var\lib\cni\networks`, where the agent keeps its reservations (--cni-ipam-data-dir),
 * as the two share one directory on a real node. Returns the prefix's directory.
 */
export function linkHostLocalDataDir(prefix: string): string {
  const target = driveC('var/lib/cni/networks', prefix);
  mkdirSync(target, { recursive: true });
  const unix = '/var/lib/cni/networks';
  mkdirSync(dirname(unix), { recursive: true });
  let current: string | undefined;
  try {
    current = lstatSync(unix).isSymbolicLink() ? readlinkSync(unix) : 'not a link';
  } catch {
    current = undefined;
  }
  if (current !== target) {
    if (current === 'not a link') throw new Error(`${unix} exists and is not a symbolic link: move it away so the interop tier can link it to ${target}`);
    rmSync(unix, { force: true });
    symlinkSync(target, unix);
  }
  return target;
}

/** Remove the link made by linkHostLocalDataDir when it is still the tier's own (points at the prefix). */
export function unlinkHostLocalDataDir(prefix: string): void {
  const unix = '/var/lib/cni/networks';
  try {
    if (lstatSync(unix).isSymbolicLink() && readlinkSync(unix) === driveC('var/lib/cni/networks', prefix)) rmSync(unix);
  } catch {
    // Not there: nothing to remove.
  }
}

export interface CniRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed (a CNI result or error object), undefined when not JSON. */
  json: Record<string, unknown> | undefined;
}

export interface CniInvocation {
  command: 'ADD' | 'DEL';
  containerId: string;
  /** The pod's HCN namespace GUID (containerd's CNI_NETNS on Windows). */
  netns: string;
  ifname?: string;
  config: string;
  simPort: number;
  prefix: string;
  /** The plugins' folder as the runtime's CNI bin_dir (preparePlugins). */
  binDir: string;
}

let runs = 0;

/** Run `flannel.exe` as containerd does: CNI_* env, config on stdin, stdout and stderr to files (Wine + pipes lose output). */
export async function runCni(inv: CniInvocation, timeoutMs = 120_000): Promise<CniRun> {
  const dir = join(CACHE, 'runs', 'cni');
  mkdirSync(dir, { recursive: true });
  const base = join(dir, `${process.pid}-${++runs}`);
  writeFileSync(`${base}.in`, inv.config);
  const stdin = openSync(`${base}.in`, 'r');
  const out = openSync(`${base}.out`, 'w');
  const err = openSync(`${base}.err`, 'w');
  const bin = inv.binDir;
  try {
    const child = spawn('wine', [join(bin, 'flannel.exe')], {
      env: wineEnv({
        WINEPREFIX: inv.prefix,
        FLANNEL_SIM_PORT: String(inv.simPort),
        WINEDLLOVERRIDES: 'mscoree,mshtml=;vmcompute,computenetwork=n',
        CNI_COMMAND: inv.command,
        CNI_CONTAINERID: inv.containerId,
        CNI_NETNS: inv.netns,
        CNI_IFNAME: inv.ifname ?? 'eth0',
        CNI_PATH: winPath(bin),
      }),
      stdio: [stdin, out, err],
    });
    const code = await new Promise<number | null>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`flannel.exe ${inv.command} did not finish within ${timeoutMs} ms`));
      }, timeoutMs);
      child.on('error', reject);
      child.on('exit', (c) => {
        clearTimeout(timer);
        resolve(c);
      });
    });
    const stdout = readFileSync(`${base}.out`, 'utf8');
    let json: Record<string, unknown> | undefined;
    try {
      json = JSON.parse(stdout) as Record<string, unknown>;
    } catch {
      json = undefined;
    }
    return { code, stdout, stderr: readFileSync(`${base}.err`, 'utf8'), json };
  } finally {
    closeSync(stdin);
    closeSync(out);
    closeSync(err);
    for (const ext of ['in', 'out', 'err']) rmSync(`${base}.${ext}`, { force: true });
  }
}

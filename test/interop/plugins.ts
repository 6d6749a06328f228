// The upstream Windows CNI plugins (flannel.exe, win-overlay.exe, win-bridge.exe, host-local.exe, built
// from upstream's unmodified sources: ../shared/cni-plugins-windows/README.md) run under Wine as the
// container runtime runs them: CNI_* in the environment, the network config on stdin, the result on
// stdout (CNI SPEC "Parameters", containerd's go-cni / libcni invoke/exec.go). They reach the simulated
// node through the stand-in DLLs, which hcsshim loads from the prefix's system32 only.
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync, lstatSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { CACHE, REPO, driveC, wineEnv, winPath } from '../support/windows.js';

export const PLUGINS = ['flannel.exe', 'win-overlay.exe', 'win-bridge.exe', 'host-local.exe'] as const;

/** The plugins' folder: $FLANNEL_CNI_PLUGINS_DIR, else `shared/cni-plugins-windows` beside the repository (or its worktree parent). */
export function pluginsDir(): string {
  const env = process.env['FLANNEL_CNI_PLUGINS_DIR'];
  if (env) return env;
  const candidates = [join(REPO, '..', 'shared', 'cni-plugins-windows'), join(REPO, '..', '..', 'shared', 'cni-plugins-windows')];
  return candidates.find((d) => existsSync(join(d, 'SHA256SUMS'))) ?? candidates[0];
}

/**
 * The SHA-256 of each plugin as built from upstream's sources (../shared/cni-plugins-windows/SHA256SUMS,
 * pinned here so a replaced folder, SHA256SUMS included, is noticed).
 */
export const PLUGIN_SHA256: Readonly<Record<(typeof PLUGINS)[number], string>> = {
  'flannel.exe': 'c5a07bb4fd47aa4e187fd37beb220b4e04b79df6ad6fe806ec974c1940a817d4',
  'host-local.exe': 'e1e4ed2ca6cf12e86e2570bf1e55a99e5447476160d1fadb62da66c2134bec6a',
  'win-bridge.exe': 'f05517169a90bfa988b79bae58837e0acb1af349c5f8d29b67ad8dc72b6e9b44',
  'win-overlay.exe': '457565cc007af384f012974220a21a6666ab0f87f902809a1e58d7a1565ebb5e',
};

/** Missing binaries or a hash other than the pinned one: the reason; undefined when all four are there and intact. */
export function checkPlugins(dir = pluginsDir()): string | undefined {
  for (const p of PLUGINS) {
    const f = join(dir, p);
    if (!existsSync(f)) return `the upstream CNI plugin ${f} is missing; set FLANNEL_CNI_PLUGINS_DIR to a folder holding them`;
    const got = createHash('sha256').update(readFileSync(f)).digest('hex');
    if (got !== PLUGIN_SHA256[p]) return `${f} is not the pinned build (sha256 ${got}, expected ${PLUGIN_SHA256[p]})`;
  }
  return undefined;
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
  /** The plugins' folder as the runtime's CNI bin_dir. */
  binDir?: string;
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
  const bin = inv.binDir ?? pluginsDir();
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

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

/** Missing binaries or a hash that is not in SHA256SUMS: the reason; undefined when all four are there and intact. */
export function checkPlugins(dir = pluginsDir()): string | undefined {
  const sums = join(dir, 'SHA256SUMS');
  if (!existsSync(sums)) return `the upstream CNI plugins are missing (no ${sums}); set FLANNEL_CNI_PLUGINS_DIR to a folder holding them`;
  const want = new Map(
    readFileSync(sums, 'utf8')
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .filter((p) => p.length === 2)
      .map(([hash, file]) => [file.replace(/^\*/, ''), hash]),
  );
  for (const p of PLUGINS) {
    const f = join(dir, p);
    if (!existsSync(f)) return `the upstream CNI plugin ${f} is missing`;
    const got = createHash('sha256').update(readFileSync(f)).digest('hex');
    if (want.get(p) !== got) return `${f} does not match SHA256SUMS (sha256 ${got}, expected ${want.get(p) ?? 'no entry'})`;
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

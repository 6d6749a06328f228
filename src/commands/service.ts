// `flanneld service install|uninstall|start|stop|status`: run flanneld as a Windows service.
//
// The service control manager side lives in flanneld-service.exe (packaging/service-host.c, built with
// mingw-w64 and shipped beside flanneld.exe): it calls the service APIs (CreateServiceW,
// ChangeServiceConfig2W failure actions + non-crash-failure flag, StartServiceW, ControlService,
// DeleteService, QueryServiceStatusEx) and, as the service process, starts flanneld.exe with the agent's
// flags, logs its output to a rotating file and turns SCM stop/shutdown into Ctrl+C (SIGINT) with a
// 10 s deadline. This module parses and checks the arguments (the agent flags with the agent's own
// parser, so a typo fails at install and not at boot) and runs the host.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { parseConfig } from '../config/parse.js';
import { ConfigError, FlagError, errorMessage } from '../basics/errors.js';
import type { Command, CommandIO } from './command.js';

const DEFAULT_SERVICE_NAME = 'flanneld';
const DEFAULT_LOG_DIR = 'C:\\k\\logs\\flanneld';
const SERVICE_HOST_EXE = 'flanneld-service.exe';
export const VERBS = ['install', 'uninstall', 'start', 'stop', 'status'] as const;
export type Verb = (typeof VERBS)[number];

export interface ServiceOptions {
  verb: Verb;
  name: string;
  displayName: string;
  logDir: string;
  logMaxMb: number;
  logKeep: number;
  /** NAME=VALUE pairs set for the agent by the host. */
  env: string[];
  /** Seconds to wait for a state (start/stop/uninstall). */
  timeout: number;
  /** flanneld-service.exe; '' = beside the executable. */
  serviceHost: string;
  /** The agent's flags (after `--`). */
  agentArgs: string[];
}

const USAGE = `Usage: flanneld service install [OPTION]... [-- AGENT FLAG...]
       flanneld service uninstall|start|stop|status [--name NAME] [--timeout SECONDS]

Run flanneld as a Windows service (automatic start, LocalSystem; the service control manager restarts
it after 5 s, 10 s and 30 s when it fails or exits non-zero, and resets the count after a day). The
agent flags after -- are passed to flanneld on every start. Reinstalling updates an existing service.

  --name NAME            service name (default ${DEFAULT_SERVICE_NAME})
  --display-name TEXT    display name (default: the name)
  --log-dir DIR          the agent's log directory (default ${DEFAULT_LOG_DIR}); the log is DIR\\NAME.log
  --log-max-mb N         rotate the log at N MiB (default 10)
  --log-keep N           old log files kept (default 5)
  --env NAME=VALUE       environment variable for the agent, e.g. NODE_NAME=win-1 (repeatable)
  --timeout SECONDS      how long start, stop and uninstall wait (default 30)
  --service-host FILE    the service host (default: ${SERVICE_HOST_EXE} beside flanneld.exe)
`;

function intOpt(flag: string, v: string, min: number): number {
  if (!/^\d+$/.test(v) || Number(v) < min) throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${v}" for flag -${flag}: want an integer >= ${min}`, { flag });
  return Number(v);
}

/** Parse `service <verb> [options] [-- agent flags]`. Throws FlagError; returns 'help' for -h. */
export function parseServiceArgs(args: readonly string[]): ServiceOptions | 'help' {
  const [verb, ...rest] = args;
  if (verb === undefined || verb === '-h' || verb === '--help' || verb === 'help') return 'help';
  if (!(VERBS as readonly string[]).includes(verb)) throw new FlagError('FLANNEL_ERR_FLAG', `unknown service command "${verb}": want ${VERBS.join(', ')}`, { verb });
  const o: ServiceOptions = {
    verb: verb as Verb,
    name: DEFAULT_SERVICE_NAME,
    displayName: '',
    logDir: DEFAULT_LOG_DIR,
    logMaxMb: 10,
    logKeep: 5,
    env: [],
    timeout: 30,
    serviceHost: '',
    agentArgs: [],
  };
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (a === '--') {
      if (o.verb !== 'install') throw new FlagError('FLANNEL_ERR_FLAG', `agent flags (after --) only go with install`, {});
      o.agentArgs = rest.slice(i + 1);
      break;
    }
    if (a === '-h' || a === '--help') return 'help';
    const m = /^--?([a-z][a-z-]*)(?:=(.*))?$/s.exec(a);
    if (!m) throw new FlagError('FLANNEL_ERR_FLAG', `unexpected argument "${a}" (agent flags go after --)`, {});
    const flag = m[1];
    let value = m[2];
    const take = (): string => {
      if (value !== undefined) return value;
      const next = rest[i + 1];
      if (next === undefined) throw new FlagError('FLANNEL_ERR_FLAG', `flag needs an argument: -${flag}`, { flag });
      i++;
      return (value = next);
    };
    switch (flag) {
      case 'name':
        o.name = take();
        if (!/^[A-Za-z0-9_.-]{1,256}$/.test(o.name)) throw new FlagError('FLANNEL_ERR_FLAG', `invalid service name "${o.name}": letters, digits, _ . - only`, { flag });
        break;
      case 'display-name':
        o.displayName = take();
        break;
      case 'log-dir':
        o.logDir = take();
        if (o.logDir === '') throw new FlagError('FLANNEL_ERR_FLAG', 'flag -log-dir must not be empty', { flag });
        break;
      case 'log-max-mb':
        o.logMaxMb = intOpt(flag, take(), 1);
        break;
      case 'log-keep':
        o.logKeep = intOpt(flag, take(), 0);
        break;
      case 'timeout':
        o.timeout = intOpt(flag, take(), 1);
        break;
      case 'env': {
        const kv = take();
        if (!/^[A-Za-z_][A-Za-z0-9_]*=/.test(kv)) throw new FlagError('FLANNEL_ERR_FLAG', `invalid -env "${kv}": want NAME=VALUE`, { flag });
        o.env.push(kv);
        break;
      }
      case 'service-host':
        o.serviceHost = take();
        break;
      default:
        throw new FlagError('FLANNEL_ERR_FLAG', `flag provided but not defined: -${flag} (agent flags go after --)`, { flag });
    }
    const installOnly = ['display-name', 'log-dir', 'log-max-mb', 'log-keep', 'env'];
    if (installOnly.includes(flag) && o.verb !== 'install') throw new FlagError('FLANNEL_ERR_FLAG', `flag -${flag} only goes with install`, { flag });
  }
  return o;
}

/**
 * Check the agent flags with the agent's parser as the service would see them (this environment, which
 * holds the machine-wide variables, plus the --env pairs), so that `install` refuses what the service
 * would fail on at every start.
 */
function checkAgentArgs(o: ServiceOptions, baseEnv: Record<string, string | undefined>): void {
  const env = { ...baseEnv, ...Object.fromEntries(o.env.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)])) };
  const parsed = parseConfig(o.agentArgs, env, { platform: 'win32' });
  if (parsed.kind !== 'run') throw new FlagError('FLANNEL_ERR_FLAG', `agent flags must start the agent (not --${parsed.kind})`, {});
}

export interface HostContext {
  /** The flanneld executable (flanneld.exe, or node.exe when not a single executable). */
  exe: string;
  /** Arguments before the agent flags (the main script when exe is node.exe). */
  exeArgs: string[];
}

/** The flanneld-service.exe command line for a parsed `service` invocation. */
export function hostArgs(o: ServiceOptions, ctx: HostContext): string[] {
  const args = [o.verb, '--name', o.name, '--timeout', String(o.timeout)];
  if (o.verb !== 'install') return args;
  args.push('--exe', ctx.exe, '--log-dir', o.logDir, '--log-max-mb', String(o.logMaxMb), '--log-keep', String(o.logKeep));
  if (o.displayName) args.push('--display-name', o.displayName);
  for (const kv of o.env) args.push('--env', kv);
  return [...args, '--', ...ctx.exeArgs, ...o.agentArgs];
}

export interface ServiceDeps {
  /** Where flanneld runs from (process.execPath) and the main script (process.argv[1]). */
  execPath: string;
  mainScript: string | undefined;
  /** True in the single executable (flanneld.exe). */
  isSea(): Promise<boolean>;
  exists(file: string): boolean;
  /** Run the host with the console inherited; resolves to its exit code. */
  runHost(host: string, args: string[]): Promise<number>;
}

/** `require('node:sea').isSea()` (a require, not import(): the single executable has no dynamic import). */
function isSea(): Promise<boolean> {
  try {
    const sea = createRequire(process.execPath)('node:sea') as { isSea?: () => boolean };
    return Promise.resolve(sea.isSea?.() ?? false);
  } catch {
    return Promise.resolve(false);
  }
}

const defaultDeps: ServiceDeps = {
  execPath: process.execPath,
  mainScript: process.argv[1],
  isSea,
  exists: existsSync,
  runHost: (host, args) =>
    new Promise((resolve, reject) => {
      // inherited console/handles: the host's output goes where flanneld's goes (no pipes: a pipe nobody drains blocks the host)
      const child = spawn(host, args, { stdio: 'inherit', windowsHide: true });
      child.on('error', reject);
      child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
    }),
};

export async function runService(args: string[], io: CommandIO, deps: ServiceDeps = defaultDeps): Promise<number> {
  let o: ServiceOptions | 'help';
  try {
    o = parseServiceArgs(args);
    if (o !== 'help' && o.verb === 'install') checkAgentArgs(o, io.env);
  } catch (err) {
    const hint = err instanceof ConfigError && err.context.missingEnv !== undefined ? ' (give the service its variables with --env NAME=VALUE)' : '';
    io.stderr(`flanneld service: ${errorMessage(err)}${hint}\nRun 'flanneld service --help' for usage.\n`);
    return 2;
  }
  if (o === 'help') {
    io.stdout(USAGE);
    return 0;
  }
  if (io.platform !== 'win32') {
    io.stderr('flanneld service: Windows services need Windows (run flanneld.exe on the node)\n');
    return 1;
  }
  const w = path.win32;
  const host = o.serviceHost || w.join(w.dirname(deps.execPath), SERVICE_HOST_EXE);
  if (!deps.exists(host)) {
    io.stderr(`flanneld service: ${host} not found: it ships beside flanneld.exe in flanneld-windows-amd64.zip (or pass --service-host)\n`);
    return 1;
  }
  let ctx: HostContext = { exe: deps.execPath, exeArgs: [] };
  if (!(await deps.isSea())) {
    if (!deps.mainScript) {
      io.stderr('flanneld service: cannot tell the main script of this flanneld\n');
      return 1;
    }
    ctx = { exe: deps.execPath, exeArgs: [w.resolve(deps.mainScript)] };
  }
  try {
    return await deps.runHost(host, hostArgs(o, ctx));
  } catch (err) {
    io.stderr(`flanneld service: cannot run ${host}: ${errorMessage(err)}\n`);
    return 1;
  }
}

export const command: Command = {
  summary: 'install, uninstall, start, stop or query flanneld as a Windows service',
  run: (args, io) => runService(args, io),
};

// Command-line helpers shared by the `flanneld cni-config` and `flanneld cleanup` subcommands: each takes
// its own flags plus every agent flag (--net-config-path, --subnet-file, --dataplane, ...), so one set of
// FLANNELD_* settings serves the daemon and its tools. The agent flags go through parseConfig unchanged.
import { FLAGS, applyFlagValue, envVarName, lookupFlag, parseFlags, renderUsage, type FlagSpec, type FlagValue } from '../config/flags.js';
import { parseConfig } from '../config/parse.js';
import type { AgentConfig } from '../config/agent-config.js';
import { readFileSync } from 'node:fs';
import { ConfigError, FlagError, FlannelError, errorMessage } from '../basics/errors.js';
import { MAX_CONFIG_FILE_BYTES, readRegularFile } from '../basics/fs.js';
import type { CommandIO } from './command.js';

export interface SplitArgs {
  /** Arguments naming this command's own flags (with their values). */
  own: string[];
  /** Everything else: handed to parseConfig (agent flags). */
  agent: string[];
}

function flagName(arg: string): string | undefined {
  if (arg.length < 2 || !arg.startsWith('-') || arg === '--') return undefined;
  const body = arg.startsWith('--') ? arg.slice(2) : arg.slice(1);
  const eq = body.indexOf('=');
  return eq < 0 ? body : body.slice(0, eq);
}

/** Split argv into this command's flags and the agent's, Go-flag style (`--x=y`, `--x y`, bare booleans). */
export function splitArgs(argv: readonly string[], own: readonly FlagSpec[]): SplitArgs {
  const out: SplitArgs = { own: [], agent: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const name = flagName(arg);
    const ownSpec = name === undefined ? undefined : lookupFlag(name, own);
    const spec = ownSpec ?? (name === undefined ? undefined : lookupFlag(name));
    const target = ownSpec ? out.own : out.agent;
    target.push(arg);
    if (spec && spec.kind !== 'bool' && !arg.includes('=') && i + 1 < argv.length) target.push(argv[++i]);
  }
  return out;
}

export type OwnValues = ReadonlyMap<string, FlagValue>;

export type ParsedCommandArgs = { kind: 'help' } | { kind: 'run'; own: OwnValues; config: AgentConfig };

/**
 * Parse own + agent flags. The agent part accepts FLANNELD_* from the environment, as the daemon does.
 * A command that does not need the dataplane (`usesDataplane: false`) runs anywhere without --dataplane:
 * off Windows it defaults to the simulated one (on Windows to the real one, as the agent's). Kube mode is
 * dropped (no NODE_NAME needed) unless the command reads the own Node (`kube: true`).
 */
export function parseCommandArgs(argv: readonly string[], own: readonly FlagSpec[], io: CommandIO, opts: { usesDataplane?: boolean; kube?: boolean } = {}): ParsedCommandArgs {
  const split = splitArgs(argv, own);
  const ownParsed = parseFlags(split.own, own);
  if (ownParsed.help || split.agent.some((a) => a === '-h' || a === '--help' || a === '-help')) return { kind: 'help' };
  const values = new Map(ownParsed.values);
  // The command's own flags read FLANNELD_<NAME> as the agent's do (the usage says so; the DaemonSet's init
  // containers get their settings from the ConfigMap by envFrom): flags win, an empty variable is unset.
  for (const spec of own) {
    const raw = spec.noEnv || values.has(spec.name) ? undefined : io.env[envVarName(spec.name)];
    if (raw) values.set(spec.name, applyFlagValue(spec, undefined, raw, `environment variable ${envVarName(spec.name)} (flag -${spec.name})`));
    else if (!values.has(spec.name)) values.set(spec.name, spec.default);
  }
  const parsed = parseConfig(
    opts.kube ? split.agent : split.agent.filter((a) => flagName(a) !== 'kube-subnet-mgr'),
    {
      ...io.env,
      ...(opts.kube ? {} : { FLANNELD_KUBE_SUBNET_MGR: undefined }),
      ...(opts.usesDataplane === false && io.platform !== 'win32' ? { FLANNELD_DATAPLANE: io.env['FLANNELD_DATAPLANE'] || 'simulated' } : {}),
    },
    { platform: io.platform },
  );
  if (parsed.kind !== 'run') return { kind: 'help' };
  return { kind: 'run', own: values, config: parsed.config };
}

export function commandUsage(program: string, summary: string, own: readonly FlagSpec[]): string {
  const ownText = renderUsage(program, own)
    .replace(/^Usage:.*\n\n/, '')
    .replace(/\nEnvironment:.*\n$/, '\n');
  const agentNames = FLAGS.filter((f) => !f.ignored && !f.noEnv).map((f) => `--${f.name}`);
  return `Usage: ${program} [OPTION]...\n\n${summary}\n\n${ownText}\nAlso accepts the agent's flags (and FLANNELD_* variables): ${agentNames.join(', ')}.\n`;
}

/** Map an error to the exit code and one-line message flanneld uses (2 for flags/config, 1 otherwise). */
/**
 * The text of a `--file` flag's file, or of stdin for `-`. A named file is read as a regular file of at
 * most 1 MiB (a FIFO or /dev/zero is refused at once); a file that cannot be read is FLANNEL_ERR_FLAG.
 */
export function readFileFlag(file: string): string {
  try {
    return file === '-' ? readFileSync(0, 'utf8') : readRegularFile(file, MAX_CONFIG_FILE_BYTES, '--file');
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new FlagError('FLANNEL_ERR_FLAG', `cannot read ${file === '-' ? 'stdin' : file}: ${errorMessage(err)}`, { flag: 'file' });
  }
}

export function reportError(program: string, err: unknown, io: CommandIO): number {
  if (err instanceof FlagError) {
    io.stderr(`${program}: ${err.message}\nRun '${program} --help' for usage.\n`);
    return 2;
  }
  io.stderr(`${program}: ${errorMessage(err)}\n`);
  return err instanceof FlannelError && (err.code === 'FLANNEL_ERR_CONFIG' || err.code === 'FLANNEL_ERR_NET_CONF') ? 2 : 1;
}

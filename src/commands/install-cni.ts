// `flanneld install-cni`: install the CNI plugins the flannel CNI config names (flannel.exe, win-overlay.exe,
// win-bridge.exe, host-local.exe) from SHA-256-pinned archives; see src/cni-plugins/install.ts. With
// --pinned the upstream releases of src/cni-plugins/pinned.json are used. The dual-stack conflist runs
// Microsoft's sdnbridge instead (../cni/conflist.ts): --sdnbridge, or a --net-config-path that enables IPv6,
// installs sdnbridge.exe too, from the pinned microsoft/windows-container-networking release zip.
import { applyFlagValue, envVarName, lookupFlag, parseFlags, platformDefault, renderUsage, type FlagSpec } from '../config/flags.js';
import { CniInstallError, FlagError, FlannelError, errorMessage } from '../basics/errors.js';
import { ARCHIVE_LIMITS } from '../cni-plugins/archive.js';
import { CNI_PLUGIN_FILES, SDNBRIDGE_FILE, type CniPluginFile } from '../cni/plugins.js';
import { DOWNLOAD_LIMITS } from '../cni-plugins/download.js';
import { INSTALL_RECORD, installCniPlugins, normalizeSha256, type PluginSource } from '../cni-plugins/install.js';
import pinned from '../cni-plugins/pinned.json' with { type: 'json' };
import type { Command, CommandIO } from './command.js';
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { checkPins, mirrored, PINS_RECORD, recordPins } from '../cni-plugins/verify-pins.js';
import { safeText } from '../basics/log-safe.js';
import { readNetConf, windowsNetConf } from '../subnet/net-conf.js';
import { rendersSdnbridge } from '../cni/conflist.js';
import { chooseCniDir, disagreementText, readContainerdCni, type ContainerdCni } from '../cni/containerd-config.js';

const PROGRAM = 'flanneld install-cni';

const INSTALL_CNI_FLAGS: readonly FlagSpec[] = [
  {
    name: 'source',
    kind: 'stringList',
    default: [],
    help: 'a .zip, a .tgz or a plugin .exe: https:// or http:// URL or a local path; give one --sha256 per --source, in the same order',
    valueName: 'URL|PATH',
  },
  {
    name: 'sha256',
    kind: 'stringList',
    default: [],
    help: 'the SHA-256 (64 hex digits) of the --source at the same position; checked before anything is written',
    valueName: 'HEX',
  },
  {
    name: 'pinned',
    kind: 'bool',
    default: false,
    help: `download the upstream releases pinned in this build (${pinned.releases.map((r) => `${r.repository} ${r.version}`).join(', ')}; with --sdnbridge also ${pinned.dualStack.map((r) => `${r.repository} ${r.version}`).join(', ')}) instead of --source`,
  },
  {
    name: 'sdnbridge',
    kind: 'bool',
    default: false,
    help: `also install ${SDNBRIDGE_FILE}, which the dual-stack (EnableIPv6) conflist runs: with --pinned from the pinned ${pinned.dualStack.map((r) => `${r.repository} ${r.version}`).join(', ')}; with --source one source must hold it`,
  },
  {
    name: 'net-config-path',
    kind: 'string',
    default: '',
    help: `install what \`flanneld cni-config\` renders for this net-conf.json: ${SDNBRIDGE_FILE} too (as --sdnbridge) when it enables IPv6`,
    valueName: 'FILE',
  },
  {
    name: 'ipv4-only',
    kind: 'bool',
    default: false,
    help: `with --net-config-path: this node runs the net-conf's IPv4 half, as the agent's --ipv4-only (also read from ${envVarName('ipv4-only')}, which the DaemonSet's ConfigMap gives every container): no ${SDNBRIDGE_FILE}`,
  },
  {
    name: 'verify-pins',
    kind: 'bool',
    default: false,
    help: `download the pinned releases, compare their SHA-256 with the pins and record the result in DIR/${PINS_RECORD}; installs nothing (exit 1 on a mismatch)`,
  },
  {
    name: 'pinned-dir',
    kind: 'string',
    default: '',
    help: 'with --pinned: take each pinned release file from this folder when it is there (the image ships them in $CONTAINER_SANDBOX_MOUNT_POINT\\cni-plugins), else download it; the pins apply alike',
    valueName: 'DIR',
  },
  {
    name: 'mirror',
    kind: 'string',
    default: '',
    help: 'with --pinned or --verify-pins: fetch the pinned releases from this mirror of https://github.com (same paths)',
    valueName: 'URL',
  },
  {
    name: 'download-timeout',
    kind: 'int',
    default: DOWNLOAD_LIMITS.overallTimeoutMs / 1000,
    help: 'the longest one download may take in all, redirects included (besides the idle and connect deadlines)',
    valueName: 'SECONDS',
  },
  {
    name: 'bin-dir',
    kind: 'string',
    default: '/opt/cni/bin',
    windowsDefault: 'C:\\opt\\cni\\bin',
    help: "the CNI plugin directory; when not given, containerd's (bin_dirs[0], else bin_dir, of --containerd-config when that file is there), else this default",
    valueName: 'DIR',
  },
  { ...lookupFlag('containerd-config')!, help: "containerd's config.toml (versions 2 and 3), read for its CNI bin dir when it is there; never written" },
  { name: 'help', kind: 'bool', default: false, help: 'print this message', aliases: ['h'], noEnv: true },
];

/** The releases pinned in src/cni-plugins/pinned.json, as sources: always, and for sdnbridge.exe. */
const PINNED_SOURCES: readonly PluginSource[] = pinned.releases.map((r) => ({ location: r.url, sha256: r.sha256 }));
const PINNED_DUAL_STACK_SOURCES: readonly PluginSource[] = pinned.dualStack.map((r) => ({ location: r.url, sha256: r.sha256 }));

const mib = (bytes: number) => bytes / (1024 * 1024);

export function usage(platform: NodeJS.Platform): string {
  const flags = renderUsage(PROGRAM, INSTALL_CNI_FLAGS, platform)
    .replace(/^Usage:.*\n\n/, '')
    .replace(/\nEnvironment:[\s\S]*$/, '\n');
  return (
    `Usage: ${PROGRAM} --source URL|PATH --sha256 HEX [--source ... --sha256 ...] [--bin-dir DIR]\n` +
    `       ${PROGRAM} --pinned [--sdnbridge] [--mirror URL] [--bin-dir DIR]\n` +
    `       ${PROGRAM} --verify-pins [--mirror URL] [--bin-dir DIR]\n\n` +
    `${command.summary}.\nEvery source is hashed before anything is written; the plugins are written to a temporary\n` +
    `directory in DIR and renamed into place; files already equal are left alone (a rerun writes nothing,\n` +
    `and downloads nothing while the plugins still match the record of the last install, DIR\\${INSTALL_RECORD}).\n` +
    `Bare executables are named by their file name (flannel-amd64.exe is installed as flannel.exe).\n` +
    `A download may be at most ${mib(DOWNLOAD_LIMITS.maxBytes)} MiB and must answer within ${DOWNLOAD_LIMITS.connectTimeoutMs / 1000} s, pause at most\n` +
    `${DOWNLOAD_LIMITS.idleTimeoutMs / 1000} s and finish within --download-timeout; a plugin may be at most ${mib(ARCHIVE_LIMITS.maxEntryBytes)} MiB, must be a regular file\n` +
    `in its archive and a Windows (PE) executable (docs/bounds.md).\n\n${flags}`
  );
}

/** A pinned release: the file of the same name in `dir` when there is one, else its URL (on `mirror`). */
export function pinnedLocation(url: string, mirror: string, dir: string, exists: (p: string) => boolean = existsSync): string {
  if (dir !== '') {
    const file = join(dir, basename(new URL(url).pathname));
    if (exists(file)) return file;
  }
  return mirrored(url, mirror);
}

/** --ipv4-only, else FLANNELD_IPV4_ONLY parsed as the agent parses it (the agent flag's spec). */
function ipv4Only(values: ReadonlyMap<string, unknown>, env: CommandIO['env']): boolean {
  if (values.has('ipv4-only')) return values.get('ipv4-only') === true;
  const key = envVarName('ipv4-only');
  const raw = env[key];
  return raw !== undefined && raw !== '' && applyFlagValue(lookupFlag('ipv4-only')!, undefined, raw, `environment variable ${key}`) === true;
}

/**
 * The plugins to install: the four of the flannel conflist, and sdnbridge.exe with --sdnbridge or when
 * --net-config-path's net-conf makes `flanneld cni-config` render the dual-stack conflist (not for a node
 * that runs its IPv4 half only).
 */
function wantedPlugins(values: ReadonlyMap<string, unknown>, env: CommandIO['env']): CniPluginFile[] {
  const netConfPath = (values.get('net-config-path') as string | undefined) ?? '';
  const dual = values.get('sdnbridge') === true || (netConfPath !== '' && rendersSdnbridge(windowsNetConf(readNetConf(netConfPath), ipv4Only(values, env), { path: netConfPath })));
  const plugins: CniPluginFile[] = [...CNI_PLUGIN_FILES];
  if (dual) plugins.push(SDNBRIDGE_FILE);
  return plugins;
}

function parseSources(values: ReadonlyMap<string, unknown>, plugins: readonly CniPluginFile[]): PluginSource[] {
  const sources = (values.get('source') as string[] | undefined) ?? [];
  const hashes = (values.get('sha256') as string[] | undefined) ?? [];
  if (values.get('pinned') === true || values.get('verify-pins') === true) {
    const flag = values.get('pinned') === true ? 'pinned' : 'verify-pins';
    if (sources.length > 0 || hashes.length > 0) throw new FlagError('FLANNEL_ERR_FLAG', `--${flag} and --source/--sha256 exclude each other`, { flag });
    const mirror = (values.get('mirror') as string | undefined) ?? '';
    const local = flag === 'pinned' ? ((values.get('pinned-dir') as string | undefined) ?? '') : '';
    const pins = plugins.includes(SDNBRIDGE_FILE) ? [...PINNED_SOURCES, ...PINNED_DUAL_STACK_SOURCES] : PINNED_SOURCES;
    return pins.map((s) => ({ ...s, location: pinnedLocation(s.location, mirror, local) }));
  }
  if (((values.get('pinned-dir') as string | undefined) ?? '') !== '') throw new FlagError('FLANNEL_ERR_FLAG', '--pinned-dir applies to --pinned only', { flag: 'pinned-dir' });
  if (((values.get('mirror') as string | undefined) ?? '') !== '')
    throw new FlagError('FLANNEL_ERR_FLAG', '--mirror applies to --pinned and --verify-pins only', { flag: 'mirror' });
  if (sources.length === 0) throw new FlagError('FLANNEL_ERR_FLAG', 'flag -source is required (or --pinned): name the plugin archive(s) to install', { flag: 'source' });
  if (hashes.length !== sources.length) {
    throw new FlagError('FLANNEL_ERR_FLAG', `give one --sha256 per --source (got ${sources.length} --source and ${hashes.length} --sha256)`, { flag: 'sha256' });
  }
  return sources.map((location, i) => {
    const sha256 = normalizeSha256(hashes[i]);
    if (!sha256) throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${hashes[i]}" for flag -sha256: expected 64 hex digits`, { flag: 'sha256', value: hashes[i] });
    return { location, sha256 };
  });
}

/** --download-timeout, in ms. */
function downloadLimits(values: ReadonlyMap<string, unknown>): typeof DOWNLOAD_LIMITS {
  const seconds = (values.get('download-timeout') as number | undefined) ?? DOWNLOAD_LIMITS.overallTimeoutMs / 1000;
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > 24 * 3600) {
    throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${seconds}" for flag -download-timeout: give whole seconds from 1 to 86400`, {
      flag: 'download-timeout',
      value: seconds,
    });
  }
  return { ...DOWNLOAD_LIMITS, overallTimeoutMs: seconds * 1000 };
}

/**
 * What the command prints, with the credentials of a URL (`http://user:password@mirror/...`), HTTP
 * credentials and registered secrets redacted as the agent's own logs are (../basics/log-safe.ts), line by
 * line: it goes to an init container's log.
 */
function redacted(write: (s: string) => void): (s: string) => void {
  return (s) => write(s.split('\n').map(safeText).join('\n'));
}

/** --verify-pins (every pin, the dual-stack one too): compare, record, report; a mismatch is FLANNEL_ERR_CNI_HASH (exit 1). */
async function verifyPinned(mirror: string, binDir: string, io: CommandIO, limits: typeof DOWNLOAD_LIMITS): Promise<number> {
  const checks = await checkPins([...pinned.releases, ...pinned.dualStack], { mirror, limits });
  const path = recordPins(binDir, checks, new Date().toISOString());
  for (const c of checks) io.stdout(`${c.match ? 'match' : 'MISMATCH'} ${c.name} ${c.version} ${c.url}\n  pinned ${c.pinned}\n  actual ${c.actual}\n`);
  io.stdout(`recorded in ${path}\n`);
  const bad = checks.filter((c) => !c.match);
  if (bad.length === 0) return 0;
  throw new CniInstallError(
    'FLANNEL_ERR_CNI_HASH',
    `${bad.map((c) => c.name).join(', ')}: the download's SHA-256 is not the pinned one; do not use --pinned until you know why (a changed release, a mirror serving other files, or a wrong pin)`,
    { releases: bad.map((c) => c.name).join(',') },
  );
}

/**
 * Where the plugins go: a given --bin-dir (with a warning when containerd's config names another
 * directory), else containerd's bin dir from --containerd-config when that file is there, else the
 * --bin-dir default. A containerd config that cannot be read stops the install unless --bin-dir was given.
 */
function pluginDir(values: ReadonlyMap<string, unknown>, io: CommandIO): string {
  const spec = (name: string) => INSTALL_CNI_FLAGS.find((f) => f.name === name)!;
  const given = values.get('bin-dir') as string | undefined;
  const file = (values.get('containerd-config') as string | undefined) ?? (platformDefault(spec('containerd-config'), io.platform) as string);
  let containerd: ContainerdCni | undefined;
  try {
    containerd = readContainerdCni(file, io.platform);
  } catch (err) {
    if (given === undefined) throw err;
    io.stderr(`warning: ${errorMessage(err)}; installing into --bin-dir ${given} as given\n`);
  }
  const { dir, warning } = chooseCniDir(
    'bin',
    { flag: '--bin-dir', value: given ?? (platformDefault(spec('bin-dir'), io.platform) as string), given: given !== undefined },
    containerd,
  );
  if (warning !== undefined) io.stderr(`warning: ${disagreementText(warning)}\n`);
  return dir;
}

export const command: Command = {
  summary: 'install flannel.exe, win-overlay.exe, win-bridge.exe and host-local.exe (and sdnbridge.exe for dual-stack) from SHA-256-pinned archives',
  async run(args: string[], rawIo: CommandIO): Promise<number> {
    const io: CommandIO = { ...rawIo, stdout: redacted((s) => rawIo.stdout(s)), stderr: redacted((s) => rawIo.stderr(s)) };
    try {
      const cli = parseFlags(args, INSTALL_CNI_FLAGS);
      if (cli.help) {
        io.stdout(usage(io.platform));
        return 0;
      }
      const plugins = wantedPlugins(cli.values, io.env);
      const sources = parseSources(cli.values, plugins);
      const binDir = pluginDir(cli.values, io);
      if (binDir.trim() === '') throw new FlagError('FLANNEL_ERR_FLAG', 'flag -bin-dir is empty', { flag: 'bin-dir' });
      const limits = downloadLimits(cli.values);
      if (cli.values.get('verify-pins') === true) return await verifyPinned((cli.values.get('mirror') as string | undefined) ?? '', binDir, io, limits);
      const report = await installCniPlugins({ sources, binDir, limits, plugins });
      for (const f of report.installed) io.stdout(`installed ${f} (sha256 ${report.sha256[f]})\n`);
      if (report.fromRecord) io.stdout(`already installed: ${plugins.join(', ')} in ${binDir} are the recorded install of these sources; nothing downloaded or written\n`);
      else if (report.installed.length === 0) io.stdout(`already installed: ${plugins.join(', ')} in ${binDir} are the same files; nothing written\n`);
      else for (const f of report.unchanged) io.stdout(`unchanged ${f}\n`);
      return 0;
    } catch (err) {
      if (err instanceof FlagError) {
        io.stderr(`${PROGRAM}: ${err.message}\nRun '${PROGRAM} --help' for usage.\n`);
        return 2;
      }
      const code = err instanceof FlannelError ? ` [${err.code}]` : '';
      io.stderr(`${PROGRAM}: ${errorMessage(err)}${code}\n`);
      return 1;
    }
  },
};

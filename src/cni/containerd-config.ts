// Where containerd looks for CNI plugins and configs: its config.toml's CRI `cni` table, read (never
// written) by `install-cni`, `cni-config`, the agent's CNI readiness check and doctor. Mirrors containerd's
// own reading of that table:
//  * config version 2 (containerd 1.x; still read by 2.x): `[plugins."io.containerd.grpc.v1.cri".cni]`,
//    `bin_dir` and `conf_dir` (pkg/cri/config/config.go CniConfig at v1.7.0; containerd docs/cri/config.md).
//  * config version 3 (containerd 2.0): `[plugins."io.containerd.cri.v1.runtime".cni]` (internal/cri/config/
//    config.go at v2.0.0). containerd 2.x migrates a version 2 file's table there (plugins/cri/runtime/
//    plugin.go configMigration: `bin_dir` becomes `bin_dirs` unless that is set), so both read the same.
//    Version 4 (containerd 2.3, version/version.go ConfigVersion) moved server properties only
//    (cmd/containerd/server/config/config.go migrations: serviceMigrate); its CNI table is version 3's.
//  * `bin_dirs` (containerd 2.1, PR #11311) deprecates `bin_dir`. internal/cri/config/config.go
//    ValidateRuntimeConfig: a non-empty `bin_dir` replaces a `bin_dirs` equal to the default (so an old
//    `bin_dir` edit still works) and fills an empty one; setting both otherwise is an error
//    ("`cni.bin_dir` and `cni.bin_dirs` cannot be set at the same time") and containerd does not start.
//    go-cni finds a plugin in the first of `bin_dirs` that holds it; plugins are installed to `bin_dirs[0]`.
//  * A key the file leaves out keeps containerd's default (the file is decoded onto DefaultRuntimeConfig):
//    on Windows `%ProgramFiles%\containerd\cni\bin` and `...\cni\conf` (config_windows.go), elsewhere
//    /opt/cni/bin and /etc/cni/net.d (config_unix.go).
//  * Version 1 (no `version` key, plugin id `cri`) is "Removed in containerd 2.0" (containerd docs/cri/config.md at
//    v2.2.0): refused here with the migration command, as is a version newer than 4.
// The file is parsed with smol-toml (TOML 1.0) after a bounded read (a regular file of at most 1 MiB, as
// every file the agent reads); a missing file is "no config" (containerd then runs on its defaults, and the
// agent's flags stand); an unreadable or malformed one is FLANNEL_ERR_CONTAINERD_CONFIG.
import { parse, TomlError } from 'smol-toml';
import { win32 } from 'node:path';
import { ConfigError, errorMessage } from '../basics/errors.js';
import { MAX_CONFIG_FILE_BYTES, readRegularFile } from '../basics/fs.js';
import { withoutBom } from '../basics/bom.js';
import { samePath } from './readiness.js';

/** containerd's CNI directories when the config leaves them out (internal/cri/config/config_windows.go, config_unix.go). */
export function containerdDefaultCniDirs(platform: NodeJS.Platform): { binDir: string; confDir: string } {
  return platform === 'win32'
    ? { binDir: win32.join('C:\\Program Files', 'containerd', 'cni', 'bin'), confDir: win32.join('C:\\Program Files', 'containerd', 'cni', 'conf') }
    : { binDir: '/opt/cni/bin', confDir: '/etc/cni/net.d' };
}

/** The CNI table's plugin id per config version. */
const CRI_PLUGIN: Readonly<Record<number, string>> = { 2: 'io.containerd.grpc.v1.cri', 3: 'io.containerd.cri.v1.runtime', 4: 'io.containerd.cri.v1.runtime' };

/** What containerd's config says about CNI. */
export interface ContainerdCni {
  file: string;
  version: number;
  /** Where containerd runs plugins from first: `bin_dirs[0]`, else `bin_dir`, else its default. */
  binDir: string;
  /** The key binDir came from, for messages: `bin_dirs[0]`, `bin_dir` or `default`. */
  binDirFrom: 'bin_dirs[0]' | 'bin_dir' | 'default';
  /** Where containerd loads the CNI config from: `conf_dir`, else its default. */
  confDir: string;
  confDirFrom: 'conf_dir' | 'default';
  /** The TOML table they sit in, e.g. `plugins."io.containerd.cri.v1.runtime".cni`. */
  table: string;
}

function refuse(file: string, reason: string, what: string, fix: string): ConfigError {
  return new ConfigError('FLANNEL_ERR_CONTAINERD_CONFIG', `containerd config ${file} ${what}: ${fix}`, { path: file, reason });
}

const isTable = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The CNI directories `text` (a containerd config.toml) gives containerd. Pure; throws FLANNEL_ERR_CONTAINERD_CONFIG. */
export function parseContainerdCni(text: string, file: string, platform: NodeJS.Platform): ContainerdCni {
  let doc: Record<string, unknown>;
  try {
    doc = parse(withoutBom(text));
  } catch (err) {
    const where = err instanceof TomlError ? ` (line ${err.line}, column ${err.column})` : '';
    throw refuse(file, 'toml', `is not valid TOML${where}: ${errorMessage(err).split('\n')[0]}`, 'fix the file (containerd does not start with it either)');
  }
  const version = doc['version'] ?? 1;
  if (typeof version !== 'number' || !Number.isInteger(version)) throw refuse(file, 'version', `has version ${JSON.stringify(version)}`, 'give a whole number (2, 3)');
  const id = CRI_PLUGIN[version];
  if (id === undefined) {
    throw version < 2
      ? refuse(file, 'version', `is config version ${version} (no version = 2 or 3), which containerd 2.0 removed`, 'convert it with `containerd config migrate`')
      : refuse(file, 'version', `is config version ${version}, newer than this agent reads (2 to 4)`, "pass the CNI directories with this command's flags");
  }
  const table = `plugins."${id}".cni`;
  const plugins = doc['plugins'];
  const cri = isTable(plugins) ? plugins[id] : undefined;
  const cni = isTable(cri) ? cri['cni'] : undefined;
  const section: Record<string, unknown> = isTable(cni) ? cni : {};
  const str = (key: string): string => {
    const v = section[key] ?? '';
    if (typeof v !== 'string') throw refuse(file, 'type', `has ${table}.${key} = ${JSON.stringify(v)}`, 'make it a string');
    return v;
  };
  const binDirsRaw = section['bin_dirs'];
  if (binDirsRaw !== undefined && !(Array.isArray(binDirsRaw) && binDirsRaw.every((d) => typeof d === 'string'))) {
    throw refuse(file, 'type', `has ${table}.bin_dirs = ${JSON.stringify(binDirsRaw)}`, 'make it a list of strings');
  }
  const listed = binDirsRaw;
  const defaults = containerdDefaultCniDirs(platform);
  const binDir = str('bin_dir');
  // Decoded onto the defaults: an absent bin_dirs is the default list, which a bin_dir replaces.
  const binDirs = listed === undefined || (binDir !== '' && listed.length === 1 && listed[0] === defaults.binDir) ? [] : listed;
  if (binDir !== '' && binDirs.length > 0) {
    throw refuse(file, 'bin-dir-and-bin-dirs', `sets both ${table}.bin_dir and bin_dirs, which containerd refuses ("cannot be set at the same time")`, 'keep bin_dirs only');
  }
  if (listed?.length === 0 && binDir === '') {
    throw refuse(file, 'type', `has an empty ${table}.bin_dirs: containerd finds no CNI plugin`, 'list the plugin directory in it');
  }
  const confDir = str('conf_dir');
  return {
    file,
    version,
    table,
    ...(binDir !== ''
      ? { binDir, binDirFrom: 'bin_dir' as const }
      : binDirs.length > 0
        ? { binDir: binDirs[0], binDirFrom: 'bin_dirs[0]' as const }
        : { binDir: defaults.binDir, binDirFrom: 'default' as const }),
    ...(confDir !== '' ? { confDir, confDirFrom: 'conf_dir' as const } : { confDir: defaults.confDir, confDirFrom: 'default' as const }),
  };
}

/** Reads containerd's config; throws node's ENOENT error for a missing file (readContainerdCni: no config). */
export type ContainerdConfigRead = (path: string) => string;

const boundedRead: ContainerdConfigRead = (p) => readRegularFile(p, MAX_CONFIG_FILE_BYTES, 'containerd config');

/**
 * containerd's CNI directories from its config `file`: undefined when there is no such file ('' or
 * missing: containerd runs on its defaults and the caller's flags stand); FLANNEL_ERR_CONTAINERD_CONFIG when
 * it cannot be read or used.
 */
export function readContainerdCni(file: string, platform: NodeJS.Platform, read: ContainerdConfigRead = boundedRead): ContainerdCni | undefined {
  if (file === '') return undefined;
  let text: string;
  try {
    text = read(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    if (err instanceof ConfigError) throw refuse(file, 'unreadable', `cannot be read (${err.message})`, "point --containerd-config at containerd's config.toml");
    throw refuse(file, 'unreadable', `cannot be read (${errorMessage(err)})`, "check the file's permissions, or point --containerd-config at containerd's config.toml");
  }
  return parseContainerdCni(text, file, platform);
}

/** One CNI directory as the caller's flag gives it. */
export interface CniDirFlag {
  /** The flag's name, e.g. `--cni-bin-dir`. */
  flag: string;
  /** Its value (the default when not given). */
  value: string;
  /** Whether the operator gave it (flag or environment); a given flag wins over containerd's config. */
  given: boolean;
}

/** Which of containerd's directories a flag stands for. */
export type CniDirKind = 'bin' | 'conf';

/** A given flag that names another directory than containerd's config: what is wrong, and the two fixes. */
export interface CniDirDisagreement {
  detail: string;
  fix: string;
}

/** The one-line warning for `d` (commands' stderr). */
export const disagreementText = (d: CniDirDisagreement): string => `${d.detail}; this agent never edits containerd's config: ${d.fix}`;

/** The directory to use: a given flag, else containerd's, else the flag's default; `warning` when a given flag disagrees with containerd. */
export function chooseCniDir(kind: CniDirKind, flag: CniDirFlag, containerd: ContainerdCni | undefined): { dir: string; warning?: CniDirDisagreement } {
  if (containerd === undefined || (flag.given && flag.value === '')) return { dir: flag.value }; // "none": the check is off
  const theirs = kind === 'bin' ? containerd.binDir : containerd.confDir;
  if (!flag.given) return { dir: theirs };
  if (samePath(flag.value, theirs)) return { dir: flag.value };
  return { dir: flag.value, warning: disagreement(kind, flag, containerd) };
}

/** Why a flag's directory is not containerd's, and the fixes: the flag set to containerd's, or containerd's config changed by the operator. */
function disagreement(kind: CniDirKind, flag: Pick<CniDirFlag, 'flag' | 'value'>, containerd: ContainerdCni): CniDirDisagreement {
  const theirs = kind === 'bin' ? containerd.binDir : containerd.confDir;
  const from = kind === 'bin' ? containerd.binDirFrom : containerd.confDirFrom;
  const what = kind === 'bin' ? 'runs CNI plugins from' : 'loads the CNI config from';
  const setting = kind === 'bin' ? `bin_dirs = ['${flag.value}']` : `conf_dir = '${flag.value}'`;
  return {
    detail: `${flag.flag} ${flag.value} is not where containerd ${what}: ${theirs} (${from === 'default' ? "containerd's default" : from} in ${containerd.file})`,
    fix: `pass ${flag.flag} ${theirs}, or set ${setting} in ${containerd.table} (then restart containerd)`,
  };
}

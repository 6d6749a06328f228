// Can a pod start? The CNI config that containerd loads first must name the HNS network this agent runs,
// point the flannel plugin at this agent's subnet.env, and name only plugins present in the CNI bin dir.
// Otherwise every pod ADD fails (win-overlay: `Network name "flannel.4096" not found`) while the agent
// itself is in sync, so readiness (/readyz, `flanneld status`, the NetworkUnavailable condition) includes
// this check.
//
// What containerd loads: go-cni loadFromConfDir (containerd/go-cni opts.go): libcni.ConfFiles(dir,
// [".conf", ".conflist", ".json"]), sorted, first file only; a `.conf`/`.json` file is one plugin that
// libcni.ConfListFromConf wraps in a list of its own `name`. The network name: libcni passes the list's
// `name` to every plugin, the flannel plugin hands it to the delegate, which looks the HNS network up by it
// (containernetworking/plugins plugins/main/windows/win-overlay and win-bridge: hcn.GetNetworkByName).
// The subnet file: flannel-io/cni-plugin flannel.go NetConf.SubnetFile (default /run/flannel/subnet.env).
// The plugins: libcni invoke.FindInPath looks `type` up in CNI_PATH (the bin dir), on Windows as
// `type.exe` (invoke ExecutableFileExtensions); the flannel plugin runs `delegate.type` and, as the
// delegate's IPAM, `delegate.ipam.type` or host-local (flannel_windows.go: ipam defaults to host-local).
// Pure: the file system enters through CniReadinessFs.
import * as nodeFs from 'node:fs';
import { join, win32 } from 'node:path';
import { MAX_CONFIG_FILE_BYTES, readRegularFile } from '../basics/fs.js';
import { errorMessage } from '../basics/errors.js';
import { CNI_CONF_EXTENSIONS, cniConfigFiles, earlierFlannelConfig, isOwnCniConfig } from './conf-dir.js';
import { CNI_PLUGIN_FILES, SDNBRIDGE_FILE } from './plugins.js';

/** The stable ids of the problems: tests and `flanneld doctor` match on these, never on the prose. */
export type CniReadinessCheck =
  /** No CNI config in the conf dir (or no conf dir): containerd has no network for pods. */
  | 'cni-conf-missing'
  /** The first config cannot be read or is not a CNI config (JSON object with a name and plugins). */
  | 'cni-conf-invalid'
  /**
   * The first config is another CNI's for another network (containerd's default `nat`, Calico, ...): writing
   * flannel's beside it changes nothing (`cni-config -o` refuses it, FLANNEL_ERR_CNI_CONF_ORDER) and no
   * net-conf name fits it, so the fix moves it aside.
   */
  | 'cni-conf-foreign'
  /** The first config names a network other than the one this agent runs. */
  | 'cni-network-name'
  /** The flannel plugin of the first config reads another subnet.env than the agent writes. */
  | 'cni-subnet-file'
  /** A plugin the first config needs is not in the CNI bin dir. */
  | 'cni-plugin-missing';

export interface CniProblem {
  check: CniReadinessCheck;
  /** What is wrong, with the file and the values. */
  detail: string;
  /** What the operator does about it. */
  fix: string;
}

export interface CniReadinessInput {
  /** containerd's CNI conf dir (conf_dir). */
  cniConfDir: string;
  /** containerd's CNI bin dir (bin_dir, CNI_PATH); '' skips the plugin check. */
  cniBinDir: string;
  /** The HNS network the agent runs (created or adopted). */
  networkName: string;
  /** The agent's --subnet-file. */
  subnetFile: string;
}

/** The file system reads the check makes (tests inject a table). */
export interface CniReadinessFs {
  /** The names in `dir`; throws when it does not exist. */
  readdir(dir: string): string[];
  /** The text of the file at `path`; throws when it cannot be read. */
  readFile(path: string): string;
  /** Whether a file exists at `path`. */
  exists(path: string): boolean;
}

/** Real file system: configs are read with the config-file cap (a regular file, at most 1 MiB). */
export const nodeCniReadinessFs: CniReadinessFs = {
  readdir: (dir) => nodeFs.readdirSync(dir),
  readFile: (path) => readRegularFile(path, MAX_CONFIG_FILE_BYTES, 'CNI config'),
  exists: (path) => nodeFs.existsSync(path),
};

/** The upstream flannel plugin's subnet file when the config names none (flannel-io/cni-plugin flannel.go). */
const FLANNEL_PLUGIN_DEFAULT_SUBNET_FILE = '/run/flannel/subnet.env';
/** The flannel plugin's IPAM for the delegate when it names none (flannel-io/cni-plugin flannel_windows.go). */
const FLANNEL_DEFAULT_IPAM = 'host-local';

/** Path join in the style of `dir`: a Windows path (`C:\...`, `\\server\...`) joins with `\`. */
function joinLike(dir: string, name: string): string {
  return /^[A-Za-z]:[\\/]|^\\\\|\\/.test(dir) ? win32.join(dir, name) : join(dir, name);
}

/** Whether two paths name the same file: Windows paths compare case-insensitively and with either slash. */
export function samePath(a: string, b: string): boolean {
  const windows = /^[A-Za-z]:[\\/]/.test(a) || /^[A-Za-z]:[\\/]/.test(b);
  if (!windows) return a === b;
  const norm = (p: string) =>
    win32
      .normalize(p)
      .replace(/[\\]+$/, '')
      .toLowerCase();
  return norm(a) === norm(b);
}

export interface PluginConf {
  type?: unknown;
  subnetFile?: unknown;
  delegate?: { type?: unknown; ipam?: { type?: unknown } };
  ipam?: { type?: unknown };
}

/** The plugin types a config runs, in order, without duplicates (flannel's delegate and its IPAM included). */
export function pluginTypes(plugins: PluginConf[]): string[] {
  const types: string[] = [];
  const add = (t: unknown) => {
    if (typeof t === 'string' && t !== '' && !types.includes(t)) types.push(t);
  };
  for (const p of plugins) {
    add(p.type);
    if (p.type === 'flannel') {
      add(p.delegate?.type ?? 'win-bridge');
      add(p.delegate?.ipam?.type ?? FLANNEL_DEFAULT_IPAM);
    } else {
      add(p.ipam?.type);
    }
  }
  return types;
}

/** Whether plugin `type` is in `binDir`: `type.exe` (Windows) or `type`, as libcni's FindInPath tries. */
function hasPlugin(binDir: string, type: string, fs: CniReadinessFs): boolean {
  return fs.exists(joinLike(binDir, `${type}.exe`)) || fs.exists(joinLike(binDir, type));
}

/**
 * The fix for plugins missing from `binDir`: the `install-cni` run that installs them (`--sdnbridge` for
 * Microsoft's sdnbridge, which a plain `--pinned` run does not install), or, for a plugin install-cni does
 * not have, installing it by hand.
 */
function installFix(missing: readonly string[], binDir: string): string {
  const installable: readonly string[] = [...CNI_PLUGIN_FILES, SDNBRIDGE_FILE];
  const foreign = missing.filter((t) => !installable.includes(`${t}.exe`));
  const where = "or pass --cni-bin-dir if containerd's bin_dir is elsewhere";
  if (foreign.length > 0) {
    return `install ${foreign.join(', ')} into ${binDir} from ${foreign.length === 1 ? 'its' : 'their'} publisher (flanneld install-cni has only ${installable.join(', ')}), ${where}`;
  }
  const sdnbridge = missing.includes(SDNBRIDGE_FILE.replace(/\.exe$/, '')) ? ' --sdnbridge' : '';
  return `install ${missing.length === 1 ? 'it' : 'them'} with \`flanneld install-cni --pinned${sdnbridge} --bin-dir ${binDir}\`, ${where}`;
}

/** The fix that renders the conflist into `cniConfDir`. */
function renderFix(cniConfDir: string): string {
  return `write it with \`flanneld cni-config -o ${joinLike(cniConfDir, '10-flannel.conflist')}\``;
}

/** The config containerd loads first, parsed: its file, the document and its plugins (a .conf wrapped as a list). */
export interface FirstCniConfig {
  file: string;
  /** ` (containerd loads only this first one of ...)` when the directory holds several, else ''. */
  others: string;
  conf: { name: string; plugins?: unknown; type?: unknown };
  plugins: PluginConf[];
}

/** Read the config containerd loads first from `dir`, or the problem (cni-conf-missing, cni-conf-invalid) that stops it. */
export function loadFirstCniConfig(cniConfDir: string, fs: CniReadinessFs = nodeCniReadinessFs): FirstCniConfig | CniProblem {
  const files = cniConfigFiles(cniConfDir, (d) => fs.readdir(d));
  const render = renderFix(cniConfDir);
  if (files.length === 0) {
    return {
      check: 'cni-conf-missing',
      detail: `no CNI config (${CNI_CONF_EXTENSIONS.join(', ')}) in ${cniConfDir}: containerd has no network to attach pods to`,
      fix: `${render}, or pass --cni-conf-dir if containerd's conf_dir is elsewhere`,
    };
  }
  const file = joinLike(cniConfDir, files[0]);
  const others = files.length > 1 ? ` (containerd loads only this first one of ${files.join(', ')})` : '';
  let conf: { name?: unknown; plugins?: unknown; type?: unknown };
  try {
    const parsed: unknown = JSON.parse(fs.readFile(file));
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not a JSON object');
    conf = parsed;
  } catch (err) {
    return { check: 'cni-conf-invalid', detail: `${file}${others} cannot be used: ${errorMessage(err)}`, fix: `${render} (replacing it)` };
  }
  // A .conflist holds `plugins`; a .conf/.json is a single plugin (libcni ConfListFromConf).
  const plugins: PluginConf[] = Array.isArray(conf.plugins)
    ? (conf.plugins as unknown[]).filter((p): p is PluginConf => typeof p === 'object' && p !== null)
    : conf.type !== undefined
      ? [conf]
      : [];
  if (typeof conf.name !== 'string' || plugins.length === 0) {
    return { check: 'cni-conf-invalid', detail: `${file}${others} is not a CNI config: it needs a "name" and "plugins"`, fix: `${render} (replacing it)` };
  }
  return { file, others, conf: { ...conf, name: conf.name }, plugins };
}

/** The problems that would make a pod's CNI ADD fail; [] when the first config fits the agent. */
export function checkCniReadiness(input: CniReadinessInput, fs: CniReadinessFs = nodeCniReadinessFs): CniProblem[] {
  return checkFirstCniConfig(loadFirstCniConfig(input.cniConfDir, fs), input, fs);
}

/**
 * checkCniReadiness on the first config already read from input.cniConfDir (loadFirstCniConfig), so a
 * caller that needs the config itself (`flanneld doctor`) reads it once. `fs` serves the plugin check.
 */
export function checkFirstCniConfig(first: FirstCniConfig | CniProblem, input: CniReadinessInput, fs: CniReadinessFs = nodeCniReadinessFs): CniProblem[] {
  if ('check' in first) return [first];
  const { file, others, conf, plugins } = first;
  const render = renderFix(input.cniConfDir);
  const text = JSON.stringify({ name: conf.name, plugins });
  // Not flannel's and for another network: no rename fixes it (a config of other plugins naming the agent's
  // network, a bare win-bridge .conf, still attaches pods to it and is checked as any other).
  if (conf.name !== input.networkName && earlierFlannelConfig(text) === undefined && !isOwnCniConfig(text, conf.name)) {
    const types = pluginTypes(plugins).join(', ');
    return [
      {
        check: 'cni-conf-foreign',
        detail: `${file} (network "${conf.name}", plugins ${types}) is another CNI's config and containerd loads it first${others}: pods never reach flannel`,
        fix: `move ${file} out of ${input.cniConfDir} (or rename it to ${file}.bak, an extension containerd does not load); then \`flanneld cni-config -o\` writes flannel's there if none is left`,
      },
    ];
  }
  const problems: CniProblem[] = [];
  if (conf.name !== input.networkName) {
    problems.push({
      check: 'cni-network-name',
      detail: `${file}${others} names network "${conf.name}", but this agent runs HNS network "${input.networkName}": every pod ADD fails with Network name "${conf.name}" not found`,
      fix: `${render}, which names the network the agent runs (or set Backend.Name "${conf.name}" in net-conf.json if that is the network pods should use)`,
    });
  }
  for (const p of plugins) {
    if (p.type !== 'flannel') continue;
    const subnetFile = typeof p.subnetFile === 'string' && p.subnetFile !== '' ? p.subnetFile : FLANNEL_PLUGIN_DEFAULT_SUBNET_FILE;
    if (!samePath(subnetFile, input.subnetFile)) {
      problems.push({
        check: 'cni-subnet-file',
        detail: `${file} points the flannel plugin at subnetFile ${subnetFile}${p.subnetFile === undefined ? ' (its default)' : ''}, but this agent writes ${input.subnetFile}`,
        fix: `${render} with the agent's --subnet-file, or start the agent with --subnet-file ${subnetFile}`,
      });
    }
  }
  const missing = input.cniBinDir === '' ? [] : pluginTypes(plugins).filter((t) => !hasPlugin(input.cniBinDir, t, fs));
  if (missing.length > 0) {
    problems.push({
      check: 'cni-plugin-missing',
      detail: `${file} needs the CNI plugin${missing.length > 1 ? 's' : ''} ${missing.join(', ')}, not found in ${input.cniBinDir}`,
      fix: installFix(missing, input.cniBinDir),
    });
  }
  return problems;
}

// `cni-config -o FILE`: is FILE the config containerd will use? containerd's CRI loads the CNI config
// directory with go-cni (containerd/go-cni opts.go loadFromConfDir): libcni.ConfFiles(dir, [".conf",
// ".conflist", ".json"]), sort.Strings, then the first file only (`max_conf_num` 1). A file that sorts
// before ours wins: sig-windows-tools' `10-flannel.conf` beats our `10-flannel.conflist`, so pods keep
// the old network. Go's sort.Strings compares bytes, as JavaScript's default sort does for ASCII names.
// A flannel config of an earlier Windows install there is moved aside (backed up beside itself) once ours
// is written; only a foreign config is refused.
import * as nodeFs from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import { withoutBom } from '../basics/bom.js';
import { CniInstallError } from '../basics/errors.js';
import { MAX_CONFIG_FILE_BYTES, readRegularFile } from '../basics/fs.js';

/** The extensions go-cni loads from the CNI config directory. */
export const CNI_CONF_EXTENSIONS = ['.conf', '.conflist', '.json'] as const;

/** The CNI configs of `dir` in the order go-cni loads them (containerd uses the first); [] without the directory. */
export function cniConfigFiles(dir: string, readdir: (dir: string) => string[] = (d) => nodeFs.readdirSync(d)): string[] {
  let names: string[];
  try {
    names = readdir(dir);
  } catch {
    return []; // no directory yet
  }
  return names.filter((n) => (CNI_CONF_EXTENSIONS as readonly string[]).includes(extname(n))).sort();
}

/** The CNI configs in `file`'s directory that containerd would load before it, in its order. */
export function configsBefore(file: string, readdir: (dir: string) => string[] = (d) => nodeFs.readdirSync(d)): string[] {
  const own = basename(file);
  return cniConfigFiles(dirname(file), readdir)
    .filter((n) => n !== own && n < own)
    .map((n) => join(dirname(file), n));
}

/**
 * The delegates a flannel CNI config names on Windows, and who writes such a config:
 *  * sig-windows-tools hostprocess/flannel/flanneld/flannel-overlay.yml (`cni-conf-containerd.json`, which its
 *    start.ps1 fills and writes to C:\etc\cni\net.d\10-flannel.conf): `"type": "flannel"`, name
 *    `flannel.4096`, delegate `sdnoverlay`;
 *  * microsoft/SDN Kubernetes/flannel/overlay/cni/config/cni.conf (`vxlan0`, delegate `win-overlay`) and
 *    l2bridge/cni/config/cni.conf (`cbr0`, delegate `l2bridge`); its older releases ship `overlay.exe`;
 *  * this agent's `cni-config` (a conflist: plugins[0] is flannel, delegate `win-overlay` or `win-bridge`).
 * Only a flannel config for a Windows delegate is retired; anything else (Calico, a bridge config) is foreign.
 */
const WINDOWS_FLANNEL_DELEGATES: Readonly<Record<string, string>> = {
  sdnoverlay: 'sig-windows-tools',
  sdnbridge: 'sig-windows-tools',
  'win-overlay': 'microsoft/SDN or flanneld-windows',
  'win-bridge': 'microsoft/SDN or flanneld-windows',
  overlay: 'microsoft/SDN',
  l2bridge: 'microsoft/SDN',
};

/** Who wrote `text`, when it is a flannel CNI config (.conf or .conflist) for a Windows delegate; else undefined. */
export function earlierFlannelConfig(text: string): string | undefined {
  let conf: unknown;
  try {
    conf = JSON.parse(withoutBom(text));
  } catch {
    return undefined;
  }
  if (typeof conf !== 'object' || conf === null) return undefined;
  const c = conf as { type?: unknown; delegate?: unknown; plugins?: unknown };
  const plugin = Array.isArray(c.plugins) ? (c.plugins[0] as { type?: unknown; delegate?: unknown } | undefined) : c;
  if (plugin?.type !== 'flannel' || typeof plugin.delegate !== 'object' || plugin.delegate === null) return undefined;
  const delegate = (plugin.delegate as { type?: unknown }).type;
  return typeof delegate === 'string' && Object.hasOwn(WINDOWS_FLANNEL_DELEGATES, delegate) ? `flannel with ${delegate}: ${WINDOWS_FLANNEL_DELEGATES[delegate]}` : undefined;
}

/** True when `text` is a conflist `flanneld cni-config` renders for HNS network `networkName` (cleanup removes only those). */
export function isOwnCniConfig(text: string, networkName: string): boolean {
  try {
    const conf = JSON.parse(text) as { name?: unknown; plugins?: { type?: unknown; delegate?: { type?: unknown } }[] };
    const plugin = conf.plugins?.[0];
    const dual = plugin?.type === 'sdnbridge' && (plugin as { optionalFlags?: { enableDualStack?: unknown } }).optionalFlags?.enableDualStack === true;
    return conf.name === networkName && (dual || (plugin?.type === 'flannel' && (plugin.delegate?.type === 'win-overlay' || plugin.delegate?.type === 'win-bridge')));
  } catch {
    return false;
  }
}

/** An earlier flannel config that sorts before ours: moved aside once ours is written. */
export interface EarlierConfig {
  path: string;
  /** Who wrote it (earlierFlannelConfig). */
  writer: string;
}

/**
 * Refuse (FLANNEL_ERR_CNI_CONF_ORDER) to write `file` where containerd would load a foreign config first;
 * `force` only warns. Flannel's own configs of an earlier Windows install (sig-windows-tools' 10-flannel.conf)
 * are returned instead: the caller writes `file`, then retires them (retireEarlierConfigs).
 */
export function checkCniConfOrder(
  file: string,
  force: boolean,
  warn: (text: string) => void,
  readdir?: (dir: string) => string[],
  readFile: (path: string) => string = (p) => readRegularFile(p, MAX_CONFIG_FILE_BYTES, 'CNI config'),
): EarlierConfig[] {
  const earlier: EarlierConfig[] = [];
  const before: string[] = [];
  for (const path of configsBefore(file, readdir)) {
    let writer: string | undefined;
    try {
      writer = earlierFlannelConfig(readFile(path));
    } catch {
      writer = undefined; // unreadable: not provably flannel's
    }
    if (writer === undefined) before.push(path);
    else earlier.push({ path, writer });
  }
  if (before.length === 0) return earlier;
  const what = `${before.join(', ')} sort${before.length === 1 ? 's' : ''} before ${basename(file)}, and containerd loads only the first CNI config of ${dirname(file)}`;
  if (force) {
    warn(`warning: ${what}: pods will not use flannel until ${before.length === 1 ? 'it is' : 'they are'} removed\n`);
    return earlier;
  }
  throw new CniInstallError(
    'FLANNEL_ERR_CNI_CONF_ORDER',
    `${what}; ${before.length === 1 ? 'it is not a flannel config' : 'they are not flannel configs'}: remove ${before.length === 1 ? 'it' : 'them'} or pass --force to write anyway`,
    { file, before: before.join(',') },
  );
}

/** The backup name beside `path`: `<name>.bak` (an extension containerd does not load), else `.bak.1`, ... */
export function backupPath(path: string, exists: (p: string) => boolean = nodeFs.existsSync): string {
  if (!exists(`${path}.bak`)) return `${path}.bak`;
  for (let i = 1; ; i++) if (!exists(`${path}.bak.${i}`)) return `${path}.bak.${i}`;
}

/** Move each earlier flannel config to its backup beside itself, saying so; `file` (ours) is loaded then. */
export function retireEarlierConfigs(
  file: string,
  earlier: readonly EarlierConfig[],
  say: (text: string) => void,
  fs: { rename: (from: string, to: string) => void; exists: (p: string) => boolean } = { rename: (a, b) => nodeFs.renameSync(a, b), exists: (p) => nodeFs.existsSync(p) },
): void {
  for (const e of earlier) {
    const to = backupPath(e.path, fs.exists);
    fs.rename(e.path, to);
    say(`moved ${e.path} (an earlier install's flannel CNI config, ${e.writer}) to ${to}: containerd loads ${basename(file)} now\n`);
  }
}

// `cni-config -o FILE`: is FILE the config containerd will use? containerd's CRI loads the CNI config
// directory with go-cni (containerd/go-cni opts.go loadFromConfDir): libcni.ConfFiles(dir, [".conf",
// ".conflist", ".json"]), sort.Strings, then the first file only (`max_conf_num` 1). A file that sorts
// before ours wins: sig-windows-tools' `10-flannel.conf` beats our `10-flannel.conflist`, so pods keep
// the old network. Go's sort.Strings compares bytes, as JavaScript's default sort does for ASCII names.
import * as nodeFs from 'node:fs';
import { basename, dirname, extname, join } from 'node:path';
import { CniInstallError } from '../errors.js';

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

/** Refuse (FLANNEL_ERR_CNI_CONF_ORDER) to write `file` where containerd would load another config first; `force` only warns. */
export function checkCniConfOrder(file: string, force: boolean, warn: (text: string) => void, readdir?: (dir: string) => string[]): void {
  const before = configsBefore(file, readdir);
  if (before.length === 0) return;
  const what = `${before.join(', ')} sort${before.length === 1 ? 's' : ''} before ${basename(file)}, and containerd loads only the first CNI config of ${dirname(file)}`;
  if (force) {
    warn(`warning: ${what}: pods will not use flannel until ${before.length === 1 ? 'it is' : 'they are'} removed\n`);
    return;
  }
  throw new CniInstallError('FLANNEL_ERR_CNI_CONF_ORDER', `${what}; remove ${before.length === 1 ? 'it' : 'them'} (an earlier install's config) or pass --force to write anyway`, {
    file,
    before: before.join(','),
  });
}

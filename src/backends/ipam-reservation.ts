// An address reserved in host-local's store, so the flannel CNI's host-local IPAM never hands it to a pod.
// The store is containernetworking/plugins plugins/ipam/host-local/backend/disk/backend.go: one file per
// reserved address, `<dataDir>/<network>/<ip>`, holding `<container ID>` + LineBreak + `<ifname>`
// (LineBreak "\r\n"), created with O_EXCL; host-local skips every address whose file exists. The CNI
// network name is the HNS network name (the conflist's `name`, see src/cni/conflist.ts).
// Used for the vxlan source VIP (./vxlan/source-vip.ts) and host-gw's bridge endpoint `<name>_ep` at
// `.2`, which win-bridge takes as every pod's gateway (plugins win-bridge_windows.go) while host-local
// would hand `.2` out first. An address a pod already holds is never taken from it. A torn reservation
// (empty, or zero-filled: a power loss between host-local's O_EXCL create and its write, or NTFS's
// unwritten clusters) names no container a CNI runtime could have given (CNI spec: a container ID is
// `^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`), so it is nobody's and is rewritten. The agent holds one reservation per
// network, the one it reserves now: one naming its container ID at another address (left from an earlier
// podCIDR, the own Node registered again with another) is released, as host-local's ReleaseByID removes the
// files naming the container it releases; nothing else is (a pod's, a torn one, one that cannot be read).
import { dirname, join } from 'node:path';
import { errorMessage } from '../basics/errors.js';
import { isIp4 } from '../basics/ip4.js';
import type { Logger } from '../basics/log.js';

/** host-local's line break on Windows (disk backend `LineBreak`). */
const IPAM_LINE_BREAK = '\r\n';

export interface ReservationFs {
  readFileSync(path: string, encoding: 'utf8'): string;
  /**
   * Called with `{ flag: 'wx' }` (O_CREAT|O_EXCL, as host-local creates its files): throws EEXIST when the
   * file is there; `{ flag: 'w' }` only to rewrite a torn reservation.
   */
  writeFileSync(path: string, data: string, opts: { flag: 'wx' | 'w' }): void;
  mkdirSync(path: string, opts: { recursive: true }): unknown;
}

export interface Reservation {
  /** host-local's data dir (`C:\var\lib\cni\networks`). */
  dataDir: string;
  /** The CNI (= HNS) network name. */
  network: string;
  ip: string;
  /** What the file names as the container ID. */
  owner: string;
  /** What the file names as the interface. */
  ifname: string;
}

export function reservationPath(r: Pick<Reservation, 'dataDir' | 'network' | 'ip'>): string {
  return join(r.dataDir, r.network, r.ip);
}

/** What a container ID may be (CNI spec, "Parameters": CNI_CONTAINERID). */
const CONTAINER_ID = /^[a-zA-Z0-9][a-zA-Z0-9_.-]*$/;

/**
 * The container ID a reservation file names (its first line); '' when the file is torn (no container ID
 * a runtime could have given); undefined when there is no file (or it cannot be read).
 */
export function reservationOwner(fs: Pick<ReservationFs, 'readFileSync'>, path: string): string | undefined {
  let text: string;
  try {
    text = fs.readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  const id = text.split(/\r?\n/)[0]?.trim() ?? '';
  return CONTAINER_ID.test(id) ? id : '';
}

/**
 * Reserve `ip` for `owner`: `reserved` when the file was written (`torn` when it replaced a torn one),
 * `ours` when it was there already, `held` (and nothing written) when another container holds the address.
 */
export function reserveAddress(fs: ReservationFs, r: Reservation): { result: 'reserved' | 'ours' | 'held'; path: string; holder?: string; torn?: true } {
  const path = reservationPath(r);
  const holder = reservationOwner(fs, path);
  if (holder === r.owner) return { result: 'ours', path };
  if (holder === '') {
    fs.writeFileSync(path, `${r.owner}${IPAM_LINE_BREAK}${r.ifname}`, { flag: 'w' });
    return { result: 'reserved', path, torn: true };
  }
  if (holder !== undefined) return { result: 'held', path, holder };
  // Created exclusively, as host-local does: a pod that took the address since the read keeps it.
  fs.mkdirSync(dirname(path), { recursive: true });
  try {
    fs.writeFileSync(path, `${r.owner}${IPAM_LINE_BREAK}${r.ifname}`, { flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const now = reservationOwner(fs, path);
    return now === r.owner ? { result: 'ours', path } : { result: 'held', path, ...(now === undefined ? {} : { holder: now }) };
  }
  return { result: 'reserved', path };
}

/**
 * reserveAddress, or undefined with a warning naming the path and the fix when the store cannot be written
 * (a file where the directory should be, a read-only volume). The reservation is a safety net: the agent
 * runs on without it rather than stop after the HNS network exists (host-local, writing the same store for
 * the pods, fails on it too, and names it in the pods' events).
 */
export function reserveAddressOrWarn(fs: ReservationFs, r: Reservation, log: Logger): ReturnType<typeof reserveAddress> | undefined {
  try {
    return reserveAddress(fs, r);
  } catch (err) {
    log.warn(`cannot write the reservation in host-local's store; running on without it, so host-local may hand ${r.ip} to a pod`, {
      dataDir: r.dataDir,
      path: reservationPath(r),
      ip: r.ip,
      owner: r.owner,
      error: errorMessage(err),
      fix: `make ${r.dataDir} a writable directory (host-local's ipam.dataDir in the CNI config), or pass --cni-ipam-data-dir naming that directory ('' turns the reservation off); the agent writes it at its next start or network rebuild`,
    });
    return undefined;
  }
}

/** What releaseOwnReservations reads and removes. */
export interface ReleaseFs extends Pick<ReservationFs, 'readFileSync'> {
  readdirSync(path: string): string[];
  unlinkSync(path: string): void;
}

/**
 * Remove `owner`'s reservations in `<dataDir>/<network>` at another address than `keep` (left from an earlier
 * podCIDR); returns the paths removed. Only a file whose container ID is `owner` goes: a pod's, a torn one
 * and one that cannot be read (a failed read is unknown) stay, and so does everything when the directory
 * cannot be listed. A file that cannot be removed is logged: it stays reserved, as before.
 */
export function releaseOwnReservations(fs: ReleaseFs, r: Pick<Reservation, 'dataDir' | 'network' | 'owner'> & { keep: string }, log: Logger): string[] {
  const dir = join(r.dataDir, r.network);
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    if (name === r.keep || !isIp4(name)) continue; // host-local's own files (last_reserved_ip.0, lock) are no reservation
    const path = join(dir, name);
    if (reservationOwner(fs, path) !== r.owner) continue;
    try {
      fs.unlinkSync(path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      log.warn("cannot remove the agent's reservation left from an earlier podCIDR; host-local keeps that address reserved", {
        path,
        error: errorMessage(err),
        fix: `delete ${path} (it names ${r.owner}, this agent)`,
      });
      continue;
    }
    removed.push(path);
    log.info("released the agent's reservation left from an earlier podCIDR in host-local's store", { path, ip: name, kept: r.keep });
  }
  return removed;
}

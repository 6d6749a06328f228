// kube-proxy's source VIP on vxlan nodes. kube-proxy (winkernel) in overlay mode needs `--source-vip`: an
// address of the node's pod subnet that it SNATs Service traffic to, backed by a local HNS endpoint on the
// Overlay network, that no pod may ever get. The familiar scripts (microsoft/SDN helper.psm1 GetSourceVip,
// sig-windows-tools' HostProcess kube-proxy start.ps1) obtain it by running host-local IPAM by hand and keep
// its output in `sourceVip.json` (`{"cniVersion":"0.2.0","ip4":{"ip":"10.244.1.2/24",...}}`), which they
// read back with `.ip4.ip.Split("/")[0]` (or, CNI >= 0.3, `.ips[0].address.Split("/")[0]`).
//
// This agent reserves it itself, once the Overlay network exists:
//  * kube-proxy's own endpoint first: kube-proxy (pkg/proxy/winkernel proxier.go syncProxyRules) looks
//    the source VIP up on the network BY IP ADDRESS (hns.go getEndpointByIpAddress: IpConfigurations[0]
//    or [1], on the network's ID) and, when none is there, creates a local endpoint WITHOUT a name
//    (hns.go createEndpoint / proxier.go newSourceVIP). A nameless local endpoint on the Overlay network
//    (the one holding a recorded source VIP first) is therefore adopted, with its address; no second VIP
//    is ever allocated beside it, and one this agent made before is deleted;
//  * else the address: the one recorded before (our file or a script's sourceVip.json) when it is still
//    inside the subnet, else `.2` (what the scripts got on a fresh node: host-local's first free address
//    after the gateway), else the lowest free host address; "free" = no other endpoint on the network
//    holds it and no other container holds its host-local reservation; and an HNS endpoint
//    `<network>_sourcevip` with that address and the node's ProviderAddress policy;
//  * a reservation file in host-local's store (`<cni-ipam-data-dir>/<network>/<ip>`, the CNI network name
//    being the HNS network name), so the flannel CNI's host-local IPAM never hands the address to a pod;
//    the one it wrote for an earlier address (an earlier podCIDR) is released (../ipam-reservation.ts);
//  * the files, once the agent publishes the network with subnet.env (not while it holds the lease:
//    ../../agent/lease-rounds.ts): `--source-vip-file` (default `C:\run\flannel\sourcevip.json`) and every
//    `--source-vip-compat-files` path (default `C:\k\sourceVip.json` and `C:\sourcevip\sourceVip.json`),
//    each ONE object both readers accept: microsoft/SDN Kubernetes/windows/helper.psm1 GetSourceVip reads
//    host-local's CNI 0.2.0 output as `.ip4.ip.Split("/")[0]`, as did sig-windows-tools
//    hostprocess/flannel/kube-proxy/start.ps1 until c3cac35 (2023-05-15); from then on that script runs
//    host-local with `"cniVersion": "0.3.0"` and reads `.ips[0].address.Split("/")[0]` (both versions
//    are quoted in test/integration/kube-proxy-handoff.test.ts).
import { join } from 'node:path';
import { withoutBom } from '../../basics/bom.js';
import { writeFileAtomicSync } from '../../basics/fs.js';
import type { SourceVipFs } from '../../basics/fs.js';
import { BackendError, errorMessage } from '../../basics/errors.js';
import type { HnsClient } from '../../hns/client.js';
import { ENDPOINT_FLAG_REMOTE, policySetting, sameId, type HcnEndpoint } from '../../hns/schema.js';
import { contains, hostAddresses, nthAddress, parseCidr } from '../../basics/ip4.js';
import type { Logger } from '../../basics/log.js';
import { releaseOwnReservations, reservationOwner, reserveAddressOrWarn } from '../ipam-reservation.js';

/** Host index of the default source VIP inside the pod subnet (`.2`). */
const SOURCE_VIP_HOST_INDEX = 2;
/** The container ID written into host-local's reservation file. */
export const SOURCE_VIP_OWNER = 'flanneld-source-vip';
/**
 * The container ID the scripts run host-local with when they reserve the source VIP (`$env:CNI_CONTAINERID="dummy"`
 * in microsoft/SDN helper.psm1 GetSourceVip and sig-windows-tools kube-proxy start.ps1).
 */
const SCRIPT_CONTAINER_ID = 'dummy';

export function sourceVipEndpointName(networkName: string): string {
  return `${networkName}_sourcevip`;
}

export interface SourceVipRecord {
  ip: string;
  prefixLength: number;
  subnet: string;
  gateway: string;
  network: string;
  endpointId: string;
}

/**
 * The scripts' `sourceVip.json`: host-local's CNI 0.2.0 result (`ip4`) and its 0.3.0 result (`ips`) in
 * one object, so both script generations read the same address.
 */
export function sdnSourceVipDocument(rec: Pick<SourceVipRecord, 'ip' | 'prefixLength' | 'gateway'>): Record<string, unknown> {
  const address = `${rec.ip}/${rec.prefixLength}`;
  return { cniVersion: '0.2.0', ip4: { ip: address, gateway: rec.gateway }, ips: [{ version: '4', address, gateway: rec.gateway }], dns: {} };
}

/** The documented file: plain fields first, plus the script fields so either reader works on it too. */
export function plainSourceVipDocument(rec: SourceVipRecord): Record<string, unknown> {
  const { ip4, ips } = sdnSourceVipDocument(rec);
  return { ip: rec.ip, prefixLength: rec.prefixLength, subnet: rec.subnet, network: rec.network, endpointId: rec.endpointId, ip4, ips };
}

/** The address a source VIP document names: plain `ip`, CNI 0.2 `ip4.ip`, or CNI >= 0.3 `ips[0].address`. */
export function parseSourceVipDocument(text: string): string | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(withoutBom(text));
  } catch {
    return undefined;
  }
  if (typeof doc !== 'object' || doc === null) return undefined;
  const o = doc as { ip?: unknown; ip4?: { ip?: unknown }; ips?: { address?: unknown }[] };
  const candidates = [o.ip, o.ip4?.ip, Array.isArray(o.ips) ? o.ips[0]?.address : undefined];
  for (const c of candidates) {
    if (typeof c !== 'string') continue;
    const ip = c.split('/')[0];
    if (parseCidr(`${ip}/32`)) return ip;
  }
  return undefined;
}

/**
 * Pick the source VIP: the first `preferred` address that is a usable host address of `subnet` and not
 * `taken`, else `.2`, else the lowest free host address above the gateway. Undefined when the subnet is full.
 */
export function chooseSourceVip(subnet: string, preferred: readonly string[], taken: ReadonlySet<string>): string | undefined {
  const hosts = hostAddresses(subnet);
  const gateway = nthAddress(subnet, 1);
  const usable = (ip: string) => ip !== gateway && hosts.includes(ip) && !taken.has(ip);
  const first = [...preferred, nthAddress(subnet, SOURCE_VIP_HOST_INDEX)].find(usable);
  return first ?? hosts.find(usable);
}

export interface SourceVipOptions {
  hns: HnsClient;
  /** The Overlay network (its name is also the CNI network name). */
  networkName: string;
  /** The own pod subnet (lease). */
  subnet: string;
  /** The documented file; '' = none. */
  file: string;
  compatFiles: readonly string[];
  /** host-local's dataDir (`C:\var\lib\cni\networks`); '' = do not write a reservation. */
  ipamDataDir: string;
  /** MAC for the endpoint given the network's provider address (kube-proxy uses the host's); HNS assigns one when it has none. */
  macFor?: (providerAddress: string) => Promise<string | undefined>;
  log: Logger;
  /** The files (node:fs on the host: hostFiles of src/basics/fs.ts). */
  fs: SourceVipFs;
  /**
   * Write `file` and `compatFiles` (default true). False while the agent holds the lease: kube-proxy's
   * scripts read them, so they wait for the lease's confirmation with subnet.env (publishSourceVipFiles).
   */
  writeFiles?: boolean;
}

function readText(fs: SourceVipFs, path: string): string | undefined {
  try {
    return fs.readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function writeIfChanged(fs: SourceVipFs, path: string, text: string): boolean {
  if (readText(fs, path) === text) return false;
  writeFileAtomicSync(path, text, fs);
  return true;
}

function endpointIP(ep: HcnEndpoint): string | undefined {
  return ep.IpConfigurations?.[0]?.IpAddress;
}

/**
 * kube-proxy's source VIP endpoint among the network's endpoints: a local (not remote), nameless endpoint
 * inside the subnet, preferring one that holds a recorded source VIP (matched by IP as kube-proxy does:
 * its first or second IP configuration). Named endpoints are pods' or this agent's, never kube-proxy's.
 */
export function kubeProxySourceVip(endpoints: readonly HcnEndpoint[], subnet: string, recorded: readonly string[]): HcnEndpoint | undefined {
  const candidates = endpoints.filter((e) => !e.Name && ((e.Flags ?? 0) & ENDPOINT_FLAG_REMOTE) === 0 && contains(subnet, endpointIP(e) ?? ''));
  const ipsOf = (e: HcnEndpoint) => (e.IpConfigurations ?? []).slice(0, 2).map((c) => c.IpAddress);
  return recorded.map((ip) => candidates.find((e) => ipsOf(e).includes(ip))).find((e) => e !== undefined) ?? candidates[0];
}

/** Ensure the source VIP endpoint, its host-local reservation and its files; returns what was reserved. */
export async function reserveSourceVip(opts: SourceVipOptions): Promise<SourceVipRecord> {
  const { fs, hns, networkName, subnet, log } = opts;
  const net = await hns.getNetworkByName(networkName);
  if (!net?.ID) {
    throw new BackendError('FLANNEL_ERR_BACKEND', `cannot reserve the kube-proxy source VIP: HNS network ${networkName} does not exist`, { network: networkName });
  }
  const prefixLength = Number(subnet.split('/')[1]);
  const gateway = nthAddress(subnet, 1);
  const epName = sourceVipEndpointName(networkName);
  const endpoints = (await hns.listEndpoints(net.ID)).filter((e) => sameId(e.HostComputeNetwork, net.ID));
  let mine = endpoints.find((e) => e.Name === epName);
  const mineIP = mine ? endpointIP(mine) : undefined;
  if (mine && (!mineIP || !contains(subnet, mineIP))) {
    log.warn('deleting source VIP endpoint outside the pod subnet', { endpoint: epName, id: mine.ID, ip: mineIP, subnet });
    await hns.deleteEndpoint(mine.ID!);
    mine = undefined;
  }

  const ipamDir = opts.ipamDataDir ? join(opts.ipamDataDir, networkName) : '';
  const recorded = [opts.file, ...opts.compatFiles]
    .filter((f) => f !== '')
    .map((f) => {
      const t = readText(fs, f);
      return t === undefined ? undefined : parseSourceVipDocument(t);
    })
    .filter((ip): ip is string => ip !== undefined && contains(subnet, ip));

  const kubeProxy = kubeProxySourceVip(endpoints, subnet, recorded);
  if (kubeProxy && !sameId(kubeProxy.ID, mine?.ID)) {
    if (mine) {
      log.warn('deleting the source VIP endpoint this agent made: kube-proxy has its own', {
        endpoint: epName,
        id: mine.ID,
        ip: endpointIP(mine),
        kubeProxyIP: endpointIP(kubeProxy),
      });
      await hns.deleteEndpoint(mine.ID!);
    }
    log.info("adopting kube-proxy's source VIP endpoint", { id: kubeProxy.ID, name: kubeProxy.Name ?? '', ip: endpointIP(kubeProxy), network: networkName });
    mine = kubeProxy;
  }

  let ip: string;
  if (mine) {
    ip = endpointIP(mine)!;
  } else {
    const taken = new Set(endpoints.map(endpointIP).filter((x): x is string => x !== undefined));
    if (ipamDir) {
      // Reservations by other containers (pods) are taken; ours, and the one a script made for the source VIP, are not.
      let names: string[] = [];
      try {
        names = fs.readdirSync(ipamDir);
      } catch {
        names = [];
      }
      for (const n of names) {
        if (!contains(subnet, n)) continue;
        const owner = reservationOwner(fs, join(ipamDir, n));
        // Ours, torn ('' : nobody's, ../ipam-reservation.ts), or the scripts' own for a recorded address are free.
        if (owner === SOURCE_VIP_OWNER || owner === '' || (recorded.includes(n) && owner === SCRIPT_CONTAINER_ID)) continue;
        taken.add(n);
        if (recorded.includes(n)) {
          // After an HNS restart the endpoint is gone but a pod may hold the address in host-local's store:
          // reusing it would hand kube-proxy a pod's IP (and the pod's successor would collide with the VIP).
          log.warn('the recorded source VIP is reserved in host-local by a pod; choosing another address (update kube-proxy --source-vip)', {
            ip: n,
            container: owner,
            path: join(ipamDir, n),
          });
        }
      }
    }
    const chosen = chooseSourceVip(subnet, recorded, taken);
    if (!chosen) {
      throw new BackendError('FLANNEL_ERR_BACKEND', `cannot reserve the kube-proxy source VIP: no free address left in ${subnet}`, { subnet, network: networkName });
    }
    ip = chosen;
    const pa = policySetting(net.Policies, 'ProviderAddress', 'ProviderAddress');
    const mac = pa === undefined ? undefined : await opts.macFor?.(pa);
    const body: HcnEndpoint = {
      Name: epName,
      IpConfigurations: [{ IpAddress: ip, PrefixLength: prefixLength }],
      ...(mac ? { MacAddress: mac } : {}),
      Policies: pa ? [{ Type: 'ProviderAddress', Settings: { ProviderAddress: pa } }] : [],
      SchemaVersion: { Major: 2, Minor: 0 },
    };
    mine = await hns.createEndpoint(net.ID, body);
    log.info('created kube-proxy source VIP endpoint', { endpoint: epName, id: mine.ID, ip, network: networkName });
  }

  const rec: SourceVipRecord = { ip, prefixLength, subnet, gateway, network: networkName, endpointId: mine.ID ?? '' };
  if (opts.ipamDataDir) {
    const r = reserveAddressOrWarn(fs, { dataDir: opts.ipamDataDir, network: networkName, ip, owner: SOURCE_VIP_OWNER, ifname: 'sourcevip' }, log);
    if (r?.torn) log.warn('rewrote a torn host-local reservation (empty or zero-filled: no container holds it)', { path: r.path, ip });
    else if (r?.result === 'reserved') log.info('reserved the source VIP in host-local IPAM', { path: r.path });
    else if (r?.result === 'held' && r.holder !== SCRIPT_CONTAINER_ID)
      log.warn('a container holds the source VIP in host-local IPAM; recreate that pod', { path: r.path, ip, container: r.holder });
    releaseOwnReservations(fs, { dataDir: opts.ipamDataDir, network: networkName, owner: SOURCE_VIP_OWNER, keep: ip }, log);
  }
  if (opts.writeFiles !== false) publishSourceVipFiles(fs, rec, opts);
  return rec;
}

/** Write the files where they do not hold `rec` (writeSourceVipFiles), each logged. */
export function publishSourceVipFiles(fs: SourceVipFs, rec: SourceVipRecord, opts: Pick<SourceVipOptions, 'file' | 'compatFiles' | 'log'>): void {
  for (const path of writeSourceVipFiles(fs, rec, opts))
    opts.log.info(path === opts.file ? 'wrote source VIP file' : 'wrote source VIP file (script format)', { path, ip: rec.ip });
}

/**
 * Write the documented file and the scripts' files (`compatFiles`) where they do not hold `rec` (missing,
 * edited, an older address); returns the paths written. The documented file's failure throws; a script
 * file's is logged (a read-only C:\k must not stop the agent).
 */
export function writeSourceVipFiles(fs: SourceVipFs, rec: SourceVipRecord, opts: Pick<SourceVipOptions, 'file' | 'compatFiles' | 'log'>): string[] {
  const written: string[] = [];
  if (opts.file && writeIfChanged(fs, opts.file, JSON.stringify(plainSourceVipDocument(rec)) + '\n')) written.push(opts.file);
  for (const f of opts.compatFiles) {
    try {
      if (writeIfChanged(fs, f, JSON.stringify(sdnSourceVipDocument(rec)) + '\n')) written.push(f);
    } catch (err) {
      opts.log.warn('could not write a source VIP file for the scripts', { path: f, error: errorMessage(err) });
    }
  }
  return written;
}

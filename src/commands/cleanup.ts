// `flanneld cleanup`: undo what the agent did on this node, for uninstalling or switching backends. Removes
// only the agent's own objects, found by the names net-conf.json gives (docs/compatibility.md §5), and an
// HNS network only when it is provably the agent's: its ID is the one the boot record kept (boot.json,
// src/host/boot.ts), or it holds exactly this node's subnet (FLANNEL_SUBNET in subnet.env). Any other
// network of that name (an administrator's `cbr0` on 192.168.100.0/24) is kept with everything in it,
// and the output says why. The pods' endpoints go with the agent's network (HNS deletes a network's
// endpoints with it, as the simulated node models: src/simulator/objects.ts deleteNetwork): each is named
// and counted. The objects:
//  * host-gw: the peer routes on the management vNIC that the agent recorded as created (routes.json,
//    src/backends/hostgw/route-record.ts; an administrator's route inside Network is kept and named),
//    the host endpoint `<name>_ep` and its host-local reservation, the L2Bridge network;
//  * vxlan: the source VIP endpoint `<name>_sourcevip`, its host-local reservation and sourceVip files,
//    the Overlay network (its RemoteSubnetRoute policies go with it);
//  * the agent's files in the subnet file's directory (`C:\run\flannel`: subnet.env, boot.json,
//    flanneld.lock, sourcevip.json, routes.json), each only when it is a regular file whose content is
//    what flanneld writes, the agent's temporary files beside them, and the directory itself when nothing
//    else is left in it (a directory or link of any of those names is someone else's: kept);
//  * the CNI conflist `flanneld cni-config -o` wrote (`--cni-conf-file`), when it still is flannel's
//    conflist for this network (someone else's file at that path is kept);
//  * first, on the agent's network: the NetworkPolicy ACL rules and IP sets of --network-policy
//    (./cleanup-netpol.ts); `--network-policy-only` removes those alone and keeps everything else.
// Every other HNS network, endpoint and route is kept. Stop the agent first (it would recreate them).
// Without net-conf.json (the DaemonSet's ConfigMap is gone, or it was never on the host) the network is
// told from the node itself: FLANNEL_NETWORK and FLANNEL_SUBNET in subnet.env, and the L2Bridge or
// Overlay HNS network that is provably flannel's: the one whose ID the boot record kept (boot.json,
// src/host/boot.ts), else one of a flannel name (the recorded one, `cbr0`, `flannel.<VNI>`) holding
// exactly that subnet. A network that merely overlaps it (an admin's `External` on 10.0.0.0/8) is never
// taken: cleanup refuses, naming the candidates; see inferNetConf.
// `--dry-run` reports without changing anything. Prints one line per object.
import { existsSync, lstatSync, readdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { HOST_ENDPOINT_OWNER, hostEndpointAddress } from '../backends/hostgw/backend.js';
import { parseRouteRecord, readRouteRecord, routeRecordPath } from '../backends/hostgw/route-record.js';
import { reservationOwner, reservationPath } from '../backends/ipam-reservation.js';
import { SOURCE_VIP_OWNER, parseSourceVipDocument, sourceVipEndpointName } from '../backends/vxlan/source-vip.js';
import { systemClock } from '../basics/clock.js';
import type { FlagSpec } from '../config/flags.js';
import { createDataplane, type Dataplane } from '../dataplane/factory.js';
import { Metrics } from '../basics/metrics.js';
import { ENDPOINT_FLAG_REMOTE, sameId, type HcnEndpoint, type HnsNetworkV1 } from '../hns/schema.js';
import type { HnsClient } from '../hns/client.js';
import { HostError, NetConfError } from '../basics/errors.js';
import { agentLockPath, parseLockHolder, readLockHolder } from '../host/agent-lock.js';
import { BOOT_FILE_NAME, bootRecordPath, parseBootRecord, parseRecordedNetwork, readBootNetwork, type BootNetwork } from '../host/boot.js';
import { withoutBom } from '../basics/bom.js';
import { escapeUnsafe } from '../basics/terminal-text.js';
import { MAX_CONFIG_FILE_BYTES, readRegularFile } from '../basics/fs.js';
import { findInterfaceByIP } from '../host/select.js';
import { cidrContains, contains, overlaps } from '../basics/ip4.js';
import { silentLogger } from '../basics/log.js';
import { parseNetConf, readNetConf } from '../subnet/net-conf.js';
import { checkSubnetEnvSyntax, parseSubnetEnv, previousSubnetFromEnv } from '../subnet/subnet-env.js';
import type { NetworkConfig } from '../subnet/net-conf-types.js';
import type { AgentConfig } from '../config/agent-config.js';
import type { Command, CommandIO } from './command.js';
import { isOwnCniConfig } from '../cni/conf-dir.js';
import { commandUsage, parseCommandArgs, reportError } from './cni-flags.js';
import { removeNetpolObjects } from './cleanup-netpol.js';

/** Where the install scripts and the DaemonSet have `cni-config` write the conflist. */
const WINDOWS_CNI_CONF_FILE = 'C:\\etc\\cni\\net.d\\10-flannel.conflist';

const CLEANUP_FLAGS: readonly FlagSpec[] = [
  { name: 'dry-run', kind: 'bool', default: false, help: 'only print what would be removed' },
  {
    name: 'network-policy-only',
    kind: 'bool',
    default: false,
    help: "remove only the NetworkPolicy ACL rules and IP sets of --network-policy (Id prefix flannel-np-) from the agent's network; keep the network, its endpoints and files",
  },
  { name: 'force', kind: 'bool', default: false, help: 'run even while an agent holds the node lock (flanneld.lock beside subnet.env)' },
  {
    name: 'cni-conf-file',
    kind: 'string',
    default: '',
    help: `the CNI conflist written by cni-config -o, removed when it is flannel's for this network (Windows default ${WINDOWS_CNI_CONF_FILE}; "none" keeps it)`,
    valueName: 'FILE',
  },
];

/**
 * The network config cleanup needs (Network, Backend.Type, Backend.Name), told from the node when no
 * net-conf.json is there: subnet.env names the cluster network and the own subnet, and HNS the network
 * that holds that subnet. With no such network left (the Overlay network is gone after a reboot), the
 * source VIP record names it; else it is the host-gw default `cbr0`, which only the CNI conflist check
 * reads then. Throws FLANNEL_ERR_NET_CONF when subnet.env is missing or several networks hold the subnet.
 */
export function inferNetConf(opts: {
  netConfPath: string;
  subnetFile: string;
  subnetEnv: string | undefined;
  sourceVip: string | undefined;
  networks: HnsNetworkV1[];
  /** The network the agent recorded in boot.json (readBootNetwork). */
  boot?: BootNetwork;
}): {
  netConf: NetworkConfig;
  how: string;
  /** No HNS network is known to be flannel's: remove the files only, never an HNS network named `cbr0`. */
  filesOnly?: boolean;
} {
  const env = opts.subnetEnv === undefined ? {} : parseSubnetEnv(opts.subnetEnv);
  const network = env['FLANNEL_NETWORK']?.trim();
  const subnet = opts.subnetEnv === undefined ? undefined : previousSubnetFromEnv(opts.subnetEnv);
  if (!network || !subnet) {
    throw new NetConfError(
      'FLANNEL_ERR_NET_CONF',
      `no net-conf.json at ${opts.netConfPath} and no FLANNEL_NETWORK/FLANNEL_SUBNET in ${opts.subnetFile}: cannot tell which HNS network is flannel's; pass --net-config-path with the cluster's net-conf.json`,
      { path: opts.netConfPath, subnetFile: opts.subnetFile },
    );
  }
  const candidates = opts.networks.filter((n) => (n.Type === 'L2Bridge' || n.Type === 'Overlay') && (n.Subnets ?? []).some((s) => overlaps(s.AddressPrefix, subnet)));
  const byId = candidates.filter((n) => opts.boot?.id && sameId(n.ID, opts.boot.id));
  const flannelName = (name: string) => name === opts.boot?.name || name === 'cbr0' || /^flannel\.\d+$/.test(name);
  const holders = byId.length > 0 ? byId : candidates.filter((n) => flannelName(n.Name) && n.Subnets?.[0]?.AddressPrefix === subnet);
  const named = (list: HnsNetworkV1[]) => list.map((n) => `${escapeUnsafe(n.Name)} ${n.Type} ${(n.Subnets ?? []).map((x) => x.AddressPrefix).join(',')}`).join('; ');
  if (holders.length > 1) {
    throw new NetConfError(
      'FLANNEL_ERR_NET_CONF',
      `no net-conf.json at ${opts.netConfPath}, and ${holders.length} HNS networks of flannel's names hold this node's subnet ${subnet} (${named(holders)}): pass --net-config-path naming the one flannel made`,
      { path: opts.netConfPath, subnet },
    );
  }
  if (holders.length === 0 && candidates.length > 0) {
    throw new NetConfError(
      'FLANNEL_ERR_NET_CONF',
      `no net-conf.json at ${opts.netConfPath}, and no HNS network is provably flannel's (the ID in ${BOOT_FILE_NAME}, or a flannel name holding exactly ${subnet}); ` +
        `removing nothing. Overlapping candidates: ${named(candidates)}. If one is flannel's, pass --net-config-path with a net-conf.json naming it (Backend.Name); an administrator's network is kept`,
      { path: opts.netConfPath, subnet, candidates: candidates.map((n) => n.Name).join(',') },
    );
  }
  const conf = (type: string, name: string) => parseNetConf(JSON.stringify({ Network: network, Backend: { Type: type, Name: name } }));
  const held = holders[0];
  if (held) {
    const type = held.Type === 'Overlay' ? 'vxlan' : 'host-gw';
    return { netConf: conf(type, held.Name), how: `network ${held.Name} (${type}, ${subnet}): from ${opts.subnetFile} and HNS` };
  }
  const vipNetwork = sourceVipNetwork(opts.sourceVip, subnet);
  if (vipNetwork) return { netConf: conf('vxlan', vipNetwork), how: `network ${vipNetwork} (vxlan, ${subnet}, not in HNS): from ${opts.subnetFile} and the source VIP record` };
  return { netConf: conf('host-gw', 'cbr0'), how: `no HNS network holds ${subnet} (from ${opts.subnetFile}): removing the files only`, filesOnly: true };
}

/** inferNetConf, or undefined where it would refuse (several holders: cleanup then keeps net-conf's name). */
function heldNetwork(netConfPath: string, subnetFile: string, subnetEnv: string, networks: HnsNetworkV1[]): ReturnType<typeof inferNetConf> | undefined {
  try {
    return inferNetConf({ netConfPath, subnetFile, subnetEnv, sourceVip: undefined, networks, boot: readBootNetwork(subnetFile) });
  } catch {
    return undefined;
  }
}

/** The network a source VIP record (sourcevip.json, written by the agent) names, when it is for `subnet`. */
function sourceVipNetwork(text: string | undefined, subnet: string): string | undefined {
  if (text === undefined) return undefined;
  try {
    const rec = JSON.parse(text) as { network?: unknown; subnet?: unknown };
    return typeof rec.network === 'string' && rec.subnet === subnet ? rec.network : undefined;
  } catch {
    return undefined;
  }
}

export interface CleanupReport {
  /** One line per object: `removed <what>` (or `would remove <what>`). */
  lines: string[];
  /** Objects left on purpose, with the reason. */
  kept: string[];
  /** Objects left because a read or a removal failed: their state is unknown (cleanup then exits 1). */
  unknown: string[];
}

export interface CleanupOptions {
  config: AgentConfig;
  netConf: NetworkConfig;
  dataplane: Dataplane;
  dryRun: boolean;
  /** The CNI conflist to remove when it is ours; '' for none. */
  cniConfFile?: string;
  /** Skip the HNS objects and routes (inferNetConf found no network of flannel's): files only. */
  filesOnly?: boolean;
  /** Remove only the NetworkPolicy rules and IP sets on the agent's network. */
  networkPolicyOnly?: boolean;
}

/** Remove the agent's HNS objects, routes and files; returns what it did. */
async function cleanupNode(opts: CleanupOptions): Promise<CleanupReport> {
  const { config, netConf, dataplane, dryRun } = opts;
  const { hns, routes, host } = dataplane;
  const verb = dryRun ? 'would remove' : 'removed';
  const report: CleanupReport = { lines: [], kept: [], unknown: [] };
  const did = (what: string) => report.lines.push(`${verb} ${what}`);
  const netpol = (id: string) => removeNetpolObjects(hns, { id, name }, dryRun, { did, unknown: report.unknown, kept: report.kept });
  const name = netConf.backend.name;
  let sourceVip: string | undefined;
  const seen = new Set<string>();
  const proof = ownershipProof(config.subnetFile);
  /** The network `net` found by the agent's name, when it is provably the agent's; else kept, saying why. */
  const provablyOwn = <N extends { ID?: string; Type?: string }>(net: N | undefined, subnet: string | undefined): (N & { ID: string }) | undefined => {
    if (!net?.ID) return undefined;
    const why = notProvablyOwn(net.ID, subnet, proof, config.subnetFile);
    if (why === undefined) return net as N & { ID: string };
    report.kept.push(`HNS network ${name} (${net.Type ?? '?'}, ${subnet ?? '?'}, ID ${net.ID}): ${why}`);
    return undefined;
  };
  /**
   * The network is gone (or would be): the endpoints that went with it, each named (a pod's, or a remote
   * one kube-proxy made: ENDPOINT_FLAG_REMOTE), then counted.
   */
  const removedWith = (endpoints: HcnEndpoint[]) => {
    const count = { 'pod endpoint': 0, 'remote endpoint': 0 };
    for (const ep of endpoints) {
      const kind = ((ep.Flags ?? 0) & ENDPOINT_FLAG_REMOTE) !== 0 ? 'remote endpoint' : 'pod endpoint';
      count[kind]++;
      did(`${kind} ${ep.Name ?? '?'} (${ep.IpConfigurations?.[0]?.IpAddress ?? '?'}, ID ${ep.ID ?? '?'}) with HNS network ${name}`);
    }
    const counted = (n: number, kind: string) => `${n} ${kind}${n === 1 ? '' : 's'}`;
    return ` with ${counted(count['pod endpoint'], 'pod endpoint')}${count['remote endpoint'] > 0 ? ` and ${counted(count['remote endpoint'], 'remote endpoint')}` : ''}`;
  };

  if (opts.filesOnly) {
    // Nothing in HNS is known to be flannel's: an HNS network merely named cbr0 is left alone.
  } else if (opts.networkPolicyOnly) {
    const found = await hns.getNetworkByName(name);
    const net = provablyOwn(found, found?.Ipams?.[0]?.Subnets?.[0]?.IpAddressPrefix);
    if (net) await netpol(net.ID);
    return report;
  } else if (netConf.backend.type === 'host-gw') {
    const found = await hns.getNetworkByNameV1(name);
    const net = provablyOwn(found, found?.Subnets?.[0]?.AddressPrefix);
    if (net) {
      await netpol(net.ID);
      const own = net.Subnets?.[0]?.AddressPrefix;
      const mgmt = net.ManagementIP ? findInterfaceByIP(await host.interfaces(), net.ManagementIP) : undefined;
      if (mgmt) {
        // Only the routes the agent recorded as created (routes.json beside subnet.env); an administrator's
        // route inside Network is kept and named.
        const recorded = new Set((readRouteRecord(routeRecordPath(config.subnetFile), { readFileSync }) ?? []).map((r) => `${r.destinationPrefix} via ${r.nextHop}`));
        for (const r of await routes.list(mgmt.index)) {
          if (r.interfaceIndex !== mgmt.index || r.destinationPrefix === own || !cidrContains(netConf.network, r.destinationPrefix)) continue;
          const what = `route ${r.destinationPrefix} via ${r.nextHop} on ${mgmt.name} (index ${mgmt.index})`;
          if (!recorded.has(`${r.destinationPrefix} via ${r.nextHop}`)) {
            report.kept.push(`${what}: flanneld did not create it (not in ${routeRecordPath(config.subnetFile)})`);
            continue;
          }
          if (!dryRun) await routes.remove(r);
          did(what);
        }
      }
      const ep = await hns.getEndpointByNameV1(`${name}_ep`);
      if (ep?.ID) {
        if (!dryRun) await hns.deleteEndpointV1(ep.ID);
        did(`HNS endpoint ${ep.Name} (${ep.IPAddress ?? '?'}, ID ${ep.ID})`);
      }
      const pods = await podEndpoints(hns, net.ID, `${name}_ep`);
      if (!dryRun) await hns.deleteNetworkV1(net.ID);
      did(`HNS network ${name} (${net.Type}, ${own ?? '?'}, ID ${net.ID})${removedWith(pods)}`);
      // The agent's reservation of the bridge endpoint's .2 in host-local's store (never a pod's).
      const bridgeIp = ep?.IPAddress ?? (own ? hostEndpointAddress(own) : undefined);
      if (bridgeIp) removeOwnReservation(config.cniIpamDataDir, name, bridgeIp, HOST_ENDPOINT_OWNER, dryRun, did, seen);
    }
  } else {
    const found = await hns.getNetworkByName(name);
    const net = provablyOwn(found, found?.Ipams?.[0]?.Subnets?.[0]?.IpAddressPrefix);
    if (net) {
      await netpol(net.ID);
      const own = net.Ipams?.[0]?.Subnets?.[0]?.IpAddressPrefix;
      const vipName = sourceVipEndpointName(name);
      for (const ep of await hns.listEndpoints(net.ID)) {
        if (ep.Name !== vipName || !ep.ID || !sameId(ep.HostComputeNetwork, net.ID)) continue;
        sourceVip = ep.IpConfigurations?.[0]?.IpAddress;
        if (!dryRun) await hns.deleteEndpoint(ep.ID);
        did(`HNS endpoint ${ep.Name} (${sourceVip ?? '?'}, ID ${ep.ID})`);
      }
      const pods = await podEndpoints(hns, net.ID, vipName);
      if (!dryRun) await hns.deleteNetwork(net.ID);
      const policies = (net.Policies ?? []).filter((p) => p.Type === 'RemoteSubnetRoute').length;
      did(`HNS network ${name} (${net.Type}, ${own ?? '?'}, ${policies} RemoteSubnetRoute policies, ID ${net.ID})${removedWith(pods)}`);
      if (sourceVip === undefined && own) {
        // The endpoint may be gone already (reboot): take the address from the file, if it is ours.
        const fromFile = readIf(config.sourceVipFile);
        const ip = fromFile === undefined ? undefined : parseSourceVipDocument(fromFile);
        if (ip && contains(own, ip)) sourceVip = ip;
      }
    }
    if (sourceVip) removeOwnReservation(config.cniIpamDataDir, name, sourceVip, SOURCE_VIP_OWNER, dryRun, did, seen);
    for (const f of [config.sourceVipFile, ...config.sourceVipCompatFiles]) {
      const text = f ? readIf(f) : undefined;
      if (text === undefined) continue;
      const ip = parseSourceVipDocument(text);
      if (sourceVip !== undefined && ip === sourceVip) removeFile(f, dryRun, did, seen);
      else if (f === config.sourceVipFile && sourceVip === undefined) removeFile(f, dryRun, did, seen);
      else report.kept.push(`${f}: names ${ip ?? 'no address'}, not this node's source VIP`);
    }
  }

  if (opts.cniConfFile) {
    const text = readIf(opts.cniConfFile);
    if (text !== undefined && isOwnCniConfig(text, name)) removeFile(opts.cniConfFile, dryRun, did, seen);
    else if (text !== undefined) report.kept.push(`${opts.cniConfFile}: not flannel's CNI config for network ${name}`);
  }

  // The agent's files beside subnet.env (each only when its content is what flanneld writes), then the
  // directory when nothing else is left in it.
  const dir = dirname(config.subnetFile);
  const candidates: [string, AgentFileKind][] = [
    [config.subnetFile, 'subnet.env'],
    [join(dir, BOOT_FILE_NAME), 'boot record'],
    [agentLockPath(config.subnetFile), 'agent lock'],
    [config.sourceVipFile, 'source VIP file'],
    [routeRecordPath(config.subnetFile), 'route record'],
  ];
  const own = new Set<string>();
  for (const [f, kind] of candidates) {
    if (f === '' || dirname(f) !== dir) continue;
    const what = fileKind(f);
    if (what === 'other') {
      report.kept.push(`${f}: not a regular file`);
      continue;
    }
    const text = what === 'file' ? readIf(f) : undefined;
    if (text !== undefined && !isAgentFile(kind, text)) {
      report.kept.push(`${f}: not ${/^[aeiou]/.test(kind) ? 'an' : 'a'} ${kind} flanneld wrote`);
      continue;
    }
    own.add(f);
    removeFile(f, dryRun, did, seen);
  }
  if (existsSync(dir)) {
    // The agent's temporary files, left by a crash: `<file>.tmp-<pid>` (src/basics/fs.ts writeFileAtomicSync,
    // the lock's) and `.subnet.env.<pid>.<hex>.tmp` (src/subnet/subnet-env.ts); regular files only.
    const names = new Set(candidates.filter(([f]) => f !== '' && dirname(f) === dir).map(([f]) => basename(f)));
    const temp = (n: string) => {
      const of = /^(.+)\.tmp-\d+$/.exec(n)?.[1] ?? /^\.(.+)\.\d+\.[0-9a-f]+\.tmp$/.exec(n)?.[1];
      return of !== undefined && names.has(of) && fileKind(join(dir, n)) === 'file';
    };
    const left = readdirSync(dir).filter((n) => !own.has(join(dir, n)) && !temp(n));
    if (left.length === 0) {
      if (!dryRun) {
        for (const n of readdirSync(dir)) if (temp(n)) rmSync(join(dir, n), { force: true });
        rmdirSync(dir);
      }
      did(`directory ${dir}`);
    } else {
      report.kept.push(`${dir}: holds other files (${left.slice(0, 5).join(', ')})`);
    }
  }
  return report;
}

type AgentFileKind = 'subnet.env' | 'boot record' | 'agent lock' | 'source VIP file' | 'route record';

/**
 * Is `text` what flanneld writes as `kind`? Each is read by its own parser: subnet.env by
 * src/subnet/subnet-env.ts (KEY=VALUE lines, only FLANNEL_* keys, FLANNEL_SUBNET among them, no line of a form
 * flanneld never writes); boot.json as a boot record or the network record (src/host/boot.ts); the lock as
 * src/host/agent-lock.ts reads it; the source VIP file as a document naming an address; the route record by
 * src/backends/hostgw/route-record.ts. A leading BOM (an editor's) does not make a file foreign.
 */
function isAgentFile(kind: AgentFileKind, text: string): boolean {
  const t = withoutBom(text);
  switch (kind) {
    case 'subnet.env':
      return isAgentSubnetEnv(t);
    case 'boot record':
      return parseBootRecord(t) !== undefined || parseRecordedNetwork(t) !== undefined;
    case 'agent lock':
      return parseLockHolder(t) !== undefined;
    case 'source VIP file':
      return parseSourceVipDocument(text) !== undefined;
    case 'route record':
      return parseRouteRecord(text) !== undefined;
  }
}

/** Lines dotenv reads but flanneld never writes (a comment, `export KEY=`, `KEY =`): someone edited the file. */
const EDITED_SUBNET_ENV_LINE = /^\s*(#|export\s|[^\s=]+\s+=)/m;

function isAgentSubnetEnv(text: string): boolean {
  try {
    checkSubnetEnvSyntax(text);
  } catch {
    return false;
  }
  if (EDITED_SUBNET_ENV_LINE.test(text)) return false;
  const env = parseSubnetEnv(text);
  return env['FLANNEL_SUBNET'] !== undefined && Object.keys(env).every((k) => /^FLANNEL_[A-Z0-9_]+$/.test(k));
}

/** What is at `path`, not following a link: nothing, a regular file, or anything else (a directory, a link, a FIFO). */
function fileKind(path: string): 'missing' | 'file' | 'other' {
  try {
    return lstatSync(path).isFile() ? 'file' : 'other';
  } catch {
    return 'missing';
  }
}

/** The file's text, capped (src/basics/fs.ts); undefined when it is missing or not a regular file. */
function readIf(path: string): string | undefined {
  if (fileKind(path) !== 'file') return undefined;
  return readRegularFile(path, MAX_CONFIG_FILE_BYTES, 'file');
}

/** What proves an HNS network the agent's: the network ID boot.json recorded, and this node's subnet (subnet.env's FLANNEL_SUBNET). */
interface OwnershipProof {
  bootId: string | undefined;
  subnet: string | undefined;
}

function ownershipProof(subnetFile: string): OwnershipProof {
  const env = readIf(subnetFile);
  return { bootId: readBootNetwork(subnetFile)?.id || undefined, subnet: env === undefined ? undefined : previousSubnetFromEnv(env) };
}

/**
 * Why the network of the agent's name with `id` and first subnet `subnet` is not provably the agent's, or
 * undefined when it is: its ID is the recorded one, or its subnet is this node's.
 */
function notProvablyOwn(id: string, subnet: string | undefined, proof: OwnershipProof, subnetFile: string): string | undefined {
  if (proof.bootId !== undefined && sameId(id, proof.bootId)) return undefined;
  if (proof.subnet !== undefined && subnet === proof.subnet) return undefined;
  const byId = proof.bootId ? `its ID is not ${proof.bootId}, the one ${bootRecordPath(subnetFile)} recorded` : `${bootRecordPath(subnetFile)} records no network ID`;
  const bySubnet = proof.subnet ? `its subnet is not this node's FLANNEL_SUBNET ${proof.subnet} (${subnetFile})` : `${subnetFile} gives no FLANNEL_SUBNET`;
  return `not flanneld's: ${byId}, and ${bySubnet}. If it is flannel's, remove it yourself: Get-HnsNetwork | Where-Object Id -eq '${id}' | Remove-HnsNetwork`;
}

/** The endpoints of network `networkId` but the agent's own (`own`): the pods' (and kube-proxy's remote ones), which HNS deletes with the network. */
async function podEndpoints(hns: HnsClient, networkId: string, own: string): Promise<HcnEndpoint[]> {
  return (await hns.listEndpoints(networkId)).filter((ep) => sameId(ep.HostComputeNetwork, networkId) && ep.Name !== own);
}

/** A host-local reservation of `ip` (src/backends/ipam-reservation.ts), removed only when `owner` holds it. */
function removeOwnReservation(dataDir: string, network: string, ip: string, owner: string, dryRun: boolean, did: (what: string) => void, seen: Set<string>): void {
  if (!dataDir) return;
  const path = reservationPath({ dataDir, network, ip });
  if (reservationOwner({ readFileSync }, path) === owner) removeFile(path, dryRun, did, seen);
}

function removeFile(path: string, dryRun: boolean, did: (what: string) => void, seen: Set<string>): void {
  if (seen.has(path) || fileKind(path) !== 'file') return;
  seen.add(path);
  if (!dryRun) rmSync(path, { force: true });
  did(`file ${path}`);
}

/** A running agent would recreate what cleanup removes: refuse, unless --force. */
function refuseWhileAgentRuns(subnetFile: string, force: boolean): void {
  const holder = readLockHolder(agentLockPath(subnetFile));
  if (holder && !force) {
    throw new HostError(
      'FLANNEL_ERR_AGENT_LOCK',
      `flanneld (PID ${holder.pid}) is running for this node (${agentLockPath(subnetFile)}); stop it first (it would recreate what cleanup removes), or pass --force`,
      { pid: holder.pid },
    );
  }
}

export const command: Command = {
  summary: "remove this node's flannel HNS network and endpoints, the routes it created and C:\\run\\flannel (keeps other networks)",
  async run(args: string[], rawIo: CommandIO): Promise<number> {
    const program = 'flanneld cleanup';
    // What HNS holds (names, types, addresses) is printed escaped, line by line, as `flanneld status` does.
    const safe = (t: string) => t.split('\n').map(escapeUnsafe).join('\n');
    const io: CommandIO = { ...rawIo, stdout: (t) => rawIo.stdout(safe(t)), stderr: (t) => rawIo.stderr(safe(t)) };
    try {
      const parsed = parseCommandArgs(args, CLEANUP_FLAGS, io);
      if (parsed.kind === 'help') {
        io.stdout(commandUsage(program, this.summary, CLEANUP_FLAGS));
        return 0;
      }
      const { config } = parsed;
      refuseWhileAgentRuns(config.subnetFile, parsed.own.get('force') === true);
      const dataplane = await createDataplane(config, { log: silentLogger(), metrics: new Metrics(), clock: systemClock });
      let netConf: NetworkConfig;
      let filesOnly = false;
      if (existsSync(config.netConfigPath)) {
        netConf = readNetConf(config.netConfigPath);
        // The agent adopts a network of another name that holds its subnet (src/backends/subnet-holder.ts):
        // when net-conf's name is not in HNS, take the one holding subnet.env's subnet, if of the same type.
        const networks = await dataplane.hns.listNetworksV1();
        const subnetEnv = readIf(config.subnetFile);
        if (!networks.some((n) => n.Name === netConf.backend.name) && subnetEnv !== undefined) {
          const held = heldNetwork(config.netConfigPath, config.subnetFile, subnetEnv, networks);
          if (held && held.netConf.backend.type === netConf.backend.type && networks.some((n) => n.Name === held.netConf.backend.name)) {
            io.stdout(`no HNS network ${netConf.backend.name}; ${held.how} (the agent adopted it)\n`);
            netConf = { ...netConf, backend: { ...netConf.backend, name: held.netConf.backend.name } };
          }
        }
      } else if (!existsSync(config.subnetFile)) {
        // Neither file: flannel never ran here, or was removed already. The uninstall DaemonSet runs on
        // every Windows node, so "nothing to remove" is success (exit 0), not a usage error.
        io.stdout(`nothing to remove: no net-conf.json at ${config.netConfigPath} and no ${config.subnetFile} (flannel never ran on this node, or is removed)\n`);
        return 0;
      } else {
        const inferred = inferNetConf({
          netConfPath: config.netConfigPath,
          subnetFile: config.subnetFile,
          subnetEnv: readIf(config.subnetFile),
          sourceVip: config.sourceVipFile ? readIf(config.sourceVipFile) : undefined,
          networks: await dataplane.hns.listNetworksV1(),
          boot: readBootNetwork(config.subnetFile),
        });
        netConf = inferred.netConf;
        filesOnly = inferred.filesOnly === true;
        io.stdout(`no net-conf.json at ${config.netConfigPath}; ${inferred.how}\n`);
      }
      const cniFlag = String(parsed.own.get('cni-conf-file') ?? '');
      const cniConfFile = cniFlag === 'none' ? '' : cniFlag || (io.platform === 'win32' ? WINDOWS_CNI_CONF_FILE : '');
      const networkPolicyOnly = parsed.own.get('network-policy-only') === true;
      const report = await cleanupNode({ config, netConf, dataplane, dryRun: parsed.own.get('dry-run') === true, cniConfFile, filesOnly, networkPolicyOnly });
      for (const l of report.lines) io.stdout(`${l}\n`);
      for (const k of report.kept) io.stdout(`kept ${k}\n`);
      for (const u of report.unknown) io.stdout(`unknown ${u}\n`);
      if (report.lines.length === 0 && report.unknown.length === 0)
        io.stdout(
          networkPolicyOnly
            ? `nothing to remove: no NetworkPolicy rule or IP set of flanneld's on HNS network ${netConf.backend.name}\n`
            : `nothing to remove: no HNS network ${netConf.backend.name} of flanneld's and no agent files\n`,
        );
      return report.unknown.length > 0 ? 1 : 0;
    } catch (err) {
      return reportError(program, err, io);
    }
  },
};

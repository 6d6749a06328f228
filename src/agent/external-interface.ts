// The external interface and the addresses peers reach this node at, chosen before the HNS network exists.
// Mirrors flannel pkg/ipmatch/match.go LookupExtIface (--iface, --iface-regex, else the interface holding
// --public-ip, else the default route's) and backend.ExternalInterface (the interface, its address, the
// public address; dual-stack, the IPv6 twins), with two kube-mode additions: the own Node's public-ip
// annotations pick the interface when no flag names one, and an --ipv4-only node of a dual-stack cluster
// still publishes its public IPv6 (../subnet/kube/own-node.ts ipv4OnlyPublicIPv6).
import { HostError } from '../basics/errors.js';
import type { Logger } from '../basics/log.js';
import type { AgentConfig } from '../config/agent-config.js';
import type { Dataplane } from '../dataplane/factory.js';
import type { HostInterface, Ipv6Address } from '../host/host.js';
import { selectExternalInterface, selectIPv6Address, selectionNeedsIPv6 } from '../host/select.js';
import { checkIPv6NetworkExcludesNode, checkNetworkExcludesNode } from '../subnet/net-conf.js';
import type { NetworkConfig } from '../subnet/net-conf-types.js';

export interface ExternalInterface {
  iface: HostInterface;
  /** The address peers reach this node at (--public-ip, else the interface address). */
  publicIP: string;
  /** Dual-stack: the interface's IPv6 address and the IPv6 address peers route to (--public-ipv6, else it). */
  ipv6?: { address: Ipv6Address; publicIPv6: string };
  /** --ipv4-only in a kube dual-stack cluster: the public IPv6 the Linux nodes need to program this Node at all. */
  ipv4OnlyPublicIPv6?: string;
}

/** kube mode: the own Node's public-IP annotations (../subnet/kube/factory.ts KubeStart reads them). */
export interface NodePublicIPs {
  /** The own Node's public-ip-overwrite and node-public-ip annotations, in that order. */
  publicIPs(signal: AbortSignal): Promise<string[]>;
  /** The own Node's public-ipv6-overwrite and node-public-ipv6 annotations, in that order. */
  publicIPv6s(signal: AbortSignal): Promise<string[]>;
}

export interface LookupOptions {
  config: AgentConfig;
  netConf: NetworkConfig;
  /** --ipv4-only runs a dual-stack net-conf's IPv4 half. */
  ipv4OnlyInDualStack: boolean;
  dataplane: Dataplane;
  /** kube mode: the own Node's annotations. */
  kube: NodePublicIPs | undefined;
  log: Logger;
  signal: AbortSignal;
}

export async function lookupExtIface(opts: LookupOptions): Promise<ExternalInterface> {
  const { config, netConf, dataplane, kube, log, signal } = opts;
  const publicIPs = await publicIPCandidates(config, kube, signal);
  // The Linux peers of an --ipv4-only node in a kube dual-stack cluster need its public IPv6 (below).
  const linuxPeersNeedIPv6 = opts.ipv4OnlyInDualStack && kube !== undefined;
  const adapters = await dataplane.host.interfaces({ ipv6: selectionNeedsIPv6(config.iface, netConf.enableIPv6 || linuxPeersNeedIPv6) });
  const iface = selectExternalInterface(adapters, await dataplane.host.defaultRouteInterfaceIndex(), {
    iface: config.iface,
    ifaceRegex: config.ifaceRegex,
    publicIPs,
  });
  const publicIP = config.publicIP || iface.ipv4;
  if (publicIPs.length > 0 && !publicIPs.includes(iface.ipv4)) {
    log.warn('no interface holds the public IP; using the default route interface', { publicIPs: publicIPs.join(','), interface: iface.name });
  }
  log.info('using interface', { interface: iface.name, index: iface.index, ip: iface.ipv4, mtu: iface.mtu, publicIP });
  checkNetworkExcludesNode(netConf.network, [publicIP, iface.ipv4]);
  const ipv6 = netConf.enableIPv6 ? await publicIPv6(opts, iface) : undefined;
  if (ipv6) checkIPv6NetworkExcludesNode(netConf.ipv6Network, [ipv6.publicIPv6, ipv6.address.address]);
  const ipv4OnlyPublicIPv6 = linuxPeersNeedIPv6 ? await ipv4OnlyIPv6(opts, iface) : undefined;
  return { iface, publicIP, ...(ipv6 ? { ipv6 } : {}), ...(ipv4OnlyPublicIPv6 !== undefined ? { ipv4OnlyPublicIPv6 } : {}) };
}

/**
 * With no --iface/--iface-regex: the public IPs that pick the external interface, in order: --public-ip,
 * then (kube mode) the own Node's public-ip-overwrite and node-public-ip annotations.
 */
async function publicIPCandidates(config: AgentConfig, kube: NodePublicIPs | undefined, signal: AbortSignal): Promise<string[]> {
  if (config.iface.length > 0 || config.ifaceRegex.length > 0) return [];
  const ips = config.publicIP ? [config.publicIP] : [];
  if (kube) ips.push(...(await kube.publicIPs(signal)));
  return ips;
}

/**
 * Dual-stack: the external interface's IPv6 address (--iface or --public-ipv6 name it, else the Node's
 * public-ipv6-overwrite / node-public-ipv6 annotations, else the first stable global one) and the IPv6
 * address to publish (--public-ipv6, else that address).
 */
async function publicIPv6(opts: LookupOptions, iface: HostInterface): Promise<{ address: Ipv6Address; publicIPv6: string }> {
  const { config, kube, log } = opts;
  const annotated = kube && config.iface.length === 0 && config.ifaceRegex.length === 0 ? await kube.publicIPv6s(opts.signal) : [];
  const address = selectIPv6Address(iface, {
    iface: config.iface,
    publicIPv6s: [...(config.publicIPv6 ? [config.publicIPv6] : []), ...annotated],
    ...(config.publicIPv6 ? { assumed: config.publicIPv6 } : {}),
  });
  if (iface.ipv6Addresses === undefined) {
    log.warn("this host does not list the adapter's IPv6 addresses; --public-ipv6 is taken as its address with a /64 on-link prefix", { publicIPv6: config.publicIPv6 });
  }
  const publicIPv6 = config.publicIPv6 ?? address.address;
  log.info('using IPv6 address', { interface: iface.name, ipv6: address.address, prefixLength: address.prefixLength, publicIPv6 });
  return { address, publicIPv6 };
}

/**
 * `--ipv4-only` in a kube dual-stack cluster: the public-ipv6 the Linux nodes need to program this Node at
 * all, found as a dual-stack node's: --public-ipv6, the Node's annotations, else the adapter's address.
 * None is a start-up error naming the fix.
 */
async function ipv4OnlyIPv6(opts: LookupOptions, iface: HostInterface): Promise<string> {
  try {
    return (await publicIPv6(opts, iface)).publicIPv6;
  } catch (err) {
    if (!(err instanceof HostError)) throw err;
    throw new HostError(
      'FLANNEL_ERR_HOST',
      `--ipv4-only in a dual-stack cluster still publishes this node's public-ipv6: Linux flanneld with EnableIPv6 skips a Node without one (its IPv4 routes too); pass --public-ipv6=<this node's IPv6 address> (${err.message})`,
      { ...err.context, reason: 'ipv4-only-no-ipv6' },
      { cause: err },
    );
  }
}

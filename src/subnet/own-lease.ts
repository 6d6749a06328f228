// Checks on the own node's lease before anything is published or programmed: the podCIDR the API
// server assigned and the public IP annotations an operator (or anyone with Node write access) set.
// Upstream flannel checks only that Network contains the podCIDR (pkg/subnet/kube/kube.go
// AcquireLease: "subnet %q specified in the flannel net config doesn't contain %q PodCIDR of the %q
// node"); this agent also refuses what cannot work on Windows:
// - a podCIDR as large as Network or larger: it would claim every peer's subnet;
// - a /31 or /32: no room for the gateway (.1) the CNI and HNS give the pod network plus any pod
//   (flannel's own SubnetLen rule, pkg/subnet/config.go CheckNetworkConfig: "SubnetLen must be less than /31");
// - a public IP that is unspecified (0/8), loopback, link-local, multicast, broadcast or reserved (240/4)
//   (Go net.IP IsUnspecified, IsLoopback, IsLinkLocalUnicast, IsMulticast; the rest are what this
//   agent's peer validation rejects as not unicast): peers could never reach the node there.
// Both subnet managers (kube own-node.ts, etcd lease-keeper.ts) refuse to publish vxlan attributes without
// a VtepMAC (checkPublishableAttrs) and a dual-stack lease whose backend attributes carry no public IPv6
// address (checkDualStackPublicIPv6).
// Pure: throws FLANNEL_ERR_NODE naming the node, FLANNEL_ERR_BACKEND for the backend's attributes.
import { BackendError, KubeError } from '../basics/errors.js';
import { cidrContains, contains, isApipa, isIp4, isUnicast, parseCidr } from '../basics/ip4.js';
import { cidrContains6, isGlobalUnicast6, parseCidr6, parseIp6 } from '../basics/ip6.js';
import { isVxlanBackendData, type LeaseAttrs } from './lease.js';

/** The podCIDR must lie inside Network, be smaller than it, and leave room for a gateway and pods. */
export function checkOwnSubnet(node: string, network: string, podCIDR: string): void {
  const ctx = { node, podCIDR, network };
  if (!cidrContains(network, podCIDR)) {
    throw new KubeError('FLANNEL_ERR_NODE', `subnet "${network}" specified in the flannel net config doesn't contain "${podCIDR}" PodCIDR of the "${node}" node`, ctx);
  }
  const sn = parseCidr(podCIDR)!;
  const net = parseCidr(network)!;
  if (sn.prefix <= net.prefix) {
    throw new KubeError(
      'FLANNEL_ERR_NODE',
      `the podCIDR ${podCIDR} of node "${node}" is as large as the flannel Network ${network} or larger: it would take every peer's subnet; give the node a smaller podCIDR (kube-controller-manager --node-cidr-mask-size) or widen Network`,
      ctx,
    );
  }
  if (sn.prefix >= 31) {
    throw new KubeError(
      'FLANNEL_ERR_NODE',
      `the podCIDR ${podCIDR} of node "${node}" is a /${sn.prefix}: it has no room for the pod gateway and pods; give the node a /30 or larger podCIDR`,
      ctx,
    );
  }
}

/** Why `ip` cannot be a node's public IP, or undefined when it can. */
export function unusablePublicIP(ip: string): string | undefined {
  if (!isIp4(ip)) return undefined;
  if (contains('0.0.0.0/8', ip)) return 'unspecified';
  if (contains('127.0.0.0/8', ip)) return 'loopback';
  if (isApipa(ip)) return 'link-local';
  if (contains('224.0.0.0/4', ip)) return 'multicast';
  if (ip === '255.255.255.255') return 'broadcast';
  // What is left outside unicast is 240/4; peers reject all of these (validate.ts, public-ip-not-unicast).
  if (!isUnicast(ip)) return 'reserved';
  return undefined;
}

/**
 * Public IPs from the node's annotations (`node-public-ip`, `public-ip-overwrite`), keyed by annotation
 * name. Text that is not an IPv4 address is left to the caller (which ignores it with a warning).
 */
export function checkOwnPublicIPs(node: string, annotations: Record<string, string | undefined>): void {
  for (const [annotation, ip] of Object.entries(annotations)) {
    const why = ip === undefined ? undefined : unusablePublicIP(ip);
    if (why) {
      throw new KubeError(
        'FLANNEL_ERR_NODE',
        `annotation ${annotation}=${ip} of node "${node}" is an address peers cannot reach (${why}); set it to the node's routable IPv4 address or remove it`,
        { node, annotation, publicIP: ip },
      );
    }
  }
}

/**
 * The IPv6 podCIDR must lie inside IPv6Network (upstream's message, pkg/subnet/kube/kube.go
 * AcquireLease), be smaller than it, and leave room for the gateway (`::1`), the host endpoint (`::2`)
 * and pods (a /126 at most, upstream's IPv6SubnetLen rule "must be less than /127").
 */
export function checkOwnIPv6Subnet(node: string, ipv6Network: string, podCIDR: string): void {
  const ctx = { node, podCIDR, network: ipv6Network };
  if (!cidrContains6(ipv6Network, podCIDR)) {
    throw new KubeError('FLANNEL_ERR_NODE', `subnet "${ipv6Network}" specified in the flannel net config doesn't contain "${podCIDR}" IPv6 PodCIDR of the "${node}" node`, ctx);
  }
  const sn = parseCidr6(podCIDR)!;
  if (sn.prefix <= parseCidr6(ipv6Network)!.prefix) {
    throw new KubeError(
      'FLANNEL_ERR_NODE',
      `the IPv6 podCIDR ${podCIDR} of node "${node}" is as large as the flannel IPv6Network ${ipv6Network} or larger: it would take every peer's subnet; give the node a smaller one (kube-controller-manager --node-cidr-mask-size-ipv6) or widen IPv6Network`,
      ctx,
    );
  }
  if (sn.prefix >= 127) {
    throw new KubeError(
      'FLANNEL_ERR_NODE',
      `the IPv6 podCIDR ${podCIDR} of node "${node}" is a /${sn.prefix}: it has no room for the pod gateway and pods; give the node a /64`,
      ctx,
    );
  }
}

/** Why `ip` cannot be a node's public IPv6 address (not global unicast: unspecified, loopback, link-local, multicast, v4-mapped), or undefined when it can. */
export function unusablePublicIPv6(ip: string): string | undefined {
  if (parseIp6(ip) === undefined) return 'not an IPv6 address';
  return isGlobalUnicast6(ip) ? undefined : 'not a global or unique-local unicast address';
}

/**
 * The public IPv6 address of a dual-stack lease's attributes; throws FLANNEL_ERR_BACKEND when the backend
 * gave none (or no IPv6 address): peers could not route the IPv6 subnet. `context` names the lease (the
 * kube node, the etcd subnet).
 */
export function checkDualStackPublicIPv6(attrs: Pick<LeaseAttrs, 'publicIPv6'>, context: { node: string } | { subnet: string }): string {
  if (attrs.publicIPv6 === undefined || parseIp6(attrs.publicIPv6) === undefined) {
    throw new BackendError('FLANNEL_ERR_BACKEND', 'refusing to publish a dual-stack lease without a public IPv6 address: peers could not route the IPv6 subnet', context);
  }
  return attrs.publicIPv6;
}

/**
 * Throws FLANNEL_ERR_BACKEND for attributes a vxlan node must not publish: backend-data without a VtepMAC
 * (peers could not decode it). `context` names the lease (the kube node, the etcd subnet or key).
 */
export function checkPublishableAttrs(attrs: LeaseAttrs, context: Record<string, string>): void {
  if (attrs.backendType === 'vxlan' && !(isVxlanBackendData(attrs.backendData) && attrs.backendData.VtepMAC !== '')) {
    throw new BackendError('FLANNEL_ERR_BACKEND', 'refusing to publish vxlan backend-data without a VtepMAC: peers could not decode it', context);
  }
}

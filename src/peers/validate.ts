// Peer lease validation (docs/compatibility.md, How it differs: "Peers are validated"). No upstream counterpart: flannel trusts peer leases;
// this agent never lets a malformed or hostile lease reach the dataplane.
import { isIPv6 } from 'node:net';
import type { Lease } from '../subnet/lease.js';
import { isValidVtepMac } from '../basics/mac.js';
import { DEFAULT_VXLAN_PORT } from '../subnet/net-conf-types.js';
import type { IPv6RejectReason, LeaseRejectReason } from './reject-reasons.js';
import { cidrContains6, contains6, formatCidr6, isGlobalUnicast6, isLinkLocal6, network6, normalizeCidr6, overlaps6, parseCidr6, parseIp6 } from '../basics/ip6.js';
import { contains, formatCidr, isApipa, isUnicast, maskOf, network, normalizeCidr, overlaps, parseCidr, parseIp4 } from '../basics/ip4.js';

export interface LeaseValidationContext {
  /** The cluster Network from net-conf.json, e.g. `10.244.0.0/16`. */
  network: string;
  /** Required prefix length of every lease (kube mode: the own podCIDR's prefix length). */
  subnetLen: number;
  /** The own lease's subnet; peers overlapping it are rejected (the own subnet itself is dropped earlier). */
  ownSubnet?: string;
  backendType: 'vxlan' | 'host-gw';
  /** vxlan: this node's VNI; a peer with another one is rejected (HNS cannot reach it). */
  vni?: number;
  /** This node's own addresses (published public IP, interface IP); a peer claiming one is rejected. */
  ownIPs?: readonly string[];
  /**
   * host-gw: the external interface's on-link prefix (`10.0.0.7/24`). A peer's public IP is the next hop
   * of its route, so it must be a host on this network: Windows refuses a next hop that is not on link
   * (CreateIpForwardEntry2 ERROR_NETWORK_UNREACHABLE), as Linux does (`ip route add ... via`: "Nexthop
   * has invalid gateway", flannel pkg/backend/hostgw's route then fails on every resync).
   */
  nodeNetwork?: string;
  /**
   * Dual-stack only: how a peer's IPv6 half (Lease.ipv6Subnet, Lease.publicIPv6) is checked, by the same
   * rules as the IPv4 one. Without it the IPv6 half is not looked at (an IPv4-only node never gets one).
   */
  ipv6?: Ipv6ValidationContext;
}

export interface Ipv6ValidationContext {
  /** net-conf IPv6Network, e.g. `fd00:42::/56`. */
  network: string;
  /** Required prefix length of every IPv6 lease (the own IPv6 podCIDR's). */
  subnetLen: number;
  ownSubnet?: string;
  /** This node's own IPv6 addresses (published, interface). */
  ownIPs?: readonly string[];
  /** host-gw: the external interface's IPv6 on-link prefix (`fd00:10::7/64`); the peer's next hop must be on it. */
  nodeNetwork?: string;
}

/** An address and the length of its on-link prefix (the external interface's). */
export interface OnLink {
  ip: string;
  prefixLength: number;
}

/** What the peers are judged against: the cluster, the own lease and this node's addresses. */
export interface PeerValidationFacts {
  network: string;
  backendType: 'vxlan' | 'host-gw';
  vni?: number;
  /** The own lease: its subnet is no peer's, and its prefix lengths are every peer's. */
  own: { subnet: string; ipv6Subnet?: string };
  ownIPs: readonly string[];
  /** The external interface (host-gw: a peer's public IP, its next hop, must be on its network). */
  ext?: OnLink;
  /** Dual-stack: the IPv6Network, this node's IPv6 addresses and the external interface's IPv6 prefix. */
  ipv6?: { network: string; ownIPs: readonly string[]; ext?: OnLink };
}

/**
 * The context peers are validated in: the agent's peer store (src/backends/route-network.ts) and
 * `flanneld doctor` (src/commands/doctor-checks.ts) build it here, so both judge a peer alike.
 */
export function peerValidation(f: PeerValidationFacts): LeaseValidationContext {
  const onLink = (x: OnLink | undefined) => (x ? { nodeNetwork: `${x.ip}/${x.prefixLength}` } : {});
  const v6 = f.ipv6;
  return {
    network: f.network,
    subnetLen: Number(f.own.subnet.split('/')[1]),
    ownSubnet: f.own.subnet,
    backendType: f.backendType,
    ...(f.vni !== undefined ? { vni: f.vni } : {}),
    ownIPs: [...new Set(f.ownIPs)],
    ...onLink(f.ext),
    ...(v6 && f.own.ipv6Subnet !== undefined
      ? {
          ipv6: {
            network: v6.network,
            subnetLen: Number(f.own.ipv6Subnet.split('/')[1]),
            ownSubnet: f.own.ipv6Subnet,
            ownIPs: [...new Set(v6.ownIPs)],
            ...onLink(v6.ext),
          },
        }
      : {}),
  };
}

// The reasons live in ./reject-reasons.ts, which the problems ledger (the metric's labels) reads too.

/** Why a lease (or its IPv6 half) is rejected. */
export interface Rejected {
  reason: LeaseRejectReason;
  message: string;
}

/**
 * The verdict on a lease. A dual-stack lease whose IPv4 half is valid is accepted; a bad IPv6 half is
 * rejected alone (`ipv6`): the peer keeps its IPv4 route, as a peer that publishes no IPv6 does.
 */
export type LeaseValidation = { ok: true; ipv6?: IPv6Rejected } | ({ ok: false } & Rejected);

/** Why a dual-stack lease's IPv6 half is rejected (one of IPV6_REJECT_REASONS). */
export interface IPv6Rejected extends Rejected {
  reason: IPv6RejectReason;
}

/** Lowest VNI Windows accepts (HNS reserves lower VSIDs); Linux flanneld defaults to 1. */
export const MIN_WINDOWS_VNI = 4096;
const MAX_VNI = 0xffffff;

/** The most characters of a published value a message quotes: enough to recognise it, not a kilobyte of it. */
const MAX_QUOTED = 64;

/** A published value as a message quotes it: JSON, cut at MAX_QUOTED characters (marked `...`, Latin-1 as the rest). */
function quoted(v: unknown): string {
  const text = JSON.stringify(v) ?? 'undefined';
  return text.length > MAX_QUOTED ? `${text.slice(0, MAX_QUOTED - 3)}...` : text;
}

function reject(reason: LeaseRejectReason, message: string): LeaseValidation {
  return { ok: false, reason, message };
}

export function validateLease(lease: Lease, ctx: LeaseValidationContext): LeaseValidation {
  const sn = parseCidr(lease.subnet);
  if (sn === undefined) {
    if (isIPv6(lease.subnet.split('/')[0] ?? '')) {
      return reject('subnet-ipv6-only', `podCIDR ${lease.subnet} is IPv6 and the node has no IPv4 podCIDR; this agent routes IPv4 only`);
    }
    return reject('subnet-invalid', `subnet ${quoted(lease.subnet)} is not an IPv4 CIDR`);
  }
  if (network(sn).ip !== sn.ip) {
    return reject('subnet-not-network-address', `subnet ${lease.subnet} has host bits set`);
  }
  const net = parseCidr(ctx.network);
  if (net === undefined || sn.prefix < net.prefix || !contains(net, sn.ip)) {
    return reject('subnet-outside-network', `subnet ${lease.subnet} is not inside the cluster network ${ctx.network}`);
  }
  if (sn.prefix !== ctx.subnetLen) {
    return reject('subnet-length', `subnet ${lease.subnet} is not a /${ctx.subnetLen} as configured for this cluster`);
  }
  if (ctx.ownSubnet !== undefined && normalizeCidr(ctx.ownSubnet) === lease.subnet) {
    return reject('subnet-equals-own', `subnet ${lease.subnet} is this node's own subnet`);
  }
  if (ctx.ownSubnet !== undefined && overlaps(sn, ctx.ownSubnet)) {
    return reject('subnet-overlaps-own', `subnet ${lease.subnet} overlaps this node's subnet ${ctx.ownSubnet}`);
  }

  // Before the public IP: a vxlan peer on another network is off link for host-gw, but what is wrong is the
  // cluster's configuration (the agent's cluster-mismatch readiness reads this reason), not the peer's address.
  if (lease.backendType !== ctx.backendType) {
    return reject('backend-type-mismatch', `backend type ${quoted(lease.backendType)} does not match this cluster's ${JSON.stringify(ctx.backendType)}`);
  }

  const pip = parseIp4(lease.publicIP);
  if (pip === undefined) return reject('public-ip-invalid', `public IP ${quoted(lease.publicIP)} is not a dotted IPv4 address`);
  if (!isUnicast(pip)) return reject('public-ip-not-unicast', `public IP ${lease.publicIP} is not a unicast address`);
  if (isApipa(pip)) return reject('public-ip-link-local', `public IP ${lease.publicIP} is link-local (169.254/16): no other node can reach it`);
  if (ctx.ownIPs?.includes(lease.publicIP)) {
    return reject('public-ip-own', `public IP ${lease.publicIP} is this node's own address: routing its subnet there would loop`);
  }
  if (net !== undefined && contains(net, pip)) {
    return reject('public-ip-inside-network', `public IP ${lease.publicIP} lies inside the cluster network ${ctx.network}`);
  }
  const link = ctx.backendType === 'host-gw' && ctx.nodeNetwork !== undefined ? parseCidr(ctx.nodeNetwork) : undefined;
  if (link !== undefined) {
    if (!contains(link, pip)) {
      return reject(
        'public-ip-off-link',
        `public IP ${lease.publicIP} is not on this node's network ${formatCidr(network(link))}: host-gw routes to a peer via its IP as next hop, which must be on link; use vxlan across networks`,
      );
    }
    // /31 and /32 have no broadcast address (RFC 3021).
    if (link.prefix <= 30 && pip === (network(link).ip | ~maskOf(link.prefix)) >>> 0) {
      return reject('public-ip-broadcast', `public IP ${lease.publicIP} is the broadcast address of this node's network ${formatCidr(network(link))}`);
    }
  }

  if (ctx.backendType === 'vxlan') {
    const data = lease.backendData;
    if (typeof data !== 'object' || data === null || Array.isArray(data)) {
      return reject('backend-data-invalid', 'vxlan backend-data is missing or not a JSON object');
    }
    const { VNI: vni, VtepMAC: mac } = data as Record<string, unknown>;
    if (typeof vni !== 'number' || !Number.isInteger(vni) || vni < 0 || vni > MAX_VNI) {
      return reject('vni-invalid', `vxlan VNI ${quoted(vni)} is not an integer 0..${MAX_VNI}`);
    }
    if (vni < MIN_WINDOWS_VNI) {
      return reject(
        'vni-too-low',
        `vxlan VNI ${vni} is below ${MIN_WINDOWS_VNI}, which Windows cannot use; set "VNI": 4096 (and "Port": ${DEFAULT_VXLAN_PORT}) ` +
          'in the Backend section of net-conf.json for every node of the cluster',
      );
    }
    if (ctx.vni !== undefined && vni !== ctx.vni) {
      return reject(
        'vni-mismatch',
        `vxlan VNI ${vni} differs from this node's VNI ${ctx.vni}, so HNS cannot reach it; set the same "VNI" in the Backend section of net-conf.json on every node of the cluster`,
      );
    }
    if (!isValidVtepMac(mac)) {
      return reject('vtep-mac-invalid', `VtepMAC ${quoted(mac)} is not a unicast MAC address (aa:bb:cc:dd:ee:ff)`);
    }
  }
  const ipv6 = ctx.ipv6 !== undefined && (lease.ipv6Subnet !== undefined || lease.publicIPv6 !== undefined) ? validateIPv6Half(lease, ctx.ipv6) : undefined;
  return ipv6 === undefined ? { ok: true } : { ok: true, ipv6 };
}

/**
 * The IPv6 half of a dual-stack peer, checked as the IPv4 half is (same reasons, messages naming IPv6):
 * a network-address CIDR inside IPv6Network of the cluster's IPv6 length, not the own one; a global or
 * unique-local unicast public IPv6 that is not this node's, not inside IPv6Network and (host-gw) on link.
 * Undefined when it passes.
 */
function validateIPv6Half(lease: Lease, ctx: Ipv6ValidationContext): IPv6Rejected | undefined {
  const rejectHalf = (reason: IPv6RejectReason, message: string): IPv6Rejected => ({ reason, message });
  const text = lease.ipv6Subnet ?? '';
  const sn = parseCidr6(text);
  if (sn === undefined) return rejectHalf('subnet-invalid', `IPv6 subnet ${quoted(text)} is not an IPv6 CIDR`);
  if (network6(sn).ip !== sn.ip) return rejectHalf('subnet-not-network-address', `IPv6 subnet ${text} has host bits set`);
  const net = parseCidr6(ctx.network);
  if (net === undefined || !cidrContains6(net, sn)) return rejectHalf('subnet-outside-network', `IPv6 subnet ${text} is not inside the cluster IPv6 network ${ctx.network}`);
  if (sn.prefix !== ctx.subnetLen) return rejectHalf('subnet-length', `IPv6 subnet ${text} is not a /${ctx.subnetLen} as configured for this cluster`);
  if (ctx.ownSubnet !== undefined && overlaps6(sn, ctx.ownSubnet)) {
    return rejectHalf(
      normalizeCidr6(ctx.ownSubnet) === text ? 'subnet-equals-own' : 'subnet-overlaps-own',
      `IPv6 subnet ${text} overlaps this node's IPv6 subnet ${ctx.ownSubnet}`,
    );
  }
  const ip = lease.publicIPv6 ?? '';
  const pip = parseIp6(ip);
  if (pip === undefined) return rejectHalf('public-ip-invalid', `public IPv6 ${quoted(ip)} is not an IPv6 address`);
  if (isLinkLocal6(pip)) return rejectHalf('public-ip-link-local', `public IPv6 ${ip} is link-local (fe80::/10): no other node can reach it`);
  if (!isGlobalUnicast6(pip)) return rejectHalf('public-ip-not-unicast', `public IPv6 ${ip} is not a global or unique-local unicast address`);
  if (ctx.ownIPs?.some((own) => parseIp6(own) === pip)) {
    return rejectHalf('public-ip-own', `public IPv6 ${ip} is this node's own address: routing its subnet there would loop`);
  }
  if (contains6(net, pip)) return rejectHalf('public-ip-inside-network', `public IPv6 ${ip} lies inside the cluster IPv6 network ${ctx.network}`);
  const link = ctx.nodeNetwork !== undefined ? parseCidr6(ctx.nodeNetwork) : undefined;
  if (link !== undefined && !contains6(link, pip)) {
    return rejectHalf(
      'public-ip-off-link',
      `public IPv6 ${ip} is not on this node's IPv6 network ${formatCidr6(network6(link))}: host-gw routes to a peer via its IP as next hop, which must be on link`,
    );
  }
  return undefined;
}

// Picking a free subnet and checking an existing one against the config. Mirrors flannel
// pkg/subnet/etcd/local_manager.go (allocateSubnet: a random one of the first 100 free candidates
// between SubnetMin and SubnetMax, and with EnableIPv6 a random one of the first 100 free IPv6
// candidates between IPv6SubnetMin and IPv6SubnetMax; isSubnetConfigCompat, isIPv6SubnetConfigCompat).
import type { Random } from '../../basics/clock.js';
import { formatCidr, overlaps, parseCidr, parseIp4, sizeOf } from '../../basics/ip4.js';
import { cidrContains6, formatCidr6, overlaps6, parseCidr6, parseIp6 } from '../../basics/ip6.js';

export interface SubnetRange {
  /** Dotted network address of the first / last allocatable subnet. */
  subnetMin: string;
  subnetMax: string;
  subnetLen: number;
}

const MAX_CANDIDATES = 100;

/** True when `subnet` (CIDR) lies between SubnetMin and SubnetMax and has the SubnetLen prefix. */
export function isSubnetConfigCompat(range: SubnetRange, subnet: string): boolean {
  const n = parseCidr(subnet);
  const min = parseIp4(range.subnetMin);
  const max = parseIp4(range.subnetMax);
  if (n === undefined || min === undefined || max === undefined) return false;
  return n.ip >= min && n.ip <= max && n.prefix === range.subnetLen;
}

/**
 * True for a lease key wider than SubnetLen (e.g. `10.5.0.0-16`, `0.0.0.0-0`): no flanneld writes one
 * (every lease has exactly SubnetLen), yet one such key overlaps every candidate and would leave every
 * new node "out of subnets". Upstream's allocateSubnet skips candidates that Overlap any lease
 * (pkg/ip/ipnet.go IP4Net.Overlaps), so it does stall on such a key; only its previous-subnet check
 * compares exactly (local_manager.go findLeaseBySubnet, IP4Net.Equal). This agent leaves those keys
 * out of the allocation. Narrower keys still hold what they overlap.
 */
export function widerThanSubnetLen(range: Pick<SubnetRange, 'subnetLen'>, subnet: string): boolean {
  const n = parseCidr(subnet);
  return n !== undefined && n.prefix < range.subnetLen;
}

/**
 * A random free subnet among the first MAX_CANDIDATES that overlap none of `taken`; undefined when
 * none is free (the caller reports `out of subnets`).
 */
export function allocateSubnet(range: SubnetRange, taken: readonly string[], random: Random): string | undefined {
  const min = parseIp4(range.subnetMin);
  const max = parseIp4(range.subnetMax);
  if (min === undefined || max === undefined) return undefined;
  const step = sizeOf(range.subnetLen);
  const takenNets = taken.map((t) => parseCidr(t)).filter((n) => n !== undefined);
  const candidates: string[] = [];
  for (let ip = min; ip <= max && candidates.length < MAX_CANDIDATES; ip += step) {
    const sn = { ip, prefix: range.subnetLen };
    if (takenNets.some((t) => overlaps(sn, t))) continue;
    candidates.push(formatCidr(sn));
  }
  if (candidates.length === 0) return undefined;
  return candidates[Math.min(candidates.length - 1, Math.floor(random() * candidates.length))];
}

/** The IPv6 half of the range (NetworkConfig's fields; Min/Max set when EnableIPv6). */
export interface IPv6SubnetRange {
  enableIPv6: boolean;
  ipv6Network: string;
  ipv6SubnetMin?: string;
  ipv6SubnetMax?: string;
  ipv6SubnetLen: number;
}

/**
 * True for a lease key's IPv6 half that is not a subnet of IPv6Network of at least IPv6SubnetLen bits
 * (`::-0`, `fc00::-48` of fc00::/48, or outside IPv6Network). No flanneld of this network writes one, yet
 * a wide one overlaps every IPv6 candidate: upstream's allocateSubnet skips every candidate overlapping a
 * key's IPv6 half (pkg/subnet/etcd/local_manager.go, IP6Net.Overlaps), so one such key leaves every new
 * dual-stack node "out of subnets". As the peer validator (src/peers/validate.ts) rejects such an IPv6
 * half for routes, this agent leaves it out of the allocation; the key's IPv4 half still holds its subnet.
 */
export function ipv6HalfOutsideNetwork(range: Pick<IPv6SubnetRange, 'ipv6Network' | 'ipv6SubnetLen'>, subnet6: string): boolean {
  const n = parseCidr6(subnet6);
  return n === undefined || n.prefix < range.ipv6SubnetLen || !cidrContains6(range.ipv6Network, n);
}

/**
 * upstream isIPv6SubnetConfigCompat: without EnableIPv6 a lease must have no IPv6 subnet; with it, one
 * between IPv6SubnetMin and IPv6SubnetMax of IPv6SubnetLen.
 */
export function isIPv6SubnetConfigCompat(range: IPv6SubnetRange, subnet6: string | undefined): boolean {
  if (!range.enableIPv6) return subnet6 === undefined;
  const n = subnet6 === undefined ? undefined : parseCidr6(subnet6);
  const min = range.ipv6SubnetMin === undefined ? undefined : parseIp6(range.ipv6SubnetMin);
  const max = range.ipv6SubnetMax === undefined ? undefined : parseIp6(range.ipv6SubnetMax);
  if (n === undefined || min === undefined || max === undefined) return false;
  return n.ip >= min && n.ip <= max && n.prefix === range.ipv6SubnetLen;
}

/**
 * A random free IPv6 subnet among the first MAX_CANDIDATES from IPv6SubnetMin that overlap none of
 * `taken` (the leases' IPv6 halves); undefined when none is free or IPv6 is off.
 */
export function allocateIPv6Subnet(range: IPv6SubnetRange, taken: readonly string[], random: Random): string | undefined {
  const min = range.ipv6SubnetMin === undefined ? undefined : parseIp6(range.ipv6SubnetMin);
  const max = range.ipv6SubnetMax === undefined ? undefined : parseIp6(range.ipv6SubnetMax);
  if (!range.enableIPv6 || min === undefined || max === undefined) return undefined;
  const step = 1n << BigInt(128 - range.ipv6SubnetLen);
  const takenNets = taken.map((t) => parseCidr6(t)).filter((n) => n !== undefined);
  const candidates: string[] = [];
  for (let ip = min; ip <= max && candidates.length < MAX_CANDIDATES; ip += step) {
    const sn = { ip, prefix: range.ipv6SubnetLen };
    if (takenNets.some((t) => overlaps6(sn, t))) continue;
    candidates.push(formatCidr6(sn));
  }
  if (candidates.length === 0) return undefined;
  return candidates[Math.min(candidates.length - 1, Math.floor(random() * candidates.length))];
}

// Picking a free subnet and checking an existing one against the config. Mirrors flannel
// pkg/subnet/etcd/local_manager.go (allocateSubnet: a random one of the first 100 free candidates
// between SubnetMin and SubnetMax; isSubnetConfigCompat).
import type { Random } from '../../clock.js';
import { formatCidr, overlaps, parseCidr, parseIp4, sizeOf } from '../../ip4.js';

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

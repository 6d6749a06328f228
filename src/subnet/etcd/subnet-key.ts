// etcd lease keys: `<prefix>/subnets/10.5.52.0-24` (dual stack `10.5.52.0-24&fd00:12:13::-56`).
// Mirrors flannel pkg/subnet/subnet.go (MakeSubnetKey, ParseSubnetKey), IPv4 only on the write side.
import { formatCidr, network, parseCidr } from '../../basics/ip4.js';
import { formatCidr6, network6, parseCidr6 } from '../../basics/ip6.js';

const KEY = /^(\d{1,3}(?:\.\d{1,3}){3})-(\d{1,2})(?:&([0-9a-f:]+)-(\d{1,3}))?$/;

/**
 * `10.5.52.0/24` -> `10.5.52.0-24`; with an IPv6 subnet `10.5.52.0-24&fd00:12:13::-56` (upstream
 * MakeSubnetKey: `sn.StringSep(".", "-") + "&" + sn6.StringSep(":", "-")`). Undefined when a CIDR is malformed.
 */
export function makeSubnetKey(cidr: string, ipv6Cidr?: string): string | undefined {
  const n = parseCidr(cidr);
  if (n === undefined) return undefined;
  const v4 = formatCidr(network(n)).replace('/', '-');
  if (ipv6Cidr === undefined) return v4;
  const n6 = parseCidr6(ipv6Cidr);
  return n6 === undefined ? undefined : `${v4}&${formatCidr6(network6(n6)).replace('/', '-')}`;
}

export interface ParsedSubnetKey {
  /** IPv4 subnet in CIDR notation, network address form. */
  subnet: string;
  /** The IPv6 half of a dual-stack key, as written (`fd00:12:13::/56`); not used on Windows. */
  ipv6Subnet?: string;
}

/**
 * Parse the last path element of a lease key. Unlike upstream's unanchored regexp this rejects
 * anything that is not exactly a subnet key (and host bits set), so stray keys are skipped, not misread.
 */
export function parseSubnetKey(name: string): ParsedSubnetKey | undefined {
  const m = KEY.exec(name);
  if (!m) return undefined;
  const n = parseCidr(`${m[1]}/${m[2]}`);
  if (n === undefined || network(n).ip !== n.ip) return undefined;
  const out: ParsedSubnetKey = { subnet: formatCidr(n) };
  if (m[3] !== undefined && m[4] !== undefined) {
    if (Number(m[4]) > 128) return undefined;
    out.ipv6Subnet = `${m[3]}/${m[4]}`;
  }
  return out;
}

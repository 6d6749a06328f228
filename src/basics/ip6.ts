// Small pure IPv6 helpers. Mirrors the parts of flannel pkg/ip/ip6net.go (IP6, IP6Net) the agent needs:
// addresses are unsigned 128-bit bigints, networks are { ip, prefix }; text is printed as Go's
// net.IP.String prints IPv6 (RFC 5952: lower case, the longest run of two or more zero groups as `::`).
import { isIPv6 } from 'node:net';

/** An address family as iphlpapi's calls take it: AF_INET (`ipv4`) or AF_INET6 (`ipv6`). */
export type IpFamily = 'ipv4' | 'ipv6';

export interface Ip6Net {
  /** Address as an unsigned 128-bit value (as given; see `network6()` for the masked form). */
  ip: bigint;
  /** Prefix length 0..128. */
  prefix: number;
}

const ALL = (1n << 128n) - 1n;

/** Parse an IPv6 address (no zone, no brackets; an embedded dotted IPv4 tail is allowed) to a bigint. */
export function parseIp6(text: string): bigint | undefined {
  if (typeof text !== 'string' || text.length > 45 || !isIPv6(text) || text.includes('%')) return undefined;
  let s = text.toLowerCase();
  const dot = s.lastIndexOf(':');
  const tail = s.slice(dot + 1);
  if (tail.includes('.')) {
    const o = tail.split('.').map(Number);
    s = `${s.slice(0, dot + 1)}${((o[0] << 8) | o[1]).toString(16)}:${((o[2] << 8) | o[3]).toString(16)}`;
  }
  const [head, rest] = s.split('::') as [string, string | undefined];
  const left = head === '' ? [] : head.split(':');
  const right = rest === undefined || rest === '' ? [] : rest.split(':');
  const groups = rest === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  if (groups.length !== 8) return undefined;
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n);
}

/** RFC 5952 text of a 128-bit value (as Go's net.IP.String prints an IPv6 address). */
export function formatIp6(v: bigint): string {
  const groups: number[] = [];
  for (let i = 7; i >= 0; i--) groups.push(Number((v >> BigInt(i * 16)) & 0xffffn));
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

/** Netmask for a prefix length (`/0` -> 0). */
export function maskOf6(prefix: number): bigint {
  return prefix <= 0 ? 0n : (ALL << BigInt(128 - prefix)) & ALL;
}

/** Parse `ipv6/n` strictly (n 0..128, no leading zeros). Host bits may be set. `undefined` when malformed. */
export function parseCidr6(text: string): Ip6Net | undefined {
  if (typeof text !== 'string') return undefined;
  const slash = text.indexOf('/');
  if (slash < 0 || slash !== text.lastIndexOf('/')) return undefined;
  const ip = parseIp6(text.slice(0, slash));
  const p = text.slice(slash + 1);
  if (ip === undefined || !/^(0|[1-9]\d{0,2})$/.test(p) || Number(p) > 128) return undefined;
  return { ip, prefix: Number(p) };
}

/** The network with host bits cleared. */
export function network6(n: Ip6Net): Ip6Net {
  return { ip: n.ip & maskOf6(n.prefix), prefix: n.prefix };
}

export function formatCidr6(n: Ip6Net): string {
  return `${formatIp6(n.ip)}/${n.prefix}`;
}

/** Canonical `network/prefix` text of an IPv6 CIDR (host bits masked); `undefined` when malformed. */
export function normalizeCidr6(text: string): string | undefined {
  const n = parseCidr6(text);
  return n === undefined ? undefined : formatCidr6(network6(n));
}

function toNet(c: string | Ip6Net): Ip6Net | undefined {
  return typeof c === 'string' ? parseCidr6(c) : c;
}

/** Does `cidr` contain the address `ip`? False for malformed input. */
export function contains6(cidr: string | Ip6Net, ip: string | bigint): boolean {
  const n = toNet(cidr);
  const a = typeof ip === 'bigint' ? ip : parseIp6(ip);
  if (n === undefined || a === undefined) return false;
  const m = maskOf6(n.prefix);
  return (a & m) === (n.ip & m);
}

/** Does `outer` contain all of `inner`? False for malformed input. */
export function cidrContains6(outer: string | Ip6Net, inner: string | Ip6Net): boolean {
  const o = toNet(outer);
  const i = toNet(inner);
  return o !== undefined && i !== undefined && i.prefix >= o.prefix && contains6(o, i.ip);
}

/** Do the two networks share any address? False for malformed input. */
export function overlaps6(a: string | Ip6Net, b: string | Ip6Net): boolean {
  const x = toNet(a);
  const y = toNet(b);
  if (x === undefined || y === undefined) return false;
  const m = maskOf6(Math.min(x.prefix, y.prefix));
  return (x.ip & m) === (y.ip & m);
}

/** fe80::/10, which every adapter has and no other link can reach. */
export function isLinkLocal6(ip: string | bigint): boolean {
  return contains6({ ip: 0xfe80n << 112n, prefix: 10 }, ip);
}

/**
 * A global unicast address another node can route to (Go's net.IP.IsGlobalUnicast for IPv6, which
 * counts ULA fc00::/7 in): not `::`, not loopback `::1`, not multicast ff00::/8, not link-local
 * fe80::/10, and not an IPv4-mapped `::ffff:a.b.c.d`.
 */
export function isGlobalUnicast6(ip: string | bigint): boolean {
  const a = typeof ip === 'bigint' ? ip : parseIp6(ip);
  if (a === undefined || a === 0n || a === 1n) return false;
  if (a >> 120n === 0xffn) return false;
  if (isLinkLocal6(a)) return false;
  return !contains6({ ip: 0xffffn << 32n, prefix: 96 }, a);
}

/** The `n`th address of the network (0 = the network address) as text; RangeError outside it. */
export function nthAddress6(cidr: string | Ip6Net, n: bigint | number): string {
  const net = toNet(cidr);
  if (net === undefined) throw new RangeError(`invalid IPv6 CIDR: ${cidr as string}`);
  const k = BigInt(n);
  const size = 1n << BigInt(128 - net.prefix);
  if (k < 0n || k >= size) throw new RangeError(`address #${k} is outside ${formatCidr6(network6(net))}`);
  return formatIp6(network6(net).ip + k);
}

// Small pure IPv4 helpers. Mirrors the parts of flannel pkg/ip/ipnet.go (IP4, IP4Net) the agent needs:
// addresses are unsigned 32-bit numbers, networks are { ip, prefix } with host bits masked.

export interface Ip4Net {
  /** Address as an unsigned 32-bit number (as given; see `network()` for the masked form). */
  ip: number;
  /** Prefix length 0..32. */
  prefix: number;
}

/** Strict dotted-quad check: four decimal octets 0..255, no leading zeros, no spaces. */
export function isIp4(text: string): boolean {
  return parseIp4(text) !== undefined;
}

/**
 * Parse a dotted IPv4 address to an unsigned number; `undefined` when invalid (what isIPv4 of node:net
 * accepts, less octets with a leading zero). One scan of the characters: it runs for every address of
 * every Node event, and a regex and a split cost a profile's visible share of a status storm.
 */
export function parseIp4(text: string): number | undefined {
  if (typeof text !== 'string' || text.length < 7 || text.length > 15) return undefined;
  let ip = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || ++dots > 3) return undefined;
      ip = ip * 256 + octet;
      octet = 0;
      digits = 0;
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && octet === 0) return undefined; // a leading zero
      octet = octet * 10 + (c - 48);
      if (++digits > 3 || octet > 255) return undefined;
    } else return undefined;
  }
  return dots === 3 && digits > 0 ? ip * 256 + octet : undefined;
}

/** The four octets of an address, most significant first; `undefined` when invalid. */
export function octets(ip: string | number): [number, number, number, number] | undefined {
  const a = toIp(ip);
  return a === undefined ? undefined : [a >>> 24, (a >>> 16) & 255, (a >>> 8) & 255, a & 255];
}

export function formatIp4(ip: number): string {
  const n = ip >>> 0;
  return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

/** Netmask for a prefix length as an unsigned number (`/0` -> 0). */
export function maskOf(prefix: number): number {
  return prefix <= 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

/**
 * Parse `a.b.c.d/n` strictly. Host bits may be set (use `isNetworkCidr` to require they are not).
 * `undefined` when malformed.
 */
export function parseCidr(text: string): Ip4Net | undefined {
  if (typeof text !== 'string') return undefined;
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const ip = parseIp4(text.slice(0, slash));
  // The prefix: one or two decimal digits without a leading zero (a second slash is no digit).
  const len = text.length - slash - 1;
  const d0 = text.charCodeAt(slash + 1) - 48;
  const d1 = len === 2 ? text.charCodeAt(slash + 2) - 48 : 0;
  if (ip === undefined || len < 1 || len > 2 || !(d0 >= 0 && d0 <= 9) || !(d1 >= 0 && d1 <= 9) || (len === 2 && d0 === 0)) return undefined;
  const prefix = len === 2 ? d0 * 10 + d1 : d0;
  if (prefix > 32) return undefined;
  return { ip, prefix };
}

/** The network with host bits cleared. */
export function network(net: Ip4Net): Ip4Net {
  return { ip: (net.ip & maskOf(net.prefix)) >>> 0, prefix: net.prefix };
}

/** True when `text` is a CIDR whose host bits are all zero (e.g. `10.244.3.0/24`). */
export function isNetworkCidr(text: string): boolean {
  const n = parseCidr(text);
  return n !== undefined && network(n).ip === n.ip;
}

export function formatCidr(net: Ip4Net): string {
  return `${formatIp4(net.ip)}/${net.prefix}`;
}

/** Canonical `network/prefix` string of a CIDR (host bits masked); `undefined` when malformed. */
export function normalizeCidr(text: string): string | undefined {
  const n = parseCidr(text);
  return n === undefined ? undefined : formatCidr(network(n));
}

function toNet(cidr: string | Ip4Net): Ip4Net | undefined {
  return typeof cidr === 'string' ? parseCidr(cidr) : cidr;
}

function toIp(ip: string | number): number | undefined {
  return typeof ip === 'number' ? ip >>> 0 : parseIp4(ip);
}

/** Does `cidr` contain address `ip`? False for malformed input. */
export function contains(cidr: string | Ip4Net, ip: string | number): boolean {
  const n = toNet(cidr);
  const a = toIp(ip);
  if (n === undefined || a === undefined) return false;
  const m = maskOf(n.prefix);
  return (a & m) >>> 0 === (n.ip & m) >>> 0;
}

/** Does `outer` contain all of `inner`? False for malformed input. */
export function cidrContains(outer: string | Ip4Net, inner: string | Ip4Net): boolean {
  const o = toNet(outer);
  const i = toNet(inner);
  if (o === undefined || i === undefined) return false;
  return i.prefix >= o.prefix && contains(o, i.ip);
}

/** Do the two networks share any address? False for malformed input. */
export function overlaps(a: string | Ip4Net, b: string | Ip4Net): boolean {
  const x = toNet(a);
  const y = toNet(b);
  if (x === undefined || y === undefined) return false;
  const p = Math.min(x.prefix, y.prefix);
  const m = maskOf(p);
  return (x.ip & m) >>> 0 === (y.ip & m) >>> 0;
}

/**
 * A usable unicast host address: not 0.0.0.0/8 ("this network"), not loopback 127/8, not multicast
 * 224/4, not reserved 240/4 (which includes the limited broadcast 255.255.255.255).
 */
export function isUnicast(ip: string | number): boolean {
  const a = toIp(ip);
  if (a === undefined) return false;
  const first = a >>> 24;
  return first !== 0 && first !== 127 && first < 224;
}

/** Link-local (APIPA) 169.254/16, which Windows assigns when DHCP fails. */
export function isApipa(ip: string | number): boolean {
  return contains({ ip: 0xa9fe0000, prefix: 16 }, ip);
}

/**
 * The `n`th address of the network (0 = the network address, 1 = the first host ...), as dotted text.
 * Throws RangeError when `n` falls outside the network.
 */
export function nthAddress(cidr: string | Ip4Net, n: number): string {
  const net = toNet(cidr);
  if (net === undefined) throw new RangeError(`invalid IPv4 CIDR: ${cidr as string}`); // an Ip4Net always converts
  const size = 2 ** (32 - net.prefix);
  if (!Number.isInteger(n) || n < 0 || n >= size) throw new RangeError(`address #${n} is outside ${formatCidr(network(net))}`);
  return formatIp4(network(net).ip + n);
}

/** Number of addresses in a network of this prefix length. */
export function sizeOf(prefix: number): number {
  return 2 ** (32 - prefix);
}

/**
 * The host addresses of a network as dotted text: everything but the network and broadcast addresses
 * (a /31 yields both of its addresses, a /32 its one). Throws RangeError for malformed input or
 * networks larger than a /16, which no lease should be.
 */
export function hostAddresses(cidr: string | Ip4Net): string[] {
  const net = toNet(cidr);
  if (net === undefined) throw new RangeError(`invalid IPv4 CIDR: ${cidr as string}`); // an Ip4Net always converts
  if (net.prefix < 16) throw new RangeError(`refusing to enumerate ${formatCidr(network(net))}: larger than a /16`);
  const base = network(net).ip;
  const size = sizeOf(net.prefix);
  if (size <= 2) return Array.from({ length: size }, (_, i) => formatIp4(base + i));
  return Array.from({ length: size - 2 }, (_, i) => formatIp4(base + 1 + i));
}

// Picks the external interface, as flannel main.go + pkg/ipmatch (LookupExtIface) do: each `--iface`
// (an IP or an adapter name) in order, first match wins; then each `--iface-regex`, tried against the
// IPs, then the names; with neither flag, the interface holding the public IP (`--public-ip`, else the
// own Node's public-ip annotations), else the interface of the default route (lowest metric). Pure.
// Unlike upstream, a public IP no interface holds (a NAT address) falls back to the default route.
// Windows rule: an APIPA address (169.254/16) is never chosen (a NIC that lost DHCP/static config).
import { isIPv4, isIPv6 } from 'node:net';
import { FlagError, HostError } from '../basics/errors.js';
import type { HostInterface, Ipv6Address } from './host.js';
import { isApipa } from '../basics/ip4.js';
import { isGlobalUnicast6, parseIp6 } from '../basics/ip6.js';

export interface SelectOptions {
  /** `--iface` values: IPv4 addresses or adapter names (names may contain spaces). */
  iface: string[];
  /** `--iface-regex` values. */
  ifaceRegex: string[];
  /** With neither: public IPs in order of preference; the first one an interface holds picks it. */
  publicIPs?: string[];
}

/**
 * Whether picking the interface needs the adapters' IPv6 addresses (Host.interfaces({ ipv6: true })):
 * dual-stack picks one (selectIPv6Address), and an IPv6 `--iface` names the adapter by one.
 */
export function selectionNeedsIPv6(iface: readonly string[], dualStack: boolean): boolean {
  return dualStack || iface.some((v) => isIPv6(v));
}

/** The usable interface with exactly this IPv4 address. */
export function findInterfaceByIP(ifaces: HostInterface[], ip: string): HostInterface | undefined {
  return ifaces.find((i) => i.ipv4 === ip);
}

function findByName(ifaces: HostInterface[], name: string): HostInterface | undefined {
  // Windows adapter names are case-insensitive; an exact match wins over a case-folded one.
  return ifaces.find((i) => i.name === name) ?? ifaces.find((i) => i.name.toLowerCase() === name.toLowerCase());
}

function compile(pattern: string): RegExp {
  try {
    return new RegExp(pattern);
  } catch (err) {
    throw new FlagError('FLANNEL_ERR_FLAG', `--iface-regex ${JSON.stringify(pattern)} is not a valid regular expression: ${(err as Error).message}`, {
      flag: 'iface-regex',
      value: pattern,
    });
  }
}

function describe(ifaces: HostInterface[]): string {
  return ifaces.length ? ifaces.map((i) => `"${i.name}" (index ${i.index}, ${i.ipv4 || 'no IPv4'})`).join(', ') : 'none';
}

/**
 * Choose the external interface. Throws FLANNEL_ERR_HOST naming the adapters seen when nothing
 * matches (given `--iface`/`--iface-regex` values never fall back to the default route, as upstream).
 */
export function selectExternalInterface(ifaces: HostInterface[], defaultRouteIndex: number | undefined, opts: SelectOptions): HostInterface {
  const usable = ifaces.filter((i) => i.ipv4 !== '' && !isApipa(i.ipv4));
  const regexes = opts.ifaceRegex.map(compile);

  if (opts.iface.length === 0 && regexes.length === 0) {
    const byPublicIP = (opts.publicIPs ?? []).map((ip) => findInterfaceByIP(usable, ip)).find((i) => i !== undefined);
    if (byPublicIP) return byPublicIP;
    const byRoute = usable.find((i) => i.index === defaultRouteIndex);
    if (byRoute) return byRoute;
    const why =
      defaultRouteIndex === undefined
        ? 'there is no default route'
        : ifaces.some((i) => i.index === defaultRouteIndex)
          ? `the default route's interface (index ${defaultRouteIndex}) has no usable IPv4 address (APIPA 169.254/16 is never used)`
          : `the default route's interface (index ${defaultRouteIndex}) is not among the adapters`;
    throw new HostError('FLANNEL_ERR_HOST', `cannot pick the external interface: ${why}; adapters seen: ${describe(ifaces)}. Pass --iface <IP or adapter name>`, {
      defaultRouteIndex,
      adapters: ifaces.map((i) => i.name).join(', '),
    });
  }

  for (const want of opts.iface) {
    const hit = isIPv4(want)
      ? findInterfaceByIP(usable, want)
      : isIPv6(want)
        ? usable.find((i) => i.ipv6Addresses?.some((a) => parseIp6(a.address) === parseIp6(want)))
        : findByName(usable, want);
    if (hit) return hit;
  }
  for (const re of regexes) {
    const byIp = usable.find((i) => re.test(i.ipv4));
    if (byIp) return byIp;
    const byName = usable.find((i) => re.test(i.name));
    if (byName) return byName;
  }
  const given = [...opts.iface.map((v) => `--iface ${JSON.stringify(v)}`), ...opts.ifaceRegex.map((v) => `--iface-regex ${JSON.stringify(v)}`)].join(', ');
  throw new HostError(
    'FLANNEL_ERR_HOST',
    `no interface matches ${given} (APIPA 169.254/16 addresses are never used); adapters seen: ${describe(ifaces)}. Fix --iface (an IP or adapter name) or --iface-regex`,
    { iface: opts.iface.join(','), ifaceRegex: opts.ifaceRegex.join(','), adapters: ifaces.map((i) => i.name).join(', ') },
  );
}

export interface SelectIPv6Options {
  /** `--public-ipv6`, else the own Node's public-ipv6-overwrite / node-public-ipv6 annotations (first that the interface holds wins). */
  publicIPv6s?: string[];
  /** `--iface` values: an IPv6 address among them picks that address. */
  iface?: string[];
  /**
   * `--public-ipv6`, taken as the interface's address (a /64) when the host does not list IPv6 addresses
   * at all (`ipv6Addresses` undefined: the Windows host seam's GetUnicastIpAddressTable read failed).
   */
  assumed?: string;
}

/**
 * The external interface's IPv6 address for a dual-stack node: an address given by `--iface` or
 * `--public-ipv6` (or the Node's annotations) when the interface holds it, else the first global or
 * unique-local unicast address that is neither temporary (a privacy address changes daily: flannel#2081)
 * nor deprecated. Link-local fe80::/10 is never chosen (no other node can route to it). As upstream's
 * ipmatch.LookupExtIface, the IPv6 address is on the same interface as the IPv4 one. Throws
 * FLANNEL_ERR_HOST when there is none, naming the addresses seen.
 */
export function selectIPv6Address(iface: HostInterface, opts: SelectIPv6Options = {}): Ipv6Address {
  if (iface.ipv6Addresses === undefined && opts.assumed !== undefined && isGlobalUnicast6(opts.assumed)) return { address: opts.assumed, prefixLength: 64 };
  const all = iface.ipv6Addresses ?? [];
  const usable = all.filter((a) => isGlobalUnicast6(a.address) && !a.deprecated);
  const held = (ip: string) => usable.find((a) => parseIp6(a.address) === parseIp6(ip));
  for (const want of [...(opts.iface ?? []).filter((v) => isIPv6(v)), ...(opts.publicIPv6s ?? [])]) {
    const hit = held(want);
    if (hit) return hit;
  }
  const explicit = (opts.iface ?? []).filter((v) => isIPv6(v));
  if (explicit.length > 0) {
    throw new HostError(
      'FLANNEL_ERR_HOST',
      `interface "${iface.name}" holds no IPv6 address ${explicit.join(', ')}; adapters' IPv6 addresses seen: ${describe6(all)}. Fix --iface`,
      {
        interface: iface.name,
        iface: explicit.join(','),
      },
    );
  }
  const chosen = usable.find((a) => !a.temporary);
  if (chosen) return chosen;
  throw new HostError(
    'FLANNEL_ERR_HOST',
    `interface "${iface.name}" has no global or unique-local IPv6 address that is not temporary (seen: ${describe6(all)}); dual-stack needs one: give the adapter a static or SLAAC address, or remove EnableIPv6`,
    { interface: iface.name, reason: 'no-ipv6-address' },
  );
}

function describe6(list: Ipv6Address[]): string {
  return list.length ? list.map((a) => `${a.address}/${a.prefixLength}${a.temporary ? ' (temporary)' : ''}${a.deprecated ? ' (deprecated)' : ''}`).join(', ') : 'none';
}

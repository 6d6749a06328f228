// Picks the external interface, as flannel main.go + pkg/ipmatch (LookupExtIface) do: each `--iface`
// (an IP or an adapter name) in order, first match wins; then each `--iface-regex`, tried against the
// IPs, then the names; with neither flag, the interface holding the public IP (`--public-ip`, else the
// own Node's public-ip annotations), else the interface of the default route (lowest metric). Pure.
// Unlike upstream, a public IP no interface holds (a NAT address) falls back to the default route.
// Windows rule: an APIPA address (169.254/16) is never chosen (a NIC that lost DHCP/static config).
import { isIPv4 } from 'node:net';
import { FlagError, HostError } from '../errors.js';
import type { HostInterface } from './host.js';
import { isApipa } from '../ip4.js';

export interface SelectOptions {
  /** `--iface` values: IPv4 addresses or adapter names (names may contain spaces). */
  iface: string[];
  /** `--iface-regex` values. */
  ifaceRegex: string[];
  /** With neither: public IPs in order of preference; the first one an interface holds picks it. */
  publicIPs?: string[];
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
    const hit = isIPv4(want) ? findInterfaceByIP(usable, want) : findByName(usable, want);
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

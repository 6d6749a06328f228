// The host seam: network adapters (address, MTU, MAC), the default route's interface, forwarding.
// win32 = iphlpapi, plus os.networkInterfaces() for a MAC (src/host/win32-host.ts); simulated = the adapters
// of the simulated node (src/simulator/host.ts).

import type { IpFamily } from '../basics/ip6.js';
export type { IpFamily } from '../basics/ip6.js';

export interface HostInterface {
  /** Adapter friendly name, e.g. `Ethernet` or `vEthernet (Ethernet)`. */
  name: string;
  index: number;
  /** Dotted IPv4 address. */
  ipv4: string;
  prefixLength: number;
  mtu: number;
  /**
   * The adapter's IPv6 unicast addresses, in the order the host lists them, when asked for
   * (`interfaces({ ipv6: true })`); absent when not asked, or when the host could not read them (e.g.
   * GetUnicastIpAddressTable failed; the simulator omits it for an adapter without one). Only dual-stack and
   * an IPv6 --iface read them (./select.ts selectIPv6Address, selectExternalInterface).
   */
  ipv6Addresses?: Ipv6Address[];
}

/** One IPv6 unicast address of an adapter (MIB_UNICASTIPADDRESS_ROW). */
export interface Ipv6Address {
  address: string;
  prefixLength: number;
  /**
   * A temporary (privacy) address, RFC 8981: SuffixOrigin IpSuffixOriginRandom with PrefixOrigin
   * IpPrefixOriginRouterAdvertisement on Windows. It changes daily, so it is never published (flannel#2081).
   */
  temporary?: boolean;
  /** DadState IpDadStateDeprecated: being phased out, never chosen. */
  deprecated?: boolean;
}

/**
 * Where a setting came from, as Windows records it: an address's NL_PREFIX_ORIGIN (IpPrefixOriginManual,
 * IpPrefixOriginDhcp), a route's NL_ROUTE_ORIGIN (NlroManual, NlroDHCP); `other` for the rest (link-local,
 * router advertisement, the interface's own subnet and host routes). Only `manual` is the operator's.
 */
export type SettingOrigin = 'manual' | 'dhcp' | 'other';

/** One unicast address of an adapter (MIB_UNICASTIPADDRESS_ROW), either family. */
export interface NicAddress {
  address: string;
  prefixLength: number;
  origin: SettingOrigin;
}

/** One route of an adapter (MIB_IPFORWARD_ROW2), either family; a default route's next hop is a gateway. */
export interface NicRoute {
  destinationPrefix: string;
  nextHop: string;
  metric: number;
  origin: SettingOrigin;
}

/** An adapter's IP configuration, as ./nic-keeper.ts snapshots it before HNS replaces the adapter. */
export interface NicConfiguration {
  addresses: NicAddress[];
  routes: NicRoute[];
  /**
   * The DNS servers set on the adapter by hand (DNS_INTERFACE_SETTINGS NameServer; those DHCP gave are not
   * here); undefined when they could not be read (the host's API lacks it, or the read failed).
   */
  dnsServers?: string[];
}

export interface InterfacesOptions {
  /** Also read each adapter's IPv6 addresses (`ipv6Addresses`): one more table read, which only the callers that need them make. */
  ipv6?: boolean;
}

export interface Host {
  /** IPv4-carrying adapters; with `ipv6`, each with its IPv6 addresses. */
  interfaces(opts?: InterfacesOptions): Promise<HostInterface[]>;
  /** Index of the interface holding the default route (0.0.0.0/0), if any. */
  defaultRouteInterfaceIndex(): Promise<number | undefined>;
  /** Enable/disable forwarding on one interface, for IPv4 (default) or IPv6 (MIB_IPINTERFACE_ROW.Family AF_INET6). */
  setForwarding(interfaceIndex: number, enabled: boolean, family?: IpFamily): Promise<void>;
  getForwarding(interfaceIndex: number, family?: IpFamily): Promise<boolean>;
  /** The MAC of the adapter holding `ipv4`, in Windows' form (`00-15-5D-0A-0B-0C`); undefined when unknown. */
  macAddress(ipv4: string): Promise<string | undefined>;
  /**
   * The running instance of the Host Network Service (on Windows its process ID, as the service control
   * manager reports it); a new value means HNS restarted and dropped what it had not persisted. Undefined
   * when it cannot be told (the service is stopped, or the query failed).
   */
  hnsInstance?(): Promise<string | undefined>;
  /**
   * Restart a Windows service through the service control manager (stop, wait until stopped, start, wait
   * until running); resolves once it runs. Throws HostError FLANNEL_ERR_SERVICE when it cannot.
   */
  restartService?(name: string, signal?: AbortSignal): Promise<void>;
  /**
   * One adapter's addresses, routes and hand-set DNS servers (GetUnicastIpAddressTable, GetIpForwardTable2,
   * GetInterfaceDnsSettings). Throws HostError FLANNEL_ERR_HOST when the adapter or a table cannot be read.
   */
  nicConfiguration?(interfaceIndex: number): Promise<NicConfiguration>;
  /** Add a manual unicast address to an adapter (CreateUnicastIpAddressEntry); one it holds already is success. */
  addUnicastAddress?(interfaceIndex: number, address: string, prefixLength: number): Promise<void>;
  /** Set an adapter's DNS servers by hand (SetInterfaceDnsSettings with DNS_SETTING_NAMESERVER). */
  setDnsServers?(interfaceIndex: number, servers: readonly string[]): Promise<void>;
}

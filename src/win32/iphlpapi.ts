// Marshalling of the iphlpapi structures the route table and the host seam pass to iphlpapi.dll:
// MIB_IPFORWARD_ROW2 / MIB_IPFORWARD_TABLE2 (CreateIpForwardEntry2, GetIpForwardTable2),
// MIB_IPINTERFACE_ROW (Get/SetIpInterfaceEntry) for AF_INET and AF_INET6, MIB_UNICASTIPADDRESS_TABLE
// (GetUnicastIpAddressTable, read for AF_INET6) and MIB_IPADDRTABLE (GetIpAddrTable, IPv4), laid
// out as netioapi.h / iprtrmib.h define them on x64 (the sizes and offsets are in ./encoding.ts).
// Pure Buffers: unit-tested on Linux, and under Wine against the real headers' layout.
import { formatIp6, parseIp6 } from '../basics/ip6.js';
import {
  AF_INET,
  AF_INET6,
  INFINITE_LIFETIME,
  MIB_IPADDRROW_OFFSETS,
  MIB_IPADDRTABLE_OFFSETS,
  MIB_IPFORWARD_ROW2_OFFSETS,
  MIB_IPFORWARD_TABLE2_OFFSETS,
  MIB_IPINTERFACE_ROW_OFFSETS,
  MIB_IPPROTO_NETMGMT,
  MIB_UNICASTIPADDRESS_ROW_OFFSETS,
  MIB_UNICASTIPADDRESS_TABLE_OFFSETS,
  NL,
  SIZES,
  ipv4FromBytes,
  ipv4ToBytes,
  maskToPrefixLength,
} from './encoding.js';

/** `a.b.c.d/n` (AF_INET) or `ipv6/n` (AF_INET6): the family, the address bytes in network order, the prefix length. */
function parseCidr(cidr: string): { family: number; bytes: Buffer; prefixLength: number } {
  const [ip, len, extra] = cidr.split('/');
  const prefixLength = Number(len);
  if (extra === undefined && ip !== undefined && len !== undefined && ip.includes(':')) {
    if (!/^\d{1,3}$/.test(len) || prefixLength > 128) throw new TypeError(`${JSON.stringify(cidr)} is not an IPv6 CIDR`);
    return { family: AF_INET6, bytes: ipv6ToBytes(ip), prefixLength };
  }
  if (extra !== undefined || ip === undefined || len === undefined || !/^\d{1,2}$/.test(len) || prefixLength > 32) {
    throw new TypeError(`${JSON.stringify(cidr)} is not an IPv4 CIDR`);
  }
  return { family: AF_INET, bytes: ipv4ToBytes(ip), prefixLength };
}

/** An IPv6 address -> its 16 bytes in network order (IN6_ADDR); TypeError when it is not one. */
export function ipv6ToBytes(ip: string): Buffer {
  const v = parseIp6(ip);
  if (v === undefined) throw new TypeError(`${JSON.stringify(ip)} is not an IPv6 address`);
  const b = Buffer.alloc(16);
  b.writeBigUInt64BE(v >> 64n, 0);
  b.writeBigUInt64BE(v & 0xffffffffffffffffn, 8);
  return b;
}

/** 16 bytes at `offset` (IN6_ADDR) -> the IPv6 address as Windows and Go print it (RFC 5952). */
export function ipv6FromBytes(buf: Buffer, offset = 0): string {
  return formatIp6((buf.readBigUInt64BE(offset) << 64n) | buf.readBigUInt64BE(offset + 8));
}

// ================================================================ MIB_IPFORWARD_ROW2

/** The fields of MIB_IPFORWARD_ROW2 this project reads and writes (AF_INET or AF_INET6). */
export interface IpForwardRow2 {
  interfaceLuid: bigint;
  interfaceIndex: number;
  /** Address family of DestinationPrefix (2 = AF_INET, 23 = AF_INET6). */
  family: number;
  /** The destination (the prefix address): dotted IPv4, or IPv6 text for AF_INET6. */
  destination: string;
  prefixLength: number;
  /** The next hop (0.0.0.0 or :: = on-link). */
  nextHop: string;
  sitePrefixLength: number;
  validLifetime: number;
  preferredLifetime: number;
  metric: number;
  protocol: number;
  loopback: boolean;
  autoconfigureAddress: boolean;
  publish: boolean;
  immortal: boolean;
  age: number;
  origin: number;
}

/** A route as the RouteTable seam sees it, for encoding. */
export interface IpForwardRouteSpec {
  /** CIDR, e.g. `10.244.3.0/24`. */
  destinationPrefix: string;
  nextHop: string;
  interfaceIndex: number;
  metric: number;
}

/**
 * Write an IPv4 or IPv6 route (by the destination's family) into a MIB_IPFORWARD_ROW2 buffer. Pass the buffer `InitializeIpForwardEntry`
 * filled (its defaults are kept); without one a zeroed row is used. Sets InterfaceLuid 0 (= use the
 * index), InterfaceIndex, DestinationPrefix, NextHop, SitePrefixLength 0, infinite lifetimes, Metric,
 * Protocol = MIB_IPPROTO_NETMGMT.
 */
export function encodeIpForwardRow2(route: IpForwardRouteSpec, row: Buffer = Buffer.alloc(SIZES.MIB_IPFORWARD_ROW2)): Buffer {
  if (row.length < SIZES.MIB_IPFORWARD_ROW2) throw new RangeError(`MIB_IPFORWARD_ROW2 needs ${SIZES.MIB_IPFORWARD_ROW2} bytes`);
  const O = MIB_IPFORWARD_ROW2_OFFSETS;
  const { family, bytes, prefixLength } = parseCidr(route.destinationPrefix);
  const v6 = family === AF_INET6;
  const nextHop = v6 ? ipv6ToBytes(route.nextHop) : ipv4ToBytes(route.nextHop);
  row.writeBigUInt64LE(0n, O.InterfaceLuid);
  row.writeUInt32LE(route.interfaceIndex >>> 0, O.InterfaceIndex);
  // SOCKADDR_IN (or SOCKADDR_IN6: port, flowinfo and scope id 0) inside SOCKADDR_INET: family, address, zero padding.
  row.fill(0, O.DestinationPrefix, O.DestinationPrefix + SIZES.SOCKADDR_INET);
  row.writeUInt16LE(family, O.DestinationPrefix_Prefix_si_family);
  bytes.copy(row, v6 ? O.DestinationPrefix_Prefix_Ipv6_sin6_addr : O.DestinationPrefix_Prefix_Ipv4_sin_addr);
  row.writeUInt8(prefixLength, O.DestinationPrefix_PrefixLength);
  row.fill(0, O.NextHop, O.NextHop + SIZES.SOCKADDR_INET);
  row.writeUInt16LE(family, O.NextHop_si_family);
  nextHop.copy(row, v6 ? O.NextHop_Ipv6_sin6_addr : O.NextHop_Ipv4_sin_addr);
  row.writeUInt8(0, O.SitePrefixLength);
  row.writeUInt32LE(INFINITE_LIFETIME, O.ValidLifetime);
  row.writeUInt32LE(INFINITE_LIFETIME, O.PreferredLifetime);
  row.writeUInt32LE(route.metric >>> 0, O.Metric);
  row.writeInt32LE(MIB_IPPROTO_NETMGMT, O.Protocol);
  return row;
}

/** Decode one MIB_IPFORWARD_ROW2 at `offset`. */
export function decodeIpForwardRow2(buf: Buffer, offset = 0): IpForwardRow2 {
  if (buf.length < offset + SIZES.MIB_IPFORWARD_ROW2) throw new RangeError('truncated MIB_IPFORWARD_ROW2');
  const O = MIB_IPFORWARD_ROW2_OFFSETS;
  const at = (o: number): number => offset + o;
  const family = buf.readUInt16LE(at(O.DestinationPrefix_Prefix_si_family));
  const v6 = family === AF_INET6;
  return {
    interfaceLuid: buf.readBigUInt64LE(at(O.InterfaceLuid)),
    interfaceIndex: buf.readUInt32LE(at(O.InterfaceIndex)),
    family,
    destination: v6 ? ipv6FromBytes(buf, at(O.DestinationPrefix_Prefix_Ipv6_sin6_addr)) : ipv4FromBytes(buf, at(O.DestinationPrefix_Prefix_Ipv4_sin_addr)),
    prefixLength: buf.readUInt8(at(O.DestinationPrefix_PrefixLength)),
    nextHop: v6 ? ipv6FromBytes(buf, at(O.NextHop_Ipv6_sin6_addr)) : ipv4FromBytes(buf, at(O.NextHop_Ipv4_sin_addr)),
    sitePrefixLength: buf.readUInt8(at(O.SitePrefixLength)),
    validLifetime: buf.readUInt32LE(at(O.ValidLifetime)),
    preferredLifetime: buf.readUInt32LE(at(O.PreferredLifetime)),
    metric: buf.readUInt32LE(at(O.Metric)),
    protocol: buf.readInt32LE(at(O.Protocol)),
    loopback: buf.readUInt8(at(O.Loopback)) !== 0,
    autoconfigureAddress: buf.readUInt8(at(O.AutoconfigureAddress)) !== 0,
    publish: buf.readUInt8(at(O.Publish)) !== 0,
    immortal: buf.readUInt8(at(O.Immortal)) !== 0,
    age: buf.readUInt32LE(at(O.Age)),
    origin: buf.readInt32LE(at(O.Origin)),
  };
}

/** Byte length of a MIB_IPFORWARD_TABLE2 holding `numEntries` rows. */
export function ipForwardTable2Length(numEntries: number): number {
  return MIB_IPFORWARD_TABLE2_OFFSETS.Table + numEntries * SIZES.MIB_IPFORWARD_ROW2;
}

/** Decode a MIB_IPFORWARD_TABLE2 (NumEntries, then the rows from offset 8). */
export function decodeIpForwardTable2(buf: Buffer): IpForwardRow2[] {
  if (buf.length < 4) throw new RangeError('truncated MIB_IPFORWARD_TABLE2');
  const n = buf.readUInt32LE(MIB_IPFORWARD_TABLE2_OFFSETS.NumEntries);
  if (buf.length < ipForwardTable2Length(n)) throw new RangeError(`MIB_IPFORWARD_TABLE2 says ${n} rows but holds ${buf.length} bytes`);
  const rows: IpForwardRow2[] = [];
  for (let i = 0; i < n; i++) rows.push(decodeIpForwardRow2(buf, MIB_IPFORWARD_TABLE2_OFFSETS.Table + i * SIZES.MIB_IPFORWARD_ROW2));
  return rows;
}

// ================================================================ MIB_IPINTERFACE_ROW

/**
 * Set the keys GetIpInterfaceEntry looks a row up by (Family, InterfaceLuid 0, InterfaceIndex) in a
 * MIB_IPINTERFACE_ROW buffer (the one InitializeIpInterfaceEntry filled, or a zeroed one).
 */
export function encodeIpInterfaceKey(interfaceIndex: number, row: Buffer = Buffer.alloc(SIZES.MIB_IPINTERFACE_ROW), family = AF_INET): Buffer {
  if (row.length < SIZES.MIB_IPINTERFACE_ROW) throw new RangeError(`MIB_IPINTERFACE_ROW needs ${SIZES.MIB_IPINTERFACE_ROW} bytes`);
  const O = MIB_IPINTERFACE_ROW_OFFSETS;
  row.writeUInt16LE(family, O.Family);
  row.writeBigUInt64LE(0n, O.InterfaceLuid);
  row.writeUInt32LE(interfaceIndex >>> 0, O.InterfaceIndex);
  return row;
}

export interface IpInterfaceRow {
  family: number;
  interfaceLuid: bigint;
  interfaceIndex: number;
  forwardingEnabled: boolean;
  sitePrefixLength: number;
  metric: number;
  nlMtu: number;
  connected: boolean;
}

export function decodeIpInterfaceRow(row: Buffer): IpInterfaceRow {
  if (row.length < SIZES.MIB_IPINTERFACE_ROW) throw new RangeError('truncated MIB_IPINTERFACE_ROW');
  const O = MIB_IPINTERFACE_ROW_OFFSETS;
  return {
    family: row.readUInt16LE(O.Family),
    interfaceLuid: row.readBigUInt64LE(O.InterfaceLuid),
    interfaceIndex: row.readUInt32LE(O.InterfaceIndex),
    forwardingEnabled: row.readUInt8(O.ForwardingEnabled) !== 0,
    sitePrefixLength: row.readUInt32LE(O.SitePrefixLength),
    metric: row.readUInt32LE(O.Metric),
    nlMtu: row.readUInt32LE(O.NlMtu),
    connected: row.readUInt8(O.Connected) !== 0,
  };
}

/**
 * Prepare a row GetIpInterfaceEntry returned for SetIpInterfaceEntry: ForwardingEnabled as asked and
 * SitePrefixLength 0 (Set fails with ERROR_INVALID_PARAMETER on IPv4 otherwise).
 */
export function setIpInterfaceForwarding(row: Buffer, enabled: boolean): Buffer {
  const O = MIB_IPINTERFACE_ROW_OFFSETS;
  row.writeUInt8(enabled ? 1 : 0, O.ForwardingEnabled);
  row.writeUInt32LE(0, O.SitePrefixLength);
  return row;
}

// ================================================================ MIB_IPADDRTABLE (GetIpAddrTable)

export interface IpAddrRow {
  /** Dotted IPv4 (dwAddr holds the bytes in network order). */
  address: string;
  interfaceIndex: number;
  /** Dotted netmask. */
  mask: string;
  prefixLength: number;
  broadcast: string;
  reasmSize: number;
  type: number;
}

export function ipAddrTableLength(numEntries: number): number {
  return MIB_IPADDRTABLE_OFFSETS.table + numEntries * SIZES.MIB_IPADDRROW;
}

export function decodeIpAddrTable(buf: Buffer): IpAddrRow[] {
  if (buf.length < 4) throw new RangeError('truncated MIB_IPADDRTABLE');
  const n = buf.readUInt32LE(MIB_IPADDRTABLE_OFFSETS.dwNumEntries);
  if (buf.length < ipAddrTableLength(n)) throw new RangeError(`MIB_IPADDRTABLE says ${n} rows but holds ${buf.length} bytes`);
  const O = MIB_IPADDRROW_OFFSETS;
  const rows: IpAddrRow[] = [];
  for (let i = 0; i < n; i++) {
    const at = MIB_IPADDRTABLE_OFFSETS.table + i * SIZES.MIB_IPADDRROW;
    rows.push({
      address: ipv4FromBytes(buf, at + O.dwAddr),
      interfaceIndex: buf.readUInt32LE(at + O.dwIndex),
      mask: ipv4FromBytes(buf, at + O.dwMask),
      prefixLength: maskToPrefixLength(buf, at + O.dwMask),
      broadcast: ipv4FromBytes(buf, at + O.dwBCastAddr),
      reasmSize: buf.readUInt32LE(at + O.dwReasmSize),
      type: buf.readUInt16LE(at + O.wType),
    });
  }
  return rows;
}

// ================================================================ MIB_UNICASTIPADDRESS_TABLE (GetUnicastIpAddressTable)

/** The fields of MIB_UNICASTIPADDRESS_ROW the host seam reads (netioapi.h; Microsoft Learn documents each). */
export interface UnicastIpAddressRow {
  family: number;
  /** IPv6 text (RFC 5952) for AF_INET6, dotted IPv4 for AF_INET. */
  address: string;
  interfaceLuid: bigint;
  interfaceIndex: number;
  /** NL_PREFIX_ORIGIN (4 = IpPrefixOriginRouterAdvertisement: SLAAC). */
  prefixOrigin: number;
  /** NL_SUFFIX_ORIGIN (5 = IpSuffixOriginRandom: a temporary or random stable interface identifier). */
  suffixOrigin: number;
  validLifetime: number;
  /** Seconds the address stays preferred; 0 = deprecated. */
  preferredLifetime: number;
  onLinkPrefixLength: number;
  skipAsSource: boolean;
  /** NL_DAD_STATE (3 = IpDadStateDeprecated, 4 = IpDadStatePreferred). */
  dadState: number;
  scopeId: number;
}

export function unicastIpAddressTableLength(numEntries: number): number {
  return MIB_UNICASTIPADDRESS_TABLE_OFFSETS.Table + numEntries * SIZES.MIB_UNICASTIPADDRESS_ROW;
}

/** Decode one MIB_UNICASTIPADDRESS_ROW at `offset`. */
export function decodeUnicastIpAddressRow(buf: Buffer, offset = 0): UnicastIpAddressRow {
  if (buf.length < offset + SIZES.MIB_UNICASTIPADDRESS_ROW) throw new RangeError('truncated MIB_UNICASTIPADDRESS_ROW');
  const O = MIB_UNICASTIPADDRESS_ROW_OFFSETS;
  const at = (o: number): number => offset + o;
  const family = buf.readUInt16LE(at(O.Address_si_family));
  return {
    family,
    address: family === AF_INET6 ? ipv6FromBytes(buf, at(O.Address_Ipv6_sin6_addr)) : ipv4FromBytes(buf, at(O.Address_Ipv4_sin_addr)),
    interfaceLuid: buf.readBigUInt64LE(at(O.InterfaceLuid)),
    interfaceIndex: buf.readUInt32LE(at(O.InterfaceIndex)),
    prefixOrigin: buf.readInt32LE(at(O.PrefixOrigin)),
    suffixOrigin: buf.readInt32LE(at(O.SuffixOrigin)),
    validLifetime: buf.readUInt32LE(at(O.ValidLifetime)),
    preferredLifetime: buf.readUInt32LE(at(O.PreferredLifetime)),
    onLinkPrefixLength: buf.readUInt8(at(O.OnLinkPrefixLength)),
    skipAsSource: buf.readUInt8(at(O.SkipAsSource)) !== 0,
    dadState: buf.readInt32LE(at(O.DadState)),
    scopeId: buf.readUInt32LE(at(O.ScopeId)),
  };
}

/** Decode a MIB_UNICASTIPADDRESS_TABLE (NumEntries, then the rows from offset 8). */
export function decodeUnicastIpAddressTable(buf: Buffer): UnicastIpAddressRow[] {
  if (buf.length < 4) throw new RangeError('truncated MIB_UNICASTIPADDRESS_TABLE');
  const n = buf.readUInt32LE(MIB_UNICASTIPADDRESS_TABLE_OFFSETS.NumEntries);
  if (buf.length < unicastIpAddressTableLength(n)) throw new RangeError(`MIB_UNICASTIPADDRESS_TABLE says ${n} rows but holds ${buf.length} bytes`);
  const rows: UnicastIpAddressRow[] = [];
  for (let i = 0; i < n; i++) rows.push(decodeUnicastIpAddressRow(buf, MIB_UNICASTIPADDRESS_TABLE_OFFSETS.Table + i * SIZES.MIB_UNICASTIPADDRESS_ROW));
  return rows;
}

/**
 * What the dual-stack address choice needs of a row: its prefix length (OnLinkPrefixLength), temporary
 * (SuffixOrigin IpSuffixOriginRandom with PrefixOrigin IpPrefixOriginRouterAdvertisement: how
 * `Get-NetIPAddress` shows an RFC 8981 temporary address) and deprecated (DadState IpDadStateDeprecated,
 * or PreferredLifetime 0). Microsoft Learn, MIB_UNICASTIPADDRESS_ROW and NL_DAD_STATE.
 */
export function unicastRowToIpv6Address(row: UnicastIpAddressRow): { address: string; prefixLength: number; temporary?: boolean; deprecated?: boolean } {
  const temporary = row.suffixOrigin === NL.IpSuffixOriginRandom && row.prefixOrigin === NL.IpPrefixOriginRouterAdvertisement;
  const deprecated = row.dadState === NL.IpDadStateDeprecated || row.preferredLifetime === 0;
  return { address: row.address, prefixLength: row.onLinkPrefixLength, ...(temporary ? { temporary } : {}), ...(deprecated ? { deprecated } : {}) };
}

/** Where an address came from, as the host seam tells it (NL_PREFIX_ORIGIN: Manual, Dhcp, the rest). */
export function prefixOriginSetting(prefixOrigin: number): 'manual' | 'dhcp' | 'other' {
  return prefixOrigin === NL.IpPrefixOriginManual ? 'manual' : prefixOrigin === NL.IpPrefixOriginDhcp ? 'dhcp' : 'other';
}

/**
 * Where a route came from: `manual` a route set by hand (Origin NlroManual, Protocol MIB_IPPROTO_NETMGMT:
 * `route -p add`, New-NetRoute, a static gateway), `dhcp` one DHCP gave (NlroDHCP), `other` the rest (the
 * interface's own subnet, host and broadcast routes: Protocol MIB_IPPROTO_LOCAL; router advertisements).
 */
export function routeOriginSetting(row: Pick<IpForwardRow2, 'origin' | 'protocol'>): 'manual' | 'dhcp' | 'other' {
  if (row.origin === NL.NlroManual && row.protocol === MIB_IPPROTO_NETMGMT) return 'manual';
  return row.origin === NL.NlroDHCP ? 'dhcp' : 'other';
}

/**
 * Write a manual unicast address into the MIB_UNICASTIPADDRESS_ROW InitializeUnicastIpAddressEntry filled
 * (its defaults kept: infinite lifetimes, origins "unchanged"): Address (either family), InterfaceLuid 0
 * (= use the index), InterfaceIndex, OnLinkPrefixLength, DadState IpDadStatePreferred, as Microsoft Learn's
 * CreateUnicastIpAddressEntry example sets them.
 */
export function encodeUnicastIpAddressRow(
  spec: { interfaceIndex: number; address: string; prefixLength: number },
  row: Buffer = Buffer.alloc(SIZES.MIB_UNICASTIPADDRESS_ROW),
): Buffer {
  if (row.length < SIZES.MIB_UNICASTIPADDRESS_ROW) throw new RangeError(`MIB_UNICASTIPADDRESS_ROW needs ${SIZES.MIB_UNICASTIPADDRESS_ROW} bytes`);
  const O = MIB_UNICASTIPADDRESS_ROW_OFFSETS;
  const v6 = spec.address.includes(':');
  if (!(Number.isInteger(spec.prefixLength) && spec.prefixLength >= 0 && spec.prefixLength <= (v6 ? 128 : 32))) {
    throw new TypeError(`${spec.prefixLength} is not a prefix length for ${spec.address}`);
  }
  row.fill(0, O.Address, O.Address + SIZES.SOCKADDR_INET);
  row.writeUInt16LE(v6 ? AF_INET6 : AF_INET, O.Address_si_family);
  (v6 ? ipv6ToBytes(spec.address) : ipv4ToBytes(spec.address)).copy(row, v6 ? O.Address_Ipv6_sin6_addr : O.Address_Ipv4_sin_addr);
  row.writeBigUInt64LE(0n, O.InterfaceLuid);
  row.writeUInt32LE(spec.interfaceIndex >>> 0, O.InterfaceIndex);
  row.writeUInt8(spec.prefixLength, O.OnLinkPrefixLength);
  row.writeInt32LE(NL.IpDadStatePreferred, O.DadState);
  return row;
}

/**
 * An address the adapter holds: not one whose duplicate address detection failed (IpDadStateDuplicate)
 * or that is invalid (IpDadStateInvalid): Windows does not use those.
 */
export function unicastRowHeld(row: UnicastIpAddressRow): boolean {
  return row.dadState !== NL.IpDadStateInvalid && row.dadState !== NL.IpDadStateDuplicate;
}

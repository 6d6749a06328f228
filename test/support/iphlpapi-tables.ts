// The iphlpapi tables as the DLL fills them, built from rows: what a fake of GetIpForwardTable2,
// GetUnicastIpAddressTable and GetIpAddrTable hands back in the transport tests. The layouts are netioapi.h / iprtrmib.h's on x64
// (src/win32/encoding.ts holds their sizes and offsets; src/win32/iphlpapi.ts decodes them).
import {
  AF_INET,
  AF_INET6,
  MIB_IPADDRROW_OFFSETS,
  MIB_IPADDRTABLE_OFFSETS,
  MIB_IPFORWARD_TABLE2_OFFSETS,
  MIB_UNICASTIPADDRESS_ROW_OFFSETS,
  MIB_UNICASTIPADDRESS_TABLE_OFFSETS,
  NL,
  SIZES,
  ipv4ToBytes,
} from '../../src/win32/encoding.js';
import { encodeIpForwardRow2, ipAddrTableLength, ipForwardTable2Length, ipv6ToBytes, unicastIpAddressTableLength } from '../../src/win32/iphlpapi.js';
import type { IpForwardRouteSpec } from '../../src/win32/iphlpapi.js';

/** Build a MIB_IPFORWARD_TABLE2 from rows. */
export function encodeIpForwardTable2(routes: IpForwardRouteSpec[]): Buffer {
  const buf = Buffer.alloc(ipForwardTable2Length(routes.length));
  buf.writeUInt32LE(routes.length, MIB_IPFORWARD_TABLE2_OFFSETS.NumEntries);
  routes.forEach((r, i) => {
    const row = buf.subarray(MIB_IPFORWARD_TABLE2_OFFSETS.Table + i * SIZES.MIB_IPFORWARD_ROW2);
    encodeIpForwardRow2(r, row);
  });
  return buf;
}

/** Build a MIB_IPADDRTABLE. */
export function encodeIpAddrTable(rows: { address: string; interfaceIndex: number; prefixLength: number }[]): Buffer {
  const buf = Buffer.alloc(ipAddrTableLength(rows.length));
  buf.writeUInt32LE(rows.length, MIB_IPADDRTABLE_OFFSETS.dwNumEntries);
  const O = MIB_IPADDRROW_OFFSETS;
  rows.forEach((r, i) => {
    const at = MIB_IPADDRTABLE_OFFSETS.table + i * SIZES.MIB_IPADDRROW;
    ipv4ToBytes(r.address).copy(buf, at + O.dwAddr);
    buf.writeUInt32LE(r.interfaceIndex, at + O.dwIndex);
    const mask = r.prefixLength === 0 ? 0 : (0xffffffff << (32 - r.prefixLength)) >>> 0;
    buf.writeUInt32BE(mask, at + O.dwMask);
    buf.writeUInt32LE(1, at + O.dwBCastAddr);
    buf.writeUInt32LE(0xffff, at + O.dwReasmSize);
    buf.writeUInt16LE(1, at + O.wType);
  });
  return buf;
}

/** One MIB_UNICASTIPADDRESS_ROW to encode; the origins and DAD state default to a manual, preferred address. */
export interface UnicastAddressSpec {
  address: string;
  interfaceIndex: number;
  prefixLength: number;
  prefixOrigin?: number;
  suffixOrigin?: number;
  dadState?: number;
  preferredLifetime?: number;
  validLifetime?: number;
  scopeId?: number;
}

/** Build a MIB_UNICASTIPADDRESS_TABLE (an address with a dot is an AF_INET row, any other AF_INET6). */
export function encodeUnicastIpAddressTable(rows: UnicastAddressSpec[]): Buffer {
  const buf = Buffer.alloc(unicastIpAddressTableLength(rows.length));
  buf.writeUInt32LE(rows.length, MIB_UNICASTIPADDRESS_TABLE_OFFSETS.NumEntries);
  const O = MIB_UNICASTIPADDRESS_ROW_OFFSETS;
  rows.forEach((r, i) => {
    const at = MIB_UNICASTIPADDRESS_TABLE_OFFSETS.Table + i * SIZES.MIB_UNICASTIPADDRESS_ROW;
    const v4 = r.address.includes('.');
    buf.writeUInt16LE(v4 ? AF_INET : AF_INET6, at + O.Address_si_family);
    if (v4) ipv4ToBytes(r.address).copy(buf, at + O.Address_Ipv4_sin_addr);
    else ipv6ToBytes(r.address).copy(buf, at + O.Address_Ipv6_sin6_addr);
    buf.writeUInt32LE(r.scopeId ?? 0, at + O.Address_Ipv6_sin6_scope_id);
    buf.writeBigUInt64LE(0x6000000000000n + BigInt(r.interfaceIndex), at + O.InterfaceLuid);
    buf.writeUInt32LE(r.interfaceIndex, at + O.InterfaceIndex);
    buf.writeInt32LE(r.prefixOrigin ?? 1, at + O.PrefixOrigin);
    buf.writeInt32LE(r.suffixOrigin ?? 1, at + O.SuffixOrigin);
    buf.writeUInt32LE(r.validLifetime ?? 0xffffffff, at + O.ValidLifetime);
    buf.writeUInt32LE(r.preferredLifetime ?? 0xffffffff, at + O.PreferredLifetime);
    buf.writeUInt8(r.prefixLength, at + O.OnLinkPrefixLength);
    buf.writeInt32LE(r.dadState ?? NL.IpDadStatePreferred, at + O.DadState);
    buf.writeUInt32LE(r.scopeId ?? 0, at + O.ScopeId);
    buf.writeBigInt64LE(133_000_000_000_000_000n, at + O.CreationTimeStamp);
  });
  return buf;
}

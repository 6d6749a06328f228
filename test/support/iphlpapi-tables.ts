// The iphlpapi tables as the DLL fills them, built from rows: what a fake of GetIpForwardTable2 and
// GetIpAddrTable hands back in the transport tests. The layouts are netioapi.h / iprtrmib.h's on x64
// (src/win32/encoding.ts holds their sizes and offsets; src/win32/iphlpapi.ts decodes them).
import { MIB_IPADDRROW_OFFSETS, MIB_IPADDRTABLE_OFFSETS, MIB_IPFORWARD_TABLE2_OFFSETS, SIZES, ipv4ToBytes } from '../../src/win32/encoding.js';
import { encodeIpForwardRow2, ipAddrTableLength, ipForwardTable2Length } from '../../src/win32/iphlpapi.js';
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

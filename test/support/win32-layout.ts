// What the tests read of the Win32 layouts and never the agent: every offset table of
// src/win32/encoding.ts flattened to `STRUCT.field` as the harness probe (test/windows/probe.c) prints
// offsetof(), and a GUID decoded back to text (the agent only encodes them: guidToBuffer).
import {
  DNS_INTERFACE_SETTINGS_OFFSETS,
  MIB_IPADDRROW_OFFSETS,
  MIB_IPADDRTABLE_OFFSETS,
  MIB_IPFORWARD_ROW2_OFFSETS,
  MIB_IPFORWARD_TABLE2_OFFSETS,
  MIB_IPINTERFACE_ROW_OFFSETS,
  MIB_UNICASTIPADDRESS_ROW_OFFSETS,
  MIB_UNICASTIPADDRESS_TABLE_OFFSETS,
  SIZES,
} from '../../src/win32/encoding.js';

/** C member paths of the flattened nested fields (as `offsetof` spells them). */
const NESTED_NAMES: Record<string, string> = {
  DestinationPrefix_Prefix_si_family: 'DestinationPrefix.Prefix.si_family',
  DestinationPrefix_Prefix_Ipv4_sin_addr: 'DestinationPrefix.Prefix.Ipv4.sin_addr',
  DestinationPrefix_PrefixLength: 'DestinationPrefix.PrefixLength',
  NextHop_si_family: 'NextHop.si_family',
  NextHop_Ipv4_sin_addr: 'NextHop.Ipv4.sin_addr',
  DestinationPrefix_Prefix_Ipv6_sin6_addr: 'DestinationPrefix.Prefix.Ipv6.sin6_addr',
  NextHop_Ipv6_sin6_addr: 'NextHop.Ipv6.sin6_addr',
  Address_si_family: 'Address.si_family',
  Address_Ipv4_sin_addr: 'Address.Ipv4.sin_addr',
  Address_Ipv6_sin6_addr: 'Address.Ipv6.sin6_addr',
  Address_Ipv6_sin6_scope_id: 'Address.Ipv6.sin6_scope_id',
};

/** `STRUCT.field` -> offset for one structure's offsets table. */
function keyed(struct: string, offsets: Record<string, number>): [string, number][] {
  return Object.entries(offsets).map(([k, v]) => [`${struct}.${NESTED_NAMES[k] ?? k}`, v]);
}

/** Everything the harness probe compares, keyed `STRUCT.field` like the probe prints them. */
export const OFFSETS: Record<string, number> = Object.fromEntries([
  ...keyed('MIB_IPFORWARD_ROW2', MIB_IPFORWARD_ROW2_OFFSETS),
  ...keyed('MIB_IPFORWARD_TABLE2', MIB_IPFORWARD_TABLE2_OFFSETS),
  ...keyed('MIB_IPINTERFACE_ROW', MIB_IPINTERFACE_ROW_OFFSETS),
  ...keyed('MIB_IPADDRROW', MIB_IPADDRROW_OFFSETS),
  ...keyed('MIB_IPADDRTABLE', MIB_IPADDRTABLE_OFFSETS),
  ...keyed('MIB_UNICASTIPADDRESS_ROW', MIB_UNICASTIPADDRESS_ROW_OFFSETS),
  ...keyed('MIB_UNICASTIPADDRESS_TABLE', MIB_UNICASTIPADDRESS_TABLE_OFFSETS),
  ...keyed('DNS_INTERFACE_SETTINGS', DNS_INTERFACE_SETTINGS_OFFSETS),
]);

/** The 16 GUID bytes at `offset` -> upper-case text without braces (how HNS prints IDs). */
export function guidFromBuffer(buf: Buffer, offset = 0): string {
  if (buf.length < offset + SIZES.GUID) throw new RangeError('a GUID needs 16 bytes');
  const h = (n: number, w: number): string => n.toString(16).padStart(w, '0');
  const d4 = buf.subarray(offset + 8, offset + 16).toString('hex');
  return [h(buf.readUInt32LE(offset), 8), h(buf.readUInt16LE(offset + 4), 4), h(buf.readUInt16LE(offset + 6), 4), d4.slice(0, 4), d4.slice(4)].join('-').toUpperCase();
}

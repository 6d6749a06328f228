// Marshalling of DNS_INTERFACE_SETTINGS (netioapi.h), the structure GetInterfaceDnsSettings fills and
// SetInterfaceDnsSettings reads (Microsoft Learn: "DNS_INTERFACE_SETTINGS structure", "GetInterfaceDnsSettings
// function", "SetInterfaceDnsSettings function"; Windows 10 build 19041 and later, so Windows Server 2022 and
// 2025, not 2019). Its string members are PWSTRs: the struct is a Buffer whose pointer fields hold native
// addresses (the ones GetInterfaceDnsSettings stored, or a copy of a string the native seam placed in native
// memory), and NameServer is one wide string of servers separated by commas or spaces ("1.1.1.1 8.8.8.8" or
// "1.1.1.1,8.8.8.8"), IPv6 ones only with DNS_SETTING_IPV6. Offsets: ./encoding.ts. Pure: unit-tested on
// Linux, and under Wine through the stand-in iphlpapi.dll compiled from the same declaration.
import { isIp4 } from '../basics/ip4.js';
import { parseIp6 } from '../basics/ip6.js';
import { DNS_INTERFACE_SETTINGS_OFFSETS, DNS_SETTINGS, SIZES } from './encoding.js';

/** The members of a DNS_INTERFACE_SETTINGS the host seam reads; PWSTRs as addresses (0n = NULL). */
export interface DnsInterfaceSettingsRow {
  version: number;
  flags: bigint;
  domain: bigint;
  nameServer: bigint;
  searchList: bigint;
  profileNameServer: bigint;
}

/**
 * The struct GetInterfaceDnsSettings fills: only Version set (DNS_INTERFACE_SETTINGS_VERSION1), Flags empty
 * and every pointer NULL, as Microsoft Learn asks of the caller.
 */
export function dnsSettingsToRead(): Buffer {
  const buf = Buffer.alloc(SIZES.DNS_INTERFACE_SETTINGS);
  buf.writeUInt32LE(DNS_SETTINGS.DNS_INTERFACE_SETTINGS_VERSION1, DNS_INTERFACE_SETTINGS_OFFSETS.Version);
  return buf;
}

/**
 * The struct SetInterfaceDnsSettings reads to set the adapter's static DNS servers of one stack: Version 1,
 * Flags DNS_SETTING_NAMESERVER (| DNS_SETTING_IPV6 for the IPv6 stack), NameServer the native address of the
 * server list's UTF-16 string; every other member zero (not named in Flags, so not changed).
 */
export function encodeNameServerSettings(nameServerAddress: bigint, ipv6: boolean): Buffer {
  if (nameServerAddress === 0n) throw new RangeError('NameServer needs the address of a string');
  const O = DNS_INTERFACE_SETTINGS_OFFSETS;
  const buf = dnsSettingsToRead();
  buf.writeBigUInt64LE(DNS_SETTINGS.DNS_SETTING_NAMESERVER | (ipv6 ? DNS_SETTINGS.DNS_SETTING_IPV6 : 0n), O.Flags);
  buf.writeBigUInt64LE(nameServerAddress, O.NameServer);
  return buf;
}

export function decodeDnsInterfaceSettings(buf: Buffer): DnsInterfaceSettingsRow {
  if (buf.length < SIZES.DNS_INTERFACE_SETTINGS) throw new RangeError('truncated DNS_INTERFACE_SETTINGS');
  const O = DNS_INTERFACE_SETTINGS_OFFSETS;
  return {
    version: buf.readUInt32LE(O.Version),
    flags: buf.readBigUInt64LE(O.Flags),
    domain: buf.readBigUInt64LE(O.Domain),
    nameServer: buf.readBigUInt64LE(O.NameServer),
    searchList: buf.readBigUInt64LE(O.SearchList),
    profileNameServer: buf.readBigUInt64LE(O.ProfileNameServer),
  };
}

/**
 * NameServer's text -> the servers in order. Commas and spaces both separate (Microsoft Learn); an empty
 * string is no server. Throws TypeError on a token that is not an IP address: the caller treats the read as
 * failed (unknown), never as a list to restore.
 */
export function parseNameServer(text: string): string[] {
  const servers = text.split(/[\s,]+/).filter((s) => s !== '');
  const bad = servers.find((s) => !isIp4(s) && parseIp6(s) === undefined);
  if (bad !== undefined) throw new TypeError(`NameServer ${JSON.stringify(text)} holds ${JSON.stringify(bad)}, which is not an IP address`);
  return servers;
}

/**
 * The servers as SetInterfaceDnsSettings takes them: one NameServer string per stack that has any (IPv4
 * first, then IPv6 with DNS_SETTING_IPV6), comma-separated, each stack's servers in the order given.
 */
export function nameServerStrings(servers: readonly string[]): { ipv6: boolean; text: string }[] {
  const v6 = servers.filter((s) => s.includes(':'));
  const v4 = servers.filter((s) => !s.includes(':'));
  return [...(v4.length > 0 ? [{ ipv6: false, text: v4.join(',') }] : []), ...(v6.length > 0 ? [{ ipv6: true, text: v6.join(',') }] : [])];
}

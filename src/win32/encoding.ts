// The Win32 ABI facts and primitive codecs the native dataplane uses (no ffi-rs here, so everything
// in this file is unit-tested on Linux): constants, the sizes and offsets of the netioapi.h / iprtrmib.h
// structures on x64, UTF-16LE strings (PCWSTR), GUIDs (guiddef.h), HRESULT/NETIO statuses (winerror.h)
// and IPv4 address bytes. Marshalling of those structures is ./iphlpapi.ts.
//
// Every size and offset below was printed by a probe compiled with x86_64-w64-mingw32-gcc against the
// SDK headers mingw-w64 ships (netioapi.h, iprtrmib.h) and run under Wine; the Windows test harness
// asserts SIZES and every offset table against the same probe (test/support/win32-layout.ts flattens them).
// Where any other description and the header disagree, the header wins.

// ================================================================ constants

/** ws2def.h: both families (GetUnicastIpAddressTable, GetIpForwardTable2). */
export const AF_UNSPEC = 0;
export const AF_INET = 2;
export const AF_INET6 = 23;
/** NL_ROUTE_PROTOCOL: a route added through the management API (what route.exe / New-NetRoute make). */
export const MIB_IPPROTO_NETMGMT = 3;
/** ValidLifetime / PreferredLifetime "infinite". */
export const INFINITE_LIFETIME = 0xffffffff;
/** IF_MAX_STRING_SIZE (ifdef.h): an interface alias holds at most this many WCHARs plus the NUL. */
export const IF_MAX_STRING_SIZE = 256;

/** Win32 error codes (NETIO_STATUS / DWORD) the iphlpapi calls return. */
export const WIN32_ERROR = {
  NO_ERROR: 0,
  ERROR_ACCESS_DENIED: 5,
  ERROR_NOT_SUPPORTED: 50,
  ERROR_INVALID_PARAMETER: 87,
  ERROR_INSUFFICIENT_BUFFER: 122,
  ERROR_NO_DATA: 232,
  ERROR_NOT_FOUND: 1168,
  ERROR_OBJECT_ALREADY_EXISTS: 5010,
} as const;

/** sizeof(...) on x64, from the mingw probe. */
export const SIZES = {
  GUID: 16,
  NET_LUID: 8,
  SOCKADDR_INET: 28,
  IP_ADDRESS_PREFIX: 32,
  MIB_IPFORWARD_ROW2: 104,
  /** One row included (ANY_SIZE = 1): header 8 (NumEntries + 4 bytes padding to the row's 8-byte alignment) + 104. */
  MIB_IPFORWARD_TABLE2: 112,
  MIB_IPINTERFACE_ROW: 168,
  MIB_IPADDRROW: 24,
  /** One row included: header 4 + 24. */
  MIB_IPADDRTABLE: 28,
  MIB_UNICASTIPADDRESS_ROW: 80,
  /** One row included: header 8 (NumEntries + 4 bytes padding to the row's 8-byte alignment) + 80. */
  MIB_UNICASTIPADDRESS_TABLE: 88,
  DNS_INTERFACE_SETTINGS: 64,
} as const;

/** offsetof(MIB_IPFORWARD_ROW2, ...) on x64 (netioapi.h). Nested SOCKADDR_INET fields are flattened. */
export const MIB_IPFORWARD_ROW2_OFFSETS = {
  InterfaceLuid: 0, // NET_LUID (u64)
  InterfaceIndex: 8, // NET_IFINDEX (u32)
  DestinationPrefix: 12, // IP_ADDRESS_PREFIX { SOCKADDR_INET Prefix; UINT8 PrefixLength }
  DestinationPrefix_Prefix_si_family: 12, // ADDRESS_FAMILY (u16)
  DestinationPrefix_Prefix_Ipv4_sin_addr: 16, // IN_ADDR, network byte order
  DestinationPrefix_Prefix_Ipv6_sin6_addr: 20, // IN6_ADDR (SOCKADDR_IN6: family, port, flowinfo, then the address)
  DestinationPrefix_PrefixLength: 40, // u8
  NextHop: 44, // SOCKADDR_INET
  NextHop_si_family: 44, // u16
  NextHop_Ipv4_sin_addr: 48, // IN_ADDR
  NextHop_Ipv6_sin6_addr: 52, // IN6_ADDR
  SitePrefixLength: 72, // u8
  ValidLifetime: 76, // u32
  PreferredLifetime: 80, // u32
  Metric: 84, // u32
  Protocol: 88, // NL_ROUTE_PROTOCOL (enum, i32)
  Loopback: 92, // BOOLEAN (u8)
  AutoconfigureAddress: 93,
  Publish: 94,
  Immortal: 95,
  Age: 96, // u32
  Origin: 100, // NL_ROUTE_ORIGIN (enum, i32)
} as const;

/** offsetof(MIB_IPFORWARD_TABLE2, ...): rows start at 8 (the row has 8-byte alignment from NET_LUID). */
export const MIB_IPFORWARD_TABLE2_OFFSETS = {
  NumEntries: 0,
  Table: 8,
} as const;

/** offsetof(MIB_IPINTERFACE_ROW, ...) on x64 (netioapi.h). */
export const MIB_IPINTERFACE_ROW_OFFSETS = {
  Family: 0, // ADDRESS_FAMILY (u16)
  InterfaceLuid: 8, // NET_LUID (u64)
  InterfaceIndex: 16, // u32
  MaxReassemblySize: 20,
  InterfaceIdentifier: 24, // u64
  AdvertisingEnabled: 40, // BOOLEAN
  ForwardingEnabled: 41, // BOOLEAN
  WeakHostSend: 42,
  WeakHostReceive: 43,
  UseAutomaticMetric: 44,
  RouterDiscoveryBehavior: 52,
  ZoneIndices: 80, // ULONG[ScopeLevelCount = 16]
  SitePrefixLength: 144, // u32
  Metric: 148, // u32
  NlMtu: 152, // u32
  Connected: 156, // BOOLEAN
  DisableDefaultRoutes: 166, // BOOLEAN
} as const;

/** offsetof(MIB_IPADDRROW, ...) (iprtrmib.h). Addresses are IN_ADDR bytes in a DWORD (network order). */
export const MIB_IPADDRROW_OFFSETS = {
  dwAddr: 0,
  dwIndex: 4,
  dwMask: 8,
  dwBCastAddr: 12,
  dwReasmSize: 16,
  unused1: 20,
  wType: 22,
} as const;

/** offsetof(MIB_IPADDRTABLE, ...): rows start at 4 (the row is all DWORDs). */
export const MIB_IPADDRTABLE_OFFSETS = {
  dwNumEntries: 0,
  table: 4,
} as const;

/** offsetof(MIB_UNICASTIPADDRESS_ROW, ...) on x64 (netioapi.h; the enums are nldef.h's, 4 bytes each). */
export const MIB_UNICASTIPADDRESS_ROW_OFFSETS = {
  Address: 0, // SOCKADDR_INET
  Address_si_family: 0, // ADDRESS_FAMILY (u16)
  Address_Ipv4_sin_addr: 4, // IN_ADDR
  Address_Ipv6_sin6_addr: 8, // IN6_ADDR
  Address_Ipv6_sin6_scope_id: 24, // u32
  InterfaceLuid: 32, // NET_LUID (u64)
  InterfaceIndex: 40, // u32
  PrefixOrigin: 44, // NL_PREFIX_ORIGIN
  SuffixOrigin: 48, // NL_SUFFIX_ORIGIN
  ValidLifetime: 52, // u32, seconds (0xffffffff infinite)
  PreferredLifetime: 56, // u32, seconds
  OnLinkPrefixLength: 60, // u8
  SkipAsSource: 61, // BOOLEAN
  DadState: 64, // NL_DAD_STATE
  ScopeId: 68, // SCOPE_ID (u32)
  CreationTimeStamp: 72, // LARGE_INTEGER
} as const;

/** offsetof(MIB_UNICASTIPADDRESS_TABLE, ...): rows start at 8 (the row has 8-byte alignment from NET_LUID). */
export const MIB_UNICASTIPADDRESS_TABLE_OFFSETS = {
  NumEntries: 0,
  Table: 8,
} as const;

/**
 * offsetof(DNS_INTERFACE_SETTINGS, ...) on x64 (netioapi.h, Windows 10 build 19041 and later). mingw-w64's
 * netioapi.h (10.0) does not declare it: the declaration is Microsoft Learn's ("DNS_INTERFACE_SETTINGS
 * structure (netioapi.h)", learn.microsoft.com/windows/win32/api/netioapi/ns-netioapi-dns_interface_settings),
 * which test/windows/standins/netioapi-dns.h copies for the stand-in and the probe (a ULONG, then the ULONG64
 * Flags at its 8-byte alignment, four PWSTRs and four ULONGs).
 */
export const DNS_INTERFACE_SETTINGS_OFFSETS = {
  Version: 0, // ULONG: DNS_INTERFACE_SETTINGS_VERSION1
  Flags: 8, // ULONG64: DNS_SETTING_* bits
  Domain: 16, // PWSTR
  NameServer: 24, // PWSTR: comma- or space-separated servers
  SearchList: 32, // PWSTR
  RegistrationEnabled: 40, // ULONG
  RegisterAdapterName: 44,
  EnableLLMNR: 48,
  QueryAdapterName: 52,
  ProfileNameServer: 56, // PWSTR
} as const;

/** DNS_INTERFACE_SETTINGS' Version and Flags values (Microsoft Learn, DNS_INTERFACE_SETTINGS). */
export const DNS_SETTINGS = {
  DNS_INTERFACE_SETTINGS_VERSION1: 1,
  /** The settings are the IPv6 stack's (NameServer holds IPv6 addresses); without it, the IPv4 stack's. */
  DNS_SETTING_IPV6: 0x1n,
  /** Set the static (hand-set) adapter DNS servers from NameServer. */
  DNS_SETTING_NAMESERVER: 0x2n,
} as const;

/** NL_PREFIX_ORIGIN, NL_SUFFIX_ORIGIN, NL_DAD_STATE and NL_ROUTE_ORIGIN values (nldef.h) the readers tell apart. */
export const NL = {
  IpPrefixOriginManual: 1,
  IpPrefixOriginDhcp: 3,
  IpPrefixOriginRouterAdvertisement: 4,
  IpSuffixOriginLinkLayerAddress: 4,
  /** A temporary (privacy, RFC 8981) or random stable suffix. */
  IpSuffixOriginRandom: 5,
  IpDadStateInvalid: 0,
  IpDadStateDuplicate: 2,
  IpDadStateDeprecated: 3,
  IpDadStatePreferred: 4,
  NlroManual: 0,
  NlroDHCP: 2,
} as const;

// ================================================================ UTF-16LE

/** `s` as a NUL-terminated UTF-16LE buffer (a PCWSTR's bytes). */
export function utf16z(s: string): Buffer {
  if (s.includes('\0')) throw new TypeError('a Windows string cannot contain a NUL character');
  return Buffer.from(s + '\0', 'utf16le');
}

/** Decode UTF-16LE from `buf` (starting at `offset`) up to the first NUL code unit or the end. */
export function fromUtf16z(buf: Buffer, offset = 0): string {
  let end = offset;
  while (end + 1 < buf.length && (buf[end] !== 0 || buf[end + 1] !== 0)) end += 2;
  return buf.toString('utf16le', offset, end);
}

/** Byte offset of the first NUL code unit at or after `from` (2-aligned relative to 0), or -1. */
export function findUtf16Nul(buf: Buffer, from = 0): number {
  for (let i = from; i + 1 < buf.length; i += 2) if (buf[i] === 0 && buf[i + 1] === 0) return i;
  return -1;
}

// ================================================================ GUID

const GUID_RE = /^\{?([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{12})\}?$/i;

/**
 * GUID text -> the 16 bytes of `struct GUID { u32 Data1; u16 Data2; u16 Data3; u8 Data4[8]; }`:
 * Data1..3 little-endian (byte-swapped relative to the text), Data4 as written. Braces optional.
 */
export function guidToBuffer(guid: string): Buffer {
  const m = GUID_RE.exec(guid.trim());
  if (!m) throw new TypeError(`${JSON.stringify(guid)} is not a GUID (expected xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)`);
  const buf = Buffer.alloc(SIZES.GUID);
  buf.writeUInt32LE(parseInt(m[1], 16), 0);
  buf.writeUInt16LE(parseInt(m[2], 16), 4);
  buf.writeUInt16LE(parseInt(m[3], 16), 6);
  Buffer.from(m[4] + m[5], 'hex').copy(buf, 8);
  return buf;
}

// ================================================================ HRESULT / NETIO_STATUS

/** FAILED(hr): severity bit set. */
export function hrFailed(hr: number): boolean {
  return (hr | 0) < 0;
}

// ================================================================ IPv4 helpers

/** Dotted IPv4 -> its 4 bytes in network order (how IN_ADDR and an iphlpapi DWORD address lie in memory). */
export function ipv4ToBytes(ip: string): Buffer {
  const parts = ip.split('.');
  if (parts.length !== 4 || parts.some((p) => !/^\d{1,3}$/.test(p) || Number(p) > 255)) {
    throw new TypeError(`${JSON.stringify(ip)} is not an IPv4 address`);
  }
  return Buffer.from(parts.map(Number));
}

/** 4 bytes at `offset` in network order -> dotted IPv4. */
export function ipv4FromBytes(buf: Buffer, offset = 0): string {
  return `${buf[offset]}.${buf[offset + 1]}.${buf[offset + 2]}.${buf[offset + 3]}`;
}

/** Netmask bytes (network order) -> prefix length; a non-contiguous mask counts its leading ones. */
export function maskToPrefixLength(buf: Buffer, offset = 0): number {
  const v = buf.readUInt32BE(offset);
  let n = 0;
  while (n < 32 && v & (0x80000000 >>> n)) n++;
  return n;
}

import { describe, it, expect } from '@jest/globals';
import {
  AF_INET,
  AF_INET6,
  findUtf16Nul,
  fromUtf16z,
  guidToBuffer,
  hrFailed,
  INFINITE_LIFETIME,
  MIB_IPFORWARD_ROW2_OFFSETS,
  MIB_IPINTERFACE_ROW_OFFSETS,
  MIB_IPPROTO_NETMGMT,
  MIB_UNICASTIPADDRESS_ROW_OFFSETS,
  maskToPrefixLength,
  NL,
  SIZES,
  utf16z,
} from '../../../src/win32/encoding.js';
import { guidFromBuffer, OFFSETS } from '../../support/win32-layout.js';
import {
  decodeIpAddrTable,
  decodeIpForwardRow2,
  decodeIpForwardTable2,
  decodeIpInterfaceRow,
  decodeUnicastIpAddressTable,
  encodeIpForwardRow2,
  encodeIpInterfaceKey,
  setIpInterfaceForwarding,
  unicastRowHeld,
  unicastRowToIpv6Address,
} from '../../../src/win32/iphlpapi.js';
import { encodeIpAddrTable, encodeIpForwardTable2, encodeUnicastIpAddressTable } from '../../support/iphlpapi-tables.js';

describe('UTF-16LE', () => {
  it('encodes NUL-terminated UTF-16LE', () => {
    expect(utf16z('GET')).toEqual(Buffer.from([0x47, 0, 0x45, 0, 0x54, 0, 0, 0]));
    expect(utf16z('')).toEqual(Buffer.from([0, 0]));
    expect(utf16z('vEthernet (Ethernet 2)').length).toBe(2 * 23);
  });

  it('round-trips non-ASCII and surrogate pairs', () => {
    for (const s of ['Ethernet', 'Ēthernet ünïcode', 'net 😀 x', '']) expect(fromUtf16z(utf16z(s))).toBe(s);
  });

  it('decodes up to the first NUL, or to the end of the buffer', () => {
    const buf = Buffer.concat([utf16z('abc'), Buffer.from('d\0e\0', 'latin1')]);
    expect(fromUtf16z(buf)).toBe('abc');
    expect(fromUtf16z(Buffer.from('a\0b\0', 'latin1'))).toBe('ab');
    expect(fromUtf16z(utf16z('xyz'), 2)).toBe('yz');
  });

  it('finds the NUL only on code-unit boundaries', () => {
    // 0x0100 0x0001 has a zero byte pair at odd offset 1..2 that is not a NUL code unit.
    const buf = Buffer.from([0x00, 0x01, 0x00, 0x01, 0x00, 0x00]);
    expect(findUtf16Nul(buf)).toBe(4);
    expect(findUtf16Nul(Buffer.from([0x41, 0x00]))).toBe(-1);
  });

  it('refuses strings with an embedded NUL', () => {
    expect(() => utf16z('a\0b')).toThrow(TypeError);
  });
});

describe('GUID', () => {
  const text = '7E1B4F2A-0C3D-4E5F-8A9B-112233445566';

  it('lays out Data1..3 little-endian and Data4 as written', () => {
    expect(guidToBuffer(text).toString('hex')).toBe('2a4f1b7e' + '3d0c' + '5f4e' + '8a9b' + '112233445566');
  });

  it('round-trips and prints upper case', () => {
    expect(guidFromBuffer(guidToBuffer(text.toLowerCase()))).toBe(text);
    expect(guidFromBuffer(guidToBuffer(`{${text}}`))).toBe(text);
    const zero = '00000000-0000-0000-0000-000000000000';
    expect(guidToBuffer(zero)).toEqual(Buffer.alloc(16));
    expect(guidFromBuffer(Buffer.alloc(16))).toBe(zero);
    const ff = 'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF';
    expect(guidFromBuffer(guidToBuffer(ff))).toBe(ff);
  });

  it('reads a GUID at an offset', () => {
    const buf = Buffer.concat([Buffer.alloc(3), guidToBuffer(text)]);
    expect(guidFromBuffer(buf, 3)).toBe(text);
  });

  it('rejects what is not a GUID', () => {
    for (const bad of ['', 'cbr0', '7E1B4F2A-0C3D-4E5F-8A9B-11223344556', '7E1B4F2A0C3D4E5F8A9B112233445566', 'ZZ1B4F2A-0C3D-4E5F-8A9B-112233445566']) {
      expect(() => guidToBuffer(bad)).toThrow(TypeError);
    }
    expect(() => guidFromBuffer(Buffer.alloc(15))).toThrow(RangeError);
  });
});

describe('HRESULT', () => {
  it('FAILED() on both forms', () => {
    expect(hrFailed(0x803b0001)).toBe(true);
    expect(hrFailed(0x803b0001 | 0)).toBe(true);
    expect(hrFailed(0)).toBe(false);
    expect(hrFailed(1)).toBe(false); // S_FALSE
  });
});

describe('struct sizes and offsets (x64, from the mingw probe)', () => {
  it('matches netioapi.h / iprtrmib.h', () => {
    expect(SIZES).toMatchObject({
      MIB_IPFORWARD_ROW2: 104,
      MIB_IPFORWARD_TABLE2: 112,
      MIB_IPINTERFACE_ROW: 168,
      MIB_IPADDRROW: 24,
      MIB_IPADDRTABLE: 28,
      SOCKADDR_INET: 28,
      GUID: 16,
    });
    expect(OFFSETS).toMatchObject({
      'MIB_IPFORWARD_ROW2.InterfaceLuid': 0,
      'MIB_IPFORWARD_ROW2.InterfaceIndex': 8,
      'MIB_IPFORWARD_ROW2.DestinationPrefix.Prefix.si_family': 12,
      'MIB_IPFORWARD_ROW2.DestinationPrefix.Prefix.Ipv4.sin_addr': 16,
      'MIB_IPFORWARD_ROW2.DestinationPrefix.PrefixLength': 40,
      'MIB_IPFORWARD_ROW2.NextHop.Ipv4.sin_addr': 48,
      'MIB_IPFORWARD_ROW2.SitePrefixLength': 72,
      'MIB_IPFORWARD_ROW2.ValidLifetime': 76,
      'MIB_IPFORWARD_ROW2.Metric': 84,
      'MIB_IPFORWARD_ROW2.Protocol': 88,
      'MIB_IPFORWARD_ROW2.Origin': 100,
      'MIB_IPFORWARD_TABLE2.Table': 8,
      'MIB_IPINTERFACE_ROW.InterfaceIndex': 16,
      'MIB_IPINTERFACE_ROW.ForwardingEnabled': 41,
      'MIB_IPINTERFACE_ROW.SitePrefixLength': 144,
      'MIB_IPINTERFACE_ROW.NlMtu': 152,
      'MIB_IPADDRROW.dwMask': 8,
      'MIB_IPADDRTABLE.table': 4,
    });
  });
});

describe('MIB_IPFORWARD_ROW2', () => {
  const route = { destinationPrefix: '10.244.3.0/24', nextHop: '192.168.1.7', interfaceIndex: 0x1234, metric: 260 };

  it('encodes to golden byte offsets', () => {
    const row = encodeIpForwardRow2(route);
    expect(row.length).toBe(104);
    expect(row.readBigUInt64LE(0)).toBe(0n); // LUID 0 = use the index
    expect(row.readUInt32LE(8)).toBe(0x1234);
    expect(row.readUInt16LE(12)).toBe(AF_INET);
    expect([...row.subarray(16, 20)]).toEqual([10, 244, 3, 0]);
    expect(row[40]).toBe(24);
    expect(row.readUInt16LE(44)).toBe(AF_INET);
    expect([...row.subarray(48, 52)]).toEqual([192, 168, 1, 7]);
    expect(row[72]).toBe(0);
    expect(row.readUInt32LE(76)).toBe(INFINITE_LIFETIME);
    expect(row.readUInt32LE(80)).toBe(INFINITE_LIFETIME);
    expect(row.readUInt32LE(84)).toBe(260);
    expect(row.readInt32LE(88)).toBe(MIB_IPPROTO_NETMGMT);
  });

  it('keeps the defaults InitializeIpForwardEntry wrote elsewhere and clears stale keys', () => {
    const init = Buffer.alloc(104, 0xee);
    const row = encodeIpForwardRow2(route, init);
    expect(row).toBe(init);
    expect(row[MIB_IPFORWARD_ROW2_OFFSETS.Loopback]).toBe(0xee);
    expect(row.readUInt32LE(MIB_IPFORWARD_ROW2_OFFSETS.Age)).toBe(0xeeeeeeee);
    expect(row.readBigUInt64LE(0)).toBe(0n);
    expect(row.subarray(20, 40).every((b) => b === 0)).toBe(true); // SOCKADDR_INET padding
  });

  it('decodes what it encodes', () => {
    const d = decodeIpForwardRow2(encodeIpForwardRow2(route));
    expect(d).toMatchObject({
      interfaceLuid: 0n,
      interfaceIndex: 0x1234,
      family: AF_INET,
      destination: '10.244.3.0',
      prefixLength: 24,
      nextHop: '192.168.1.7',
      metric: 260,
      protocol: 3,
      sitePrefixLength: 0,
      validLifetime: INFINITE_LIFETIME,
    });
  });

  it('rejects bad input', () => {
    expect(() => encodeIpForwardRow2({ ...route, destinationPrefix: '10.244.3.0' })).toThrow(TypeError);
    expect(() => encodeIpForwardRow2({ ...route, destinationPrefix: '10.244.3.0/33' })).toThrow(TypeError);
    expect(() => encodeIpForwardRow2({ ...route, nextHop: '10.0.0.256' })).toThrow(TypeError);
    expect(() => encodeIpForwardRow2(route, Buffer.alloc(100))).toThrow(RangeError);
    expect(() => decodeIpForwardRow2(Buffer.alloc(103))).toThrow(RangeError);
  });
});

describe('MIB_IPFORWARD_ROW2 with AF_INET6 (SOCKADDR_IN6 in SOCKADDR_INET, netioapi.h / ws2ipdef.h)', () => {
  const route = { destinationPrefix: '2001:cafe:42:1::/64', nextHop: 'fd00:10::11', interfaceIndex: 7, metric: 256 };

  it('encodes the family, the 16-byte addresses after sin6_port and sin6_flowinfo, and the prefix length', () => {
    const row = encodeIpForwardRow2(route, Buffer.alloc(104, 0xee));
    expect(row.readUInt16LE(12)).toBe(AF_INET6);
    expect(row.readUInt16LE(14)).toBe(0); // sin6_port
    expect(row.readUInt32LE(16)).toBe(0); // sin6_flowinfo
    expect(row.subarray(20, 36).toString('hex')).toBe('2001cafe004200010000000000000000');
    expect(row.readUInt32LE(36)).toBe(0); // sin6_scope_id
    expect(row[40]).toBe(64);
    expect(row.readUInt16LE(44)).toBe(AF_INET6);
    expect(row.subarray(52, 68).toString('hex')).toBe('fd000010000000000000000000000011');
    expect(row.readUInt32LE(84)).toBe(256);
  });

  it('decodes what it encodes, printing addresses as Windows does (RFC 5952)', () => {
    expect(decodeIpForwardRow2(encodeIpForwardRow2({ ...route, nextHop: 'FD00:10:0:0::11' }))).toMatchObject({
      family: AF_INET6,
      destination: '2001:cafe:42:1::',
      prefixLength: 64,
      nextHop: 'fd00:10::11',
      interfaceIndex: 7,
    });
    expect(decodeIpForwardRow2(encodeIpForwardRow2({ ...route, destinationPrefix: '::/0', nextHop: 'fe80::1' }))).toMatchObject({
      destination: '::',
      prefixLength: 0,
      nextHop: 'fe80::1',
    });
  });

  it('rejects bad IPv6 input and mixed families', () => {
    expect(() => encodeIpForwardRow2({ ...route, destinationPrefix: '2001::/129' })).toThrow(TypeError);
    expect(() => encodeIpForwardRow2({ ...route, nextHop: '10.0.0.1' })).toThrow(TypeError);
    expect(() => encodeIpForwardRow2({ ...route, destinationPrefix: '10.0.0.0/24', nextHop: 'fd00::1' })).toThrow(TypeError);
  });

  it('MIB_IPINTERFACE_ROW keys with AF_INET6 (SetIpInterfaceEntry on the IPv6 interface)', () => {
    const row = encodeIpInterfaceKey(12, Buffer.alloc(SIZES.MIB_IPINTERFACE_ROW, 0xee), AF_INET6);
    expect(row.readUInt16LE(MIB_IPINTERFACE_ROW_OFFSETS.Family)).toBe(AF_INET6);
    expect(row.readBigUInt64LE(MIB_IPINTERFACE_ROW_OFFSETS.InterfaceLuid)).toBe(0n);
    expect(row.readUInt32LE(MIB_IPINTERFACE_ROW_OFFSETS.InterfaceIndex)).toBe(12);
    expect(decodeIpInterfaceRow(row)).toMatchObject({ family: AF_INET6, interfaceIndex: 12 });
  });
});

describe('MIB_IPFORWARD_TABLE2', () => {
  it('decodes 2 rows starting at offset 8', () => {
    const table = encodeIpForwardTable2([
      { destinationPrefix: '0.0.0.0/0', nextHop: '10.0.0.1', interfaceIndex: 4, metric: 0 },
      { destinationPrefix: '10.244.1.0/24', nextHop: '10.0.0.3', interfaceIndex: 9, metric: 5 },
    ]);
    expect(table.length).toBe(8 + 2 * 104);
    expect(table.readUInt32LE(0)).toBe(2);
    expect(table.readUInt32LE(8 + 8)).toBe(4); // row 0 InterfaceIndex
    expect(table.readUInt32LE(8 + 104 + 8)).toBe(9); // row 1 InterfaceIndex
    const rows = decodeIpForwardTable2(table);
    expect(rows.map((r) => [`${r.destination}/${r.prefixLength}`, r.nextHop, r.interfaceIndex, r.metric])).toEqual([
      ['0.0.0.0/0', '10.0.0.1', 4, 0],
      ['10.244.1.0/24', '10.0.0.3', 9, 5],
    ]);
  });

  it('an empty table and a truncated one', () => {
    expect(decodeIpForwardTable2(Buffer.alloc(8))).toEqual([]);
    const t = Buffer.alloc(8 + 104);
    t.writeUInt32LE(2, 0);
    expect(() => decodeIpForwardTable2(t)).toThrow(RangeError);
  });
});

describe('MIB_IPINTERFACE_ROW', () => {
  it('writes the lookup keys and reads MTU and forwarding', () => {
    const row = encodeIpInterfaceKey(17);
    expect(row.length).toBe(168);
    expect(row.readUInt16LE(0)).toBe(AF_INET);
    expect(row.readUInt32LE(16)).toBe(17);
    row.writeUInt32LE(1450, MIB_IPINTERFACE_ROW_OFFSETS.NlMtu);
    row.writeUInt32LE(64, MIB_IPINTERFACE_ROW_OFFSETS.SitePrefixLength);
    expect(decodeIpInterfaceRow(row)).toMatchObject({ family: 2, interfaceIndex: 17, nlMtu: 1450, forwardingEnabled: false, sitePrefixLength: 64 });
    setIpInterfaceForwarding(row, true);
    expect(row[41]).toBe(1);
    expect(row.readUInt32LE(144)).toBe(0);
    expect(decodeIpInterfaceRow(row).forwardingEnabled).toBe(true);
  });
});

describe('MIB_IPADDRTABLE', () => {
  it('decodes addresses stored in network byte order, index and mask', () => {
    const buf = Buffer.alloc(4 + 2 * 24);
    buf.writeUInt32LE(2, 0);
    // row 0: 10.0.0.2/24 on 7; dwAddr as the DWORD 0x0200000A in memory order 0a 00 00 02
    buf.writeUInt32LE(0x0200000a, 4);
    buf.writeUInt32LE(7, 8);
    buf.writeUInt32LE(0x00ffffff, 12);
    // row 1: 172.16.5.4/16 on 12
    Buffer.from([172, 16, 5, 4]).copy(buf, 28);
    buf.writeUInt32LE(12, 32);
    Buffer.from([255, 255, 0, 0]).copy(buf, 36);
    const rows = decodeIpAddrTable(buf);
    expect(rows.map((r) => [r.address, r.interfaceIndex, r.mask, r.prefixLength])).toEqual([
      ['10.0.0.2', 7, '255.255.255.0', 24],
      ['172.16.5.4', 12, '255.255.0.0', 16],
    ]);
  });

  it('round-trips through the test encoder', () => {
    const rows = [{ address: '192.168.0.10', interfaceIndex: 3, prefixLength: 20 }];
    expect(decodeIpAddrTable(encodeIpAddrTable(rows))[0]).toMatchObject({ ...rows[0], mask: '255.255.240.0' });
  });

  it('mask -> prefix length', () => {
    expect(maskToPrefixLength(Buffer.from([0, 0, 0, 0]))).toBe(0);
    expect(maskToPrefixLength(Buffer.from([255, 255, 255, 255]))).toBe(32);
    expect(maskToPrefixLength(Buffer.from([255, 255, 255, 128]))).toBe(25);
  });
});

describe('MIB_UNICASTIPADDRESS_TABLE (GetUnicastIpAddressTable, netioapi.h)', () => {
  it('the row layout on x64: SOCKADDR_INET first, InterfaceLuid at the 8-byte boundary, 80 bytes', () => {
    expect(SIZES).toMatchObject({ MIB_UNICASTIPADDRESS_ROW: 80, MIB_UNICASTIPADDRESS_TABLE: 88 });
    expect(OFFSETS).toMatchObject({
      'MIB_UNICASTIPADDRESS_ROW.Address.Ipv6.sin6_addr': 8,
      'MIB_UNICASTIPADDRESS_ROW.InterfaceLuid': 32,
      'MIB_UNICASTIPADDRESS_ROW.InterfaceIndex': 40,
      'MIB_UNICASTIPADDRESS_ROW.SuffixOrigin': 48,
      'MIB_UNICASTIPADDRESS_ROW.OnLinkPrefixLength': 60,
      'MIB_UNICASTIPADDRESS_ROW.DadState': 64,
      'MIB_UNICASTIPADDRESS_TABLE.Table': 8,
    });
  });

  it('decodes a hand-laid row: address bytes in network order, prefix length, origins, lifetimes, DAD state', () => {
    const O = MIB_UNICASTIPADDRESS_ROW_OFFSETS;
    const buf = Buffer.alloc(8 + 80);
    buf.writeUInt32LE(1, 0);
    buf.writeUInt16LE(23, 8 + O.Address_si_family);
    Buffer.from('20010db8000000010000000000000007', 'hex').copy(buf, 8 + O.Address_Ipv6_sin6_addr);
    buf.writeUInt32LE(9, 8 + O.InterfaceIndex);
    buf.writeInt32LE(4, 8 + O.PrefixOrigin);
    buf.writeInt32LE(5, 8 + O.SuffixOrigin);
    buf.writeUInt32LE(86400, 8 + O.ValidLifetime);
    buf.writeUInt32LE(3600, 8 + O.PreferredLifetime);
    buf.writeUInt8(64, 8 + O.OnLinkPrefixLength);
    buf.writeInt32LE(4, 8 + O.DadState);
    expect(decodeUnicastIpAddressTable(buf)).toEqual([
      {
        family: AF_INET6,
        address: '2001:db8:0:1::7',
        interfaceLuid: 0n,
        interfaceIndex: 9,
        prefixOrigin: 4,
        suffixOrigin: 5,
        validLifetime: 86400,
        preferredLifetime: 3600,
        onLinkPrefixLength: 64,
        skipAsSource: false,
        dadState: 4,
        scopeId: 0,
      },
    ]);
  });

  it('a truncated table is a RangeError, not a misread', () => {
    const buf = encodeUnicastIpAddressTable([{ address: '2001:db8::1', interfaceIndex: 3, prefixLength: 64 }]);
    expect(() => decodeUnicastIpAddressTable(buf.subarray(0, buf.length - 1))).toThrow(RangeError);
    expect(() => decodeUnicastIpAddressTable(Buffer.alloc(2))).toThrow(RangeError);
  });

  // Get-NetIPAddress shows a temporary (RFC 8981) address as PrefixOrigin RouterAdvertisement, SuffixOrigin
  // Random; a deprecated one as AddressState Deprecated (NL_DAD_STATE) with PreferredLifetime 0.
  it.each([
    ['static', { prefixOrigin: 1, suffixOrigin: 1 }, { address: '2001:db8::10', prefixLength: 64 }],
    [
      'SLAAC from the MAC (EUI-64)',
      { prefixOrigin: NL.IpPrefixOriginRouterAdvertisement, suffixOrigin: NL.IpSuffixOriginLinkLayerAddress },
      { address: '2001:db8::10', prefixLength: 64 },
    ],
    [
      'temporary (privacy)',
      { prefixOrigin: NL.IpPrefixOriginRouterAdvertisement, suffixOrigin: NL.IpSuffixOriginRandom },
      { address: '2001:db8::10', prefixLength: 64, temporary: true },
    ],
    ['deprecated (DadState)', { dadState: NL.IpDadStateDeprecated }, { address: '2001:db8::10', prefixLength: 64, deprecated: true }],
    ['deprecated (preferred lifetime run out)', { preferredLifetime: 0 }, { address: '2001:db8::10', prefixLength: 64, deprecated: true }],
  ])('%s -> the address choice fields', (_name, extra, want) => {
    const [row] = decodeUnicastIpAddressTable(encodeUnicastIpAddressTable([{ address: '2001:db8::10', interfaceIndex: 4, prefixLength: 64, ...extra }]));
    expect(unicastRowToIpv6Address(row)).toEqual(want);
    expect(unicastRowHeld(row)).toBe(true);
  });

  it('a duplicate (DAD failed) or invalid address is not held; link-local keeps its prefix length and scope', () => {
    const rows = decodeUnicastIpAddressTable(
      encodeUnicastIpAddressTable([
        { address: '2001:db8::11', interfaceIndex: 4, prefixLength: 64, dadState: NL.IpDadStateDuplicate },
        { address: '2001:db8::12', interfaceIndex: 4, prefixLength: 64, dadState: NL.IpDadStateInvalid },
        { address: 'fe80::215:5dff:fe00:1', interfaceIndex: 4, prefixLength: 64, scopeId: 4, prefixOrigin: 2, suffixOrigin: 4 },
      ]),
    );
    expect(rows.map((r) => unicastRowHeld(r))).toEqual([false, false, true]);
    expect(rows[2]).toMatchObject({ address: 'fe80::215:5dff:fe00:1', onLinkPrefixLength: 64, scopeId: 4 });
  });
});

// DNS_INTERFACE_SETTINGS (src/win32/dns-settings.ts) and the Win32 host's hand-set DNS servers
// (src/host/win32-host.ts nicConfiguration, setDnsServers) on a fake of iphlpapi's DNS calls: the struct as
// Microsoft Learn lays it out (DNS_INTERFACE_SETTINGS, netioapi.h; offsets in src/win32/encoding.ts, checked
// against the C compiler under Wine by test/windows/probe.test.ts), NameServer's commas and spaces, one Set
// per stack, what a read stored always freed, and a failed read left unknown.
import { describe, expect, it } from '@jest/globals';
import { HostError } from '../../../src/basics/errors.js';
import { Win32Host } from '../../../src/host/win32-host.js';
import { decodeDnsInterfaceSettings, dnsSettingsToRead, encodeNameServerSettings, nameServerStrings, parseNameServer } from '../../../src/win32/dns-settings.js';
import { DNS_INTERFACE_SETTINGS_OFFSETS as O, fromUtf16z, guidToBuffer, SIZES, WIN32_ERROR } from '../../../src/win32/encoding.js';
import type { NativePtr, Win32DnsNative, Win32IpHelperNative } from '../../../src/win32/native.js';
import { expectCode } from '../../support/errors.js';
import { encodeUnicastIpAddressTable } from '../../support/iphlpapi-tables.js';
import { guidFromBuffer } from '../../support/win32-layout.js';

describe('DNS_INTERFACE_SETTINGS', () => {
  it('the struct to read: 64 bytes, Version 1, Flags empty, every pointer NULL', () => {
    const buf = dnsSettingsToRead();
    expect(buf.length).toBe(64);
    expect(decodeDnsInterfaceSettings(buf)).toEqual({ version: 1, flags: 0n, domain: 0n, nameServer: 0n, searchList: 0n, profileNameServer: 0n });
    expect(buf.subarray(4).equals(Buffer.alloc(60))).toBe(true);
  });

  it.each<[string, boolean, bigint]>([
    ['IPv4 stack: DNS_SETTING_NAMESERVER', false, 0x2n],
    ['IPv6 stack: DNS_SETTING_NAMESERVER | DNS_SETTING_IPV6', true, 0x3n],
  ])('the struct to set, %s', (_name, ipv6, flags) => {
    const address = 0x1_2345_6780n;
    const buf = encodeNameServerSettings(address, ipv6);
    expect(buf.readUInt32LE(O.Version)).toBe(1);
    expect(buf.readBigUInt64LE(O.Flags)).toBe(flags);
    expect(buf.readBigUInt64LE(O.NameServer)).toBe(address);
    for (const other of [O.Domain, O.SearchList, O.ProfileNameServer]) expect(buf.readBigUInt64LE(other)).toBe(0n);
    for (const other of [O.RegistrationEnabled, O.RegisterAdapterName, O.EnableLLMNR, O.QueryAdapterName]) expect(buf.readUInt32LE(other)).toBe(0);
    expect(() => encodeNameServerSettings(0n, ipv6)).toThrow(RangeError);
  });

  it('decodes each pointer member from its offset; a short buffer is refused', () => {
    const buf = Buffer.alloc(SIZES.DNS_INTERFACE_SETTINGS);
    buf.writeUInt32LE(1, O.Version);
    buf.writeBigUInt64LE(0x22n, O.Flags);
    buf.writeBigUInt64LE(0x1000n, O.Domain);
    buf.writeBigUInt64LE(0x2000n, O.NameServer);
    buf.writeBigUInt64LE(0x3000n, O.SearchList);
    buf.writeBigUInt64LE(0x4000n, O.ProfileNameServer);
    expect(decodeDnsInterfaceSettings(buf)).toEqual({ version: 1, flags: 0x22n, domain: 0x1000n, nameServer: 0x2000n, searchList: 0x3000n, profileNameServer: 0x4000n });
    expect(() => decodeDnsInterfaceSettings(buf.subarray(0, 63))).toThrow(RangeError);
  });

  it.each<[string, string, string[] | 'refused']>([
    ['empty: no server', '', []],
    ['commas', '1.1.1.1,8.8.8.8', ['1.1.1.1', '8.8.8.8']],
    ['spaces', '1.1.1.1 8.8.8.8', ['1.1.1.1', '8.8.8.8']],
    ['both, doubled', ' 10.0.0.53, 10.0.0.54 ,', ['10.0.0.53', '10.0.0.54']],
    ['IPv6', '2606:4700:4700::1001,2606:4700:4700::1111', ['2606:4700:4700::1001', '2606:4700:4700::1111']],
    ['a name is not a server', '10.0.0.53,dns.example', 'refused'],
    ['an address out of range', '10.0.0.256', 'refused'],
  ])('NameServer %s', (_name, text, want) => {
    if (want === 'refused') expect(() => parseNameServer(text)).toThrow(TypeError);
    else expect(parseNameServer(text)).toEqual(want);
  });

  it.each<[string, string[], { ipv6: boolean; text: string }[]]>([
    ['none: no call', [], []],
    ['IPv4 only: one call', ['10.0.0.53', '10.0.0.54'], [{ ipv6: false, text: '10.0.0.53,10.0.0.54' }]],
    [
      'both stacks: IPv4 then IPv6, each in its order',
      ['fd00::53', '10.0.0.53', 'fd00::54'],
      [
        { ipv6: false, text: '10.0.0.53' },
        { ipv6: true, text: 'fd00::53,fd00::54' },
      ],
    ],
  ])('nameServerStrings: %s', (_name, servers, want) => {
    expect(nameServerStrings(servers)).toEqual(want);
  });
});

const GUID_OF = (index: number) => `00000000-0000-4000-8000-${index.toString(16).padStart(12, '0')}`.toUpperCase();

/** iphlpapi's tables for one adapter (index 4) and its LUID; every table handed out must be freed. */
class FakeIpHelper implements Win32IpHelperNative {
  tablesGiven = 0;
  tablesFreed = 0;
  getIpForwardTable2(): { status: number; table: NativePtr | null } {
    return { status: WIN32_ERROR.ERROR_NOT_FOUND, table: null };
  }
  getUnicastIpAddressTable(): { status: number; table: NativePtr | null } {
    this.tablesGiven++;
    return { status: 0, table: encodeUnicastIpAddressTable([{ address: '10.0.0.2', interfaceIndex: 4, prefixLength: 24 }]) };
  }
  freeMibTable(): void {
    this.tablesFreed++;
  }
  readBytes(p: NativePtr, length: number): Buffer {
    return Buffer.from((p as Buffer).subarray(0, length));
  }
  convertInterfaceIndexToLuid(index: number, luid: Buffer): number {
    if (index !== 4 && index !== 9) return WIN32_ERROR.ERROR_NOT_FOUND;
    luid.writeBigUInt64LE(0x6000000000000n + BigInt(index));
    return 0;
  }
  initializeIpForwardEntry = unused;
  createIpForwardEntry2 = unused;
  deleteIpForwardEntry2 = unused;
  getIpAddrTable = unused;
  convertInterfaceLuidToAlias = unused;
  initializeUnicastIpAddressEntry = unused;
  createUnicastIpAddressEntry = unused;
  initializeIpInterfaceEntry = unused;
  getIpInterfaceEntry = unused;
  setIpInterfaceEntry = unused;
}

function unused(): never {
  throw new Error('not called by these tests');
}

/** iphlpapi's DNS calls over a "native memory" of strings by address, each read's strings and each copy freed. */
class FakeDns implements Win32DnsNative {
  /** The static servers' NameServer per interface GUID. */
  nameServers = new Map<string, string>([[GUID_OF(4), '10.0.0.53 10.0.0.54']]);
  memory = new Map<bigint, string>();
  private next = 0x10000n;
  getStatus = 0;
  setStatus = 0;
  sets: { guid: string; flags: bigint; nameServer: string }[] = [];
  readsFreed = 0;

  convertInterfaceLuidToGuid(luid: Buffer, guid: Buffer): number {
    guidToBuffer(GUID_OF(Number(luid.readBigUInt64LE(0) & 0xffffffn))).copy(guid);
    return 0;
  }
  getInterfaceDnsSettings(guid: Buffer, settings: Buffer): number {
    expect(decodeDnsInterfaceSettings(settings)).toMatchObject({ version: 1, flags: 0n });
    if (this.getStatus !== 0) return this.getStatus;
    const text = this.nameServers.get(guidFromBuffer(guid));
    if (text === undefined) return WIN32_ERROR.ERROR_NOT_FOUND;
    if (text !== '') settings.writeBigUInt64LE(this.place(text), O.NameServer);
    return 0;
  }
  freeInterfaceDnsSettings(settings: Buffer): void {
    const at = settings.readBigUInt64LE(O.NameServer);
    if (at !== 0n && !this.memory.delete(at)) throw new Error('freed twice');
    this.readsFreed++;
  }
  setInterfaceDnsSettings(guid: Buffer, settings: Buffer): number {
    const s = decodeDnsInterfaceSettings(settings);
    this.sets.push({ guid: guidFromBuffer(guid), flags: s.flags, nameServer: this.readWStringAt(s.nameServer) });
    return this.setStatus;
  }
  readWStringAt(address: bigint): string {
    const s = this.memory.get(address);
    if (s === undefined) throw new Error(`no string at ${address}`);
    return s;
  }
  copyToNative(bytes: Buffer): bigint {
    return this.place(fromUtf16z(bytes));
  }
  freeNative(address: bigint): void {
    if (!this.memory.delete(address)) throw new Error('freed twice');
  }
  private place(s: string): bigint {
    const at = (this.next += 0x100n);
    this.memory.set(at, s);
    return at;
  }
}

describe('Win32Host: the adapter’s hand-set DNS servers', () => {
  const host = (dns?: FakeDns) => {
    const dll = new FakeIpHelper();
    return { dll, h: new Win32Host(dll, () => ({}), undefined, undefined, dns) };
  };

  it('nicConfiguration reads NameServer by the interface GUID and frees what the read stored', async () => {
    const dns = new FakeDns();
    const { dll, h } = host(dns);
    expect(await h.nicConfiguration(4)).toEqual({ addresses: [{ address: '10.0.0.2', prefixLength: 24, origin: 'manual' }], routes: [], dnsServers: ['10.0.0.53', '10.0.0.54'] });
    expect(dns.readsFreed).toBe(1);
    expect(dns.memory.size).toBe(0);
    expect(dll.tablesFreed).toBe(dll.tablesGiven);
    dns.nameServers.set(GUID_OF(4), '');
    expect((await h.nicConfiguration(4)).dnsServers).toEqual([]);
  });

  it.each<[string, (dns: FakeDns) => void]>([
    ['no DNS calls on this host (an iphlpapi.dll before Windows 10 build 19041)', () => undefined],
    ['a failing status', (dns) => (dns.getStatus = WIN32_ERROR.ERROR_ACCESS_DENIED)],
    ['an interface without a GUID', (dns) => dns.nameServers.clear()],
    ['a NameServer that is not a list of addresses', (dns) => dns.nameServers.set(GUID_OF(4), '10.0.0.53,dns.example')],
    [
      'the export missing (the call throws)',
      (dns) =>
        (dns.getInterfaceDnsSettings = () => {
          throw new Error('GetInterfaceDnsSettings: the specified procedure could not be found');
        }),
    ],
  ])('a read that fails is unknown (no dnsServers: nothing is restored on a guess): %s', async (name, breakIt) => {
    const dns = new FakeDns();
    breakIt(dns);
    const { h } = host(name.startsWith('no DNS') ? undefined : dns);
    const config = await h.nicConfiguration(4);
    expect(config.dnsServers).toBeUndefined();
    expect(config.addresses).toHaveLength(1);
    expect(dns.memory.size).toBe(0);
  });

  it('setDnsServers: one SetInterfaceDnsSettings per stack on that interface’s GUID, each copy freed; a failing status is FLANNEL_ERR_HOST', async () => {
    const dns = new FakeDns();
    const { h } = host(dns);
    await h.setDnsServers(9, ['10.0.0.53', 'fd00::53', '10.0.0.54']);
    expect(dns.sets).toEqual([
      { guid: GUID_OF(9), flags: 0x2n, nameServer: '10.0.0.53,10.0.0.54' },
      { guid: GUID_OF(9), flags: 0x3n, nameServer: 'fd00::53' },
    ]);
    expect(dns.memory.size).toBe(0);
    dns.setStatus = WIN32_ERROR.ERROR_INVALID_PARAMETER;
    await expectCode(h.setDnsServers(9, ['10.0.0.53']), HostError, 'FLANNEL_ERR_HOST');
    expect(dns.memory.size).toBe(0);
    await expectCode(h.setDnsServers(5, ['10.0.0.53']), HostError, 'FLANNEL_ERR_HOST'); // no such interface
    await expectCode(host().h.setDnsServers(4, ['10.0.0.53']), HostError, 'FLANNEL_ERR_HOST'); // no DNS calls
  });
});

// The Windows host on iphlpapi only: IPv4 addresses from GetIpAddrTable, IPv6 addresses from
// GetUnicastIpAddressTable(AF_INET6) + FreeMibTable, one adapter's addresses and routes with their origins
// (AF_UNSPEC) and a manual address added with CreateUnicastIpAddressEntry, its hand-set DNS servers read with
// GetInterfaceDnsSettings + FreeInterfaceDnsSettings and set with SetInterfaceDnsSettings (by the interface
// GUID from ConvertInterfaceIndexToLuid + ConvertInterfaceLuidToGuid), the adapter's friendly name
// from ConvertInterfaceIndexToLuid + ConvertInterfaceLuidToAlias, its MTU (NlMtu) and forwarding flag
// from GetIpInterfaceEntry, forwarding changed with SetIpInterfaceEntry, the default route's interface
// from GetIpForwardTable2. os.networkInterfaces() (GetAdaptersAddresses in libuv) serves only an
// adapter's MAC: under Wine it lists the Linux host's interfaces, so no MAC is found there and HNS
// assigns one, as it does when none is given.
/* eslint-disable @typescript-eslint/require-await -- the iphlpapi calls are synchronous; `async` is what turns their throws into the rejections the Host/RouteTable contract promises */
import { networkInterfaces } from 'node:os';
import { systemClock, type Clock } from '../basics/clock.js';
import { HostError } from '../basics/errors.js';
import { readIpForwardTable, readIpv4ForwardTable, win32StatusAdvice } from '../routes/iphlpapi-routes.js';
import { decodeDnsInterfaceSettings, dnsSettingsToRead, encodeNameServerSettings, nameServerStrings, parseNameServer } from '../win32/dns-settings.js';
import { AF_INET, AF_INET6, AF_UNSPEC, fromUtf16z, IF_MAX_STRING_SIZE, SIZES, utf16z, WIN32_ERROR } from '../win32/encoding.js';
import {
  decodeIpAddrTable,
  decodeIpInterfaceRow,
  decodeUnicastIpAddressTable,
  encodeIpInterfaceKey,
  encodeUnicastIpAddressRow,
  ipAddrTableLength,
  prefixOriginSetting,
  routeOriginSetting,
  setIpInterfaceForwarding,
  unicastIpAddressTableLength,
  unicastRowHeld,
  unicastRowToIpv6Address,
} from '../win32/iphlpapi.js';
import type { IpInterfaceRow, UnicastIpAddressRow } from '../win32/iphlpapi.js';
import type { Win32DnsNative, Win32IpHelperNative, Win32ServiceNative } from '../win32/native.js';
import { restartService, serviceProcessId } from '../win32/services.js';
import type { Host, HostInterface, InterfacesOptions, IpFamily, Ipv6Address, NicConfiguration } from './host.js';

function hostError(op: string, status: number, what: string, context: Record<string, string | number | undefined> = {}): HostError {
  return new HostError('FLANNEL_ERR_HOST', `${op} failed ${what} (status ${status}): ${win32StatusAdvice(status)}`, { op, status, ...context });
}

type NetworkInterfaces = NodeJS.Dict<{ address: string; family: string | number; mac: string }[]>;

/** The MAC of the interface holding `ip` in Windows' form (`00-15-5D-..`), from os.networkInterfaces(); undefined when unknown. */
export function hnsMacOf(ip: string, ifaces: NetworkInterfaces): string | undefined {
  for (const list of Object.values(ifaces)) {
    for (const a of list ?? []) {
      if (a.address === ip && a.mac && a.mac !== '00:00:00:00:00:00') return a.mac.replace(/:/g, '-').toUpperCase();
    }
  }
  return undefined;
}

/** The Host Network Service's service name (`Get-Service hns`). */
export const HNS_SERVICE = 'hns';

export class Win32Host implements Host {
  constructor(
    private readonly dll: Win32IpHelperNative,
    private readonly interfacesOfNode: () => NetworkInterfaces = networkInterfaces,
    /** advapi32's service control manager (the hns service's process, service restarts); none = not known. */
    private readonly services?: Win32ServiceNative,
    private readonly clock: Clock = systemClock,
    /** iphlpapi's DNS settings calls; none = the hand-set DNS servers are unknown (never read, never set). */
    private readonly dns?: Win32DnsNative,
  ) {}

  /** GetIpAddrTable, growing the buffer as long as it answers ERROR_INSUFFICIENT_BUFFER. */
  private ipAddrTable(): Buffer | undefined {
    let size = ipAddrTableLength(16);
    for (let attempt = 0; attempt < 5; attempt++) {
      const table = Buffer.alloc(size);
      const sizeBuf = Buffer.alloc(4);
      sizeBuf.writeUInt32LE(size, 0);
      const status = this.dll.getIpAddrTable(table, sizeBuf, true);
      if (status === WIN32_ERROR.NO_ERROR) return table;
      if (status === WIN32_ERROR.ERROR_NO_DATA) return undefined;
      if (status !== WIN32_ERROR.ERROR_INSUFFICIENT_BUFFER) throw hostError('GetIpAddrTable', status, 'reading the IPv4 addresses');
      // Addresses may appear between the two calls: ask for a little more than the size given back.
      size = Math.max(sizeBuf.readUInt32LE(0), size) + SIZES.MIB_IPADDRROW * 4;
    }
    throw new HostError('FLANNEL_ERR_HOST', 'GetIpAddrTable kept asking for a larger buffer; the address table is changing too fast to read', {
      op: 'GetIpAddrTable',
    });
  }

  /**
   * GetUnicastIpAddressTable(family): the rows of the addresses held (the table is always freed); an empty
   * table is no rows. Throws HostError FLANNEL_ERR_HOST on another status (or what the DLL throws, e.g. an
   * iphlpapi.dll without the export).
   */
  private unicastRows(family: number): UnicastIpAddressRow[] {
    const { status, table } = this.dll.getUnicastIpAddressTable(family);
    try {
      if (status === WIN32_ERROR.ERROR_NOT_FOUND || (status === WIN32_ERROR.NO_ERROR && table === null)) return [];
      if (status !== WIN32_ERROR.NO_ERROR || table === null) throw hostError('GetUnicastIpAddressTable', status, 'reading the unicast addresses');
      const n = this.dll.readBytes(table, 4).readUInt32LE(0);
      return (n === 0 ? [] : decodeUnicastIpAddressTable(this.dll.readBytes(table, unicastIpAddressTableLength(n)))).filter(unicastRowHeld);
    } finally {
      if (table !== null) this.dll.freeMibTable(table);
    }
  }

  /**
   * Each interface's IPv6 unicast addresses in the table's order. Undefined when the read fails (a status
   * other than NO_ERROR or ERROR_NOT_FOUND, or an iphlpapi.dll without the export): the interfaces then
   * carry no `ipv6Addresses` and dual-stack falls back to --public-ipv6 (../agent/external-interface.ts), as before this read existed.
   */
  private ipv6Addresses(): Map<number, Ipv6Address[]> | undefined {
    let rows: UnicastIpAddressRow[];
    try {
      rows = this.unicastRows(AF_INET6);
    } catch {
      return undefined;
    }
    const byIndex = new Map<number, Ipv6Address[]>();
    for (const row of rows) {
      if (row.family !== AF_INET6) continue;
      const list = byIndex.get(row.interfaceIndex) ?? [];
      list.push(unicastRowToIpv6Address(row));
      byIndex.set(row.interfaceIndex, list);
    }
    return byIndex;
  }

  /** The adapter's friendly name (alias), or undefined when the interface is gone. */
  private alias(index: number): string | undefined {
    const luid = Buffer.alloc(SIZES.NET_LUID);
    let status = this.dll.convertInterfaceIndexToLuid(index, luid);
    if (status === WIN32_ERROR.ERROR_NOT_FOUND || status === WIN32_ERROR.ERROR_INVALID_PARAMETER) return undefined;
    if (status !== WIN32_ERROR.NO_ERROR) throw hostError('ConvertInterfaceIndexToLuid', status, `for interface ${index}`, { interfaceIndex: index });
    const chars = IF_MAX_STRING_SIZE + 1;
    const alias = Buffer.alloc(chars * 2);
    status = this.dll.convertInterfaceLuidToAlias(luid, alias, chars);
    if (status === WIN32_ERROR.ERROR_NOT_FOUND || status === WIN32_ERROR.ERROR_INVALID_PARAMETER) return undefined;
    if (status !== WIN32_ERROR.NO_ERROR) throw hostError('ConvertInterfaceLuidToAlias', status, `for interface ${index}`, { interfaceIndex: index });
    return fromUtf16z(alias);
  }

  /** GetIpInterfaceEntry(AF_INET or AF_INET6, index): the raw row, or undefined when there is no such interface. */
  private ipInterfaceRow(index: number, family: IpFamily = 'ipv4'): Buffer | undefined {
    const row = Buffer.alloc(SIZES.MIB_IPINTERFACE_ROW);
    this.dll.initializeIpInterfaceEntry(row);
    encodeIpInterfaceKey(index, row, family === 'ipv6' ? AF_INET6 : AF_INET);
    const status = this.dll.getIpInterfaceEntry(row);
    if (status === WIN32_ERROR.ERROR_NOT_FOUND) return undefined;
    if (status !== WIN32_ERROR.NO_ERROR) throw hostError('GetIpInterfaceEntry', status, `for interface ${index}`, { interfaceIndex: index });
    return row;
  }

  private requireIpInterface(op: string, index: number, family: IpFamily = 'ipv4'): Buffer {
    const row = this.ipInterfaceRow(index, family);
    if (!row) {
      throw new HostError(
        'FLANNEL_ERR_HOST',
        `${op}: there is no ${family === 'ipv6' ? 'IPv6' : 'IPv4'} interface with index ${index} (the adapter may have been replaced when HNS created the vSwitch; it is re-resolved on the next attempt)`,
        { op, interfaceIndex: index, status: WIN32_ERROR.ERROR_NOT_FOUND },
      );
    }
    return row;
  }

  /** GetIpAddrTable's adapters; GetUnicastIpAddressTable(AF_INET6) only with `ipv6` (dual-stack start-up, an IPv6 --iface). */
  async interfaces(opts: InterfacesOptions = {}): Promise<HostInterface[]> {
    const table = this.ipAddrTable();
    if (!table) return [];
    const out: HostInterface[] = [];
    const info = new Map<number, { name: string; row: IpInterfaceRow } | undefined>();
    const v6 = opts.ipv6 ? this.ipv6Addresses() : undefined;
    for (const a of decodeIpAddrTable(table)) {
      if (a.address === '0.0.0.0' || a.address.startsWith('127.')) continue;
      if (!info.has(a.interfaceIndex)) {
        const name = this.alias(a.interfaceIndex);
        const raw = name === undefined ? undefined : this.ipInterfaceRow(a.interfaceIndex);
        info.set(a.interfaceIndex, name !== undefined && raw ? { name, row: decodeIpInterfaceRow(raw) } : undefined);
      }
      const i = info.get(a.interfaceIndex);
      if (!i) continue; // the interface went away between the calls
      out.push({
        name: i.name,
        index: a.interfaceIndex,
        ipv4: a.address,
        prefixLength: a.prefixLength,
        mtu: i.row.nlMtu,
        ...(v6 ? { ipv6Addresses: v6.get(a.interfaceIndex) ?? [] } : {}),
      });
    }
    return out;
  }

  async defaultRouteInterfaceIndex(): Promise<number | undefined> {
    let best: { index: number; metric: number } | undefined;
    for (const r of readIpv4ForwardTable(this.dll)) {
      if (r.family !== AF_INET || r.destination !== '0.0.0.0' || r.prefixLength !== 0) continue;
      if (!best || r.metric < best.metric) best = { index: r.interfaceIndex, metric: r.metric };
    }
    return best?.index;
  }

  macAddress(ipv4: string): Promise<string | undefined> {
    return Promise.resolve(hnsMacOf(ipv4, this.interfacesOfNode()));
  }

  /** The hns service's PID from the service control manager (QueryServiceStatusEx's dwProcessId; no process spawned). */
  async hnsInstance(): Promise<string | undefined> {
    return this.services ? serviceProcessId(this.services, HNS_SERVICE) : undefined;
  }

  /**
   * The adapter's unicast addresses (GetUnicastIpAddressTable(AF_UNSPEC)) and routes (GetIpForwardTable2(AF_UNSPEC)),
   * each with its origin (../win32/iphlpapi.ts prefixOriginSetting, routeOriginSetting), and its hand-set DNS
   * servers (`dnsServers`, absent when they could not be read: ./nic-keeper.ts then leaves them alone).
   */
  async nicConfiguration(interfaceIndex: number): Promise<NicConfiguration> {
    const addresses = this.unicastRows(AF_UNSPEC)
      .filter((r) => r.interfaceIndex === interfaceIndex)
      .map((r) => ({ address: r.address, prefixLength: r.onLinkPrefixLength, origin: prefixOriginSetting(r.prefixOrigin) }));
    const routes = readIpForwardTable(this.dll, AF_UNSPEC)
      .filter((r) => r.interfaceIndex === interfaceIndex)
      .map((r) => ({ destinationPrefix: `${r.destination}/${r.prefixLength}`, nextHop: r.nextHop, metric: r.metric, origin: routeOriginSetting(r) }));
    const dnsServers = this.staticDnsServers(interfaceIndex);
    return { addresses, routes, ...(dnsServers ? { dnsServers } : {}) };
  }

  /** The interface GUID the DNS settings calls take (ConvertInterfaceIndexToLuid, ConvertInterfaceLuidToGuid). */
  private interfaceGuid(dns: Win32DnsNative, index: number): Buffer {
    const luid = Buffer.alloc(SIZES.NET_LUID);
    let status = this.dll.convertInterfaceIndexToLuid(index, luid);
    if (status !== WIN32_ERROR.NO_ERROR) throw hostError('ConvertInterfaceIndexToLuid', status, `for interface ${index}`, { interfaceIndex: index });
    const guid = Buffer.alloc(SIZES.GUID);
    status = dns.convertInterfaceLuidToGuid(luid, guid);
    if (status !== WIN32_ERROR.NO_ERROR) throw hostError('ConvertInterfaceLuidToGuid', status, `for interface ${index}`, { interfaceIndex: index });
    return guid;
  }

  /**
   * GetInterfaceDnsSettings' NameServer (the static adapter DNS servers; DHCP's are not in it), what it
   * stored always freed with FreeInterfaceDnsSettings. Undefined when it cannot be told: no DNS calls on this
   * host (an iphlpapi.dll before Windows 10 build 19041 lacks the export), a failing status, a NameServer
   * that is not a list of addresses.
   */
  private staticDnsServers(index: number): string[] | undefined {
    const dns = this.dns;
    if (!dns) return undefined;
    try {
      const guid = this.interfaceGuid(dns, index);
      const settings = dnsSettingsToRead();
      const status = dns.getInterfaceDnsSettings(guid, settings);
      if (status !== WIN32_ERROR.NO_ERROR) return undefined;
      try {
        const { nameServer } = decodeDnsInterfaceSettings(settings);
        return nameServer === 0n ? [] : parseNameServer(dns.readWStringAt(nameServer));
      } finally {
        dns.freeInterfaceDnsSettings(settings);
      }
    } catch {
      return undefined;
    }
  }

  /**
   * SetInterfaceDnsSettings with DNS_SETTING_NAMESERVER, one call per stack the servers belong to (IPv6 ones
   * with DNS_SETTING_IPV6); NameServer a copy of the list in native memory, freed after the call.
   */
  async setDnsServers(interfaceIndex: number, servers: readonly string[]): Promise<void> {
    const dns = this.dns;
    if (!dns) throw new HostError('FLANNEL_ERR_HOST', 'cannot set DNS servers: the DNS settings calls of iphlpapi.dll are not available', { interfaceIndex });
    const guid = this.interfaceGuid(dns, interfaceIndex);
    for (const { ipv6, text } of nameServerStrings(servers)) {
      const address = dns.copyToNative(utf16z(text));
      try {
        const status = dns.setInterfaceDnsSettings(guid, encodeNameServerSettings(address, ipv6));
        if (status !== WIN32_ERROR.NO_ERROR) {
          throw hostError('SetInterfaceDnsSettings', status, `setting the DNS servers ${text} on interface ${interfaceIndex}`, { interfaceIndex });
        }
      } finally {
        dns.freeNative(address);
      }
    }
  }

  /** InitializeUnicastIpAddressEntry + CreateUnicastIpAddressEntry; ERROR_OBJECT_ALREADY_EXISTS (held already) is success. */
  async addUnicastAddress(interfaceIndex: number, address: string, prefixLength: number): Promise<void> {
    const row = Buffer.alloc(SIZES.MIB_UNICASTIPADDRESS_ROW);
    this.dll.initializeUnicastIpAddressEntry(row);
    const status = this.dll.createUnicastIpAddressEntry(encodeUnicastIpAddressRow({ interfaceIndex, address, prefixLength }, row));
    if (status === WIN32_ERROR.NO_ERROR || status === WIN32_ERROR.ERROR_OBJECT_ALREADY_EXISTS) return;
    throw hostError('CreateUnicastIpAddressEntry', status, `adding ${address}/${prefixLength} to interface ${interfaceIndex}`, { interfaceIndex, address });
  }

  /** Stop and start `name` through the SCM (../win32/services.ts). */
  async restartService(name: string, signal?: AbortSignal): Promise<void> {
    if (!this.services) throw new HostError('FLANNEL_ERR_SERVICE', `cannot restart service ${name}: the service control manager is not available`, { service: name });
    await restartService(this.services, name, this.clock, { signal });
  }

  async getForwarding(interfaceIndex: number, family: IpFamily = 'ipv4'): Promise<boolean> {
    return decodeIpInterfaceRow(this.requireIpInterface('GetIpInterfaceEntry', interfaceIndex, family)).forwardingEnabled;
  }

  /** SetIpInterfaceEntry on the row GetIpInterfaceEntry gave for this family (AF_INET6 for IPv6, as `netsh interface ipv6 set interface forwarding=enabled`). */
  async setForwarding(interfaceIndex: number, enabled: boolean, family: IpFamily = 'ipv4'): Promise<void> {
    const row = this.requireIpInterface('GetIpInterfaceEntry', interfaceIndex, family);
    setIpInterfaceForwarding(row, enabled);
    const status = this.dll.setIpInterfaceEntry(row);
    if (status !== WIN32_ERROR.NO_ERROR) {
      throw hostError('SetIpInterfaceEntry', status, `${enabled ? 'enabling' : 'disabling'} ${family === 'ipv6' ? 'IPv6' : 'IPv4'} forwarding on interface ${interfaceIndex}`, {
        interfaceIndex,
      });
    }
  }
}

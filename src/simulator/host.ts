// The host side of the simulated node: adapters, the vSwitch a network binds to a physical NIC, the
// IPv4 route table (pure functions on the state document; the model, ./model.ts, locks and persists),
// and the Host and RouteTable seams over the model: the simulated counterparts of GetAdaptersAddresses,
// Get/SetIpInterfaceEntry and GetIpForwardTable2 / CreateIpForwardEntry2 / DeleteIpForwardEntry2
// (netioapi.h).
// What Windows does, and the model does too:
//  * an L2Bridge/Overlay network binds a vSwitch to ONE physical adapter (hcsshim hcn/hcnnetwork.go
//    `NetAdapterName` policy, internal/hns/hnsnetwork.go `NetworkAdapterName`; without it HNS picks the
//    adapter of the default route); the adapter's IPv4 address and default route move to a new host vNIC
//    `vEthernet (<adapter>)` with a new interface index (flannel hostgw_windows.go: "When a new hns
//    network is created, the interface is modified, esp the name, index"; vxlan device_windows.go waits
//    for the interface holding the ManagementIP), and move back when the last such network is deleted;
//  * the default route is the 0.0.0.0/0 row of lowest metric (GetIpForwardTable2 / `route print`);
//  * routes on an unknown interface fail with 1168 ERROR_NOT_FOUND (netioapi.h CreateIpForwardEntry2).
import { HostError, RouteError } from '../basics/errors.js';
import { isApipa } from '../basics/ip4.js';
import { WIN32_ERROR } from '../win32/encoding.js';
import type { Host, HostInterface, InterfacesOptions, IpFamily, NicAddress, NicConfiguration, NicRoute, SettingOrigin } from '../host/host.js';
import { ERROR_NOT_FOUND, ERROR_OBJECT_ALREADY_EXISTS, type Route, type RouteTable } from '../routes/route-table.js';
import { routeKey, type KeyedState } from './keyed.js';
import type { SimulatedDataplane } from './model.js';
import { policySetting, type HcnNetwork } from '../hns/schema.js';
import { PHYSICAL_ADAPTER, isVSwitchType, vEthernetName, vEthernetTarget, type DataplaneState, type SimAdapter, type SimRoute } from './state.js';

/** An adapter's MAC: the model keeps none, so it is derived from the interface index under Hyper-V's 00-15-5D prefix. */
function simAdapterMac(a: SimAdapter): string {
  const hex = (n: number) => n.toString(16).toUpperCase().padStart(2, '0');
  return `00-15-5D-00-${hex((a.InterfaceIndex >> 8) & 0xff)}-${hex(a.InterfaceIndex & 0xff)}`;
}

export function defaultRoute(state: DataplaneState): SimRoute | undefined {
  return state.routes.filter((r) => r.DestinationPrefix === '0.0.0.0/0').sort((a, b) => a.Metric - b.Metric)[0];
}

const byName = (state: DataplaneState, name: string): SimAdapter | undefined =>
  state.adapters.find((a) => a.Name === name) ?? state.adapters.find((a) => a.Name.toLowerCase() === name.toLowerCase());

/** The adapter a vSwitch network is bound to (its NetAdapterName policy; `Ethernet` for a hand-written one without). */
export function boundAdapterName(net: HcnNetwork): string {
  return policySetting(net.Policies, 'NetAdapterName', 'NetworkAdapterName') ?? PHYSICAL_ADAPTER;
}

/**
 * The physical adapter a new vSwitch network binds to: the one named (a `vEthernet (...)` vNIC is no
 * physical adapter: HNS refuses it), else the one behind the default route.
 */
export function physicalAdapterFor(state: DataplaneState, name: string | undefined): SimAdapter | undefined {
  if (name) {
    const a = byName(state, name);
    return a && vEthernetTarget(a.Name) === undefined ? a : undefined;
  }
  const idx = defaultRoute(state)?.InterfaceIndex;
  const viaRoute = state.adapters.find((a) => a.InterfaceIndex === idx);
  if (!viaRoute) return undefined;
  const target = vEthernetTarget(viaRoute.Name);
  return target === undefined ? viaRoute : byName(state, target);
}

/** The APIPA address Windows' IPv4 autoconfiguration gives an adapter without one (RFC 3927, 169.254.1.0-169.254.254.255/16), by its index. */
export function apipaAddress(interfaceIndex: number): string {
  return `169.254.${(interfaceIndex % 254) + 1}.${((interfaceIndex * 37) % 254) + 1}`;
}

const isDefaultRoute = (prefix: string) => prefix === '0.0.0.0/0' || prefix === '::/0';

/**
 * Bind the vSwitch to `phys` once: its IP and default routes move to `vEthernet (<phys>)` with a new index;
 * its other routes are not carried over (the persistent routes start scripts add back by hand:
 * sig-windows-tools#36). Only the first L2Bridge/Overlay network on an adapter does this: HNS takes an
 * adapter "not already attached to an external vSwitch" for a new one and shares the vSwitch of one that
 * is (MicrosoftDocs/Virtualization-Documentation PR #595, microsoft/SDN#269 "An adapter was not found"),
 * so a second network finds the vNIC as it is. With the state's `vnicSettings` `dhcp-only` the vNIC keeps
 * only what DHCP gives: a NIC configured by hand comes up on APIPA, without gateway, DNS servers or IPv6
 * address (VnicSettings, ./state.ts, cites the reports).
 */
export function ensureVSwitch(state: DataplaneState, phys: SimAdapter, newIndex: () => number): SimAdapter {
  const name = vEthernetName(phys.Name);
  const existing = state.adapters.find((a) => a.Name === name);
  if (existing) return existing;
  const index = newIndex();
  const dropStatic = state.vnicSettings === 'dhcp-only' && phys.Dhcp !== true;
  const vnic: SimAdapter = {
    Name: name,
    InterfaceIndex: index,
    IPAddress: dropStatic ? apipaAddress(index) : phys.IPAddress,
    PrefixLength: dropStatic ? 16 : phys.PrefixLength,
    Mtu: phys.Mtu,
    Forwarding: false,
    ...(phys.Dhcp === true || dropStatic ? { Dhcp: true } : {}),
    ...(phys.IPv6Address !== undefined && state.vnicSettings !== 'dhcp-only' ? { IPv6Address: phys.IPv6Address, IPv6PrefixLength: phys.IPv6PrefixLength ?? 64 } : {}),
    ...(phys.DnsServers !== undefined && !dropStatic ? { DnsServers: [...phys.DnsServers] } : {}),
  };
  phys.IPAddress = '';
  phys.PrefixLength = 0;
  delete phys.IPv6Address;
  delete phys.IPv6PrefixLength;
  state.adapters.push(vnic);
  const moves = (r: SimRoute) => isDefaultRoute(r.DestinationPrefix) && !(state.vnicSettings === 'dhcp-only' && (dropStatic || r.DestinationPrefix === '::/0'));
  state.routes = state.routes.flatMap((r) => {
    if (r.InterfaceIndex !== phys.InterfaceIndex) return [r];
    return moves(r) ? [{ ...r, InterfaceIndex: vnic.InterfaceIndex }] : [];
  });
  return vnic;
}

/** Unbind the vSwitch from `physName` when no vSwitch network uses it any more: IP and default route go back. */
export function releaseVSwitch(state: DataplaneState, physName: string): void {
  const stillUsed = state.networks.some((n) => isVSwitchType(n.Type) && boundAdapterName(n).toLowerCase() === physName.toLowerCase());
  const vnic = state.adapters.find((a) => a.Name.toLowerCase() === vEthernetName(physName).toLowerCase());
  if (stillUsed || !vnic) return;
  const phys = byName(state, physName);
  if (phys) {
    phys.IPAddress = vnic.IPAddress;
    phys.PrefixLength = vnic.PrefixLength;
    if (vnic.IPv6Address !== undefined) {
      phys.IPv6Address = vnic.IPv6Address;
      phys.IPv6PrefixLength = vnic.IPv6PrefixLength ?? 64;
    }
    if (vnic.DnsServers !== undefined) phys.DnsServers = [...vnic.DnsServers];
  }
  state.routes = state.routes.flatMap((r) => {
    if (r.InterfaceIndex !== vnic.InterfaceIndex) return [r];
    return (r.DestinationPrefix === '0.0.0.0/0' || r.DestinationPrefix === '::/0') && phys ? [{ ...r, InterfaceIndex: phys.InterfaceIndex }] : [];
  });
  state.adapters = state.adapters.filter((a) => a !== vnic);
}

/** CreateIpForwardEntry2: RouteError 1168 for an unknown interface, 5010 for an existing route. */
export function createRoute(view: KeyedState, route: SimRoute): void {
  const ctx = { destination: route.DestinationPrefix, nextHop: route.NextHop, interfaceIndex: route.InterfaceIndex };
  if (!view.doc.adapters.some((a) => a.InterfaceIndex === route.InterfaceIndex)) {
    throw new RouteError(
      'FLANNEL_ERR_ROUTE',
      `CreateIpForwardEntry2 failed with status ${ERROR_NOT_FOUND}: no interface with index ${route.InterfaceIndex}; re-resolve the interface`,
      {
        ...ctx,
        status: ERROR_NOT_FOUND,
      },
    );
  }
  if (view.routes.count(routeKey(route)) > 0) {
    throw new RouteError('FLANNEL_ERR_ROUTE', `CreateIpForwardEntry2 failed with status ${ERROR_OBJECT_ALREADY_EXISTS}: the route already exists`, {
      ...ctx,
      status: ERROR_OBJECT_ALREADY_EXISTS,
    });
  }
  view.addRoute({ ...route });
}

/** DeleteIpForwardEntry2: RouteError 1168 when no such route. */
export function deleteRoute(view: KeyedState, route: SimRoute): void {
  const held = view.routes.first(routeKey(route));
  if (!held) {
    throw new RouteError('FLANNEL_ERR_ROUTE', `DeleteIpForwardEntry2 failed with status ${ERROR_NOT_FOUND}: no such route`, {
      destination: route.DestinationPrefix,
      nextHop: route.NextHop,
      interfaceIndex: route.InterfaceIndex,
      status: ERROR_NOT_FOUND,
    });
  }
  view.deleteRoute(held);
}

/**
 * CreateUnicastIpAddressEntry of a manual address: the model holds one address per family and adapter, so
 * it replaces an APIPA one (Windows' autoconfiguration address yields to a configured one, RFC 3927 1.9)
 * and the adapter is no longer DHCP-configured; the address it holds already is ERROR_OBJECT_ALREADY_EXISTS
 * (5010), and a second configured one of a family is refused as ERROR_NOT_SUPPORTED (50): not modelled.
 */
export function addUnicastAddress(state: DataplaneState, interfaceIndex: number, address: string, prefixLength: number): void {
  const op = 'CreateUnicastIpAddressEntry';
  const a = adapterOrThrow(state, op, interfaceIndex);
  const v6 = address.includes(':');
  const held = v6 ? a.IPv6Address : a.IPAddress;
  const fail = (status: number, why: string) => new HostError('FLANNEL_ERR_HOST', `${op} failed with status ${status}: ${why}`, { op, interfaceIndex, address, status });
  if (held === address) throw fail(ERROR_OBJECT_ALREADY_EXISTS, `interface ${interfaceIndex} holds ${address} already`);
  if (v6) {
    if (held !== undefined) throw fail(WIN32_ERROR.ERROR_NOT_SUPPORTED, 'the simulated adapter holds one IPv6 address');
    a.IPv6Address = address;
    a.IPv6PrefixLength = prefixLength;
    return;
  }
  if (held !== '' && held !== undefined && !isApipa(held)) throw fail(WIN32_ERROR.ERROR_NOT_SUPPORTED, 'the simulated adapter holds one IPv4 address');
  a.IPAddress = address;
  a.PrefixLength = prefixLength;
  delete a.Dhcp;
}

/** The adapter with this index; HostError FLANNEL_ERR_HOST (status 1168) when there is none. */
export function adapterOrThrow(state: DataplaneState, op: string, interfaceIndex: number): SimAdapter {
  const a = state.adapters.find((x) => x.InterfaceIndex === interfaceIndex);
  if (!a) {
    throw new HostError(
      'FLANNEL_ERR_HOST',
      `${op} failed with status ${ERROR_NOT_FOUND}: no interface with index ${interfaceIndex}; re-resolve the interface (its index changes when the vSwitch is created)`,
      { op, interfaceIndex, status: ERROR_NOT_FOUND },
    );
  }
  return a;
}

// ---------------------------------------------------------------- the seams

/** Host on the model: its adapters (physical NICs, then `vEthernet (...)` vNICs) and their MACs, the default route's interface, IPv4 forwarding. */
export class SimulatedHost implements Host {
  constructor(private readonly dp: SimulatedDataplane) {}

  /** The adapters with an IPv4 address; their IPv6 address only when asked for, as the Windows host reads it. */
  async interfaces(opts: InterfacesOptions = {}): Promise<HostInterface[]> {
    await this.dp.enter('GetAdaptersAddresses', 'host');
    return this.dp
      .listAdapters()
      .filter((a) => a.IPAddress !== '')
      .map((a) => ({
        name: a.Name,
        index: a.InterfaceIndex,
        ipv4: a.IPAddress,
        prefixLength: a.PrefixLength,
        mtu: a.Mtu,
        ...(opts.ipv6 && a.IPv6Address !== undefined ? { ipv6Addresses: [{ address: a.IPv6Address, prefixLength: a.IPv6PrefixLength ?? 64 }] } : {}),
      }));
  }

  async macAddress(ipv4: string): Promise<string | undefined> {
    await this.dp.enter('GetAdaptersAddresses', 'host');
    const a = this.dp.listAdapters().find((x) => x.IPAddress === ipv4);
    return a && simAdapterMac(a);
  }

  /** The state file's `hnsInstance` (moved on by the "HNS restarted" fault, ./objects.ts restartHns). */
  async hnsInstance(): Promise<string | undefined> {
    await this.dp.enter('QueryServiceStatusEx', 'host', 0, 'hns');
    return String(this.dp.hnsInstance());
  }

  /**
   * A service restart through the SCM (ControlService SERVICE_CONTROL_STOP, then StartServiceW, as
   * src/win32/services.ts does): the state file counts it per service. A fault or injection on
   * `ControlService` fails it as src/win32/services.ts reports the SCM's error: HostError FLANNEL_ERR_SERVICE
   * with op, service and the Win32 status (docs/errors.md).
   */
  async restartService(name: string): Promise<void> {
    try {
      await this.dp.enter('ControlService', 'host', 0, name);
    } catch (err) {
      const status = err instanceof HostError ? err.context['status'] : undefined;
      if (typeof status !== 'number') throw err;
      throw new HostError('FLANNEL_ERR_SERVICE', `ControlService failed stopping for service ${name} (error ${status}, injected on the simulated node)`, {
        op: 'ControlService',
        service: name,
        status,
      });
    }
    this.dp.restartService(name);
  }

  async defaultRouteInterfaceIndex(): Promise<number | undefined> {
    await this.dp.enter('GetIpForwardTable2', 'host');
    return this.dp.defaultRouteInterfaceIndex();
  }

  async setForwarding(interfaceIndex: number, enabled: boolean, family: IpFamily = 'ipv4'): Promise<void> {
    const v6 = family === 'ipv6' ? { Family: 'AF_INET6' } : {};
    await this.dp.enter('SetIpInterfaceEntry', 'host', 0, JSON.stringify({ InterfaceIndex: interfaceIndex, ForwardingEnabled: enabled, ...v6 }));
    this.dp.setForwarding(interfaceIndex, enabled, family);
  }

  async getForwarding(interfaceIndex: number, family: IpFamily = 'ipv4'): Promise<boolean> {
    const v6 = family === 'ipv6' ? { Family: 'AF_INET6' } : {};
    await this.dp.enter('GetIpInterfaceEntry', 'host', 0, JSON.stringify({ InterfaceIndex: interfaceIndex, ...v6 }));
    return this.dp.getForwarding(interfaceIndex, family);
  }

  /**
   * The adapter's addresses (GetUnicastIpAddressTable: an APIPA address is the autoconfiguration's, a DHCP
   * adapter's IPv4 DHCP's), its routes (GetIpForwardTable2: a DHCP adapter's default route is DHCP's, the
   * rest the operator's) and hand-set DNS servers (GetInterfaceDnsSettings; a fault on it makes them unknown,
   * as on a host without that call).
   */
  async nicConfiguration(interfaceIndex: number): Promise<NicConfiguration> {
    const input = JSON.stringify({ InterfaceIndex: interfaceIndex });
    await this.dp.enter('GetUnicastIpAddressTable', 'host', 0, input);
    const a = this.dp.listAdapters().find((x) => x.InterfaceIndex === interfaceIndex);
    if (!a)
      throw new HostError('FLANNEL_ERR_HOST', `there is no interface with index ${interfaceIndex}`, { op: 'GetUnicastIpAddressTable', interfaceIndex, status: ERROR_NOT_FOUND });
    const origin4: SettingOrigin = isApipa(a.IPAddress) ? 'other' : a.Dhcp ? 'dhcp' : 'manual';
    const addresses: NicAddress[] = [
      ...(a.IPAddress !== '' ? [{ address: a.IPAddress, prefixLength: a.PrefixLength, origin: origin4 }] : []),
      ...(a.IPv6Address !== undefined ? [{ address: a.IPv6Address, prefixLength: a.IPv6PrefixLength ?? 64, origin: 'manual' as const }] : []),
    ];
    await this.dp.enter('GetIpForwardTable2', 'host', 0, input);
    const routes: NicRoute[] = this.dp.listRoutes(interfaceIndex).map((r) => ({
      destinationPrefix: r.DestinationPrefix,
      nextHop: r.NextHop,
      metric: r.Metric,
      origin: a.Dhcp && r.DestinationPrefix === '0.0.0.0/0' ? 'dhcp' : 'manual',
    }));
    const dnsRead = await this.dp.enter('GetInterfaceDnsSettings', 'host', 0, input).then(
      () => true,
      () => false,
    );
    return { addresses, routes, ...(dnsRead ? { dnsServers: [...(a.DnsServers ?? [])] } : {}) };
  }

  /** CreateUnicastIpAddressEntry (./host.ts addUnicastAddress); the address held already is success. */
  async addUnicastAddress(interfaceIndex: number, address: string, prefixLength: number): Promise<void> {
    await this.dp.enter('CreateUnicastIpAddressEntry', 'host', 0, JSON.stringify({ InterfaceIndex: interfaceIndex, Address: address, PrefixLength: prefixLength }));
    try {
      this.dp.addUnicastAddress(interfaceIndex, address, prefixLength);
    } catch (err) {
      if (err instanceof HostError && err.context['status'] === ERROR_OBJECT_ALREADY_EXISTS) return;
      throw err;
    }
  }

  /** SetInterfaceDnsSettings(NameServer): the adapter's hand-set DNS servers. */
  async setDnsServers(interfaceIndex: number, servers: readonly string[]): Promise<void> {
    await this.dp.enter('SetInterfaceDnsSettings', 'host', 0, JSON.stringify({ InterfaceIndex: interfaceIndex, NameServer: servers.join(',') }));
    this.dp.setDnsServers(interfaceIndex, servers);
  }
}

function toSim(r: Route): SimRoute {
  return { DestinationPrefix: r.destinationPrefix, NextHop: r.nextHop, InterfaceIndex: r.interfaceIndex, Metric: r.metric };
}

function fromSim(r: SimRoute): Route {
  return { destinationPrefix: r.DestinationPrefix, nextHop: r.NextHop, interfaceIndex: r.InterfaceIndex, metric: r.Metric };
}

/**
 * RouteTable on the model. The model raises the NETIO statuses (5010 ERROR_OBJECT_ALREADY_EXISTS, 1168
 * ERROR_NOT_FOUND) as RouteError; this seam turns the duplicate add and the missing remove into success,
 * as the RouteTable contract says.
 */
export class SimulatedRouteTable implements RouteTable {
  constructor(private readonly dp: SimulatedDataplane) {}

  /** GetIpForwardTable2(AF_INET or AF_INET6) lists one family's routes. */
  async list(interfaceIndex?: number, family: IpFamily = 'ipv4'): Promise<Route[]> {
    const v6 = family === 'ipv6' ? { Family: 'AF_INET6' } : {};
    await this.dp.enter('GetIpForwardTable2', 'route', 0, interfaceIndex === undefined && family === 'ipv4' ? '' : JSON.stringify({ InterfaceIndex: interfaceIndex, ...v6 }));
    return this.dp
      .listRoutes(interfaceIndex)
      .filter((r) => (family === 'ipv6') === r.DestinationPrefix.includes(':'))
      .map(fromSim);
  }

  /** Duplicate (5010) = success; an unknown interface (1168) is thrown. */
  async add(route: Route): Promise<void> {
    await this.dp.enter('CreateIpForwardEntry2', 'route', 0, JSON.stringify(toSim(route)));
    try {
      this.dp.createRoute(toSim(route));
    } catch (err) {
      if (err instanceof RouteError && err.status === ERROR_OBJECT_ALREADY_EXISTS) return;
      throw err;
    }
  }

  /** Missing route (1168) = success. */
  async remove(route: Route): Promise<void> {
    await this.dp.enter('DeleteIpForwardEntry2', 'route', 0, JSON.stringify(toSim(route)));
    try {
      this.dp.deleteRoute(toSim(route));
    } catch (err) {
      if (err instanceof RouteError && err.status === ERROR_NOT_FOUND) return;
      throw err;
    }
  }
}

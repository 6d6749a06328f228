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
import type { Host, HostInterface, InterfacesOptions, IpFamily } from '../host/host.js';
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

/** Bind the vSwitch to `phys` once: its IP and routes move to `vEthernet (<phys>)` with a new index. */
export function ensureVSwitch(state: DataplaneState, phys: SimAdapter, newIndex: () => number): SimAdapter {
  const name = vEthernetName(phys.Name);
  const existing = state.adapters.find((a) => a.Name === name);
  if (existing) return existing;
  const vnic: SimAdapter = {
    Name: name,
    InterfaceIndex: newIndex(),
    IPAddress: phys.IPAddress,
    PrefixLength: phys.PrefixLength,
    Mtu: phys.Mtu,
    Forwarding: false,
    ...(phys.IPv6Address !== undefined ? { IPv6Address: phys.IPv6Address, IPv6PrefixLength: phys.IPv6PrefixLength ?? 64 } : {}),
  };
  phys.IPAddress = '';
  phys.PrefixLength = 0;
  delete phys.IPv6Address;
  delete phys.IPv6PrefixLength;
  state.adapters.push(vnic);
  state.routes = state.routes.flatMap((r) => {
    if (r.InterfaceIndex !== phys.InterfaceIndex) return [r];
    return r.DestinationPrefix === '0.0.0.0/0' || r.DestinationPrefix === '::/0' ? [{ ...r, InterfaceIndex: vnic.InterfaceIndex }] : [];
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

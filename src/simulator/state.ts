// The simulated node's state document (docs/simulator.md): its types and the fresh node it
// starts from. Pure. ./state-file.ts parses and validates it.
import type { HcnEndpoint, HcnLoadBalancer, HcnNetwork, HnsVersion } from '../hns/schema.js';
import { nthAddress } from '../basics/ip4.js';
import { HNS_PROFILES } from '../hns/features.js';
import type { FaultRule } from './faults.js';
import type { DuplicateRemoteEndpointIp, PolicyBatches } from './refusals.js';
import type { SimNamespace } from './namespaces.js';

/** A route as the state file stores it (iphlpapi's MIB_IPFORWARD_ROW2, reduced). */
export interface SimRoute {
  DestinationPrefix: string;
  NextHop: string;
  InterfaceIndex: number;
  Metric: number;
}

/**
 * A host network adapter. `IPAddress` is '' when the adapter carries no IPv4: a physical NIC a vSwitch
 * is bound to (its address moved to `vEthernet (<Name>)`, as on Windows).
 */
export interface SimAdapter {
  Name: string;
  InterfaceIndex: number;
  IPAddress: string;
  PrefixLength: number;
  Mtu: number;
  Forwarding: boolean;
  /**
   * The adapter's IPv6 unicast address and prefix length, when it has one (a dual-stack node). As the
   * IPv4 address, it moves to the vNIC with the vSwitch (Windows keeps the adapter's IPv6 configuration
   * on `vEthernet (<adapter>)`, Get-NetIPAddress -AddressFamily IPv6). Absent on IPv4-only nodes.
   */
  IPv6Address?: string;
  IPv6PrefixLength?: number;
  /** IPv6 forwarding (SetIpInterfaceEntry with Family AF_INET6); kept apart from IPv4's, as Windows does. */
  ForwardingV6?: boolean;
  /**
   * DHCP gives the adapter its IPv4 address and default route (`ipconfig /all`: "DHCP Enabled . . : Yes");
   * absent = configured by hand. Every other route is the operator's (`route -p add`, New-NetRoute).
   */
  Dhcp?: boolean;
  /** The DNS servers set on the adapter by hand (Set-DnsClientServerAddress, GetInterfaceDnsSettings' NameServer); absent = none. */
  DnsServers?: string[];
}

/**
 * What the vNIC of a new vSwitch keeps of its NIC's settings (the state file's `vnicSettings`, ./host.ts
 * ensureVSwitch): `copied` (default) the address, default route and DNS servers; `dhcp-only` only what DHCP
 * gives: a NIC configured by hand comes up on an APIPA address without gateway or DNS servers
 * (kubernetes-sigs/sig-windows-tools#162 and #105, microsoft/SDN#498, ovn-kubernetes/ovn-kubernetes#2530).
 */
export type VnicSettings = 'copied' | 'dhcp-only';
export const VNIC_SETTINGS_MODES: readonly VnicSettings[] = ['copied', 'dhcp-only'];

/** The state file document. `faults` and `policyBatches` are only present when someone wrote them. */
export interface DataplaneState {
  networks: HcnNetwork[];
  endpoints: HcnEndpoint[];
  routes: SimRoute[];
  adapters: SimAdapter[];
  /** HCN namespaces (pods' compartments, ./namespaces.ts); absent until the first is created. */
  namespaces?: SimNamespace[];
  faults?: FaultRule[];
  /** How HcnModifyNetwork applies several policies (./refusals.ts); absent = `atomic`. */
  policyBatches?: PolicyBatches;
  /** The HNS service's instance (its process), moved on by each "HNS restarted" fault; absent = 1. */
  hnsInstance?: number;
  /** How often each Windows service (kube-proxy, ...) was restarted through the service control manager; absent = never. */
  serviceRestarts?: Record<string, number>;
  /** The version the node's HNS reports, `"<major>.<minor>"` (./state-file.ts parseHnsVersion); absent = NEWEST_HNS_VERSION. */
  hnsVersion?: string;
  /** kube-proxy's load balancers (./load-balancers.ts); absent until the first is created. */
  loadBalancers?: HcnLoadBalancer[];
  /** Load balancers an HNS restart took away and HNS has not restored yet (./load-balancers.ts); absent when none. */
  rehydratingLoadBalancers?: HcnLoadBalancer[];
  /** Whether HNS takes a second remote endpoint with an IP a remote endpoint holds (./refusals.ts); absent = `refuse`. */
  duplicateRemoteEndpointIp?: DuplicateRemoteEndpointIp;
  /** What a new vSwitch's vNIC keeps of its NIC's settings (VnicSettings); absent = `copied`. */
  vnicSettings?: VnicSettings;
}

/**
 * The newest HNS the simulator models, what a node reports when nothing names its version: the last of
 * src/hns/features.ts HNS_PROFILES, 15.4 (Windows Server 2025); that file names the others and which
 * feature came with which version.
 */
export const NEWEST_HNS_VERSION: HnsVersion = HNS_PROFILES[HNS_PROFILES.length - 1].version;

export const PHYSICAL_ADAPTER = 'Ethernet';
export const PHYSICAL_ADAPTER_INDEX = 4;
const VSWITCH_TYPES = new Set(['l2bridge', 'overlay']);

/** Networks that bind a vSwitch to a physical adapter (hcsshim: L2Bridge, Overlay; NAT/ICS do not). */
export function isVSwitchType(type: string): boolean {
  return VSWITCH_TYPES.has(type.toLowerCase());
}

/** The host vNIC Windows creates for a vSwitch (or a host-attached endpoint) named `name`. */
export function vEthernetName(name: string): string {
  return `vEthernet (${name})`;
}

/** `vEthernet (X)` -> `X`; undefined for any other adapter name. */
export function vEthernetTarget(adapterName: string): string | undefined {
  return /^vEthernet \((.*)\)$/.exec(adapterName)?.[1];
}

/** A fresh node: one physical adapter `Ethernet` holding `ip`/`prefixLength` and the default route via the first address. */
export function initialState(ip: string, prefixLength = 24): DataplaneState {
  const gw = nthAddress(`${ip}/${prefixLength}`, 1);
  return {
    networks: [],
    endpoints: [],
    routes: [{ DestinationPrefix: '0.0.0.0/0', NextHop: gw, InterfaceIndex: PHYSICAL_ADAPTER_INDEX, Metric: 0 }],
    adapters: [{ Name: PHYSICAL_ADAPTER, InterfaceIndex: PHYSICAL_ADAPTER_INDEX, IPAddress: ip, PrefixLength: prefixLength, Mtu: 1500, Forwarding: false }],
  };
}

/** The next free interface index (Windows never reuses one while the adapter exists). */
export function nextInterfaceIndex(state: DataplaneState): number {
  let max = PHYSICAL_ADAPTER_INDEX;
  for (const a of state.adapters) max = Math.max(max, a.InterfaceIndex);
  for (const r of state.routes) max = Math.max(max, r.InterfaceIndex);
  return max + 1;
}

/** The document as the file holds it (stable key order, 2-space indent). */
export function serializeState(state: DataplaneState): string {
  return JSON.stringify(state, null, 2) + '\n';
}

/** Deep equality of JSON values, key order ignored (policy identity). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((v, i) => jsonEqual(v, bb[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao).filter((k) => ao[k] !== undefined);
  const bk = Object.keys(bo).filter((k) => bo[k] !== undefined);
  return ak.length === bk.length && ak.every((k) => jsonEqual(ao[k], bo[k]));
}

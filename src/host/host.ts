// The host seam: IPv4 adapters (name, index, address, MTU), the default route's interface and
// per-interface forwarding. win32.ts asks iphlpapi (GetIpAddrTable, GetIpInterfaceEntry,
// GetIpForwardTable2); simulated.ts reads the adapters of the simulated dataplane.

export interface HostInterface {
  /** Adapter friendly name, e.g. `Ethernet` or `vEthernet (Ethernet)`. */
  name: string;
  index: number;
  /** Dotted IPv4 address. */
  ipv4: string;
  prefixLength: number;
  mtu: number;
}

export interface Host {
  /** IPv4-carrying adapters. */
  interfaces(): Promise<HostInterface[]>;
  /** Index of the interface holding the default route (0.0.0.0/0), if any. */
  defaultRouteInterfaceIndex(): Promise<number | undefined>;
  /** Enable/disable IPv4 forwarding on one interface. */
  setForwarding(interfaceIndex: number, enabled: boolean): Promise<void>;
  getForwarding(interfaceIndex: number): Promise<boolean>;
}

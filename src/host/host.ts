// The host seam: network adapters (address, MTU, MAC), the default route's interface, forwarding.
// win32 = iphlpapi, plus os.networkInterfaces() for a MAC (src/host/win32.ts); simulated = the adapters
// of the simulated node (src/simulator/host.ts).

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
  /** The MAC of the adapter holding `ipv4`, in Windows' form (`00-15-5D-0A-0B-0C`); undefined when unknown. */
  macAddress(ipv4: string): Promise<string | undefined>;
  /**
   * The running instance of the Host Network Service (on Windows its process ID, as the service control
   * manager reports it); a new value means HNS restarted and dropped what it had not persisted. Undefined
   * when it cannot be told (the service is stopped, or the query failed).
   */
  hnsInstance?(): Promise<string | undefined>;
  /**
   * Restart a Windows service through the service control manager (stop, wait until stopped, start, wait
   * until running); resolves once it runs. Throws HostError FLANNEL_ERR_SERVICE when it cannot.
   */
  restartService?(name: string, signal?: AbortSignal): Promise<void>;
}

// Parsed net-conf.json (flannel pkg/subnet/config.go Config), after defaults and Windows rules.

export interface HostGwBackendConfig {
  type: 'host-gw';
  /** HNS network name, default `cbr0`. */
  name: string;
  /** Comma-separated DNS servers for the L2Bridge network, default empty. */
  dnsServerList: string;
}

/**
 * The VXLAN UDP port (IANA, RFC 7348) HNS's Overlay network encapsulates on when no VxlanPort policy names
 * another, and the port net-conf's Backend.Port defaults to on Windows (flannel vxlan_windows.go
 * defaultVXLANPort; OVN-Kubernetes config.DefaultVXLANPort). The one constant for it: code reads this.
 */
export const DEFAULT_VXLAN_PORT = 4789;

export interface VxlanBackendConfig {
  type: 'vxlan';
  /** >= 4096, default 4096. */
  vni: number;
  /** The UDP port, default DEFAULT_VXLAN_PORT; another one reaches HNS as a VxlanPort network policy (HNS 10.3). */
  port: number;
  /** `xx-xx`, default `0E-2A`. */
  macPrefix: string;
  /** HNS network name, default `flannel.<VNI>`. */
  name: string;
  /** Program legacy per-peer HNS v1 remote endpoints instead of RemoteSubnetRoute policies (default false). */
  legacyRemoteEndpoints: boolean;
}

export type BackendConfig = HostGwBackendConfig | VxlanBackendConfig;

export interface NetworkConfig {
  enableIPv4: boolean;
  enableIPv6: boolean;
  /** IPv4 CIDR with host bits masked, e.g. `10.244.0.0/16`. */
  network: string;
  /** 0 when not given (kube mode takes the node's podCIDR). */
  subnetLen: number;
  /** Network address of the first/last allocatable subnet (dotted), defaults applied when network set. */
  subnetMin: string;
  subnetMax: string;
  ipv6Network: string;
  ipv6SubnetLen: number;
  /** With IPv6 enabled only: the first and last allocatable IPv6 subnet's address (upstream's defaults applied). */
  ipv6SubnetMin?: string;
  ipv6SubnetMax?: string;
  backend: BackendConfig;
  /** The raw Backend object as given (for etcd config round trips). */
  rawBackend: Record<string, unknown>;
}

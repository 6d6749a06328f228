// JSON shapes of HNS v1 (vmcompute HNSCall) and HCN v2 (computenetwork.dll) objects, as Windows returns
// them. Field names are HNS's own. Mirrors hcsshim internal/hns/hnsnetwork.go, hnsendpoint.go and
// hcn/hcnnetwork.go, hcnendpoint.go, hcnpolicy.go (only the fields this agent uses are typed).

export interface HnsVersion {
  Major: number;
  Minor: number;
}

export interface HnsSubnetV1 {
  AddressPrefix: string;
  GatewayAddress?: string;
  Policies?: unknown[];
}

export interface HnsNetworkV1 {
  ID?: string;
  Name: string;
  Type: string;
  NetworkAdapterName?: string;
  SourceMac?: string;
  Policies?: unknown[];
  MacPools?: { StartMacAddress: string; EndMacAddress: string }[];
  Subnets?: HnsSubnetV1[];
  DNSSuffix?: string;
  DNSServerList?: string;
  ManagementIP?: string;
  AutomaticDNS?: boolean;
}

export interface HnsEndpointV1 {
  ID?: string;
  Name: string;
  VirtualNetwork?: string;
  VirtualNetworkName?: string;
  Policies?: unknown[];
  MacAddress?: string;
  IPAddress?: string;
  PrefixLength?: number;
  GatewayAddress?: string;
  IsRemoteEndpoint?: boolean;
  State?: number;
}

export interface HcnSchemaVersion {
  Major: number;
  Minor: number;
}

export interface HcnPolicy<S = Record<string, unknown>> {
  Type: string;
  Settings?: S;
}

export interface HcnRoute {
  NextHop?: string;
  DestinationPrefix: string;
  Metric?: number;
}

export interface HcnSubnet {
  IpAddressPrefix: string;
  Policies?: HcnPolicy[];
  Routes?: HcnRoute[];
}

export interface HcnIpam {
  Type?: string;
  Subnets?: HcnSubnet[];
}

export interface HcnNetwork {
  ID?: string;
  Name: string;
  Type: string;
  Ipams?: HcnIpam[];
  Policies?: HcnPolicy[];
  MacPool?: { Ranges?: { StartMacAddress: string; EndMacAddress: string }[] };
  Dns?: { Domain?: string; Search?: string[]; ServerList?: string[] };
  Flags?: number;
  SchemaVersion: HcnSchemaVersion;
}

export interface HcnIpConfig {
  IpAddress: string;
  PrefixLength?: number;
}

export interface HcnEndpoint {
  ID?: string;
  /** kube-proxy creates endpoints without one (winkernel hns.go createEndpoint). */
  Name?: string;
  HostComputeNetwork?: string;
  HostComputeNamespace?: string;
  Policies?: HcnPolicy[];
  IpConfigurations?: HcnIpConfig[];
  /** The endpoint's routes (a dual-stack endpoint has one default route per family). */
  Routes?: HcnRoute[];
  MacAddress?: string;
  Flags?: number;
  SchemaVersion: HcnSchemaVersion;
}

/** `RemoteSubnetRoute` network policy settings (one per vxlan peer). */
export interface RemoteSubnetRoutePolicySettings {
  DestinationPrefix: string;
  IsolationId: number;
  ProviderAddress: string;
  DistributedRouterMacAddress: string;
}

/** HcnModifyNetwork body for adding/removing network policies. */
export interface HcnPolicyRequest {
  ResourceType: 'Policy';
  RequestType: 'Add' | 'Remove' | 'Update';
  Settings: { Policies: HcnPolicy[] };
}

/** Network flag: not persisted across reboots (hcn.EnableNonPersistent). */
export const HCN_FLAG_NON_PERSISTENT = 8;
/** Endpoint flag hcn EndpointFlagsRemoteEndpoint (hcsshim hcn/hcnendpoint.go): kube-proxy's service and remote-pod endpoints. */
export const ENDPOINT_FLAG_REMOTE = 1;
export const HCN_SCHEMA_V2: HcnSchemaVersion = { Major: 2, Minor: 0 };

/** A string setting of the first policy of `type` (e.g. ProviderAddress, DrMacAddress); empty counts as absent. */
export function policySetting(policies: readonly HcnPolicy[] | undefined, type: string, key: string): string | undefined {
  const v = policies?.find((p) => p.Type === type)?.Settings?.[key];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** HNS IDs are GUID strings; HNS prints them upper case, callers may not: compare case-insensitively. */
export function sameId(a: string | undefined, b: string | undefined): boolean {
  return a !== undefined && b !== undefined && a.toUpperCase() === b.toUpperCase();
}

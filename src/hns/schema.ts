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

/**
 * One port mapping of a load balancer: hcsshim hcn/hcnloadbalancer.go LoadBalancerPortMapping. Protocol is
 * the IANA number (6 TCP, 17 UDP); DistributionType 0 per connection, 1 source IP and protocol, 2 source IP;
 * Flags 1 ILB, 2 LocalRoutedVIP, 4 UseMux, 8 PreserveDIP (kube-proxy winkernel hns.go adds 16, VipExternalIP).
 * Every field is `omitempty`: a zero is absent on the wire.
 */
export interface HcnLoadBalancerPortMapping {
  Protocol?: number;
  InternalPort?: number;
  ExternalPort?: number;
  DistributionType?: number;
  Flags?: number;
}

/**
 * An HCN load balancer: hcsshim hcn/hcnloadbalancer.go HostComputeLoadBalancer, what kube-proxy (winkernel
 * hns.go getLoadBalancer) creates for each Service port: its backends' endpoint IDs, the source VIP it SNATs
 * to, the Service's VIPs and one port mapping. Flags: 1 DSR, 2 IPv6. kube-proxy owns them; the agent only
 * reads them (src/hns/transport.ts has no call that writes one).
 */
export interface HcnLoadBalancer {
  ID?: string;
  HostComputeEndpoints?: string[];
  SourceVIP?: string;
  FrontendVIPs?: string[];
  PortMappings?: HcnLoadBalancerPortMapping[];
  SchemaVersion?: HcnSchemaVersion;
  Flags?: number;
}

/** `RemoteSubnetRoute` network policy settings (one per vxlan peer). */
export interface RemoteSubnetRoutePolicySettings {
  DestinationPrefix: string;
  IsolationId: number;
  ProviderAddress: string;
  DistributedRouterMacAddress: string;
}

/** hcsshim hcn/hcn.go RequestType: Add, Remove, Update ("replaces settings with the ones provided"), Refresh. */
export type HcnRequestType = 'Add' | 'Remove' | 'Update' | 'Refresh';

/**
 * The body of HcnModifyNetwork and HcnModifyEndpoint for policies: hcsshim hcn/hcnnetwork.go
 * ModifyNetworkSettingRequest with PolicyNetworkRequest, hcn/hcnendpoint.go ModifyEndpointSettingRequest with
 * PolicyEndpointRequest (both `{ResourceType, RequestType, Settings: {Policies}}`, ResourceType "Policy").
 */
export interface HcnPolicyRequest {
  ResourceType: 'Policy';
  RequestType: HcnRequestType;
  Settings: { Policies: HcnPolicy[] };
}

/** Endpoint policy type `ACL` (hcsshim hcn/hcnpolicy.go EndpointPolicyType ACL). */
export const ACL_POLICY = 'ACL';
/** Network policy type `SetPolicy` (hcsshim hcn/hcnpolicy.go NetworkPolicyType SetPolicy). */
export const SET_POLICY = 'SetPolicy';

/**
 * The settings of an `ACL` endpoint policy: hcsshim hcn/hcnpolicy.go AclPolicySetting (Protocols, Action,
 * Direction, LocalAddresses, RemoteAddresses, LocalPorts, RemotePorts, RuleType, Priority), plus `Id`.
 * AclPolicySetting has no Id, but HNS takes one on ACL rules: hcsshim's v1 internal/hns/hnspolicy.go
 * ACLPolicy carries `Id` (json "Id,omitempty"), hcn/hcnsupport.go reports AclFeatures.AclRuleId from HNS 7.2
 * (HNSVersion1803), Azure NPM npm/pkg/dataplane/policies/policy_windows.go NPMACLPolSettings adds `Id`
 * ("default ACL settings does not contain ID field but HNS is happy with taking an ID"; spelt `Id`: "HNS is
 * not happy with "ID"") and Calico felix/dataplane/windows/policysets/policysets.go sets one per rule when
 * AclRuleId is supported.
 */
export interface AclPolicySetting {
  Id?: string;
  /** One IANA protocol number as a decimal string ("6" TCP, "17" UDP, "1" ICMPv4, "58" ICMPv6, "2" IGMP); "256" or absent: any. */
  Protocols?: string;
  Action: 'Allow' | 'Block';
  /** In: traffic coming to the endpoint; Out: traffic leaving it (hcsshim DirectionType). */
  Direction: 'In' | 'Out';
  /** Comma-separated IPs and prefixes (the endpoint's side of the packet), or SetPolicy Ids (the packet's source): docs/simulator.md. */
  LocalAddresses?: string;
  /** As LocalAddresses: addresses are the other side of the packet, SetPolicy Ids its destination. */
  RemoteAddresses?: string;
  /** Comma-separated ports and `first-last` ranges on the endpoint's side. */
  LocalPorts?: string;
  RemotePorts?: string;
  /** Host: a WFP (Windows Firewall) rule; Switch: a VFP rule (hcsshim RuleType). */
  RuleType?: 'Host' | 'Switch';
  /** uint16; the lowest number is evaluated first. */
  Priority?: number;
}

/** hcsshim hcn/hcnpolicy.go SetPolicyType: IPSET (addresses) and NESTEDIPSET (other sets' Ids). */
export type SetPolicyType = 'IPSET' | 'NESTEDIPSET';

/**
 * The settings of a `SetPolicy` network policy (an IP set ACL rules name by its Id): hcsshim
 * hcn/hcnpolicy.go SetPolicySetting {Id, Name, Type, Values}, whose Type is written `PolicyType` in JSON
 * (`json:"PolicyType"`). Values is a comma-separated list: addresses for IPSET, member set Ids for
 * NESTEDIPSET (Azure NPM npm/pkg/dataplane/ipsets/ipsetmanager_windows.go convertToSetPolicy).
 */
export interface SetPolicySetting {
  Id: string;
  Name: string;
  PolicyType: SetPolicyType;
  Values: string;
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

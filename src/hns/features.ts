// Which HNS version brought which feature: the version ranges of hcsshim hcn/hcnglobals.go, which
// hcn/hcnsupport.go turns into SupportedFeatures (each gate below names its variable there). Pure; the
// agent asks HNS its version (HnsClient.version) and the simulated HNS refuses what its version lacks.
import type { HnsVersion } from './schema.js';

export function versionAtLeast(v: HnsVersion, min: HnsVersion): boolean {
  return v.Major > min.Major || (v.Major === min.Major && v.Minor >= min.Minor);
}

/**
 * V2ApiSupport: the HCN v2 API (computenetwork.dll), and with it `ACL` endpoint policies through
 * HcnModifyEndpoint (ACL rules with address lists, port ranges, rule Ids and Host rules without a priority
 * came before it, with HNSVersion1803, 7.2: hcnsupport.go AclFeatures).
 */
export const V2_API_VERSION: HnsVersion = { Major: 9, Minor: 2 };
/** RemoteSubnetVersion: the RemoteSubnetRoute network policy (flannel's vxlan peers). */
export const REMOTE_SUBNET_VERSION: HnsVersion = { Major: 9, Minor: 2 };
/** AclSupportForProtocol252Version: ACL rules on protocol 252 ("HNS ACL Policies to support protocol 252 for VXLAN", hcn/hcn.go). */
export const ACL_PROTOCOL_252_VERSION: HnsVersion = { Major: 11, Minor: 0 };
/** SetPolicyVersion: `SetPolicy` network policies of type IPSET. */
export const SET_POLICY_VERSION: HnsVersion = { Major: 13, Minor: 0 };
/** NestedIpSetVersion: SetPolicy of type NESTEDIPSET. */
export const NESTED_IP_SET_VERSION: HnsVersion = { Major: 15, Minor: 0 };
/** ModifyLoadbalancerVersion: HcnModifyLoadBalancer ("HNS 15.4 allows for Modify Loadbalancer support"; kube-proxy's updateLoadBalancer). */
export const MODIFY_LOAD_BALANCER_VERSION: HnsVersion = { Major: 15, Minor: 4 };

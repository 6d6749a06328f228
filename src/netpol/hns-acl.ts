// HNS ACL and IP set JSON, as HcnModifyEndpoint and HcnModifyNetwork take them. Mirrors hcsshim
// hcn/hcnpolicy.go (AclPolicySetting, ActionType, DirectionType, RuleType, SetPolicySetting, SetPolicyType)
// and hcn/hcnglobals.go (SetPolicyVersion). Kept here until the lead merges it with the simulator's copy in
// src/hns/schema.ts (issue 35: the two are written at the same time).
//
// Two fields are not hcsshim's own:
// - `Id` on an ACL: hcsshim's AclPolicySetting has none, but HNS takes one (hcsshim hcn/hcnsupport.go:
//   AclFeatures.AclRuleId, on from HNS 7.2, HNSVersion1803) and returns it on a read. Azure NPM adds it in
//   its own NPMACLPolSettings ("default ACL settings does not contain ID field but HNS is happy with taking
//   an ID", npm/pkg/dataplane/policies/policy_windows.go) and Calico sets it when AclRuleId is on
//   (felix/dataplane/windows/policysets/policysets.go). The agent finds its own rules by it.
// - the set's type travels as `PolicyType`: hcsshim's Go field is `Type`, tagged `json:"PolicyType"`.
import type { HnsVersion } from '../hns/schema.js';

/** hcsshim ActionType. `Pass` exists but the agent never writes it. */
export type AclAction = 'Allow' | 'Block' | 'Pass';
/** hcsshim DirectionType: `In` is traffic coming to the endpoint, `Out` traffic leaving it. */
export type AclDirection = 'In' | 'Out';
/** hcsshim RuleType: `Switch` is a VFP (virtual switch port) rule, `Host` a WFP (Windows Firewall) rule. */
export type AclRuleType = 'Host' | 'Switch';

/** hcsshim AclPolicySetting plus `Id` (above); the Settings of an endpoint policy of Type `ACL`. */
export interface AclPolicySetting {
  Id?: string;
  /** One IP protocol number as text ("6" TCP, "17" UDP, ...); absent: every protocol. */
  Protocols?: string;
  Action: AclAction;
  Direction: AclDirection;
  /** Comma-separated addresses or CIDRs, or (HNS >= 13.0) the Ids of IP sets; absent: any. */
  LocalAddresses?: string;
  RemoteAddresses?: string;
  /** Comma-separated ports and ranges ("80,8080-8090"); absent: any. */
  LocalPorts?: string;
  RemotePorts?: string;
  RuleType?: AclRuleType;
  /** uint16; lower is evaluated first. hcsshim omits 0 (`omitempty`). */
  Priority?: number;
}

/** hcsshim SetPolicyType. The agent writes `IPSET` only. */
export type SetPolicyType = 'IPSET' | 'NESTEDIPSET';

/** hcsshim SetPolicySetting; the Settings of a network policy of Type `SetPolicy`. */
export interface SetPolicySetting {
  Id: string;
  Name: string;
  /** hcsshim's `Type`, which it writes as `PolicyType`. */
  PolicyType: SetPolicyType;
  /** Comma-separated members (addresses or CIDRs). */
  Values: string;
}

/** The endpoint policy Type of an ACL and the network policy Type of an IP set (hcsshim EndpointPolicyType ACL, NetworkPolicyType SetPolicy). */
export const ACL_POLICY_TYPE = 'ACL';
export const SET_POLICY_TYPE = 'SetPolicy';

/** hcsshim hcn/hcnglobals.go SetPolicyVersion: "HNS 13.0 allows for Set Policy support" (13.0 and later). */
export function supportsSetPolicy(version: HnsVersion): boolean {
  return version.Major >= 13;
}

/**
 * IP protocol numbers in `Protocols` (hcsshim's comment on AclPolicySetting: 6 TCP, 17 UDP, 1 ICMPv4,
 * 58 ICMPv6, 2 IGMP). SCTP (132) is not among what HNS matches: Azure NPM refuses SCTP policies on Windows
 * because "Windows HNS doesn't support SCTP" (Azure/azure-container-networking#1442, ErrUnsupportedSCTP
 * in npm/pkg/controlplane/translation/translatePolicy.go).
 */
export const PROTOCOL_NUMBER = { TCP: '6', UDP: '17' } as const;

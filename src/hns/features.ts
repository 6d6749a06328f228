// Which HNS version brought which feature: the version ranges of hcsshim hcn/hcnglobals.go, which
// hcn/hcnsupport.go turns into SupportedFeatures (each gate below names its variable there), and the HNS
// version each Windows Server release reports (HNS_PROFILES). Pure; the agent asks HNS its version once
// (HnsClient.version, hcsshim's GetGlobals) and gates every feature it uses on it (HnsClient.requireFeature),
// and the simulated HNS refuses what its version lacks.
import type { HnsVersion } from './schema.js';
import { errorMessage } from '../basics/errors.js';
import type { Logger } from '../basics/log.js';

export function versionAtLeast(v: HnsVersion, min: HnsVersion): boolean {
  return v.Major > min.Major || (v.Major === min.Major && v.Minor >= min.Minor);
}

/** `"<major>.<minor>"`, as HNS's version is written in the state file, the status and the docs. */
export const formatHnsVersion = (v: HnsVersion): string => `${v.Major}.${v.Minor}`;

/**
 * V2ApiSupport: the HCN v2 API (computenetwork.dll), and with it `ACL` endpoint policies through
 * HcnModifyEndpoint (ACL rules with address lists, port ranges, rule Ids and Host rules without a priority
 * came before it, with HNSVersion1803, 7.2: hcnsupport.go AclFeatures).
 */
export const V2_API_VERSION: HnsVersion = { Major: 9, Minor: 2 };
/** RemoteSubnetVersion: the RemoteSubnetRoute network policy (flannel's vxlan peers). */
export const REMOTE_SUBNET_VERSION: HnsVersion = { Major: 9, Minor: 2 };
/** HostRouteVersion: the HostRoute network policy ("local container to local host communication Overlay networks"). */
export const HOST_ROUTE_VERSION: HnsVersion = { Major: 9, Minor: 2 };
/** AclSupportForProtocol252Version: ACL rules on protocol 252 ("HNS ACL Policies to support protocol 252 for VXLAN", hcn/hcn.go). */
export const ACL_PROTOCOL_252_VERSION: HnsVersion = { Major: 11, Minor: 0 };
/** SessionAffinityVersion: session affinity on load balancers (kube-proxy's). */
export const SESSION_AFFINITY_VERSION: HnsVersion = { Major: 12, Minor: 0 };
/** IPv6DualStackVersion: dual-stack networks ("HNS 11.10+ supports Ipv6 dual stack"; hcsshim#1003: Windows Server 2004 reports 11.10). */
export const IPV6_DUAL_STACK_VERSION: HnsVersion = { Major: 11, Minor: 10 };
/** SetPolicyVersion: `SetPolicy` network policies of type IPSET. */
export const SET_POLICY_VERSION: HnsVersion = { Major: 13, Minor: 0 };
/** VxlanPortVersion: the VxlanPort network policy, a VXLAN UDP port other than 4789 ("HNS 10.3 allows for VXLAN ports"). */
export const VXLAN_PORT_VERSION: HnsVersion = { Major: 10, Minor: 3 };
/** NestedIpSetVersion: SetPolicy of type NESTEDIPSET. */
export const NESTED_IP_SET_VERSION: HnsVersion = { Major: 15, Minor: 0 };
/** ModifyLoadbalancerVersion: HcnModifyLoadBalancer ("HNS 15.4 allows for Modify Loadbalancer support"; kube-proxy's updateLoadBalancer). */
export const MODIFY_LOAD_BALANCER_VERSION: HnsVersion = { Major: 15, Minor: 4 };

/** One `VersionRange` of hcnglobals.go: from `min`, up to and with `maxMajor`'s every minor (absent: no end). */
export interface VersionRange {
  min: HnsVersion;
  maxMajor?: number;
}

const from = (min: HnsVersion): VersionRange[] => [{ min }];
const v = (Major: number, Minor: number): HnsVersion => ({ Major, Minor });

/**
 * hcsshim's SupportedFeatures, by their JSON names (`V2Api` is its `Api.V2`), with hcnglobals.go's ranges,
 * in hcnsupport.go's order. The ACL features of HNSVersion1803 (7.2) are left out: every HNS with the v2
 * API has them.
 */
export const HNS_FEATURES = [
  { name: 'V2Api', ranges: from(V2_API_VERSION) },
  { name: 'RemoteSubnet', ranges: from(REMOTE_SUBNET_VERSION) },
  { name: 'HostRoute', ranges: from(HOST_ROUTE_VERSION) },
  // "HNS 9.3 through 10.0 (not included), and 10.2+ allows for Direct Server Return for loadbalancing"
  { name: 'DSR', ranges: [{ min: v(9, 3), maxMajor: 9 }, { min: v(10, 2) }] },
  // "HNS 9.3 through 10.0 (not included) and, 10.4+ provide support for configuring endpoints with /32 prefixes"
  { name: 'Slash32EndpointPrefixes', ranges: [{ min: v(9, 3), maxMajor: 9 }, { min: v(10, 4) }] },
  { name: 'AclSupportForProtocol252', ranges: from(ACL_PROTOCOL_252_VERSION) },
  { name: 'SessionAffinity', ranges: from(SESSION_AFFINITY_VERSION) },
  { name: 'IPv6DualStack', ranges: from(IPV6_DUAL_STACK_VERSION) },
  { name: 'SetPolicy', ranges: from(SET_POLICY_VERSION) },
  { name: 'VxlanPort', ranges: from(VXLAN_PORT_VERSION) },
  // L4ProxyPolicyVersion: "HNS 9.5 through 10.0(not included), 10.5 through 11.0(not included), 11.11
  // through 12.0(not included), 12.1 through 13.0(not included), 13.1+"
  {
    name: 'L4Proxy',
    ranges: [{ min: v(9, 5), maxMajor: 9 }, { min: v(10, 5), maxMajor: 10 }, { min: v(11, 11), maxMajor: 11 }, { min: v(12, 1), maxMajor: 12 }, { min: v(13, 1) }],
  },
  { name: 'L4WfpProxy', ranges: from(v(13, 2)) },
  { name: 'TierAcl', ranges: from(v(14, 0)) },
  { name: 'NetworkACL', ranges: from(v(15, 0)) },
  { name: 'NestedIpSet', ranges: from(NESTED_IP_SET_VERSION) },
  { name: 'DisableHostPort', ranges: from(v(15, 1)) },
  { name: 'ModifyLoadbalancer', ranges: from(MODIFY_LOAD_BALANCER_VERSION) },
  { name: 'Accelnet', ranges: from(v(15, 4)) },
] as const satisfies readonly { name: string; ranges: readonly VersionRange[] }[];

export type HnsFeatureName = (typeof HNS_FEATURES)[number]['name'];

function rangesOf(name: HnsFeatureName): readonly VersionRange[] {
  return HNS_FEATURES.find((f) => f.name === name)!.ranges;
}

/** hcnglobals.go isFeatureSupported: the version lies in one of the feature's ranges. */
export function isFeatureSupported(version: HnsVersion, name: HnsFeatureName): boolean {
  return rangesOf(name).some((r) => versionAtLeast(version, r.min) && (r.maxMajor === undefined || version.Major <= r.maxMajor));
}

/** The features `version` has, by name (what `flanneld status` and doctor show). */
export function supportedFeatures(version: HnsVersion): HnsFeatureName[] {
  return HNS_FEATURES.filter((f) => isFeatureSupported(version, f.name)).map((f) => f.name);
}

/** The versions that have the feature, as a refusal names them: `10.3`, or `9.3 to 9.x, or 10.2`. */
export function featureNeeds(name: HnsFeatureName): string {
  return rangesOf(name)
    .map((r) => (r.maxMajor === undefined ? formatHnsVersion(r.min) : `${formatHnsVersion(r.min)} to ${r.maxMajor}.x`))
    .join(', or ');
}

/**
 * The HNS version each Windows Server release reports, the profiles the simulated node runs (state file
 * `hnsVersion`) and every backend's integration tests run on. 2019 (1809): 9.3 (kubernetes#93304, "Windows
 * Server, version 1809 with HNS version 9.3"); later 2019 updates may report a higher 9.x, which changes
 * none of the gates the agent uses. 2022: 13.x (reported in kubernetes PR #137530; its text was not readable here); 13.2 is the
 * version the recorded CNI traces ran at (test/fixtures/cni-traces/README.md) and kube-proxy's recorded runs
 * read (../../test/fixtures/kube-proxy-traces). 2025: 15.4 (kubernetes#131466 and its fix #131506 name
 * HNS 15.4). Every cell is simulated: no version here was read by this agent on a real host
 * (docs/compatibility.md, "Windows Server releases").
 */
export const HNS_PROFILES: readonly { os: string; version: HnsVersion }[] = [
  { os: 'Windows Server 2019', version: v(9, 3) },
  { os: 'Windows Server 2022', version: v(13, 2) },
  { os: 'Windows Server 2025', version: v(15, 4) },
];

/**
 * Read the HNS version once, as hcsshim's GetGlobals does before any feature check, and log what it enables.
 * A failed read is logged and undefined, not fatal: the gates (HnsClient.requireFeature) read it again.
 */
export async function readHnsVersion(hns: { version(): Promise<HnsVersion> }, log: Logger): Promise<HnsVersion | undefined> {
  try {
    const v = await hns.version();
    log.info('HNS version', { version: formatHnsVersion(v), features: supportedFeatures(v).join(',') });
    return v;
  } catch (err) {
    log.warn('could not read the HNS version; the features that need one are checked when they are used', { error: errorMessage(err) });
    return undefined;
  }
}

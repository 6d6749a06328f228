// What the simulated HNS refuses, as HNS refuses it: small pure checks that ./objects.ts calls before
// it changes the document. Each rule says where it comes from, and whether its HRESULT was seen on a real
// node (observed) or is the HCN error whose documented meaning fits (modelled). The HCN_E_* values and
// texts are winerror.h's (golang.org/x/sys/windows zerrors_windows.go, which hcsshim vendors) and the
// "HCN Error Code" reference (learn.microsoft.com, virtualization/api/hcn). hcsshim hcn/hcnerrors.go
// passes the HRESULT and ErrorRecord through (checkForErrors) and names two codes: ERROR_NOT_FOUND
// (IsElementNotFoundError) and HCN_E_PORT_ALREADY_EXISTS (IsPortAlreadyExistsError).
import { isIPv6 } from 'node:net';
import type { ErrorContext, HnsError } from '../basics/errors.js';
import { HRESULT, hnsError, hresultText } from '../hns/errors.js';
import { ENDPOINT_FLAG_REMOTE, type HcnEndpoint, type HcnNetwork, type HcnPolicy, type HnsVersion, type SetPolicyType } from '../hns/schema.js';
import { ACL_PROTOCOL_252_VERSION, NESTED_IP_SET_VERSION, VXLAN_PORT_VERSION, isFeatureSupported, versionAtLeast } from '../hns/features.js';
import { ANY_PROTOCOL, listItems, parseAddress, parsePorts, parseProtocol } from './acl.js';
import { contains, isIp4 } from '../basics/ip4.js';
import { contains6 } from '../basics/ip6.js';

/**
 * How HcnModifyNetwork applies a request carrying several policies (state file `policyBatches`). Nobody
 * has published which one HNS does; upstream (flannel vxlan_network_windows.go, kube-proxy) sends one
 * policy per call. `atomic`: all or none (the default); `partial`: the policies before the refused one
 * land, then the call fails; `single`: a request with more than one policy is refused as a whole.
 */
export type PolicyBatches = 'atomic' | 'partial' | 'single';
export const POLICY_BATCH_MODES: readonly PolicyBatches[] = ['atomic', 'partial', 'single'];

/**
 * Whether HNS takes a remote endpoint (EndpointFlagsRemoteEndpoint) whose IP another remote endpoint of the
 * network holds (state file `duplicateRemoteEndpointIp`). Open: kube-proxy asks for one on a multi-port
 * Service (../../test/fixtures/kube-proxy-traces, README "Facts from the runs"), and its winkernel hns.go
 * keys endpoints by ID too because "there is a bug in Windows Server 2019 that can cause two endpoints to be
 * created with the same IP address"; what a current HNS answers is not published. `refuse` (the default):
 * HCN_E_ADDR_INVALID_OR_RESERVED, as for any held IP; `accept`: the second one is created, as that comment
 * says Windows Server 2019 did.
 */
export type DuplicateRemoteEndpointIp = 'refuse' | 'accept';
export const DUPLICATE_REMOTE_ENDPOINT_IP_MODES: readonly DuplicateRemoteEndpointIp[] = ['refuse', 'accept'];

/** HNS's refusal `hr` with its text and what was refused (`detail`). */
export const fail = (op: string, hr: number, detail: string, ctx: ErrorContext): HnsError => hnsError(op, hr, `${hresultText(hr)} (${detail})`, ctx);

const MAC = /^[0-9a-f]{2}([-:])[0-9a-f]{2}(?:\1[0-9a-f]{2}){4}$/i;
const CIDR = /^(\d{1,3}(?:\.\d{1,3}){3})\/(\d{1,2})$/;

/** `a.b.c.d/n` with n 0..32 (HNS parses the prefix; host bits are not judged here: no source says). */
function isIp4Prefix(v: unknown): boolean {
  const m = typeof v === 'string' ? CIDR.exec(v) : null;
  return m !== null && isIp4(m[1]) && Number(m[2]) <= 32;
}

/** An IPv6 address without a zone (HNS takes IPv6 on dual-stack networks: HCN schema 2.x, kube-proxy winkernel). */
function isIp6(v: string): boolean {
  return isIPv6(v) && !v.includes('%');
}

/** `a.b.c.d/n` (n 0..32) or `ipv6/n` (n 0..128). */
function isIpPrefix(v: unknown): boolean {
  if (isIp4Prefix(v)) return true;
  const m = typeof v === 'string' ? /^([^/]+)\/(\d{1,3})$/.exec(v) : null;
  return m !== null && isIp6(m[1]) && Number(m[2]) <= 128;
}

/**
 * A RemoteSubnetRoute policy's settings (hcsshim hcn/hcnpolicy.go RemoteSubnetRoutePolicySetting:
 * DestinationPrefix string, IsolationId uint16, ProviderAddress string, DistributedRouterMacAddress
 * string). Bad content is refused with HCN_E_INVALID_POLICY 0x803B000D, "The provided policy configuration
 * is invalid or missing parameters" (modelled: the code whose documented meaning fits; which of the
 * 0x803B00xx invalid-parameter codes HNS gives per field is not published). The MAC may be written with
 * `-` (HNS's own form) or `:` (flannel sends net.HardwareAddr.String(), vxlan_network_windows.go).
 * Undefined when the policy is fine or of another type.
 */
export function refuseNetworkPolicy(op: string, p: HcnPolicy, ctx: ErrorContext): HnsError | undefined {
  if (p.Type !== 'RemoteSubnetRoute') return undefined;
  const s = p.Settings ?? {};
  const c = { ...ctx, policyType: p.Type, destination: typeof s.DestinationPrefix === 'string' ? s.DestinationPrefix : undefined };
  const hr = HRESULT.HCN_E_INVALID_POLICY;
  if (!isIpPrefix(s.DestinationPrefix)) return fail(op, hr, `DestinationPrefix ${JSON.stringify(s.DestinationPrefix)} is not an IP prefix`, c);
  const vsid = s.IsolationId;
  if (typeof vsid !== 'number' || !Number.isInteger(vsid) || vsid < 0 || vsid > 0xffff) {
    return fail(op, hr, `IsolationId ${JSON.stringify(vsid)} is not a uint16`, c);
  }
  if (typeof s.ProviderAddress !== 'string' || !isIp4(s.ProviderAddress)) return fail(op, hr, `ProviderAddress ${JSON.stringify(s.ProviderAddress)} is not an IPv4 address`, c);
  const mac = s.DistributedRouterMacAddress;
  if (typeof mac !== 'string' || !MAC.test(mac)) return fail(op, hr, `DistributedRouterMacAddress ${JSON.stringify(mac)} is not a MAC address`, c);
  return undefined;
}

/** `single` mode: a request with more than one policy is refused whole (HCN_E_REQUEST_UNSUPPORTED; modelled). */
export function refuseBatch(op: string, mode: PolicyBatches | undefined, count: number, ctx: ErrorContext): HnsError | undefined {
  if (mode !== 'single' || count <= 1) return undefined;
  return fail(op, HRESULT.HCN_E_REQUEST_UNSUPPORTED, `${count} policies in one request; this node takes one per HcnModifyNetwork (policyBatches "single")`, ctx);
}

/**
 * Removing a policy the network does not hold: HCN_E_POLICY_NOT_FOUND 0x803B0008, "An expected policy was
 * not found" (modelled: the code HCN defines for it; no report shows what HNS answers a Remove with).
 */
export function policyNotFound(op: string, p: HcnPolicy, ctx: ErrorContext): HnsError {
  return fail(op, HRESULT.HCN_E_POLICY_NOT_FOUND, `no ${p.Type} policy with these settings on the network`, { ...ctx, policyType: p.Type });
}

/**
 * A vSwitch network on an adapter this host does not have: HCN_E_ADAPTER_NOT_FOUND 0x803B0006, "An adapter
 * was not found." (observed: microsoft/SDN#269 and kubernetes-sigs/sig-windows-tools#291 show
 * `{"Error":"An adapter was not found. ","ErrorCode":2151350278,"Success":false}` from POST /networks).
 */
export function adapterNotFound(op: string, adapter: string | undefined, ctx: ErrorContext): HnsError {
  return hnsError(op, HRESULT.HCN_E_ADAPTER_NOT_FOUND, hresultText(HRESULT.HCN_E_ADAPTER_NOT_FOUND), { ...ctx, adapter: adapter ?? '(default route)' });
}

/**
 * The addresses of a new endpoint, given the IPs `used` by the network's other endpoints:
 *  * an IP another endpoint on the network holds is refused with HCN_E_ADDR_INVALID_OR_RESERVED 0x803B002F
 *    (modelled). HNS is meant to refuse it: kube-proxy's winkernel hns.go (getAllEndpointsByNetwork) keys
 *    endpoints by ID as well as IP because "there is a bug in Windows Server 2019 that can cause two
 *    endpoints to be created with the same IP address"; a remote endpoint whose IP only remote endpoints
 *    hold is taken when `remoteDuplicateOk` says so (DuplicateRemoteEndpointIp `accept`);
 *  * a local endpoint's IP outside every subnet of its family on the network is refused with HCN_E_INVALID_IP
 *    0x803B001E, "IP address is either invalid or not part of any configured subnet(s)" (modelled from that text). A
 *    remote endpoint (EndpointFlagsRemoteEndpoint) carries a pod IP of another node, outside this node's
 *    subnet, and is accepted (kube-proxy winkernel hns.go createEndpoint -> CreateRemoteEndpoint).
 */
export function refuseEndpointAddress(
  op: string,
  net: HcnNetwork,
  ep: HcnEndpoint,
  used: { has(ip: string): boolean },
  ctx: ErrorContext,
  remoteDuplicateOk: (ip: string) => boolean = () => false,
): HnsError | undefined {
  const remote = ((ep.Flags ?? 0) & ENDPOINT_FLAG_REMOTE) !== 0;
  const subnets = (net.Ipams ?? []).flatMap((i) => i.Subnets ?? []).map((s) => s.IpAddressPrefix);
  const v4Subnets = subnets.filter(isIp4Prefix);
  const v6Subnets = subnets.filter((s) => !isIp4Prefix(s) && isIpPrefix(s));
  const perFamily = { v4: 0, v6: 0 };
  for (const ipc of ep.IpConfigurations ?? []) {
    const ip = ipc.IpAddress;
    const c = { ...ctx, ip };
    const v4 = typeof ip === 'string' && isIp4(ip);
    if (!v4 && !(typeof ip === 'string' && isIp6(ip))) return fail(op, HRESULT.HCN_E_INVALID_IP, `${JSON.stringify(ip)} is not an IP address`, c);
    if (used.has(ip) && !(remote && remoteDuplicateOk(ip))) return fail(op, HRESULT.HCN_E_ADDR_INVALID_OR_RESERVED, `${ip} is held by another endpoint on network ${net.Name}`, c);
    // At most one address per family: a dual-stack endpoint is one IPv4 and one IPv6 address (kube-proxy
    // winkernel and sdnbridge build exactly that; microsoft/Windows-Containers#522). Modelled code.
    if (++perFamily[v4 ? 'v4' : 'v6'] > 1) {
      return fail(op, HRESULT.HCN_E_INVALID_IP, `a second ${v4 ? 'IPv4' : 'IPv6'} address ${ip}: an endpoint takes one address per family`, c);
    }
    if (remote) continue;
    // Each family is judged against the subnets of its own family; a network without any of that family
    // (an IPv4-only network and an IPv6 address: the gap sdnbridge-dual-stack-on-v4-network.json showed)
    // has none the address could be in.
    const own = v4 ? v4Subnets : v6Subnets;
    const inside = own.some((s) => (v4 ? contains(s, ip) : contains6(s, ip)));
    if (subnets.length > 0 && !inside) {
      return fail(op, HRESULT.HCN_E_INVALID_IP, `${ip} is outside the ${v4 ? 'IPv4' : 'IPv6'} subnets of network ${net.Name} (${own.join(', ') || 'none'})`, c);
    }
  }
  return undefined;
}

/**
 * A network with an IPv6 subnet (HcnCreateNetwork, POST /networks), refused with HCN_E_REQUEST_UNSUPPORTED
 * 0x803B0015 (modelled: the code HCN defines for a request this HNS does not support):
 *  * on HNS older than 11.10 (src/hns/features.ts IPv6DualStack; hcsshim's IPv6DualStackSupported feature check);
 *  * on any type but L2Bridge: HNS has dual-stack on L2Bridge only (Overlay IPv6 from build 22410, not
 *    modelled; microsoft/Windows-Containers#522, kube-proxy winkernel falls back to single-stack);
 *  * with IPv6 subnets only: no IPv6-only networks on Windows (Windows-Containers#522).
 */
export function refuseIPv6Network(op: string, net: HcnNetwork, version: { Major: number; Minor: number }, ctx: ErrorContext): HnsError | undefined {
  const subnets = (net.Ipams ?? []).flatMap((i) => i.Subnets ?? []).map((s) => s.IpAddressPrefix);
  if (!subnets.some((s) => typeof s === 'string' && s.includes(':'))) return undefined;
  const hr = HRESULT.HCN_E_REQUEST_UNSUPPORTED;
  if (!isFeatureSupported(version, 'IPv6DualStack')) return fail(op, hr, `HNS ${version.Major}.${version.Minor} has no dual-stack support (from 11.10)`, ctx);
  if (typeof net.Type !== 'string' || net.Type.toLowerCase() !== 'l2bridge') return fail(op, hr, `IPv6 subnets on a ${String(net.Type)} network: dual-stack is L2Bridge only`, ctx);
  if (!subnets.some((s) => isIp4Prefix(s))) return fail(op, hr, 'a network with IPv6 subnets only: IPv6-only is not supported', ctx);
  return undefined;
}

/**
 * A policy type this HNS does not have yet: HCN_E_INVALID_POLICY_TYPE 0x803B000E, "Invalid policy type"
 * (modelled: the code HCN defines for it; hcsshim only checks the version on its side, hcn/hcnsupport.go
 * SetPolicySupported). `gate` is the version of src/hns/features.ts that brought it.
 */
export function refuseUnsupported(op: string, what: string, gate: HnsVersion, version: HnsVersion, ctx: ErrorContext): HnsError | undefined {
  if (versionAtLeast(version, gate)) return undefined;
  return fail(op, HRESULT.HCN_E_INVALID_POLICY_TYPE, `${what} needs HNS ${gate.Major}.${gate.Minor}; this node runs ${version.Major}.${version.Minor}`, ctx);
}

/**
 * The VxlanPort network policy of a network being created (hcsshim hcnpolicy.go VxlanPortPolicySetting
 * `{Port uint16}`; OVN-Kubernetes overlay_windows.go sets it at creation): below HNS 10.3 the policy type is
 * refused (refuseUnsupported; hcnglobals.go VxlanPortVersion), and a Port that is no UDP port (not an
 * integer 1-65535) is HCN_E_INVALID_POLICY (modelled, as refuseAcl's fields). Undefined when fine or absent.
 */
export function refuseVxlanPort(op: string, net: HcnNetwork, version: HnsVersion, ctx: ErrorContext): HnsError | undefined {
  for (const p of (net.Policies ?? []).filter((x) => x.Type === 'VxlanPort')) {
    const old = refuseUnsupported(op, 'the VxlanPort network policy', VXLAN_PORT_VERSION, version, ctx);
    if (old) return old;
    const port = p.Settings?.Port;
    if (!Number.isInteger(port) || (port as number) < 1 || (port as number) > 65535) {
      return fail(op, HRESULT.HCN_E_INVALID_POLICY, `VxlanPort Port ${JSON.stringify(port)} is not a UDP port (1-65535)`, { ...ctx, policyType: 'VxlanPort' });
    }
  }
  return undefined;
}

/** The JSON keys of an ACL rule: hcsshim hcn/hcnpolicy.go AclPolicySetting, and `Id` (src/hns/schema.ts). */
const ACL_KEYS = new Set(['Id', 'Protocols', 'Action', 'Direction', 'LocalAddresses', 'RemoteAddresses', 'LocalPorts', 'RemotePorts', 'RuleType', 'Priority']);
/** The JSON keys of a SetPolicy: hcsshim hcn/hcnpolicy.go SetPolicySetting (its Type is `PolicyType` in JSON). */
const SET_KEYS = new Set(['Id', 'Name', 'PolicyType', 'Values']);
/** Protocols whose rules may name ports (Azure NPM policy_windows.go protocolNumMap: TCP, UDP, SCTP). */
const PORT_PROTOCOLS = new Set([6, 17, 132]);

const isString = (v: unknown): v is string => typeof v === 'string';
const optionalString = (v: unknown): boolean => v === undefined || typeof v === 'string';

/**
 * An ACL rule HcnModifyEndpoint (or HcnCreateEndpoint) is given, refused with HCN_E_INVALID_POLICY
 * 0x803B000D "The provided policy configuration is invalid or missing parameters". Observed for an address
 * field holding something that is no address: hcsshim#1059, `LocalAddresses: "Any"` fails with 0x803b000d,
 * and the HNS team answers "HNS only accepts IP addresses and lists of IP addresses for the LocalAddresses
 * and RemoteAddresses fields"; the other rules are modelled with the same code, each from its source:
 *  * a key AclPolicySetting does not have (Azure NPM policy_windows.go: "HNS is not happy with "ID"");
 *  * Action other than Allow or Block, Direction other than In or Out, RuleType other than Host or Switch
 *    (hcsshim ActionType "Value is either Allow or Block"; Pass belongs to TierAcl rules, HNS 14.0);
 *  * Priority outside uint16 (hcsshim `Priority uint16`);
 *  * Protocols other than one decimal number up to 256, "any" (ANY_PROTOCOL, ./acl.ts); 252 below HNS 11.0
 *    (hcsshim hcnglobals.go AclSupportForProtocol252Version);
 *  * ports that are not `n` or `first-last` within 1..65535 (Calico protoPortToHCSPort writes ranges so),
 *    or ports on a protocol other than TCP, UDP or SCTP (a port names nothing there; modelled);
 *  * an address item that is neither an IP address or prefix nor the Id of a SetPolicy of the endpoint's
 *    network (`hasSet`); addresses and set Ids mixed in one field (neither Azure NPM nor Calico writes it).
 * Undefined when the rule is fine.
 */
export function refuseAcl(op: string, p: HcnPolicy, version: HnsVersion, hasSet: (id: string) => boolean, ctx: ErrorContext): HnsError | undefined {
  const s = typeof p.Settings === 'object' && p.Settings !== null && !Array.isArray(p.Settings) ? p.Settings : undefined;
  const c = { ...ctx, policyType: p.Type, aclId: isString(s?.Id) ? s.Id : undefined };
  const bad = (detail: string) => fail(op, HRESULT.HCN_E_INVALID_POLICY, detail, c);
  if (!s) return bad('an ACL needs Settings');
  const unknown = Object.keys(s).find((k) => !ACL_KEYS.has(k));
  if (unknown !== undefined) return bad(`ACL has no field ${JSON.stringify(unknown)}`);
  if (!optionalString(s.Id)) return bad('Id must be a string');
  if (s.Action !== 'Allow' && s.Action !== 'Block') return bad(`Action ${JSON.stringify(s.Action)} is not Allow or Block`);
  if (s.Direction !== 'In' && s.Direction !== 'Out') return bad(`Direction ${JSON.stringify(s.Direction)} is not In or Out`);
  if (s.RuleType !== undefined && s.RuleType !== 'Host' && s.RuleType !== 'Switch') return bad(`RuleType ${JSON.stringify(s.RuleType)} is not Host or Switch`);
  if (s.Priority !== undefined && !(Number.isInteger(s.Priority) && (s.Priority as number) >= 0 && (s.Priority as number) <= 0xffff)) {
    return bad(`Priority ${JSON.stringify(s.Priority)} is not a uint16`);
  }
  const protocol = parseProtocol(s.Protocols);
  if (protocol === undefined) return bad(`Protocols ${JSON.stringify(s.Protocols)} is not one protocol number (0-256)`);
  if (protocol === 252 && !versionAtLeast(version, ACL_PROTOCOL_252_VERSION)) return bad(`protocol 252 needs HNS 11.0; this node runs ${version.Major}.${version.Minor}`);
  for (const key of ['LocalPorts', 'RemotePorts'] as const) {
    const v = s[key];
    if (!optionalString(v) || parsePorts((v as string | undefined) ?? '') === undefined) return bad(`${key} ${JSON.stringify(v)} is not a list of ports and port ranges (1-65535)`);
    if (listItems(v as string | undefined).length > 0 && !PORT_PROTOCOLS.has(protocol))
      return bad(`${key} on protocol ${protocol === ANY_PROTOCOL ? 'any' : protocol}: ports need TCP, UDP or SCTP`);
  }
  for (const key of ['LocalAddresses', 'RemoteAddresses'] as const) {
    const v = s[key];
    if (!optionalString(v)) return bad(`${key} must be a string`);
    const items = listItems(v as string | undefined);
    const sets = items.filter((i) => parseAddress(i) === undefined);
    const missing = sets.find((i) => !hasSet(i));
    if (missing !== undefined) return bad(`${key} item ${JSON.stringify(missing)} is neither an IP address or prefix nor a SetPolicy Id of the network`);
    if (sets.length > 0 && sets.length < items.length) return bad(`${key} mixes addresses and set Ids`);
  }
  return undefined;
}

/**
 * A SetPolicy HcnModifyNetwork is given (Add, Update; Remove needs only its Id): refused with
 * HCN_E_INVALID_POLICY 0x803B000D when malformed (modelled, as refuseAcl): a key SetPolicySetting does not
 * have, an empty Id, Name not a string, PolicyType other than IPSET or NESTEDIPSET, Values not a string,
 * an IPSET member that is no IP address or prefix, a NESTEDIPSET member that is itself nested (Azure NPM
 * nests hash sets in list sets only: ipset.go GetSetContents). A NESTEDIPSET member the network does not
 * hold: HCN_E_INVALID_JSON_REFERENCE 0x803B001C (modelled; Azure NPM's fake HNS, network/hnswrapper/
 * hnsv2wrapperfake.go ModifyNetworkSettings, refuses it: "Member Policy %s not found"). NESTEDIPSET below
 * HNS 15.0: refuseUnsupported (hcnglobals.go NestedIpSetVersion). `kindOf(id)`: the PolicyType of the
 * network's set `id`, if it holds one.
 */
export function refuseSetPolicy(op: string, p: HcnPolicy, version: HnsVersion, kindOf: (id: string) => SetPolicyType | undefined, ctx: ErrorContext): HnsError | undefined {
  const s = typeof p.Settings === 'object' && p.Settings !== null && !Array.isArray(p.Settings) ? p.Settings : undefined;
  const c = { ...ctx, policyType: p.Type, set: isString(s?.Id) ? s.Id : undefined };
  const bad = (detail: string) => fail(op, HRESULT.HCN_E_INVALID_POLICY, detail, c);
  if (!s) return bad('a SetPolicy needs Settings');
  const unknown = Object.keys(s).find((k) => !SET_KEYS.has(k));
  if (unknown !== undefined) return bad(`SetPolicy has no field ${JSON.stringify(unknown)}${unknown === 'Type' ? ' (its type is "PolicyType")' : ''}`);
  if (!isString(s.Id) || s.Id === '') return bad('a SetPolicy needs an Id');
  if (!isString(s.Name)) return bad('Name must be a string');
  if (s.PolicyType !== 'IPSET' && s.PolicyType !== 'NESTEDIPSET') return bad(`PolicyType ${JSON.stringify(s.PolicyType)} is not IPSET or NESTEDIPSET`);
  if (!isString(s.Values)) return bad('Values must be a string (a comma-separated list)');
  const items = listItems(s.Values);
  if (s.PolicyType === 'IPSET') {
    const wrong = items.find((i) => parseAddress(i) === undefined);
    return wrong === undefined ? undefined : bad(`IPSET member ${JSON.stringify(wrong)} is no IP address or prefix`);
  }
  const old = refuseUnsupported(op, 'a NESTEDIPSET', NESTED_IP_SET_VERSION, version, c);
  if (old) return old;
  for (const id of items) {
    const kind = kindOf(id);
    if (kind === undefined) return fail(op, HRESULT.HCN_E_INVALID_JSON_REFERENCE, `NESTEDIPSET member ${JSON.stringify(id)} is no set of the network`, c);
    if (kind !== 'IPSET') return bad(`NESTEDIPSET member ${JSON.stringify(id)} is nested itself`);
  }
  return undefined;
}

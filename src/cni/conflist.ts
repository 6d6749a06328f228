// The flannel CNI conflist for this node's backend, the file kubelet / containerd read from the CNI config
// directory: `flanneld cni-config` renders it (../commands/cni-config.ts), and the agent keeps its own
// naming the network it runs (rerenderedOwnConflist). The flannel meta-plugin (flannel-io/cni-plugin
// flannel_windows.go) reads subnet.env and calls the delegate: win-bridge for host-gw (L2Bridge network),
// win-overlay for vxlan (Overlay network), both in HNS v2 mode (`apiVersion: 2`, the policy shape of
// containernetworking/plugins plugins/main/windows/*/sample-v2.conf). The conflist `name` is the HNS
// network name: the flannel plugin passes it to the delegate, which looks the network up by that name.
//
// `subnetFile` and `dataDir` (flannel-io/cni-plugin flannel.go NetConf) are always written, as absolute
// paths from the agent's own flags: without them the plugin reads its default `/run/flannel/subnet.env`,
// which Windows resolves on whatever drive the plugin runs from, so `--subnet-file` would silently
// split the agent and the pods. `subnetFile` is the agent's --subnet-file; `dataDir` (where the plugin
// keeps each pod's delegate config between ADD and DEL; upstream default /var/lib/cni/flannel) is
// `flannel` beside the host-local store the agent uses (--cni-ipam-data-dir, `C:\var\lib\cni\networks`
// -> `C:\var\lib\cni\flannel`), the layout upstream's defaults have.
//
// OutBoundNAT exceptions (traffic that keeps the pod IP as its source):
//  * vxlan: the cluster CIDR and the Service CIDR only, as every overlay install has them: microsoft/SDN
//    Kubernetes/flannel/overlay/cni/config/cni.conf, sig-windows-tools hostprocess/flannel/flanneld/
//    start.ps1 (`Exceptions = $serviceSubnet, $podSubnet`) and rke2 pkg/windows/flannel.go
//    (flannelCniConflistTemplate). The node's LAN is NOT excepted: a LAN machine outside the cluster
//    cannot route a reply back to a pod IP, so pod traffic to it must leave with the node's IP.
//  * host-gw: also the node subnet (microsoft/SDN Kubernetes/flannel/l2bridge/cni/config/cni.conf): on
//    an L2Bridge network the other nodes sit on that subnet and route pod CIDRs to each other.
// `loopbackDSR` is a top-level key of the delegate's config (containernetworking/plugins pkg/hns/
// netconf_windows.go NetConf.LoopbackDSR, read by win-overlay and win-bridge): the plugin adds an
// OutBoundNAT policy with the pod's own IP as destination, so a pod can reach itself through a Service.
import { dirname, join, resolve, win32 } from 'node:path';
import { FlagError } from '../basics/errors.js';
import { nthAddress } from '../basics/ip4.js';
import { contains6, isGlobalUnicast6, nthAddress6 } from '../basics/ip6.js';
import { readBootNetwork } from '../host/boot.js';
import type { NetworkConfig } from '../subnet/net-conf-types.js';
import { isOwnCniConfig } from './conf-dir.js';
import { samePath } from './readiness.js';

export const DEFAULT_SERVICE_CIDR = '10.96.0.0/12';
export const DEFAULT_DNS_SERVER = '10.96.0.10';
export const DEFAULT_DNS_SEARCH = 'svc.cluster.local';
export const DEFAULT_CNI_VERSION = '0.3.0';
/**
 * The dual-stack (sdnbridge) conflist's cniVersion. sdnbridge builds its result as CNI 1.0.0 with
 * `Mac: string(iFace.MacAddress)` (microsoft/windows-container-networking cni/cni.go GetCurrResult): the six
 * raw bytes of a net.HardwareAddr, not `00-15-5D-...`, in every result of 0.3.0 and later. A 0.2.0 result
 * has no interfaces at all (the recorded ADD's result, test/fixtures/cni-traces/sdnbridge-dual-stack-add.json;
 * the version of Microsoft's own examples), so nothing wrong is reported, and containerd's go-cni puts the
 * IPs of an interface-less result on the pod's default interface (result.go GetCNIResultFromResults).
 */
export const SDNBRIDGE_CNI_VERSION = '0.2.0';

export interface CniConfigInput {
  netConf: NetworkConfig;
  /** The HNS network the agent runs (its boot record); default net-conf's Backend.Name. */
  networkName?: string;
  /** The agent's subnet.env (absolute), the plugin's `subnetFile`. */
  subnetFile: string;
  /** The plugin's `dataDir` (absolute). */
  dataDir: string;
  serviceCidr: string;
  /** host-gw: the node network, excepted from NAT. Not used for vxlan. */
  managementSubnet?: string;
  /** Required for vxlan. */
  managementIP?: string;
  dnsServers: string[];
  dnsSearch: string[];
  cniVersion?: string;
  /** Default true. */
  loopbackDSR?: boolean;
  /**
   * Dual-stack (EnableIPv6): the node's two subnets (its Node's podCIDRs, or subnet.env), the IPv6 Service
   * CIDR, and the node's own IPv6 address and the prefix of its network (the IPv6 twins of managementIP and
   * managementSubnet). The conflist is then Microsoft's sdnbridge with host-local ranges for both families
   * (renderDualStackCniConfig).
   */
  dualStack?: { subnet: string; ipv6Subnet: string; ipv6ServiceCidr?: string; managementIPv6?: string; managementIPv6Subnet?: string };
}

interface Policy {
  name: 'EndpointPolicy';
  value: { Type: string; Settings: Record<string, unknown> };
}

const policy = (Type: string, Settings: Record<string, unknown>): Policy => ({ name: 'EndpointPolicy', value: { Type, Settings } });

/** The conflist as a JSON-ready object. Pure; throws FlagError for inputs the backend cannot use. */
export function renderCniConfig(input: CniConfigInput): Record<string, unknown> {
  const { netConf } = input;
  const backend = netConf.backend;
  const vxlan = backend.type === 'vxlan';
  if (input.dualStack && !vxlan) return renderDualStackCniConfig(input, input.dualStack);
  if (vxlan && !input.managementIP) {
    throw new FlagError('FLANNEL_ERR_FLAG', 'flag -management-ip is required for the vxlan backend (the ProviderAddress policy of win-overlay)', { flag: 'management-ip' });
  }
  if (!vxlan && !input.managementSubnet) {
    throw new FlagError('FLANNEL_ERR_FLAG', 'flag -management-subnet (or -management-ip) is required for host-gw: the node network must be excluded from outbound NAT', {
      flag: 'management-subnet',
    });
  }
  const exceptions = unique(vxlan ? [netConf.network, input.serviceCidr] : [netConf.network, input.serviceCidr, input.managementSubnet!]);
  const policies: Policy[] = [policy('OutBoundNAT', { Exceptions: exceptions }), policy('SDNRoute', { DestinationPrefix: input.serviceCidr, NeedEncap: true })];
  if (vxlan) {
    policies.push(policy('ProviderAddress', { ProviderAddress: input.managementIP }));
  } else if (input.managementIP) {
    // Pods reach their own node's IP through the host (win-bridge's classic host route).
    policies.push(policy('SDNRoute', { DestinationPrefix: `${input.managementIP}/32`, NeedEncap: true }));
  }
  const delegate: Record<string, unknown> = {
    type: vxlan ? 'win-overlay' : 'win-bridge',
    apiVersion: 2,
    ...(vxlan ? { endpointMacPrefix: backend.macPrefix } : {}),
    loopbackDSR: input.loopbackDSR ?? true,
    dns: { nameservers: input.dnsServers, search: input.dnsSearch },
    policies,
  };
  return {
    cniVersion: input.cniVersion ?? DEFAULT_CNI_VERSION,
    name: input.networkName ?? backend.name,
    plugins: [{ type: 'flannel', subnetFile: input.subnetFile, dataDir: input.dataDir, capabilities: { portMappings: true, dns: true }, delegate }],
  };
}

/** True when net-conf makes this command render the dual-stack conflist, which runs sdnbridge.exe (install-cni installs it then). */
export function rendersSdnbridge(netConf: NetworkConfig): boolean {
  return netConf.enableIPv6 && netConf.backend.type !== 'vxlan';
}

/**
 * The dual-stack conflist. The flannel meta-plugin on Windows ignores subnet.env's IPv6 keys and
 * win-bridge configures only the first IP (flannel-io/cni-plugin flannel_windows.go; containernetworking/
 * plugins win-bridge_windows.go), so a dual-stack pod needs Microsoft's sdnbridge
 * (microsoft/windows-container-networking, v0.3.1 as pinned; sdnbridge.exe is built from plugins/sdnbridge
 * over common/core/network.go and cni/cni.go), as recorded in sdnbridge-dual-stack-add.json. Each field, and
 * where sdnbridge reads it:
 *  * `cniVersion`: SDNBRIDGE_CNI_VERSION (the result's version: common/core/network.go Add, GetAsVersion).
 *  * `name`: with enableDualStack the network is never created but looked up by this name
 *    (network.go Add: nm.GetNetworkByName(cniConfig.Name)) and must be an L2Bridge; the endpoint is
 *    `<containerID>_<name>` (cni/cni.go GetEndpointInfo). The agent's network, as win-bridge's.
 *  * `type: sdnbridge`: the binary; cni/cni.go maps it to L2Bridge (CniPluginNameToHcnTypeMap).
 *  * `capabilities`: libcni passes runtimeConfig only for the capabilities a plugin declares, under their
 *    names. `portMappings` -> RuntimeConfig.PortMappings, turned into PortMapping policies (and, dual-stack,
 *    one with NatFlagsIPv6) by GetEndpointInfo; `dns` -> RuntimeConfig.DNS (`json:"dns"`), whose servers,
 *    searches and options replace the conflist's (GetNetworkInfo): containerd passes the pod's DNS config
 *    as the `dns` capability (CRI sandbox_run.go cniNamespaceOpts, go-cni WithCapabilityDNS). Microsoft's
 *    example says `dnsCapabilities`, a name nothing fills.
 *  * `optionalFlags` (cni/cni.go OptionalFlags): `localRoutedPortMapping` (NatFlagsLocalRoutedVip on the
 *    port mappings), `allowAclPortMapping` (an inbound ACL per mapping), `enableDualStack` (the network must
 *    exist; IPAM gets sdnbridge's own stdin; both addresses and both default routes go on the endpoint),
 *    `loopbackDSR` (--no-loopback-dsr turns it off, as for win-bridge): GetNetworkInfo first requires
 *    hcn.DSRSupported (hcsshim hcn/hcnglobals.go DSRVersion: HNS 9.3 to 9.x, and 10.2 on; the HNS of
 *    every Windows Server that runs dual-stack, 11.10 on), then network.go Add puts network/policy.go
 *    GetLoopbackDSRPolicy on the endpoint, an OutBoundNAT with the pod's IPv4 address as its destination,
 *    so a pod reaches itself through a Service over IPv4; sdnbridge has no IPv6 twin of it. The recorded
 *    ADD (sdnbridge-dual-stack-add.json) predates this flag: it ran with loopbackDSR false.
 *  * `ipam`: host-local with one range set per family (network.go allocateIpam: invoke.DelegateAdd with the
 *    stdin); each range's `gateway` becomes the endpoint's default route of its family (network/endpoint.go
 *    GetHostComputeEndpoint). The gateways are the agent's `<name>_ep` (`.2`, `::2`), as win-bridge's are;
 *    the ranges start at `.3` / `::3`, after it.
 *  * `dns` (cniTypes.DNS, matched case-insensitively): the endpoint's Dns ServerList and Search, the first
 *    search suffix prefixed with the pod's namespace (GetNetworkInfo).
 *  * `AdditionalArgs`: every `{Name, Value}` whose Name contains "Policy" is added to the endpoint's
 *    policies as given (GetNetworkInfo, then Add), here HCN EndpointPolicy `{Type, Settings}`:
 *    - OutBoundNAT `Exceptions`: IPv4 always (the single-stack conflist's: cluster, Services, node network);
 *      IPv6 only when IPv6Network is not routable (a unique-local fc00::/7 range; global pod addresses leave
 *      as they are): the IPv6 network, Services and the node's IPv6 prefix, so pod-to-node IPv6 keeps the pod's address.
 *    - SDNRoute `DestinationPrefix`, NeedEncap: the Service CIDRs, and the node's own IPv4 /32 and IPv6
 *      /128, reached through the host (win-bridge's classic host route, for both families).
 * `master` (in Microsoft's example) is not read by sdnbridge and is left out; so is a top-level `loopbackDSR`
 * (win-bridge's place for it), which sdnbridge does not read.
 */
export function renderDualStackCniConfig(input: CniConfigInput, dual: NonNullable<CniConfigInput['dualStack']>): Record<string, unknown> {
  const { netConf } = input;
  if (!input.managementSubnet) {
    throw new FlagError('FLANNEL_ERR_FLAG', 'flag -management-subnet (or -management-ip) is required for host-gw: the node network must be excluded from outbound NAT', {
      flag: 'management-subnet',
    });
  }
  const args: Policy[] = [policy('OutBoundNAT', { Exceptions: unique([netConf.network, input.serviceCidr, input.managementSubnet]) })];
  if (!isGlobalUnicast6(netConf.ipv6Network.split('/')[0] ?? '') || contains6('fc00::/7', netConf.ipv6Network.split('/')[0] ?? '')) {
    const v6 = [netConf.ipv6Network, ...(dual.ipv6ServiceCidr ? [dual.ipv6ServiceCidr] : []), ...(dual.managementIPv6Subnet ? [dual.managementIPv6Subnet] : [])];
    args.push(policy('OutBoundNAT', { Exceptions: unique(v6) }));
  }
  args.push(policy('SDNRoute', { DestinationPrefix: input.serviceCidr, NeedEncap: true }));
  if (dual.ipv6ServiceCidr) args.push(policy('SDNRoute', { DestinationPrefix: dual.ipv6ServiceCidr, NeedEncap: true }));
  if (input.managementIP) args.push(policy('SDNRoute', { DestinationPrefix: `${input.managementIP}/32`, NeedEncap: true }));
  if (dual.managementIPv6) args.push(policy('SDNRoute', { DestinationPrefix: `${dual.managementIPv6}/128`, NeedEncap: true }));
  return {
    cniVersion: input.cniVersion ?? SDNBRIDGE_CNI_VERSION,
    name: input.networkName ?? netConf.backend.name,
    plugins: [
      {
        type: 'sdnbridge',
        capabilities: { portMappings: true, dns: true },
        optionalFlags: { localRoutedPortMapping: true, allowAclPortMapping: true, enableDualStack: true, loopbackDSR: input.loopbackDSR ?? true },
        ipam: { type: 'host-local', ranges: dualStackRanges(dual.subnet, dual.ipv6Subnet) },
        dns: { Nameservers: input.dnsServers, Search: input.dnsSearch },
        AdditionalArgs: args.map((p) => ({ Name: p.name, Value: p.value })),
      },
    ],
  };
}

/** host-local's two ranges: each subnet from `.3` / `::3`, gateway `.2` / `::2` (the agent's host endpoint). */
export function dualStackRanges(subnet: string, ipv6Subnet: string): unknown[] {
  return [
    [{ subnet, rangeStart: nthAddress(subnet, 3), gateway: nthAddress(subnet, 2) }],
    [{ subnet: ipv6Subnet, rangeStart: nthAddress6(ipv6Subnet, 3), gateway: nthAddress6(ipv6Subnet, 2) }],
  ];
}

/** What the agent's own conflist must say for the network it runs (rerenderedOwnConflist). */
export interface OwnConflistTarget {
  /** The HNS network the agent runs (created or adopted). */
  networkName: string;
  /**
   * net-conf's Backend.Name: what cni-config renders before the agent has recorded an adopted network
   * (a DaemonSet's init container runs before the agent). A conflist of this name is the agent's too.
   */
  configuredName: string;
  /** The agent's subnet.env (absolute): the flannel plugin of its own conflist reads it. */
  subnetFile: string;
  /** Dual-stack: the node's two subnets, for host-local's ranges. */
  dualStack?: { subnet: string; ipv6Subnet: string };
}

/** What rerenderedOwnConflist changed, and the text to write. */
export interface OwnConflistRewrite {
  text: string;
  /** The name it had, when it named another network than the agent runs. */
  renamedFrom?: string;
  /** True when host-local's dual-stack ranges were set to the node's subnets. */
  reranged: boolean;
}

/**
 * The agent's re-render of its own conflist, the first in --cni-conf-dir: one this command rendered (by
 * content, as isOwnCniConfig judges: flannel with win-overlay/win-bridge, or the dual-stack sdnbridge)
 * for the network the agent runs or for net-conf's name; the flannel plugin reading the agent's
 * subnet.env. Its `name` becomes the network the agent runs (an adopted `vxlan0`) and, dual-stack,
 * host-local's ranges the node's current subnets; everything else (DNS, NAT exceptions, paths) is kept.
 * Undefined when `text` is not such a conflist (a foreign one is never touched) or nothing changes.
 */
export function rerenderedOwnConflist(text: string, target: OwnConflistTarget): OwnConflistRewrite | undefined {
  const names = [target.networkName, target.configuredName];
  const ownName = names.find((n) => isOwnCniConfig(text, n));
  if (ownName === undefined) return undefined;
  const conf = JSON.parse(text) as { name: string; plugins: { type?: unknown; subnetFile?: unknown; ipam?: { ranges?: unknown } }[] };
  const plugin = conf.plugins[0];
  if (plugin.type === 'flannel' && !(typeof plugin.subnetFile === 'string' && samePath(plugin.subnetFile, target.subnetFile))) return undefined;
  const renamedFrom = conf.name !== target.networkName ? conf.name : undefined;
  conf.name = target.networkName;
  let reranged = false;
  if (plugin.type === 'sdnbridge' && target.dualStack && plugin.ipam) {
    const ranges = dualStackRanges(target.dualStack.subnet, target.dualStack.ipv6Subnet);
    reranged = JSON.stringify(plugin.ipam.ranges) !== JSON.stringify(ranges);
    plugin.ipam.ranges = ranges;
  }
  if (renamedFrom === undefined && !reranged) return undefined;
  return { text: JSON.stringify(conf, null, 2) + '\n', ...(renamedFrom !== undefined ? { renamedFrom } : {}), reranged };
}

/** upstream flannel CNI's default dataDir (flannel-io/cni-plugin flannel.go defaultDataDir). */
const UPSTREAM_DATA_DIR = '/var/lib/cni/flannel';

/**
 * The plugin's paths from the agent's flags, absolute (on Windows `C:\...`): `subnetFile` = --subnet-file;
 * `dataDir` = `flannel` beside --cni-ipam-data-dir, or upstream's default when that is off: on Windows
 * `C:\var\lib\cni\flannel`, never resolved against the current drive.
 */
export function cniPaths(config: { subnetFile: string; cniIpamDataDir: string }, platform: NodeJS.Platform = process.platform): { subnetFile: string; dataDir: string } {
  const upstream = platform === 'win32' ? win32.join('C:\\', ...UPSTREAM_DATA_DIR.split('/')) : resolve(UPSTREAM_DATA_DIR);
  return {
    subnetFile: resolve(config.subnetFile),
    dataDir: config.cniIpamDataDir ? join(dirname(resolve(config.cniIpamDataDir)), 'flannel') : upstream,
  };
}

/**
 * The network name the conflist must carry: the one the agent runs, from its boot record beside
 * subnet.env (an adopted `vxlan0` when net-conf has no Backend.Name), else net-conf's Backend.Name.
 * A record of another backend (the node switched from vxlan to host-gw) is ignored.
 */
export function agentNetworkName(netConf: NetworkConfig, subnetFile: string, read: typeof readBootNetwork = readBootNetwork): string {
  const recorded = read(subnetFile);
  return recorded && (recorded.backend === undefined || recorded.backend === netConf.backend.type) ? recorded.name : netConf.backend.name;
}

function unique(items: string[]): string[] {
  return [...new Set(items)];
}

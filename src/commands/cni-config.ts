// `flanneld cni-config`: render the flannel CNI conflist for this node's backend, the file kubelet /
// containerd read from the CNI config directory. The flannel meta-plugin (flannel-io/cni-plugin
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
import { readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { dirname, join, resolve, win32 } from 'node:path';
import { MAX_CONFIG_FILE_BYTES, readRegularFile, writeFileAtomicSync } from '../basics/fs.js';
import type { FlagSpec } from '../config/flags.js';
import { errorMessage, FlagError, SubnetEnvError } from '../basics/errors.js';
import { contains, formatCidr, isIp4, network, normalizeCidr, nthAddress, parseCidr } from '../basics/ip4.js';
import { contains6, isGlobalUnicast6, normalizeCidr6, nthAddress6 } from '../basics/ip6.js';
import { readNetConf, windowsNetConf } from '../subnet/net-conf.js';
import { previousIPv6SubnetFromEnv, previousSubnetFromEnv } from '../subnet/subnet-env.js';
import type { NetworkConfig } from '../subnet/net-conf-types.js';
import type { Command, CommandIO } from './command.js';
import { commandUsage, parseCommandArgs, reportError } from './cni-flags.js';
import { checkCniConfOrder, retireEarlierConfigs } from './cni-conf-dir.js';
import { samePath } from './cni-readiness.js';
import { readBootNetwork } from '../host/boot.js';

export const DEFAULT_SERVICE_CIDR = '10.96.0.0/12';
export const DEFAULT_DNS_SERVER = '10.96.0.10';
export const DEFAULT_DNS_SEARCH = 'svc.cluster.local';
export const DEFAULT_CNI_VERSION = '0.3.0';

export const CNI_CONFIG_FLAGS: readonly FlagSpec[] = [
  {
    name: 'service-cidr',
    kind: 'string',
    default: DEFAULT_SERVICE_CIDR,
    help: 'the cluster Service CIDR: no NAT towards it, routed through the host (SDNRoute)',
    valueName: 'CIDR',
  },
  {
    name: 'management-ip',
    kind: 'string',
    default: '',
    help: "the node's IP (required for vxlan: the ProviderAddress policy; host-gw: a /32 SDNRoute to the host)",
    valueName: 'IP',
  },
  {
    name: 'management-subnet',
    kind: 'string',
    default: '',
    help: "host-gw: the node network's CIDR (no NAT towards it); default: the subnet of --management-ip on this host. Not used for vxlan",
    valueName: 'CIDR',
  },
  {
    name: 'ipv6-service-cidr',
    kind: 'string',
    default: '',
    help: 'dual-stack: the IPv6 Service CIDR (the second --service-cluster-ip-range): routed through the host, no NAT towards it',
    valueName: 'CIDR',
  },
  { name: 'dns-server', kind: 'string', default: DEFAULT_DNS_SERVER, help: 'comma-separated DNS servers for pods (the kube-dns Service IP)', valueName: 'IPS' },
  { name: 'dns-search', kind: 'string', default: DEFAULT_DNS_SEARCH, help: 'comma-separated DNS search suffixes for pods', valueName: 'DOMAINS' },
  { name: 'no-loopback-dsr', kind: 'bool', default: false, help: 'leave loopbackDSR off (by default a pod can reach itself through its own Service)' },
  { name: 'cni-version', kind: 'string', default: DEFAULT_CNI_VERSION, help: 'cniVersion of the conflist', valueName: 'VERSION' },
  { name: 'output', kind: 'string', default: '', help: 'write the conflist to this file (atomically) instead of stdout', valueName: 'FILE', aliases: ['o'] },
  { name: 'force', kind: 'bool', default: false, help: 'with -o: write even when another CNI config in that directory sorts first (containerd loads only the first)' },
];

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
   * Dual-stack (EnableIPv6): the node's two subnets (from subnet.env) and the IPv6 Service CIDR. The
   * conflist is then Microsoft's sdnbridge with host-local ranges for both families (renderDualStackCniConfig).
   */
  dualStack?: { subnet: string; ipv6Subnet: string; ipv6ServiceCidr?: string };
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

/**
 * The dual-stack conflist. The flannel meta-plugin on Windows ignores subnet.env's IPv6 keys and
 * win-bridge configures only the first IP (flannel-io/cni-plugin flannel_windows.go; containernetworking/
 * plugins win-bridge_windows.go), so a dual-stack pod needs Microsoft's sdnbridge
 * (microsoft/windows-container-networking plugins/sdnbridge) with `optionalFlags.enableDualStack`, as
 * recorded in sdnbridge-dual-stack-add.json: it finds the network by this `name` (Type L2Bridge), takes
 * both addresses and gateways from host-local's two `ranges`, and gives the endpoint both
 * IpConfigurations and both default routes. The gateways are the agent's `<name>_ep` (`.2`, `::2`), as
 * win-bridge's are; the ranges start at `.3` / `::3`, after it. OutBoundNAT: IPv4 always (as the
 * single-stack conflist); IPv6 only when IPv6Network is not routable (a unique-local fc00::/7 range):
 * global pod addresses leave as they are. The node's own IP is reached through the host (SDNRoute).
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
    args.push(policy('OutBoundNAT', { Exceptions: unique([netConf.ipv6Network, ...(dual.ipv6ServiceCidr ? [dual.ipv6ServiceCidr] : [])]) }));
  }
  args.push(policy('SDNRoute', { DestinationPrefix: input.serviceCidr, NeedEncap: true }));
  if (dual.ipv6ServiceCidr) args.push(policy('SDNRoute', { DestinationPrefix: dual.ipv6ServiceCidr, NeedEncap: true }));
  if (input.managementIP) args.push(policy('SDNRoute', { DestinationPrefix: `${input.managementIP}/32`, NeedEncap: true }));
  return {
    cniVersion: input.cniVersion ?? DEFAULT_CNI_VERSION,
    name: input.networkName ?? netConf.backend.name,
    plugins: [
      {
        type: 'sdnbridge',
        capabilities: { portMappings: true, dnsCapabilities: true },
        optionalFlags: { localRoutedPortMapping: true, allowAclPortMapping: true, enableDualStack: true },
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

/** True when `text` is a conflist this command renders for HNS network `networkName` (cleanup removes only those). */
export function isOwnCniConfig(text: string, networkName: string): boolean {
  try {
    const conf = JSON.parse(text) as { name?: unknown; plugins?: { type?: unknown; delegate?: { type?: unknown } }[] };
    const plugin = conf.plugins?.[0];
    const dual = plugin?.type === 'sdnbridge' && (plugin as { optionalFlags?: { enableDualStack?: unknown } }).optionalFlags?.enableDualStack === true;
    return conf.name === networkName && (dual || (plugin?.type === 'flannel' && (plugin.delegate?.type === 'win-overlay' || plugin.delegate?.type === 'win-bridge')));
  } catch {
    return false;
  }
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

/**
 * The node's two subnets from the agent's subnet.env (FLANNEL_SUBNET, FLANNEL_IPV6_SUBNET, each the
 * subnet's first address with its length): the dual-stack conflist names them in host-local's ranges.
 * FLANNEL_ERR_SUBNET_ENV when the file or a key is missing (the agent has not got its lease yet).
 */
function dualStackSubnets(subnetFile: string): { subnet: string; ipv6Subnet: string } {
  let text: string;
  try {
    text = readRegularFile(subnetFile, MAX_CONFIG_FILE_BYTES, '--subnet-file');
  } catch (err) {
    throw new SubnetEnvError(
      'FLANNEL_ERR_SUBNET_ENV',
      `the dual-stack conflist names the node's subnets, read from ${subnetFile}: ${errorMessage(err)}; start the agent first (it writes subnet.env), then run cni-config`,
      {
        path: subnetFile,
      },
    );
  }
  const v4 = previousSubnetFromEnv(text);
  const v6 = previousIPv6SubnetFromEnv(text);
  if (v4 === undefined || v6 === undefined) {
    throw new SubnetEnvError(
      'FLANNEL_ERR_SUBNET_ENV',
      `${subnetFile} has no FLANNEL_SUBNET and FLANNEL_IPV6_SUBNET: the agent has not written a dual-stack lease yet; start it with EnableIPv6, then run cni-config`,
      {
        path: subnetFile,
      },
    );
  }
  return { subnet: v4, ipv6Subnet: v6 };
}

function unique(items: string[]): string[] {
  return [...new Set(items)];
}

function cidrFlag(flag: string, value: string): string {
  const n = normalizeCidr(value);
  if (n === undefined) throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${value}" for flag -${flag}: not an IPv4 CIDR (e.g. 10.96.0.0/12)`, { flag, value });
  return n;
}

function listFlag(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

type Interfaces = ReturnType<typeof networkInterfaces>;

/** The CIDR of the host interface holding `ip` (os.networkInterfaces), if any. */
export function subnetOfIP(ip: string, ifaces: Interfaces = networkInterfaces()): string | undefined {
  for (const list of Object.values(ifaces)) {
    for (const a of list ?? []) {
      if (a.family === 'IPv4' && a.address === ip && a.cidr) {
        const c = parseCidr(a.cidr);
        if (c) return formatCidr(network(c));
      }
    }
  }
  return undefined;
}

export const command: Command = {
  summary: 'print (or write with -o) the flannel CNI conflist for this node (win-bridge for host-gw, win-overlay for vxlan)',
  run(args: string[], io: CommandIO): Promise<number> {
    const program = 'flanneld cni-config';
    try {
      const parsed = parseCommandArgs(args, CNI_CONFIG_FLAGS, io, { usesDataplane: false });
      if (parsed.kind === 'help') {
        io.stdout(commandUsage(program, this.summary, CNI_CONFIG_FLAGS));
        return Promise.resolve(0);
      }
      const own = (name: string) => String(parsed.own.get(name) ?? '');
      const clusterNetConf = readNetConf(parsed.config.netConfigPath, (p) => readFileSync(p, 'utf8'));
      const managementIP = own('management-ip');
      if (managementIP && !isIp4(managementIP)) {
        throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${managementIP}" for flag -management-ip: not an IPv4 address`, { flag: 'management-ip', value: managementIP });
      }
      const vxlan = clusterNetConf.backend.type === 'vxlan';
      let managementSubnet = !vxlan && own('management-subnet') ? cidrFlag('management-subnet', own('management-subnet')) : '';
      if (!vxlan && !managementSubnet && managementIP) {
        managementSubnet = subnetOfIP(managementIP) ?? '';
        if (!managementSubnet) {
          throw new FlagError('FLANNEL_ERR_FLAG', `no interface of this host holds ${managementIP}, so its subnet is unknown: pass --management-subnet (e.g. 192.168.1.0/24)`, {
            flag: 'management-subnet',
          });
        }
      }
      if (managementSubnet && managementIP && !contains(managementSubnet, managementIP)) {
        throw new FlagError('FLANNEL_ERR_FLAG', `--management-ip ${managementIP} is not inside --management-subnet ${managementSubnet}`, { flag: 'management-subnet' });
      }
      const dnsServers = listFlag(own('dns-server'));
      for (const d of dnsServers)
        if (!isIp4(d)) throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${d}" in flag -dns-server: not an IPv4 address`, { flag: 'dns-server', value: d });
      // --ipv4-only: a dual-stack net-conf's IPv4 half, rendered as an IPv4-only cluster's conflist.
      const netConf = windowsNetConf(clusterNetConf, parsed.config.ipv4Only === true, { path: parsed.config.netConfigPath });
      const paths = cniPaths(parsed.config);
      const networkName = agentNetworkName(netConf, paths.subnetFile);
      const ipv6ServiceCidr = own('ipv6-service-cidr');
      if (ipv6ServiceCidr && normalizeCidr6(ipv6ServiceCidr) === undefined) {
        throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${ipv6ServiceCidr}" for flag -ipv6-service-cidr: not an IPv6 CIDR (e.g. fd00:10:96::/112)`, {
          flag: 'ipv6-service-cidr',
        });
      }
      const dualStack = netConf.enableIPv6
        ? { ...dualStackSubnets(paths.subnetFile), ...(ipv6ServiceCidr ? { ipv6ServiceCidr: normalizeCidr6(ipv6ServiceCidr)! } : {}) }
        : undefined;
      const conf = renderCniConfig({
        netConf,
        networkName,
        ...paths,
        serviceCidr: cidrFlag('service-cidr', own('service-cidr')),
        managementSubnet: managementSubnet || undefined,
        managementIP: managementIP || undefined,
        dnsServers,
        dnsSearch: listFlag(own('dns-search')),
        cniVersion: own('cni-version') || DEFAULT_CNI_VERSION,
        loopbackDSR: parsed.own.get('no-loopback-dsr') !== true,
        ...(dualStack ? { dualStack } : {}),
      });
      const text = JSON.stringify(conf, null, 2) + '\n';
      const out = own('output');
      if (!out) {
        io.stdout(text);
        return Promise.resolve(0);
      }
      const earlier = checkCniConfOrder(out, parsed.own.get('force') === true, io.stderr);
      writeFileAtomicSync(out, text);
      io.stderr(`wrote ${out} (network ${networkName}, ${dualStack ? 'sdnbridge, dual-stack' : netConf.backend.type === 'vxlan' ? 'win-overlay' : 'win-bridge'})\n`);
      retireEarlierConfigs(out, earlier, io.stderr);
      return Promise.resolve(0);
    } catch (err) {
      return Promise.resolve(reportError(program, err, io));
    }
  },
};

// `flanneld cni-config`: render the flannel CNI conflist for this node's backend (../cni/conflist.ts) and
// print it, or write it (-o) where containerd loads it first (../cni/conf-dir.ts).
//
// The node's addresses (host-gw: the subnet of --management-ip; dual-stack: its IPv6 address and prefix)
// are read from the host's adapters as the agent reads them (the dataplane's Host: iphlpapi on Windows, the
// state file of a simulated node), the IPv6 address chosen by the agent's own rule (../host/select.ts
// selectIPv6Address). Dual-stack, the node's subnets come from its Node with --kube-subnet-mgr (the
// podCIDRs the kube subnet manager leases, read without writing anything, so a DaemonSet's init container
// renders the conflist before the agent has ever run on the node), else from the agent's subnet.env.
import { posix, win32 } from 'node:path';
import { Writable } from 'node:stream';
import { MAX_CONFIG_FILE_BYTES, readRegularFile, writeFileAtomicSync } from '../basics/fs.js';
import type { FlagSpec } from '../config/flags.js';
import type { AgentConfig } from '../config/agent-config.js';
import { errorMessage, FlagError, FlannelError, KubeError, SubnetEnvError } from '../basics/errors.js';
import { contains, isIp4, normalizeCidr } from '../basics/ip4.js';
import { normalizeCidr6 } from '../basics/ip6.js';
import { systemClock } from '../basics/clock.js';
import { createLogger, silentLogger, type Logger } from '../basics/log.js';
import type { HostInterface } from '../host/host.js';
import { findInterfaceByIP, selectIPv6Address } from '../host/select.js';
import { readNetConf, windowsNetConf } from '../subnet/net-conf.js';
import { previousIPv6SubnetFromEnv, previousSubnetFromEnv } from '../subnet/subnet-env.js';
import type { NetworkConfig } from '../subnet/net-conf-types.js';
import type { Command, CommandIO } from './command.js';
import { commandUsage, parseCommandArgs, reportError } from './cni-flags.js';
import { checkCniConfOrder, retireEarlierConfigs } from '../cni/conf-dir.js';
import { readContainerdCni } from '../cni/containerd-config.js';
import { samePath } from '../cni/readiness.js';
import {
  agentNetworkName,
  cniPaths,
  DEFAULT_CNI_VERSION,
  DEFAULT_DNS_SEARCH,
  DEFAULT_DNS_SERVER,
  DEFAULT_SERVICE_CIDR,
  renderCniConfig,
  rendersSdnbridge,
  SDNBRIDGE_CNI_VERSION,
  type CniConfigInput,
} from '../cni/conflist.js';

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
  {
    name: 'cni-version',
    kind: 'string',
    default: '',
    help: `cniVersion of the conflist (default ${DEFAULT_CNI_VERSION}; ${SDNBRIDGE_CNI_VERSION} for the dual-stack sdnbridge one, whose later results carry the MAC as raw bytes)`,
    valueName: 'VERSION',
  },
  { name: 'output', kind: 'string', default: '', help: 'write the conflist to this file (atomically) instead of stdout', valueName: 'FILE', aliases: ['o'] },
  { name: 'force', kind: 'bool', default: false, help: 'with -o: write even when another CNI config in that directory sorts first (containerd loads only the first)' },
];

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
      `the dual-stack conflist names the node's subnets, read from ${subnetFile}: ${errorMessage(err)}; with the kube subnet manager pass --kube-subnet-mgr (they are read from the Node), else start the agent first (it writes subnet.env), then run cni-config`,
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

/** A logger writing to the command's stderr, in the agent's --log-level and --log-format. */
function commandLogger(config: AgentConfig, io: CommandIO): Logger {
  const stream = new Writable({
    write(chunk: Buffer | string, _enc, done) {
      io.stderr(String(chunk));
      done();
    },
  });
  return createLogger({ level: config.logLevel, format: config.logFormat, stream });
}

/**
 * The node's two subnets. With --kube-subnet-mgr, its Node's podCIDRs as the kube subnet manager leases them
 * (the same bounded, logged wait for them, --node-wait-timeout; nothing is written to the Node): the agent's
 * lease is exactly these, so the conflist is right before the agent has ever run. In etcd mode the lease is
 * the agent's to take, and subnet.env says what it took. `annotatedIPv6`, kube mode without --iface or
 * --iface-regex: the IPv6 addresses the own Node's flannel annotations name, in the agent's order
 * (public-ipv6-overwrite, node-public-ipv6: src/agent/external-interface.ts publicIPv6), then the
 * `public-ipv6` an earlier run of the agent published (src/subnet/kube/annotations.ts).
 */
async function nodeSubnets(
  config: AgentConfig,
  netConf: NetworkConfig,
  subnetFile: string,
  io: CommandIO,
): Promise<{ subnet: string; ipv6Subnet: string; annotatedIPv6: string[] }> {
  if (!config.kubeSubnetMgr) return { ...dualStackSubnets(subnetFile), annotatedIPv6: [] };
  const [{ kubeStart }, { Metrics }] = await Promise.all([import('../subnet/kube/factory.js'), import('../basics/metrics.js')]);
  const kube = kubeStart(config, { log: commandLogger(config, io), metrics: new Metrics(), clock: systemClock });
  const signal = new AbortController().signal;
  const { subnet, ipv6Subnet, publicIPv6 } = await kube.subnetManager(netConf).ownSubnets(signal);
  // The wait refuses a dual-stack net-conf on a Node without an IPv6 podCIDR (own-node.ts); said again here for the types.
  if (ipv6Subnet === undefined) throw new KubeError('FLANNEL_ERR_NODE', 'the own Node has no IPv6 pod cidr', { reason: 'no-ipv6-podcidr' });
  const byFlags = config.iface.length > 0 || config.ifaceRegex.length > 0;
  const annotatedIPv6 = byFlags ? [] : [...(await kube.publicIPv6s(signal)), ...(publicIPv6 !== undefined ? [publicIPv6] : [])];
  return { subnet, ipv6Subnet, annotatedIPv6 };
}

/** The host's adapters, as the agent reads them (the dataplane's Host), with their IPv6 addresses when asked. */
async function hostInterfaces(config: AgentConfig, ipv6: boolean): Promise<HostInterface[]> {
  const [{ createDataplane }, { Metrics }] = await Promise.all([import('../dataplane/factory.js'), import('../basics/metrics.js')]);
  const dataplane = await createDataplane(config, { log: silentLogger(), metrics: new Metrics(), clock: systemClock });
  return dataplane.host.interfaces({ ipv6 });
}

/**
 * The node's IPv6 address and the prefix of its network: the address the agent takes on the adapter of
 * --management-ip (selectIPv6Address: --iface or --public-ipv6 when the adapter holds it, else, in kube
 * mode without --iface / --iface-regex, one the own Node's flannel annotations name (`annotated`), else
 * its first stable global or unique-local address), with that address's on-link prefix.
 */
export function managementIPv6Of(
  iface: HostInterface,
  config: Pick<AgentConfig, 'iface' | 'publicIPv6'> & { ifaceRegex?: string[] },
  annotated: readonly string[] = [],
): { managementIPv6: string; managementIPv6Subnet: string } {
  const byFlags = config.iface.length > 0 || (config.ifaceRegex ?? []).length > 0;
  const address = selectIPv6Address(iface, {
    iface: config.iface,
    publicIPv6s: [...(config.publicIPv6 ? [config.publicIPv6] : []), ...(byFlags ? [] : annotated)],
    ...(config.publicIPv6 ? { assumed: config.publicIPv6 } : {}),
  });
  return { managementIPv6: address.address, managementIPv6Subnet: normalizeCidr6(`${address.address}/${address.prefixLength}`)! };
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

/** The IPv4 CIDR of the host adapter holding `ip` (Host.interfaces), if any. */
export function subnetOfIP(ip: string, ifaces: HostInterface[]): string | undefined {
  const iface = findInterfaceByIP(ifaces, ip);
  return iface && normalizeCidr(`${iface.ipv4}/${iface.prefixLength}`);
}

/**
 * containerd loads the conflist from its conf_dir only (--containerd-config, ../cni/containerd-config.ts):
 * an -o elsewhere is written as asked, and said with the -o that fits; containerd's config is never edited.
 */
function warnOutsideConfDir(out: string, containerdConfig: string, io: CommandIO): void {
  const path = io.platform === 'win32' ? win32 : posix;
  try {
    const containerd = readContainerdCni(containerdConfig, io.platform);
    if (containerd === undefined || samePath(path.dirname(out), containerd.confDir)) return;
    const from = containerd.confDirFrom === 'default' ? "containerd's default" : 'conf_dir';
    io.stderr(
      `warning: -o ${out} is not in containerd's conf_dir ${containerd.confDir} (${from} in ${containerd.file}): containerd will not load it; ` +
        `write it with -o ${path.join(containerd.confDir, path.basename(out))}, or set conf_dir = '${path.dirname(out)}' in ${containerd.table} (then restart containerd)\n`,
    );
  } catch (err) {
    io.stderr(`warning: cannot tell whether containerd loads ${out}: ${errorMessage(err)}${err instanceof FlannelError ? ` [${err.code}]` : ''}\n`);
  }
}

export const command: Command = {
  summary: 'print (or write with -o) the flannel CNI conflist for this node (win-bridge for host-gw, win-overlay for vxlan, sdnbridge for dual-stack)',
  async run(args: string[], io: CommandIO): Promise<number> {
    const program = 'flanneld cni-config';
    try {
      const parsed = parseCommandArgs(args, CNI_CONFIG_FLAGS, io, { usesDataplane: false, kube: true });
      if (parsed.kind === 'help') {
        io.stdout(commandUsage(program, this.summary, CNI_CONFIG_FLAGS));
        return 0;
      }
      const { config } = parsed;
      const own = (name: string) => String(parsed.own.get(name) ?? '');
      const clusterNetConf = readNetConf(config.netConfigPath);
      const managementIP = own('management-ip');
      if (managementIP && !isIp4(managementIP)) {
        throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${managementIP}" for flag -management-ip: not an IPv4 address`, { flag: 'management-ip', value: managementIP });
      }
      // --ipv4-only: a dual-stack net-conf's IPv4 half, rendered as an IPv4-only cluster's conflist.
      const netConf = windowsNetConf(clusterNetConf, config.ipv4Only === true, { path: config.netConfigPath });
      const vxlan = netConf.backend.type === 'vxlan';
      const dual = rendersSdnbridge(netConf);
      // The host's adapters, read once and only when a node address must be found on them.
      let adapters: Promise<HostInterface[]> | undefined;
      const host = () => (adapters ??= hostInterfaces(config, dual));
      let managementSubnet = !vxlan && own('management-subnet') ? cidrFlag('management-subnet', own('management-subnet')) : '';
      if (!vxlan && !managementSubnet && managementIP) {
        managementSubnet = subnetOfIP(managementIP, await host()) ?? '';
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
      const paths = cniPaths(config);
      const networkName = agentNetworkName(netConf, paths.subnetFile);
      const ipv6ServiceCidr = own('ipv6-service-cidr');
      if (ipv6ServiceCidr && normalizeCidr6(ipv6ServiceCidr) === undefined) {
        throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${ipv6ServiceCidr}" for flag -ipv6-service-cidr: not an IPv6 CIDR (e.g. fd00:10:96::/112)`, {
          flag: 'ipv6-service-cidr',
        });
      }
      let dualStack: CniConfigInput['dualStack'];
      if (dual) {
        const adapter = managementIP ? findInterfaceByIP(await host(), managementIP) : undefined;
        const { annotatedIPv6, ...subnets } = await nodeSubnets(config, netConf, paths.subnetFile, io);
        dualStack = {
          ...subnets,
          ...(ipv6ServiceCidr ? { ipv6ServiceCidr: normalizeCidr6(ipv6ServiceCidr)! } : {}),
          ...(adapter ? managementIPv6Of(adapter, config, annotatedIPv6) : {}),
        };
      }
      const cniVersion = own('cni-version');
      const conf = renderCniConfig({
        netConf,
        networkName,
        ...paths,
        serviceCidr: cidrFlag('service-cidr', own('service-cidr')),
        managementSubnet: managementSubnet || undefined,
        managementIP: managementIP || undefined,
        dnsServers,
        dnsSearch: listFlag(own('dns-search')),
        ...(cniVersion ? { cniVersion } : {}),
        loopbackDSR: parsed.own.get('no-loopback-dsr') !== true,
        ...(dualStack ? { dualStack } : {}),
      });
      const text = JSON.stringify(conf, null, 2) + '\n';
      const out = own('output');
      if (!out) {
        io.stdout(text);
        return 0;
      }
      warnOutsideConfDir(out, config.containerdConfig, io);
      const earlier = checkCniConfOrder(out, parsed.own.get('force') === true, io.stderr);
      writeFileAtomicSync(out, text);
      io.stderr(`wrote ${out} (network ${networkName}, ${dualStack ? 'sdnbridge, dual-stack' : vxlan ? 'win-overlay' : 'win-bridge'})\n`);
      retireEarlierConfigs(out, earlier, io.stderr);
      return 0;
    } catch (err) {
      return reportError(program, err, io);
    }
  },
};

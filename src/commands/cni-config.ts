// `flanneld cni-config`: render the flannel CNI conflist for this node's backend, the file kubelet /
// containerd read from the CNI config directory. The flannel meta-plugin (flannel-io/cni-plugin
// flannel_windows.go) reads subnet.env and calls the delegate: win-bridge for host-gw (L2Bridge network),
// win-overlay for vxlan (Overlay network), both in HNS v2 mode (`apiVersion: 2`, the policy shape of
// containernetworking/plugins plugins/main/windows/*/sample-v2.conf). The conflist `name` is the HNS
// network name: the flannel plugin passes it to the delegate, which looks the network up by that name.
import { readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { writeFileAtomicSync } from '../fs-atomic.js';
import type { FlagSpec } from '../config/flags.js';
import { FlagError } from '../errors.js';
import { contains, formatCidr, isIp4, network, normalizeCidr, parseCidr } from '../ip4.js';
import { readNetConf } from '../subnet/net-conf.js';
import type { NetworkConfig } from '../subnet/net-conf-types.js';
import type { Command, CommandIO } from './command.js';
import { commandUsage, parseCommandArgs, reportError } from './cni-flags.js';

export const DEFAULT_SERVICE_CIDR = '10.96.0.0/12';
export const DEFAULT_DNS_SERVER = '10.96.0.10';
export const DEFAULT_DNS_SEARCH = 'svc.cluster.local';
export const DEFAULT_CNI_VERSION = '0.3.0';

export const CNI_CONFIG_FLAGS: readonly FlagSpec[] = [
  { name: 'service-cidr', kind: 'string', default: DEFAULT_SERVICE_CIDR, help: 'the cluster Service CIDR: no NAT towards it, routed through the host (SDNRoute)', valueName: 'CIDR' },
  { name: 'management-ip', kind: 'string', default: '', help: "the node's IP (required for vxlan: the ProviderAddress policy; host-gw: a /32 SDNRoute to the host)", valueName: 'IP' },
  { name: 'management-subnet', kind: 'string', default: '', help: "the node network's CIDR (no NAT towards it); default: the subnet of --management-ip on this host", valueName: 'CIDR' },
  { name: 'dns-server', kind: 'string', default: DEFAULT_DNS_SERVER, help: 'comma-separated DNS servers for pods (the kube-dns Service IP)', valueName: 'IPS' },
  { name: 'dns-search', kind: 'string', default: DEFAULT_DNS_SEARCH, help: 'comma-separated DNS search suffixes for pods', valueName: 'DOMAINS' },
  { name: 'cni-version', kind: 'string', default: DEFAULT_CNI_VERSION, help: 'cniVersion of the conflist', valueName: 'VERSION' },
  { name: 'output', kind: 'string', default: '', help: 'write the conflist to this file (atomically) instead of stdout', valueName: 'FILE', aliases: ['o'] },
];

export interface CniConfigInput {
  netConf: NetworkConfig;
  serviceCidr: string;
  managementSubnet: string;
  /** Required for vxlan. */
  managementIP?: string;
  dnsServers: string[];
  dnsSearch: string[];
  cniVersion?: string;
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
  if (vxlan && !input.managementIP) {
    throw new FlagError('flag -management-ip is required for the vxlan backend (the ProviderAddress policy of win-overlay)', { flag: 'management-ip' });
  }
  const exceptions = unique([netConf.network, input.serviceCidr, input.managementSubnet]);
  const policies: Policy[] = [
    policy('OutBoundNAT', { Exceptions: exceptions }),
    policy('SDNRoute', { DestinationPrefix: input.serviceCidr, NeedEncap: true }),
  ];
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
    dns: { nameservers: input.dnsServers, search: input.dnsSearch },
    policies,
  };
  return {
    cniVersion: input.cniVersion ?? DEFAULT_CNI_VERSION,
    name: backend.name,
    plugins: [{ type: 'flannel', capabilities: { portMappings: true, dns: true }, delegate }],
  };
}

function unique(items: string[]): string[] {
  return [...new Set(items)];
}

function cidrFlag(flag: string, value: string): string {
  const n = normalizeCidr(value);
  if (n === undefined) throw new FlagError(`invalid value "${value}" for flag -${flag}: not an IPv4 CIDR (e.g. 10.96.0.0/12)`, { flag, value });
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
  async run(args: string[], io: CommandIO): Promise<number> {
    const program = 'flanneld cni-config';
    try {
      const parsed = parseCommandArgs(args, CNI_CONFIG_FLAGS, io);
      if (parsed.kind === 'help') {
        io.stdout(commandUsage(program, this.summary, CNI_CONFIG_FLAGS));
        return 0;
      }
      const own = (name: string) => String(parsed.own.get(name) ?? '');
      const netConf = readNetConf(parsed.config.netConfigPath, (p) => readFileSync(p, 'utf8'));
      const managementIP = own('management-ip');
      if (managementIP && !isIp4(managementIP)) {
        throw new FlagError(`invalid value "${managementIP}" for flag -management-ip: not an IPv4 address`, { flag: 'management-ip', value: managementIP });
      }
      let managementSubnet = own('management-subnet') ? cidrFlag('management-subnet', own('management-subnet')) : '';
      if (!managementSubnet && managementIP) managementSubnet = subnetOfIP(managementIP) ?? '';
      if (!managementSubnet) {
        throw new FlagError(
          managementIP
            ? `no interface of this host holds ${managementIP}, so its subnet is unknown: pass --management-subnet (e.g. 192.168.1.0/24)`
            : 'flag -management-subnet (or -management-ip) is required: the node network must be excluded from outbound NAT',
          { flag: 'management-subnet' },
        );
      }
      if (managementIP && !contains(managementSubnet, managementIP)) {
        throw new FlagError(`--management-ip ${managementIP} is not inside --management-subnet ${managementSubnet}`, { flag: 'management-subnet' });
      }
      const dnsServers = listFlag(own('dns-server'));
      for (const d of dnsServers) if (!isIp4(d)) throw new FlagError(`invalid value "${d}" in flag -dns-server: not an IPv4 address`, { flag: 'dns-server', value: d });
      const conf = renderCniConfig({
        netConf,
        serviceCidr: cidrFlag('service-cidr', own('service-cidr')),
        managementSubnet,
        managementIP: managementIP || undefined,
        dnsServers,
        dnsSearch: listFlag(own('dns-search')),
        cniVersion: own('cni-version') || DEFAULT_CNI_VERSION,
      });
      const text = JSON.stringify(conf, null, 2) + '\n';
      const out = own('output');
      if (!out) {
        io.stdout(text);
        return 0;
      }
      writeFileAtomicSync(out, text);
      io.stderr(`wrote ${out} (network ${netConf.backend.name}, ${netConf.backend.type === 'vxlan' ? 'win-overlay' : 'win-bridge'})\n`);
      return 0;
    } catch (err) {
      return reportError(program, err, io);
    }
  },
};

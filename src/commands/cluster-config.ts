// `flanneld cluster-config`: the settings of the Windows DaemonSet's `flanneld-windows-config` ConfigMap
// (deploy/base), read from the cluster instead of typed by hand, as sig-windows-tools' HostProcess flannel
// read them (kubernetes-sigs/sig-windows-tools hostprocess/flannel/flanneld/flannel-overlay.yml mounts
// `kubeadm-config` and `kube-proxy`; its start.ps1 takes `serviceSubnet:` from kubeadm-config's
// ClusterConfiguration, and flanneld runs with kube-proxy's `kubeconfig.conf`). Those ConfigMaps live in
// kube-system and our DaemonSet in kube-flannel (a pod mounts ConfigMaps of its own namespace only), so
// they are read where the admin has kubectl:
//   kubectl -n kube-system get configmap kubeadm-config kube-proxy -o yaml | flanneld cluster-config > cluster-config.yaml
//  * the API server: kube-proxy's kubeconfig.conf `server:` (what kube-proxy on every node uses: kubeadm's
//    control-plane endpoint), else ClusterConfiguration `controlPlaneEndpoint` (port 6443 when none);
//  * SERVICE_CIDR: ClusterConfiguration `networking.serviceSubnet` (its IPv4 entry);
//  * KUBE_DNS_SERVICE_IP: the 10th address of that subnet, as kubeadm assigns it (kubernetes
//    cmd/kubeadm/app/constants/constants.go GetDNSIP: utilnet.GetIndexedIP(svcSubnetCIDR, 10));
//  * FLANNELD_IPV6_SERVICE_CIDR, in a dual-stack cluster: serviceSubnet's IPv6 entry (kubeadm takes
//    `<v4>,<v6>` there, as the API server's --service-cluster-ip-range), which `cni-config` reads from the
//    ConfigMap (envFrom) for the sdnbridge conflist's IPv6 NAT exception and Service route;
//  * FLANNELD_IPV4_ONLY, with --ipv4-only: the Windows nodes run the dual-stack net-conf's IPv4 half
//    (vxlan: kube-proxy runs single-stack on Overlay networks), agent and init containers alike.
//  * FLANNELD_NETWORK_POLICY, with --network-policy: the agent enforces NetworkPolicy (docs/network-policy.md).
// Flags give or override each. Refuses (FLANNEL_ERR_CLUSTER_CONFIG, nothing printed) a value it cannot find,
// and an API server inside the Service CIDR (the `kubernetes` Service's ClusterIP, which answers on a
// Windows node only once kube-proxy runs, and kube-proxy needs the network flanneld creates).
import yaml from 'js-yaml';
import { parseFlags, renderUsage, type FlagSpec } from '../config/flags.js';
import { ConfigError, FlagError, errorMessage } from '../basics/errors.js';
import { contains, isIp4, nthAddress, normalizeCidr } from '../basics/ip4.js';
import { normalizeCidr6 } from '../basics/ip6.js';
import type { Command, CommandIO } from './command.js';
import { readFileFlag, reportError } from './cni-flags.js';

const CLUSTER_CONFIG_FLAGS: readonly FlagSpec[] = [
  {
    name: 'file',
    kind: 'string',
    default: '-',
    help: 'kube-system ConfigMaps kubeadm-config and kube-proxy (YAML or JSON, a List or documents); - reads stdin',
    valueName: 'FILE',
    aliases: ['f'],
    noEnv: true,
  },
  {
    name: 'api-server',
    kind: 'string',
    default: '',
    help: 'the API server as a Windows node reaches it without the Service network (URL or HOST:PORT); default: from kube-proxy or kubeadm-config',
    valueName: 'URL',
    noEnv: true,
  },
  { name: 'service-cidr', kind: 'string', default: '', help: "the cluster's Service CIDR; default: kubeadm-config's networking.serviceSubnet", valueName: 'CIDR', noEnv: true },
  { name: 'kube-dns-ip', kind: 'string', default: '', help: 'the kube-dns Service IP; default: the 10th address of the Service CIDR (kubeadm)', valueName: 'IP', noEnv: true },
  {
    name: 'ipv6-service-cidr',
    kind: 'string',
    default: '',
    help: "dual-stack: the cluster's IPv6 Service CIDR; default: kubeadm-config's networking.serviceSubnet IPv6 entry",
    valueName: 'CIDR',
    noEnv: true,
  },
  { name: 'ipv4-only', kind: 'bool', default: false, help: 'the Windows nodes run IPv4 only in a dual-stack cluster (FLANNELD_IPV4_ONLY; vxlan needs it)', noEnv: true },
  { name: 'network-policy', kind: 'bool', default: false, help: "the Windows nodes' agents enforce NetworkPolicy (FLANNELD_NETWORK_POLICY)", noEnv: true },
  { name: 'cni-bin-dir', kind: 'string', default: 'C:\\opt\\cni\\bin', help: "containerd's CNI bin_dir on the Windows nodes", valueName: 'DIR', noEnv: true },
  { name: 'help', kind: 'bool', default: false, help: 'print this message', aliases: ['h'], noEnv: true },
];

const SUMMARY = "print the DaemonSet's flanneld-windows-config ConfigMap from the cluster's kubeadm-config and kube-proxy ConfigMaps";

/** The four settings and where each came from. */
export interface ClusterSettings {
  host: string;
  port: string;
  serviceCidr: string;
  dnsIp: string;
  /** Dual-stack clusters only. */
  ipv6ServiceCidr?: string;
  sources: { apiServer: string; serviceCidr: string; dnsIp: string; ipv6ServiceCidr?: string };
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

function refuse(message: string, context: Record<string, string> = {}): never {
  throw new ConfigError('FLANNEL_ERR_CLUSTER_CONFIG', message, context);
}

/** The ConfigMaps in `text` (a List, several documents, or one), by name. */
export function configMapsByName(text: string): Map<string, Obj> {
  let docs: unknown[];
  try {
    docs = yaml.loadAll(text);
  } catch (err) {
    refuse(`cannot read the ConfigMaps: ${errorMessage(err)}; give the output of kubectl -n kube-system get configmap kubeadm-config kube-proxy -o yaml`);
  }
  const out = new Map<string, Obj>();
  const add = (d: unknown) => {
    if (!isObj(d)) return;
    if (d['kind'] === 'List' && Array.isArray(d['items'])) for (const i of d['items']) add(i);
    else if (d['kind'] === 'ConfigMap' && isObj(d['metadata']) && typeof d['metadata']['name'] === 'string') out.set(d['metadata']['name'], d);
  };
  for (const d of docs) add(d);
  return out;
}

function dataKey(cm: Obj | undefined, key: string): string | undefined {
  const data = cm?.['data'];
  const v = isObj(data) ? data[key] : undefined;
  return typeof v === 'string' ? v : undefined;
}

function yamlDoc(text: string | undefined, what: string): Obj | undefined {
  if (text === undefined) return undefined;
  try {
    const d = yaml.load(text);
    return isObj(d) ? d : undefined;
  } catch (err) {
    refuse(`${what} is not YAML: ${errorMessage(err)}`);
  }
}

/** HOST:PORT or a URL -> host and port ([v6] unbracketed); undefined when it names no host. */
export function splitEndpoint(text: string): { host: string; port: string } | undefined {
  const t = text.trim();
  if (!t) return undefined;
  try {
    const u = new URL(t.includes('://') ? t : `https://${t}`);
    if (!u.hostname) return undefined;
    return { host: u.hostname.replace(/^\[|\]$/g, ''), port: u.port || (u.protocol === 'http:' ? '80' : t.includes('://') ? '443' : '6443') };
  } catch {
    return undefined;
  }
}

/** The settings from the ConfigMaps and the flags (a flag wins). Pure; throws FLANNEL_ERR_CLUSTER_CONFIG. */
export function clusterSettings(cms: Map<string, Obj>, flags: { apiServer?: string; serviceCidr?: string; kubeDnsIp?: string; ipv6ServiceCidr?: string } = {}): ClusterSettings {
  const clusterConfiguration = yamlDoc(dataKey(cms.get('kubeadm-config'), 'ClusterConfiguration'), 'kubeadm-config ClusterConfiguration');
  const kubeconfig = yamlDoc(dataKey(cms.get('kube-proxy'), 'kubeconfig.conf'), 'kube-proxy kubeconfig.conf');

  let api: { host: string; port: string } | undefined;
  let apiSource = '--api-server';
  if (flags.apiServer) {
    api = splitEndpoint(flags.apiServer);
    if (!api) throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${flags.apiServer}" for flag -api-server: want a URL or HOST:PORT`, { flag: 'api-server' });
  } else {
    const clusters = kubeconfig?.['clusters'];
    const first = Array.isArray(clusters) && isObj(clusters[0]) && isObj(clusters[0]['cluster']) ? clusters[0]['cluster'] : undefined;
    const server = typeof first?.['server'] === 'string' ? first['server'] : '';
    const endpoint = typeof clusterConfiguration?.['controlPlaneEndpoint'] === 'string' ? clusterConfiguration['controlPlaneEndpoint'] : '';
    if (server && splitEndpoint(server)) {
      api = splitEndpoint(server);
      apiSource = 'kube-system/kube-proxy kubeconfig.conf';
    } else if (endpoint && splitEndpoint(endpoint)) {
      api = splitEndpoint(endpoint);
      apiSource = 'kube-system/kubeadm-config controlPlaneEndpoint';
    }
  }
  if (!api)
    refuse(
      'no API server address: kube-proxy has no kubeconfig.conf server and kubeadm-config no controlPlaneEndpoint; pass --api-server (a control-plane node IP or load balancer, and its port)',
    );

  const networking = clusterConfiguration?.['networking'];
  const subnets = isObj(networking) && typeof networking['serviceSubnet'] === 'string' ? networking['serviceSubnet'].split(',').map((t) => t.trim()) : [];
  let serviceCidr: string | undefined;
  let cidrSource = '--service-cidr';
  if (flags.serviceCidr) {
    serviceCidr = normalizeCidr(flags.serviceCidr);
    if (!serviceCidr) throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${flags.serviceCidr}" for flag -service-cidr: not an IPv4 CIDR`, { flag: 'service-cidr' });
  } else {
    serviceCidr = subnets.map((s) => normalizeCidr(s)).find((s) => s !== undefined);
    cidrSource = 'kube-system/kubeadm-config networking.serviceSubnet';
  }
  if (!serviceCidr) refuse('no Service CIDR: kubeadm-config has no IPv4 networking.serviceSubnet; pass --service-cidr');

  if (isIp4(api.host) && contains(serviceCidr, api.host)) {
    refuse(
      `the API server ${api.host} (${apiSource}) is inside the Service CIDR ${serviceCidr}: a Service ClusterIP answers on a Windows node only once kube-proxy runs, which needs flannel's network; pass --api-server with a control-plane node IP or load balancer`,
      { host: api.host, serviceCidr },
    );
  }

  let dnsIp: string;
  let dnsSource = '--kube-dns-ip';
  if (flags.kubeDnsIp) {
    if (!isIp4(flags.kubeDnsIp)) throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${flags.kubeDnsIp}" for flag -kube-dns-ip: not an IPv4 address`, { flag: 'kube-dns-ip' });
    dnsIp = flags.kubeDnsIp;
  } else {
    try {
      dnsIp = nthAddress(serviceCidr, 10);
    } catch {
      refuse(`the Service CIDR ${serviceCidr} has no 10th address for kube-dns; pass --kube-dns-ip`);
    }
    dnsSource = `the 10th address of ${serviceCidr} (kubeadm)`;
  }
  let ipv6ServiceCidr: string | undefined;
  let ipv6Source = '--ipv6-service-cidr';
  if (flags.ipv6ServiceCidr) {
    ipv6ServiceCidr = normalizeCidr6(flags.ipv6ServiceCidr);
    if (!ipv6ServiceCidr) {
      throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${flags.ipv6ServiceCidr}" for flag -ipv6-service-cidr: not an IPv6 CIDR (e.g. fd00:10:96::/112)`, {
        flag: 'ipv6-service-cidr',
      });
    }
  } else {
    ipv6ServiceCidr = subnets.map((s) => normalizeCidr6(s)).find((s) => s !== undefined);
    ipv6Source = 'kube-system/kubeadm-config networking.serviceSubnet';
  }
  return {
    host: api.host,
    port: api.port,
    serviceCidr,
    dnsIp,
    ...(ipv6ServiceCidr ? { ipv6ServiceCidr } : {}),
    sources: { apiServer: apiSource, serviceCidr: cidrSource, dnsIp: dnsSource, ...(ipv6ServiceCidr ? { ipv6ServiceCidr: ipv6Source } : {}) },
  };
}

/** The flanneld-windows-config ConfigMap (deploy/base) holding `s`. */
function renderClusterConfig(s: ClusterSettings, cniBinDir: string, ipv4Only: boolean, networkPolicy: boolean): string {
  const cm = {
    kind: 'ConfigMap',
    apiVersion: 'v1',
    metadata: { name: 'flanneld-windows-config', namespace: 'kube-flannel', labels: { 'k8s-app': 'flannel' } },
    data: {
      KUBERNETES_SERVICE_HOST: s.host,
      KUBERNETES_SERVICE_PORT: s.port,
      SERVICE_CIDR: s.serviceCidr,
      KUBE_DNS_SERVICE_IP: s.dnsIp,
      CNI_BIN_DIR: cniBinDir,
      ...(s.ipv6ServiceCidr && !ipv4Only ? { FLANNELD_IPV6_SERVICE_CIDR: s.ipv6ServiceCidr } : {}),
      ...(ipv4Only ? { FLANNELD_IPV4_ONLY: 'true' } : {}),
      ...(networkPolicy ? { FLANNELD_NETWORK_POLICY: 'true' } : {}),
    },
  };
  const head =
    `# Written by flanneld cluster-config.\n# API server: ${s.sources.apiServer}.\n# Service CIDR: ${s.sources.serviceCidr}.\n` +
    `# kube-dns IP: ${s.sources.dnsIp}.\n` +
    (s.ipv6ServiceCidr && !ipv4Only ? `# IPv6 Service CIDR: ${s.sources.ipv6ServiceCidr}.\n` : '') +
    (ipv4Only ? '# IPv4 only: --ipv4-only.\n' : '') +
    (networkPolicy ? '# NetworkPolicy: --network-policy.\n' : '');
  return head + yaml.dump(cm, { lineWidth: -1 });
}

function usage(): string {
  const flags = renderUsage('flanneld cluster-config', CLUSTER_CONFIG_FLAGS)
    .replace(/^Usage:.*\n\n/, '')
    .replace(/\nEnvironment:.*\n$/, '\n');
  return (
    `Usage: flanneld cluster-config [OPTION]...\n\n${SUMMARY}.\n\n${flags}\n` +
    'Example (in deploy/overlays/my-cluster, whose kustomization.yaml lists cluster-config.yaml):\n' +
    '  kubectl -n kube-system get configmap kubeadm-config kube-proxy -o yaml | flanneld cluster-config > cluster-config.yaml\n'
  );
}

export const command: Command = {
  summary: SUMMARY,
  run(args: string[], io: CommandIO): Promise<number> {
    const program = 'flanneld cluster-config';
    try {
      const parsed = parseFlags(args, CLUSTER_CONFIG_FLAGS);
      if (parsed.help) {
        io.stdout(usage());
        return Promise.resolve(0);
      }
      const get = (name: string) => String(parsed.values.get(name) ?? CLUSTER_CONFIG_FLAGS.find((f) => f.name === name)!.default);
      const file = get('file');
      const input = readFileFlag(file);
      const s = clusterSettings(configMapsByName(input), {
        apiServer: get('api-server'),
        serviceCidr: get('service-cidr'),
        kubeDnsIp: get('kube-dns-ip'),
        ipv6ServiceCidr: get('ipv6-service-cidr'),
      });
      io.stdout(renderClusterConfig(s, get('cni-bin-dir'), parsed.values.get('ipv4-only') === true, parsed.values.get('network-policy') === true));
      io.stderr(`API server ${s.host}:${s.port} (${s.sources.apiServer}), Service CIDR ${s.serviceCidr} (${s.sources.serviceCidr}), kube-dns ${s.dnsIp} (${s.sources.dnsIp})\n`);
      return Promise.resolve(0);
    } catch (err) {
      if (err instanceof ConfigError && err.code === 'FLANNEL_ERR_CLUSTER_CONFIG') {
        io.stderr(`${program}: ${err.message} [${err.code}]\n`);
        return Promise.resolve(1);
      }
      return Promise.resolve(reportError(program, err, io));
    }
  },
};

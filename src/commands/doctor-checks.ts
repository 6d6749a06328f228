// `flanneld doctor`'s checks: pure functions from the facts ./doctor-gather.ts collects on the node to one
// row per hop a pod's traffic needs (ok / warn / fail / skip, what was seen, the fix). No upstream has a
// node self-test; the facts each check compares come from the agent's own contract: the HNS network and
// its policies (src/backends/vxlan, src/backends/hostgw), subnet.env (docs/compatibility.md §4), the
// conflist `cni-config` writes (../cni/conflist.ts), host-local's store (src/backends/ipam-reservation.ts)
// and the Node annotations (src/subnet/kube). `skip` means the row could not be judged because a row it
// depends on failed or its facts are not readable here (no API access, no agent running); it names why.
import { SOURCE_VIP_OWNER } from '../backends/vxlan/source-vip.js';
import { HOST_ENDPOINT_OWNER, hostEndpointAddress } from '../backends/hostgw/backend.js';
import type { HostInterface } from '../host/host.js';
import type { RefusedPeer, StatusReport } from '../health/status.js';
import { contains, isApipa, isIp4, normalizeCidr, nthAddress } from '../basics/ip4.js';
import { formatIp6, normalizeCidr6, nthAddress6, parseIp6 } from '../basics/ip6.js';
import { macToFlannel } from '../basics/mac.js';
import { pluginTypes, type CniProblem, type FirstCniConfig } from '../cni/readiness.js';
import type { CniDirDisagreement } from '../cni/containerd-config.js';
import type { HcnLoadBalancer, HnsVersion } from '../hns/schema.js';
import { featureNeeds, formatHnsVersion, isFeatureSupported, supportedFeatures, type HnsFeatureName } from '../hns/features.js';
import { DEFAULT_VXLAN_PORT } from '../subnet/net-conf-types.js';
import type { ServicePortFact } from './doctor-services.js';
import { isVxlanBackendData, type Lease } from '../subnet/lease.js';
import { PeerStore, type ItemSource } from '../peers/store.js';
import { peerValidation } from '../peers/validate.js';
import { planReconcile, type PlanOps } from '../reconcile/plan.js';
import { remoteSubnetRouteItems, type RemoteSubnetRoutePolicy } from '../backends/vxlan/policies.js';
import { hostGwRouteItems, ROUTE_METRIC } from '../backends/hostgw/routes.js';
import type { Route } from '../routes/route-table.js';

export type CheckStatus = 'ok' | 'warn' | 'fail' | 'skip';

export interface CheckRow {
  /** Stable name of the check (tests and support scripts key on it). */
  id: string;
  status: CheckStatus;
  /** What was seen. */
  saw: string;
  /** What to do; '' when nothing. */
  fix: string;
}

/** An HNS network as doctor reads it (v2 fields, flattened). */
export interface NetworkFact {
  id?: string;
  name: string;
  type: string;
  subnet?: string;
  /** vxlan: the VSID policy's IsolationId. */
  vsid?: number;
  /** Every Ipam subnet (a dual-stack network has an IPv4 and an IPv6 one). */
  subnets: string[];
  /** The NetAdapterName policy (v2) or NetworkAdapterName (v1). */
  adapter?: string;
  /** vxlan: the DrMacAddress policy. */
  drMac?: string;
}

/** An HNS endpoint on the flannel network. */
export interface EndpointFact {
  id?: string;
  name?: string;
  /** Every IpConfiguration's address, in HNS's order (a dual-stack endpoint has two). */
  ips: string[];
  remote: boolean;
  /** The HCN namespace (a pod's compartment) it is attached to, if any (HostComputeEndpoint.HostComputeNamespace). */
  namespace?: string;
}

/** Another Node as the agent's list-watch projects it (src/subnet/kube/node-list-watch.ts): its lease, and its OS. */
export interface PeerNode {
  lease: Lease;
  /** kubernetes.io/os label. */
  os?: string;
}

/** A peer route (host-gw) or RemoteSubnetRoute policy (vxlan) in the dataplane. */
export interface PeerActual {
  prefix: string;
  /** host-gw: the next hop; vxlan: the ProviderAddress. */
  via: string;
  vni?: number;
  mac?: string;
}

/** A host-local reservation file (`<data dir>/<network>/<ip>`). */
export interface ReservationFact {
  /** The address (IPv6 in RFC 5952 text). */
  ip: string;
  /** The file's name in the store (host-local writes an IPv6 address with `_` for `:` on Windows). */
  file: string;
  /** The container ID it names (or the agent's own owner names), as ../backends/ipam-reservation.ts reads it; '' for an empty or torn file. */
  owner: string;
  /** ms since it was last written. */
  ageMs: number;
  /** Why it could not be read (not a regular file, larger than host-local writes): never judged, never freed. */
  error?: string;
}

export interface DoctorFacts {
  netConf: { type: 'vxlan' | 'host-gw'; name: string; network: string; vni: number; port: number; /** EnableIPv6: IPv6Network. */ ipv6Network?: string } | { error: string };
  /** The agent's --subnet-file (absolute). */
  subnetFile: string;
  /** subnet.env's variables; undefined when the file is missing; `error` when unreadable. */
  subnetEnv: Record<string, string> | { error: string } | undefined;
  /** This node's lease and where it was read (the agent's /status, the Node's podCIDR). */
  lease: { subnet: string; publicIP: string; /** Dual-stack. */ ipv6Subnet?: string; publicIPv6?: string; from: string } | undefined;
  networks: NetworkFact[] | { error: string };
  /** The version HNS reports (v1 `GET /globals/version`, hcsshim GetGlobals); absent when not asked. */
  hnsVersion?: HnsVersion | { error: string };
  /** Endpoints on the flannel network (empty without it); `error` when HNS would not list them (unknown, not none). */
  endpoints: EndpointFact[] | { error: string };
  /** vxlan: the VtepMAC the own Node's backend-data publishes; undefined when not readable. */
  publishedVtepMac: string | undefined;
  /** The source VIP files (--source-vip-file first, then the compat files) and the address each names. */
  sourceVipFiles: { path: string; ip?: string; missing?: boolean; error?: string }[];
  peers: {
    /** The other Nodes; undefined without API access. */
    nodes: PeerNode[] | undefined;
    actual: PeerActual[] | { error: string };
    /** From the agent's /status; undefined when it is not running. */
    refused: RefusedPeer[] | undefined;
  };
  cni: {
    confDir: string;
    binDir: string;
    /** The config containerd loads first (../cni/readiness.ts), or why there is none usable. */
    first: FirstCniConfig | CniProblem;
    /** What stops a pod's CNI ADD (../cni/readiness.ts checkCniReadiness): network name, subnet file, plugins. */
    readiness: CniProblem[];
    /** The conflist's plugin data dir, and the OutBoundNAT exceptions cni-config renders for this node (both families). */
    expected: { dataDir: string; natExceptions: string[] };
    /** `install-cni`'s record of each plugin's SHA-256, and whether its sources are the pinned releases; `error` when unreadable. */
    pins: { pinned: boolean; files: Record<string, string> } | { error: string } | undefined;
    /** SHA-256 of the plugins on disk (only those the record names), or why one could not be read. */
    hashes: Record<string, string | { error: string }>;
  };
  interfaces: HostInterface[];
  /** The public IP the own Node's annotation says; undefined when not readable. */
  annotatedPublicIP: string | undefined;
  /** `dirAgeMs`: ms since host-local's store last changed (a reservation made or freed); undefined when not known. */
  ipam: { dir: string; reservations: ReservationFact[] | { error: string } | undefined; dirAgeMs?: number };
  /** kube-proxy's load balancers on the node (./doctor-services.ts); `error` when HNS would not list them. */
  loadBalancers: HcnLoadBalancer[] | { error: string };
  /** The cluster's Service ports as kube-proxy programs them; `error` when unreadable, undefined without API access. */
  servicePorts: ServicePortFact[] | { error: string } | undefined;
  /** The IPs of the pods on this node (status.podIPs); `error` when unreadable, undefined without API access or node name. */
  podIPs: string[] | { error: string } | undefined;
  cluster: {
    /** Why the API could not be read ('' = it could). */
    error: string;
    /** --set-node-network-unavailable: the agent sets NetworkUnavailable False once its network is up. */
    agentSetsCondition?: boolean;
    /** The API server answered 404 for the own Node: it was deleted. */
    ownNodeDeleted?: boolean;
    /** The own Node's NetworkUnavailable condition; null = the Node has none. */
    networkUnavailable?: { status: string; reason?: string; message?: string } | null;
    /** The Linux cluster's flannel ConfigMap net-conf (kube-flannel-cfg), when readable. */
    linuxNetConf?: { vni?: number; port?: number; type?: string; from: string };
  };
  /** The agent's /status (or why not), and its state files doctor could not read (flanneld.lock, boot.json). */
  agent: { status?: StatusReport; error?: string; url?: string; files: { path: string; error: string }[] };
  /** --fix's grace period, for the leak row's text. */
  graceMs: number;
}

/** The VNI Windows overlay networks need at least (flannel docs Backends, vxlan: "VNI >= 4096 on Windows"). */
const WINDOWS_MIN_VNI = 4096;

export const ok = (id: string, saw: string): CheckRow => ({ id, status: 'ok', saw, fix: '' });
export const fail = (id: string, saw: string, fix: string): CheckRow => ({ id, status: 'fail', saw, fix });
export const warn = (id: string, saw: string, fix: string): CheckRow => ({ id, status: 'warn', saw, fix });
export const skip = (id: string, why: string): CheckRow => ({ id, status: 'skip', saw: `not checked: ${why}`, fix: '' });

/**
 * containerd's config.toml against the CNI directories doctor checks (../cni/containerd-config.ts): not
 * there (containerd runs on its defaults), unreadable ("unknown"), or read, with each given flag that
 * names another directory.
 */
export type ContainerdFact =
  { file: string; missing: true } | { file: string; error: string } | { file: string; confDir: string; binDir: string; disagreements: CniDirDisagreement[] };

/** The cni-containerd row: a warning per flag containerd disagrees with (the flag is honoured), never a failure. */
export function containerdRow(f: ContainerdFact): CheckRow {
  const id = 'cni-containerd';
  if ('missing' in f) return skip(id, `no containerd config at ${f.file} (containerd runs on its defaults; pass --containerd-config if it runs with another file)`);
  if ('error' in f)
    return warn(id, `containerd's CNI directories are unknown: ${f.error}`, 'fix the file as the message says, or pass --containerd-config with the config containerd runs with');
  if (f.disagreements.length > 0) return warn(id, f.disagreements.map((d) => d.detail).join('; '), f.disagreements.map((d) => d.fix).join('; '));
  return ok(id, `containerd (${f.file}) loads the CNI config from ${f.confDir} and runs plugins from ${f.binDir}: the directories checked here`);
}

/** At most this many items of a list are named in a row (a node with 5,000 peers stays readable); the JSON is the same. */
export const MAX_LISTED = 20;

/** `a, b, c` (or `a; b`), the first MAX_LISTED items and how many more. */
export function listed(items: readonly string[], sep = ', '): string {
  const more = items.length - MAX_LISTED;
  return items.slice(0, MAX_LISTED).join(sep) + (more > 0 ? `${sep}and ${more} more` : '');
}

/** A fact that could not be gathered: `{ error }` in its place. */
export const isErr = (v: unknown): v is { error: string } => typeof v === 'object' && v !== null && !Array.isArray(v) && typeof (v as { error?: unknown }).error === 'string';

type Conf = Extract<DoctorFacts['netConf'], { type: string }>;

/** An address as one text per address (IPv6 in RFC 5952 form), so HNS's and host-local's spellings compare. */
export function canonicalIp(ip: string): string {
  if (isIp4(ip)) return ip;
  const v6 = parseIp6(ip);
  return v6 === undefined ? ip : formatIp6(v6);
}

/** The subnets' gateways (`.1`, `::1`), which host-local never hands out. */
export function gatewaysOf(lease: DoctorFacts['lease']): string[] {
  if (!lease) return [];
  return [nthAddress(lease.subnet, 1), ...(lease.ipv6Subnet ? [nthAddress6(lease.ipv6Subnet, 1)] : [])];
}

/**
 * The leaked reservations: pod reservations no HNS endpoint on the network holds on any of its
 * IpConfigurations (never the agent's own, never a file that could not be read). None while the endpoints
 * are unknown (HNS would not list them): a failed read proves nothing leaked.
 */
export function leakedReservations(f: Pick<DoctorFacts, 'ipam' | 'endpoints' | 'lease'>): ReservationFact[] {
  const list = f.ipam.reservations;
  if (list === undefined || isErr(list) || isErr(f.endpoints)) return [];
  const held = new Set(f.endpoints.flatMap((e) => e.ips.map(canonicalIp)));
  const gateways = new Set(gatewaysOf(f.lease));
  return list.filter((r) => r.error === undefined && r.owner !== SOURCE_VIP_OWNER && r.owner !== HOST_ENDPOINT_OWNER && !gateways.has(r.ip) && !held.has(r.ip));
}

/**
 * What net-conf.json on disk changes against the network the running agent built (it keeps that one until
 * restarted, src/subnet/net-conf-watch.ts): the VNI (the network's VSID), the backend (its type), the
 * Network (the FLANNEL_NETWORK it wrote). [] when no agent runs: starting it applies net-conf.
 */
function changedUnderAgent(f: DoctorFacts, conf: Conf, net: NetworkFact | undefined): string[] {
  if (!f.agent.status) return [];
  const out: string[] = [];
  if (net && net.type !== wantedType(conf)) out.push(`Backend.Type: the running network is ${net.type}, net-conf says ${conf.type}`);
  else if (conf.type === 'vxlan' && net?.vsid !== undefined && net.vsid !== conf.vni) out.push(`Backend.VNI ${net.vsid} -> ${conf.vni}`);
  const env = f.subnetEnv;
  const running = env !== undefined && !isErr(env) ? env['FLANNEL_NETWORK'] : undefined;
  if (running !== undefined && running !== conf.network) out.push(`Network ${running} -> ${conf.network}`);
  return out;
}

const wantedType = (conf: Conf) => (conf.type === 'vxlan' ? 'Overlay' : 'L2Bridge');

/** Every check, in the order a packet meets the hops. Pure. */
export function runChecks(f: DoctorFacts): CheckRow[] {
  const rows: CheckRow[] = [];
  rows.push(agentRow(f));
  const mismatch = f.agent.status?.clusterMismatch;
  if (mismatch) rows.push(fail('cluster-config', `this node reaches no peer (${mismatch.reason}): ${mismatch.detail}`, mismatch.fix));
  if (isErr(f.netConf)) {
    rows.push(fail('net-conf', f.netConf.error, 'fix net-conf.json (--net-config-path) and restart flanneld'));
    return rows;
  }
  const conf = f.netConf;
  const hns = isErr(f.networks) ? undefined : f.networks.find((n) => n.name === conf.name);
  const changed = changedUnderAgent(f, conf, hns);
  rows.push(netConfRow(conf, changed));
  if (f.hnsVersion !== undefined) rows.push(hnsVersionRow(f.hnsVersion, conf));
  rows.push(leaseRow(f, conf));
  const net = networkRows(f, conf, rows, changed);
  rows.push(...endpointRows(f, conf, net));
  rows.push(changed.length ? skip('peers', 'net-conf.json changed under the running flanneld (the net-conf row)') : peersRow(f, conf, net));
  rows.push(changed.length ? skip('subnet-env', 'net-conf.json changed under the running flanneld (the net-conf row)') : subnetEnvRow(f, conf));
  rows.push(...conflistRows(f, conf));
  rows.push(...adapterRows(f, conf, net));
  rows.push(...ipamRows(f, conf, net));
  rows.push(...clusterRows(f, conf, changed));
  rows.push(networkPolicyRow(f, conf));
  return rows;
}

/**
 * --network-policy, from the agent's /status (src/policy/controller.ts NetpolStatus): the controller listed
 * the cluster and wrote everything wanted, and every local pod a policy selects holds its rules on its
 * endpoint. Skipped when no agent answers or it runs without the option.
 */
function networkPolicyRow(f: DoctorFacts, conf: Conf): CheckRow {
  const s = f.agent.status;
  if (!s) return skip('network-policy', 'flanneld is not answering (the agent row): whether it runs with --network-policy is unknown');
  const np = s.networkPolicy;
  if (!np) return skip('network-policy', 'flanneld runs without --network-policy: no NetworkPolicy is enforced on this node');
  if (!np.listed)
    return fail(
      'network-policy',
      'the NetworkPolicy controller has not listed Pods, Namespaces and NetworkPolicies (and read the HNS endpoints) yet: no policy is enforced',
      `check flannel's RBAC: kubectl auth can-i watch networkpolicies --all-namespaces --as=system:serviceaccount:kube-flannel:flannel-windows (and pods, namespaces); the agent log names the list that fails`,
    );
  const selected = np.pods.filter((p) => p.policies.length > 0);
  const lacking = selected.filter((p) => np.endpointsWithoutRules.includes(p.pod));
  if (lacking.length > 0) {
    const why = (p: (typeof lacking)[number]) =>
      p.endpoint === undefined
        ? `${p.pod} (${p.ips.join(', ')}): no HNS endpoint of network ${conf.name} holds its address`
        : `${p.pod} (endpoint ${p.endpoint}): lacks some of its ${p.rules} rules`;
    const refused = np.hnsRefused > 0 ? `; HNS refused ${np.hnsRefused} rules or IP sets` : '';
    const pod = (p: (typeof lacking)[number]) => {
      const [ns, name] = p.pod.split('/');
      return `kubectl delete pod -n ${ns} ${name}`;
    };
    const noEndpoint = lacking.filter((p) => p.endpoint === undefined);
    const fix =
      noEndpoint.length === lacking.length
        ? `recreate ${noEndpoint.length === 1 ? 'the pod' : 'each pod'} so CNI ADD gives it an endpoint on ${conf.name}: ${listed(noEndpoint.map(pod), '; ')}`
        : `the agent retries each write on its backoff; HNS's answer is in the agent log ("HNS refused a NetworkPolicy rule or IP set"). If it stays, recreate the pod (a new endpoint): ${listed(lacking.map(pod), '; ')}`;
    return fail('network-policy', `${lacking.length} local pods selected by a NetworkPolicy lack their rules: ${listed(lacking.map(why), '; ')}${refused}`, fix);
  }
  if (!np.inSync)
    return warn(
      'network-policy',
      `the NetworkPolicy controller is not in sync yet (${np.hnsRefused > 0 ? `HNS refused ${np.hnsRefused} rules or IP sets` : 'a write is pending'})`,
      'run doctor again in a few seconds; if it stays, the agent log names the write that fails',
    );
  const rules = selected.reduce((n, p) => n + p.rules, 0);
  const saw = `${np.policies} NetworkPolicies; ${selected.length} local pods selected, each holding its rules (${rules} rules)`;
  if (np.refused.length > 0)
    return warn(
      'network-policy',
      `${saw}; refused: ${listed(
        np.refused.map((r) => `${r.namespace}/${r.name} (${r.reason}: ${r.message})`),
        '; ',
      )}: the pods they select allow nothing they meant to allow`,
      `fix the policy (its Warning Event says why): ${listed(
        np.refused.map((r) => `kubectl describe networkpolicy -n ${r.namespace} ${r.name}`),
        '; ',
      )}`,
    );
  return ok('network-policy', saw);
}

/**
 * Why a running agent is not in sync, from what its /status says now (src/health/status.ts): its last
 * error only while its last pass failed, never one a later pass has since fixed.
 */
function notInSync(s: StatusReport): string {
  const why: string[] = [];
  if (s.ownNode) why.push(`its Node is deleted from the API server (${s.ownNode.reason})`);
  if (s.clusterMismatch) why.push(`it reaches no peer: see cluster-config`);
  const cni = s.cni?.problems ?? [];
  if (cni.length) why.push(`pods cannot start: ${cni[0].detail}`);
  if (s.network && !s.network.present) why.push(`the HNS network ${s.network.name} is missing${s.network.error ? ` (${s.network.error})` : ''}`);
  if (s.lastPass && !s.lastPass.ok && s.lastError) why.push(`its last pass failed: ${s.lastError.message}`);
  if (s.peers.programmed < s.peers.desired) why.push(`${s.peers.programmed}/${s.peers.desired} peers programmed${s.peers.refused ? `, ${s.peers.refused} refused by HNS` : ''}`);
  if (why.length === 0 && !s.ready) why.push(`not ready yet (phase ${s.phase})`);
  return why.join('; ') || 'see flanneld status';
}

function agentRow(f: DoctorFacts): CheckRow {
  const s = f.agent.status;
  const files = f.agent.files;
  const unreadable = files.map((x) => `; ${x.path}: ${x.error}`).join('');
  // Neither is a file flanneld wrote (it writes both with rename, src/host/agent-lock.ts, src/host/boot.ts).
  const removeFiles = files.length ? `remove ${files.map((x) => x.path).join(' and ')}: flanneld writes its own when it starts` : '';
  if (!s)
    return warn(
      'agent',
      `flanneld is not answering on ${f.agent.url ?? 'its status port'} (${f.agent.error ?? 'no answer'}); checked without it${unreadable}`,
      removeFiles || 'start flanneld (or pass its --healthz-port / --status-url)',
    );
  if (!s.inSync)
    return warn('agent', `flanneld ${s.version} is running, phase ${s.phase}, NOT in sync: ${notInSync(s)}${unreadable}`, removeFiles || 'see the rows below and the agent log');
  if (files.length) return warn('agent', `flanneld ${s.version} is running and in sync${unreadable}`, removeFiles);
  return ok('agent', `flanneld ${s.version} is running and in sync (${s.peers.programmed}/${s.peers.desired} peers)`);
}

function netConfRow(conf: Conf, changed: readonly string[]): CheckRow {
  const what = `${conf.type}, network ${conf.name}, cluster CIDR ${conf.network}${conf.ipv6Network ? `, IPv6 ${conf.ipv6Network}` : ''}`;
  if (changed.length)
    return warn(
      'net-conf',
      `net-conf.json changed since flanneld started (${changed.join('; ')}): flanneld keeps running the network it built; a restart applies the change and rebuilds the HNS network, cutting off every pod on this node`,
      'to keep the running network, put net-conf.json back as it was; to apply the change, drain the node, restart flanneld, then let the pods be recreated',
    );
  if (conf.type !== 'vxlan') return ok('net-conf', what);
  const port = conf.port === DEFAULT_VXLAN_PORT ? '' : ' (a VxlanPort policy on the HNS network, HNS 10.3)';
  const vx = `${what}, VNI ${conf.vni}, port ${conf.port}${port}; every node must accept inbound UDP ${conf.port} from the others`;
  if (conf.vni < WINDOWS_MIN_VNI) return warn('net-conf', vx, `Windows Server 2019 and later need Backend.VNI >= ${WINDOWS_MIN_VNI} (4096 is usual), the same on every node`);
  return ok('net-conf', vx);
}

/**
 * The HNS version and what it enables (src/hns/features.ts), failed when this net-conf needs a feature it
 * lacks: the agent refuses it at start (FLANNEL_ERR_HNS_VERSION) as hcsshim's XxxSupported would.
 */
function hnsVersionRow(version: HnsVersion | { error: string }, conf: Conf): CheckRow {
  if (isErr(version)) return warn('hns-version', `the HNS version is not readable (${version.error})`, 'check the hns service is running (Get-Service hns)');
  const needed: [HnsFeatureName, string][] = [];
  if (conf.type === 'vxlan') needed.push(['RemoteSubnet', 'the vxlan backend']);
  if (conf.type === 'vxlan' && conf.port !== DEFAULT_VXLAN_PORT) needed.push(['VxlanPort', `VXLAN port ${conf.port}`]);
  if (conf.ipv6Network) needed.push(['IPv6DualStack', 'dual-stack (EnableIPv6)']);
  const saw = `HNS ${formatHnsVersion(version)}: ${supportedFeatures(version).join(', ') || 'none of the features flanneld uses'}`;
  const lacking = needed.filter(([feature]) => !isFeatureSupported(version, feature));
  if (lacking.length === 0) return ok('hns-version', saw);
  return fail(
    'hns-version',
    `${saw}; lacking ${lacking.map(([feature, what]) => `${feature} for ${what} (HNS ${featureNeeds(feature)})`).join(', ')}`,
    `upgrade Windows to a release whose HNS has it (docs/compatibility.md, "Windows Server releases"), or change net-conf.json${
      lacking.some(([feature]) => feature === 'VxlanPort') ? ` (Backend.Port ${DEFAULT_VXLAN_PORT}: flanneld netconf set-vni --port ${DEFAULT_VXLAN_PORT})` : ''
    }`,
  );
}

function leaseRow(f: DoctorFacts, conf: Conf): CheckRow {
  if (!f.lease)
    return fail('lease', 'no lease known: the agent is not running and the Node has no podCIDR (or the API is not readable)', 'start flanneld; check the Node has spec.podCIDR');
  const v6 = f.lease.ipv6Subnet ? `, IPv6 ${f.lease.ipv6Subnet}${f.lease.publicIPv6 ? ` at ${f.lease.publicIPv6}` : ''}` : '';
  if (conf.ipv6Network && !f.lease.ipv6Subnet && f.lease.from !== 'subnet.env')
    return fail(
      'lease',
      `${f.lease.subnet} (from ${f.lease.from}) has no IPv6 half although net-conf sets EnableIPv6: pods get no IPv6 address`,
      'give the Node an IPv6 podCIDR (a dual-stack --cluster-cidr on kube-controller-manager), or remove EnableIPv6 from net-conf.json',
    );
  if (f.lease.from === 'subnet.env')
    return warn(
      'lease',
      `${f.lease.subnet}${v6} (from subnet.env only: neither the agent nor the Node could be read)`,
      'start flanneld, or pass --kubeconfig-file so doctor can read the Node',
    );
  return ok('lease', `${f.lease.subnet}, public IP ${f.lease.publicIP}${v6} (from ${f.lease.from})`);
}

function networkRows(f: DoctorFacts, conf: Conf, rows: CheckRow[], changed: readonly string[]): NetworkFact | undefined {
  const wantType = wantedType(conf);
  if (isErr(f.networks)) {
    rows.push(fail('hns-network', `HNS could not be read: ${f.networks.error}`, 'check the HNS service (Get-Service hns) and run doctor as Administrator'));
    return undefined;
  }
  const net = f.networks.find((n) => n.name === conf.name);
  if (!net) {
    const holder = f.lease ? f.networks.find((n) => n.subnet !== undefined && f.lease && n.subnet === f.lease.subnet) : undefined;
    const names = f.networks.map((n) => `${n.name} (${n.type})`).join(', ') || 'none';
    rows.push(
      fail(
        'hns-network',
        `no HNS network ${conf.name}; HNS has: ${names}${holder ? `; ${holder.name} holds this node's subnet` : ''}`,
        holder
          ? `set Backend.Name to ${holder.name} in net-conf.json, or remove ${holder.name} and restart flanneld`
          : 'restart flanneld: it creates the network (pods cannot start without it)',
      ),
    );
    for (const id of ['hns-network-type', 'hns-subnet', 'hns-adapter', ...(conf.type === 'vxlan' ? ['vtep-mac'] : [])]) rows.push(skip(id, `no HNS network ${conf.name}`));
    return undefined;
  }
  rows.push(ok('hns-network', `${net.name}, ID ${net.id ?? '?'}`));
  if (changed.length) {
    for (const id of ['hns-network-type', 'hns-subnet']) rows.push(skip(id, 'net-conf.json changed under the running flanneld (the net-conf row)'));
  } else {
    rows.push(
      net.type === wantType
        ? ok('hns-network-type', net.type)
        : fail('hns-network-type', `${net.type}, ${conf.type} needs ${wantType}`, `remove the network (Remove-HnsNetwork) and start flanneld`),
    );
    rows.push(hnsSubnetRow(f, conf, net));
  }
  rows.push(
    net.adapter ? ok('hns-adapter', `bound to ${net.adapter}`) : warn('hns-adapter', 'the network names no adapter', 'pass --iface naming the node NIC and restart flanneld'),
  );
  if (conf.type === 'vxlan') {
    if (!net.drMac) rows.push(fail('vtep-mac', 'the network has no DrMacAddress policy', 'remove the network and restart flanneld'));
    else if (f.publishedVtepMac === undefined) rows.push(skip('vtep-mac', `DR MAC ${net.drMac}; the Node's backend-data is not readable`));
    else if (macToFlannel(net.drMac) !== macToFlannel(f.publishedVtepMac))
      rows.push(
        fail(
          'vtep-mac',
          `DR MAC ${macToFlannel(net.drMac)}, the Node publishes VtepMAC ${f.publishedVtepMac}: peers send to the wrong MAC`,
          "restart flanneld: it republishes the network's DR MAC",
        ),
      );
    else rows.push(ok('vtep-mac', `DR MAC ${macToFlannel(net.drMac)} = the published VtepMAC`));
  }
  return net;
}

/** The network's subnets against the lease: the IPv4 one (and its VSID on vxlan) and, dual-stack, the IPv6 one. */
function hnsSubnetRow(f: DoctorFacts, conf: Conf, net: NetworkFact): CheckRow {
  if (!f.lease) return skip('hns-subnet', 'no lease known');
  const want = [f.lease.subnet, ...(conf.ipv6Network && f.lease.ipv6Subnet ? [normalizeCidr6(f.lease.ipv6Subnet) ?? f.lease.ipv6Subnet] : [])];
  const have = net.subnets.map((x) => (x.includes(':') ? (normalizeCidr6(x) ?? x) : x));
  const lacking = want.filter((w) => !have.includes(w));
  if (lacking.length)
    return fail(
      'hns-subnet',
      `${have.join(', ') || 'none'}, the lease is ${want.join(', ')}`,
      'restart flanneld: it recreates the network for the lease (pods on the old subnet must be recreated)',
    );
  if (conf.type === 'vxlan' && net.vsid !== undefined && net.vsid !== conf.vni)
    return fail('hns-subnet', `${net.subnet}, VSID ${net.vsid}, net-conf's VNI is ${conf.vni}`, 'start flanneld: it recreates the network with the VNI');
  return ok('hns-subnet', `${have.join(', ')}${net.vsid !== undefined ? `, VSID ${net.vsid}` : ''} = the lease`);
}

/** The row when HNS would not list the network's endpoints: they are unknown, not missing. */
const endpointsUnread = (id: string, net: string, error: string): CheckRow =>
  fail(id, `could not read the endpoints on ${net}: ${error}`, 'check the HNS service (Get-Service hns), then run doctor again');

function endpointRows(f: DoctorFacts, conf: Conf, net: NetworkFact | undefined): CheckRow[] {
  if (conf.type === 'host-gw') {
    const name = `${conf.name}_ep`;
    if (!net) return [skip('host-endpoint', `no HNS network ${conf.name}`)];
    if (isErr(f.endpoints)) return [endpointsUnread('host-endpoint', conf.name, f.endpoints.error)];
    const ep = f.endpoints.find((e) => e.name === name);
    // `.2`, and dual-stack `::2` too (src/backends/hostgw/backend.ts ensureDualStackHostEndpoint).
    const want = f.lease ? [hostEndpointAddress(f.lease.subnet), ...(conf.ipv6Network && f.lease.ipv6Subnet ? [nthAddress6(f.lease.ipv6Subnet, 2)] : [])] : [];
    if (!ep) return [fail('host-endpoint', `no endpoint ${name} on ${conf.name}: the host cannot reach its pods`, 'restart flanneld: it recreates the host endpoint')];
    const held = ep.ips.map(canonicalIp);
    const lacking = want.filter((w) => !held.includes(w));
    if (lacking.length) return [fail('host-endpoint', `${name} holds ${held.join(', ') || 'no address'}, want ${want.join(', ')}`, `remove endpoint ${name} and restart flanneld`)];
    return [ok('host-endpoint', `${name} at ${held.join(', ') || '?'}`)];
  }
  // vxlan: kube-proxy's source VIP endpoint (ours by name, or kube-proxy's own nameless one), and its files.
  if (!net) return [skip('source-vip', `no HNS network ${conf.name}`), skip('source-vip-file', `no HNS network ${conf.name}`)];
  if (isErr(f.endpoints)) return [endpointsUnread('source-vip', conf.name, f.endpoints.error), skip('source-vip-file', 'the endpoints are not readable')];
  const name = `${conf.name}_sourcevip`;
  const ipOf = (e: EndpointFact) => e.ips.find((ip) => isIp4(ip) && (!f.lease || contains(f.lease.subnet, ip)));
  const local = f.endpoints.filter((e) => !e.remote && ipOf(e) !== undefined).map((e) => ({ ...e, ip: ipOf(e)! }));
  const ep = local.find((e) => e.name === name) ?? local.find((e) => !e.name);
  const rows: CheckRow[] = [];
  if (!ep) {
    rows.push(
      fail(
        'source-vip',
        `no source VIP endpoint (${name} or kube-proxy's own) on ${conf.name}: Services do not work from this node`,
        'restart flanneld: it reserves the source VIP',
      ),
    );
    rows.push(skip('source-vip-file', 'no source VIP endpoint'));
    return rows;
  }
  rows.push(ok('source-vip', `${ep.name || "kube-proxy's endpoint"} at ${ep.ip}`));
  const files = f.sourceVipFiles;
  if (files.length === 0) {
    rows.push(skip('source-vip-file', '--source-vip-file is off'));
    return rows;
  }
  const primary = files[0];
  const unreadable = files.filter((x) => x.error !== undefined);
  const wrong = files.filter((x) => !x.missing && x.error === undefined && x.ip !== ep.ip);
  if (unreadable.length)
    rows.push(
      fail(
        'source-vip-file',
        unreadable.map((x) => `${x.path}: ${x.error}`).join('; ') + ' (kube-proxy reads the source VIP from it)',
        `remove ${unreadable.map((x) => x.path).join(' and ')}, then restart flanneld: it writes the file`,
      ),
    );
  else if (primary.missing) rows.push(fail('source-vip-file', `${primary.path} is missing (kube-proxy reads the source VIP from it)`, 'restart flanneld: it writes the file'));
  else if (wrong.length > 0)
    rows.push(
      fail(
        'source-vip-file',
        wrong.map((x) => `${x.path} names ${x.ip ?? 'no address'}`).join('; ') + `, the endpoint holds ${ep.ip}`,
        'restart flanneld (it rewrites the files), then restart kube-proxy',
      ),
    );
  else
    rows.push(
      ok(
        'source-vip-file',
        `${files
          .filter((x) => !x.missing && x.error === undefined)
          .map((x) => x.path)
          .join(', ')} name ${ep.ip}`,
      ),
    );
  return rows;
}

/** Two addresses are one (IPv6 spellings differ). */
const sameIp = (a: string, b: string) => canonicalIp(a) === canonicalIp(b);

function peersRow(f: DoctorFacts, conf: Conf, net: NetworkFact | undefined): CheckRow {
  const what = conf.type === 'vxlan' ? 'RemoteSubnetRoute policies' : 'routes';
  if (!net) return skip('peers', `no HNS network ${conf.name}`);
  const refused = f.peers.refused ?? [];
  if (refused.length > 0) {
    const list = listed(
      refused.map((r) => `${r.node ?? '?'} ${r.prefix} (${r.hresult}: ${r.error})`),
      '; ',
    );
    return fail(
      'peers',
      `HNS refuses the ${what} for ${refused.length} peer(s): ${list}`,
      "see docs/troubleshooting.md for the HRESULT; check the peer's annotations (public-ip, backend-data)",
    );
  }
  if (isErr(f.peers.actual)) return fail('peers', `the ${what} could not be read: ${f.peers.actual.error}`, 'check the HNS service and run doctor as Administrator');
  if (f.peers.nodes === undefined) return skip('peers', `${f.peers.actual.length} ${what} present; the peers' leases are not readable (no API access)`);
  if (!f.lease) return skip('peers', 'no lease of this node (the lease row): the peers are judged against it');
  const { nodes, actual } = f.peers;
  const { missing, wrong, extra, rejected, wanted } =
    conf.type === 'vxlan'
      ? judgePeers(f, conf, f.lease, nodes, actual, VXLAN_PEERS)
      : judgePeers(f, conf, f.lease, nodes, actual, hostGwPeers(conf.ipv6Network !== undefined && f.lease.ipv6Subnet !== undefined));
  const parts = [missing.length ? `missing for ${listed(missing)}` : '', wrong.length ? `stale for ${listed(wrong)}` : '', extra.length ? `extra ${listed(extra)}` : ''].filter(
    (s) => s !== '',
  );
  // A peer the agent rejects (src/peers/validate.ts: another VNI, an off-link public IP, ...; or a subnet
  // another Node holds, src/peers/store.ts) is never programmed: no restart changes that; flanneld status
  // names the reason (the cluster-vni row the VNI).
  const left = rejected.length ? `; ${rejected.length} peer(s) rejected by flanneld and left out (flanneld status names why): ${listed(rejected)}` : '';
  if (parts.length)
    return fail(
      'peers',
      `${what}: ${parts.join('; ')}${left}`,
      f.agent.status
        ? "flanneld is running and writes exactly the peers' set on its next pass; if this stays, flanneld status names the peer it cannot write and why"
        : "start flanneld: it writes exactly the peers' set",
    );
  return ok('peers', `${wanted} peer ${what}, each as published${left}`);
}

/** What the peers row says: the plan's writes named by peer, and the peers the store rejected. */
interface JudgedPeers {
  missing: string[];
  wrong: string[];
  extra: string[];
  rejected: string[];
  /** How many items the peers want. */
  wanted: number;
}

/**
 * The peers as the agent takes them: the Nodes into a peer store with the agent's validation (the same
 * rejections and the same holder of a contested subnet), its desired items diffed with the dataplane's
 * by the backend's own rule (planReconcile with the driver's keys and sameness).
 */
function judgePeers<A, D>(
  f: DoctorFacts,
  conf: Conf,
  lease: NonNullable<DoctorFacts['lease']>,
  nodes: readonly PeerNode[],
  actual: readonly PeerActual[],
  { items, toActual, viaOf }: PeerItemRule<A, D>,
): JudgedPeers {
  const ext = f.interfaces.find((i) => i.ipv4 === lease.publicIP);
  const ext6 = lease.publicIPv6 ? ext?.ipv6Addresses?.find((a) => parseIp6(a.address) === parseIp6(lease.publicIPv6 ?? '')) : undefined;
  const store = new PeerStore<D>({
    ownSubnet: lease.subnet,
    validation: peerValidation({
      network: conf.network,
      backendType: conf.type,
      ...(conf.type === 'vxlan' ? { vni: conf.vni } : {}),
      own: lease,
      ownIPs: [lease.publicIP, ...(ext ? [ext.ipv4] : [])],
      ...(ext ? { ext: { ip: ext.ipv4, prefixLength: ext.prefixLength } } : {}),
      ...(conf.ipv6Network
        ? {
            ipv6: {
              network: conf.ipv6Network,
              ownIPs: lease.publicIPv6 ? [lease.publicIPv6] : [],
              ...(ext6 ? { ext: { ip: ext6.address, prefixLength: ext6.prefixLength } } : {}),
            },
          }
        : {}),
    }),
    items,
  });
  store.apply({ kind: 'peers', peers: nodes.map((n) => ({ key: n.lease.key, lease: n.lease })) });
  store.apply({ kind: 'listed', keys: new Set(nodes.map((n) => n.lease.key)) });
  const shown = new Map<A, PeerActual>();
  for (const a of actual) shown.set(toActual(a), a);
  const plan = planReconcile([...shown.keys()], store.desiredItems(), items);
  const named = (d: D) => `${store.owner(items.desiredKey(d)) ?? '?'} ${items.desiredKey(d)}`;
  return {
    missing: plan.add.map(named),
    wrong: plan.replace.map((r) => `${named(r.to)} via ${shown.get(r.from)!.via}, published ${viaOf(r.to)}`),
    extra: plan.remove.map((a) => `${shown.get(a)!.prefix} via ${shown.get(a)!.via}`),
    rejected: store.rejected().map((r) => `${r.key}${r.family === 'ipv6' ? ' IPv6' : ''} (${r.reason})`),
    wanted: store.desiredItems().length,
  };
}

/** A backend's rule for its peer items (the driver's), and how doctor's reading of the dataplane maps to its items. */
interface PeerItemRule<A, D> {
  items: ItemSource<D> & PlanOps<A, D>;
  toActual: (a: PeerActual) => A;
  viaOf: (d: D) => string;
}

const VXLAN_PEERS: PeerItemRule<RemoteSubnetRoutePolicy, RemoteSubnetRoutePolicy> = {
  items: remoteSubnetRouteItems,
  toActual: (a) => ({
    Type: 'RemoteSubnetRoute',
    Settings: { DestinationPrefix: a.prefix, IsolationId: a.vni ?? 0, ProviderAddress: a.via, DistributedRouterMacAddress: a.mac ?? '' },
  }),
  viaOf: (d) => d.Settings!.ProviderAddress,
};

/** host-gw: the interface is not judged (doctor reads the routes inside the cluster Network on every interface). */
const hostGwPeers = (dualStack: boolean): PeerItemRule<Route, Route> => ({
  items: hostGwRouteItems(() => 0, dualStack),
  toActual: (a) => ({ destinationPrefix: a.prefix, nextHop: a.via, interfaceIndex: 0, metric: ROUTE_METRIC }),
  viaOf: (d) => d.nextHop,
});

function subnetEnvRow(f: DoctorFacts, conf: Conf): CheckRow {
  const env = f.subnetEnv;
  if (env === undefined)
    return fail('subnet-env', `${f.subnetFile} is missing: the flannel CNI plugin cannot set up pods`, 'start flanneld: it writes the file once it holds a lease');
  if (isErr(env)) return fail('subnet-env', `${f.subnetFile}: ${env.error}`, 'restart flanneld: it rewrites the file');
  const problems: string[] = [];
  const network = env['FLANNEL_NETWORK'];
  if (network !== conf.network) problems.push(`FLANNEL_NETWORK=${network ?? ''}, net-conf says ${conf.network}`);
  const subnet = env['FLANNEL_SUBNET'];
  if (f.lease && (subnet === undefined || !contains(f.lease.subnet, subnet.split('/')[0]) || subnet.split('/')[1] !== f.lease.subnet.split('/')[1]))
    problems.push(`FLANNEL_SUBNET=${subnet ?? ''}, the lease is ${f.lease.subnet}`);
  if (conf.ipv6Network) {
    // Dual-stack: FLANNEL_IPV6_NETWORK and FLANNEL_IPV6_SUBNET (the subnet's first address, docs/compatibility.md).
    const network6 = env['FLANNEL_IPV6_NETWORK'];
    if (network6 === undefined || normalizeCidr6(network6) !== conf.ipv6Network) problems.push(`FLANNEL_IPV6_NETWORK=${network6 ?? ''}, net-conf says ${conf.ipv6Network}`);
    const subnet6 = env['FLANNEL_IPV6_SUBNET'];
    const want6 = f.lease?.ipv6Subnet;
    if (want6 && (subnet6 === undefined || normalizeCidr6(subnet6) !== normalizeCidr6(want6) || !sameIp(subnet6.split('/')[0], nthAddress6(want6, 1))))
      problems.push(`FLANNEL_IPV6_SUBNET=${subnet6 ?? ''}, the lease is ${want6}`);
  }
  if (problems.length) return fail('subnet-env', `${f.subnetFile}: ${problems.join('; ')}`, 'restart flanneld: it rewrites subnet.env for its lease');
  const v6 = conf.ipv6Network ? `, FLANNEL_IPV6_SUBNET=${env['FLANNEL_IPV6_SUBNET'] ?? '?'}` : '';
  return ok('subnet-env', `${f.subnetFile}: FLANNEL_SUBNET=${subnet ?? '?'}${v6}, FLANNEL_MTU=${env['FLANNEL_MTU'] ?? '?'}`);
}

interface FlannelPluginDoc {
  dataDir?: unknown;
  delegate?: { loopbackDSR?: unknown; policies?: unknown };
}

/** The dual-stack conflist's plugin (../cni/conflist.ts renderDualStackCniConfig): its policies are AdditionalArgs. */
interface SdnbridgePluginDoc {
  AdditionalArgs?: unknown;
  optionalFlags?: { loopbackDSR?: unknown };
}

type PolicyDoc = { Type?: unknown; Settings?: { Exceptions?: unknown } } | undefined;

/** A CIDR as doctor compares it: IPv4 or IPv6 normalized (`fd00:10:0::/64` is `fd00:10::/64`), else as written. */
const cidrKey = (c: string) => normalizeCidr(c) ?? normalizeCidr6(c) ?? c;

/**
 * Every OutBoundNAT exception of the conflist's policies (one per family on dual-stack) against those
 * cni-config renders for this node (f.cni.expected.natExceptions, ../cni/conflist.ts outboundNatExceptions).
 */
function outboundNatRow(f: DoctorFacts, conf: Conf, policies: PolicyDoc[]): CheckRow {
  const exceptions = policies
    .filter((p) => p?.Type === 'OutBoundNAT')
    .flatMap((p) => (Array.isArray(p?.Settings?.Exceptions) ? (p.Settings.Exceptions as unknown[]) : []))
    .filter((x): x is string => typeof x === 'string');
  const have = new Set(exceptions.map(cidrKey));
  const lacking = f.cni.expected.natExceptions.filter((c) => !have.has(cidrKey(c)));
  if (lacking.length === 0) return ok('cni-outbound-nat', `exceptions ${exceptions.join(', ')}`);
  const ip = f.annotatedPublicIP ?? f.lease?.publicIP;
  const flags = [
    '--service-cidr <Service CIDR>',
    ...(conf.ipv6Network ? ['--ipv6-service-cidr <IPv6 Service CIDR>'] : []),
    ...(conf.type === 'host-gw' ? [`--management-ip ${ip || '<node IP>'}`] : []),
  ];
  return fail(
    'cni-outbound-nat',
    `OutBoundNAT exceptions ${exceptions.join(', ') || 'none'} lack ${lacking.join(', ')}: pod traffic to them leaves with the node's IP`,
    `rewrite it with flanneld cni-config -o ${f.cni.first && 'file' in f.cni.first ? f.cni.first.file : '<conflist>'} ${flags.join(' ')}`,
  );
}

const sameFsPath = (a: string, b: string) => a.replace(/\//g, '\\').toLowerCase() === b.replace(/\//g, '\\').toLowerCase();

/** ../cni/readiness.ts finds the config containerd loads first and what stops a pod ADD; the rest is doctor's. */
function conflistRows(f: DoctorFacts, conf: Conf): CheckRow[] {
  const first = f.cni.first;
  if ('check' in first) {
    const ids = ['cni-network-name', 'cni-subnet-file', 'cni-data-dir', 'cni-outbound-nat', 'cni-loopback-dsr', 'cni-plugins', 'cni-pins'];
    return [fail('cni-conflist', first.detail, first.fix), ...ids.map((id) => skip(id, 'no usable CNI config'))];
  }
  const foreign = f.cni.readiness.find((p) => p.check === 'cni-conf-foreign');
  if (foreign) {
    const why = `${first.file} is not flannel's`;
    return [
      fail('cni-conflist', foreign.detail, foreign.fix),
      ...['cni-network-name', 'cni-subnet-file', 'cni-data-dir', 'cni-outbound-nat', 'cni-loopback-dsr', 'cni-plugins', 'cni-pins'].map((id) => skip(id, why)),
    ];
  }
  const problem = (check: CniProblem['check']) => f.cni.readiness.find((p) => p.check === check);
  const fromReadiness = (id: string, check: CniProblem['check'], good: string): CheckRow => {
    const p = problem(check);
    return p ? fail(id, p.detail, p.fix) : ok(id, good);
  };
  const rows: CheckRow[] = [ok('cni-conflist', `${first.file} (containerd loads it first${first.others ? `; ${first.others.trim()}` : ''})`)];
  rows.push(fromReadiness('cni-network-name', 'cni-network-name', `${String(first.conf.name)} = the HNS network`));
  rows.push(fromReadiness('cni-subnet-file', 'cni-subnet-file', `the flannel plugin reads ${f.subnetFile}`));
  const flannel = first.plugins.find((p) => p.type === 'flannel') as FlannelPluginDoc | undefined;
  const sdnbridge = first.plugins.find((p) => p.type === 'sdnbridge') as SdnbridgePluginDoc | undefined;
  const noFlannel = sdnbridge ? `${first.file} runs sdnbridge (dual-stack), which has` : `${first.file} has no flannel plugin:`;
  if (!flannel) rows.push(skip('cni-data-dir', `${noFlannel} no dataDir`));
  else {
    const dd = typeof flannel.dataDir === 'string' ? flannel.dataDir : undefined;
    rows.push(
      dd !== undefined && sameFsPath(dd, f.cni.expected.dataDir)
        ? ok('cni-data-dir', dd)
        : warn(
            'cni-data-dir',
            `dataDir ${dd ?? "(unset: upstream's /var/lib/cni/flannel on the plugin's drive)"}, expected ${f.cni.expected.dataDir}`,
            'rewrite it with flanneld cni-config -o (same --cni-ipam-data-dir as the agent)',
          ),
    );
  }
  // The flannel plugin's delegate policies, or sdnbridge's AdditionalArgs (each `{Name, Value}` whose Name
  // contains "Policy" is an endpoint policy: windows-container-networking cni/cni.go GetNetworkInfo).
  const policies = flannel
    ? (Array.isArray(flannel.delegate?.policies) ? (flannel.delegate.policies as { value?: PolicyDoc }[]) : []).map((p) => p.value)
    : sdnbridge
      ? (Array.isArray(sdnbridge.AdditionalArgs) ? (sdnbridge.AdditionalArgs as { Name?: unknown; Value?: PolicyDoc }[]) : [])
          .filter((a) => typeof a.Name === 'string' && a.Name.includes('Policy'))
          .map((a) => a.Value)
      : undefined;
  if (!policies) rows.push(skip('cni-outbound-nat', `${noFlannel} no policies`));
  else rows.push(outboundNatRow(f, conf, policies));
  // The flannel plugin's delegate has it top-level, sdnbridge in optionalFlags (../cni/conflist.ts).
  const loopbackDSR = flannel ? flannel.delegate?.loopbackDSR : sdnbridge ? sdnbridge.optionalFlags?.loopbackDSR : undefined;
  if (!flannel && !sdnbridge) rows.push(skip('cni-loopback-dsr', `${noFlannel} no loopbackDSR`));
  else
    rows.push(
      loopbackDSR === true
        ? ok('cni-loopback-dsr', 'on')
        : warn('cni-loopback-dsr', 'loopbackDSR is off: a pod cannot reach itself through its own Service', 'rewrite it with flanneld cni-config -o (without --no-loopback-dsr)'),
    );
  const want = pluginTypes(first.plugins).map((t) => `${t}.exe`);
  rows.push(fromReadiness('cni-plugins', 'cni-plugin-missing', `${want.join(', ')} in ${f.cni.binDir}`));
  const pins = f.cni.pins;
  const unhashed = Object.entries(f.cni.hashes).flatMap(([file, h]) => (isErr(h) ? [`${file}: ${h.error}`] : []));
  if (!pins) rows.push(skip('cni-pins', 'no install-cni record in the bin dir (plugins not installed by flanneld install-cni)'));
  else if (isErr(pins)) rows.push(fail('cni-pins', `install-cni's record cannot be used: ${pins.error}`, 'run flanneld install-cni --pinned again: it writes the record'));
  else if (unhashed.length) rows.push(fail('cni-pins', `cannot hash ${unhashed.join('; ')}`, 'run flanneld install-cni --pinned again: it replaces the plugins'));
  else {
    // A plugin that is gone is the cni-plugins row's.
    const changed = Object.entries(pins.files)
      .filter(([file, sha]) => f.cni.hashes[file] !== undefined && f.cni.hashes[file] !== sha)
      .map(([file]) => file);
    if (changed.length)
      rows.push(
        fail('cni-pins', `${changed.join(', ')} differ${changed.length === 1 ? 's' : ''} from what install-cni wrote (SHA-256)`, 'run flanneld install-cni --pinned again'),
      );
    else
      rows.push(ok('cni-pins', `${Object.keys(pins.files).length} plugins as install-cni wrote them${pins.pinned ? ' from the pinned releases' : ' (not the pinned releases)'}`));
  }
  return rows;
}

function adapterRows(f: DoctorFacts, conf: Conf, net: NetworkFact | undefined): CheckRow[] {
  const rows: CheckRow[] = [];
  const ip = f.annotatedPublicIP ?? f.lease?.publicIP;
  const apipa = f.interfaces.filter((i) => isApipa(i.ipv4) && (net?.adapter === undefined || i.name.includes(net.adapter) || i.name.includes(conf.name)));
  const holder = ip ? f.interfaces.find((i) => i.ipv4 === ip) : undefined;
  if (!ip) rows.push(skip('adapter-ip', 'no public IP known (no lease, no Node annotation)'));
  else if (!holder) {
    const seen = f.interfaces.map((i) => `${i.name} ${i.ipv4}`).join(', ');
    rows.push(
      fail(
        'adapter-ip',
        `no adapter holds the Node's public IP ${ip}${apipa.length ? `; ${apipa.map((i) => `${i.name} has the APIPA address ${i.ipv4}`).join(', ')} (DHCP or the vSwitch lost the address)` : ''}; adapters: ${seen}`,
        'give the adapter its address back (Get-NetIPAddress; renew DHCP or set it statically), then restart flanneld',
      ),
    );
  } else if (apipa.length) rows.push(warn('adapter-ip', `${holder.name} holds ${ip}; ${apipa.map((i) => `${i.name} ${i.ipv4}`).join(', ')} is APIPA`, "check the adapter's DHCP"));
  else rows.push(ok('adapter-ip', `${holder.name} holds ${ip}`));
  const env = f.subnetEnv;
  const mtu = env !== undefined && !isErr(env) ? Number(env['FLANNEL_MTU']) : NaN;
  if (!holder) rows.push(skip('mtu', 'no adapter holds the public IP'));
  else if (!Number.isFinite(mtu)) rows.push(skip('mtu', `adapter MTU ${holder.mtu}; subnet.env has no FLANNEL_MTU`));
  else {
    const want = conf.type === 'vxlan' ? holder.mtu - 50 : holder.mtu;
    rows.push(
      mtu === want
        ? ok('mtu', `FLANNEL_MTU ${mtu} = ${holder.name}'s ${holder.mtu}${conf.type === 'vxlan' ? ' - 50 (VXLAN)' : ''}`)
        : fail(
            'mtu',
            `FLANNEL_MTU ${mtu}, ${holder.name}'s MTU ${holder.mtu} wants ${want}: large packets are dropped`,
            "restart flanneld: it rewrites subnet.env for the adapter's MTU",
          ),
    );
  }
  return rows;
}

function ipamRows(f: DoctorFacts, conf: Conf, net: NetworkFact | undefined): CheckRow[] {
  const list = f.ipam.reservations;
  if (!f.ipam.dir) return [skip('ipam-leaks', '--cni-ipam-data-dir is off'), skip('ipam-gateway', '--cni-ipam-data-dir is off')];
  if (list === undefined) return [skip('ipam-leaks', `${f.ipam.dir} does not exist yet (no pod started)`), skip('ipam-gateway', `${f.ipam.dir} does not exist yet`)];
  if (isErr(list)) return [fail('ipam-leaks', `${f.ipam.dir}: ${list.error}`, "check the directory's permissions"), skip('ipam-gateway', 'store unreadable')];
  const rows: CheckRow[] = [];
  const grace = Math.round(f.graceMs / 1000);
  const unreadable = list.filter((r) => r.error !== undefined);
  const notJudged = unreadable.length ? `; ${unreadable.length} not host-local's, never freed: ${listed(unreadable.map((r) => `${r.file} (${r.error})`))}` : '';
  if (!net) rows.push(skip('ipam-leaks', `no HNS network ${conf.name} (every reservation would look leaked)`));
  else if (isErr(f.endpoints)) rows.push(skip('ipam-leaks', `could not read the endpoints on ${conf.name} (${f.endpoints.error}): no reservation is judged leaked without them`));
  else {
    // A reservation younger than the grace period may be a pod being added: host-local writes it before
    // HcnCreateEndpoint (doctor.ts DEFAULT_GRACE_SECONDS says how long that can take).
    const all = leakedReservations(f);
    const leaks = all.filter((r) => r.ageMs >= f.graceMs);
    const young = all.length - leaks.length;
    const settingUp = young ? `; ${young} younger than ${grace} s without an endpoint yet (a pod being added)` : '';
    if (leaks.length)
      rows.push(
        fail(
          'ipam-leaks',
          `${leaks.length} of ${list.length} reservations in ${f.ipam.dir} have had no HNS endpoint for ${grace} s or more: ${listed(leaks.map((r) => `${r.ip} (${r.owner || 'empty'}, ${Math.round(r.ageMs / 1000)} s old)`))}${settingUp}${notJudged}`,
          `run flanneld doctor --fix --grace-period=${grace}: it frees them (host-local runs out of addresses otherwise)`,
        ),
      );
    else if (unreadable.length)
      rows.push(
        warn(
          'ipam-leaks',
          `${list.length} reservations${settingUp}${notJudged}`,
          `look at each: host-local writes <container ID>\r\n<ifname>; remove it if no pod holds that address`,
        ),
      );
    else rows.push(ok('ipam-leaks', `${list.length} reservations, each held by an HNS endpoint or the agent${settingUp}`));
  }
  // The agent's own reservation: host-gw's bridge endpoint (every pod's gateway under win-bridge), vxlan's source VIP.
  const owner = conf.type === 'vxlan' ? SOURCE_VIP_OWNER : HOST_ENDPOINT_OWNER;
  if (conf.type === 'vxlan' && f.sourceVipFiles.length === 0) rows.push(skip('ipam-gateway', '--source-vip-file is off'));
  else rows.push(gatewayRow(f, conf, list, owner));
  return rows;
}

/**
 * The address the agent reserves for the podCIDR it runs now (host-gw's `.2`: src/backends/hostgw/backend.ts
 * settle; vxlan's source VIP, one of its reservations in the podCIDR): one left from an earlier podCIDR
 * (the Node registered again with another; the agent removes it, src/backends/ipam-reservation.ts, so it is
 * there only if that failed, and the agent warned) is not it. Dual-stack host-gw: the
 * IPv6 gateway `::2` (the host endpoint's; the conflist's range starts at `::3`) is held by no pod.
 */
function gatewayRow(f: DoctorFacts, conf: Conf, list: ReservationFact[], owner: string): CheckRow {
  const lease = f.lease;
  const what = conf.type === 'vxlan' ? 'the source VIP' : "the bridge endpoint (pods' gateway)";
  // Which address is the source VIP is the source-vip rows' question; here, one of the podCIDR.
  const want = lease && conf.type === 'host-gw' ? hostEndpointAddress(lease.subnet) : undefined;
  const own = list.find((r) => r.owner === owner && (want !== undefined ? r.ip === want : !lease || (isIp4(r.ip) && contains(lease.subnet, r.ip))));
  if (!own)
    return fail(
      'ipam-gateway',
      `no reservation of ${what}${want ? ` ${want}` : lease ? ` in ${lease.subnet}` : ''} in ${f.ipam.dir}: host-local may give it to a pod`,
      'restart flanneld: it writes the reservation',
    );
  const gw6 = conf.type === 'host-gw' && lease?.ipv6Subnet ? nthAddress6(lease.ipv6Subnet, 2) : undefined;
  const pod6 = gw6 === undefined ? undefined : list.find((r) => r.owner !== owner && r.error === undefined && sameIp(r.ip, gw6));
  if (gw6 !== undefined && pod6)
    return fail(
      'ipam-gateway',
      `the IPv6 gateway ${gw6} is held by ${pod6.owner || 'an empty reservation'} in ${f.ipam.dir}: that pod's own address is its gateway`,
      'render the conflist again with flanneld cni-config -o (its IPv6 range starts at ::3), then delete that pod: it is given another address',
    );
  return ok('ipam-gateway', `${what} ${own.ip} is reserved${gw6 !== undefined ? `; the IPv6 gateway ${gw6} is held by no pod` : ''}`);
}

function clusterRows(f: DoctorFacts, conf: Conf, changed: readonly string[]): CheckRow[] {
  const rows: CheckRow[] = [];
  const c = f.cluster;
  const gone = f.agent.status?.ownNode;
  if (c.ownNodeDeleted || gone) {
    // The kubelet registers its Node when it starts (kubelet registerWithAPIServer); the agent keeps the
    // dataplane meanwhile and takes the Node back (src/agent.ts, own-node-deleted).
    rows.push(
      fail(
        'node-condition',
        `the Node is deleted from the API server${gone ? ` (${gone.reason})` : ''}: no pod is scheduled here and peers drop this node's routes`,
        'restart the kubelet on this node: it registers the Node again',
      ),
    );
  } else if (c.error) {
    rows.push(skip('node-condition', `the API is not readable: ${c.error}`));
  } else if (c.networkUnavailable === undefined) {
    rows.push(skip('node-condition', 'the own Node is not readable'));
  } else if (c.networkUnavailable === null) {
    rows.push(ok('node-condition', 'the Node has no NetworkUnavailable condition'));
  } else if (c.networkUnavailable.status === 'False') {
    rows.push(ok('node-condition', `NetworkUnavailable False (${c.networkUnavailable.reason ?? ''})`));
  } else {
    rows.push(
      fail(
        'node-condition',
        `NetworkUnavailable ${c.networkUnavailable.status} (${c.networkUnavailable.reason ?? ''}: ${c.networkUnavailable.message ?? ''}): the scheduler keeps pods off this node`,
        nodeConditionFix(f, c.networkUnavailable.reason ?? ''),
      ),
    );
  }
  if (conf.type === 'vxlan') {
    const linux = (f.peers.nodes ?? []).filter((p) => p.os !== 'windows' && p.lease.backendType === 'vxlan');
    const vniOf = (p: PeerNode) => (isVxlanBackendData(p.lease.backendData) ? p.lease.backendData.VNI : undefined);
    const other = linux.filter((p) => vniOf(p) !== undefined && vniOf(p) !== conf.vni);
    const port = c.linuxNetConf?.port;
    if (f.peers.nodes === undefined) rows.push(skip('cluster-vni', 'the Nodes are not readable'));
    else if (changed.length) rows.push(skip('cluster-vni', 'net-conf.json changed under the running flanneld (the net-conf row)'));
    else if (other.length || (port !== undefined && port !== conf.port)) {
      const parts = [
        other.length ? `${listed(other.map((p) => `${p.lease.key} VNI ${vniOf(p)}`))}, ours ${conf.vni}` : '',
        port !== undefined && port !== conf.port ? `the Linux net-conf (${c.linuxNetConf!.from}) has Port ${port}, ours ${conf.port}` : '',
      ].filter((s) => s !== '');
      rows.push(
        fail(
          'cluster-vni',
          `${parts.join('; ')}: VXLAN between them is dropped`,
          `set Backend.VNI ${WINDOWS_MIN_VNI} and one Port (${DEFAULT_VXLAN_PORT}, or another on HNS 10.3) in kube-flannel-cfg's net-conf.json, then restart flannel on every node`,
        ),
      );
    } else
      rows.push(
        ok(
          'cluster-vni',
          `${linux.length} Linux vxlan node(s) on VNI ${conf.vni}${port !== undefined ? `, port ${port}` : ''}${c.linuxNetConf ? '' : ' (their port is not published; the Linux ConfigMap is not readable)'}`,
        ),
      );
  }
  const vip = f.agent.status?.sourceVip ?? f.sourceVipFiles.find((x) => x.ip)?.ip;
  rows.push(ok('kube-proxy', `kube-proxy needs --network-name=${conf.name}${conf.type === 'vxlan' ? ` --source-vip=${vip ?? '(none yet)'} (the address no pod gets)` : ''}`));
  return rows;
}

/**
 * Who clears NetworkUnavailable: flanneld sets it False once its network is up and True, with a CNI*
 * reason, while pods cannot start (src/subnet/kube/own-node.ts); it writes it when it starts and when that
 * CNI problem changes, so what another controller sets later (kube-controller-manager's route controller:
 * NoRouteCreated, with --configure-cloud-routes) stays until flanneld starts again.
 */
function nodeConditionFix(f: DoctorFacts, reason: string): string {
  if (f.cluster.agentSetsCondition === false)
    return 'flanneld runs with --set-node-network-unavailable=false, so it never clears it: start flanneld without that flag (it sets False once its network is up)';
  if (!f.agent.status) return 'start flanneld: it sets NetworkUnavailable False once its network is up';
  if (reason.startsWith('CNI')) return 'fix what the message says (the cni-* rows); flanneld sets NetworkUnavailable False once a pod can start';
  const who =
    reason === 'NoRouteCreated'
      ? "kube-controller-manager's route controller set it: start kube-controller-manager with --configure-cloud-routes=false (flannel routes the pods), "
      : 'another controller set it after flanneld cleared it: stop that, ';
  return `${who}then restart flanneld: it sets NetworkUnavailable False once its network is up`;
}

/** The worst status: 1 when any row failed (exit code), else 0. */
export function exitCodeOf(rows: readonly CheckRow[]): number {
  return rows.some((r) => r.status === 'fail') ? 1 : 0;
}

// `flanneld doctor`'s facts: read (never change) everything ./doctor-checks.ts judges, through the seams
// the agent uses: the HNS client, the route table and the host (src/dataplane/factory.ts, so the
// simulated node works as Windows does), the files (node:fs, or a test's), the API server (raw JSON
// requests with a deadline, src/kube/http.ts) and the agent's own /status (./status.ts). Every
// read that fails becomes a fact (`{ error }`) the checks name, so one broken hop never hides the others,
// and a failed read stays unknown: an endpoint list HNS would not give is not an empty one.
// Files are read as the agent reads its configuration (src/basics/fs.ts readRegularFileBytes): regular
// files only (a FIFO would block doctor for ever, /dev/zero fill its heap), each with a cap
// (docs/bounds.md, "flanneld doctor"); anything else is a fact that names the file and why.
import { createHash } from 'node:crypto';
import * as nodeFs from 'node:fs';
import { join, resolve } from 'node:path';
import type { Clock } from '../basics/clock.js';
import type { AgentConfig } from '../config/agent-config.js';
import type { Dataplane } from '../dataplane/factory.js';
import { KubeApiError, errorMessage } from '../basics/errors.js';
import { MAX_CONFIG_FILE_BYTES, readRegularFileBytes, type ReadFs } from '../basics/fs.js';
import { policySetting, ENDPOINT_FLAG_REMOTE, type HcnNetwork } from '../hns/schema.js';
import type { StatusReport } from '../health/status.js';
import { cidrContains, isIp4, normalizeCidr } from '../basics/ip4.js';
import { cidrContains6, formatIp6, normalizeCidr6, parseIp6 } from '../basics/ip6.js';
import { normalizeAnnotationPrefix } from '../config/annotation-prefix.js';
import { annotationKeys } from '../subnet/kube/annotations.js';
import { describe, rbacRefusal } from '../kube/api-error.js';
import type { KubeHttp } from '../kube/http.js';
import { asObj } from '../basics/json-object.js';
import { projectNode, toLease } from '../subnet/kube/node-list-watch.js';
import { readNetConf, windowsNetConf } from '../subnet/net-conf.js';
import { parseSubnetEnv } from '../subnet/subnet-env.js';
import { parseSourceVipDocument } from '../backends/vxlan/source-vip.js';
import { drMacAddress } from '../backends/vxlan/backend.js';
import { reservationOwner } from '../backends/ipam-reservation.js';
import { isVxlanBackendData } from '../subnet/lease.js';
import { INSTALL_RECORD, MAX_RECORD_BYTES } from '../cni-plugins/install.js';
import { ARCHIVE_LIMITS } from '../cni-plugins/archive.js';
import { checkFirstCniConfig, loadFirstCniConfig, pluginTypes, type CniReadinessFs } from '../cni/readiness.js';
import { bootRecordPath, parseRecordedNetwork } from '../host/boot.js';
import { cniPaths, outboundNatExceptions } from '../cni/conflist.js';
import { findInterfaceByIP } from '../host/select.js';
import { managementIPv6Of, subnetOfIP } from './cni-config.js';
import type { DoctorFacts, NetworkFact, PeerActual, PeerNode, ReservationFact } from './doctor-checks.js';
import type { ServicePortFact } from './doctor-services.js';

/** The files doctor reads (each bounded: readFileFact) and --fix removes. */
export interface DoctorFs extends ReadFs {
  readdirSync(path: string): string[];
  statSync(path: string): { mtimeMs: number; isFile(): boolean };
  existsSync(path: string): boolean;
  rmSync(path: string, opts: { force: true }): void;
}

/**
 * A host-local reservation file is `<container ID>\r\n<ifname>` (plugins/ipam/host-local/backend/disk):
 * a CRI sandbox ID is 64 hex digits, an interface name a few characters. 4 KiB is far above any real
 * one; a larger file is not host-local's, and is neither judged nor freed.
 */
export const MAX_RESERVATION_BYTES = 4096;

/** One file as doctor read it: its bytes, missing, or why it could not be used (not a regular file, too large, EACCES). */
export type FileFact = { bytes: Buffer } | { missing: true } | { error: string };

/** Read `path` as the agent reads configuration: a regular file of at most `maxBytes` (src/basics/fs.ts). Never throws. */
export function readFileFact(fs: ReadFs, path: string, maxBytes: number, what: string): FileFact {
  try {
    return { bytes: readRegularFileBytes(path, maxBytes, what, fs) };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { missing: true };
    return { error: errorMessage(err) };
  }
}

/** The text of a FileFact that was read; undefined otherwise. */
const textOf = (f: FileFact): string | undefined => ('bytes' in f ? f.bytes.toString('utf8') : undefined);

export interface GatherOptions {
  config: AgentConfig;
  dataplane: Dataplane;
  /** containerd's CNI conf dir and bin dir. */
  cniConfDir: string;
  cniBinDir: string;
  /** The Service CIDR the conflist must except from NAT. */
  serviceCidr: string;
  /** Dual-stack: the IPv6 Service CIDR the conflist must except from NAT, when given. */
  ipv6ServiceCidr?: string;
  /** The API server, or why there is none. */
  kube: KubeHttp | { error: string };
  /** The agent's /status, or why it did not answer; `lockError` when flanneld.lock could not be read. */
  status: { report?: StatusReport; error?: string; url?: string; lockError?: { path: string; error: string } };
  /** Pinned releases' SHA-256 (src/cni-plugins/pinned.json, the dual-stack one included). */
  pinnedSha256: readonly string[];
  graceMs: number;
  clock: Clock;
  fs?: DoctorFs;
  /** The CNI conf and bin dirs' reads (../cni/readiness.ts); default node:fs. */
  cniFs?: CniReadinessFs;
  platform?: NodeJS.Platform;
}

const API_TIMEOUT_MS = 15_000;
/** host-local's files in a network's directory that are not reservations (plugins/ipam/host-local/backend/disk). */
const NOT_RESERVATIONS = /^(last_reserved_ip\.\d+|lock)$/;
/** The ConfigMap the Linux flannel DaemonSet reads net-conf.json from (flannel Documentation/kube-flannel.yml); in the pod, deploy/base's Role grants get on the first. */
const LINUX_FLANNEL_CONFIGMAPS = [
  ['kube-flannel', 'kube-flannel-cfg'],
  ['kube-system', 'kube-flannel-cfg'],
] as const;

function networkFact(n: HcnNetwork): NetworkFact {
  const s = n.Ipams?.[0]?.Subnets?.[0];
  const vsid = s?.Policies?.find((p) => p.Type === 'VSID')?.Settings?.['IsolationId'];
  return {
    id: n.ID,
    name: n.Name,
    type: n.Type,
    subnet: s?.IpAddressPrefix,
    // A dual-stack L2Bridge holds one Ipam per family (src/backends/hostgw/backend.ts dualStackNetwork).
    subnets: (n.Ipams ?? []).flatMap((i) => i.Subnets ?? []).flatMap((x) => (typeof x.IpAddressPrefix === 'string' ? [x.IpAddressPrefix] : [])),
    ...(vsid === undefined ? {} : { vsid: Number(vsid) }),
    adapter: policySetting(n.Policies, 'NetAdapterName', 'NetworkAdapterName'),
    drMac: drMacAddress(n),
  };
}

async function kubeGet(kube: KubeHttp, path: string, query?: Record<string, string | number>): Promise<unknown> {
  return kube.json({ method: 'GET', path, query, timeoutMs: API_TIMEOUT_MS, signal: new AbortController().signal });
}

interface ClusterFacts {
  peers: PeerNode[] | undefined;
  lease?: { subnet: string; publicIP: string; ipv6Subnet?: string; publicIPv6?: string };
  vtepMac?: string;
  publicIP?: string;
  cluster: DoctorFacts['cluster'];
}

async function gatherCluster(o: GatherOptions, ipv6: boolean): Promise<ClusterFacts> {
  const kube = o.kube;
  if ('error' in kube) return { peers: undefined, cluster: { error: kube.error } };
  const keys = annotationKeys(normalizeAnnotationPrefix(o.config.kubeAnnotationPrefix));
  const out: ClusterFacts = { peers: undefined, cluster: { error: '' } };
  try {
    const list = asObj(await kubeGet(kube, '/api/v1/nodes'));
    const items = Array.isArray(list?.items) ? (list.items as unknown[]) : [];
    out.peers = [];
    for (const node of items) {
      const rec = projectNode(node, keys, ipv6);
      const lease = rec && toLease(rec);
      if (!rec || !lease || rec.name === o.config.nodeName) continue;
      const os = asObj(asObj(asObj(node)?.metadata)?.labels)?.['kubernetes.io/os'];
      out.peers.push({ lease, ...(typeof os === 'string' ? { os } : {}) });
    }
  } catch (err) {
    out.cluster.error = `GET /api/v1/nodes: ${errorMessage(err)}`;
    return out;
  }
  if (o.config.nodeName) {
    try {
      const node = await kubeGet(kube, `/api/v1/nodes/${encodeURIComponent(o.config.nodeName)}`);
      const rec = projectNode(node, keys, ipv6);
      if (rec?.podCIDR)
        out.lease = {
          subnet: rec.podCIDR,
          publicIP: rec.publicIP ?? '',
          ...(rec.ipv6PodCIDR !== undefined ? { ipv6Subnet: rec.ipv6PodCIDR, publicIPv6: rec.publicIPv6Overwrite ?? rec.publicIPv6 ?? '' } : {}),
        };
      const data = rec?.backendData === undefined ? undefined : (JSON.parse(rec.backendData) as unknown);
      if (isVxlanBackendData(data)) out.vtepMac = data.VtepMAC;
      const ip = rec?.publicIPOverwrite ?? rec?.publicIP;
      if (ip && isIp4(ip)) out.publicIP = ip;
      const conds = asObj(asObj(node)?.status)?.conditions;
      const nu = Array.isArray(conds) ? (conds as unknown[]).map(asObj).find((c) => c?.type === 'NetworkUnavailable') : undefined;
      out.cluster.networkUnavailable = nu
        ? { status: String(nu.status), ...(typeof nu.reason === 'string' ? { reason: nu.reason } : {}), ...(typeof nu.message === 'string' ? { message: nu.message } : {}) }
        : null;
    } catch (err) {
      // 404: the Node is gone from the API server (deleted); anything else leaves it unknown.
      if (err instanceof KubeApiError && err.statusCode === 404) out.cluster.ownNodeDeleted = true;
    }
  }
  for (const [ns, name] of LINUX_FLANNEL_CONFIGMAPS) {
    try {
      const cm = asObj(await kubeGet(kube, `/api/v1/namespaces/${ns}/configmaps/${name}`));
      const text = asObj(cm?.data)?.['net-conf.json'];
      if (typeof text !== 'string') continue;
      const backend = asObj(asObj(JSON.parse(text) as unknown)?.Backend);
      out.cluster.linuxNetConf = {
        from: `${ns}/${name}`,
        ...(typeof backend?.Type === 'string' ? { type: backend.Type } : {}),
        ...(typeof backend?.VNI === 'number' ? { vni: backend.VNI } : {}),
        // Linux flanneld's vxlan default port is the kernel's, 8472 (flannel pkg/backend/vxlan).
        port: typeof backend?.Port === 'number' ? backend.Port : backend?.Type === 'vxlan' ? 8472 : undefined,
      };
      break;
    } catch {
      // Not there, or RBAC forbids it: the row says the port is not known.
    }
  }
  return out;
}

/** ms since host-local's store last changed (a reservation file made or removed changes the directory). */
function storeAge(fs: DoctorFs, dir: string, now: number): { dirAgeMs?: number } {
  if (!dir) return {};
  try {
    return { dirAgeMs: Math.max(0, now - fs.statSync(dir).mtimeMs) };
  } catch {
    return {};
  }
}

/** A failed read as a row says it: a 403 from RBAC with the API server's words and what to apply (doctor's rules too). */
function readFailure(err: unknown): string {
  const refusal = rbacRefusal(err, ['network-policy', 'doctor']);
  return refusal ? `${describe(err)}; ${refusal.fix}` : errorMessage(err);
}

/**
 * The Service ports (./doctor-services.ts ServicePortFact) from the Services and EndpointSlices, and the IPs of
 * the pods on this node; each undefined without API access, `{ error }` when its read failed.
 */
async function gatherServices(o: GatherOptions): Promise<Pick<DoctorFacts, 'servicePorts' | 'podIPs'>> {
  const kube = o.kube;
  if ('error' in kube) return { servicePorts: undefined, podIPs: undefined };
  const node = o.config.nodeName;
  let servicePorts: DoctorFacts['servicePorts'];
  try {
    const services = itemsOf(await kubeGet(kube, '/api/v1/services'));
    const slices = itemsOf(await kubeGet(kube, '/apis/discovery.k8s.io/v1/endpointslices'));
    servicePorts = services.flatMap((svc) => servicePortsOf(svc, slices, node));
  } catch (err) {
    servicePorts = { error: readFailure(err) };
  }
  let podIPs: DoctorFacts['podIPs'];
  if (node) {
    try {
      const pods = itemsOf(await kubeGet(kube, '/api/v1/pods', { fieldSelector: `spec.nodeName=${node}` }));
      podIPs = pods.flatMap((p) => {
        const st = asObj(asObj(p)?.status);
        const ips = Array.isArray(st?.podIPs) ? st.podIPs.map((x) => asObj(x)?.ip) : [st?.podIP];
        return ips.filter((ip): ip is string => typeof ip === 'string' && ip !== '');
      });
    } catch (err) {
      podIPs = { error: readFailure(err) };
    }
  }
  return { servicePorts, podIPs };
}

const itemsOf = (list: unknown): unknown[] => {
  const items = asObj(list)?.items;
  return Array.isArray(items) ? items : [];
};

const ip4s = (xs: unknown): string[] => (Array.isArray(xs) ? xs.filter((x): x is string => typeof x === 'string' && isIp4(x)) : []);

/**
 * One Service's ports with what kube-proxy reads of them (./doctor-services.ts): the port's ready endpoints
 * (EndpointSlices labelled kubernetes.io/service-name, ports matched by name), its nodePort, the external and
 * ingress IPs and the traffic policies. Headless (clusterIP None) and ExternalName Services have none.
 */
function servicePortsOf(svc: unknown, slices: readonly unknown[], node: string | undefined): ServicePortFact[] {
  const meta = asObj(asObj(svc)?.metadata);
  const spec = asObj(asObj(svc)?.spec);
  const name = typeof meta?.name === 'string' ? meta.name : '';
  const namespace = typeof meta?.namespace === 'string' ? meta.namespace : '';
  const clusterIP = typeof spec?.clusterIP === 'string' ? spec.clusterIP : '';
  if (!name || spec?.type === 'ExternalName' || !isIp4(clusterIP)) return [];
  const own = slices.map(asObj).filter((sl) => {
    const m = asObj(sl?.metadata);
    return m?.namespace === namespace && asObj(m?.labels)?.['kubernetes.io/service-name'] === name && sl?.addressType === 'IPv4';
  });
  const ingress = asObj(asObj(asObj(svc)?.status)?.loadBalancer)?.ingress;
  const ingressIPs = ip4s(Array.isArray(ingress) ? ingress.map((x) => asObj(x)?.ip) : []);
  const externalIPs = ip4s(spec?.externalIPs);
  const externalLocal = spec?.externalTrafficPolicy === 'Local' || asObj(meta?.annotations)?.['preserve-destination'] === 'true';
  const ports = Array.isArray(spec?.ports) ? spec.ports.map(asObj) : [];
  return ports.flatMap((p) => {
    const protocol = p?.protocol ?? 'TCP';
    if (typeof p?.port !== 'number' || (protocol !== 'TCP' && protocol !== 'UDP' && protocol !== 'SCTP')) return [];
    const portName = typeof p.name === 'string' ? p.name : '';
    let ready = 0;
    let localReady = 0;
    for (const sl of own) {
      const named = (Array.isArray(sl?.ports) ? sl.ports.map(asObj) : []).some((x) => (typeof x?.name === 'string' ? x.name : '') === portName);
      if (!named) continue;
      for (const ep of Array.isArray(sl?.endpoints) ? sl.endpoints.map(asObj) : []) {
        if (asObj(ep?.conditions)?.ready === false) continue;
        ready++;
        if (node !== undefined && ep?.nodeName === node) localReady++;
      }
    }
    const nodePort = typeof p.nodePort === 'number' ? p.nodePort : 0;
    return [
      {
        namespace,
        name,
        clusterIP,
        protocol,
        port: p.port,
        nodePort,
        externalIPs,
        ingressIPs,
        ready,
        localReady,
        trafficLocal: spec?.internalTrafficPolicy === 'Local',
        externalLocal,
      },
    ];
  });
}

/** A reservation file's address: dotted IPv4, or IPv6 as host-local names it (`:` -> `_` on Windows: disk backend GetEscapedPath). */
export function reservationAddress(name: string): string | undefined {
  if (isIp4(name)) return name;
  const v6 = parseIp6(name.replace(/_/g, ':'));
  return v6 === undefined ? undefined : formatIp6(v6);
}

/** The owner a reservation's bytes name, as the agent reads it (../backends/ipam-reservation.ts). */
const ownerOf = (text: string, path: string): string => reservationOwner({ readFileSync: () => text }, path) ?? '';

function listReservations(fs: DoctorFs, dir: string, now: number): DoctorFacts['ipam']['reservations'] {
  if (!fs.existsSync(dir)) return undefined;
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch (err) {
    return { error: errorMessage(err) };
  }
  const out: ReservationFact[] = [];
  for (const n of names) {
    const ip = NOT_RESERVATIONS.test(n) ? undefined : reservationAddress(n);
    if (ip === undefined) continue;
    const path = join(dir, n);
    try {
      const st = fs.statSync(path);
      if (!st.isFile()) continue;
      const ageMs = Math.max(0, now - st.mtimeMs);
      const read = readFileFact(fs, path, MAX_RESERVATION_BYTES, 'host-local reservation');
      if ('missing' in read) continue; // removed while listed (a pod deleted)
      out.push('error' in read ? { ip, file: n, owner: '', ageMs, error: read.error } : { ip, file: n, owner: ownerOf(read.bytes.toString('utf8'), path), ageMs });
    } catch {
      // Removed while listed (a pod deleted): not a reservation any more.
    }
  }
  return out.sort((a, b) => a.ip.localeCompare(b.ip, undefined, { numeric: true }));
}

function pinsOf(fs: DoctorFs, binDir: string, pinned: readonly string[], plugins: readonly string[]): Pick<DoctorFacts['cni'], 'pins' | 'hashes'> {
  const path = join(binDir, INSTALL_RECORD);
  const read = readFileFact(fs, path, MAX_RECORD_BYTES, "install-cni's record");
  if ('missing' in read) return { pins: undefined, hashes: {} };
  if ('error' in read) return { pins: { error: read.error }, hashes: {} };
  let rec: { sources?: unknown; files?: unknown };
  try {
    rec = JSON.parse(read.bytes.toString('utf8')) as typeof rec;
  } catch (err) {
    return { pins: { error: `${path} is not install-cni's record: ${errorMessage(err)}` }, hashes: {} };
  }
  const files = asObj(rec.files) ?? {};
  const sources = Array.isArray(rec.sources) ? rec.sources.map(String).sort() : [];
  // Every source a pinned release (the dual-stack install has one more than the flannel one).
  const pins = {
    pinned: sources.length > 0 && sources.every((s) => pinned.includes(s)),
    files: Object.fromEntries(Object.entries(files).map(([k, v]) => [k, String(v)])),
  };
  const hashes: DoctorFacts['cni']['hashes'] = {};
  for (const name of Object.keys(pins.files).filter((n) => plugins.includes(n))) {
    // A plugin is read whole to hash it, so with install-cni's own cap on one plugin (docs/bounds.md).
    const bin = readFileFact(fs, join(binDir, name), ARCHIVE_LIMITS.maxEntryBytes, 'CNI plugin');
    if ('bytes' in bin) hashes[name] = createHash('sha256').update(bin.bytes).digest('hex');
    else if ('error' in bin) hashes[name] = { error: bin.error };
    // Gone: the cni-plugins row says so.
  }
  return { pins, hashes };
}

/**
 * The OutBoundNAT exceptions cni-config renders for this node (../cni/conflist.ts outboundNatExceptions): the
 * node network and its IPv6 prefix as cni-config finds them on the adapter holding the node's IP (subnetOfIP,
 * managementIPv6Of), each left out when no adapter holds it.
 */
function expectedNatExceptions(
  o: GatherOptions,
  conf: Exclude<DoctorFacts['netConf'], { error: string }>,
  interfaces: DoctorFacts['interfaces'],
  ip: string | undefined,
): string[] {
  const adapter = ip ? findInterfaceByIP(interfaces, ip) : undefined;
  let managementIPv6Subnet: string | undefined;
  try {
    managementIPv6Subnet = adapter?.ipv6Addresses?.length ? managementIPv6Of(adapter, o.config).managementIPv6Subnet : undefined;
  } catch {
    managementIPv6Subnet = undefined; // no address the agent would take: cni-config renders none either
  }
  return outboundNatExceptions({
    vxlan: conf.type === 'vxlan',
    network: conf.network,
    serviceCidr: o.serviceCidr,
    managementSubnet: ip ? subnetOfIP(ip, interfaces) : undefined,
    ...(conf.ipv6Network ? { ipv6: { network: conf.ipv6Network, serviceCidr: o.ipv6ServiceCidr, managementSubnet: managementIPv6Subnet } } : {}),
  }).flat();
}

/** Everything doctor judges, read once. */
export async function gatherFacts(o: GatherOptions): Promise<DoctorFacts> {
  const fs = o.fs ?? nodeFs;
  const { config, dataplane } = o;
  const now = o.clock.now();
  let netConf: DoctorFacts['netConf'];
  try {
    // --ipv4-only: judged as the agent runs it, a dual-stack net-conf's IPv4 half only.
    const read = readNetConf(config.netConfigPath);
    const nc = config.ipv4Only === true ? windowsNetConf(read, true) : read;
    const b = nc.backend;
    netConf = {
      type: b.type,
      name: b.name,
      network: nc.network,
      vni: b.type === 'vxlan' ? b.vni : 0,
      port: b.type === 'vxlan' ? b.port : 0,
      ...(nc.enableIPv6 ? { ipv6Network: nc.ipv6Network } : {}),
    };
  } catch (err) {
    netConf = { error: errorMessage(err) };
  }
  const report = o.status.report;
  const agentFiles: DoctorFacts['agent']['files'] = [...(o.status.lockError ? [o.status.lockError] : [])];
  // The name the agent runs under (it may have adopted another network holding its subnet).
  const bootPath = bootRecordPath(config.subnetFile);
  const bootRead = readFileFact(fs, bootPath, MAX_CONFIG_FILE_BYTES, 'the boot record');
  if ('error' in bootRead) agentFiles.push({ path: bootPath, error: bootRead.error });
  const bootText = textOf(bootRead);
  const boot = bootText === undefined ? undefined : parseRecordedNetwork(bootText);
  const ownBackend = 'error' in netConf ? undefined : netConf.type;
  const recorded = boot && (boot.backend === undefined || boot.backend === ownBackend) ? boot.name : undefined;
  const reported = typeof report?.network?.name === 'string' && report.network.name !== '' ? report.network.name : undefined;
  const name = reported ?? recorded ?? ('error' in netConf ? '' : netConf.name);
  if (!('error' in netConf) && name) netConf = { ...netConf, name };

  const subnetRead = readFileFact(fs, config.subnetFile, MAX_CONFIG_FILE_BYTES, '--subnet-file');
  const subnetText = textOf(subnetRead);
  const subnetEnv: DoctorFacts['subnetEnv'] = 'missing' in subnetRead ? undefined : 'error' in subnetRead ? { error: subnetRead.error } : parseSubnetEnv(subnetText ?? '');

  const dual = !('error' in netConf) && netConf.ipv6Network !== undefined;
  const cluster = await gatherCluster(o, dual);
  let lease: DoctorFacts['lease'];
  if (report?.lease)
    lease = { ...report.lease, ...(report.dualStack ? { ipv6Subnet: report.dualStack.ipv6Subnet, publicIPv6: report.dualStack.publicIPv6 } : {}), from: "the agent's /status" };
  else if (cluster.lease) lease = { ...cluster.lease, from: `Node ${config.nodeName ?? ''}` };
  else if (subnetEnv && !('error' in subnetEnv) && subnetEnv['FLANNEL_SUBNET']) {
    const own = normalizeCidr(subnetEnv['FLANNEL_SUBNET']);
    const own6 = subnetEnv['FLANNEL_IPV6_SUBNET'] ? normalizeCidr6(subnetEnv['FLANNEL_IPV6_SUBNET']) : undefined;
    if (own) lease = { subnet: own, publicIP: '', ...(own6 ? { ipv6Subnet: own6 } : {}), from: 'subnet.env' };
  }

  // What the agent reads first (hcsshim GetGlobals), and what gates every HNS feature it uses.
  const hnsVersion: DoctorFacts['hnsVersion'] = await dataplane.hns.version().catch((err: unknown) => ({ error: errorMessage(err) }));
  let networks: DoctorFacts['networks'];
  let endpoints: DoctorFacts['endpoints'] = [];
  let actual: PeerActual[] | { error: string } = [];
  let hcn: HcnNetwork | undefined;
  try {
    const all = await dataplane.hns.listNetworks();
    networks = all.map(networkFact);
    hcn = all.find((n) => n.Name === name);
  } catch (err) {
    networks = { error: errorMessage(err) };
  }
  if (hcn?.ID) {
    try {
      endpoints = (await dataplane.hns.listEndpoints(hcn.ID)).map((e) => ({
        id: e.ID,
        name: e.Name,
        // Every IpConfiguration: a dual-stack endpoint holds an IPv4 and an IPv6 address.
        ips: (e.IpConfigurations ?? []).flatMap((c) => (typeof c.IpAddress === 'string' ? [c.IpAddress] : [])),
        remote: ((e.Flags ?? 0) & ENDPOINT_FLAG_REMOTE) !== 0,
        ...(e.HostComputeNamespace ? { namespace: e.HostComputeNamespace } : {}),
      }));
    } catch (err) {
      // Unknown, not empty: a failed list must never make a live pod's reservation look leaked.
      endpoints = { error: errorMessage(err) };
    }
    if (!('error' in netConf)) {
      if (netConf.type === 'vxlan') {
        actual = (hcn.Policies ?? [])
          .filter((p) => p.Type === 'RemoteSubnetRoute' && p.Settings)
          .map((p) => {
            const s = p.Settings as Record<string, unknown>;
            return {
              prefix: typeof s['DestinationPrefix'] === 'string' ? s['DestinationPrefix'] : '',
              via: typeof s['ProviderAddress'] === 'string' ? s['ProviderAddress'] : '',
              vni: Number(s['IsolationId']),
              mac: typeof s['DistributedRouterMacAddress'] === 'string' ? s['DistributedRouterMacAddress'] : '',
            };
          });
      } else {
        const own = networkFact(hcn).subnets;
        const cidr = netConf.network;
        const cidr6 = netConf.ipv6Network;
        try {
          const v4 = (await dataplane.routes.list())
            .filter((r) => !own.includes(r.destinationPrefix) && r.destinationPrefix !== '0.0.0.0/0' && cidrContains(cidr, r.destinationPrefix))
            .map((r) => ({ prefix: r.destinationPrefix, via: r.nextHop }));
          const v6 = cidr6
            ? (await dataplane.routes.list(undefined, 'ipv6'))
                .filter((r) => !own.includes(r.destinationPrefix) && cidrContains6(cidr6, r.destinationPrefix))
                .map((r) => ({ prefix: normalizeCidr6(r.destinationPrefix) ?? r.destinationPrefix, via: r.nextHop }))
            : [];
          actual = [...v4, ...v6];
        } catch (err) {
          actual = { error: errorMessage(err) };
        }
      }
    }
  }

  const sourceVipFiles =
    !('error' in netConf) && netConf.type === 'vxlan' && config.sourceVipFile
      ? [config.sourceVipFile, ...config.sourceVipCompatFiles].map((path) => {
          const read = readFileFact(fs, path, MAX_CONFIG_FILE_BYTES, '--source-vip-file');
          if ('missing' in read) return { path, missing: true };
          if ('error' in read) return { path, error: read.error };
          const ip = parseSourceVipDocument(read.bytes.toString('utf8'));
          return { path, ...(ip ? { ip } : {}) };
        })
      : [];

  const first = loadFirstCniConfig(o.cniConfDir, o.cniFs);
  const readiness = checkFirstCniConfig(first, { cniConfDir: o.cniConfDir, cniBinDir: o.cniBinDir, networkName: name, subnetFile: config.subnetFile }, o.cniFs);
  const plugins = 'check' in first ? [] : pluginTypes(first.plugins).map((t) => `${t}.exe`);
  const { pins, hashes } = pinsOf(fs, o.cniBinDir, o.pinnedSha256, plugins);
  const paths = cniPaths(config, o.platform);

  let interfaces: DoctorFacts['interfaces'] = [];
  try {
    interfaces = await dataplane.host.interfaces(dual ? { ipv6: true } : undefined);
  } catch {
    interfaces = [];
  }
  const natExceptions = 'error' in netConf ? [] : expectedNatExceptions(o, netConf, interfaces, lease?.publicIP || cluster.publicIP);
  const ipamDir = config.cniIpamDataDir && name ? join(config.cniIpamDataDir, name) : '';
  let loadBalancers: DoctorFacts['loadBalancers'];
  try {
    loadBalancers = await dataplane.hns.listLoadBalancers();
  } catch (err) {
    loadBalancers = { error: errorMessage(err) };
  }
  const { servicePorts, podIPs } = await gatherServices(o);
  return {
    netConf,
    subnetFile: resolve(config.subnetFile),
    subnetEnv,
    lease,
    networks,
    hnsVersion,
    endpoints,
    publishedVtepMac: cluster.vtepMac,
    sourceVipFiles,
    peers: {
      nodes: cluster.peers,
      actual,
      refused: report ? (Array.isArray(report.peers.refusals) ? report.peers.refusals : []) : undefined,
    },
    cni: { confDir: o.cniConfDir, binDir: o.cniBinDir, first, readiness, expected: { dataDir: paths.dataDir, natExceptions }, pins, hashes },
    interfaces,
    annotatedPublicIP: cluster.publicIP,
    ipam: { dir: ipamDir, reservations: ipamDir ? listReservations(fs, ipamDir, now) : undefined, ...storeAge(fs, ipamDir, now) },
    loadBalancers,
    servicePorts,
    podIPs,
    cluster: { ...cluster.cluster, agentSetsCondition: config.setNodeNetworkUnavailable },
    agent: {
      ...(report ? { status: report } : {}),
      ...(o.status.error ? { error: o.status.error } : {}),
      ...(o.status.url ? { url: o.status.url } : {}),
      files: agentFiles,
    },
    graceMs: o.graceMs,
  };
}

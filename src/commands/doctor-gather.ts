// `flanneld doctor`'s facts: read (never change) everything ./doctor-checks.ts judges, through the seams
// the agent uses: the HNS client, the route table and the host (src/dataplane/factory.ts, so the
// simulated node works as Windows does), the files (node:fs, or a test's), the API server (raw JSON
// requests with a deadline, src/subnet/kube/http.ts) and the agent's own /status (./status.ts). Every
// read that fails becomes a fact (`{ error }`) the checks name, so one broken hop never hides the others.
import { createHash } from 'node:crypto';
import * as nodeFs from 'node:fs';
import { join, resolve } from 'node:path';
import type { Clock } from '../basics/clock.js';
import type { AgentConfig } from '../config/agent-config.js';
import type { Dataplane } from '../dataplane/factory.js';
import { errorMessage } from '../basics/errors.js';
import { policySetting, ENDPOINT_FLAG_REMOTE, type HcnNetwork } from '../hns/schema.js';
import type { StatusReport } from '../health/status.js';
import { cidrContains, isIp4, normalizeCidr } from '../basics/ip4.js';
import { normalizeAnnotationPrefix } from '../config/annotation-prefix.js';
import { annotationKeys } from '../subnet/kube/annotations.js';
import type { KubeHttp } from '../subnet/kube/http.js';
import { asObj, projectNode, toLease } from '../subnet/kube/node-list-watch.js';
import { readNetConf } from '../subnet/net-conf.js';
import { parseSubnetEnv } from '../subnet/subnet-env.js';
import { parseSourceVipDocument } from '../backends/vxlan/source-vip.js';
import { drMacAddress } from '../backends/vxlan/backend.js';
import { reservationOwner } from '../backends/ipam-reservation.js';
import { isVxlanBackendData } from '../subnet/lease.js';
import { INSTALL_RECORD } from '../cni-plugins/install.js';
import { checkFirstCniConfig, loadFirstCniConfig, pluginTypes, type CniReadinessFs } from './cni-readiness.js';
import { readBootNetwork } from '../host/boot.js';
import { cniPaths } from './cni-config.js';
import type { DoctorFacts, EndpointFact, NetworkFact, PeerActual, PeerLease, ReservationFact } from './doctor-checks.js';

/** The files doctor reads (and --fix removes). */
export interface DoctorFs {
  readFileSync(path: string, encoding: 'utf8'): string;
  readFileSync(path: string): Buffer;
  readdirSync(path: string): string[];
  statSync(path: string): { mtimeMs: number; isFile(): boolean };
  existsSync(path: string): boolean;
  rmSync(path: string, opts: { force: true }): void;
}

export interface GatherOptions {
  config: AgentConfig;
  dataplane: Dataplane;
  /** containerd's CNI conf dir and bin dir. */
  cniConfDir: string;
  cniBinDir: string;
  /** The Service CIDR the conflist must except from NAT. */
  serviceCidr: string;
  /** The API server, or why there is none. */
  kube: KubeHttp | { error: string };
  /** The agent's /status, or why it did not answer. */
  status: { report?: StatusReport; error?: string; url?: string };
  /** Pinned releases' SHA-256 (src/cni-plugins/pinned.json). */
  pinnedSha256: readonly string[];
  graceMs: number;
  clock: Clock;
  fs?: DoctorFs;
  /** The CNI conf and bin dirs' reads (./cni-readiness.ts); default node:fs. */
  cniFs?: CniReadinessFs;
  platform?: NodeJS.Platform;
}

const API_TIMEOUT_MS = 15_000;
/** host-local's files in a network's directory that are not reservations (plugins/ipam/host-local/backend/disk). */
const NOT_RESERVATIONS = /^(last_reserved_ip\.\d+|lock)$/;
/** The ConfigMap the Linux flannel DaemonSet reads net-conf.json from (flannel Documentation/kube-flannel.yml). */
const LINUX_FLANNEL_CONFIGMAPS = [
  ['kube-flannel', 'kube-flannel-cfg'],
  ['kube-system', 'kube-flannel-cfg'],
] as const;

function readText(fs: DoctorFs, path: string): string | undefined {
  try {
    return fs.readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function networkFact(n: HcnNetwork): NetworkFact {
  const s = n.Ipams?.[0]?.Subnets?.[0];
  const vsid = s?.Policies?.find((p) => p.Type === 'VSID')?.Settings?.['IsolationId'];
  return {
    id: n.ID,
    name: n.Name,
    type: n.Type,
    subnet: s?.IpAddressPrefix,
    ...(vsid === undefined ? {} : { vsid: Number(vsid) }),
    adapter: policySetting(n.Policies, 'NetAdapterName', 'NetworkAdapterName'),
    drMac: drMacAddress(n),
  };
}

async function kubeGet(kube: KubeHttp, path: string, query?: Record<string, string | number>): Promise<unknown> {
  return kube.json({ method: 'GET', path, query, timeoutMs: API_TIMEOUT_MS, signal: new AbortController().signal });
}

interface ClusterFacts {
  peers: PeerLease[] | undefined;
  lease?: { subnet: string; publicIP: string };
  vtepMac?: string;
  publicIP?: string;
  cluster: DoctorFacts['cluster'];
}

async function gatherCluster(o: GatherOptions): Promise<ClusterFacts> {
  const kube = o.kube;
  if ('error' in kube) return { peers: undefined, cluster: { error: kube.error } };
  const keys = annotationKeys(normalizeAnnotationPrefix(o.config.kubeAnnotationPrefix));
  const out: ClusterFacts = { peers: undefined, cluster: { error: '' } };
  try {
    const list = asObj(await kubeGet(kube, '/api/v1/nodes'));
    const items = Array.isArray(list?.items) ? (list.items as unknown[]) : [];
    out.peers = [];
    for (const node of items) {
      const rec = projectNode(node, keys);
      const lease = rec && toLease(rec);
      if (!rec || !lease || rec.name === o.config.nodeName) continue;
      const os = asObj(asObj(asObj(node)?.metadata)?.labels)?.['kubernetes.io/os'];
      const data = lease.backendData;
      out.peers.push({
        node: rec.name,
        subnet: lease.subnet,
        publicIP: lease.publicIP,
        backendType: lease.backendType,
        ...(isVxlanBackendData(data) ? { vni: data.VNI, vtepMac: data.VtepMAC } : {}),
        ...(typeof os === 'string' ? { os } : {}),
      });
    }
  } catch (err) {
    out.cluster.error = `GET /api/v1/nodes: ${errorMessage(err)}`;
    return out;
  }
  if (o.config.nodeName) {
    try {
      const node = await kubeGet(kube, `/api/v1/nodes/${encodeURIComponent(o.config.nodeName)}`);
      const rec = projectNode(node, keys);
      if (rec?.podCIDR) out.lease = { subnet: rec.podCIDR, publicIP: rec.publicIP ?? '' };
      const data = rec?.backendData === undefined ? undefined : (JSON.parse(rec.backendData) as unknown);
      if (isVxlanBackendData(data)) out.vtepMac = data.VtepMAC;
      const ip = rec?.publicIPOverwrite ?? rec?.publicIP;
      if (ip && isIp4(ip)) out.publicIP = ip;
      const conds = asObj(asObj(node)?.status)?.conditions;
      const nu = Array.isArray(conds) ? (conds as unknown[]).map(asObj).find((c) => c?.type === 'NetworkUnavailable') : undefined;
      out.cluster.networkUnavailable = nu
        ? { status: String(nu.status), ...(typeof nu.reason === 'string' ? { reason: nu.reason } : {}), ...(typeof nu.message === 'string' ? { message: nu.message } : {}) }
        : null;
    } catch {
      // The own Node unreadable: its rows say so.
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
    if (NOT_RESERVATIONS.test(n) || !isIp4(n)) continue;
    const path = join(dir, n);
    try {
      const st = fs.statSync(path);
      if (!st.isFile()) continue;
      out.push({ ip: n, owner: reservationOwner(fs, path) ?? '', ageMs: Math.max(0, now - st.mtimeMs) });
    } catch {
      // Removed while listed (a pod deleted): not a reservation any more.
    }
  }
  return out.sort((a, b) => a.ip.localeCompare(b.ip, undefined, { numeric: true }));
}

function pinsOf(fs: DoctorFs, binDir: string, pinned: readonly string[], plugins: readonly string[]): { pins: DoctorFacts['cni']['pins']; hashes: Record<string, string> } {
  const text = readText(fs, join(binDir, INSTALL_RECORD));
  if (text === undefined) return { pins: undefined, hashes: {} };
  let rec: { sources?: unknown; files?: unknown };
  try {
    rec = JSON.parse(text) as typeof rec;
  } catch {
    return { pins: undefined, hashes: {} };
  }
  const files = asObj(rec.files) ?? {};
  const sources = Array.isArray(rec.sources) ? rec.sources.map(String).sort() : [];
  const want = [...pinned].sort();
  const pins = {
    pinned: sources.length === want.length && sources.every((s, i) => s === want[i]),
    files: Object.fromEntries(Object.entries(files).map(([k, v]) => [k, String(v)])),
  };
  const hashes: Record<string, string> = {};
  for (const name of Object.keys(pins.files).filter((n) => plugins.includes(n))) {
    try {
      hashes[name] = createHash('sha256')
        .update(fs.readFileSync(join(binDir, name)))
        .digest('hex');
    } catch {
      // Gone: the row says so.
    }
  }
  return { pins, hashes };
}

/** Everything doctor judges, read once. */
export async function gatherFacts(o: GatherOptions): Promise<DoctorFacts> {
  const fs = o.fs ?? nodeFs;
  const { config, dataplane } = o;
  const now = o.clock.now();
  let netConf: DoctorFacts['netConf'];
  try {
    const nc = readNetConf(config.netConfigPath);
    const b = nc.backend;
    netConf = { type: b.type, name: b.name, network: nc.network, vni: b.type === 'vxlan' ? b.vni : 0, port: b.type === 'vxlan' ? b.port : 0 };
  } catch (err) {
    netConf = { error: errorMessage(err) };
  }
  const report = o.status.report;
  // The name the agent runs under (it may have adopted another network holding its subnet).
  const boot = readBootNetwork(config.subnetFile, fs);
  const ownBackend = 'error' in netConf ? undefined : netConf.type;
  const recorded = boot && (boot.backend === undefined || boot.backend === ownBackend) ? boot.name : undefined;
  const reported = typeof report?.network?.name === 'string' && report.network.name !== '' ? report.network.name : undefined;
  const name = reported ?? recorded ?? ('error' in netConf ? '' : netConf.name);
  if (!('error' in netConf) && name) netConf = { ...netConf, name };

  const subnetText = fs.existsSync(config.subnetFile) ? readText(fs, config.subnetFile) : undefined;
  const subnetEnv: DoctorFacts['subnetEnv'] = !fs.existsSync(config.subnetFile) ? undefined : subnetText === undefined ? { error: 'unreadable' } : parseSubnetEnv(subnetText);

  const cluster = await gatherCluster(o);
  let lease: DoctorFacts['lease'];
  if (report?.lease) lease = { ...report.lease, from: "the agent's /status" };
  else if (cluster.lease) lease = { ...cluster.lease, from: `Node ${config.nodeName ?? ''}` };
  else if (subnetEnv && !('error' in subnetEnv) && subnetEnv['FLANNEL_SUBNET']) {
    const own = normalizeCidr(subnetEnv['FLANNEL_SUBNET']);
    if (own) lease = { subnet: own, publicIP: '', from: 'subnet.env' };
  }

  let networks: DoctorFacts['networks'];
  let endpoints: EndpointFact[] = [];
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
        ip: e.IpConfigurations?.[0]?.IpAddress,
        remote: ((e.Flags ?? 0) & ENDPOINT_FLAG_REMOTE) !== 0,
      }));
    } catch {
      endpoints = [];
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
        const own = hcn.Ipams?.[0]?.Subnets?.[0]?.IpAddressPrefix;
        const cidr = netConf.network;
        try {
          actual = (await dataplane.routes.list())
            .filter((r) => r.destinationPrefix !== own && r.destinationPrefix !== '0.0.0.0/0' && cidrContains(cidr, r.destinationPrefix))
            .map((r) => ({ prefix: r.destinationPrefix, via: r.nextHop }));
        } catch (err) {
          actual = { error: errorMessage(err) };
        }
      }
    }
  }

  const sourceVipFiles =
    !('error' in netConf) && netConf.type === 'vxlan' && config.sourceVipFile
      ? [config.sourceVipFile, ...config.sourceVipCompatFiles].map((path) => {
          const text = readText(fs, path);
          return text === undefined ? { path, missing: true } : { path, ...(parseSourceVipDocument(text) ? { ip: parseSourceVipDocument(text) } : {}) };
        })
      : [];

  const first = loadFirstCniConfig(o.cniConfDir, o.cniFs);
  const readiness = checkFirstCniConfig(first, { cniConfDir: o.cniConfDir, cniBinDir: o.cniBinDir, networkName: name, subnetFile: config.subnetFile }, o.cniFs);
  const plugins = 'check' in first ? [] : pluginTypes(first.plugins).map((t) => `${t}.exe`);
  const { pins, hashes } = pinsOf(fs, o.cniBinDir, o.pinnedSha256, plugins);
  const paths = cniPaths(config, o.platform);

  let interfaces: DoctorFacts['interfaces'] = [];
  try {
    interfaces = await dataplane.host.interfaces();
  } catch {
    interfaces = [];
  }
  const ipamDir = config.cniIpamDataDir && name ? join(config.cniIpamDataDir, name) : '';
  return {
    netConf,
    subnetFile: resolve(config.subnetFile),
    subnetEnv,
    lease,
    networks,
    endpoints,
    publishedVtepMac: cluster.vtepMac,
    sourceVipFiles,
    peers: { desired: cluster.peers, actual, refused: report ? (Array.isArray(report.peers.refusals) ? report.peers.refusals : []) : undefined },
    cni: { confDir: o.cniConfDir, binDir: o.cniBinDir, first, readiness, expected: { dataDir: paths.dataDir, serviceCidr: o.serviceCidr }, pins, hashes },
    interfaces,
    annotatedPublicIP: cluster.publicIP,
    ipam: { dir: ipamDir, reservations: ipamDir ? listReservations(fs, ipamDir, now) : undefined },
    cluster: cluster.cluster,
    agent: { ...(report ? { status: report } : {}), ...(o.status.error ? { error: o.status.error } : {}), ...(o.status.url ? { url: o.status.url } : {}) },
    graceMs: o.graceMs,
  };
}

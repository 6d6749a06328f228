// `flanneld doctor`: check every hop a pod's traffic needs on this node and name the broken one: the HNS
// network, the host endpoint or source VIP, the peers' routes or policies, subnet.env, the conflist
// containerd loads first and its plugins, the adapter, host-local's store and the cluster side. It takes
// the agent's flags (--cni-conf-dir and --cni-bin-dir among them), env file and net-conf (service or
// start.ps1 install alike), reads the agent's /status when it runs and works without it. One row per
// check (./doctor-checks.ts, pure, over the facts of ./doctor-gather.ts); `--json` for support bundles. Exit 0 when nothing failed, 1 on a
// failure, 2 on bad usage. `--fix` frees leaked host-local reservations older than --grace-period
// (never the gateway, the host endpoint's or the source VIP's, never while HNS would not list the
// endpoints: a failed read proves nothing leaked), removes the local endpoints on the agent's network that
// belong to no pod and hold no reservation (./doctor-services.ts: by the same rules) and changes nothing
// else; kube-proxy's load balancers are listed against the cluster's Services, never changed.
// No upstream (flannel, Calico, Antrea) ships a node self-test; the rows follow docs/troubleshooting.md.
import { join } from 'node:path';
import * as nodeFs from 'node:fs';
import pinned from '../cni-plugins/pinned.json' with { type: 'json' };
import { systemClock } from '../basics/clock.js';
import type { FlagSpec } from '../config/flags.js';
import type { AgentConfig } from '../config/agent-config.js';
import { FlagError, FlannelError, errorMessage } from '../basics/errors.js';
import { chooseCniDir, readContainerdCni, type ContainerdCni } from '../cni/containerd-config.js';
import { agentLockPath, readLockHolder, type LockFs } from '../host/agent-lock.js';
import { hostEndpointAddress } from '../backends/hostgw/backend.js';
import { reservationOwner } from '../backends/ipam-reservation.js';
import { normalizeCidr } from '../basics/ip4.js';
import { nthAddress6 } from '../basics/ip6.js';
import { MAX_CONFIG_FILE_BYTES, readRegularFile } from '../basics/fs.js';
import { silentLogger } from '../basics/log.js';
import { Metrics } from '../basics/metrics.js';
import { terminalJson, terminalText as t } from '../basics/terminal-text.js';
import { VERSION } from '../basics/version.js';
import type { Command, CommandIO } from './command.js';
import { commandUsage, parseCommandArgs, reportError } from './cni-flags.js';
import { DEFAULT_SERVICE_CIDR } from '../cni/conflist.js';
import {
  canonicalIp,
  containerdRow,
  exitCodeOf,
  gatewaysOf,
  isErr,
  leakedReservations,
  runChecks,
  type CheckRow,
  type ContainerdFact,
  type DoctorFacts,
  type ReservationFact,
} from './doctor-checks.js';
import { MAX_RESERVATION_BYTES, gatherFacts, readFileFact, reservationAddress, type DoctorFs, type GatherOptions } from './doctor-gather.js';
import { endpointsToRemove, serviceRows } from './doctor-services.js';
import { ENDPOINT_FLAG_REMOTE } from '../hns/schema.js';
import type { HnsClient } from '../hns/client.js';
import { agentStatusUrls, isStatusReport, readStatus } from './status.js';

/** containerd's CNI directories on Windows (containerd config.toml `conf_dir`, `bin_dir`; sig-windows-tools). */
const WINDOWS_CNI_CONF_DIR = 'C:\\etc\\cni\\net.d';
const WINDOWS_CNI_BIN_DIR = 'C:\\opt\\cni\\bin';
/**
 * A reservation younger than this may be a pod being added: host-local writes it, then win-bridge / win-overlay
 * call HcnCreateEndpoint, all inside the CRI RunPodSandbox that the kubelet bounds by its
 * --runtime-request-timeout (2 min by default; containerd kills the CNI plugin when that ends). 600 s is
 * five times that: no pod ADD still under way has a reservation this old, so the row does not flap under
 * monitoring and --fix never frees an address an ADD is about to give out (docs/troubleshooting.md).
 */
const DEFAULT_GRACE_SECONDS = 600;
/** How long doctor waits for the agent's /status. */
const STATUS_TIMEOUT_MS = 3_000;

const DOCTOR_FLAGS: readonly FlagSpec[] = [
  { name: 'json', kind: 'bool', default: false, help: 'print the rows as JSON (for support bundles)' },
  {
    name: 'fix',
    kind: 'bool',
    default: false,
    help: "free leaked host-local reservations older than --grace-period and remove the agent network's local endpoints no pod holds (nothing else)",
  },
  {
    name: 'grace-period',
    kind: 'int',
    default: DEFAULT_GRACE_SECONDS,
    help: "with --fix: the age in seconds a leaked reservation must have (and host-local's store, for a leaked endpoint)",
    valueName: 'SECONDS',
  },
  { name: 'service-cidr', kind: 'string', default: DEFAULT_SERVICE_CIDR, help: 'the cluster Service CIDR the conflist must except from outbound NAT', valueName: 'CIDR' },
  { name: 'status-url', kind: 'string', default: '', help: "the agent's status URL (default: as flanneld status finds it)", valueName: 'URL' },
  { name: 'no-cluster', kind: 'bool', default: false, help: 'do not ask the API server (the cluster rows are skipped)' },
];

/** What --fix freed. */
export interface FreedReservation {
  path: string;
  ip: string;
  owner: string;
  ageSeconds: number;
}

/**
 * The reservations --fix frees: leaked (no HNS endpoint holds them), at least `graceMs` old, and never
 * the gateway (.1), the host endpoint's address (.2, host-gw) or the source VIP. Pure.
 */
export function reservationsToFree(f: DoctorFacts, graceMs: number): ReservationFact[] {
  if (isErr(f.networks) || isErr(f.endpoints) || !f.lease || !f.ipam.dir || isErr(f.netConf)) return [];
  const conf = f.netConf;
  if (!f.networks.some((n) => n.name === conf.name)) return []; // without the network every reservation looks leaked
  const keep = new Set(gatewaysOf(f.lease));
  if (conf.type === 'host-gw') keep.add(hostEndpointAddress(f.lease.subnet));
  // Dual-stack: `::2` is the host endpoint's too (the conflist's range starts at `::3`).
  if (f.lease.ipv6Subnet) keep.add(nthAddress6(f.lease.ipv6Subnet, 2));
  for (const x of f.sourceVipFiles) if (x.ip) keep.add(x.ip);
  if (f.agent.status?.sourceVip) keep.add(f.agent.status.sourceVip);
  return leakedReservations(f).filter((r) => r.ageMs >= graceMs && !keep.has(r.ip));
}

/**
 * Remove the files reservationsToFree names; returns what was freed. Each is read again just before: one
 * rewritten since it was gathered (a pod deleted and another given the address) is kept.
 */
export function freeReservations(f: DoctorFacts, graceMs: number, fs: DoctorFs, now: number): FreedReservation[] {
  const freed: FreedReservation[] = [];
  for (const r of reservationsToFree(f, graceMs)) {
    const path = join(f.ipam.dir, r.file);
    try {
      const read = readFileFact(fs, path, MAX_RESERVATION_BYTES, 'host-local reservation');
      if (!('bytes' in read) || reservationOwner({ readFileSync: () => read.bytes.toString('utf8') }, path) !== r.owner || now - fs.statSync(path).mtimeMs < graceMs) continue;
    } catch {
      continue; // gone already
    }
    fs.rmSync(path, { force: true });
    freed.push({ path, ip: r.ip, owner: r.owner, ageSeconds: Math.round(r.ageMs / 1000) });
  }
  return freed;
}

/** What --fix did with a leaked endpoint (./doctor-services.ts). */
export interface RemovedEndpoint {
  id: string;
  ips: string[];
  name?: string;
  /** HcnDeleteEndpoint failed: the endpoint stays. */
  error?: string;
}

/**
 * Remove the endpoints endpointsToRemove names (HcnDeleteEndpoint), each read again just before, as a
 * reservation is: one that changed since it was gathered (gone, in a namespace, other addresses), or a store
 * that changed within the grace period or now holds one of its addresses, is kept.
 */
export async function removeLeakedEndpoints(
  f: DoctorFacts,
  graceMs: number,
  hns: Pick<HnsClient, 'getEndpoint' | 'deleteEndpoint'>,
  fs: DoctorFs,
  now: number,
): Promise<RemovedEndpoint[]> {
  const out: RemovedEndpoint[] = [];
  for (const e of endpointsToRemove(f, graceMs)) {
    const id = e.id!;
    try {
      const live = await hns.getEndpoint(id);
      const ips = (live?.IpConfigurations ?? []).map((c) => canonicalIp(c.IpAddress));
      if (!live || ((live.Flags ?? 0) & ENDPOINT_FLAG_REMOTE) !== 0 || live.HostComputeNamespace || ips.join() !== e.ips.map(canonicalIp).join()) continue;
      if (now - fs.statSync(f.ipam.dir).mtimeMs < graceMs) continue;
      const reserved = new Set(fs.readdirSync(f.ipam.dir).map(reservationAddress));
      if (ips.some((ip) => reserved.has(ip))) continue;
    } catch {
      continue; // unreadable now: unknown, kept
    }
    try {
      await hns.deleteEndpoint(id);
      out.push({ id, ips: e.ips, ...(e.name ? { name: e.name } : {}) });
    } catch (err) {
      out.push({ id, ips: e.ips, ...(e.name ? { name: e.name } : {}), error: errorMessage(err) });
    }
  }
  return out;
}

const MARK: Record<CheckRow['status'], string> = { ok: 'ok', warn: 'WARN', fail: 'FAIL', skip: 'skip' };

/** The table doctor prints, every value escaped for the terminal. Pure. */
export function renderDoctorTable(rows: readonly CheckRow[], freed: readonly FreedReservation[] = [], fixed = freed.length > 0, removed: readonly RemovedEndpoint[] = []): string {
  const width = Math.max(...rows.map((r) => r.id.length)) + 2;
  const lines = rows.map((r) => `${MARK[r.status].padEnd(6)}${r.id.padEnd(width)}${t(r.saw)}${r.fix ? `\n${' '.repeat(6 + width)}fix: ${t(r.fix)}` : ''}`);
  for (const x of freed) lines.push(`freed ${t(x.path)} (${t(x.owner || 'empty')}, ${x.ageSeconds} s old)`);
  if (fixed && freed.length === 0) lines.push('--fix: no leaked reservation old enough to free');
  for (const x of removed)
    lines.push(
      x.error
        ? `could not remove endpoint ${t(x.id)} (${t(x.ips.join('+'))}): ${t(x.error)}`
        : `removed endpoint ${t(x.id)} (${t(x.ips.join('+'))}${x.name ? `, ${t(x.name)}` : ''})`,
    );
  const fails = rows.filter((r) => r.status === 'fail');
  lines.push(fails.length ? `${fails.length} check(s) failed: ${fails.map((r) => r.id).join(', ')}` : 'all checks passed');
  return lines.join('\n') + '\n';
}

/**
 * Where containerd's CNI directories are: the agent's --cni-conf-dir / --cni-bin-dir when given (shared with
 * its readiness check), else containerd's from --containerd-config when that file is there
 * (../cni/containerd-config.ts), else containerd's defaults (on Windows the flags' own defaults); and the
 * cni-containerd fact when a containerd config is named.
 */
function cniDirs(
  config: Pick<AgentConfig, 'cniConfDir' | 'cniBinDir' | 'containerdConfig' | 'cniDirsGiven'>,
  platform: NodeJS.Platform,
): { confDir: string; binDir: string; containerd?: ContainerdFact } {
  const win = platform === 'win32';
  const flags = {
    confDir: config.cniConfDir || (win ? WINDOWS_CNI_CONF_DIR : '/etc/cni/net.d'),
    binDir: config.cniBinDir || (win ? WINDOWS_CNI_BIN_DIR : '/opt/cni/bin'),
  };
  const file = config.containerdConfig;
  if (file === '') return flags;
  let containerd: ContainerdCni | undefined;
  try {
    containerd = readContainerdCni(file, platform);
  } catch (err) {
    return { ...flags, containerd: { file, error: `${errorMessage(err)}${err instanceof FlannelError ? ` [${err.code}]` : ''}` } };
  }
  if (containerd === undefined) return { ...flags, containerd: { file, missing: true } };
  const conf = chooseCniDir('conf', { flag: '--cni-conf-dir', value: flags.confDir, given: config.cniDirsGiven.confDir }, containerd);
  const bin = chooseCniDir('bin', { flag: '--cni-bin-dir', value: flags.binDir, given: config.cniDirsGiven.binDir }, containerd);
  const disagreements = [conf.warning, bin.warning].filter((w) => w !== undefined);
  return { confDir: conf.dir, binDir: bin.dir, containerd: { file, confDir: conf.dir, binDir: bin.dir, disagreements } };
}

/**
 * flanneld.lock read as the agent's configuration is (a regular file of at most 1 MiB): only
 * readFileSync is called (readLockHolder reads, never writes).
 */
const boundedLockFs: LockFs = {
  ...nodeFs,
  readFileSync: (path: string) => readRegularFile(path, MAX_CONFIG_FILE_BYTES, 'the agent lock'),
};

async function agentStatus(config: AgentConfig, statusUrl: string): Promise<GatherOptions['status']> {
  const lockPath = agentLockPath(config.subnetFile);
  let running = false;
  let lockError: { path: string; error: string } | undefined;
  try {
    running = readLockHolder(lockPath, { fs: boundedLockFs }) !== undefined;
  } catch (err) {
    lockError = { path: lockPath, error: errorMessage((err as { cause?: unknown }).cause ?? err) };
  }
  const withLock = <T extends object>(x: T) => (lockError ? { ...x, lockError } : x);
  if (!statusUrl && config.healthzPort === 0 && !running) return withLock({ error: lockError ? 'flanneld.lock cannot be read' : 'no agent holds the node lock' });
  const urls = agentStatusUrls(statusUrl, config);
  let error = '';
  for (const url of urls) {
    try {
      const res = await readStatus(url, { timeoutMs: STATUS_TIMEOUT_MS });
      if (res.status !== 200) {
        error = `${url} answered ${res.status}`;
        continue;
      }
      const report: unknown = JSON.parse(res.text);
      if (!isStatusReport(report)) {
        error = `${url} did not answer with a flanneld status document`;
        continue;
      }
      return withLock({ report, url });
    } catch (err) {
      error = errorMessage((err as { cause?: unknown }).cause ?? err);
    }
  }
  return withLock({ error, url: urls[0] });
}

async function kubeAccess(config: AgentConfig, noCluster: boolean): Promise<GatherOptions['kube']> {
  if (noCluster) return { error: '--no-cluster' };
  if (!config.kubeconfigFile && !config.kubeApiUrl && !config.inClusterEnv.KUBERNETES_SERVICE_HOST) return { error: 'no --kubeconfig-file, --kube-api-url or in-cluster config' };
  try {
    const { buildKubeConfig } = await import('../kube/client.js');
    const { KubeHttp } = await import('../kube/http.js');
    return new KubeHttp(buildKubeConfig({ kubeconfigFile: config.kubeconfigFile, kubeApiUrl: config.kubeApiUrl, env: config.inClusterEnv, log: silentLogger() }), systemClock);
  } catch (err) {
    return { error: errorMessage(err) };
  }
}

export const command: Command = {
  summary: "check every hop a pod's traffic needs on this node and name the broken one (exit 0 when none failed)",
  async run(args: string[], io: CommandIO): Promise<number> {
    const program = 'flanneld doctor';
    try {
      const parsed = parseCommandArgs(args, DOCTOR_FLAGS, io);
      if (parsed.kind === 'help') {
        io.stdout(commandUsage(program, this.summary, DOCTOR_FLAGS));
        return 0;
      }
      const own = (name: string) => String(parsed.own.get(name) ?? '');
      const grace = Number(parsed.own.get('grace-period'));
      if (!Number.isInteger(grace) || grace < 0)
        throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${grace}" for flag -grace-period: a number of seconds >= 0`, { flag: 'grace-period' });
      const serviceCidr = normalizeCidr(own('service-cidr'));
      if (!serviceCidr)
        throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${own('service-cidr')}" for flag -service-cidr: not an IPv4 CIDR (e.g. 10.96.0.0/12)`, { flag: 'service-cidr' });
      const { config } = parsed;
      const { confDir, binDir, containerd } = cniDirs(config, io.platform);
      const { createDataplane } = await import('../dataplane/factory.js');
      const dataplane = await createDataplane(config, { log: silentLogger(), metrics: new Metrics(), clock: systemClock });
      const opts: GatherOptions = {
        config,
        dataplane,
        cniConfDir: confDir,
        cniBinDir: binDir,
        serviceCidr,
        kube: await kubeAccess(config, parsed.own.get('no-cluster') === true),
        status: await agentStatus(config, own('status-url')),
        pinnedSha256: [...pinned.releases, ...pinned.dualStack].map((r) => r.sha256),
        graceMs: grace * 1000,
        clock: systemClock,
        platform: io.platform,
      };
      let facts = await gatherFacts(opts);
      let freed: FreedReservation[] = [];
      let removed: RemovedEndpoint[] = [];
      if (parsed.own.get('fix') === true) {
        freed = freeReservations(facts, grace * 1000, nodeFs, systemClock.now());
        if (freed.length) facts = await gatherFacts(opts);
        removed = await removeLeakedEndpoints(facts, grace * 1000, dataplane.hns, nodeFs, systemClock.now());
        if (removed.length) facts = await gatherFacts(opts);
      }
      const rows = [...runChecks(facts), ...(containerd ? [containerdRow(containerd)] : []), ...serviceRows(facts)];
      if (parsed.own.get('json') === true) {
        io.stdout(terminalJson({ version: VERSION, node: config.nodeName ?? null, ok: exitCodeOf(rows) === 0, checks: rows, freed, removedEndpoints: removed }) + '\n');
      } else {
        io.stdout(renderDoctorTable(rows, freed, parsed.own.get('fix') === true, removed));
      }
      return exitCodeOf(rows);
    } catch (err) {
      return reportError(program, err, io);
    }
  },
};

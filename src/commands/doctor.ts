// `flanneld doctor`: check every hop a pod's traffic needs on this node and name the broken one: the HNS
// network, the host endpoint or source VIP, the peers' routes or policies, subnet.env, the conflist
// containerd loads first and its plugins, the adapter, host-local's store and the cluster side. It takes
// the agent's flags (--cni-conf-dir and --cni-bin-dir among them), env file and net-conf (service or
// start.ps1 install alike), reads the agent's /status when it runs and works without it. One row per
// check (./doctor-checks.ts, pure, over the facts of ./doctor-gather.ts); `--json` for support bundles. Exit 0 when nothing failed, 1 on a
// failure, 2 on bad usage. `--fix` frees leaked host-local reservations older than --grace-period
// (never the gateway, the host endpoint's or the source VIP's) and changes nothing else.
// No upstream (flannel, Calico, Antrea) ships a node self-test; the rows follow docs/troubleshooting.md.
import { join } from 'node:path';
import * as nodeFs from 'node:fs';
import pinned from '../cni-plugins/pinned.json' with { type: 'json' };
import { systemClock } from '../basics/clock.js';
import type { FlagSpec } from '../config/flags.js';
import type { AgentConfig } from '../config/agent-config.js';
import { FlagError, errorMessage } from '../basics/errors.js';
import { agentLockPath, readLockHolder } from '../host/agent-lock.js';
import { hostEndpointAddress } from '../backends/hostgw/backend.js';
import { reservationOwner } from '../backends/ipam-reservation.js';
import { normalizeCidr, nthAddress } from '../basics/ip4.js';
import { silentLogger } from '../basics/log.js';
import { Metrics } from '../basics/metrics.js';
import { terminalJson, terminalText as t } from '../basics/terminal-text.js';
import { VERSION } from '../basics/version.js';
import type { Command, CommandIO } from './command.js';
import { commandUsage, parseCommandArgs, reportError } from './cni-flags.js';
import { DEFAULT_SERVICE_CIDR } from './cni-config.js';
import { exitCodeOf, isErr, leakedReservations, runChecks, type CheckRow, type DoctorFacts } from './doctor-checks.js';
import { gatherFacts, type DoctorFs, type GatherOptions } from './doctor-gather.js';
import { agentStatusUrls, isStatusReport, readStatus } from './status.js';

/** containerd's CNI directories on Windows (containerd config.toml `conf_dir`, `bin_dir`; sig-windows-tools). */
const WINDOWS_CNI_CONF_DIR = 'C:\\etc\\cni\\net.d';
const WINDOWS_CNI_BIN_DIR = 'C:\\opt\\cni\\bin';
/** A reservation younger than this may be a pod being set up (host-local writes it before HNS has the endpoint). */
const DEFAULT_GRACE_SECONDS = 600;
/** How long doctor waits for the agent's /status. */
const STATUS_TIMEOUT_MS = 3_000;

const DOCTOR_FLAGS: readonly FlagSpec[] = [
  { name: 'json', kind: 'bool', default: false, help: 'print the rows as JSON (for support bundles)' },
  { name: 'fix', kind: 'bool', default: false, help: 'free leaked host-local reservations older than --grace-period (nothing else)' },
  { name: 'grace-period', kind: 'int', default: DEFAULT_GRACE_SECONDS, help: 'with --fix: the age in seconds a leaked reservation must have', valueName: 'SECONDS' },
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
export function reservationsToFree(f: DoctorFacts, graceMs: number): { ip: string; owner: string; ageMs: number }[] {
  if (isErr(f.networks) || !f.lease || !f.ipam.dir || isErr(f.netConf)) return [];
  const conf = f.netConf;
  if (!f.networks.some((n) => n.name === conf.name)) return []; // without the network every reservation looks leaked
  const keep = new Set([nthAddress(f.lease.subnet, 1)]);
  if (conf.type === 'host-gw') keep.add(hostEndpointAddress(f.lease.subnet));
  for (const x of f.sourceVipFiles) if (x.ip) keep.add(x.ip);
  if (f.agent.status?.sourceVip) keep.add(f.agent.status.sourceVip);
  return leakedReservations(f).filter((r) => r.ageMs >= graceMs && !keep.has(r.ip));
}

/**
 * Remove the files reservationsToFree names; returns what was freed. Each is read again just before: one
 * rewritten since it was gathered (a pod deleted and another given the address) is kept.
 */
export function freeReservations(f: DoctorFacts, graceMs: number, fs: Pick<DoctorFs, 'rmSync' | 'statSync' | 'readFileSync'>, now: number): FreedReservation[] {
  const freed: FreedReservation[] = [];
  for (const r of reservationsToFree(f, graceMs)) {
    const path = join(f.ipam.dir, r.ip);
    try {
      if (reservationOwner(fs, path) !== r.owner || now - fs.statSync(path).mtimeMs < graceMs) continue;
    } catch {
      continue; // gone already
    }
    fs.rmSync(path, { force: true });
    freed.push({ path, ip: r.ip, owner: r.owner, ageSeconds: Math.round(r.ageMs / 1000) });
  }
  return freed;
}

const MARK: Record<CheckRow['status'], string> = { ok: 'ok', warn: 'WARN', fail: 'FAIL', skip: 'skip' };

/** The table doctor prints, every value escaped for the terminal. Pure. */
export function renderDoctorTable(rows: readonly CheckRow[], freed: readonly FreedReservation[] = [], fixed = freed.length > 0): string {
  const width = Math.max(...rows.map((r) => r.id.length)) + 2;
  const lines = rows.map((r) => `${MARK[r.status].padEnd(6)}${r.id.padEnd(width)}${t(r.saw)}${r.fix ? `\n${' '.repeat(6 + width)}fix: ${t(r.fix)}` : ''}`);
  for (const x of freed) lines.push(`freed ${t(x.path)} (${t(x.owner || 'empty')}, ${x.ageSeconds} s old)`);
  if (fixed && freed.length === 0) lines.push('--fix: no leaked reservation old enough to free');
  const fails = rows.filter((r) => r.status === 'fail');
  lines.push(fails.length ? `${fails.length} check(s) failed: ${fails.map((r) => r.id).join(', ')}` : 'all checks passed');
  return lines.join('\n') + '\n';
}

/**
 * Where containerd's CNI directories are: the agent's --cni-conf-dir / --cni-bin-dir (shared with its
 * readiness check), else containerd's defaults (on Windows the flags' own defaults).
 */
function cniDirs(config: Pick<AgentConfig, 'cniConfDir' | 'cniBinDir'>, platform: NodeJS.Platform): { confDir: string; binDir: string } {
  const win = platform === 'win32';
  return {
    confDir: config.cniConfDir || (win ? WINDOWS_CNI_CONF_DIR : '/etc/cni/net.d'),
    binDir: config.cniBinDir || (win ? WINDOWS_CNI_BIN_DIR : '/opt/cni/bin'),
  };
}

async function agentStatus(config: AgentConfig, statusUrl: string): Promise<GatherOptions['status']> {
  const running = readLockHolder(agentLockPath(config.subnetFile)) !== undefined;
  if (!statusUrl && config.healthzPort === 0 && !running) return { error: 'no agent holds the node lock' };
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
      return { report, url };
    } catch (err) {
      error = errorMessage((err as { cause?: unknown }).cause ?? err);
    }
  }
  return { error, url: urls[0] };
}

async function kubeAccess(config: AgentConfig, noCluster: boolean): Promise<GatherOptions['kube']> {
  if (noCluster) return { error: '--no-cluster' };
  if (!config.kubeconfigFile && !config.kubeApiUrl && !config.inClusterEnv.KUBERNETES_SERVICE_HOST) return { error: 'no --kubeconfig-file, --kube-api-url or in-cluster config' };
  try {
    const { buildKubeConfig } = await import('../subnet/kube/client.js');
    const { KubeHttp } = await import('../subnet/kube/http.js');
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
      const { confDir, binDir } = cniDirs(config, io.platform);
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
        pinnedSha256: pinned.releases.map((r) => r.sha256),
        graceMs: grace * 1000,
        clock: systemClock,
        platform: io.platform,
      };
      let facts = await gatherFacts(opts);
      let freed: FreedReservation[] = [];
      if (parsed.own.get('fix') === true) {
        freed = freeReservations(facts, grace * 1000, nodeFs, systemClock.now());
        if (freed.length) facts = await gatherFacts(opts);
      }
      const rows = runChecks(facts);
      if (parsed.own.get('json') === true) {
        io.stdout(terminalJson({ version: VERSION, node: config.nodeName ?? null, ok: exitCodeOf(rows) === 0, checks: rows, freed }) + '\n');
      } else {
        io.stdout(renderDoctorTable(rows, freed, parsed.own.get('fix') === true));
      }
      return exitCodeOf(rows);
    } catch (err) {
      return reportError(program, err, io);
    }
  },
};

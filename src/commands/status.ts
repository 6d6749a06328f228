// `flanneld status`: ask the running agent (GET /status on its health port) and print what it holds:
// lease, network, MTU, peers desired / programmed / rejected, the last pass and error, the start kind and
// the source VIP. Exit code 0 when the dataplane is in sync, 1 otherwise (also when the agent cannot be
// reached), 2 for bad flags, so scripts can wait on it. Calico's `calicoctl node status` is the model;
// upstream flannel has nothing like it.
import { networkInterfaces } from 'node:os';
import type { FlagSpec } from '../config/flags.js';
import { FlagError, errorMessage } from '../errors.js';
import type { StatusReport } from '../health/status.js';
import type { Command, CommandIO } from './command.js';
import { commandUsage, parseCommandArgs, reportError } from './cni-flags.js';

/** The health port start.ps1 and the DaemonSet give the agent, used when --healthz-port is not set. */
export const DEFAULT_STATUS_PORT = 10277;
const TIMEOUT_MS = 10_000;

export const STATUS_FLAGS: readonly FlagSpec[] = [
  { name: 'output', kind: 'string', default: 'table', help: 'table or json', valueName: 'FORMAT', aliases: ['o'] },
  {
    name: 'url',
    kind: 'string',
    default: '',
    help: `the agent's status URL; default http://<--healthz-ip, 127.0.0.1 for 0.0.0.0>:<--healthz-port, else ${DEFAULT_STATUS_PORT}>/status`,
    valueName: 'URL',
  },
];

/**
 * Where the agent started with these flags answers. Without a --healthz-ip (or with 0.0.0.0) the agent may
 * listen on every address (loopback answers) or, as in the DaemonSet, on the node IP: try loopback first,
 * then this host's own IPv4 addresses.
 */
export function statusUrls(healthzIP: string, healthzPort: number, ifaces: ReturnType<typeof networkInterfaces> = networkInterfaces()): string[] {
  const port = healthzPort > 0 ? healthzPort : DEFAULT_STATUS_PORT;
  const hosts =
    healthzIP === '' || healthzIP === '0.0.0.0'
      ? ['127.0.0.1', ...Object.values(ifaces).flatMap((list) => (list ?? []).filter((a) => a.family === 'IPv4' && !a.internal).map((a) => a.address))]
      : [healthzIP];
  return [...new Set(hosts)].map((h) => `http://${h.includes(':') ? `[${h}]` : h}:${port}/status`);
}

/** The table `flanneld status` prints. Pure. */
export function renderStatusTable(s: StatusReport): string {
  const rows: [string, string][] = [];
  const net = s.network;
  rows.push(['Dataplane', s.inSync ? 'in sync' : `NOT in sync (phase ${s.phase}${s.ready ? '' : ', subnet.env not written yet'})`]);
  rows.push(['Lease', s.lease ? `${s.lease.subnet} (public IP ${s.lease.publicIP})` : 'none yet']);
  rows.push([
    'Network',
    !net
      ? 'none yet'
      : net.present
        ? `${net.name} (${net.type ?? '?'}), ID ${net.id ?? '?'}, adapter ${net.adapter ?? '?'}`
        : `${net.name}: MISSING from HNS${net.error ? ` (${net.error})` : ''}`,
  ]);
  rows.push(['MTU', s.mtu === null ? '-' : String(s.mtu)]);
  const refusals = s.peers.refusals ?? []; // absent from an older agent's report
  rows.push(['Peers', `${s.peers.desired} desired, ${s.peers.programmed} programmed, ${s.peers.rejected} rejected, ${refusals.length} refused`]);
  for (const r of s.peers.rejections) rows.push(['  rejected', `${r.key} ${r.subnet} via ${r.publicIP}: ${r.reason} (${r.message})`]);
  for (const r of refusals) {
    const answer = r.hresult.startsWith('0x') ? `HRESULT ${r.hresult}` : r.hresult;
    rows.push(['  refused', `${r.node ?? '?'} ${r.prefix}: ${answer} since ${r.since}, ${r.attempts} tries (${r.error})`]);
  }
  rows.push(['Last pass', s.lastPass ? `${s.lastPass.at} ${s.lastPass.ok ? 'ok' : 'failed'}` : 'none yet']);
  rows.push(['Last success', s.lastSuccess ?? 'none yet']);
  rows.push(['Last error', s.lastError ? `${s.lastError.at} ${s.lastError.message}` : 'none']);
  rows.push(['Start', s.startKind ?? 'unknown (no boot record)']);
  rows.push(['Source VIP', s.sourceVip ?? '-']);
  rows.push(['Version', s.version]);
  const width = Math.max(...rows.map(([k]) => k.length)) + 2;
  return rows.map(([k, v]) => `${k.padEnd(width)}${v}`).join('\n') + '\n';
}

function isStatusReport(v: unknown): v is StatusReport {
  const o = v as Partial<StatusReport> | null;
  return typeof o === 'object' && o !== null && typeof o.inSync === 'boolean' && typeof o.peers === 'object' && o.peers !== null;
}

export const command: Command = {
  summary: "ask the running agent for this node's lease, network, peers and last errors (exit 0 when in sync)",
  async run(args: string[], io: CommandIO): Promise<number> {
    const program = 'flanneld status';
    try {
      const parsed = parseCommandArgs(args, STATUS_FLAGS, io, { usesDataplane: false });
      if (parsed.kind === 'help') {
        io.stdout(commandUsage(program, this.summary, STATUS_FLAGS));
        return 0;
      }
      const output = String(parsed.own.get('output'));
      if (output !== 'table' && output !== 'json') throw new FlagError(`invalid value "${output}" for flag -output: use table or json`, { flag: 'output', value: output });
      const flagUrl = String(parsed.own.get('url') ?? '');
      const urls = flagUrl ? [flagUrl] : statusUrls(parsed.config.healthzIP, parsed.config.healthzPort);
      let res: Response | undefined;
      let url = urls[0];
      let failure: unknown;
      for (const candidate of urls) {
        try {
          res = await fetch(candidate, { signal: AbortSignal.timeout(TIMEOUT_MS) });
          url = candidate;
          break;
        } catch (err) {
          failure ??= (err as { cause?: unknown }).cause ?? err;
        }
      }
      if (!res) {
        const where = urls.length > 1 ? `${urls[0]} (nor on this host's other addresses)` : url;
        io.stderr(
          `${program}: cannot reach the agent at ${where}: ${errorMessage(failure)}; is flanneld running with --healthz-port (pass the same --healthz-ip/--healthz-port, or --url)?\n`,
        );
        return 1;
      }
      const text = await res.text();
      if (res.status !== 200) {
        io.stderr(`${program}: ${url} answered ${res.status}: ${text.trim()}\n`);
        return 1;
      }
      let report: unknown;
      try {
        report = JSON.parse(text);
      } catch {
        report = undefined;
      }
      if (!isStatusReport(report)) {
        io.stderr(`${program}: ${url} did not answer with a flanneld status document; is --url the agent's health port?\n`);
        return 1;
      }
      io.stdout(output === 'json' ? JSON.stringify(report, null, 2) + '\n' : renderStatusTable(report));
      return report.inSync ? 0 : 1;
    } catch (err) {
      return reportError(program, err, io);
    }
  },
};

// `flanneld status`: ask the running agent (GET /status on its health port) and print what it holds:
// lease, network, MTU, peers desired / programmed / rejected, the last pass and error, the start kind and
// the source VIP. Exit code 0 when the dataplane is in sync, 1 otherwise (also when the agent cannot be
// reached), 2 for bad flags, so scripts can wait on it. Calico's `calicoctl node status` is the model;
// upstream flannel has nothing like it.
//
// What answers on the port is not trusted: the answer is read under a size cap and a deadline (each
// candidate URL has STATUS_TIMEOUT_MS for headers and body; FLANNEL_ERR_STATUS_TOO_LARGE,
// FLANNEL_ERR_STATUS_TIMEOUT), and every value printed is escaped for the terminal (../basics/terminal-text.ts).
// docs/bounds.md says why each number.
import { get as httpGet, type ClientRequest } from 'node:http';
import { networkInterfaces } from 'node:os';
import { abortReason, systemClock, type Clock } from '../basics/clock.js';
import type { AgentConfig } from '../config/agent-config.js';
import type { FlagSpec } from '../config/flags.js';
import { FlagError, StatusError, errorMessage } from '../basics/errors.js';
import type { StatusReport } from '../health/status.js';
import type { Command, CommandIO } from './command.js';
import { commandUsage, parseCommandArgs, reportError } from './cni-flags.js';
import { terminalJson, terminalText as t } from '../basics/terminal-text.js';

/** The health port start.ps1 and the DaemonSet give the agent, used when --healthz-port is not set. */
export const DEFAULT_STATUS_PORT = 10277;
/** The whole exchange with one candidate URL, headers and body. */
export const STATUS_TIMEOUT_MS = 10_000;
/** The largest /status answer read. */
export const MAX_STATUS_BYTES = 8 * 1024 * 1024;
/** What is shown of a non-200 answer. */
const MAX_ERROR_TEXT = 500;

const STATUS_FLAGS: readonly FlagSpec[] = [
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

/** Where to ask: `url` alone when given (status's --url, doctor's --status-url), else statusUrls of the agent's health flags. */
export function agentStatusUrls(url: string, config: Pick<AgentConfig, 'healthzIP' | 'healthzPort'>): string[] {
  return url ? [url] : statusUrls(config.healthzIP, config.healthzPort);
}

/** The table `flanneld status` prints, every value escaped for the terminal. Pure. */
export function renderStatusTable(s: StatusReport): string {
  const rows: [string, string][] = [];
  const net = s.network;
  const cni: unknown = s.cni; // absent from an older agent's report
  const cniProblems = typeof cni === 'object' && cni !== null && Array.isArray((cni as { problems?: unknown }).problems) ? (cni as NonNullable<StatusReport['cni']>).problems : [];
  const ownNode: unknown = s.ownNode; // absent unless the own Node is gone
  const gone = typeof ownNode === 'object' && ownNode !== null ? (ownNode as NonNullable<StatusReport['ownNode']>) : undefined;
  const mismatchValue: unknown = s.clusterMismatch; // absent unless this node rejects every peer for the cluster's configuration
  const mismatch = typeof mismatchValue === 'object' && mismatchValue !== null ? (mismatchValue as NonNullable<StatusReport['clusterMismatch']>) : undefined;
  const notReady = s.ready ? '' : mismatch ? ', reaches no peer: see Cluster' : cniProblems.length > 0 ? ', pods cannot start: see CNI' : ', subnet.env not written yet';
  const contested = gone?.state === 'contested';
  rows.push(['Dataplane', s.inSync ? 'in sync' : `NOT in sync (phase ${t(s.phase)}${notReady}${gone ? (contested ? ', own podCIDR contested' : ', own Node deleted') : ''})`]);
  if (contested) rows.push(['Own Node', `CONTESTED: ${t(gone.reason)}`]);
  else if (gone) rows.push(['Own Node', `DELETED: ${t(gone.reason)}; the dataplane is kept, not ready until the Node is registered again`]);
  if (mismatch) {
    rows.push(['Cluster', `MISMATCH (${t(mismatch.reason)}): ${t(mismatch.detail)}`]);
    rows.push(['  fix', t(mismatch.fix)]);
  }
  rows.push(['Lease', s.lease ? `${t(s.lease.subnet)} (public IP ${t(s.lease.publicIP)})` : 'none yet']);
  rows.push([
    'Network',
    !net
      ? 'none yet'
      : net.present
        ? `${t(net.name)} (${t(net.type ?? '?')}), ID ${t(net.id ?? '?')}, adapter ${t(net.adapter ?? '?')}`
        : `${t(net.name)}: MISSING from HNS${net.error ? ` (${t(net.error)})` : ''}`,
  ]);
  rows.push(['MTU', s.mtu === null ? '-' : t(s.mtu)]);
  const rejections: unknown = s.peers.rejections;
  const refusals: unknown = s.peers.refusals; // absent from an older agent's report
  const refused = Array.isArray(refusals) ? (refusals as StatusReport['peers']['refusals']) : [];
  rows.push(['Peers', `${t(s.peers.desired)} desired, ${t(s.peers.programmed)} programmed, ${t(s.peers.rejected)} rejected, ${refused.length} refused`]);
  for (const r of Array.isArray(rejections) ? (rejections as StatusReport['peers']['rejections']) : []) {
    // An IPv6 half alone: the peer is routed over IPv4.
    const what = r?.family === 'ipv6' ? '  rejected IPv6' : '  rejected';
    rows.push([what, `${t(r?.key)} ${t(r?.subnet)} via ${t(r?.publicIP)}: ${t(r?.reason)} (${t(r?.message)})`]);
  }
  for (const r of refused) {
    const hresult = t(r?.hresult);
    const answer = hresult.startsWith('0x') ? `HRESULT ${hresult}` : hresult;
    rows.push(['  refused', `${t(r?.node ?? '?')} ${t(r?.prefix)}: ${answer} since ${t(r?.since)}, ${t(r?.attempts)} tries (${t(r?.error)})`]);
  }
  if (typeof cni === 'object' && cni !== null) {
    const c = cni as NonNullable<StatusReport['cni']>;
    rows.push(['CNI', cniProblems.length === 0 ? `ok (${t(c.confDir)})` : `NOT ready: ${cniProblems.length} problem${cniProblems.length > 1 ? 's' : ''} in ${t(c.confDir)}`]);
    for (const p of cniProblems) {
      rows.push([`  ${t(p?.check)}`, t(p?.detail)]);
      rows.push(['    fix', t(p?.fix)]);
    }
  }
  const dual: unknown = s.dualStack; // absent on an IPv4-only node and from an older agent
  if (typeof dual === 'object' && dual !== null) {
    const d = dual as NonNullable<StatusReport['dualStack']>;
    rows.push(['IPv6 lease', `${t(d.ipv6Subnet)} (public IPv6 ${t(d.publicIPv6)})`]);
    rows.push(['kubelet', (Array.isArray(d.kubelet) ? d.kubelet : []).map(t).join(' ')]);
    rows.push(['kube-proxy', (Array.isArray(d.kubeProxy) ? d.kubeProxy : []).map(t).join(' ')]);
    for (const w of Array.isArray(d.warnings) ? d.warnings : []) rows.push(['  WARNING', t(w)]);
  }
  rows.push(['Last pass', s.lastPass ? `${t(s.lastPass.at)} ${s.lastPass.ok ? 'ok' : 'failed'}` : 'none yet']);
  rows.push(['Last success', s.lastSuccess ? t(s.lastSuccess) : 'none yet']);
  rows.push(['Last error', s.lastError ? `${t(s.lastError.at)} ${t(s.lastError.message)}` : 'none']);
  rows.push(['Start', s.startKind ? t(s.startKind) : 'unknown (no boot record)']);
  rows.push(['Source VIP', s.sourceVip ? t(s.sourceVip) : '-']);
  const hns: unknown = s.hns; // absent from an older agent's report
  if (typeof hns === 'object' && hns !== null) {
    const h = hns as NonNullable<StatusReport['hns']>;
    rows.push(['HNS', `${t(h.version)} (${(Array.isArray(h.features) ? h.features : []).map(t).join(', ')})`]);
  } else rows.push(['HNS', 'version unknown']);
  rows.push(['Version', t(s.version)]);
  const width = Math.max(...rows.map(([k]) => k.length)) + 2;
  return rows.map(([k, v]) => `${k.padEnd(width)}${v}`).join('\n') + '\n';
}

/** One answer of the status port, read whole under the bounds. */
export interface StatusAnswer {
  status: number;
  text: string;
}

/**
 * GET `url` and read its answer, at most `maxBytes`, all within `timeoutMs` on `clock`. Rejects with
 * FLANNEL_ERR_STATUS_TOO_LARGE, FLANNEL_ERR_STATUS_TIMEOUT, or the network error (not reachable).
 * Through node:http, not fetch: under Wine, Node 22's fetch (undici) fails every connect with
 * `connect UNKNOWN 127.0.0.1:PORT` where node:http to the same URL answers (test/windows/agent.test.ts runs
 * `status` there). A redirect is an answer like any other non-200 (never followed).
 */
export async function readStatus(url: string, o: { clock?: Clock; timeoutMs?: number; maxBytes?: number } = {}): Promise<StatusAnswer> {
  const clock = o.clock ?? systemClock;
  const timeoutMs = o.timeoutMs ?? STATUS_TIMEOUT_MS;
  const maxBytes = o.maxBytes ?? MAX_STATUS_BYTES;
  const ctrl = new AbortController();
  const timer = new AbortController();
  let received = 0;
  clock.sleep(timeoutMs, timer.signal).then(
    () =>
      ctrl.abort(
        new StatusError('FLANNEL_ERR_STATUS_TIMEOUT', `${url} did not answer in full within ${timeoutMs} ms (${received} bytes received); is it the agent's health port?`, {
          url,
          timeoutMs,
          received,
        }),
      ),
    () => undefined,
  );
  const tooLarge = () =>
    new StatusError('FLANNEL_ERR_STATUS_TOO_LARGE', `${url} answered with more than ${maxBytes} bytes, more than any agent's status; is it the agent's health port?`, {
      url,
      maxBytes,
      received,
    });
  try {
    return await new Promise<StatusAnswer>((resolve, reject) => {
      let req: ClientRequest;
      try {
        req = httpGet(url, { signal: ctrl.signal });
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)));
        return;
      }
      req.on('error', reject);
      ctrl.signal.addEventListener('abort', () => reject(abortReason(ctrl.signal)), { once: true });
      req.on('response', (res) => {
        const length = Number(res.headers['content-length'] ?? 0);
        if (length > maxBytes) {
          ctrl.abort(tooLarge());
          return;
        }
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => {
          if (received + chunk.length > maxBytes) {
            ctrl.abort(tooLarge());
            return;
          }
          received += chunk.length;
          chunks.push(chunk);
        });
        res.on('error', reject);
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      });
    });
  } catch (err) {
    if (ctrl.signal.aborted) throw abortReason(ctrl.signal);
    throw err;
  } finally {
    timer.abort();
  }
}

/** Whether `v` (an answer's JSON) is a flanneld status document: the fields every agent's report has. */
export function isStatusReport(v: unknown): v is StatusReport {
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
      if (output !== 'table' && output !== 'json')
        throw new FlagError('FLANNEL_ERR_FLAG', `invalid value "${output}" for flag -output: use table or json`, { flag: 'output', value: output });
      const flagUrl = String(parsed.own.get('url') ?? '');
      const urls = agentStatusUrls(flagUrl, parsed.config);
      let res: StatusAnswer | undefined;
      let url = urls[0];
      let failure: unknown;
      for (const candidate of urls) {
        try {
          res = await readStatus(candidate);
          url = candidate;
          break;
        } catch (err) {
          if (err instanceof StatusError) throw err; // it answered, badly: do not try the next address
          failure ??= (err as { cause?: unknown }).cause ?? err;
        }
      }
      if (!res) {
        const where = urls.length > 1 ? `${urls[0]} (nor on this host's other addresses)` : url;
        io.stderr(
          `${program}: cannot reach the agent at ${t(where)}: ${t(errorMessage(failure))}; is flanneld running with --healthz-port (pass the same --healthz-ip/--healthz-port, or --url)?\n`,
        );
        return 1;
      }
      const text = res.text;
      if (res.status !== 200) {
        io.stderr(`${program}: ${t(url)} answered ${res.status}: ${t(text.trim().slice(0, MAX_ERROR_TEXT))}\n`);
        return 1;
      }
      let report: unknown;
      try {
        report = JSON.parse(text);
      } catch {
        report = undefined;
      }
      if (!isStatusReport(report)) {
        io.stderr(`${program}: ${t(url)} did not answer with a flanneld status document; is --url the agent's health port?\n`);
        return 1;
      }
      io.stdout(output === 'json' ? terminalJson(report) + '\n' : renderStatusTable(report));
      return report.inSync ? 0 : 1;
    } catch (err) {
      if (err instanceof StatusError) {
        io.stderr(`${program}: ${t(err.message)} [${err.code}]\n`);
        return 1;
      }
      return reportError(program, err, io);
    }
  },
};

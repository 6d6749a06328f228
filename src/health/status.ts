// `/status` on the health port: the agent's own account of this node as JSON, read by `flanneld status`.
// Upstream flannel has no such endpoint; Calico's `calicoctl node status` plays the same part. It is
// answered to clients on this host only (loopback, or the listener's own address when the port is bound
// to the node IP): it names the node's addresses and errors, which are no business of other machines.
import type { NetpolStatus } from '../policy/controller.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorMessage } from '../basics/errors.js';
import type { Logger } from '../basics/log.js';
import type { StartKind } from '../host/boot.js';
import type { NetworkStatus, RefusedItem, RejectedLease } from '../network-status.js';
import type { DualStackGuidance } from './dual-stack.js';
import { formatHnsVersion, supportedFeatures } from '../hns/features.js';
import type { HnsVersion } from '../hns/schema.js';

/** One problem of the CNI config check (src/cni/readiness.ts CniProblem): a stable id, what, the fix. */
export interface CniProblem {
  check: string;
  detail: string;
  fix: string;
}

export interface StatusReport {
  version: string;
  /** starting | registering | running | stopped */
  phase: string;
  /** subnet.env is written, a pod can start (no CNI readiness problem) and reaches peers (no cluster mismatch): what /readyz answers. */
  ready: boolean;
  /** Ready, the network exists, the last pass succeeded and every desired peer is programmed. */
  inSync: boolean;
  /** The CNI config check (--cni-conf-dir): null when it is off; `problems` empty when a pod can start. */
  cni: { confDir: string; binDir: string; problems: CniProblem[] } | null;
  startKind: StartKind | null;
  lease: { subnet: string; publicIP: string } | null;
  network: { name: string; present: boolean; type: string | null; id: string | null; adapter: string | null; error?: string } | null;
  mtu: number | null;
  sourceVip: string | null;
  peers: { desired: number; programmed: number; rejected: number; rejections: RejectedLease[]; refused: number; refusals: RefusedPeer[] };
  lastPass: { at: string; ok: boolean } | null;
  lastSuccess: string | null;
  lastError: { at: string; message: string } | null;
  /** Dual-stack only (absent on an IPv4-only node): the IPv6 lease and the kubelet / kube-proxy settings it needs. */
  dualStack?: { ipv6Subnet: string; publicIPv6: string } & DualStackGuidance;
  /** --network-policy: the controller's view (src/policy/controller.ts NetpolStatus): per local pod the policies selecting it, refusals. */
  networkPolicy?: NetpolStatus;
  /**
   * Only while the own Node (kube) is gone from the API server, or registered again with a podCIDR an
   * older peer holds (`contested`: the old network is kept): why the agent is not ready.
   */
  ownNode?: { state: 'deleted' | 'contested'; reason: string };
  /** Only while this node rejects every peer for a cluster-configuration mismatch (it reaches none): why, and the fix. */
  clusterMismatch?: ClusterMismatchReport;
  /** The version HNS reported at start and the features it enables (src/hns/features.ts); null when it was not readable. */
  hns?: { version: string; features: string[] } | null;
}

/** The cluster mismatch (src/peers/cluster-mismatch.ts): the NetworkUnavailable reason, what was seen, the fix. */
export interface ClusterMismatchReport {
  reason: string;
  detail: string;
  fix: string;
}

/** A peer route or policy the dataplane refuses now: the peer, its prefix, the HRESULT (or route status). */
export interface RefusedPeer {
  node: string | null;
  prefix: string;
  hresult: string;
  error: string;
  since: string;
  attempts: number;
}

/** What the agent knows, gathered at request time (the HNS network is read then). */
export interface StatusInput {
  version: string;
  phase: string;
  ready: boolean;
  startKind: StartKind | undefined;
  lease: { subnet: string; publicIP: string } | undefined;
  networkName: string | undefined;
  /** The HNS network by that name: undefined = not found; an Error = the lookup failed. */
  hnsNetwork: { id: string | undefined; type: string; adapter: string | undefined } | undefined | Error;
  mtu: number | undefined;
  sourceVip: string | undefined;
  network: NetworkStatus | undefined;
  /** The CNI config check, when it is on. */
  cni?: { confDir: string; binDir: string; problems: CniProblem[] };
  dualStack?: StatusReport['dualStack'];
  networkPolicy?: NetpolStatus;
  /** Why the own Node is missing, while it is. */
  ownNodeGone?: string;
  /** Why the own Node's new podCIDR is not taken (an older peer holds it), with the fix, while it is not. */
  ownSubnetContested?: string;
  /** The cluster mismatch, while there is one. */
  clusterMismatch?: ClusterMismatchReport | undefined;
  /** The version HNS reported at start, when it was readable. */
  hnsVersion?: HnsVersion | undefined;
}

const iso = (ms: number | undefined): string | null => (ms === undefined ? null : new Date(ms).toISOString());

function refusedPeer(r: RefusedItem): RefusedPeer {
  return { node: r.node ?? null, prefix: r.prefix, hresult: r.answer, error: r.error, since: iso(r.since)!, attempts: r.attempts };
}

/**
 * The last error: the last failed pass's, or, while the dataplane refuses a peer and that refusal is
 * newer, the latest refusal (a pass that wrote every other peer is no failure, but the node is not fine).
 */
function lastError(failed: { at: number; message: string } | undefined, refused: RefusedItem[]): StatusReport['lastError'] {
  const latest = refused.reduce<RefusedItem | undefined>((a, r) => (a === undefined || r.since > a.since ? r : a), undefined);
  if (latest && (failed === undefined || latest.since >= failed.at)) {
    const more = refused.length > 1 ? ` (and ${refused.length - 1} more refused)` : '';
    return { at: iso(latest.since)!, message: `peer ${latest.node ?? '?'} ${latest.prefix} refused with ${latest.answer}: ${latest.error}${more}` };
  }
  return failed ? { at: iso(failed.at)!, message: failed.message } : null;
}

/** Pure: the report for one moment. */
export function buildStatusReport(s: StatusInput): StatusReport {
  const n = s.network;
  const hns = s.hnsNetwork;
  const present = hns !== undefined && !(hns instanceof Error);
  const network = s.networkName
    ? {
        name: s.networkName,
        present,
        type: present ? hns.type : null,
        id: present ? (hns.id ?? null) : null,
        adapter: present ? (hns.adapter ?? null) : null,
        ...(hns instanceof Error ? { error: hns.message } : {}),
      }
    : null;
  const refused = n?.refusedItems ?? [];
  const podsServed = (s.cni?.problems.length ?? 0) === 0 && s.clusterMismatch === undefined;
  const inSync =
    s.ready && podsServed && s.ownNodeGone === undefined && s.ownSubnetContested === undefined && present && n !== undefined && n.inSync && n.peersProgrammed === n.peersDesired;
  return {
    version: s.version,
    phase: s.phase,
    ready: s.ready && podsServed,
    inSync,
    cni: s.cni ?? null,
    startKind: s.startKind ?? null,
    lease: s.lease ?? null,
    network,
    mtu: s.mtu ?? null,
    sourceVip: s.sourceVip ?? null,
    peers: {
      desired: n?.peersDesired ?? 0,
      programmed: n?.peersProgrammed ?? 0,
      rejected: n?.rejections.length ?? 0,
      rejections: n?.rejections ?? [],
      refused: refused.length,
      refusals: refused.map(refusedPeer),
    },
    lastPass: n?.lastPassAt === undefined ? null : { at: iso(n.lastPassAt)!, ok: n.lastPassOk === true },
    lastSuccess: iso(n?.lastSuccessAt),
    lastError: lastError(n?.lastError, refused),
    hns: s.hnsVersion ? { version: formatHnsVersion(s.hnsVersion), features: supportedFeatures(s.hnsVersion) } : null,
    ...(s.dualStack ? { dualStack: s.dualStack } : {}),
    ...(s.networkPolicy ? { networkPolicy: s.networkPolicy } : {}),
    ...(s.ownNodeGone !== undefined ? { ownNode: { state: 'deleted' as const, reason: s.ownNodeGone } } : {}),
    ...(s.ownSubnetContested !== undefined ? { ownNode: { state: 'contested' as const, reason: s.ownSubnetContested } } : {}),
    ...(s.clusterMismatch ? { clusterMismatch: { reason: s.clusterMismatch.reason, detail: s.clusterMismatch.detail, fix: s.clusterMismatch.fix } } : {}),
  };
}

const LOOPBACK = /^(127\.|::1$|::ffff:127\.)/;

/** A client on this host: loopback, or the same address the server listens on. */
export function isLocalRequest(req: IncomingMessage): boolean {
  const remote = req.socket.remoteAddress ?? '';
  return LOOPBACK.test(remote) || (remote !== '' && remote === req.socket.localAddress);
}

/** Answer GET /status: 403 for other hosts, 503 without a status source, 500 when it fails, else the JSON. */
export async function serveStatus(
  req: IncomingMessage,
  res: ServerResponse,
  opts: { source: (() => Promise<StatusReport>) | undefined; head: boolean; log: Logger },
): Promise<void> {
  let status = 200;
  let body: string;
  if (!isLocalRequest(req)) {
    [status, body] = [403, 'flanneld status is served to clients on this host only\n'];
  } else if (!opts.source) {
    [status, body] = [503, 'flanneld status is not available\n'];
  } else {
    try {
      body = JSON.stringify(await opts.source());
    } catch (err) {
      opts.log.error('status handler failed', { error: errorMessage(err) });
      [status, body] = [500, 'internal error\n'];
    }
  }
  if (res.destroyed) return;
  res.writeHead(status, { 'Content-Type': status === 200 ? 'application/json' : 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
  res.end(opts.head ? undefined : body);
}

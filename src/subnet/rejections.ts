// What the peer store (src/reconcile/peer-store.ts) remembers about rejected peer leases, bounded whatever a peer does: at most one
// remembered rejection per node (the latest), log lines rate-limited to one per node and reason per
// interval (the next line carries how many were held back), and everything about a node forgotten once
// it is deleted. No upstream counterpart: flannel pkg/lease/watch.go accepts every lease.
import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import { METRIC } from '../metrics.js';
import type { Metrics } from '../metrics.js';
import type { Logger } from '../log.js';
import { LEASE_REJECT_REASONS, type LeaseRejectReason } from '../lease-reject-reasons.js';

interface LineState {
  at: number;
  held: number;
}

/**
 * The most characters of a rejection's message kept per node (the log line and the Event carry the
 * whole message once, when it is new); with the signature kept as a digest, what one rejected node
 * costs is bounded whatever its lease holds, so thousands of rejected peers stay small.
 */
export const MAX_KEPT_MESSAGE = 512;

/** A fixed-size digest of a rejection's signature (what was rejected can be a kilobyte of backend-data). */
function digest(sig: string): string {
  return createHash('sha256').update(sig).digest('base64');
}

interface NodeRejection {
  /** Digest of the latest rejection (reason and what was rejected); '' once the node's lease is accepted. */
  sig: string;
  reason: LeaseRejectReason | '';
  message: string;
  /** Last log line per reason (bounded by the number of reasons). */
  lines: Map<LeaseRejectReason, LineState>;
}

export interface Rejection {
  node: string;
  reason: LeaseRejectReason;
  /** What was rejected (content of the lease, the other node): a new one is counted and may be logged. */
  sig: string;
  message: string;
  fields: Record<string, unknown>;
}

export class RejectionLog {
  private readonly byNode = new Map<string, NodeRejection>();

  constructor(
    private readonly log: Logger,
    private readonly metrics: Metrics | undefined,
    private readonly clock: Clock,
    private readonly intervalMs: number,
  ) {
    // One series per reason from the start, so a rate() or an alert on it works before the first rejection.
    metrics?.declare(METRIC.leasesRejected, 'reason', LEASE_REJECT_REASONS);
  }

  /** Nodes with remembered state (at most one entry per node). */
  get size(): number {
    return this.byNode.size;
  }

  /** Characters kept for all nodes (signatures and messages): what the bound on each node keeps small. */
  keptChars(): number {
    let n = 0;
    for (const [node, rec] of this.byNode) n += node.length + rec.sig.length + rec.message.length + rec.lines.size * 16;
    return n;
  }

  /** Why a node's current lease is rejected (reason and message), if it is. */
  current(node: string): { reason: LeaseRejectReason; message: string } | undefined {
    const rec = this.byNode.get(node);
    return rec && rec.reason !== '' ? { reason: rec.reason, message: rec.message } : undefined;
  }

  /** Record a rejection; returns true when it is new (not the one already remembered for the node). */
  reject(r: Rejection): boolean {
    let rec = this.byNode.get(r.node);
    const sig = digest(r.sig);
    if (rec && rec.sig === sig) return false;
    if (!rec) this.byNode.set(r.node, (rec = { sig: '', reason: '', message: '', lines: new Map() }));
    rec.sig = sig;
    rec.reason = r.reason;
    rec.message = r.message.length > MAX_KEPT_MESSAGE ? `${r.message.slice(0, MAX_KEPT_MESSAGE - 1)}…` : r.message;
    this.metrics?.inc(METRIC.leasesRejected, { reason: r.reason });
    const now = this.clock.now();
    const line = rec.lines.get(r.reason);
    if (line && now - line.at < this.intervalMs) {
      line.held++;
      return true;
    }
    this.log.warn('peer lease rejected', {
      node: r.node,
      reason: r.reason,
      ...r.fields,
      detail: r.message,
      ...(line && line.held > 0 ? { heldBack: line.held, sinceS: Math.round((now - line.at) / 1000) } : {}),
    });
    rec.lines.set(r.reason, { at: now, held: 0 });
    return true;
  }

  /** The node's lease is accepted now: a later rejection counts as new. */
  accepted(node: string): void {
    const rec = this.byNode.get(node);
    if (rec) {
      rec.sig = '';
      rec.reason = '';
      rec.message = '';
    }
  }

  /** The node is gone: forget everything about it. */
  forget(node: string): void {
    this.byNode.delete(node);
  }
}

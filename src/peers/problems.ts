// The peers' problems ledger: one record per problem a peer has, of one of three kinds: `rejected` (its lease
// failed validation or lost a contested subnet, by node, written by the peer store ./store.ts),
// `ipv6-rejected` (the IPv6 half of an accepted dual-stack lease failed validation: its IPv4 route is kept,
// by node, written by the store) and `refused` (the dataplane refused one of its items, a RemoteSubnetRoute
// HNS will not take or a route the stack rejects, by item key, reported by the reconcile loop: this ledger is
// the network's `RefusalSink`, src/reconcile/refusals.ts, which it implements without importing it). All go
// through one mechanism: a report that is news (a new verdict, another answer) is counted, logged at warn,
// raised as an Event on the own Node and listed in the status until resolved; a report that is not news is
// counted only where the metric counts tries (refusals) and logged at debug.
// Bounded in bytes whatever a peer does (docs/bounds.md, Rejected peers): one record per node (rejected) or
// item (refused), a rejection's message cut as a copy of its own and its signature kept as a digest, one
// log state per node and reason, rejection lines rate-limited to one per node and reason per
// interval (the next line carries how many were held back), everything about a node forgotten once it is
// deleted. When a refused item is retried is the loop's to know (each on its own capped exponential backoff,
// so the other peers are never held back by it); the ledger keeps what is shown of it. No upstream
// counterpart: flannel pkg/lease/watch.go accepts every lease and its route/policy handlers keep no ledger.
import { createHash } from 'node:crypto';
import type { Clock } from '../basics/clock.js';
import { systemClock } from '../basics/clock.js';
import { errorMessage, FlannelError } from '../basics/errors.js';
import { METRIC } from '../basics/metrics.js';
import type { Metrics } from '../basics/metrics.js';
import type { Logger } from '../basics/log.js';
import { silentLogger } from '../basics/log.js';
import type { RefusedItem } from '../network-status.js';
import { NODE_EVENT_REASON, noNodeEvents, type NodeEvent, type NodeEvents } from '../node-events.js';
import { CONFLICT_REASONS, IPV6_REJECT_REASONS, LEASE_REJECT_REASONS, type IPv6RejectReason, type LeaseRejectReason } from './reject-reasons.js';

type ProblemKind = 'rejected' | 'ipv6-rejected' | 'refused';

/** One problem of one peer. */
interface PeerProblem {
  kind: ProblemKind;
  /** rejected, ipv6-rejected: the peer's lease key (its node); refused: the item's key (the peer's prefix). */
  key: string;
  /** The reject reason (LEASE_REJECT_REASONS), or the dataplane's answer (HRESULT, route status, error code). */
  reason: string;
  message: string;
  /** When this reason was first given (ms since the epoch). */
  since: number;
  /** Reports with this reason so far. */
  attempts: number;
  /** Digest of what was judged (rejected: the reason, the other node, the lease's content). */
  sig: string;
}

/**
 * The most characters of a rejection's message kept per node (the log line and the Event carry the
 * whole message once, when it is new); with the signature kept as a digest, what one rejected node
 * costs is bounded whatever its lease holds, so thousands of rejected peers stay small.
 */
export const MAX_KEPT_MESSAGE = 512;

/**
 * `text` as kept for long, at most `max` characters: a copy of its own. V8 keeps a cut (`slice`) as a
 * view of the whole text, and a joined text as its parts, so a cut kilobyte message kept the kilobyte
 * alive; JSON.parse builds a new flat string (and keeps lone surrogates, which a UTF-8 round trip would
 * not). The cut is marked `...`: one character outside Latin-1 (`…`) makes V8 store all of them in two bytes.
 */
export function keptText(text: string, max: number): string {
  const cut = text.length > max ? `${text.slice(0, max - 3)}...` : text;
  return JSON.parse(JSON.stringify(cut)) as string;
}

/** A fixed-size digest of a rejection's signature, or of a lease's content (what was rejected can be a kilobyte of backend-data). */
export function digest(sig: string): string {
  return createHash('sha256').update(sig).digest('base64');
}

/** What to do about a rejected peer lease, by the family of its reason (the VNI checks' own messages say it). */
function rejectionFix(reason: LeaseRejectReason): string | undefined {
  if (reason === 'vni-too-low' || reason === 'vni-mismatch') return undefined;
  if (reason === 'subnet-overlaps-peer' || reason === 'subnet-overlaps-own' || reason === 'subnet-equals-own')
    return "give each Node its own podCIDR (kube-controller-manager --allocate-node-cidrs), or remove the stale Node's flannel annotations";
  if (reason.startsWith('vni') || reason === 'backend-type-mismatch')
    return "use the same Backend Type and VNI (4096 or above for Windows) in every node's net-conf.json (kube-flannel-cfg)";
  if (reason.startsWith('public-ip')) return "fix the peer's flannel.alpha.coreos.com/public-ip annotation (or its --public-ip)";
  return "fix the peer Node's podCIDR and flannel.alpha.coreos.com annotations; see docs/errors.md";
}

/** What to do about a rejected IPv6 half (the peer's IPv6 podCIDR or its public-ipv6). */
function ipv6RejectionFix(reason: IPv6RejectReason): string {
  if (reason.startsWith('public-ip')) return "fix the peer's flannel.alpha.coreos.com/public-ipv6 annotation (or its --public-ipv6)";
  return "fix the peer Node's IPv6 podCIDR (spec.podCIDRs): a subnet of IPv6Network of the cluster's IPv6 length, its own";
}

/** The IPv6 half of an accepted dual-stack peer lease was rejected; its IPv4 route is kept. */
function peerIPv6RejectedEvent(node: string, reason: IPv6RejectReason, detail: string): NodeEvent {
  return {
    type: 'Warning',
    reason: NODE_EVENT_REASON.peerRejected,
    message: `peer ${node}: IPv6 half rejected (${reason}): ${detail}; its pods' IPv6 addresses are unreachable from this node, IPv4 is routed; fix: ${ipv6RejectionFix(reason)}`,
  };
}

/** A peer lease was rejected (a subnet conflict is its own reason). */
export function peerRejectedEvent(node: string, reason: LeaseRejectReason, detail: string): NodeEvent {
  const fix = rejectionFix(reason);
  const contested = CONFLICT_REASONS.has(reason);
  return {
    type: 'Warning',
    reason: contested ? NODE_EVENT_REASON.subnetContested : NODE_EVENT_REASON.peerRejected,
    message: `peer ${node} rejected (${reason}): ${detail}; its pods are unreachable from this node until it is fixed${fix === undefined ? '' : `; fix: ${fix}`}`,
  };
}

/** HNS (or the route table) refused one peer's policy or route; the other peers are programmed. */
export function peerRefusedEvent(node: string | undefined, prefix: string, answer: string, detail: string): NodeEvent {
  return {
    type: 'Warning',
    reason: NODE_EVENT_REASON.peerRefused,
    message: `the dataplane refused the route to peer ${node ?? '?'} (${prefix}) with ${answer}: ${detail}; retried with backoff`,
  };
}

/** What the dataplane answered: the HRESULT (HNS) or status (route table), else the error code. */
function refusalAnswer(err: unknown): string {
  if (err instanceof FlannelError) {
    const { hresult, status } = err.context;
    if (hresult !== undefined) return String(hresult);
    if (status !== undefined) return `status ${String(status)}`;
    return err.code;
  }
  return errorMessage(err);
}

/** A peer lease judged invalid (or losing a contested subnet), as the store reports it. */
export interface Rejection {
  node: string;
  reason: LeaseRejectReason;
  /** What was rejected (content of the lease, the other node): a new one is counted and may be logged. */
  sig: string;
  message: string;
  fields: Record<string, unknown>;
}

interface PeerProblemsOptions {
  clock?: Clock;
  log?: Logger;
  metrics?: Metrics;
  /** Where a problem that is news is reported as an Event on the own Node (default: nowhere). */
  events?: NodeEvents;
  /** The dataplane driver's name (the `driver` label of the refusal metrics, a log field); without it no refusal series is declared. */
  driver?: string;
  /** One rejection line per node and reason per this interval (default 60 s). */
  rejectLogIntervalMs?: number;
  /** The peer (node) an item key belongs to, for a refusal's log line, Event and status entry. */
  owner?: (key: string) => string | undefined;
}

/** The last log line about one node for one kind and reason. */
interface LineState {
  kind: ProblemKind;
  reason: string;
  at: number;
  held: number;
}

export class PeerProblems {
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly metrics: Metrics | undefined;
  private readonly events: NodeEvents;
  private readonly driver: string;
  private readonly intervalMs: number;
  private readonly owner: (key: string) => string | undefined;
  /** The records, by kind and key. */
  private readonly records: Record<ProblemKind, Map<string, PeerProblem>> = { rejected: new Map(), 'ipv6-rejected': new Map(), refused: new Map() };
  /**
   * Rejected nodes' last log line per kind and reason (kept after the lease is accepted, until the node is
   * gone): a short list per node, usually of one (a Map per node cost ten times that).
   */
  private readonly lines = new Map<string, LineState[]>();

  constructor(opts: PeerProblemsOptions = {}) {
    this.clock = opts.clock ?? systemClock;
    this.log = opts.log ?? silentLogger();
    this.metrics = opts.metrics;
    this.events = opts.events ?? noNodeEvents;
    this.driver = opts.driver ?? '';
    this.intervalMs = opts.rejectLogIntervalMs ?? 60_000;
    this.owner = opts.owner ?? (() => undefined);
    // Every series exists at zero from the start, so a rate() or an alert on it works before the first problem.
    this.metrics?.declare(METRIC.leasesRejected, 'reason', LEASE_REJECT_REASONS);
    this.metrics?.declare(METRIC.leasesIPv6Rejected, 'reason', IPV6_REJECT_REASONS);
    if (opts.driver !== undefined) {
      this.metrics?.declare(METRIC.refusals, 'driver', [opts.driver]);
      this.metrics?.declare(METRIC.refusedItems, 'driver', [opts.driver]);
    }
  }

  // --- the one mechanism ---

  /**
   * Record a report of a problem; true when it is news (a new record, another reason or signature). News
   * is counted, logged at warn and raised as an Event; a repeat only as its kind counts and logs repeats.
   * `attempts`: a refused item's tries so far (the loop counts them).
   */
  private report(kind: ProblemKind, key: string, reason: string, sig: string, message: string, fields: Record<string, unknown>, tries?: number): boolean {
    const now = this.clock.now();
    const prev = this.records[kind].get(key);
    const news = prev === undefined || prev.reason !== reason || prev.sig !== sig;
    const attempts = tries ?? (prev?.reason === reason ? prev.attempts : 0) + 1;
    const since = prev?.reason === reason ? prev.since : now;
    const rec: PeerProblem = { kind, key, reason, message, since, attempts, sig };
    if (!news && kind !== 'refused') return false; // the verdict already remembered: nothing to count or say
    this.records[kind].set(key, rec);
    this.count(rec);
    this.say(rec, news, fields, now);
    if (news) this.events.record(this.event(rec, fields));
    return news;
  }

  private count(p: PeerProblem): void {
    if (p.kind === 'ipv6-rejected') {
      this.metrics?.inc(METRIC.leasesIPv6Rejected, { reason: p.reason });
      return;
    }
    if (p.kind === 'rejected') {
      this.metrics?.inc(METRIC.leasesRejected, { reason: p.reason });
      if (CONFLICT_REASONS.has(p.reason)) this.metrics?.inc(METRIC.subnetConflicts);
      return;
    }
    this.metrics?.inc(METRIC.refusals, { driver: this.driver });
    this.gauge();
  }

  private say(p: PeerProblem, news: boolean, fields: Record<string, unknown>, now: number): void {
    if (p.kind === 'refused') {
      if (news) this.log.warn('the dataplane refused one peer item; the other peers are programmed, this one is retried with backoff', fields);
      else this.log.debug('the dataplane refused the item again', fields);
      return;
    }
    const lines = this.lines.get(p.key);
    const line = lines?.find((l) => l.kind === p.kind && l.reason === p.reason);
    if (line && now - line.at < this.intervalMs) {
      line.held++;
      return;
    }
    this.log.warn(p.kind === 'ipv6-rejected' ? 'peer lease IPv6 half rejected; its IPv4 route is kept' : 'peer lease rejected', {
      node: p.key,
      reason: p.reason,
      ...fields,
      detail: fields.detail,
      ...(line && line.held > 0 ? { heldBack: line.held, sinceS: Math.round((now - line.at) / 1000) } : {}),
    });
    const next: LineState = { kind: p.kind, reason: p.reason, at: now, held: 0 };
    if (line) Object.assign(line, next);
    else if (lines) lines.push(next);
    else this.lines.set(p.key, [next]); // a list of exactly one (push would reserve room for 17)
  }

  private event(p: PeerProblem, fields: Record<string, unknown>): NodeEvent {
    if (p.kind === 'rejected') return peerRejectedEvent(p.key, p.reason as LeaseRejectReason, String(fields.detail));
    if (p.kind === 'ipv6-rejected') return peerIPv6RejectedEvent(p.key, p.reason as IPv6RejectReason, String(fields.detail));
    return peerRefusedEvent(this.owner(p.key), p.key, p.reason, p.message);
  }

  /** The problem is over: the record goes (a resolved refusal is logged with how many tries it took). */
  private resolve(kind: ProblemKind, key: string, message?: string, tries = 0): PeerProblem | undefined {
    const prev = this.records[kind].get(key);
    if (!prev) return undefined;
    this.records[kind].delete(key);
    if (kind === 'refused') {
      this.gauge();
      if (message !== undefined) this.log.info(message, { driver: this.driver, node: this.owner(key), prefix: key, attempts: prev.attempts + tries });
    }
    return prev;
  }

  private gauge(): void {
    this.metrics?.set(METRIC.refusedItems, this.records.refused.size, { driver: this.driver });
  }

  // --- rejected peers (the peer store) ---

  /** A peer lease was rejected; true when the verdict is new (not the one already remembered for the node). */
  reject(r: Rejection): boolean {
    return this.report('rejected', r.node, r.reason, digest(r.sig), keptText(r.message, MAX_KEPT_MESSAGE), { ...r.fields, detail: r.message });
  }

  /** Why a node's current lease is rejected, if it is. */
  rejection(node: string): { reason: LeaseRejectReason; message: string } | undefined {
    const p = this.records.rejected.get(node);
    return p && { reason: p.reason as LeaseRejectReason, message: p.message };
  }

  /** The node's lease is accepted now: a later rejection counts as new. */
  accepted(node: string): void {
    this.resolve('rejected', node);
  }

  /** The IPv6 half of an accepted dual-stack lease was rejected; true when the verdict is new. */
  rejectIPv6(r: Rejection & { reason: IPv6RejectReason }): boolean {
    return this.report('ipv6-rejected', r.node, r.reason, digest(r.sig), keptText(r.message, MAX_KEPT_MESSAGE), { ...r.fields, detail: r.message });
  }

  /** Why the IPv6 half of a node's accepted lease is rejected, if it is. */
  ipv6Rejection(node: string): { reason: IPv6RejectReason; message: string } | undefined {
    const p = this.records['ipv6-rejected'].get(node);
    return p && { reason: p.reason as IPv6RejectReason, message: p.message };
  }

  /** The node's IPv6 half is accepted now, or the node's lease no longer is: a later IPv6 rejection counts as new. */
  ipv6Cleared(node: string): void {
    this.resolve('ipv6-rejected', node);
  }

  /** The node is gone: forget everything about it. */
  forgetNode(node: string): void {
    this.resolve('rejected', node);
    this.resolve('ipv6-rejected', node);
    this.lines.delete(node);
  }

  /** Nodes whose lease, or its IPv6 half, is rejected now. */
  get rejectedCount(): number {
    return this.records.rejected.size + this.records['ipv6-rejected'].size;
  }

  // --- refused items (the reconcile loop's RefusalSink) ---

  /**
   * The dataplane refused the item for `key` (its `attempts`th try, retried in `retryInMs`): log (at warn)
   * and report the first refusal and every change of answer, a retry answered alike only at debug. True
   * when this refusal is such news.
   */
  refused(key: string, err: unknown, retry: { attempts: number; retryInMs: number }): boolean {
    const answer = refusalAnswer(err);
    const error = errorMessage(err);
    const fields = { driver: this.driver, node: this.owner(key), prefix: key, hresult: answer, attempts: retry.attempts, retryInMs: retry.retryInMs, error };
    // Tries and backoff run on across answers (the item has been tried that often); `since` is the answer's.
    return this.report('refused', key, answer, '', error, fields, retry.attempts);
  }

  /** The item for `key` is no longer refused: written (logged with its tries), held by the dataplane without our write (logged), or forgotten. */
  cleared(key: string, how: 'written' | 'held' | 'forgotten'): void {
    if (how === 'written') this.resolve('refused', key, 'the dataplane accepted a previously refused item', 1);
    else if (how === 'held') this.resolve('refused', key, 'a previously refused item is in the dataplane now; it is no longer retried', 0);
    else this.resolve('refused', key);
  }

  // --- the status ---

  /** The refused items, sorted by peer then prefix (the status's `refusedItems`). */
  refusedItems(): RefusedItem[] {
    if (this.records.refused.size === 0) return [];
    return [...this.records.refused.values()]
      .map((p) => ({ node: this.owner(p.key), prefix: p.key, answer: p.reason, attempts: p.attempts, since: p.since, error: p.message }))
      .sort((a, b) => (a.node ?? '').localeCompare(b.node ?? '') || a.prefix.localeCompare(b.prefix));
  }
}

// List + watch of Nodes, projected straight to peer leases (full Node objects are never kept, and nothing
// is kept between events: the peer store, src/peers/store.ts, is the one copy of the peer set and
// drops what did not change). Mirrors what flannel pkg/subnet/kube/kube.go gets from its client-go node
// informer (and nodeToLease, handleAddLeaseEvent, handleUpdateLeaseEvent for the projection), and takes its list and watch as
// functions, as client-node's ListWatch (src/cache.ts) takes a `listFn` and a `Watch`: the real ones
// are raw JSON requests with deadlines (../../kube/http.ts nodeListFn/nodeWatchFn); tests inject others. The
// relist-with-backoff loop around them is ../../basics/relist.ts: a paged list, then a watch from the list's
// resourceVersion, resumed after a clean close and relisted after 410 Gone or a broken watch, every
// round but a healthy watch's resumption after client-go's backoff pause (../../basics/round-backoff.ts).
// Differences by design:
// - Only the fields flannel needs are read (projectNode below); an object that cannot be projected is
//   skipped, logged and counted, and the rest of the list still counts.
// - Every list page has a deadline, and a watch that goes silent is abandoned well under a minute:
//   the watch asks for `timeoutSeconds` (the server ends it cleanly) and `allowWatchBookmarks` (the
//   apiserver sends a bookmark about once a minute and before its timeout; kubernetes/kubernetes#90249,
//   https://kubernetes.io/docs/reference/using-api/api-concepts/#watch-bookmarks), so no byte for
//   `watchSilenceMs` means the connection is dead even when TCP does not say so.
// - List pages are emitted as they arrive (`peers`); the complete list ends with `listed`, naming every
//   lease it held, so nothing is removed on a partial view.
// - A paged list cannot loop: client-go's pager (tools/pager/pager.go) follows `continue` for as long as
//   the server sends one, so a server that repeats a token is paged forever. Here a token seen before
//   in the same list, or a page that does not advance (no items, or its last Node's name not past the
//   previous page's: the API server pages in key order, which for Nodes is name order), fails the list
//   with FLANNEL_ERR_KUBE_LIST, logged and retried after the backoff pause like any failed list. A list
//   is also bounded in what it keeps (LIST_NODES_BOUND names) and in time (`listDeadlineMs`), never by
//   a page count: a cluster of 50,000 Nodes lists in 200 pages.
// - A watch the server closes cleanly is resumed at once only after a healthy run: at least half the
//   timeout it asked for. client-go reopens every watch that lasted a second or brought an event; a
//   server that closes each watch after one event then gets a watch per event (measured against
//   the fake API server: 10,000-25,000 in 15 s).
import { createHash } from 'node:crypto';
import type { Clock, Random } from '../../basics/clock.js';
import { FlannelError, KubeAnswerError, KubeError, KubeWatchError } from '../../basics/errors.js';
import { METRIC } from '../../basics/metrics.js';
import type { Metrics } from '../../basics/metrics.js';
import type { Logger } from '../../basics/log.js';
import type { Lease, LeaseUpdateHandler, PeerLease } from '../lease.js';
import { runRelistLoop } from '../../basics/relist.js';
import type { ListWatchSource, RelistOptions, RetryNote, WatchEnd } from '../../basics/relist.js';
import type { NodeListFn, NodeWatchFn } from '../../kube/http.js';
import type { AnnotationKeys } from './annotations.js';
import { decodeBackendData } from './annotations.js';
import { describe, rbacRefusal, retryAfterMs } from '../../kube/api-error.js';
import { normalizeCidr } from '../../basics/ip4.js';
import { normalizeCidr6 } from '../../basics/ip6.js';

// --- Node -> lease (pure and total: hostile input, missing fields, wrong types, huge strings never throw) ---

/** Annotation values longer than this are treated as invalid (never kept in memory). */
export const MAX_ANNOTATION_LENGTH = 1024;
const MAX_NAME_LENGTH = 253;
const MAX_CIDR_LENGTH = 43;

/** What the kube subnet manager keeps per Node. */
export interface NodeLease {
  name: string;
  /** metadata.uid (bounded): a Node deleted and registered again has a new one. */
  uid?: string;
  /** First IPv4 of spec.podCIDRs, else spec.podCIDR (when IPv4); network-address form. */
  podCIDR?: string;
  /** What the Node has instead when it has a podCIDR but no IPv4 CIDR (bounded; e.g. an IPv6 CIDR). */
  badPodCIDR?: string;
  /** metadata.creationTimestamp in ms since epoch (who holds a contested subnet). */
  created?: number;
  /** The `kube-subnet-manager` annotation. */
  subnetManager?: string;
  backendType?: string;
  /** The raw `backend-data` annotation. */
  backendData?: string;
  publicIP?: string;
  publicIPOverwrite?: string;
  nodePublicIP?: string;
  /** Dual-stack projection only: the first IPv6 CIDR of spec.podCIDRs (else spec.podCIDR), network-address form. */
  ipv6PodCIDR?: string;
  /** Dual-stack projection only: how many entries spec.podCIDRs has when it has three or more (upstream refuses them). */
  podCIDRCount?: number;
  publicIPv6?: string;
  publicIPv6Overwrite?: string;
  nodePublicIPv6?: string;
  /** The raw `backend-v6-data` annotation. */
  backendV6Data?: string;
  /** Names of the fields above whose annotation was present but oversized (value dropped). */
  oversized?: string[];
}

type Obj = Record<string, unknown>;

/** `v` as a plain JSON object (not null, not an array), else undefined. */
export function asObj(v: unknown): Obj | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined;
}

/** An IPv4 CIDR in network-address form (host bits masked, as Go's net.ParseCIDR), bounded in length. */
function podCidr(s: string): string | undefined {
  return s.length > MAX_CIDR_LENGTH ? undefined : normalizeCidr(s);
}

/** First IPv4 CIDR of spec.podCIDRs, else spec.podCIDR when it is IPv4; network-address form. */
export function nodePodCIDR(spec: unknown): string | undefined {
  const s = asObj(spec);
  if (!s) return undefined;
  const list = s.podCIDRs;
  // A podCIDRs that is not a list is malformed (the API always serves a list); falling back to podCIDR
  // would accept a Node the API server's own validation could never have produced.
  if (list !== undefined && list !== null && list !== '' && !Array.isArray(list)) return undefined;
  if (Array.isArray(list) && list.length > 0) {
    for (const c of list.slice(0, 8)) {
      if (typeof c !== 'string') continue;
      const p = podCidr(c);
      if (p) return p;
    }
    return undefined;
  }
  return typeof s.podCIDR === 'string' ? podCidr(s.podCIDR) : undefined;
}

/**
 * What a Node offers as podCIDR when it has no IPv4 CIDR: the first entry of spec.podCIDRs (or
 * spec.podCIDR), as text and bounded, so that the peer is rejected with a reason instead of vanishing.
 * Undefined when the Node has no podCIDR at all (not yet allocated: not an error).
 */
function nodeBadPodCIDR(spec: unknown): string | undefined {
  const s = asObj(spec);
  if (!s) return spec === undefined || spec === null ? undefined : '';
  const list = s.podCIDRs;
  // podCIDRs that is not a list is shown as JSON (quoted), so it can never pass as a CIDR.
  if (list !== undefined && list !== null && list !== '' && !Array.isArray(list)) return bounded(JSON.stringify(list) ?? '');
  const v: unknown = Array.isArray(list) && list.length > 0 ? list[0] : s.podCIDR;
  if (v === undefined || v === null || v === '') return undefined;
  return bounded(typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));
}

/** At most MAX_CIDR_LENGTH characters; a longer text is cut and marked, so it stays invalid. */
function bounded(text: string): string {
  return text.length > MAX_CIDR_LENGTH ? `${text.slice(0, MAX_CIDR_LENGTH)}…` : text;
}

/** metadata.creationTimestamp (RFC 3339) in ms since epoch; undefined when absent or unparsable. */
function creationTime(v: unknown): number | undefined {
  if (typeof v !== 'string' || v.length > 64) return undefined;
  const t = Date.parse(v);
  return Number.isFinite(t) ? t : undefined;
}

/**
 * The IPv6 CIDR of a Node, as upstream's kube subnet manager finds it (pkg/subnet/kube/kube.go
 * nodeToLease, AcquireLease): the first IPv6 entry of spec.podCIDRs, else spec.podCIDR when podCIDRs is
 * empty; network-address form. `count` is set when podCIDRs has three or more entries, which upstream
 * refuses ("pod cidrs should be IPv4/IPv6 only or dualstack"); the API server allows one per family.
 */
export function nodeIPv6PodCIDR(spec: unknown): { cidr?: string; count?: number } {
  const s = asObj(spec);
  if (!s) return {};
  const list = s.podCIDRs;
  if (Array.isArray(list) && list.length >= 3) return { count: list.length };
  const texts = Array.isArray(list) && list.length > 0 ? list : [s.podCIDR];
  for (const c of texts) {
    if (typeof c !== 'string' || c.length > MAX_CIDR_LENGTH) continue;
    const v6 = normalizeCidr6(c);
    if (v6 !== undefined) return { cidr: v6 };
  }
  return {};
}

/**
 * Project a raw Node to its lease record; undefined without a usable name. `ipv6` (EnableIPv6) also reads
 * the IPv6 half: the IPv6 podCIDR and the public-ipv6, public-ipv6-overwrite, node-public-ipv6 and
 * backend-v6-data annotations. Without it the record is exactly the IPv4 one.
 */
export function projectNode(node: unknown, keys: AnnotationKeys, ipv6 = false): NodeLease | undefined {
  const n = asObj(node);
  const meta = asObj(n?.metadata);
  const name = meta?.name;
  if (typeof name !== 'string' || name === '' || name.length > MAX_NAME_LENGTH) return undefined;
  const rec: NodeLease = { name };
  if (typeof meta?.uid === 'string' && meta.uid !== '' && meta.uid.length <= MAX_NAME_LENGTH) rec.uid = meta.uid;
  const pod = nodePodCIDR(n?.spec);
  if (pod !== undefined) rec.podCIDR = pod;
  else {
    const bad = nodeBadPodCIDR(n?.spec);
    if (bad !== undefined) rec.badPodCIDR = bad;
  }
  if (ipv6) {
    const v6 = nodeIPv6PodCIDR(n?.spec);
    if (v6.cidr !== undefined) rec.ipv6PodCIDR = v6.cidr;
    if (v6.count !== undefined) rec.podCIDRCount = v6.count;
  }
  const created = creationTime(meta?.creationTimestamp);
  if (created !== undefined) rec.created = created;
  const ann = asObj(meta?.annotations);
  if (!ann) return rec;
  const pick = (field: Extract<keyof NodeLease, string>, key: string) => {
    if (!Object.prototype.hasOwnProperty.call(ann, key)) return;
    const v = ann[key];
    if (typeof v !== 'string') return;
    if (v.length > MAX_ANNOTATION_LENGTH) {
      (rec.oversized ??= []).push(field);
      return;
    }
    (rec as unknown as Record<string, string>)[field] = v;
  };
  pick('subnetManager', keys.kubeSubnetManager);
  pick('backendType', keys.backendType);
  pick('backendData', keys.backendData);
  pick('publicIP', keys.publicIP);
  pick('publicIPOverwrite', keys.publicIPOverwrite);
  pick('nodePublicIP', keys.nodePublicIP);
  if (ipv6) {
    pick('publicIPv6', keys.publicIPv6);
    pick('publicIPv6Overwrite', keys.publicIPv6Overwrite);
    pick('nodePublicIPv6', keys.nodePublicIPv6);
    pick('backendV6Data', keys.backendV6Data);
  }
  return rec;
}

/**
 * The peer lease a record stands for: only Nodes with `kube-subnet-manager == "true"` and a podCIDR.
 * Other fields pass through as published (an invalid subnet, public IP or backend-data is the
 * peer store's to reject, with a reason); oversized backend-data decodes as `undefined` (malformed).
 */
export function toLease(rec: NodeLease): Lease | undefined {
  const subnet = rec.podCIDR ?? rec.badPodCIDR;
  if (rec.subnetManager !== 'true' || subnet === undefined) return undefined;
  const oversized = rec.oversized ?? [];
  return {
    key: rec.name,
    subnet,
    ...(rec.created !== undefined ? { created: rec.created } : {}),
    publicIP: rec.publicIP ?? '',
    backendType: rec.backendType ?? '',
    backendData: oversized.includes('backendData') ? undefined : decodeBackendData(rec.backendData),
    // The IPv6 half only when the Node has both an IPv6 podCIDR and a public-ipv6: a peer without them
    // keeps its IPv4 route (upstream drops such a peer altogether; a v4-only Windows peer is one).
    ...(rec.ipv6PodCIDR !== undefined && rec.publicIPv6 !== undefined && rec.publicIPv6 !== '' ? { ipv6Subnet: rec.ipv6PodCIDR, publicIPv6: rec.publicIPv6 } : {}),
  };
}

// --- list and watch ---

export interface NodeListWatchOptions {
  list: NodeListFn;
  watch: NodeWatchFn;
  keys: AnnotationKeys;
  log: Logger;
  metrics: Metrics;
  clock: Clock;
  /** Jitter of the default watch timeout and of the relist loop's pauses. */
  random: Random;
  /** The relist loop's pause schedule (default client-go's: 800 ms doubling to 30 s, jittered). */
  backoff?: RelistOptions['backoff'];
  /** Page size of the Node list (bench/kube-api.mjs). */
  listPageSize: number;
  /** Server-side watch timeout; default 30-40 s (jittered). */
  watchTimeoutSeconds?: number;
  /** No byte for this long ends a watch as failed (default: watch timeout + 10 s). */
  watchSilenceMs?: number;
  /** How long one paged list may take, all its pages (default LIST_DEADLINE_MS). */
  listDeadlineMs?: number;
  /** EnableIPv6: project the IPv6 half of every Node too (projectNode). */
  ipv6?: boolean;
}

/** Told every Node the list and the watch see (own-node-watch.ts follows the own Node through it). */
export interface NodeObserver {
  /** A complete list begins. */
  listStarted(): void;
  /** A Node listed, or watched ADDED or MODIFIED. */
  seen(rec: NodeLease): void;
  /** A Node watched DELETED. */
  deleted(rec: NodeLease): void;
  /** The complete list ended (every Node it held was `seen`). */
  listEnded(): void;
}

const SKIP_LOG_INTERVAL_MS = 60_000;

/**
 * The most Nodes one list may hold (their names are kept until the list ends): 40x Kubernetes' largest
 * supported cluster (5,000 nodes, https://kubernetes.io/docs/setup/best-practices/cluster-large/).
 */
export const LIST_NODES_BOUND = 200_000;

/** How long one paged list may take, all pages together (default of `listDeadlineMs`). */
export const LIST_DEADLINE_MS = 10 * 60_000;

/** The log line before the loop's pause: what ended the round, and how long the pause is. */
function retryLine(n: RetryNote): [message: string, fields: Record<string, unknown>] {
  const fields: Record<string, unknown> = { attempt: n.attempt, delayMs: n.delayMs };
  if (n.err !== undefined) fields.error = describe(n.err);
  if (n.err instanceof FlannelError) fields.code = n.err.code;
  Object.assign(fields, rbacRefusal(n.err)); // a 403: the permission RBAC lacks and the fix
  switch (n.reason) {
    case 'list-failed':
      return ['listing nodes failed, backing off', fields];
    case 'watch-failed':
      return ['node watch failed, backing off', fields];
    case 'stale':
      return ['node watch resourceVersion expired (410 Gone), backing off before relisting', fields];
    case 'closed-early':
      return ['node watch closed early by the server, backing off', fields];
  }
}

/** The name of a skipped Node, when it has a string one (for the log line). */
function skipName(obj: unknown): string {
  const name = asObj(asObj(obj)?.metadata)?.name;
  return typeof name === 'string' ? name.slice(0, 64) : '';
}

export class NodeListWatch {
  /** Skipped objects are logged at most once a minute, with how many were held back. */
  private lastSkipLog = -Infinity;
  private heldSkips = 0;
  /** Follows the own Node (set once the lease is acquired). */
  observer: NodeObserver | undefined;

  constructor(private readonly o: NodeListWatchOptions) {
    // Both series at zero from the start (a rate() or an alert on them works before the first skip).
    o.metrics.declare(METRIC.nodesSkipped, 'where', ['list', 'watch']);
  }

  /** Project one raw Node, or count and log it as skipped. */
  private project(obj: unknown, where: 'list' | 'watch'): NodeLease | undefined {
    const rec = projectNode(obj, this.o.keys, this.o.ipv6 === true);
    if (rec) return rec;
    this.o.metrics.inc(METRIC.nodesSkipped, { where });
    const now = this.o.clock.now();
    if (now - this.lastSkipLog < SKIP_LOG_INTERVAL_MS) {
      this.heldSkips++;
      return undefined;
    }
    this.o.log.warn('skipping a Node object that cannot be read (no valid metadata.name)', {
      where,
      name: skipName(obj),
      ...(this.heldSkips > 0 ? { heldBack: this.heldSkips } : {}),
    });
    this.lastSkipLog = now;
    this.heldSkips = 0;
    return undefined;
  }

  /** The complete list, page by page as `peers`, then `listed`; returns its resourceVersion, where the watch starts. */
  private async relist(onUpdate: LeaseUpdateHandler, signal: AbortSignal): Promise<string> {
    const keys = new Set<string>();
    let nodes = 0;
    /** Digests of the continue tokens of this list (a token's size is the server's to choose). */
    const seen = new Set<string>();
    const started = this.o.clock.now();
    const deadlineMs = this.o.listDeadlineMs ?? LIST_DEADLINE_MS;
    let cont: string | undefined;
    let rv = '';
    let pages = 0;
    /** The name of the last Node of the previous page (pages are in name order). */
    let lastName: string | undefined;
    const fail = (why: string, context: Record<string, unknown>) =>
      new KubeError('FLANNEL_ERR_KUBE_LIST', `${why}; the list would never end — check the API server or a proxy in front of it`, { page: pages, ...context });
    this.observer?.listStarted();
    do {
      pages++;
      if (this.o.clock.now() - started > deadlineMs) {
        throw fail(`the Node list did not end within ${Math.round(deadlineMs / 1000)} s (${nodes} Nodes in ${pages - 1} pages)`, { nodes, deadlineMs });
      }
      const page = asObj(await this.o.list({ limit: this.o.listPageSize, continue: cont }, signal));
      const meta = asObj(page?.metadata);
      const items = page?.items;
      if (!page || !Array.isArray(items))
        throw new KubeAnswerError('FLANNEL_ERR_KUBE_ANSWER', 'the Node list answer has no items array; check the API server or a proxy in front of it', { page: pages });
      if (rv === '' && typeof meta?.resourceVersion === 'string') rv = meta.resourceVersion;
      if (nodes + items.length > LIST_NODES_BOUND) {
        throw fail(`the Node list holds more than ${LIST_NODES_BOUND} Nodes`, { nodes: nodes + items.length });
      }
      const peers: PeerLease[] = [];
      let pageLast: string | undefined;
      for (const item of items) {
        const rec = this.project(item, 'list');
        if (!rec) continue;
        nodes++;
        pageLast = rec.name;
        this.observer?.seen(rec);
        const lease = toLease(rec);
        if (lease) keys.add(rec.name);
        peers.push({ key: rec.name, lease });
      }
      cont = typeof meta?.continue === 'string' && meta.continue !== '' ? meta.continue : undefined;
      if (cont !== undefined) {
        const digest = createHash('sha256').update(cont).digest('base64');
        if (seen.has(digest)) throw fail(`the API server sent the same Node list continue token twice (page ${pages})`, { continue: cont.slice(0, 64) });
        // A page that does not advance past the previous one (with more to come): a loop with fresh tokens.
        if (pageLast === undefined || (lastName !== undefined && pageLast <= lastName)) {
          throw fail(`page ${pages} of the Node list does not advance (${items.length} Nodes, the last ${JSON.stringify((pageLast ?? '').slice(0, 64))})`, {
            continue: cont.slice(0, 64),
          });
        }
        seen.add(digest);
      }
      if (pageLast !== undefined) lastName = pageLast;
      // What this page says; `listed` after the last page decides removals.
      if (peers.length > 0) onUpdate({ kind: 'peers', peers });
    } while (cont);
    this.o.log.info('node list synced', { nodes, leases: keys.size, pages, resourceVersion: rv });
    onUpdate({ kind: 'listed', keys });
    this.observer?.listEnded();
    return rv;
  }

  /** One watch from `rv` until the server closes it, it breaks or goes silent, or 410 Gone. */
  private async watchOnce(rv: string, onUpdate: LeaseUpdateHandler, signal: AbortSignal): Promise<WatchEnd<string>> {
    const { log, metrics } = this.o;
    const timeoutSeconds = this.o.watchTimeoutSeconds ?? 30 + Math.floor(this.o.random() * 10);
    const silenceMs = this.o.watchSilenceMs ?? (timeoutSeconds + 10) * 1000;
    let lastRv = rv;
    let gone = false;
    const ctrl = new AbortController();
    const stop = () => ctrl.abort();
    signal.addEventListener('abort', stop, { once: true });
    const onEvent = (type: unknown, obj: unknown) => {
      if (ctrl.signal.aborted) return;
      if (type === 'ERROR') {
        const st = asObj(obj);
        if (st?.code === 410) gone = true;
        else log.warn('node watch error event', { message: typeof st?.message === 'string' ? st.message.slice(0, 200) : 'unknown' });
        ctrl.abort(
          new KubeWatchError(
            'FLANNEL_ERR_KUBE_WATCH_BROKEN',
            `the API server ended the Node watch with an error event${typeof st?.message === 'string' ? `: ${st.message.slice(0, 200)}` : ''}`,
            {
              status: typeof st?.code === 'number' ? st.code : undefined,
            },
          ),
        );
        return;
      }
      const meta = asObj(asObj(obj)?.metadata);
      if (typeof meta?.resourceVersion === 'string' && meta.resourceVersion !== '') lastRv = meta.resourceVersion;
      if (type !== 'ADDED' && type !== 'MODIFIED' && type !== 'DELETED') return; // BOOKMARK: rv only
      const rec = this.project(obj, 'watch');
      if (!rec) return;
      onUpdate({ kind: 'peers', peers: [{ key: rec.name, lease: type === 'DELETED' ? undefined : toLease(rec) }] });
      if (type === 'DELETED') this.observer?.deleted(rec);
      else this.observer?.seen(rec);
    };
    try {
      await this.o.watch({ resourceVersion: rv, allowWatchBookmarks: true, timeoutSeconds }, onEvent, {
        silenceMs,
        signal: ctrl.signal,
        onBadLine: () => metrics.inc(METRIC.nodesSkipped, { where: 'watch' }),
      });
    } catch (err) {
      if (!ctrl.signal.aborted) return { kind: 'broken', err };
    } finally {
      signal.removeEventListener('abort', stop);
    }
    if (signal.aborted) return { kind: 'aborted' };
    if (gone) return { kind: 'stale' };
    if (ctrl.signal.aborted) return { kind: 'broken', err: ctrl.signal.reason };
    // A clean end (the server's timeoutSeconds): resume from the last resourceVersion, no relist; the
    // loop pauses first when it came early.
    return { kind: 'closed', cursor: lastRv };
  }

  /** List + watch until `signal` aborts; see SubnetManager.watchLeases. */
  run(onUpdate: LeaseUpdateHandler, signal: AbortSignal): Promise<void> {
    const source: ListWatchSource<string> = {
      list: (s) => this.relist(onUpdate, s),
      watch: (rv, s) => this.watchOnce(rv, onUpdate, s),
      // A 429 or 5xx with Retry-After: the server's wait, when longer than the backoff (../../kube/api-error.ts).
      minDelayMs: retryAfterMs,
      onRetry: (note) => {
        const [message, fields] = retryLine(note);
        if (note.reason === 'stale') this.o.log.info(message, fields);
        else this.o.log.warn(message, fields);
      },
    };
    const { clock, metrics, random, backoff } = this.o;
    // A watch that ran half the timeout it asked for (15 s of the default 30-40 s) was healthy.
    const healthyWatchMs = ((this.o.watchTimeoutSeconds ?? 30) * 1000) / 2;
    return runRelistLoop(source, { clock, metrics, random, backoff, healthyWatchMs }, signal);
  }
}

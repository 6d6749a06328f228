// The Nodes' list + watch, projected straight to peer leases: what flannel pkg/subnet/kube/kube.go gets
// from its client-go node informer (and nodeToLease, handleAddLeaseEvent, handleUpdateLeaseEvent for the
// projection). The list and watch themselves are the generic ones (../../kube/list-watch.ts
// KubeListWatch: paging and its guards, resourceVersion, bookmarks, 410 Gone, the silence watchdog, the
// relist loop's pauses); what is the Nodes' own is here:
// - the projection (projectNode, toLease below): only the fields flannel needs are read; an object that
//   cannot be projected is skipped, logged and counted, and the rest of the list still counts;
// - the fields never read, cut from the text before it is parsed (NODE_EVENT_UNREAD, NODE_LIST_UNREAD: status,
//   metadata.managedFields and metadata.labels, nine tenths of a real Node);
// - the peer updates: list pages as `peers`, the complete list as `listed` naming every lease it held (so
//   nothing is removed on a partial view), each watch event as a one-peer `peers`. Full Node objects are
//   never kept, and nothing is kept between events: the peer store (src/peers/store.ts) is the one copy
//   of the peer set and drops what did not change;
// - the observer that follows the own Node through the same list and watch (./own-node-watch.ts).
import type { Metrics } from '../../basics/metrics.js';
import { normalizeCidr } from '../../basics/ip4.js';
import { normalizeCidr6 } from '../../basics/ip6.js';
import { kubeListFn, kubeWatchFn } from '../../kube/http.js';
import type { KubeHttp } from '../../kube/http.js';
import { asObj } from '../../basics/json-object.js';
import { KubeListWatch } from '../../kube/list-watch.js';
import type { KubeListWatchOptions, ListPageFn, ListWatchHandler, WatchFn } from '../../kube/list-watch.js';
import { unreadFields } from '../../kube/watch-lines.js';
import type { Lease, LeaseUpdateHandler, PeerLease } from '../lease.js';
import type { AnnotationKeys } from './annotations.js';
import { decodeBackendData } from './annotations.js';

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
    for (let i = 0; i < list.length && i < 8; i++) {
      const c: unknown = list[i];
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
 * A Node's record, made by a constructor for the reason ProjectedLease is (below): a list page keeps the
 * records of its Nodes until it is handed on, so V8 tenured an object literal's records, and every watch
 * event's record after the list was allocated in the old generation, dead at once: about 170 bytes of old
 * space a status update, collected only by a mark-compact (docs/performance.md, session 17).
 */
class ProjectedNode implements NodeLease {
  name: string;
  constructor(name: string) {
    this.name = name;
  }
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
  const rec: NodeLease = new ProjectedNode(name);
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

/** Whether a record stands for a peer lease (toLease): `kube-subnet-manager == "true"` and a podCIDR. */
export function holdsLease(rec: NodeLease): boolean {
  return rec.subnetManager === 'true' && (rec.podCIDR ?? rec.badPodCIDR) !== undefined;
}

/**
 * A lease as projected from a Node: made by a constructor, not an object literal. V8 tenures the objects of
 * an object literal whose objects outlive their young generation (allocation-site pretenuring): a list keeps
 * every lease it makes, so the literal's leases were then allocated in the old generation, and so was the
 * new lease of every status update after it, dead at once: about 330 bytes of old space a status update, collected only
 * by a mark-compact (docs/performance.md, session 14). A constructor's objects start young.
 */
class ProjectedLease implements Lease {
  key: string;
  subnet: string;
  publicIP: string;
  backendType: string;
  backendData: unknown;
  declare created?: number;
  declare ipv6Subnet?: string;
  declare publicIPv6?: string;
  constructor(key: string, subnet: string, publicIP: string, backendType: string) {
    this.key = key;
    this.subnet = subnet;
    this.publicIP = publicIP;
    this.backendType = backendType;
    this.backendData = undefined;
  }
}

/**
 * The peer lease a record stands for: only Nodes with `kube-subnet-manager == "true"` and a podCIDR.
 * Other fields pass through as published (an invalid subnet, public IP or backend-data is the
 * peer store's to reject, with a reason); oversized backend-data decodes as `undefined` (malformed).
 */
export function toLease(rec: NodeLease): Lease | undefined {
  const subnet = rec.podCIDR ?? rec.badPodCIDR;
  if (!holdsLease(rec) || subnet === undefined) return undefined;
  // Written field by field: spreads of conditional objects made two objects and an array per status update.
  const lease: Lease = new ProjectedLease(rec.name, subnet, rec.publicIP ?? '', rec.backendType ?? '');
  if (rec.created !== undefined) lease.created = rec.created;
  if (!rec.oversized?.includes('backendData')) lease.backendData = decodeBackendData(rec.backendData);
  // The IPv6 half only when the Node has both an IPv6 podCIDR and a public-ipv6: a peer without them
  // keeps its IPv4 route (upstream drops such a peer altogether; a v4-only Windows peer is one).
  if (rec.ipv6PodCIDR !== undefined && rec.publicIPv6 !== undefined && rec.publicIPv6 !== '') {
    lease.ipv6Subnet = rec.ipv6PodCIDR;
    lease.publicIPv6 = rec.publicIPv6;
  }
  return lease;
}

// --- list and watch ---

const NODES = '/api/v1/nodes';

// A real Node is about 10 KB of JSON, of which status (conditions, 30-50 images with digests, nodeInfo)
// and metadata.managedFields are about nine tenths (bench/lib/nodes.mjs takes its shape from a real
// cluster's Node). The kube subnet manager reads only metadata (name, uid, creationTimestamp,
// annotations, resourceVersion) and spec (podCIDR, podCIDRs), as upstream flanneld's nodeToLease
// (pkg/subnet/kube/kube.go): a kubelet heartbeat changes only status, and costs no parse of it. The labels
// (topology, OS, instance type: a quarter of what is left) are never read either (doctor reads the OS label
// from its own GET, not through this cut).
/** The fields of a Node never read (../../kube/watch-lines.ts withoutFields): in a watch line, in a NodeList page. */
export const { event: NODE_EVENT_UNREAD, list: NODE_LIST_UNREAD } = unreadFields([
  { depth: 1, key: 'status', open: '{' },
  { depth: 2, key: 'managedFields', open: '[' },
  { depth: 2, key: 'labels', open: '{' },
]);

/** The Node list over `http`, one page per call, each with a `timeoutMs` deadline; its Nodes without the unread fields. */
export function nodeListFn(http: KubeHttp, timeoutMs: number): ListPageFn {
  return kubeListFn(http, NODES, timeoutMs, NODE_LIST_UNREAD);
}

/** The Node watch over `http`, its Nodes without the unread fields; the bytes of its streams counted in `metrics`. */
export function nodeWatchFn(http: KubeHttp, metrics?: Metrics): WatchFn {
  return kubeWatchFn(http, NODES, { metrics, unread: NODE_EVENT_UNREAD });
}

/** The Node list-watch's options: the generic list-watch's (list, watch, timings, page size), and what a Node's projection needs. */
export type NodeListWatchOptions = Omit<KubeListWatchOptions<NodeLease>, 'resource' | 'kind' | 'project' | 'skipReason' | 'keyOf' | 'maxObjects'> & {
  keys: AnnotationKeys;
  /** EnableIPv6: project the IPv6 half of every Node too (projectNode). */
  ipv6?: boolean;
};

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

/** The observers given, each told everything in turn; undefined when none is given. */
export function observeAll(...given: (NodeObserver | undefined)[]): NodeObserver | undefined {
  const all = given.filter((o): o is NodeObserver => o !== undefined);
  if (all.length <= 1) return all[0];
  return {
    listStarted: () => all.forEach((o) => o.listStarted()),
    seen: (rec) => all.forEach((o) => o.seen(rec)),
    deleted: (rec) => all.forEach((o) => o.deleted(rec)),
    listEnded: () => all.forEach((o) => o.listEnded()),
  };
}

/**
 * The most Nodes one list may hold (their names are kept until the list ends): 40x Kubernetes' largest
 * supported cluster (5,000 nodes, https://kubernetes.io/docs/setup/best-practices/cluster-large/).
 */
export const LIST_NODES_BOUND = 200_000;

export class NodeListWatch {
  private readonly nodes: KubeListWatch<NodeLease>;
  /** Follows the own Node (set once the lease is acquired). */
  observer: NodeObserver | undefined;

  constructor({ keys, ipv6 = false, ...o }: NodeListWatchOptions) {
    this.nodes = new KubeListWatch<NodeLease>({
      ...o,
      resource: 'nodes',
      kind: 'Node',
      project: (node) => projectNode(node, keys, ipv6),
      skipReason: () => 'no valid metadata.name',
      keyOf: (rec) => rec.name,
      maxObjects: LIST_NODES_BOUND,
    });
  }

  /** List + watch until `signal` aborts; see SubnetManager.watchLeases. */
  run(onUpdate: LeaseUpdateHandler, signal: AbortSignal): Promise<void> {
    return this.nodes.run(this.peerUpdates(onUpdate), signal);
  }

  /** The Nodes as peer updates: each list page as `peers`, then `listed` with every lease's key; each event as one peer. */
  private peerUpdates(onUpdate: LeaseUpdateHandler): ListWatchHandler<NodeLease> {
    let keys = new Set<string>();
    return {
      listStarted: () => {
        keys = new Set<string>();
        this.observer?.listStarted();
      },
      listPage: (recs) => {
        const peers: PeerLease[] = [];
        for (const rec of recs) {
          this.observer?.seen(rec);
          const lease = toLease(rec);
          if (lease) keys.add(rec.name);
          peers.push({ key: rec.name, lease });
        }
        // What this page says; `listed` after the last page decides removals.
        onUpdate({ kind: 'peers', peers });
      },
      listSummary: () => ({ leases: keys.size }),
      listEnded: () => {
        onUpdate({ kind: 'listed', keys });
        // Not kept until the next list: a Set of every lease's name is 1.5 MB at 50,000 Nodes (docs/performance.md, session 14).
        keys = new Set<string>();
        this.observer?.listEnded();
      },
      watched: (type, rec) => {
        onUpdate({ kind: 'peers', peers: [{ key: rec.name, lease: type === 'DELETED' ? undefined : toLease(rec) }] });
        if (type === 'DELETED') this.observer?.deleted(rec);
        else this.observer?.seen(rec);
      },
    };
  }
}

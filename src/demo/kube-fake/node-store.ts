// The fake API server's storage, kept as kube-apiserver keeps it in etcd (k8s.io/apiserver
// pkg/storage/etcd3/store.go): one etcd revision stamps every write of every kind (Nodes, Pods, Events,
// Leases: metadata.resourceVersion is the revision of the object's last write, a list carries the
// revision it was read at), the Node history since the last compaction lets a list be read at an older
// revision and a watch resume with the watch cache off, and compact() drops it as etcd compaction does.
// Paged lists follow store.go GetList: a continue token is opaque base64 JSON holding the list's
// revision and the key to start after (storage/continue.go, encodeContinue: {"v","rv","start"}); a page
// after a compaction past that revision is `410 Expired` with the continueExpired message and a new
// token ("rv":-1: continue at the newest revision) in metadata.continue (handleCompactedErrorForPaging).
// Node writes follow pkg/registry/core/node/strategy.go and pkg/apis/core/validation ValidateNodeUpdate:
// the status subresource keeps spec, the main resource keeps status, a set podCIDR never changes.
import type { JsonObject } from './responses.js';
import { kubeTime, type FakeNode, type FakePod } from './nodes.js';
import { mergePatch } from './merge-patch.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface NodeEvent {
  rv: number;
  type: WatchEventType;
  /** The Node after the write (for DELETED: as it was, stamped with the delete's revision). */
  object: FakeNode;
  /** The Node before the write (MODIFIED, DELETED): what a list at an older revision shows. */
  prev?: FakeNode;
}

export interface NodeStoreOptions {
  /** Wall clock for creationTimestamp (ms). */
  now: () => number;
  /** Told every Node event as it is recorded (the watch caches of the running servers). */
  onEvent: (ev: NodeEvent) => void;
}

/** A store answer that is a Status failure (the HTTP layer sends it as one). */
export interface StoreRefusal {
  code: number;
  reason: string;
  message: string;
  /** Status.details, or for a 410 on a continue token, the new token for Status.metadata.continue. */
  details?: JsonObject;
  continue?: string;
}

// k8s.io/apiserver pkg/storage/etcd3/store.go: the messages of a list or page read past a compaction.
export const LIST_EXPIRED = 'The resourceVersion for the provided list is too old.';
export const CONTINUE_EXPIRED =
  'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, ' +
  'or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an ' +
  'inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in ' +
  'the list.';
// pkg/apis/core/validation/validation.go ValidateNodeUpdate.
export const PODCIDR_FORBIDDEN = 'node updates may not change podCIDR except from "" to valid';

/** Thrown by the control API for a write the apiserver would refuse (a set podCIDR changed). */
export class FakeApiRefusal extends Error {
  constructor(readonly refusal: StoreRefusal) {
    super(refusal.message);
    this.name = 'FakeApiRefusal';
  }
}

const clone = <T>(v: T): T => structuredClone(v);

/** The podCIDRs a Node spec holds ([] when none), as the internal type keeps them (podCIDR syncs to podCIDRs[0]). */
function podCIDRsOf(n: FakeNode | undefined): unknown[] {
  const s = n?.spec;
  if (Array.isArray(s?.podCIDRs) && s.podCIDRs.length > 0) return s.podCIDRs;
  return s?.podCIDR ? [s.podCIDR] : [];
}

/**
 * ValidateNodeUpdate: "Allow the controller manager to assign a CIDR to a node if it doesn't have one";
 * once the old Node has podCIDRs they may not change (the Forbidden error on spec.podCIDRs, 422 Invalid).
 */
export function podCIDRChangeRefusal(old: FakeNode, next: FakeNode): StoreRefusal | undefined {
  const before = podCIDRsOf(old);
  const after = podCIDRsOf(next);
  if (before.length === 0 || JSON.stringify(before) === JSON.stringify(after)) return undefined;
  const name = old.metadata.name;
  const cause = `Forbidden: ${PODCIDR_FORBIDDEN}`;
  return {
    code: 422,
    reason: 'Invalid',
    message: `Node "${name}" is invalid: spec.podCIDRs: ${cause}`,
    details: { name, kind: 'Node', causes: [{ reason: 'FieldValueForbidden', message: cause, field: 'spec.podCIDRs' }] },
  };
}

interface ContinueToken {
  rv: number;
  /** The key to start at (the last key returned + "\0"), relative to the resource prefix. */
  start: string;
}

// storage/continue.go: base64.RawURLEncoding of {"v":"meta.k8s.io/v1","rv":N,"start":"key\u0000"}.
function encodeContinue(start: string, rv: number): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv, start })).toString('base64url');
}

function decodeContinue(token: string): ContinueToken | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    return 'continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)';
  }
  const t = parsed as { v?: unknown; rv?: unknown; start?: unknown } | null;
  if (t === null || typeof t !== 'object' || t.v !== 'meta.k8s.io/v1') return 'continue key is not valid: server does not recognize this encoded version';
  if (typeof t.rv !== 'number' || !Number.isInteger(t.rv) || t.rv === 0 || typeof t.start !== 'string' || t.start === '')
    return 'continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)';
  return { rv: t.rv, start: t.start };
}

export class NodeStore {
  private readonly nodes = new Map<string, FakeNode>();
  private readonly pods = new Map<string, FakePod>();
  private readonly leases = new Map<string, JsonObject>();
  private rv = 1;
  /** etcd's compacted revision: reads and watches before it are gone (0: never compacted). */
  private compactedRv = 0;
  /** Node events with rv >= compactedRv, oldest first (what etcd still holds of the Nodes' past). */
  private history: NodeEvent[] = [];
  private uidSeq = 0;
  /**
   * The Nodes at one revision in key (name) order, kept until the next write: etcd reads a page as a key
   * range, so a page costs its own Nodes, not a sort of all of them (a 20,000-Node list is 80 pages).
   */
  private byName: { rv: number; nodes: FakeNode[] } | undefined;

  constructor(private readonly opts: NodeStoreOptions) {}

  /** The newest etcd revision. */
  get resourceVersion(): number {
    return this.rv;
  }

  /** The revision etcd was compacted at (0: never). */
  get compactedRevision(): number {
    return this.compactedRv;
  }

  /** One more write of any kind: the next revision (Events, Pods, Leases share the Nodes' counter). */
  nextRevision(): number {
    return ++this.rv;
  }

  addNode(node: FakeNode): FakeNode {
    const n = clone(node);
    const name = n.metadata?.name;
    if (!name) throw new Error('addNode: metadata.name required');
    if (this.nodes.has(name)) throw new Error(`addNode: node ${name} exists`);
    n.apiVersion = 'v1';
    n.kind = 'Node';
    n.metadata.uid ??= `00000000-0000-4000-8000-${String(++this.uidSeq).padStart(12, '0')}`;
    n.metadata.creationTimestamp ??= kubeTime(this.opts.now());
    this.store(n, 'ADDED', undefined);
    return clone(n);
  }

  /**
   * Apply `mutator` to a copy of the node (mutate in place or return a replacement); emits MODIFIED. A
   * change of a set podCIDR is refused (FakeApiRefusal) as the apiserver refuses it: delete the Node
   * and add it again, as a re-registered node is.
   */
  updateNode(name: string, mutator: (node: FakeNode) => FakeNode | void): FakeNode {
    const cur = this.nodes.get(name);
    if (!cur) throw new Error(`updateNode: node ${name} not found`);
    const copy = clone(cur);
    const next = mutator(copy) ?? copy;
    next.metadata.name = name;
    const refusal = podCIDRChangeRefusal(cur, next);
    if (refusal) throw new FakeApiRefusal(refusal);
    this.store(next, 'MODIFIED', cur);
    return clone(next);
  }

  deleteNode(name: string): boolean {
    const cur = this.nodes.get(name);
    if (!cur) return false;
    this.nodes.delete(name);
    const rv = ++this.rv;
    const obj = clone(cur);
    obj.metadata.resourceVersion = String(rv);
    this.record({ rv, type: 'DELETED', object: obj, prev: cur });
    return true;
  }

  getNode(name: string): FakeNode | undefined {
    const n = this.nodes.get(name);
    return n ? clone(n) : undefined;
  }

  listNodes(): FakeNode[] {
    return [...this.nodes.values()].map(clone);
  }

  addPod(pod: FakePod): FakePod {
    const p = clone(pod);
    p.apiVersion = 'v1';
    p.kind = 'Pod';
    p.metadata.resourceVersion = String(++this.rv);
    this.pods.set(`${p.metadata.namespace}/${p.metadata.name}`, p);
    return clone(p);
  }

  getPod(namespace: string, name: string): FakePod | undefined {
    const p = this.pods.get(`${namespace}/${name}`);
    return p ? clone(p) : undefined;
  }

  /** Pods, all or (field selector `spec.nodeName=X`, as kubectl describe node asks) those on one node. */
  listPods(fieldSelector = ''): FakePod[] {
    const node = /(?:^|,)spec\.nodeName==?([^,]*)/.exec(fieldSelector)?.[1];
    return [...this.pods.values()].filter((p) => node === undefined || (p as { spec?: { nodeName?: string } }).spec?.nodeName === node).map(clone);
  }

  /**
   * The kubelet renews its node Lease (coordination.k8s.io/v1, namespace kube-node-lease) every 10 s
   * (KEP-589 node heartbeats): in a real cluster the etcd revision moves all the time without a Node
   * event. Returns the Lease.
   */
  renewNodeLease(nodeName: string): JsonObject {
    const lease = {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: nodeName, namespace: 'kube-node-lease', resourceVersion: String(++this.rv) },
      spec: { holderIdentity: nodeName, leaseDurationSeconds: 40, renewTime: new Date(this.opts.now()).toISOString() },
    };
    this.leases.set(nodeName, lease);
    return clone(lease);
  }

  /**
   * Compact etcd at the newest revision, as kube-apiserver's compactor does (--etcd-compaction-interval):
   * reads at older revisions, continue tokens from before and watches served by etcd from before fail
   * with 410; the watch cache does not read etcd history, so its watchers see nothing of it.
   */
  compact(): void {
    this.compactedRv = this.rv;
    this.history = this.history.filter((e) => e.rv >= this.compactedRv);
  }

  /**
   * A watch served by etcd (watch cache off, storage/etcd3/watcher.go): it starts at rv+1; etcd refuses
   * a start revision below its compaction (ErrCompacted, "The resourceVersion for the provided watch is
   * too old."). undefined when too old.
   */
  eventsSince(since: number): NodeEvent[] | undefined {
    if (since + 1 < this.compactedRv) return undefined;
    return this.history.filter((e) => e.rv > since);
  }

  /** The current Nodes as ADDED events (a watch started "from now"). */
  currentAsAdded(): NodeEvent[] {
    return [...this.nodes.values()].map((n) => ({ rv: Number(n.metadata.resourceVersion), type: 'ADDED', object: n }));
  }

  /**
   * One page of the NodeList read from etcd (store.go GetList): at the newest revision, or at `atRv`
   * (resourceVersionMatch=Exact, or a continue token's revision), `limit` items by name after the
   * token's start key. A refusal for a revision compacted away or a bad token.
   */
  listPage(query: Record<string, string>, atRv?: number): JsonObject | StoreRefusal {
    let rv = atRv ?? this.rv;
    let start = '';
    if (query.continue) {
      const t = decodeContinue(query.continue);
      if (typeof t === 'string') return { code: 400, reason: 'BadRequest', message: `invalid continue token: ${t}` };
      start = t.start;
      if (t.rv === -1) rv = this.rv;
      else if (t.rv < this.compactedRv) return { code: 410, reason: 'Expired', message: CONTINUE_EXPIRED, continue: encodeContinue(t.start, -1) };
      else rv = t.rv;
    } else if (rv < this.compactedRv) return { code: 410, reason: 'Expired', message: LIST_EXPIRED };
    if (this.byName?.rv !== rv) this.byName = { rv, nodes: this.nodesAt(rv).sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1)) };
    const all = this.byName.nodes;
    let from = 0;
    if (start !== '') {
      from = all.findIndex((n) => n.metadata.name >= start);
      if (from < 0) from = all.length;
    }
    const limit = Number(query.limit);
    const end = Number.isInteger(limit) && limit > 0 ? Math.min(all.length, from + limit) : all.length;
    const items = all.slice(from, end);
    const metadata: JsonObject = { resourceVersion: String(rv) };
    if (end < all.length) metadata.continue = encodeContinue(`${items[items.length - 1].metadata.name}\u0000`, rv);
    return { kind: 'NodeList', apiVersion: 'v1', metadata, items };
  }

  /** The Nodes as they were at revision `rv` (>= the compaction): the current ones with later events undone. */
  private nodesAt(rv: number): FakeNode[] {
    if (rv >= this.rv) return [...this.nodes.values()];
    const at = new Map(this.nodes);
    for (let i = this.history.length - 1; i >= 0 && this.history[i].rv > rv; i--) {
      const e = this.history[i];
      if (e.prev) at.set(e.prev.metadata.name, e.prev);
      else at.delete(e.object.metadata.name);
    }
    return [...at.values()];
  }

  /**
   * Merge `patch` into the Node (strategic or RFC 7386); undefined when there is no such Node, a refusal
   * when the apiserver's validation refuses the result. The status subresource keeps spec, the main
   * resource keeps status (pkg/registry/core/node/strategy.go PrepareForUpdate).
   */
  patchNode(name: string, patch: JsonObject, strategic: boolean, statusSub: boolean): FakeNode | StoreRefusal | undefined {
    const cur = this.nodes.get(name);
    if (!cur) return undefined;
    const next = mergePatch(clone(cur), patch, strategic, '') as FakeNode;
    if (statusSub) next.spec = clone(cur.spec);
    else next.status = clone(cur.status);
    next.metadata = { ...(next.metadata ?? {}), name, uid: cur.metadata.uid, creationTimestamp: cur.metadata.creationTimestamp };
    next.apiVersion = 'v1';
    next.kind = 'Node';
    const refusal = podCIDRChangeRefusal(cur, next);
    if (refusal) return refusal;
    this.store(next, 'MODIFIED', cur);
    return next;
  }

  private store(n: FakeNode, type: WatchEventType, prev: FakeNode | undefined): void {
    const rv = ++this.rv;
    n.metadata.resourceVersion = String(rv);
    this.nodes.set(n.metadata.name, n);
    // The stored object is replaced on every write, never changed in place: the history shares it.
    this.record(prev ? { rv, type, object: n, prev } : { rv, type, object: n });
  }

  private record(ev: NodeEvent): void {
    this.history.push(ev);
    this.opts.onEvent(ev);
  }
}

/** Whether a store answer is a refusal (a Status failure) rather than an object. */
export function isRefusal(v: unknown): v is StoreRefusal {
  return typeof v === 'object' && v !== null && typeof (v as StoreRefusal).code === 'number' && typeof (v as StoreRefusal).reason === 'string';
}

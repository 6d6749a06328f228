// The fake API server's objects and their resourceVersions, kept the way the apiserver keeps them over
// etcd: one counter stamps every write (metadata.resourceVersion), a bounded history of Node events lets
// a watch resume from a resourceVersion, and one older than the history is "too old" (410 Gone). Lists
// are paged with limit/continue and carry the list's resourceVersion (Kubernetes API concepts,
// "Efficient detection of changes" and "Retrieving large results sets in chunks"; k8s.io/apiserver
// pkg/storage/cacher watch_cache.go). Patches follow the Node status subresource strategy.
import type { JsonObject } from './responses.js';
import { kubeTime, type FakeNode, type FakePod } from './nodes.js';
import { mergePatch } from './merge-patch.js';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface NodeEvent {
  rv: number;
  type: WatchEventType;
  object: FakeNode;
}

export interface NodeStoreOptions {
  /** Events kept for resuming watches; older resourceVersions are expired. */
  historyLimit: number;
  /** Wall clock for creationTimestamp (ms). */
  now: () => number;
  /** Told every Node event as it is recorded (the open watches). */
  onEvent: (ev: NodeEvent) => void;
}

const clone = <T>(v: T): T => structuredClone(v);

export class NodeStore {
  private readonly nodes = new Map<string, FakeNode>();
  private readonly pods = new Map<string, FakePod>();
  private rv = 1;
  /** Events with rv > compactedRv are in `history`; a watch from an older rv is expired. */
  private compactedRv = 1;
  private history: NodeEvent[] = [];
  private uidSeq = 0;

  constructor(private readonly opts: NodeStoreOptions) {}

  get resourceVersion(): number {
    return this.rv;
  }

  /** The oldest resourceVersion a watch may resume from. */
  get oldestResumable(): number {
    return this.compactedRv;
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
    this.store(n, 'ADDED');
    return clone(n);
  }

  /** Apply `mutator` to a copy of the node (mutate in place or return a replacement); emits MODIFIED. */
  updateNode(name: string, mutator: (node: FakeNode) => FakeNode | void): FakeNode {
    const cur = this.nodes.get(name);
    if (!cur) throw new Error(`updateNode: node ${name} not found`);
    const copy = clone(cur);
    const next = mutator(copy) ?? copy;
    next.metadata.name = name;
    this.store(next, 'MODIFIED');
    return clone(next);
  }

  deleteNode(name: string): boolean {
    const cur = this.nodes.get(name);
    if (!cur) return false;
    this.nodes.delete(name);
    const rv = ++this.rv;
    const obj = clone(cur);
    obj.metadata.resourceVersion = String(rv);
    this.record({ rv, type: 'DELETED', object: obj });
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

  /** Drop the whole history, past every resourceVersion handed out so far (even an up-to-date watch expires). */
  compact(): void {
    this.history = [];
    this.compactedRv = ++this.rv;
  }

  /** One page of the NodeList, by name, `limit` items after the `continue` token. */
  listPage(query: Record<string, string>): JsonObject {
    const all = [...this.nodes.values()].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
    let start = 0;
    if (query.continue) {
      const after = Buffer.from(query.continue, 'base64url').toString('utf8');
      start = all.findIndex((n) => n.metadata.name > after);
      if (start < 0) start = all.length;
    }
    const limit = Number(query.limit);
    const end = Number.isInteger(limit) && limit > 0 ? Math.min(all.length, start + limit) : all.length;
    const items = all.slice(start, end);
    const metadata: JsonObject = { resourceVersion: String(this.rv) };
    if (end < all.length) metadata.continue = Buffer.from(items[items.length - 1].metadata.name).toString('base64url');
    return { kind: 'NodeList', apiVersion: 'v1', metadata, items };
  }

  /** The current Nodes as ADDED events (a watch started "from now"). */
  currentAsAdded(): NodeEvent[] {
    return [...this.nodes.values()].map((n) => ({ rv: Number(n.metadata.resourceVersion), type: 'ADDED', object: n }));
  }

  /** The events after `since`; undefined when `since` is older than the history (410 Gone). */
  eventsSince(since: number): NodeEvent[] | undefined {
    return since < this.compactedRv ? undefined : this.history.filter((e) => e.rv > since);
  }

  /**
   * Merge `patch` into the Node (strategic or RFC 7386); undefined when there is no such Node. The
   * status subresource keeps spec, the main resource keeps status (k8s pkg/registry/core/node strategy).
   */
  patchNode(name: string, patch: JsonObject, strategic: boolean, statusSub: boolean): FakeNode | undefined {
    const cur = this.nodes.get(name);
    if (!cur) return undefined;
    const next = mergePatch(clone(cur), patch, strategic, '') as FakeNode;
    if (statusSub) next.spec = clone(cur.spec);
    else next.status = clone(cur.status);
    next.metadata = { ...(next.metadata ?? {}), name, uid: cur.metadata.uid, creationTimestamp: cur.metadata.creationTimestamp };
    next.apiVersion = 'v1';
    next.kind = 'Node';
    this.store(next, 'MODIFIED');
    return next;
  }

  private store(n: FakeNode, type: WatchEventType): void {
    const rv = ++this.rv;
    n.metadata.resourceVersion = String(rv);
    this.nodes.set(n.metadata.name, n);
    this.record({ rv, type, object: clone(n) });
  }

  private record(ev: NodeEvent): void {
    this.history.push(ev);
    while (this.history.length > this.opts.historyLimit) {
      const dropped = this.history.shift()!;
      this.compactedRv = dropped.rv;
    }
    this.opts.onEvent(ev);
  }
}

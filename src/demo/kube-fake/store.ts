// The fake API server's storage, kept as kube-apiserver keeps it in etcd (k8s.io/apiserver
// pkg/storage/etcd3/store.go): one etcd revision stamps every write of every kind (Nodes, Namespaces,
// Pods, NetworkPolicies, Events, Leases: metadata.resourceVersion is the revision of the object's last
// write, a list carries the revision it was read at), each listed and watched resource keeps its history
// since the last compaction and pages its lists with continue tokens (./collection.ts), and compact()
// drops the history as etcd compaction does.
// Node writes follow pkg/registry/core/node/strategy.go and pkg/apis/core/validation ValidateNodeUpdate:
// the status subresource keeps spec, the main resource keeps status, a set podCIDR never changes.
import type { JsonObject } from './responses.js';
import { kubeTime, type FakeNode, type FakePod } from './nodes.js';
import { mergePatch } from './merge-patch.js';
import { Collection, type Etcd, type ResourceInfo, type StoredEvent, type StoredObject, type StoreRefusal } from './collection.js';

export interface ObjectStoreOptions {
  /** Wall clock for creationTimestamp (ms). */
  now: () => number;
  /** Told every write of a listed and watched resource as it is recorded (the watch caches of the running servers). */
  onEvent: (ev: StoredEvent) => void;
}

/**
 * The resources listed and watched, as kube-apiserver serves them: Nodes and Namespaces cluster-scoped,
 * Pods and NetworkPolicies namespaced, listed and watched across namespaces at these paths
 * (https://kubernetes.io/docs/reference/kubernetes-api/: core/v1 and networking.k8s.io/v1).
 */
export const RESOURCES = {
  nodes: { resource: 'nodes', path: '/api/v1/nodes', apiVersion: 'v1', kind: 'Node', namespaced: false },
  namespaces: { resource: 'namespaces', path: '/api/v1/namespaces', apiVersion: 'v1', kind: 'Namespace', namespaced: false },
  pods: { resource: 'pods', path: '/api/v1/pods', apiVersion: 'v1', kind: 'Pod', namespaced: true },
  networkpolicies: { resource: 'networkpolicies', path: '/apis/networking.k8s.io/v1/networkpolicies', apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', namespaced: true },
} as const satisfies Record<string, ResourceInfo>;

export type ResourceName = keyof typeof RESOURCES;

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

/** The etcd of the fake API server: the revision counter, the compaction, and every resource's objects. */
export class ObjectStore implements Etcd {
  private readonly collections = new Map<string, Collection>();
  readonly nodes: Collection<FakeNode>;
  private readonly leases = new Map<string, JsonObject>();
  private rv = 1;
  /** etcd's compacted revision: reads and watches before it are gone (0: never compacted). */
  private compactedRv = 0;
  private uidSeq = 0;

  constructor(private readonly opts: ObjectStoreOptions) {
    for (const info of Object.values(RESOURCES)) this.collections.set(info.resource, new Collection(info, this));
    this.nodes = this.collections.get('nodes') as Collection<FakeNode>;
  }

  /** The newest etcd revision. */
  get revision(): number {
    return this.rv;
  }

  /** The revision etcd was compacted at (0: never). */
  get compactedRevision(): number {
    return this.compactedRv;
  }

  /** One more write of any kind: the next revision (Events and Leases share the listed resources' counter). */
  nextRevision(): number {
    return ++this.rv;
  }

  onEvent(ev: StoredEvent): void {
    this.opts.onEvent(ev);
  }

  /** The collection of a listed and watched resource. */
  collection(resource: string): Collection | undefined {
    return this.collections.get(resource);
  }

  /**
   * Create an object of `resource` (a copy of `obj`) as the API server does: a uid and a creationTimestamp
   * when it has none; throws when its key is taken (409 AlreadyExists for a client).
   */
  add<T extends StoredObject>(resource: ResourceName, obj: T): T {
    const c = this.collections.get(resource)!;
    const o = clone(obj);
    if (!o.metadata?.name) throw new Error(`add ${resource}: metadata.name required`);
    if (c.info.namespaced && !o.metadata.namespace) throw new Error(`add ${resource}: metadata.namespace required`);
    if (c.get(c.keyOf(o))) throw new Error(`add ${resource}: ${c.keyOf(o)} exists`);
    o.metadata.uid ??= `00000000-0000-4000-8000-${String(++this.uidSeq).padStart(12, '0')}`;
    o.metadata.creationTimestamp ??= kubeTime(this.opts.now());
    c.put(o);
    return clone(o);
  }

  /** Apply `mutator` to a copy of the object under `key` (mutate in place or return a replacement); emits MODIFIED. */
  update<T extends StoredObject>(resource: ResourceName, key: string, mutator: (obj: T) => T | void): T {
    const c = this.collections.get(resource)! as Collection<T>;
    const cur = c.get(key);
    if (!cur) throw new Error(`update ${resource}: ${key} not found`);
    const copy = clone(cur);
    const next = mutator(copy) ?? copy;
    next.metadata = { ...next.metadata, name: cur.metadata.name, namespace: cur.metadata.namespace, uid: cur.metadata.uid };
    c.put(next);
    return clone(next);
  }

  /** Delete the object under `key` (`name`, or `namespace/name`); false when there is none. */
  remove(resource: ResourceName, key: string): boolean {
    return this.collections.get(resource)!.delete(key);
  }

  get<T extends StoredObject>(resource: ResourceName, key: string): T | undefined {
    const o = this.collections.get(resource)!.get(key);
    return o ? (clone(o) as T) : undefined;
  }

  list<T extends StoredObject>(resource: ResourceName): T[] {
    return this.collections
      .get(resource)!
      .all()
      .map((o) => clone(o) as T);
  }

  addNode(node: FakeNode): FakeNode {
    return this.add('nodes', node);
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
    this.nodes.put(next);
    return clone(next);
  }

  deleteNode(name: string): boolean {
    return this.nodes.delete(name);
  }

  getNode(name: string): FakeNode | undefined {
    return this.get('nodes', name);
  }

  listNodes(): FakeNode[] {
    return this.list('nodes');
  }

  addPod(pod: FakePod): FakePod {
    return this.add('pods', pod);
  }

  getPod(namespace: string, name: string): FakePod | undefined {
    return this.get('pods', `${namespace}/${name}`);
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
    for (const c of this.collections.values()) c.compact();
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
    const refusal = podCIDRChangeRefusal(cur, next);
    if (refusal) return refusal;
    this.nodes.put(next);
    return next;
  }
}

/** Whether a store answer is a refusal (a Status failure) rather than an object. */
export function isRefusal(v: unknown): v is StoreRefusal {
  return typeof v === 'object' && v !== null && typeof (v as StoreRefusal).code === 'number' && typeof (v as StoreRefusal).reason === 'string';
}

// What the NetworkPolicy controller keeps of the cluster: the projected Pods, Namespaces and NetworkPolicies
// (../netpol/types.ts), fed by three list-watches (../kube/list-watch.ts KubeListWatch, one per resource, as
// client-node's ListWatch<T> is one per path). The informer's store half, as kube-router's and Calico's
// policy controllers keep one per resource (client-go tools/cache thread_safe_store.go): a relist replaces
// what the previous list held only once it has ended (`listEnded`), so nothing is dropped on a partial view;
// a resource is `synced` from its first complete list on (cache.WaitForCacheSync: no enforcement decided on a
// partial cluster). Each change bumps `version`, which the controller's desired set reads to recompute.
import type { ListWatchHandler, WatchEventType } from '../kube/list-watch.js';
import type { ClusterState } from '../netpol/intent.js';
import type { Namespace, NetworkPolicy, Pod } from '../netpol/types.js';

/** One resource's objects by key (`namespace/name`, or `name` for a Namespace). */
class Store<T> {
  readonly items = new Map<string, T>();
  synced = false;
  private listing: Set<string> | undefined;

  constructor(
    private readonly keyOf: (item: T) => string,
    private readonly changed: () => void,
  ) {}

  handler(): ListWatchHandler<T> {
    return {
      listStarted: () => {
        this.listing = new Set();
      },
      listPage: (items) => {
        for (const item of items) {
          const k = this.keyOf(item);
          this.listing?.add(k);
          this.items.set(k, item);
        }
        this.changed();
      },
      listEnded: () => {
        const seen = this.listing ?? new Set<string>();
        for (const k of [...this.items.keys()]) if (!seen.has(k)) this.items.delete(k);
        this.listing = undefined;
        this.synced = true;
        this.changed();
      },
      listSummary: () => ({ kept: this.items.size }),
      watched: (type: WatchEventType, item: T) => {
        if (type === 'DELETED') this.items.delete(this.keyOf(item));
        else this.items.set(this.keyOf(item), item);
        this.changed();
      },
    };
  }
}

export const namespacedKey = (o: { namespace: string; name: string }): string => `${o.namespace}/${o.name}`;

export class ClusterCache {
  /** Bumped on every change of any resource. */
  version = 0;
  readonly pods = new Store<Pod>(namespacedKey, () => this.bump());
  readonly namespaces = new Store<Namespace>(
    (n) => n.name,
    () => this.bump(),
  );
  readonly policies = new Store<NetworkPolicy>(namespacedKey, () => this.bump());
  private readonly listeners: (() => void)[] = [];

  /** Every resource has been listed completely once. */
  get synced(): boolean {
    return this.pods.synced && this.namespaces.synced && this.policies.synced;
  }

  onChange(fn: () => void): void {
    this.listeners.push(fn);
  }

  state(): ClusterState {
    return { pods: [...this.pods.items.values()], namespaces: [...this.namespaces.items.values()], policies: [...this.policies.items.values()] };
  }

  private bump(): void {
    this.version++;
    for (const fn of this.listeners) fn();
  }
}

// One resource's objects in the fake API server's etcd, as k8s.io/apiserver pkg/storage/etcd3/store.go
// keeps them: every object under its key (`<name>` for a cluster-scoped resource, `<namespace>/<name>` for
// a namespaced one, below the resource's prefix `/registry/<resource>/`), stamped with the revision of
// its last write; the resource's history since the last compaction, so a list can be read at an older
// revision and a watch served by etcd (the watch cache off) resume; and the list, paged in key order:
// store.go GetList reads `limit` keys from the start key, and its continue token is opaque base64 JSON
// holding the list's revision and the key to start after, relative to the prefix (storage/continue.go,
// encodeContinue: {"v","rv","start"}). A page after a compaction past that revision is `410 Expired` with
// the continueExpired message and a new token ("rv":-1: continue at the newest revision) in
// metadata.continue (store.go handleCompactedErrorForPaging). The revision counter and the compaction are
// the store's (./store.ts): one for every resource, as in etcd.
import type { FakeObjectMeta } from './nodes.js';
import type { JsonObject } from './responses.js';

/** What the fake stores of any object. */
export interface StoredObject {
  apiVersion?: string;
  kind?: string;
  metadata: FakeObjectMeta;
  [k: string]: unknown;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** One write, as etcd's watch reports it and the watch cache keeps it. */
export interface StoredEvent {
  /** The resource written (`nodes`, `pods`, ...): which watch cache it goes to. */
  resource: string;
  rv: number;
  type: WatchEventType;
  /** The object after the write (for DELETED: as it was, stamped with the delete's revision). */
  object: StoredObject;
  /** The object before the write (MODIFIED, DELETED): what a list at an older revision shows. */
  prev?: StoredObject;
}

/** A resource the fake serves: its path, names and scope. */
export interface ResourceInfo {
  /** The plural, as in its path and its etcd prefix. */
  resource: string;
  /** The collection's path (`/api/v1/nodes`, `/apis/networking.k8s.io/v1/networkpolicies`): list and watch. */
  path: string;
  apiVersion: string;
  kind: string;
  namespaced: boolean;
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

/** The etcd a collection lives in: the one revision counter and the compaction, shared by every resource. */
export interface Etcd {
  /** The newest revision. */
  readonly revision: number;
  /** The revision etcd was compacted at (0: never). */
  readonly compactedRevision: number;
  /** Take the next revision for a write. */
  nextRevision(): number;
  /** Told every write as it is recorded (the watch caches of the running servers). */
  onEvent(ev: StoredEvent): void;
}

export class Collection<T extends StoredObject = StoredObject> {
  private readonly objects = new Map<string, T>();
  /** This resource's events with rv >= the compaction, oldest first (what etcd still holds of its past). */
  private history: StoredEvent[] = [];
  /** The revision of this resource's last write (0: none yet). */
  private lastWrite = 0;
  /**
   * The objects at one revision in key order, kept until this resource's next write: etcd reads a page as a
   * key range, so a page costs its own objects, not a sort of all of them (a 20,000-Node list is 80 pages).
   */
  private byKey: { at: number; keys: string[]; objects: T[] } | undefined;

  constructor(
    readonly info: ResourceInfo,
    private readonly etcd: Etcd,
  ) {}

  /** The object's key below the resource's prefix: `name`, or `namespace/name`. */
  keyOf(obj: StoredObject): string {
    return this.info.namespaced ? `${obj.metadata.namespace ?? ''}/${obj.metadata.name}` : obj.metadata.name;
  }

  /** The stored object (not a copy: the store hands out copies). */
  get(key: string): T | undefined {
    return this.objects.get(key);
  }

  all(): T[] {
    return [...this.objects.values()];
  }

  /**
   * Write `obj` (ADDED when its key is new, MODIFIED otherwise) at the next revision. The stored object is
   * replaced on every write, never changed in place: the history shares it.
   */
  put(obj: T): void {
    const key = this.keyOf(obj);
    const prev = this.objects.get(key);
    const rv = this.etcd.nextRevision();
    obj.apiVersion = this.info.apiVersion;
    obj.kind = this.info.kind;
    obj.metadata.resourceVersion = String(rv);
    this.objects.set(key, obj);
    this.record(prev ? { resource: this.info.resource, rv, type: 'MODIFIED', object: obj, prev } : { resource: this.info.resource, rv, type: 'ADDED', object: obj });
  }

  /** Delete the object under `key`; false when there is none. */
  delete(key: string): boolean {
    const cur = this.objects.get(key);
    if (!cur) return false;
    this.objects.delete(key);
    const rv = this.etcd.nextRevision();
    const obj = structuredClone(cur);
    obj.metadata.resourceVersion = String(rv);
    this.record({ resource: this.info.resource, rv, type: 'DELETED', object: obj, prev: cur });
    return true;
  }

  /** Drop the history before the store's compaction (etcd compaction). */
  compact(): void {
    const at = this.etcd.compactedRevision;
    this.history = this.history.filter((e) => e.rv >= at);
  }

  /**
   * A watch served by etcd (watch cache off, storage/etcd3/watcher.go): it starts at rv+1; etcd refuses a
   * start revision below its compaction (ErrCompacted, "The resourceVersion for the provided watch is too
   * old."). undefined when too old.
   */
  eventsSince(since: number): StoredEvent[] | undefined {
    if (since + 1 < this.etcd.compactedRevision) return undefined;
    return this.history.filter((e) => e.rv > since);
  }

  /** The current objects as ADDED events (a watch started "from now"). */
  currentAsAdded(): StoredEvent[] {
    return [...this.objects.values()].map((o) => ({ resource: this.info.resource, rv: Number(o.metadata.resourceVersion), type: 'ADDED', object: o }));
  }

  /**
   * One page of the list read from etcd (store.go GetList): at the newest revision, or at `atRv`
   * (resourceVersionMatch=Exact, or a continue token's revision), `limit` objects in key order after the
   * token's start key, those `keep` refuses left out (a field selector: the page still holds `limit` that
   * match, as GetList reads on until it has them). A refusal for a revision compacted away or a bad token.
   */
  listPage(query: Record<string, string>, atRv?: number, keep?: (obj: T) => boolean): JsonObject | StoreRefusal {
    const newest = this.etcd.revision;
    let rv = atRv ?? newest;
    let start = '';
    if (query.continue) {
      const t = decodeContinue(query.continue);
      if (typeof t === 'string') return { code: 400, reason: 'BadRequest', message: `invalid continue token: ${t}` };
      start = t.start;
      if (t.rv === -1) rv = newest;
      else if (t.rv < this.etcd.compactedRevision) return { code: 410, reason: 'Expired', message: CONTINUE_EXPIRED, continue: encodeContinue(t.start, -1) };
      else rv = t.rv;
    } else if (rv < this.etcd.compactedRevision) return { code: 410, reason: 'Expired', message: LIST_EXPIRED };
    // Every revision since this resource's last write reads the same objects.
    const at = Math.min(rv, this.lastWrite);
    if (this.byKey?.at !== at) {
      const entries = [...this.objectsAt(at).entries()].sort(([a], [b]) => (a < b ? -1 : 1));
      this.byKey = { at, keys: entries.map(([k]) => k), objects: entries.map(([, o]) => o) };
    }
    const { keys, objects } = this.byKey;
    // The first key at or after the start key, by binary search: a page of a 50,000-Node list costs its own
    // objects, not a scan of the keys before it.
    let from = 0;
    for (let hi = start === '' ? 0 : keys.length; from < hi;) {
      const mid = (from + hi) >>> 1;
      if (keys[mid] < start) from = mid + 1;
      else hi = mid;
    }
    const limit = Number(query.limit);
    const max = Number.isInteger(limit) && limit > 0 ? limit : Infinity;
    const items: T[] = [];
    let i = from;
    for (; i < objects.length && items.length < max; i++) if (!keep || keep(objects[i])) items.push(objects[i]);
    const metadata: JsonObject = { resourceVersion: String(rv) };
    if (i < objects.length && items.length > 0) metadata.continue = encodeContinue(`${keys[i - 1]}\u0000`, rv);
    return { kind: `${this.info.kind}List`, apiVersion: this.info.apiVersion, metadata, items };
  }

  /** The objects by key as they were at revision `rv` (>= the compaction): the current ones with later events undone. */
  private objectsAt(rv: number): Map<string, T> {
    const at = new Map(this.objects);
    if (rv >= this.lastWrite) return at;
    for (let i = this.history.length - 1; i >= 0 && this.history[i].rv > rv; i--) {
      const e = this.history[i];
      if (e.prev) at.set(this.keyOf(e.prev), e.prev as T);
      else at.delete(this.keyOf(e.object));
    }
    return at;
  }

  private record(ev: StoredEvent): void {
    this.lastWrite = ev.rv;
    this.history.push(ev);
    this.etcd.onEvent(ev);
  }
}

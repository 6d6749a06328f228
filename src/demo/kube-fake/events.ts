// The fake API server's core/v1 Events: create (POST, name given or generateName), get, merge or
// strategic-merge patch of top-level fields (what client-go's recorder patches: count, lastTimestamp,
// message), and list (all namespaces or one) filtered by the involvedObject field selectors kubectl
// describe uses (staging/src/k8s.io/kubectl/pkg/describe: searchEvents -> GetFieldSelector:
// involvedObject.name/namespace/kind/uid). Names are unique per namespace (409 AlreadyExists otherwise).
// A create is refused (422) when the Event's namespace is not its object's, as the kube-apiserver's
// validation of a core/v1 Event without eventTime does (pkg/apis/core/validation/events.go
// legacyValidateEvent: involvedObject.namespace empty -> the Event's namespace is "" or "default"; set -> equal).
// Every write takes the next etcd revision, shared with every listed resource (store.ts).
import type { JsonObject } from './responses.js';

type Stored = JsonObject & { metadata: JsonObject & { name: string; namespace: string } };

export type EventAnswer = { code: number; body?: JsonObject; message?: string };

export class EventStore {
  private readonly byKey = new Map<string, Stored>();
  private seq = 0;

  constructor(
    private readonly now: () => number,
    /** The next etcd revision (one counter for every kind). */
    private readonly nextRevision: () => number,
  ) {}

  list(namespace?: string, fieldSelector?: string): JsonObject[] {
    const wanted = (fieldSelector ?? '')
      .split(',')
      .filter((s) => s !== '')
      .map((s) => {
        const i = s.indexOf('=');
        return i < 0 ? ([s, ''] as const) : ([s.slice(0, i), s.slice(i + 1).replace(/^=/, '')] as const);
      });
    return [...this.byKey.values()].filter((e) => (namespace === undefined || e.metadata.namespace === namespace) && wanted.every(([k, v]) => field(e, k) === v));
  }

  create(namespace: string, body: unknown): EventAnswer {
    if (!isObject(body)) return { code: 400, message: 'the Event must be a JSON object' };
    const meta = isObject(body.metadata) ? body.metadata : {};
    const name = typeof meta.name === 'string' && meta.name !== '' ? meta.name : typeof meta.generateName === 'string' ? `${meta.generateName}${(++this.seq).toString(36)}` : '';
    if (name === '') return { code: 422, message: 'Event "" is invalid: metadata.name: Required value' };
    if (typeof meta.namespace === 'string' && meta.namespace !== namespace)
      return { code: 400, message: 'the namespace of the object does not match the namespace on the request' };
    const involved = isObject(body.involvedObject) && typeof body.involvedObject.namespace === 'string' ? body.involvedObject.namespace : '';
    if (involved === '' ? namespace !== 'default' : namespace !== involved)
      return { code: 422, message: `Event "${name}" is invalid: involvedObject.namespace: Invalid value: "${involved}": does not match event.namespace` };
    if (this.byKey.has(`${namespace}/${name}`)) return { code: 409, message: `events "${name}" already exists` };
    const rv = this.nextRevision();
    const ev: Stored = {
      ...body,
      kind: 'Event',
      apiVersion: 'v1',
      metadata: {
        ...meta,
        name,
        namespace,
        uid: `event-${++this.seq}`,
        resourceVersion: String(rv),
        creationTimestamp: new Date(this.now()).toISOString().replace(/\.\d{3}Z$/, 'Z'),
      },
    };
    this.byKey.set(`${namespace}/${name}`, ev);
    return { code: 201, body: ev };
  }

  get(namespace: string, name: string): JsonObject | undefined {
    return this.byKey.get(`${namespace}/${name}`);
  }

  patch(namespace: string, name: string, body: unknown): EventAnswer {
    const cur = this.byKey.get(`${namespace}/${name}`);
    if (!cur) return { code: 404, message: `events "${name}" not found` };
    if (!isObject(body)) return { code: 400, message: 'the patch body must be a JSON object' };
    const next: Stored = { ...cur };
    for (const [k, v] of Object.entries(body)) if (k !== 'metadata') next[k] = v;
    next.metadata = { ...cur.metadata, resourceVersion: String(this.nextRevision()) };
    this.byKey.set(`${namespace}/${name}`, next);
    return { code: 200, body: next };
  }

  delete(namespace: string, name: string): boolean {
    return this.byKey.delete(`${namespace}/${name}`);
  }
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A dotted field of an Event (`involvedObject.name`), "" when absent, as field selectors compare. */
function field(e: JsonObject, path: string): string {
  let v: unknown = e;
  for (const part of path.split('.')) v = isObject(v) ? v[part] : undefined;
  if (typeof v === 'string') return v;
  return typeof v === 'number' || typeof v === 'boolean' ? String(v) : '';
}

// Services (core/v1) and EndpointSlices (discovery.k8s.io/v1) of the fake API server: what kube-proxy lists
// and watches to program its load balancers, and what `flanneld doctor` lists to judge them. Lists, all
// namespaces or one, filtered by `labelSelector` as kube-apiserver filters them (apimachinery
// pkg/labels/selector.go Parse: `key`, `!key`, `key=value`, `key==value`, `key!=value`, comma-joined; the
// set forms `in`/`notin` are not modelled and answered 400). Each object written stamps the store's one
// revision (./store.ts: etcd's revision is shared by every kind). ConfigMaps (core/v1) are kept here too, read
// one by name as `flanneld doctor` reads the Linux flannel ConfigMap (kube-flannel-cfg) in the DaemonSet pod.
import type { JsonObject } from './responses.js';

/** A namespaced object as a test hands it in (kind and apiVersion are filled in). */
export interface FakeNamespacedObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace: string; labels?: Record<string, string>; resourceVersion?: string; [k: string]: unknown };
  [k: string]: unknown;
}

type Requirement = (labels: Record<string, string>) => boolean;

/** One `labelSelector` as a list of requirements, or the reason it is not one this fake reads. */
export function parseLabelSelector(text: string | undefined): Requirement[] | string {
  const out: Requirement[] = [];
  for (const raw of (text ?? '').split(',')) {
    const term = raw.trim();
    if (term === '') continue;
    let m: RegExpExecArray | null;
    if ((m = /^!([A-Za-z0-9./_-]+)$/.exec(term))) {
      const k = m[1];
      out.push((l) => !(k in l));
    } else if ((m = /^([A-Za-z0-9./_-]+)\s*(!=|==|=)\s*([A-Za-z0-9._-]*)$/.exec(term))) {
      const [, k, op, v] = m;
      out.push(op === '!=' ? (l) => l[k] !== v : (l) => l[k] === v);
    } else if ((m = /^([A-Za-z0-9./_-]+)$/.exec(term))) {
      const k = m[1];
      out.push((l) => k in l);
    } else {
      return `unable to parse requirement: ${JSON.stringify(term)} (the fake apiserver reads key, !key, key=value, key!=value)`;
    }
  }
  return out;
}

/** The apiserver's kinds this store serves, by resource. */
const KINDS = {
  services: { apiVersion: 'v1', kind: 'Service', list: 'ServiceList' },
  endpointslices: { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', list: 'EndpointSliceList' },
  configmaps: { apiVersion: 'v1', kind: 'ConfigMap', list: 'ConfigMapList' },
} as const;
export type ServiceResource = keyof typeof KINDS;

export class ServiceStore {
  private readonly objects: Record<ServiceResource, Map<string, FakeNamespacedObject>> = { services: new Map(), endpointslices: new Map(), configmaps: new Map() };

  /** `nextRevision`: the store's one revision counter (./store.ts ObjectStore.nextRevision). */
  constructor(private readonly nextRevision: () => number) {}

  add(resource: ServiceResource, obj: FakeNamespacedObject): FakeNamespacedObject {
    const k = KINDS[resource];
    const o = structuredClone(obj);
    o.apiVersion = k.apiVersion;
    o.kind = k.kind;
    o.metadata.resourceVersion = String(this.nextRevision());
    this.objects[resource].set(`${o.metadata.namespace}/${o.metadata.name}`, o);
    return structuredClone(o);
  }

  /** The object `namespace/name`, or undefined when there is none. */
  get(resource: ServiceResource, namespace: string, name: string): FakeNamespacedObject | undefined {
    const o = this.objects[resource].get(`${namespace}/${name}`);
    return o && structuredClone(o);
  }

  /** The list body kube-apiserver answers (`namespace` undefined: all namespaces), or a 400's message. */
  list(resource: ServiceResource, namespace: string | undefined, labelSelector: string | undefined, resourceVersion: string): JsonObject | string {
    const reqs = parseLabelSelector(labelSelector);
    if (typeof reqs === 'string') return reqs;
    const items = [...this.objects[resource].values()]
      .filter((o) => namespace === undefined || o.metadata.namespace === namespace)
      .filter((o) => reqs.every((r) => r(o.metadata.labels ?? {})))
      .sort((a, b) => `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`))
      .map((o) => structuredClone(o));
    const k = KINDS[resource];
    return { kind: k.list, apiVersion: k.apiVersion, metadata: { resourceVersion }, items };
  }
}

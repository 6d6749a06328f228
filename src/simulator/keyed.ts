// The model's keyed view of the state document (./state.ts): networks and endpoints by ID, each
// network's policies by a canonical key, its SetPolicy IP sets by Id with how many ACL rules and nested
// sets name each, its endpoints' IPs, each endpoint's policies by a canonical key, routes by
// destination/next hop/interface, namespaces by ID with their member endpoints. With it a call costs O(1) per item it touches, not O(n)
// in what the node holds: a 5,000-peer cold start used to spend a third of its time in the simulator
// checking each new policy against every held one (docs/performance.md, The simulator's cost).
// The document stays what the file holds and what readers get. The view is built from it in one pass and
// kept in step by the model's own changes; an array the view changed is rebuilt from the view only when
// the document is read whole (`flush`: a snapshot, a list, the file write). A change the view does not
// know (a test's edit, another process's write, a rollback) drops the view (./store.ts), and the next
// call builds it again. Objects are shared between the view and the document, never copied.
import type { HcnEndpoint, HcnNetwork, HcnPolicy } from '../hns/schema.js';
import { contains, network, parseCidr, parseIp4 } from '../basics/ip4.js';
import { aclOf, listItems, setIdsOf, setOf } from './acl.js';
import type { SimNamespace } from './namespaces.js';
import type { DataplaneState, SimRoute } from './state.js';

/**
 * Items in document order, found by key. Several items may share a key (a hand-written file may hold a
 * policy twice): `first` is the earliest, as a scan of the array would find it.
 */
class Keyed<T extends object> {
  private readonly order = new Set<T>();
  private readonly byKey = new Map<string, T[]>();

  constructor(
    private readonly keyOf: (item: T) => string,
    items: readonly T[] = [],
  ) {
    for (const item of items) this.add(item);
  }

  get size(): number {
    return this.order.size;
  }

  add(item: T): void {
    this.order.add(item);
    const key = this.keyOf(item);
    const same = this.byKey.get(key);
    if (same) same.push(item);
    else this.byKey.set(key, [item]);
  }

  first(key: string): T | undefined {
    return this.byKey.get(key)?.[0];
  }

  count(key: string): number {
    return this.byKey.get(key)?.length ?? 0;
  }

  /** Remove this item (a no-op when it is not held). */
  delete(item: T): void {
    if (!this.order.delete(item)) return;
    const key = this.keyOf(item);
    const same = this.byKey.get(key)!;
    if (same.length === 1) this.byKey.delete(key);
    else same.splice(same.indexOf(item), 1);
  }

  values(): T[] {
    return [...this.order];
  }
}

/** IDs are GUIDs, compared without case (hns/schema.ts sameId); an object without one is found by no ID. */
const idKey = (id: string | undefined): string => (id === undefined ? '\0none' : id.toUpperCase());

/** A route's identity for CreateIpForwardEntry2 / DeleteIpForwardEntry2 (prefix, next hop, interface; not the metric). */
export const routeKey = (r: Pick<SimRoute, 'DestinationPrefix' | 'NextHop' | 'InterfaceIndex'>): string => `${r.DestinationPrefix}|${r.NextHop}|${r.InterfaceIndex}`;

const DEFAULT = '0.0.0.0/0';

const policyKeys = new WeakMap<object, string>();

/**
 * A policy's identity for HNS: its JSON with keys sorted and undefined members left out. Computed once per
 * policy object (a request's policy hands its key to the stored copy, `keepKey`).
 */
export function policyKey(p: HcnPolicy): string {
  let k = policyKeys.get(p);
  if (k === undefined) {
    k = canonicalJson(p) ?? ''; // an object always has a text
    policyKeys.set(p, k);
  }
  return k;
}

/** Give `copy` the key of `original` (the stored clone of a request's policy). */
export function keepKey(original: HcnPolicy, copy: HcnPolicy): HcnPolicy {
  policyKeys.set(copy, policyKey(original));
  return copy;
}

/**
 * `JSON.stringify(v)` with every object's own keys in canonical order and undefined (or function) members
 * left out. Written out rather than as JSON.stringify with a replacer that rebuilt each object from its
 * sorted entries: that made four arrays and an object per object of every call's policies, a quarter of
 * the simulated HNS's garbage per node event (docs/performance.md, session 12). The order is the one those
 * rebuilt objects had: array-index keys first, ascending (JavaScript enumerates them so whatever the
 * insertion order), then the other keys by UTF-16 code units. The parts are joined once: a text built by
 * `+=` stays a tree of its parts in V8, about 21 nodes and 1 KB a policy key that the store keeps (21 MB of
 * the heap at 20,000 peers: docs/performance.md, session 13), where the joined text is one string.
 */
export function canonicalJson(v: unknown): string | undefined {
  const out: string[] = [];
  return writeJson(v, out) ? out.join('') : undefined;
}

/** Append `v`'s canonical JSON to `out`; false (nothing appended) when it has none (undefined, a function). */
function writeJson(v: unknown, out: string[]): boolean {
  if (v === null) {
    out.push('null');
    return true;
  }
  if (typeof v === 'object') {
    const o = v as Record<string, unknown> & { toJSON?: unknown };
    if (typeof o.toJSON === 'function') return writeJson((o.toJSON as () => unknown)(), out);
    if (Array.isArray(v)) {
      out.push('[');
      for (let i = 0; i < v.length; i++) {
        if (i > 0) out.push(',');
        if (!writeJson(v[i], out)) out.push('null');
      }
      out.push(']');
      return true;
    }
    const keys = Object.keys(o);
    // Object.keys lists the array-index keys first, ascending; the rest in insertion order: sort those
    // (sort's default order is by UTF-16 code units).
    let first = 0;
    while (first < keys.length && isArrayIndex(keys[first])) first++;
    if (keys.length - first > 1) keys.push(...keys.splice(first).sort());
    out.push('{');
    let members = 0;
    for (const k of keys) {
      const at = out.length;
      out.push(members > 0 ? ',' : '', JSON.stringify(k), ':');
      if (writeJson(o[k], out)) members++;
      else out.length = at; // an undefined member is left out
    }
    out.push('}');
    return true;
  }
  const text = JSON.stringify(v);
  if (text === undefined) return false;
  out.push(text);
  return true;
}

/** Whether `k` is an array index (a canonical uint32 below 2^32 - 1), which JavaScript enumerates first. */
function isArrayIndex(k: string): boolean {
  const n = Number(k);
  return Number.isInteger(n) && n >= 0 && n < 4294967295 && String(n) === k;
}

/** Add `delta` to the count of each of `ids` (a count that reaches 0 is dropped). */
function countRefs(refs: Map<string, number>, ids: readonly string[], delta: 1 | -1): void {
  for (const id of ids) {
    const n = (refs.get(id) ?? 0) + delta;
    if (n > 0) refs.set(id, n);
    else refs.delete(id);
  }
}

/** The subnet HNS hands a network's endpoint addresses from: its first IPAM subnet (./objects.ts allocateIp). */
export function allocationSubnet(net: HcnNetwork): string | undefined {
  return net.Ipams?.[0]?.Subnets?.[0]?.IpAddressPrefix;
}

/** `ip`'s offset in the network's allocation subnet; undefined outside it. */
function subnetOffset(net: HcnNetwork, ip: string): number | undefined {
  const subnet = allocationSubnet(net);
  const c = subnet ? parseCidr(subnet) : undefined;
  const n = parseIp4(ip);
  return c && n !== undefined && contains(c, n) ? n - network(c).ip : undefined;
}

/** What the view keeps per network. */
interface NetworkView {
  policies: Keyed<HcnPolicy>;
  /** IP -> how many of the network's endpoints hold it. */
  ips: Map<string, number>;
  /** Every address offset below this is taken (./objects.ts allocateIp starts here). */
  allocFrom: number;
  /** The network's SetPolicy IP sets by Id (the first of duplicates). */
  sets: Map<string, HcnPolicy>;
  /** Set Id -> how many ACL rules of the network's endpoints and NESTEDIPSETs name it. */
  setRefs: Map<string, number>;
}

export class KeyedState {
  readonly networks: Keyed<HcnNetwork>;
  readonly endpoints: Keyed<HcnEndpoint>;
  readonly routes: Keyed<SimRoute>;
  readonly namespaces: Keyed<SimNamespace>;
  /** Namespace ID (upper case) -> the endpoints in it (an endpoint's HostComputeNamespace names it). */
  private readonly members = new Map<string, Set<HcnEndpoint>>();
  private readonly perNetwork = new Map<HcnNetwork, NetworkView>();
  /** Each endpoint's policies by canonical key, built when a call changes them. */
  private readonly perEndpoint = new Map<HcnEndpoint, Keyed<HcnPolicy>>();
  /** The highest NamespaceId held (undefined: not known, found on the next `nextNamespaceId`). */
  private highestNamespaceId: number | undefined;
  /** The 0.0.0.0/0 routes, in document order. */
  private readonly defaults = new Set<SimRoute>();
  /** Arrays of the document that no longer match the view (rebuilt by `flush`). */
  private readonly stale = new Set<'endpoints' | 'routes' | 'namespaces' | HcnNetwork>();
  /** Endpoints whose Policies array no longer matches the view. */
  private readonly staleEndpoints = new Set<HcnEndpoint>();

  constructor(readonly doc: DataplaneState) {
    this.networks = new Keyed((n) => idKey(n.ID), doc.networks);
    for (const n of doc.networks) this.viewOf(n);
    this.endpoints = new Keyed((e) => idKey(e.ID), doc.endpoints);
    for (const e of doc.endpoints) this.index(e, 1);
    this.routes = new Keyed(routeKey, doc.routes);
    for (const r of doc.routes) if (r.DestinationPrefix === DEFAULT) this.defaults.add(r);
    this.namespaces = new Keyed((n) => idKey(n.ID), doc.namespaces ?? []);
  }

  network(id: string): HcnNetwork | undefined {
    return this.networks.first(idKey(id));
  }

  endpoint(id: string): HcnEndpoint | undefined {
    return this.endpoints.first(idKey(id));
  }

  namespace(id: string): SimNamespace | undefined {
    return this.namespaces.first(idKey(id));
  }

  /** The policies of a network the view holds. */
  policies(net: HcnNetwork): Keyed<HcnPolicy> {
    return this.viewOf(net).policies;
  }

  /** The network's policies changed through `policies(net)`. */
  policiesChanged(net: HcnNetwork): void {
    this.stale.add(net);
  }

  /** The network's SetPolicy IP sets by Id. */
  setsOf(net: HcnNetwork): ReadonlyMap<string, HcnPolicy> {
    return this.viewOf(net).sets;
  }

  /** How many ACL rules and NESTEDIPSETs of the network name set `id`. */
  setReferences(net: HcnNetwork, id: string): number {
    return this.viewOf(net).setRefs.get(id) ?? 0;
  }

  /** Add a set to the network's policies (or take it away: -1), counting the references a NESTEDIPSET makes. */
  changeSet(net: HcnNetwork, p: HcnPolicy, delta: 1 | -1): void {
    const v = this.viewOf(net);
    const s = setOf(p)!;
    if (delta > 0) {
      v.policies.add(p);
      if (!v.sets.has(s.Id)) v.sets.set(s.Id, p);
    } else {
      v.policies.delete(p);
      if (v.sets.get(s.Id) === p) v.sets.delete(s.Id);
    }
    if (s.PolicyType === 'NESTEDIPSET') countRefs(v.setRefs, listItems(s.Values), delta);
    this.stale.add(net);
  }

  /** An endpoint's policies (built from its Policies on first use). */
  endpointPolicies(ep: HcnEndpoint): Keyed<HcnPolicy> {
    let k = this.perEndpoint.get(ep);
    if (!k) {
      k = new Keyed(policyKey, ep.Policies ?? []);
      this.perEndpoint.set(ep, k);
    }
    return k;
  }

  /** Add an ACL rule to the endpoint (or take it away: -1), counting the sets it names on the endpoint's network. */
  changeAcl(ep: HcnEndpoint, p: HcnPolicy, delta: 1 | -1): void {
    const k = this.endpointPolicies(ep);
    if (delta > 0) k.add(p);
    else k.delete(p);
    const net = ep.HostComputeNetwork === undefined ? undefined : this.network(ep.HostComputeNetwork);
    if (net) countRefs(this.viewOf(net).setRefs, setIdsOf(aclOf(p)!), delta);
    this.staleEndpoints.add(ep);
  }

  /** The IPs the network's endpoints hold (a refusal checks a new endpoint's against them). */
  ipsOf(net: HcnNetwork): ReadonlyMap<string, number> {
    return this.viewOf(net).ips;
  }

  /** Where a new endpoint's address search starts, and where the next one starts once it took `offset`. */
  allocFrom(net: HcnNetwork): number {
    return this.viewOf(net).allocFrom;
  }

  allocated(net: HcnNetwork, offset: number): void {
    this.viewOf(net).allocFrom = offset + 1;
  }

  addEndpoint(ep: HcnEndpoint): void {
    this.endpoints.add(ep);
    this.index(ep, 1);
    this.stale.add('endpoints');
  }

  deleteEndpoint(ep: HcnEndpoint): void {
    this.endpoints.delete(ep);
    this.index(ep, -1);
    this.perEndpoint.delete(ep);
    this.staleEndpoints.delete(ep);
    this.stale.add('endpoints');
  }

  /** The endpoints in a namespace. */
  membersOf(nsId: string): ReadonlySet<HcnEndpoint> {
    return this.members.get(idKey(nsId)) ?? new Set();
  }

  /** Move an endpoint into a namespace (or out of its namespace: undefined). */
  setNamespace(ep: HcnEndpoint, nsId: string | undefined): void {
    this.membership(ep, -1);
    if (nsId === undefined) delete ep.HostComputeNamespace;
    else ep.HostComputeNamespace = nsId;
    this.membership(ep, 1);
  }

  /** The NamespaceId a new namespace gets: one more than the highest held, at least 1. */
  nextNamespaceId(): number {
    if (this.highestNamespaceId === undefined) {
      this.highestNamespaceId = -Infinity;
      for (const n of this.namespaces.values()) this.highestNamespaceId = Math.max(this.highestNamespaceId, n.NamespaceId);
    }
    return Math.max(1, this.highestNamespaceId + 1);
  }

  addNamespace(ns: SimNamespace): void {
    this.namespaces.add(ns);
    if (this.highestNamespaceId !== undefined) this.highestNamespaceId = Math.max(this.highestNamespaceId, ns.NamespaceId);
    this.stale.add('namespaces');
  }

  deleteNamespace(ns: SimNamespace): void {
    this.namespaces.delete(ns);
    if (ns.NamespaceId === this.highestNamespaceId) this.highestNamespaceId = undefined;
    this.stale.add('namespaces');
  }

  addRoute(r: SimRoute): void {
    this.routes.add(r);
    if (r.DestinationPrefix === DEFAULT) this.defaults.add(r);
    this.stale.add('routes');
  }

  deleteRoute(r: SimRoute): void {
    this.routes.delete(r);
    this.defaults.delete(r);
    this.stale.add('routes');
  }

  /** The default route: the 0.0.0.0/0 row of lowest metric, the earliest of equals (./host.ts defaultRoute). */
  defaultRoute(): SimRoute | undefined {
    let best: SimRoute | undefined;
    for (const r of this.defaults) if (!best || r.Metric < best.Metric) best = r;
    return best;
  }

  /** Write every array the view changed back into the document. */
  flush(): void {
    for (const s of this.stale) {
      if (s === 'endpoints') this.doc.endpoints = this.endpoints.values();
      else if (s === 'routes') this.doc.routes = this.routes.values();
      else if (s === 'namespaces') this.doc.namespaces = this.namespaces.values();
      else s.Policies = this.viewOf(s).policies.values();
    }
    this.stale.clear();
    for (const ep of this.staleEndpoints) ep.Policies = this.endpointPolicies(ep).values();
    this.staleEndpoints.clear();
  }

  /** Write one endpoint's policies back (a query of that endpoint). */
  flushEndpoint(ep: HcnEndpoint): void {
    if (this.staleEndpoints.delete(ep)) ep.Policies = this.endpointPolicies(ep).values();
  }

  /** Write one network's policies back (a query of that network). */
  flushNetwork(net: HcnNetwork): void {
    if (!this.stale.delete(net)) return;
    net.Policies = this.viewOf(net).policies.values();
  }

  private viewOf(net: HcnNetwork): NetworkView {
    let v = this.perNetwork.get(net);
    if (!v) {
      v = { policies: new Keyed(policyKey, net.Policies ?? []), ips: new Map(), allocFrom: 0, sets: new Map(), setRefs: new Map() };
      for (const p of net.Policies ?? []) {
        const s = setOf(p);
        if (s === undefined || typeof s.Id !== 'string') continue;
        if (!v.sets.has(s.Id)) v.sets.set(s.Id, p);
        if (s.PolicyType === 'NESTEDIPSET') countRefs(v.setRefs, listItems(s.Values), 1);
      }
      this.perNetwork.set(net, v);
    }
    return v;
  }

  /** Count an endpoint's IPs and the sets its ACL rules name on its network, and its namespace membership, in (+1) or out (-1). */
  private index(ep: HcnEndpoint, delta: 1 | -1): void {
    const net = ep.HostComputeNetwork === undefined ? undefined : this.network(ep.HostComputeNetwork);
    if (net) {
      const v = this.viewOf(net);
      const policies = this.perEndpoint.get(ep)?.values() ?? ep.Policies ?? [];
      for (const p of policies) {
        const acl = aclOf(p);
        if (acl) countRefs(v.setRefs, setIdsOf(acl), delta);
      }
      for (const c of ep.IpConfigurations ?? []) {
        const n = (v.ips.get(c.IpAddress) ?? 0) + delta;
        if (n > 0) v.ips.set(c.IpAddress, n);
        else {
          v.ips.delete(c.IpAddress);
          // A released address of the network's subnet may be the lowest free one again.
          const offset = subnetOffset(net, c.IpAddress);
          if (offset !== undefined) v.allocFrom = Math.min(v.allocFrom, offset);
        }
      }
    }
    this.membership(ep, delta);
  }

  private membership(ep: HcnEndpoint, delta: 1 | -1): void {
    if (ep.HostComputeNamespace === undefined) return;
    const key = idKey(ep.HostComputeNamespace);
    let set = this.members.get(key);
    if (delta > 0) {
      if (!set) this.members.set(key, (set = new Set()));
      set.add(ep);
    } else if (set) {
      set.delete(ep);
      if (set.size === 0) this.members.delete(key);
    }
  }
}

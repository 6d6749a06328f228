// The NetworkPolicy controller: the cluster's Pods, Namespaces and NetworkPolicies (./cluster.ts, fed by three
// list-watches) made into HNS ACL rules on this node's pod endpoints and SetPolicy IP sets on its network (the
// pure core: ../netpol/intent.ts, ../netpol/translate.ts), kept there rule by rule by the generic reconcile loop
// (../reconcile/reconciler.ts). Felix's Windows policy manager is the model (projectcalico/calico
// felix/dataplane/windows/policy_mgr.go and endpoint_mgr.go: desired state from the datastore, an endpoint
// found in HNS by the pod's IP, rules applied per endpoint), with two differences by design:
// - Rule by rule: every rule and set has an Id (prefix AGENT_ID_PREFIX); the loop diffs the rules HNS reports
//   against the rules wanted, by Id, and writes only the difference (HcnModifyEndpoint Add/Remove of those
//   rules, HcnModifyNetwork Add/Update/Remove of those sets), where felix's endpoint_mgr.go applies an
//   endpoint's whole list again (ApplyACLPolicy) on every change. One write carries one endpoint's rules (or
//   the network's sets); sets are written before the rules naming them and removed after (Azure NPM's order,
//   npm/pkg/dataplane/dataplane_windows.go: "clean-up ACLs before ipsets").
// - Nothing it did not write is removed: only rules and sets whose Id has the agent's prefix are read as its
//   own (../netpol/diff.ts agentAcls, agentSets); those on any endpoint of the network that are no longer wanted
//   (a pod gone, a policy deleted, a previous run's) are swept by the loop's full reads.
// A pod's endpoint is the one of the agent's network holding the pod's IP (CNI ADD creates it before the
// kubelet publishes the IP: kubelet's pod status follows the sandbox's network setup). The endpoints are read at
// every full pass, at once when a local pod has an address no endpoint holds yet, and then every
// `endpointPollMs` while one is still missing: HNS has no notification of a new endpoint, so felix's
// endpoint_mgr.go too looks again on its next apply. The delay from a pod's address being seen to its
// endpoint holding all its rules is the histogram flannel_netpol_endpoint_rules_delay_seconds.
// A policy refused (what HNS cannot enforce faithfully isolates its pods and allows nothing, never silently
// allows) is logged and recorded as a Warning Event on the NetworkPolicy once per refusal: when it is first
// refused or refused for another reason, not at every recompute; refused again after a fix, the recorder's
// deduplication bumps the same Event's count (../kube/event-recorder.ts).
import type { Clock } from '../basics/clock.js';
import { errorMessage } from '../basics/errors.js';
import type { Logger } from '../basics/log.js';
import { METRIC, type Metrics } from '../basics/metrics.js';
import type { HnsClient } from '../hns/client.js';
import { hnsFailure } from '../hns/errors.js';
import type { AclPolicySetting, HcnEndpoint, HnsVersion, SetPolicySetting } from '../hns/schema.js';
import type { ListWatchHandler } from '../kube/list-watch.js';
import { noNodeEvents, type NodeEvent, type NodeEvents } from '../node-events.js';
import type { DesiredSet } from '../reconcile/reconciler.js';
import { Reconciler } from '../reconcile/reconciler.js';
import type { RefusalSink } from '../reconcile/refusals.js';
import type { ReconcileDriver } from '../reconcile/writes.js';
import { ClusterCache, namespacedKey } from './cluster.js';
import { agentAcls, agentSets, sameAcl } from '../netpol/diff.js';
import { byNamespace, IntentTracker, type Refusal } from '../netpol/intent.js';
import { selectorMatches } from '../netpol/selectors.js';
import { hnsRefusal, translate, TranslateCache } from '../netpol/translate.js';
import type { Namespace, NetworkPolicy, Pod } from '../netpol/types.js';

/** A list-watch of one resource (../kube/list-watch.ts KubeListWatch; tests may pass another). */
export interface Source<T> {
  run(handler: ListWatchHandler<T>, signal: AbortSignal): Promise<void>;
}

export interface NetpolSources {
  pods: Source<Pod>;
  namespaces: Source<Namespace>;
  policies: Source<NetworkPolicy>;
}

/** What the controller writes: an IP set on the network, or one ACL rule on one endpoint. */
export type NetpolItem = { kind: 'set'; set: SetPolicySetting } | { kind: 'acl'; endpoint: string; rule: AclPolicySetting };

/** An item's key: `set <Id>` or `acl <endpoint> <rule Id>`; a type of its own so no other loop's key passes for one. */
export type NetpolKey = string & { readonly __netpol: never };

const keyOf = (i: NetpolItem): NetpolKey => (i.kind === 'set' ? `set ${i.set.Id}` : `acl ${i.endpoint} ${i.rule.Id!}`) as NetpolKey;

function sameItem(a: NetpolItem, d: NetpolItem): boolean {
  if (a.kind === 'set' && d.kind === 'set') return a.set.Name === d.set.Name && a.set.PolicyType === d.set.PolicyType && a.set.Values === d.set.Values;
  return a.kind === 'acl' && d.kind === 'acl' && a.endpoint === d.endpoint && sameAcl(a.rule, d.rule);
}

export interface NetpolControllerOptions {
  hns: HnsClient;
  nodeName: string;
  /** The agent's HNS network now (`cbr0`, `flannel.4096`); undefined before the first one. */
  networkName(): string | undefined;
  /** The Node's own addresses (its public IPs); the host's endpoints on the network are added from HNS. */
  nodeIPs(): readonly string[];
  sources: NetpolSources;
  /** Where a refused policy's Warning Event goes (the agent's recorder; default none). */
  events?(): NodeEvents;
  clock: Clock;
  log: Logger;
  metrics: Metrics;
  /** Full read and repair period (default 10 s, as the network's loop). */
  resyncMs?: number;
  /** How often the endpoints are read again while a local pod's endpoint is missing (default 250 ms). */
  endpointPollMs?: number;
}

/** A local pod as `flanneld status` shows it. */
export interface NetpolPodStatus {
  pod: string;
  ips: readonly string[];
  /** Its HNS endpoint, once found. */
  endpoint?: string;
  /** `namespace/name` of the policies selecting it, sorted. */
  policies: string[];
  /** Rules wanted on its endpoint, and whether its endpoint holds them all. */
  rules: number;
  programmed: boolean;
  /** Refused policies among those selecting it. */
  refused?: string[];
}

export interface NetpolStatus {
  /** Every resource listed once, and the loop's last pass wrote everything wanted. */
  inSync: boolean;
  listed: boolean;
  policies: number;
  refused: Refusal[];
  pods: NetpolPodStatus[];
  /** Local pods with policies whose endpoint lacks some of its rules (or was not found). */
  endpointsWithoutRules: string[];
  /** HNS refused these writes (retried on their backoff). */
  hnsRefused: number;
}

/** The Warning Event on a refused NetworkPolicy: reason FlannelNetworkPolicy<refusal reason>, in its namespace. */
export function refusalEvent(r: Refusal): NodeEvent {
  return {
    type: 'Warning',
    reason: `FlannelNetworkPolicy${r.reason}`,
    message: `not enforced as written on this node: ${r.message}; fix the policy (kubectl edit networkpolicy -n ${r.namespace} ${r.name})`,
    regarding: { kind: 'NetworkPolicy', apiVersion: 'networking.k8s.io/v1', namespace: r.namespace, name: r.name, uid: r.uid },
  };
}

type WriteOp = 'add-rules' | 'remove-rules' | 'add-sets' | 'update-sets' | 'remove-sets';

/** The endpoints of the network as the controller needs them: pod address -> endpoint Id, and the host's addresses. */
interface EndpointMap {
  byIp: Map<string, string>;
  hostIps: string[];
}

function endpointMap(networkName: string, eps: readonly HcnEndpoint[]): EndpointMap {
  // The host's own endpoints on the pod network: host-gw's bridge endpoint `<network>_ep` and vxlan's source VIP
  // `<network>_sourcevip` (src/backends/hostgw, src/backends/vxlan/source-vip.ts): the node's traffic to its pods.
  const host = new Set([`${networkName}_ep`, `${networkName}_sourcevip`]);
  const byIp = new Map<string, string>();
  const hostIps: string[] = [];
  for (const ep of eps) {
    for (const c of ep.IpConfigurations ?? []) {
      if (host.has(ep.Name ?? '')) hostIps.push(c.IpAddress);
      else if (ep.ID) byIp.set(c.IpAddress, ep.ID);
    }
  }
  return { byIp, hostIps };
}

/** The rules and sets wanted on this node, recomputed from the cluster and the endpoints when either changed. */
class NodeRules implements DesiredSet<NetpolItem, NetpolKey> {
  private items = new Map<NetpolKey, { item: NetpolItem; owner: string }>();
  private readonly dirty = new Set<NetpolKey>();
  private computedAt = -1;
  private listeners: (() => void)[] = [];
  endpointsVersion = 0;
  endpointsRead = false;
  endpoints: EndpointMap = { byIp: new Map(), hostIps: [] };
  hnsVersion: HnsVersion | undefined;
  refusals: Refusal[] = [];
  /** Local live pods with an address and the endpoint that holds it (if found): `namespace/name` -> ... */
  local = new Map<string, { pod: Pod; endpoint?: string; rules: NetpolKey[] }>();
  /** Local pods whose address no endpoint holds yet. */
  missing = 0;
  /** The intents and their translation kept between recomputes: a change recomputes only what it can touch. */
  private readonly intents = new IntentTracker({ unsupported: hnsRefusal });
  private readonly translations = new TranslateCache();
  private readonly itemsOf = new WeakMap<AclPolicySetting[], { endpoint: string; items: [NetpolKey, NetpolItem][]; named: string[] }>();

  constructor(
    private readonly cluster: ClusterCache,
    private readonly o: Pick<NetpolControllerOptions, 'nodeName' | 'nodeIPs'>,
    private readonly onComputed: (rules: NodeRules) => void,
  ) {
    cluster.onChange(() => this.changed());
  }

  get listed(): boolean {
    return this.cluster.synced && this.endpointsRead && this.hnsVersion !== undefined;
  }

  changed(): void {
    for (const fn of this.listeners) fn();
  }

  /** Recompute when the cluster or the endpoints changed since the last time; the keys whose item changed go dirty. */
  refresh(): void {
    const at = this.cluster.version * 1_000_003 + this.endpointsVersion;
    // Nothing is decided on a partial cluster (cluster.ts): a policy listed before the pods or namespaces its
    // rule allows would deny them until their list ends.
    if (at === this.computedAt || this.hnsVersion === undefined || !this.cluster.synced) return;
    this.computedAt = at;
    const nodeIPs = [...this.o.nodeIPs(), ...this.endpoints.hostIps];
    const intent = this.intents.update(this.cluster.state(), { nodeName: this.o.nodeName, nodeIPs });
    const t = translate(intent, { hnsVersion: this.hnsVersion }, this.translations);
    const next = new Map<NetpolKey, { item: NetpolItem; owner: string }>();
    const local = new Map<string, { pod: Pod; endpoint?: string; rules: NetpolKey[] }>();
    const named = new Set<string>();
    let missing = 0;
    for (const [i, p] of intent.pods.entries()) {
      const e = t.endpoints[i];
      const endpoint = e.podIPs.map((ip) => this.endpoints.byIp.get(ip)).find((id) => id !== undefined);
      const owner = namespacedKey(p.pod);
      const keys: NetpolKey[] = [];
      if (endpoint === undefined) missing++;
      else {
        const items = this.endpointItems(e.rules, endpoint);
        for (const [k, item] of items.items) next.set(k, { item, owner });
        for (const a of items.named) named.add(a);
        keys.push(...items.items.map(([k]) => k));
      }
      local.set(owner, { pod: p.pod, ...(endpoint !== undefined ? { endpoint } : {}), rules: keys });
    }
    // Only the sets a written rule names (a pod without its endpoint yet names none).
    for (const set of t.sets) if (named.has(set.Id)) next.set(keyOf({ kind: 'set', set }), { item: { kind: 'set', set }, owner: 'ip sets' });
    for (const [k, v] of next) {
      const before = this.items.get(k);
      if (before === undefined || (before.item !== v.item && !sameItem(before.item, v.item))) this.dirty.add(k);
    }
    for (const k of this.items.keys()) if (!next.has(k)) this.dirty.add(k);
    this.items = next;
    this.local = local;
    this.missing = missing;
    this.refusals = intent.refusals;
    this.onComputed(this);
  }

  /** An endpoint's items and the sets they name, kept while its rules (the translation's same array) and its endpoint stay. */
  private endpointItems(rules: AclPolicySetting[], endpoint: string): { items: [NetpolKey, NetpolItem][]; named: string[] } {
    const kept = this.itemsOf.get(rules);
    if (kept?.endpoint === endpoint) return kept;
    const items = rules.map((rule): [NetpolKey, NetpolItem] => {
      const item: NetpolItem = { kind: 'acl', endpoint, rule };
      return [keyOf(item), item];
    });
    const named = rules.flatMap((r) => [r.LocalAddresses, r.RemoteAddresses].flatMap((f) => (f ?? '').split(',').filter((a) => a.startsWith('flannel-np-'))));
    const made = { endpoint, items, named };
    this.itemsOf.set(rules, made);
    return made;
  }

  desired(key: NetpolKey): NetpolItem | undefined {
    return this.items.get(key)?.item;
  }
  desiredItems(): NetpolItem[] {
    this.refresh();
    return [...this.items.values()].map((v) => v.item);
  }
  takeDirty(): NetpolKey[] {
    this.refresh();
    const keys = [...this.dirty];
    this.dirty.clear();
    return keys;
  }
  owner(key: NetpolKey): string | undefined {
    return this.items.get(key)?.owner;
  }
  removed(): void {}
  subscribe(onChange: () => void): void {
    this.listeners.push(onChange);
  }
  get size(): { rules: number; sets: number } {
    let sets = 0;
    for (const k of this.items.keys()) if (k.startsWith('set ')) sets++;
    return { rules: this.items.size - sets, sets };
  }
}

/** HNS refusals of single writes, kept for the status and logged when news. */
class HnsRefusals implements RefusalSink<NetpolKey> {
  readonly now = new Map<NetpolKey, string>();
  constructor(private readonly log: Logger) {}
  refused(key: NetpolKey, error: unknown, retry: { attempts: number; retryInMs: number }): boolean {
    const message = errorMessage(error);
    const news = this.now.get(key) !== message;
    this.now.set(key, message);
    if (news) this.log.warn('HNS refused a NetworkPolicy rule or IP set; retrying it alone', { key, error: message, retryInMs: retry.retryInMs });
    return news;
  }
  cleared(key: NetpolKey): void {
    this.now.delete(key);
  }
}

export class NetpolController {
  readonly cluster = new ClusterCache();
  private readonly rules: NodeRules;
  private readonly loop: Reconciler<NetpolItem, NetpolItem, NetpolKey>;
  private readonly hnsRefusals: HnsRefusals;
  /** The agent's rule Ids each endpoint holds, as last read and written (the delay and the status). */
  private readonly held = new Map<string, Set<string>>();
  /** Local pods waiting for their rules: `namespace/name` -> when their address was first seen. */
  private readonly waiting = new Map<string, number>();
  private networkId: string | undefined;
  /** The refusals told (logged, an Event recorded): policy uid -> reason and message. */
  private told = new Map<string, string>();
  private readonly wakePoll: { ring?: () => void } = {};

  constructor(private readonly o: NetpolControllerOptions) {
    this.rules = new NodeRules(this.cluster, o, (r) => this.computed(r));
    this.hnsRefusals = new HnsRefusals(o.log);
    this.loop = new Reconciler({ driver: this.driver(), desired: this.rules, sink: this.hnsRefusals, clock: o.clock, log: o.log, resyncMs: o.resyncMs ?? 10_000, owner: 'pod' });
  }

  /** Watch, compute and write until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    const { sources } = this.o;
    await Promise.all([
      sources.namespaces.run(this.cluster.namespaces.handler(), signal),
      sources.pods.run(this.cluster.pods.handler(), signal),
      sources.policies.run(this.cluster.policies.handler(), signal),
      this.start(signal),
    ]);
  }

  private async start(signal: AbortSignal): Promise<void> {
    while (!signal.aborted && this.rules.hnsVersion === undefined) {
      try {
        this.rules.hnsVersion = await this.o.hns.version();
      } catch (err) {
        this.o.log.warn('reading the HNS version failed; retrying', { error: errorMessage(err) });
        await this.o.clock.sleep(1000, signal).catch(() => undefined);
      }
    }
    await Promise.all([this.loop.run(signal), this.pollEndpoints(signal)]);
  }

  /** While a local pod's address is on no endpoint: read the endpoints at once, then every endpointPollMs. */
  private async pollEndpoints(signal: AbortSignal): Promise<void> {
    const every = this.o.endpointPollMs ?? 250;
    while (!signal.aborted) {
      if (this.rules.missing > 0 && this.networkId !== undefined) {
        try {
          await this.readEndpoints(this.networkId);
        } catch (err) {
          this.o.log.debug('reading the endpoints failed', { error: errorMessage(err) });
        }
        await this.o.clock.sleep(every, signal).catch(() => undefined);
        continue;
      }
      await new Promise<void>((resolve) => {
        const done = () => {
          signal.removeEventListener('abort', done);
          this.wakePoll.ring = undefined;
          resolve();
        };
        this.wakePoll.ring = done;
        signal.addEventListener('abort', done, { once: true });
      });
    }
  }

  private async resolveNetwork(): Promise<string> {
    const name = this.o.networkName();
    const net = name === undefined ? undefined : await this.o.hns.getNetworkByName(name);
    if (net?.ID === undefined) throw new Error(`the HNS network ${name ?? '(none yet)'} is not there; the NetworkPolicy rules wait for it`);
    this.networkId = net.ID;
    return net.ID;
  }

  private async readEndpoints(networkId: string): Promise<HcnEndpoint[]> {
    const eps = await this.o.hns.listEndpoints(networkId);
    const next = endpointMap(this.o.networkName() ?? '', eps);
    const before = this.rules.endpoints;
    const same = before.hostIps.join() === next.hostIps.join() && before.byIp.size === next.byIp.size && [...next.byIp].every(([ip, id]) => before.byIp.get(ip) === id);
    this.rules.endpoints = next;
    this.rules.endpointsRead = true;
    if (!same) {
      this.rules.endpointsVersion++;
      this.rules.changed();
    }
    return eps;
  }

  /** After every recompute: metrics, refusals told, pods newly waiting for rules, the endpoint poll woken. */
  private computed(r: NodeRules): void {
    const { metrics, clock } = this.o;
    metrics.set(METRIC.netpolPolicies, this.cluster.policies.items.size);
    metrics.set(METRIC.netpolRules, r.size.rules);
    metrics.set(METRIC.netpolSets, r.size.sets);
    metrics.set(METRIC.netpolRefused, r.refusals.length);
    const told = new Map<string, string>();
    for (const f of r.refusals) {
      const what = `${f.reason}\0${f.message}`;
      told.set(f.uid, what);
      if (this.told.get(f.uid) === what) continue;
      this.o.log.warn('NetworkPolicy refused: it isolates the pods it selects and allows nothing', { policy: namespacedKey(f), reason: f.reason, message: f.message });
      (this.o.events ?? (() => noNodeEvents))().record(refusalEvent(f));
    }
    this.told = told;
    const now = clock.now();
    for (const [k, l] of r.local) if (!this.waiting.has(k) && !this.holds(l)) this.waiting.set(k, now);
    for (const k of this.waiting.keys()) if (!r.local.has(k)) this.waiting.delete(k);
    this.settleWaiting();
    if (r.missing > 0) this.wakePoll.ring?.();
  }

  private holds(l: { endpoint?: string; rules: readonly NetpolKey[] }): boolean {
    if (l.endpoint === undefined) return false;
    const held = this.held.get(l.endpoint);
    return l.rules.every((k) => held?.has(k.slice(k.lastIndexOf(' ') + 1)) ?? false);
  }

  /** Pods whose endpoint now holds all their rules: their delay observed. */
  private settleWaiting(): void {
    const now = this.o.clock.now();
    for (const [k, since] of this.waiting) {
      const l = this.rules.local.get(k);
      if (l === undefined || !this.holds(l)) continue;
      this.waiting.delete(k);
      if (l.rules.length > 0) this.o.metrics.observe(METRIC.netpolDelay, (now - since) / 1000);
    }
  }

  private count(op: WriteOp): void {
    this.o.metrics.inc(METRIC.netpolWrites, { op });
  }

  private heldOf(endpoint: string): Set<string> {
    let s = this.held.get(endpoint);
    if (s === undefined) this.held.set(endpoint, (s = new Set()));
    return s;
  }

  private driver(): ReconcileDriver<NetpolItem, NetpolItem, NetpolKey> {
    const hns = this.o.hns;
    const sets = (items: readonly NetpolItem[]) => items.flatMap((i) => (i.kind === 'set' ? [i.set] : []));
    const acls = (items: readonly NetpolItem[]) => items.flatMap((i) => (i.kind === 'acl' ? [i.rule] : []));
    const endpointOf = (items: readonly NetpolItem[]) => (items[0] as Extract<NetpolItem, { kind: 'acl' }>).endpoint;
    const net = async () => this.networkId ?? (await this.resolveNetwork());
    return {
      name: 'NetworkPolicy ACL rules and IP sets',
      driftKind: 'policy',
      readActual: async () => {
        const id = await this.resolveNetwork();
        const eps = await this.readEndpoints(id);
        const out: NetpolItem[] = [];
        this.held.clear();
        for (const ep of eps) {
          const rules = agentAcls(ep.Policies);
          if (ep.ID !== undefined) for (const rule of rules) out.push({ kind: 'acl', endpoint: ep.ID, rule });
          if (ep.ID !== undefined && rules.length > 0) this.held.set(ep.ID, new Set(rules.map((r) => r.Id!)));
        }
        for (const set of agentSets((await hns.getNetwork(id))?.Policies)) out.push({ kind: 'set', set });
        this.rules.refresh();
        this.settleWaiting();
        return out;
      },
      add: async (items) => {
        if (items[0].kind === 'set') {
          await hns.addSetPolicies(await net(), sets(items));
          return this.count('add-sets');
        }
        const ep = endpointOf(items);
        await hns.addEndpointAcls(ep, acls(items));
        this.count('add-rules');
        for (const r of acls(items)) this.heldOf(ep).add(r.Id!);
        this.settleWaiting();
      },
      remove: async (items) => {
        if (items[0].kind === 'set') {
          await hns.removeSetPolicies(await net(), sets(items));
          return this.count('remove-sets');
        }
        const ep = endpointOf(items);
        await hns.removeEndpointAcls(ep, acls(items));
        this.count('remove-rules');
        for (const r of acls(items)) this.heldOf(ep).delete(r.Id!);
      },
      update: async (pairs) => {
        if (pairs[0].to.kind === 'set') {
          await hns.updateSetPolicies(await net(), sets(pairs.map((p) => p.to)));
          return this.count('update-sets');
        }
        // An ACL rule's Id is a digest of its content: the same Id with other content is drift, put right.
        const ep = endpointOf(pairs.map((p) => p.to));
        await hns.removeEndpointAcls(ep, acls(pairs.map((p) => p.from)));
        this.count('remove-rules');
        await hns.addEndpointAcls(ep, acls(pairs.map((p) => p.to)));
        this.count('add-rules');
      },
      // One write carries one endpoint's rules, or the network's sets; sets go first when adding, last when removing.
      groupOf: (item, op) => (item.kind === 'set' ? (op === 'remove' ? '1 network' : '0 network') : op === 'remove' ? `0 ${item.endpoint}` : `1 ${item.endpoint}`),
      actualKey: keyOf,
      desiredKey: keyOf,
      same: sameItem,
      toActual: (d) => d,
      failure: hnsFailure,
    };
  }

  /** What `flanneld status` shows, and what doctor's row reads. */
  status(): NetpolStatus {
    const policies = [...this.cluster.policies.items.values()];
    const policiesIn = byNamespace(policies);
    const refusedKeys = new Set(this.rules.refusals.map(namespacedKey));
    const pods: NetpolPodStatus[] = [];
    const without: string[] = [];
    for (const [k, l] of this.rules.local) {
      // Sorted: the policies' map holds them in the order they arrived (a list's, or the watch's), which timing decides.
      const selecting = (policiesIn.get(l.pod.namespace) ?? [])
        .filter((p) => selectorMatches(p.spec.podSelector, l.pod.labels))
        .map(namespacedKey)
        .sort();
      const programmed = this.holds(l);
      const refused = selecting.filter((p) => refusedKeys.has(p));
      pods.push({
        pod: k,
        ips: l.pod.podIPs,
        ...(l.endpoint !== undefined ? { endpoint: l.endpoint } : {}),
        policies: selecting,
        rules: l.rules.length,
        programmed,
        ...(refused.length > 0 ? { refused } : {}),
      });
      if (selecting.length > 0 && !programmed) without.push(k);
    }
    const loop = this.loop.status();
    return {
      inSync: this.rules.listed && loop.inSync && this.rules.missing === 0,
      listed: this.rules.listed,
      policies: policies.length,
      refused: this.rules.refusals,
      pods: pods.sort((a, b) => a.pod.localeCompare(b.pod)),
      endpointsWithoutRules: without.sort(),
      hnsRefused: this.hnsRefusals.now.size,
    };
  }
}

// NetworkPolicy semantics for the pods of one node: per local pod and direction, whether it is isolated and
// the union of what the policies selecting it allow, with every peer resolved to addresses. Pure: the
// cluster's pods, namespaces and policies in, intents out. Mirrors the API reference, as networking/v1
// types.go (k8s.io/api) and kubernetes.io/docs/concepts/services-networking/network-policies state it:
// - A pod is isolated for a direction when a policy of its namespace selects it (spec.podSelector) and has
//   that direction in its policyTypes; policyTypes left empty means Ingress always, and Egress when the policy
//   has egress rules (NetworkPolicySpec.PolicyTypes). Isolated, it is allowed what at least one rule of those
//   policies allows, the union ("Network policies do not conflict; they are additive").
// - A rule's ports are ORed, its peers are ORed, and a rule allows what matches both; an empty or missing
//   list matches everything. A port without protocol is TCP; without port, every port of the protocol; with
//   endPort, the range. A named port is the container port of that name and protocol (kubernetes
//   pkg/api/v1/pod/util.go FindPort): for ingress the local pod's, for egress the remote pod's; a name a pod
//   lacks matches nothing on it.
// - A peer's podSelector alone selects pods of the policy's namespace; its namespaceSelector alone all pods
//   of the namespaces it selects; both, the pods matching the podSelector in those namespaces. An ipBlock is
//   its CIDR less its excepts, one family.
// - Traffic between a pod and its node is always allowed ("traffic to and from the node where a Pod is
//   running is always allowed"), and so is a pod's own ("a pod cannot block access to itself"); replies to
//   an allowed connection pass ("Reply traffic for those allowed connections will also be implicitly
//   allowed"), which the stateful HNS rules give (docs/network-policy.md).
// - hostNetwork pods: the most common of the two behaviours the reference allows ("NetworkPolicy and
//   hostNetwork pods"): they are never selected, by spec.podSelector or by a peer's selectors; their
//   traffic is the node's (always allowed on their own node; elsewhere matched by ipBlock only).
// - Pods that are done (phase Succeeded or Failed) or have no address yet are no peers: an address such a
//   pod held may already be another pod's. A local pod is enforced from its first address on, whatever its
//   phase ("isolated before they are started", "Pod lifecycle").
import type { IpFamily } from '../basics/ip6.js';
import { formatNet, netHas, parseNet, subtract } from './cidr.js';
import type { Net } from './cidr.js';
import { selectorKey, selectorMatches } from './selectors.js';
import { canonicalIp } from './types.js';
import type { LabelSelector, Namespace, NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort, Pod, PolicyType, Protocol } from './types.js';

export interface ClusterState {
  pods: readonly Pod[];
  namespaces: readonly Namespace[];
  policies: readonly NetworkPolicy[];
}

export interface NodeContext {
  nodeName: string;
  /**
   * Every address the node's own traffic to a local pod can come from (the Node's addresses and the host's
   * endpoint on the pod network: host-gw's bridge endpoint, vxlan's source VIP). The controller knows them.
   */
  nodeIPs: readonly string[];
}

/** Ports of one protocol: `from`..`to` inclusive; without them, every port of the protocol. */
export interface PortRange {
  protocol: Protocol;
  from?: number;
  to?: number;
}

/** The addresses one peer (or, for a named egress port, the part of it with one port number) stands for, in one family. */
export interface AddressSet {
  /** What the set means, stable while its members change: the peer's definition (and the named port). */
  key: string;
  family: IpFamily;
  /** Canonical CIDRs (a pod's address as /32 or /128), sorted, without duplicates; never empty. */
  cidrs: readonly string[];
}

export interface Allow {
  /** Absent: every address (a rule without from/to). */
  peers?: AddressSet;
  /** Absent: every protocol and port (a rule without ports). */
  ports?: readonly PortRange[];
  /** `namespace/name` of the policy that allows it. */
  policy: string;
}

export interface DirectionIntent {
  isolated: boolean;
  /** What the selecting policies allow (empty when not isolated: everything is). */
  allows: readonly Allow[];
}

export interface PodIntent {
  pod: Pod;
  ingress: DirectionIntent;
  egress: DirectionIntent;
  /** Always allowed both ways: the node's addresses and the pod's own, in the pod's families, as CIDRs. */
  always: readonly string[];
}

/** Event-style reasons the controller reports a refused policy under. */
export type RefusalReason = 'InvalidRules' | 'Unsupported';

/** A policy whose rules are not enforced: it still isolates the pods it selects and allows nothing. */
export interface Refusal {
  namespace: string;
  name: string;
  uid: string;
  reason: RefusalReason;
  message: string;
}

export interface IntentOptions {
  /** Why the dataplane cannot enforce this policy's rules faithfully, if it cannot (./translate.ts hnsRefusal). */
  unsupported?: (policy: NetworkPolicy) => string | undefined;
}

export interface NodeIntent {
  pods: PodIntent[];
  refusals: Refusal[];
}

const familyOf = (ip: string): IpFamily => (ip.includes(':') ? 'ipv6' : 'ipv4');
const hostCidr = (ip: string): string => `${ip}/${ip.includes(':') ? 128 : 32}`;

/** A pod whose addresses are its own now: a peer, and (on this node) a pod to enforce. */
function live(pod: Pod): boolean {
  return !pod.hostNetwork && pod.podIPs.length > 0 && pod.phase !== 'Succeeded' && pod.phase !== 'Failed';
}

/** spec.policyTypes, or its default (networking/v1 types.go NetworkPolicySpec.PolicyTypes). */
export function policyTypesOf(policy: NetworkPolicy): readonly PolicyType[] {
  const t = policy.spec.policyTypes;
  if (t !== undefined && t.length > 0) return t;
  return (policy.spec.egress?.length ?? 0) > 0 ? ['Ingress', 'Egress'] : ['Ingress'];
}

/** The peer pods of a peer, with the key that names them; `ips` keeps only the addresses the peer covers (an ipBlock's). */
interface PeerPods {
  key: string;
  pods: readonly Pod[];
  ips?: (ip: string) => boolean;
  /** Its address set per family and its pods by the number they give a port name: derived, dropped with it. */
  sets: Map<IpFamily, AddressSet | undefined>;
  named: Map<string, [number, PeerPods][]>;
}

/** A resolved peer kept across passes, with what tells whether a changed pod or namespace can change it. */
interface PeerEntry extends PeerPods {
  /** Is this (live or not) pod one of the peer's, given the namespaces' labels now? */
  member: (pod: Pod) => boolean;
  /** The namespaceSelector the peer depends on, if any. */
  nsSel?: LabelSelector;
}

interface Block {
  key: string;
  family: IpFamily;
  nets: Net[];
}

function addressSet(key: string, family: IpFamily, cidrs: Iterable<string>): AddressSet | undefined {
  const sorted = [...new Set(cidrs)].sort();
  return sorted.length === 0 ? undefined : { key, family, cidrs: sorted };
}

const podKey = (p: { namespace: string; name: string }): string => `${p.namespace}/${p.name}`;

/**
 * Peer resolution, which depends on the cluster and never on the local pod, kept across passes: a peer is
 * resolved once and dropped only when a pod that was or is one of its members changes, or a namespace its
 * namespaceSelector did or does select (bench/netpol.mjs: resolving every peer again per pod event was most
 * of its cost at 10,000 pods). The keys dropped in a pass are `stale`, so the local pods that used them are
 * computed again.
 */
class Resolver {
  /** The live pods by namespace, by key: a peer looks only at the namespaces it can select. */
  private readonly byNamespace = new Map<string, Map<string, Pod>>();
  private readonly nsLabels = new Map<string, Readonly<Record<string, string>>>();
  private readonly entries = new Map<string, PeerEntry>();
  private readonly blocks = new Map<string, Block>();
  private readonly blockSets = new Map<string, AddressSet | undefined>();
  readonly stale = new Set<string>();

  /** A pod added (`before` undefined), changed or deleted (`after` undefined). */
  podChanged(before: Pod | undefined, after: Pod | undefined): void {
    const ns = (before ?? after)!.namespace;
    const pods = this.byNamespace.get(ns) ?? new Map<string, Pod>();
    this.byNamespace.set(ns, pods);
    if (before !== undefined) pods.delete(podKey(before));
    if (after !== undefined && live(after)) pods.set(podKey(after), after);
    if (pods.size === 0) this.byNamespace.delete(ns);
    this.drop((e) => (before !== undefined && e.member(before)) || (after !== undefined && e.member(after)));
  }

  namespaceChanged(before: Namespace | undefined, after: Namespace | undefined): void {
    if (after === undefined) this.nsLabels.delete(before!.name);
    else this.nsLabels.set(after.name, after.labels);
    this.drop(
      (e) => e.nsSel !== undefined && ((before !== undefined && selectorMatches(e.nsSel, before.labels)) || (after !== undefined && selectorMatches(e.nsSel, after.labels))),
    );
  }

  /** Forget the peers no local pod's intent uses any more (a policy deleted or edited): nothing depends on them. */
  retain(used: ReadonlySet<string>): void {
    for (const k of this.entries.keys()) if (!used.has(k)) this.entries.delete(k);
  }

  private drop(affected: (e: PeerEntry) => boolean): void {
    for (const [k, e] of this.entries) {
      if (!affected(e)) continue;
      this.entries.delete(k);
      this.stale.add(k);
    }
  }

  private entry(key: string, member: (pod: Pod) => boolean, candidates: () => Iterable<Pod>, extra: Partial<PeerEntry> = {}): PeerEntry {
    let e = this.entries.get(key);
    if (e === undefined) {
      const pods: Pod[] = [];
      for (const p of candidates()) if (member(p)) pods.push(p);
      e = { key, pods, member, sets: new Map(), named: new Map(), ...extra };
      this.entries.set(key, e);
    }
    return e;
  }

  private *allLive(): Iterable<Pod> {
    for (const pods of this.byNamespace.values()) yield* pods.values();
  }

  /** Every live pod of the cluster (a rule without peers, for a named egress port). */
  all(): PeerPods {
    return this.entry('all', live, () => this.allLive());
  }

  /** The pods a selector peer selects; a namespace not (yet) known matches no namespaceSelector. */
  selected(peer: NetworkPolicyPeer, policyNamespace: string): PeerPods {
    const nsSel = peer.namespaceSelector;
    const podSel = peer.podSelector ?? {};
    if (nsSel === undefined) {
      const key = `pods ns=${policyNamespace} ${selectorKey(podSel)}`;
      return this.entry(
        key,
        (p) => live(p) && p.namespace === policyNamespace && selectorMatches(podSel, p.labels),
        () => this.byNamespace.get(policyNamespace)?.values() ?? [],
      );
    }
    const key = `pods nssel=${selectorKey(nsSel)} ${selectorKey(podSel)}`;
    const nsMatches = (ns: string) => {
      const labels = this.nsLabels.get(ns);
      return labels !== undefined && selectorMatches(nsSel, labels);
    };
    return this.entry(
      key,
      (p) => live(p) && nsMatches(p.namespace) && selectorMatches(podSel, p.labels),
      () => [...this.byNamespace].flatMap(([ns, pods]) => (nsMatches(ns) ? [...pods.values()] : [])),
      { nsSel },
    );
  }

  /** An ipBlock: its key, family and the CIDRs that remain of it. */
  block(peer: NetworkPolicyPeer): Block {
    const b = peer.ipBlock!;
    const key = `cidr ${b.cidr} except (${[...new Set(b.except ?? [])].sort().join(',')})`;
    return memo(this.blocks, key, () => {
      const base = parseNet(b.cidr)!;
      return {
        key,
        family: base.v6 ? 'ipv6' : 'ipv4',
        nets: subtract(
          base,
          (b.except ?? []).map((e) => parseNet(e)!),
        ),
      };
    });
  }

  /** The live pods with an address in the block's remaining CIDRs; only those addresses count. */
  podsIn(block: Block): PeerPods {
    const inside = (ip: string) => block.nets.some((n) => netHas(n, ip));
    return this.entry(
      `in ${block.key}`,
      (p) => live(p) && p.podIPs.some(inside),
      () => this.allLive(),
      { ips: inside },
    );
  }

  /** The addresses of a peer's pods in one family. */
  podSet(peer: PeerPods, family: IpFamily): AddressSet | undefined {
    return memo(peer.sets, family, () =>
      addressSet(
        peer.key,
        family,
        peer.pods.flatMap((p) => p.podIPs.filter((ip) => familyOf(ip) === family && (peer.ips?.(ip) ?? true)).map(hostCidr)),
      ),
    );
  }

  /** A block's CIDRs as a set. */
  blockSet(block: Block): AddressSet | undefined {
    return memo(this.blockSets, `${block.family} ${block.key}`, () => addressSet(block.key, block.family, block.nets.map(formatNet)));
  }

  /** A peer's pods grouped by the number they give a port name of a protocol, in port order. */
  byNamedPort(peer: PeerPods, name: string, protocol: Protocol): [number, PeerPods][] {
    return memo(peer.named, `${protocol}/${name}`, () => {
      const groups = new Map<number, Pod[]>();
      for (const pod of peer.pods) {
        const n = namedPortOf(pod, name, protocol);
        if (n === undefined) continue;
        const g = groups.get(n);
        if (g) g.push(pod);
        else groups.set(n, [pod]);
      }
      return [...groups]
        .sort(([a], [b]) => a - b)
        .map(([n, pods]): [number, PeerPods] => [
          n,
          { key: `${peer.key} port ${protocol}/${name}=${n}`, pods, ...(peer.ips ? { ips: peer.ips } : {}), sets: new Map(), named: new Map() },
        ]);
    });
  }
}

function memo<K, V>(cache: Map<K, V>, key: K, make: () => V): V {
  if (cache.has(key)) return cache.get(key)!;
  const v = make();
  cache.set(key, v);
  return v;
}

/** A numeric port entry as a range; undefined for a named one. */
function numericRange(p: NetworkPolicyPort): PortRange | undefined {
  const protocol = p.protocol ?? 'TCP';
  if (typeof p.port === 'string') return undefined;
  if (p.port === undefined) return { protocol };
  return { protocol, from: p.port, to: p.endPort ?? p.port };
}

/** The number a pod gives a named port of a protocol (FindPort: the first container port with that name and protocol). */
function namedPortOf(pod: Pod, name: string, protocol: Protocol): number | undefined {
  return pod.ports.find((p) => p.name === name && p.protocol === protocol)?.containerPort;
}

interface RuleView {
  ports: readonly NetworkPolicyPort[];
  peers: readonly NetworkPolicyPeer[];
}

class PodIntentBuilder {
  /** The keys of the resolved peers this pod's intent was built from. */
  readonly deps = new Set<string>();

  constructor(
    private readonly resolver: Resolver,
    private readonly pod: Pod,
    private readonly families: ReadonlySet<IpFamily>,
  ) {}

  /** Peer address sets of one peer, in the pod's families. */
  private peerSets(peer: NetworkPolicyPeer, policyNamespace: string): AddressSet[] {
    if (peer.ipBlock !== undefined) {
      const b = this.resolver.block(peer);
      const set = this.families.has(b.family) ? this.resolver.blockSet(b) : undefined;
      return set === undefined ? [] : [set];
    }
    const pods = this.use(this.resolver.selected(peer, policyNamespace));
    return [...this.families].flatMap((f) => this.resolver.podSet(pods, f) ?? []);
  }

  /** The pods a peer stands for when a named egress port is resolved on them (a rule without peers: all). */
  private peerPods(peer: NetworkPolicyPeer | undefined, policyNamespace: string): PeerPods {
    if (peer === undefined) return this.use(this.resolver.all());
    if (peer.ipBlock !== undefined) return this.use(this.resolver.podsIn(this.resolver.block(peer)));
    return this.use(this.resolver.selected(peer, policyNamespace));
  }

  private use(peer: PeerPods): PeerPods {
    this.deps.add(peer.key);
    return peer;
  }

  ingress(rule: RuleView, policy: NetworkPolicy): Allow[] {
    const id = `${policy.namespace}/${policy.name}`;
    let ports: PortRange[] | undefined;
    if (rule.ports.length > 0) {
      ports = rule.ports.flatMap((p): PortRange[] => {
        const r = numericRange(p);
        if (r !== undefined) return [r];
        const n = namedPortOf(this.pod, p.port as string, p.protocol ?? 'TCP');
        return n === undefined ? [] : [{ protocol: p.protocol ?? 'TCP', from: n, to: n }];
      });
      if (ports.length === 0) return []; // only names this pod lacks: the rule allows it nothing
    }
    return this.withPeers(rule.peers, policy, ports, id);
  }

  egress(rule: RuleView, policy: NetworkPolicy): Allow[] {
    const id = `${policy.namespace}/${policy.name}`;
    if (rule.ports.length === 0) return this.withPeers(rule.peers, policy, undefined, id);
    const numeric = rule.ports.map(numericRange).filter((r): r is PortRange => r !== undefined);
    const out = numeric.length > 0 ? this.withPeers(rule.peers, policy, numeric, id) : [];
    for (const p of rule.ports) {
      if (typeof p.port !== 'string') continue;
      const name = p.port;
      const protocol = p.protocol ?? 'TCP';
      for (const peer of rule.peers.length > 0 ? rule.peers : [undefined]) {
        // The peer's pods grouped by the number they give the name; each group is its own set.
        for (const [n, group] of this.resolver.byNamedPort(this.peerPods(peer, policy.namespace), name, protocol)) {
          for (const f of this.families) {
            const set = this.resolver.podSet(group, f);
            if (set) out.push({ peers: set, ports: [{ protocol, from: n, to: n }], policy: id });
          }
        }
      }
    }
    return out;
  }

  private withPeers(peers: readonly NetworkPolicyPeer[], policy: NetworkPolicy, ports: PortRange[] | undefined, id: string): Allow[] {
    const withPorts = (a: Allow): Allow => (ports === undefined ? a : { ...a, ports });
    if (peers.length === 0) return [withPorts({ policy: id })];
    return peers.flatMap((peer) => this.peerSets(peer, policy.namespace).map((set) => withPorts({ peers: set, policy: id })));
  }
}

/** What changed between two lists of objects, by key: [before, after], undefined for absent. */
function changes<T>(before: readonly T[], after: readonly T[], keyOf: (t: T) => string): [T | undefined, T | undefined][] {
  const out: [T | undefined, T | undefined][] = [];
  // The cache's lists keep their order when an object is replaced (a Map's set), so most passes are a walk.
  if (before.length === after.length) {
    let sameKeys = true;
    for (let i = 0; i < after.length && sameKeys; i++) {
      if (before[i] === after[i]) continue;
      if (keyOf(before[i]) === keyOf(after[i])) out.push([before[i], after[i]]);
      else sameKeys = false;
    }
    if (sameKeys) return out;
    out.length = 0;
  }
  const was = new Map(before.map((t) => [keyOf(t), t]));
  for (const t of after) {
    const k = keyOf(t);
    const b = was.get(k);
    was.delete(k);
    if (b !== t) out.push([b, t]);
  }
  for (const b of was.values()) out.push([b, undefined]);
  return out;
}

/**
 * The node's intents kept up to date pass after pass: each `update` computes again only the local pods a
 * change can touch (the pod itself, the pods of a namespace whose policies changed, the pods whose peers
 * include a changed pod or a relabelled namespace) and resolves again only those peers. The result is
 * always what computeIntent gives for the same state (test/property/netpol-incremental.property.test.ts).
 */
export class IntentTracker {
  private readonly resolver = new Resolver();
  private state: ClusterState = { pods: [], namespaces: [], policies: [] };
  private nodeKey: string | undefined;
  private readonly intents = new Map<string, { intent: PodIntent; deps: ReadonlySet<string> }>();

  constructor(private readonly options: IntentOptions = {}) {}

  /** The intents of the node's pods for this state: who is isolated, what is allowed, and the policies refused. */
  update(state: ClusterState, node: NodeContext): NodeIntent {
    const nodeIPs = node.nodeIPs.flatMap((ip) => canonicalIp(ip) ?? []);
    const nodeKey = `${node.nodeName} ${nodeIPs.join(',')}`;
    if (nodeKey !== this.nodeKey) this.intents.clear();
    this.nodeKey = nodeKey;
    const r = this.resolver;
    r.stale.clear();
    for (const [b, a] of changes(this.state.namespaces, state.namespaces, (n) => n.name)) r.namespaceChanged(b, a);
    for (const [b, a] of changes(this.state.pods, state.pods, podKey)) r.podChanged(b, a);
    const policyNamespaces = new Set(changes(this.state.policies, state.policies, podKey).map(([b, a]) => (b ?? a)!.namespace));
    this.state = state;

    const refusals: Refusal[] = [];
    const refused = new Set<NetworkPolicy>();
    for (const p of state.policies) {
      const invalid = p.refused;
      const unsupported = invalid === undefined ? this.options.unsupported?.(p) : undefined;
      if (invalid === undefined && unsupported === undefined) continue;
      refused.add(p);
      refusals.push({ namespace: p.namespace, name: p.name, uid: p.uid, reason: invalid !== undefined ? 'InvalidRules' : 'Unsupported', message: (invalid ?? unsupported)! });
    }
    let policiesIn: Map<string, NetworkPolicy[]> | undefined;
    const seen = new Set<string>();
    const pods = state.pods
      .filter((p) => p.nodeName === node.nodeName && live(p))
      .map((pod): PodIntent => {
        const k = podKey(pod);
        seen.add(k);
        const kept = this.intents.get(k);
        if (kept !== undefined && kept.intent.pod === pod && !policyNamespaces.has(pod.namespace) && ![...kept.deps].some((d) => r.stale.has(d))) return kept.intent;
        policiesIn ??= byNamespace(state.policies);
        const built = podIntent(r, pod, policiesIn.get(pod.namespace) ?? [], refused, nodeIPs);
        this.intents.set(k, built);
        return built.intent;
      });
    for (const k of this.intents.keys()) if (!seen.has(k)) this.intents.delete(k);
    const used = new Set<string>();
    for (const { deps } of this.intents.values()) for (const d of deps) used.add(d);
    r.retain(used);
    return { pods, refusals };
  }
}

/** Namespaced objects grouped by namespace, in their order. */
export function byNamespace<T extends { namespace: string }>(items: readonly T[]): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const t of items) {
    const list = out.get(t.namespace);
    if (list) list.push(t);
    else out.set(t.namespace, [t]);
  }
  return out;
}

function podIntent(
  resolver: Resolver,
  pod: Pod,
  policies: readonly NetworkPolicy[],
  refused: ReadonlySet<NetworkPolicy>,
  nodeIPs: readonly string[],
): { intent: PodIntent; deps: ReadonlySet<string> } {
  const families = new Set(pod.podIPs.map(familyOf));
  const builder = new PodIntentBuilder(resolver, pod, families);
  const ingress = { isolated: false, allows: [] as Allow[] };
  const egress = { isolated: false, allows: [] as Allow[] };
  for (const policy of policies) {
    if (!selectorMatches(policy.spec.podSelector, pod.labels)) continue;
    const types = policyTypesOf(policy);
    const allows = !refused.has(policy);
    if (types.includes('Ingress')) {
      ingress.isolated = true;
      if (allows) for (const r of policy.spec.ingress ?? []) ingress.allows.push(...builder.ingress({ ports: r.ports ?? [], peers: r.from ?? [] }, policy));
    }
    if (types.includes('Egress')) {
      egress.isolated = true;
      if (allows) for (const r of policy.spec.egress ?? []) egress.allows.push(...builder.egress({ ports: r.ports ?? [], peers: r.to ?? [] }, policy));
    }
  }
  const always = [...new Set([...nodeIPs, ...pod.podIPs].filter((ip) => families.has(familyOf(ip))).map(hostCidr))].sort();
  return { intent: { pod, ingress, egress, always }, deps: builder.deps };
}

/** The intents of the node's pods: who is isolated, what is allowed, and the policies refused. */
export function computeIntent(state: ClusterState, node: NodeContext, options: IntentOptions = {}): NodeIntent {
  return new IntentTracker(options).update(state, node);
}

// The intent of each local pod (./intent.ts) as the HNS ACL rules of its endpoint, and the IP sets they
// name. Pure and deterministic: the same intent gives the same rules, each with an Id derived from its
// content (prefix AGENT_ID_PREFIX), so a change rewrites only the rules it changes (./diff.ts).
//
// The shape follows the two public Windows NetworkPolicy dataplanes:
// - Calico felix/dataplane/windows/policysets/policysets.go (rules on HNS before 13.0, IP sets flattened
//   into address lists): Switch rules; a rule per protocol; ports "80" or "80-90" comma-joined
//   (protoPortToHCSPort, appendPortsinList: HNS ports accept ranges, hcsshim hcn/hcnsupport.go AclPortRanges
//   from HNS 7.2, so an endPort never needs enumerating); at most 4000 addresses or ports a rule
//   (ipPortsPerRule: "Microsoft recommended limiting the number of entries per rule to a few thousand");
//   the peer in RemoteAddresses; host-to-endpoint allowed above the policy rules (endpoint_mgr.go
//   nodeToEndpointRule, priority 900 under policies at 1000); Host (WFP) allow rules beside the Switch rules,
//   "Required by l2bridge network" (endpoint_mgr.go, NewHostRule).
// - Azure NPM npm/pkg/dataplane/policies/policy_windows.go (HNS 13.0 and later, hcsshim hcn/hcnglobals.go
//   SetPolicyVersion): the peers in an IP set (a SetPolicy on the network, ipsetmanager_windows.go
//   convertToSetPolicy: Id, Name, comma-joined Values) that a rule names by its Id in an address field; a
//   set named in a rule is matched as source in LocalAddresses and destination in RemoteAddresses whatever
//   the direction ("HNS has confusing Local and Remote address definitions ... For Traffic Direction
//   INGRESS LocalAddresses = Source Sets"), so an ingress peer set goes in LocalAddresses, while a literal
//   address is the endpoint's side in LocalAddresses, the peer's in RemoteAddresses (Calico above; NPM's
//   direct IPs in the same file). The simulated node's evaluator (src/simulator/acl.ts) reads both so;
//   docs/simulator.md "ACL rules and IP sets" gives the evidence. Destination
//   ports are LocalPorts in, RemotePorts out; a 0.0.0.0/0 member is written as its two /1 halves
//   (translatePolicy.go ipBlockIPSet).
//
// Precedence (lower Priority first, first match decides): node and own traffic allowed (100), the policies'
// allows (1000), then one catch-all per direction (65000): Block where the pod is isolated, Allow where it
// is not (the base rules Azure CNI writes, cni/azure-windows.conflist, Allow In/Out at 65500). No Block but
// the catch-all exists and it has a priority of its own, so two rules that overlap never differ in action at
// one priority: HNS breaks such ties its own way ("HNS has a different tie-break algorithm to Calico",
// policysets.go GetPolicySetRules), and no public source says how.
import { createHash } from 'node:crypto';
import { SET_POLICY_VERSION, versionAtLeast } from '../hns/features.js';
import type { AclPolicySetting, HnsVersion, SetPolicySetting } from '../hns/schema.js';
import type { IpFamily } from '../basics/ip6.js';
import type { AddressSet, Allow, NodeIntent, PodIntent, PortRange } from './intent.js';
import type { NetworkPolicy } from './types.js';

/** Every ACL Id and IP set Id the agent writes starts with this; nothing else is the agent's. */
export const AGENT_ID_PREFIX = 'flannel-np-';

export const PRIORITY = { node: 100, allow: 1000, catchAll: 65000 } as const;

/**
 * IP protocol numbers in `Protocols` (hcsshim's comment on AclPolicySetting: 6 TCP, 17 UDP, 1 ICMPv4,
 * 58 ICMPv6, 2 IGMP). SCTP (132) is not among what HNS matches: Azure NPM refuses SCTP policies on Windows
 * because "Windows HNS doesn't support SCTP" (Azure/azure-container-networking#1442, ErrUnsupportedSCTP
 * in npm/pkg/controlplane/translation/translatePolicy.go).
 */
export const PROTOCOL_NUMBER = { TCP: '6', UDP: '17' } as const;

type AclDirection = AclPolicySetting['Direction'];

/** Calico's ipPortsPerRule: addresses (or ports) in one rule before it is split. */
export const ENTRIES_PER_RULE = 4000;

export interface TranslateOptions {
  /** The node's HNS version: IP sets from 13.0 (SetPolicyVersion), flattened address lists below. */
  hnsVersion: HnsVersion;
}

export interface EndpointAcls {
  /** The pod (namespace/name/uid) and its addresses, by which the controller finds its HNS endpoint. */
  namespace: string;
  name: string;
  uid: string;
  podIPs: readonly string[];
  /** Its ACL rules, ordered by direction, priority and Id; none when no policy selects the pod. */
  rules: AclPolicySetting[];
}

export interface Translation {
  endpoints: EndpointAcls[];
  /** The IP sets the rules name (none before HNS 13.0), by Id. */
  sets: SetPolicySetting[];
}

/**
 * Why HNS cannot enforce a policy faithfully, or undefined. SCTP: HNS ACLs do not match it ("Windows HNS
 * doesn't support SCTP", Azure/azure-container-networking#1442; PROTOCOL_NUMBER). Refused, the policy still
 * isolates and allows nothing: SCTP stays blocked rather than all of the policy's traffic being let through.
 */
export function hnsRefusal(policy: NetworkPolicy): string | undefined {
  const rules = [...(policy.spec.ingress ?? []), ...(policy.spec.egress ?? [])];
  if (rules.some((r) => (r.ports ?? []).some((p) => p.protocol === 'SCTP'))) return 'an SCTP port: HNS ACLs cannot match SCTP, so the policy isolates its pods and allows nothing';
  return undefined;
}

function hash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 20);
}

/** A rule with its Id: the prefix and a digest of everything else, in a fixed field order. */
function withId(rule: Omit<AclPolicySetting, 'Id'>): AclPolicySetting {
  const fields = [rule.Action, rule.Direction, rule.RuleType, rule.Priority, rule.Protocols, rule.LocalAddresses, rule.RemoteAddresses, rule.LocalPorts, rule.RemotePorts];
  return { Id: `${AGENT_ID_PREFIX}${hash(JSON.stringify(fields))}`, ...rule };
}

function setId(key: string, family: IpFamily): string {
  return `${AGENT_ID_PREFIX}set-${hash(`${family} ${key}`)}`;
}

function chunks<T>(items: readonly T[], size = ENTRIES_PER_RULE): T[][] {
  if (items.length === 0) return [[]];
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** One protocol's ports as HNS text: undefined for every port, else merged ranges "80,8080-8090". */
function portEntries(ranges: readonly PortRange[]): string[] | undefined {
  if (ranges.some((r) => r.from === undefined)) return undefined;
  const sorted = ranges.map((r) => [r.from!, r.to!] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const merged: [number, number][] = [];
  for (const [from, to] of sorted) {
    const last = merged[merged.length - 1];
    if (last !== undefined && from <= last[1] + 1) last[1] = Math.max(last[1], to);
    else merged.push([from, to]);
  }
  return merged.map(([a, b]) => (a === b ? `${a}` : `${a}-${b}`));
}

/** One endpoint's rules and the IP sets they name. */
interface PodRules {
  rules: AclPolicySetting[];
  sets: SetPolicySetting[];
}

class EndpointTranslator {
  /** The sets named by the rules being made (one pod's). */
  private named = new Map<string, SetPolicySetting>();
  /** Translations kept by the intent (or address set) object they came from: an unchanged pod intent is not translated again. */
  private readonly pods = new WeakMap<PodIntent, PodRules>();
  private readonly ipSets = new WeakMap<AddressSet, SetPolicySetting>();

  constructor(readonly useSets: boolean) {}

  podRules(intent: PodIntent): PodRules {
    let r = this.pods.get(intent);
    if (r === undefined) {
      this.named = new Map();
      r = { rules: this.rules(intent), sets: [...this.named.values()] };
      this.pods.set(intent, r);
    }
    return r;
  }

  private rules(intent: PodIntent): AclPolicySetting[] {
    if (!intent.ingress.isolated && !intent.egress.isolated) return [];
    const rules: AclPolicySetting[] = [];
    for (const [direction, d] of [
      ['In', intent.ingress],
      ['Out', intent.egress],
    ] as const) {
      rules.push(withId({ Action: 'Allow', Direction: direction, RuleType: 'Host' }));
      for (const family of ['ipv4', 'ipv6'] as const) {
        const own = intent.always.filter((c) => (family === 'ipv6') === c.includes(':'));
        if (own.length > 0) rules.push(...this.literal(direction, PRIORITY.node, own, undefined));
      }
      if (d.isolated) for (const group of groupByPeer(d.allows)) rules.push(...this.allowRules(direction, group));
      rules.push(withId({ Action: d.isolated ? 'Block' : 'Allow', Direction: direction, RuleType: 'Switch', Priority: PRIORITY.catchAll }));
    }
    const unique = new Map(rules.map((r) => [r.Id!, r]));
    return [...unique.values()].sort((a, b) => a.Direction.localeCompare(b.Direction) || (a.Priority ?? 0) - (b.Priority ?? 0) || a.Id!.localeCompare(b.Id!));
  }

  /** Rules allowing `cidrs` (written out) on the given ports; ports undefined: every protocol. */
  private literal(direction: AclDirection, priority: number, cidrs: readonly string[], ports: readonly PortRange[] | undefined): AclPolicySetting[] {
    return chunks(cidrs).flatMap((chunk) => this.portRules(direction, priority, { RemoteAddresses: chunk.join(',') }, ports));
  }

  /** An address set's IP set, written once however many endpoints name it; its Id. */
  private ipSet(peers: AddressSet): string {
    let set = this.ipSets.get(peers);
    if (set === undefined) {
      const id = setId(peers.key, peers.family);
      const values = peers.cidrs.flatMap((c) => (c === '0.0.0.0/0' ? ['0.0.0.0/1', '128.0.0.0/1'] : c === '::/0' ? ['::/1', '8000::/1'] : [c]));
      set = { Id: id, Name: id, PolicyType: 'IPSET', Values: values.join(',') };
      this.ipSets.set(peers, set);
    }
    this.named.set(set.Id, set);
    return set.Id;
  }

  /** The rules of the allows of one peer: their ports merged, every port once one of them has no ports. */
  private allowRules(direction: AclDirection, group: readonly Allow[]): AclPolicySetting[] {
    const peers = group[0].peers;
    const ports = group.some((a) => a.ports === undefined) ? undefined : group.flatMap((a) => a.ports!);
    if (peers === undefined) return this.portRules(direction, PRIORITY.allow, {}, ports);
    if (!this.useSets) return this.literal(direction, PRIORITY.allow, peers.cidrs, ports);
    const id = this.ipSet(peers);
    return this.portRules(direction, PRIORITY.allow, direction === 'In' ? { LocalAddresses: id } : { RemoteAddresses: id }, ports);
  }

  /** One rule per protocol (and per chunk of ports), or one for every protocol when `ports` is undefined. */
  private portRules(
    direction: AclDirection,
    priority: number,
    addresses: Pick<AclPolicySetting, 'LocalAddresses' | 'RemoteAddresses'>,
    ports: readonly PortRange[] | undefined,
  ): AclPolicySetting[] {
    const base = { Action: 'Allow', Direction: direction, RuleType: 'Switch', Priority: priority, ...addresses } as const;
    if (ports === undefined) return [withId(base)];
    return (['TCP', 'UDP'] as const).flatMap((protocol) => {
      const of = ports.filter((p) => p.protocol === protocol);
      if (of.length === 0) return [];
      const entries = portEntries(of);
      const Protocols = PROTOCOL_NUMBER[protocol];
      if (entries === undefined) return [withId({ ...base, Protocols })];
      return chunks(entries).map((c) => withId({ ...base, Protocols, ...(direction === 'In' ? { LocalPorts: c.join(',') } : { RemotePorts: c.join(',') }) }));
    });
  }
}

/** Allows grouped by what they allow from: one group per address set (by key and family), one for every address. */
function groupByPeer(allows: readonly Allow[]): Allow[][] {
  const groups = new Map<string, Allow[]>();
  for (const a of allows) {
    if (a.ports?.some((p) => p.protocol === 'SCTP')) throw new Error(`SCTP allow of ${a.policy} reached translation: the policy should have been refused (hnsRefusal)`);
    const k = a.peers === undefined ? '*' : `${a.peers.family} ${a.peers.key}`;
    const g = groups.get(k);
    if (g) g.push(a);
    else groups.set(k, [a]);
  }
  return [...groups.values()];
}

/**
 * Translations kept from one pass to the next (IntentTracker hands back the same PodIntent for a pod nothing
 * touched): pass the same cache to every `translate` of one node.
 */
export class TranslateCache {
  private translator: EndpointTranslator | undefined;

  translatorFor(useSets: boolean): EndpointTranslator {
    if (this.translator?.useSets !== useSets) this.translator = new EndpointTranslator(useSets);
    return this.translator;
  }
}

/** The node's intents as endpoint ACL rules and IP sets. Refuse SCTP first (computeIntent's `unsupported: hnsRefusal`). */
export function translate(intent: NodeIntent, options: TranslateOptions, cache = new TranslateCache()): Translation {
  const t = cache.translatorFor(versionAtLeast(options.hnsVersion, SET_POLICY_VERSION));
  const sets = new Map<string, SetPolicySetting>();
  const endpoints = intent.pods.map((p) => {
    const r = t.podRules(p);
    for (const set of r.sets) sets.set(set.Id, set);
    return { namespace: p.pod.namespace, name: p.pod.name, uid: p.pod.uid, podIPs: p.pod.podIPs, rules: r.rules };
  });
  return { endpoints, sets: [...sets.values()].sort((a, b) => a.Id.localeCompare(b.Id)) };
}

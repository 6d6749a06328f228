// HNS endpoint ACL rules as the simulated node reads them, and whether HNS passes a packet: the language of
// an `ACL` endpoint policy (hcsshim hcn/hcnpolicy.go AclPolicySetting) and of a `SetPolicy` IP set
// (SetPolicySetting), and an evaluator over a node's endpoints and sets. The semantics and the source of
// each are docs/simulator.md, "ACL rules and IP sets"; among them, which side of a packet an address field
// matches: an address is the endpoint's side in LocalAddresses, the other side in RemoteAddresses (Calico
// felix/dataplane/windows/policysets/policysets.go; Azure NPM's direct IPs), while a set Id is the packet's
// source in LocalAddresses and its destination in RemoteAddresses, in both directions (Azure NPM
// npm/pkg/dataplane/policies/policy_windows.go: "HNS has confusing Local and Remote address definitions ...
// For Traffic Direction INGRESS LocalAddresses = Source Sets"). Where no public source settles a case the evaluator
// refuses to answer (AclEvaluationError FLANNEL_ERR_ACL_UNSETTLED), so a test shows the agent never makes
// that case. Pure; ./refusals.ts uses the parsers to judge what HcnModifyEndpoint and HcnModifyNetwork get.
import { AclEvaluationError, type ErrorContext } from '../basics/errors.js';
import { contains, parseCidr, parseIp4 } from '../basics/ip4.js';
import { contains6, parseCidr6, parseIp6 } from '../basics/ip6.js';
import { ACL_POLICY, ENDPOINT_FLAG_REMOTE, SET_POLICY, sameId } from '../hns/schema.js';
import type { AclPolicySetting, HcnEndpoint, HcnNetwork, HcnPolicy, SetPolicySetting } from '../hns/schema.js';

/** Protocol "any" as HNS takes it (Azure NPM policy_windows.go: "HNS thinks 256 as ANY protocol"; Calico policysets.go protocolNameToNumber). */
export const ANY_PROTOCOL = 256;

/** The items of a comma-separated field; absent or empty: none. */
export function listItems(text: string | undefined): string[] {
  return text === undefined || text === '' ? [] : text.split(',');
}

/** An ACL's `Protocols`: one decimal number 0..256 (absent or empty: any); undefined when malformed. */
export function parseProtocol(text: unknown): number | undefined {
  if (text === undefined || text === '') return ANY_PROTOCOL;
  if (typeof text !== 'string' || !/^(0|[1-9]\d{0,2})$/.test(text)) return undefined;
  const n = Number(text);
  return n <= ANY_PROTOCOL ? n : undefined;
}

/** A port list: `80`, `80,8080` (hcsshim hcnutils_test.go), `8000-8100` (Calico protoPortToHCSPort); ports 1..65535. Undefined when malformed. */
export function parsePorts(text: string): [number, number][] | undefined {
  const out: [number, number][] = [];
  for (const item of listItems(text)) {
    const m = /^(\d{1,5})(?:-(\d{1,5}))?$/.exec(item);
    if (!m) return undefined;
    const first = Number(m[1]);
    const last = m[2] === undefined ? first : Number(m[2]);
    if (first < 1 || last > 65535 || first > last) return undefined;
    out.push([first, last]);
  }
  return out;
}

/** An address or prefix of an ACL or an IPSET, either family. */
export type AddressRange = { family: 4; net: string } | { family: 6; net: string };

/** `10.0.0.21`, `192.168.100.0/24`, `fd00::1`, `fd00::/64` (hcsshim hcnutils_test.go HcnCreateAcls); undefined when it is none of them. */
export function parseAddress(item: string): AddressRange | undefined {
  if (parseCidr(item)) return { family: 4, net: item };
  if (parseIp4(item) !== undefined) return { family: 4, net: `${item}/32` };
  if (item.includes('%')) return undefined;
  if (parseCidr6(item)) return { family: 6, net: item };
  if (parseIp6(item) !== undefined) return { family: 6, net: `${item}/128` };
  return undefined;
}

function inRange(r: AddressRange, ip: string): boolean {
  return r.family === 4 ? contains(r.net, ip) : contains6(r.net, ip);
}

/** The SetPolicy Ids an ACL's address fields name: every item that is no address (Azure NPM policy_windows.go getAddrListFromSetInfo writes set Ids there). */
export function setIdsOf(acl: Pick<AclPolicySetting, 'LocalAddresses' | 'RemoteAddresses'>): string[] {
  return [...listItems(acl.LocalAddresses), ...listItems(acl.RemoteAddresses)].filter((i) => parseAddress(i) === undefined);
}

/** The Settings of an ACL endpoint policy, or undefined for any other policy. */
export function aclOf(p: HcnPolicy | undefined): AclPolicySetting | undefined {
  return p?.Type === ACL_POLICY && typeof p.Settings === 'object' && p.Settings !== null ? (p.Settings as unknown as AclPolicySetting) : undefined;
}

/** The Settings of a SetPolicy network policy, or undefined for any other policy. */
export function setOf(p: HcnPolicy | undefined): SetPolicySetting | undefined {
  return p?.Type === SET_POLICY && typeof p.Settings === 'object' && p.Settings !== null ? (p.Settings as unknown as SetPolicySetting) : undefined;
}

// ---------------------------------------------------------------- the evaluator

/** A packet between two addresses, at least one an endpoint of this node. */
export interface Packet {
  src: string;
  dst: string;
  /** IANA protocol number (6 TCP, 17 UDP, 1 ICMPv4, 58 ICMPv6, 2 IGMP, 132 SCTP). */
  protocol: number;
  srcPort?: number;
  dstPort?: number;
}

/** What one endpoint's rules decided for one direction. */
export interface AclDecision {
  endpointId: string;
  direction: 'In' | 'Out';
  action: 'Allow' | 'Block';
  /** The rule that decided (the first of equals at its priority); absent: no rule matched (the default). */
  rule?: AclPolicySetting;
}

export interface Verdict {
  allowed: boolean;
  /** A reply to a connection these rules allowed (passed without a rule being consulted). */
  reply: boolean;
  /** The source endpoint's Out decision, then the destination endpoint's In decision (those that were made). */
  decisions: AclDecision[];
}

/** Protocols a Windows Server container takes unsolicited with no rule matching: TCP, UDP, ICMPv4/v6, IGMP (see docs/simulator.md). */
const DEFAULT_INBOUND = new Set([1, 2, 6, 17, 58]);

type Why = 'same-priority' | 'rule-type' | 'host-default' | 'ambiguous-endpoint' | 'unknown-set';

function unsettled(why: Why, message: string, context: ErrorContext): AclEvaluationError {
  return new AclEvaluationError('FLANNEL_ERR_ACL_UNSETTLED', `${message}; no public source says what HNS does here, so the simulated node does not answer (docs/simulator.md)`, {
    ...context,
    why,
  });
}

const flowKey = (p: Packet) => `${p.protocol}|${p.src}|${p.srcPort ?? ''}|${p.dst}|${p.dstPort ?? ''}`;

/**
 * "Does HNS pass this packet?" over one state of a node (its networks and endpoints, e.g.
 * `SimulatedDataplane.snapshot()`). It remembers the flows it allowed, so a reply passes; a new state of
 * the node needs a new evaluator (what HNS does with a live flow when its rules change is not modelled).
 */
export class AclEvaluator {
  private readonly allowed = new Set<string>();
  private readonly byIp = new Map<string, HcnEndpoint[]>();
  private readonly networks: readonly HcnNetwork[];
  private readonly members = new Map<string, AddressRange[]>();

  constructor(node: { networks: readonly HcnNetwork[]; endpoints: readonly HcnEndpoint[] }) {
    this.networks = node.networks;
    for (const ep of node.endpoints) {
      if (((ep.Flags ?? 0) & ENDPOINT_FLAG_REMOTE) !== 0) continue;
      for (const c of ep.IpConfigurations ?? []) this.byIp.set(c.IpAddress, [...(this.byIp.get(c.IpAddress) ?? []), ep]);
    }
  }

  /** The verdict on `p`: the source endpoint's Out rules, then the destination endpoint's In rules. */
  send(p: Packet): Verdict {
    if (this.allowed.has(flowKey({ protocol: p.protocol, src: p.dst, srcPort: p.dstPort, dst: p.src, dstPort: p.srcPort }))) {
      return { allowed: true, reply: true, decisions: [] };
    }
    const decisions: AclDecision[] = [];
    const from = this.endpointAt(p.src);
    if (from) decisions.push(this.judge(from, 'Out', p, p.src, p.dst, p.srcPort, p.dstPort));
    const to = this.endpointAt(p.dst);
    if (to && decisions.every((d) => d.action === 'Allow')) decisions.push(this.judge(to, 'In', p, p.dst, p.src, p.dstPort, p.srcPort));
    const allowed = decisions.every((d) => d.action === 'Allow');
    if (allowed) this.allowed.add(flowKey(p));
    return { allowed, reply: false, decisions };
  }

  private endpointAt(ip: string): HcnEndpoint | undefined {
    const eps = this.byIp.get(ip) ?? [];
    if (eps.length > 1) throw unsettled('ambiguous-endpoint', `${eps.length} local endpoints hold ${ip}`, { ip });
    return eps[0];
  }

  /** One endpoint's rules of one direction on the packet, seen from the endpoint: `local` is its own side (for addresses and ports; set Ids are matched against `p.src` and `p.dst`). */
  private judge(ep: HcnEndpoint, direction: 'In' | 'Out', p: Packet, local: string, remote: string, localPort?: number, remotePort?: number): AclDecision {
    const acls = (ep.Policies ?? []).map(aclOf).filter((a): a is AclPolicySetting => a !== undefined && a.Direction === direction);
    const ctx = { endpointId: ep.ID, direction, src: p.src, dst: p.dst, protocol: p.protocol };
    const untyped = acls.find((a) => a.RuleType !== 'Host' && a.RuleType !== 'Switch');
    if (untyped) throw unsettled('rule-type', `rule ${untyped.Id ?? JSON.stringify(untyped)} has no RuleType (Host or Switch)`, ctx);
    const matches = (a: AclPolicySetting) => this.matches(ep, a, p, local, remote, localPort, remotePort);
    const decision = (action: 'Allow' | 'Block', rule?: AclPolicySetting): AclDecision => ({ endpointId: ep.ID!, direction, action, ...(rule ? { rule } : {}) });

    // The VFP layer (Switch rules): ascending Priority, the first match decides.
    const switchRules = acls.filter((a) => a.RuleType === 'Switch').sort((a, b) => (a.Priority ?? 0) - (b.Priority ?? 0));
    const first = switchRules.find(matches);
    let verdict: AclDecision;
    if (first) {
      const tied = switchRules.filter((a) => (a.Priority ?? 0) === (first.Priority ?? 0) && a.Action !== first.Action && matches(a));
      if (tied.length > 0)
        throw unsettled(
          'same-priority',
          `rules ${first.Id ?? '?'} (${first.Action}) and ${tied[0].Id ?? '?'} (${tied[0].Action}) both match at priority ${first.Priority ?? 0}`,
          ctx,
        );
      verdict = decision(first.Action, first);
    } else {
      verdict = decision(direction === 'Out' || DEFAULT_INBOUND.has(p.protocol) ? 'Allow' : 'Block');
    }
    if (verdict.action === 'Block') return verdict;

    // The WFP layer (Host rules): a matching Block wins over any Allow, whatever their priorities.
    const hostRules = acls.filter((a) => a.RuleType === 'Host');
    if (hostRules.length === 0) return verdict;
    const hostMatches = hostRules.filter(matches);
    const block = hostMatches.find((a) => a.Action === 'Block');
    if (block) return decision('Block', block);
    if (hostMatches.length === 0) throw unsettled('host-default', 'the endpoint has Host rules in this direction and none matches', ctx);
    return verdict;
  }

  private matches(ep: HcnEndpoint, a: AclPolicySetting, p: Packet, local: string, remote: string, localPort?: number, remotePort?: number): boolean {
    const proto = parseProtocol(a.Protocols);
    if (proto !== ANY_PROTOCOL && proto !== p.protocol) return false;
    return (
      this.addressMatches(ep, a.LocalAddresses, local, p.src) &&
      this.addressMatches(ep, a.RemoteAddresses, remote, p.dst) &&
      portMatches(a.LocalPorts, localPort) &&
      portMatches(a.RemotePorts, remotePort)
    );
  }

  /** An address field: its addresses are matched against `ip` (the endpoint's side or the other), its set Ids against `bySet` (the packet's source or destination). */
  private addressMatches(ep: HcnEndpoint, field: string | undefined, ip: string, bySet: string): boolean {
    const items = listItems(field);
    return (
      items.length === 0 ||
      items.some((item) => {
        const r = parseAddress(item);
        return r ? inRange(r, ip) : this.setMembers(ep, item).some((m) => inRange(m, bySet));
      })
    );
  }

  /** The addresses of set `id` on the endpoint's network; a NESTEDIPSET's are its member sets' (Azure NPM ipset.go GetSetContents). */
  private setMembers(ep: HcnEndpoint, id: string, depth = 0): AddressRange[] {
    const key = `${ep.HostComputeNetwork ?? ''}|${id}`;
    const known = this.members.get(key);
    if (known) return known;
    const net = this.networks.find((n) => sameId(n.ID, ep.HostComputeNetwork));
    const set = (net?.Policies ?? []).map(setOf).find((s) => s?.Id === id);
    if (!set || depth > 1)
      throw unsettled('unknown-set', `an ACL of endpoint ${ep.ID} names ${JSON.stringify(id)}, which is no address and no set of its network`, { endpointId: ep.ID, set: id });
    const items = listItems(set.Values);
    const out =
      set.PolicyType === 'NESTEDIPSET' ? items.flatMap((m) => this.setMembers(ep, m, depth + 1)) : items.map(parseAddress).filter((r): r is AddressRange => r !== undefined);
    this.members.set(key, out);
    return out;
  }
}

function portMatches(field: string | undefined, port: number | undefined): boolean {
  const ranges = parsePorts(field ?? '') ?? [];
  return ranges.length === 0 || (port !== undefined && ranges.some(([a, b]) => port >= a && port <= b));
}

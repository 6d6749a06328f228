// What NetworkPolicy enforcement needs of a Pod, a Namespace and a networking.k8s.io/v1 NetworkPolicy, and the
// pure projections from the API server's JSON. The NetworkPolicy spec mirrors k8s.io/api networking/v1
// types.go field by field (NetworkPolicySpec, NetworkPolicyIngressRule, NetworkPolicyEgressRule,
// NetworkPolicyPeer, IPBlock, NetworkPolicyPort); a selector mirrors metav1.LabelSelector
// (k8s.io/apimachinery pkg/apis/meta/v1/types.go). The checks are the API server's own
// (pkg/apis/networking/validation ValidateNetworkPolicySpec, labels.NewRequirement), so an object the API
// server stored always projects; one that does not (a fake server, a version skew, hostile input) is refused
// with a reason, never a crash, and every list the agent keeps is bounded (NETPOL_BOUNDS).
//
// A NetworkPolicy whose rules cannot be read but whose podSelector can is kept with `refused` set: it still
// isolates the pods it selects, in its policyTypes, and allows nothing (docs/network-policy.md, "Refusals").
import { formatIp4, parseIp4 } from '../basics/ip4.js';
import { formatIp6, parseIp6 } from '../basics/ip6.js';
import { asObj, type Obj } from '../basics/json-object.js';
import { canonicalCidr, netContains, parseNet } from './cidr.js';

export type Protocol = 'TCP' | 'UDP' | 'SCTP';
export type PolicyType = 'Ingress' | 'Egress';
export type SelectorOperator = 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';

/** A named container port (the only ones a policy can name). */
export interface NamedPort {
  name: string;
  protocol: Protocol;
  containerPort: number;
}

export interface Pod {
  namespace: string;
  name: string;
  uid: string;
  labels: Readonly<Record<string, string>>;
  /** status.podIPs (else status.podIP), canonical text, at most one per family. */
  podIPs: readonly string[];
  hostNetwork: boolean;
  nodeName?: string;
  phase?: string;
  /** Named ports of spec.containers and of sidecars (initContainers with restartPolicy Always). */
  ports: readonly NamedPort[];
}

export interface Namespace {
  name: string;
  labels: Readonly<Record<string, string>>;
}

export interface LabelSelectorRequirement {
  key: string;
  operator: SelectorOperator;
  values: readonly string[];
}

/** metav1.LabelSelector. `{}` selects everything; a missing (nil) selector is the caller's to interpret. */
export interface LabelSelector {
  matchLabels?: Readonly<Record<string, string>>;
  matchExpressions?: readonly LabelSelectorRequirement[];
}

export interface IPBlock {
  /** Canonical network form (host bits cleared). */
  cidr: string;
  except?: readonly string[];
}

export interface NetworkPolicyPeer {
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  ipBlock?: IPBlock;
}

export interface NetworkPolicyPort {
  /** Absent means TCP (networking/v1 types.go: "If not specified, this field defaults to TCP"). */
  protocol?: Protocol;
  /** A number, or the name of a container port. Absent: every port. */
  port?: number | string;
  endPort?: number;
}

export interface NetworkPolicyIngressRule {
  ports?: readonly NetworkPolicyPort[];
  from?: readonly NetworkPolicyPeer[];
}

export interface NetworkPolicyEgressRule {
  ports?: readonly NetworkPolicyPort[];
  to?: readonly NetworkPolicyPeer[];
}

export interface NetworkPolicySpec {
  podSelector: LabelSelector;
  ingress?: readonly NetworkPolicyIngressRule[];
  egress?: readonly NetworkPolicyEgressRule[];
  policyTypes?: readonly PolicyType[];
}

export interface NetworkPolicy {
  namespace: string;
  name: string;
  uid: string;
  spec: NetworkPolicySpec;
  /** Why its rules are refused (it isolates, allows nothing); absent for a policy enforced as written. */
  refused?: string;
}

export type Projection<T> = { ok: true; value: T } | { ok: false; reason: string };

/** What one object may hold before it is refused; docs/network-policy.md says why each is what it is. */
export const NETPOL_BOUNDS = {
  labels: 4096,
  namedPorts: 1024,
  rules: 1024,
  peers: 1024,
  ports: 1024,
  except: 1024,
  expressions: 256,
  values: 1024,
} as const;

/** The label the control plane sets on every Namespace (kubernetes.io/docs/concepts/services-networking/network-policies, "Targeting a Namespace by its name"). */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

class Refuse extends Error {}

function refuse(reason: string): never {
  throw new Refuse(reason);
}

function project<T>(build: () => T): Projection<T> {
  try {
    return { ok: true, value: build() };
  } catch (err) {
    if (err instanceof Refuse) return { ok: false, reason: err.message };
    throw err;
  }
}

function own(o: Obj | undefined, key: string): unknown {
  return o !== undefined && Object.prototype.hasOwnProperty.call(o, key) ? o[key] : undefined;
}

/** A list field: absent or null is empty; anything else but an array of at most `max` items is refused. */
function list(v: unknown, what: string, max: number): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) refuse(`${what} is not a list`);
  if (v.length > max) refuse(`${what} has ${v.length} items, more than ${max}`);
  return v;
}

function text(v: unknown, what: string, max: number): string {
  if (typeof v !== 'string' || v === '' || v.length > max) refuse(`${what} is not a string of 1 to ${max} characters`);
  return v;
}

// Label syntax (k8s.io/apimachinery pkg/util/validation: IsQualifiedName, IsValidLabelValue).
const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

function isLabelKey(key: string): boolean {
  const slash = key.indexOf('/');
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (slash >= 0) {
    const prefix = key.slice(0, slash);
    if (prefix.length === 0 || prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)) return false;
  }
  return name.length > 0 && name.length <= 63 && NAME.test(name);
}

function isLabelValue(value: string): boolean {
  return value === '' || (value.length <= 63 && NAME.test(value));
}

function labelMap(v: unknown, what: string): Record<string, string> {
  if (v === undefined || v === null) return {};
  const o = asObj(v) ?? refuse(`${what} is not an object`);
  const keys = Object.keys(o);
  if (keys.length > NETPOL_BOUNDS.labels) refuse(`${what} has ${keys.length} entries, more than ${NETPOL_BOUNDS.labels}`);
  const out: Record<string, string> = {};
  for (const k of keys) {
    const value = o[k];
    if (!isLabelKey(k)) refuse(`${what}: ${JSON.stringify(k.slice(0, 80))} is not a label key`);
    if (typeof value !== 'string' || !isLabelValue(value)) refuse(`${what}: the value of ${k} is not a label value`);
    out[k] = value;
  }
  return out;
}

/** An address as the agent writes it: dotted IPv4, RFC 5952 IPv6; undefined when neither. */
export function canonicalIp(ip: string): string | undefined {
  const v4 = parseIp4(ip);
  if (v4 !== undefined) return formatIp4(v4);
  const v6 = parseIp6(ip);
  return v6 === undefined ? undefined : formatIp6(v6);
}

function protocol(v: unknown, what: string): Protocol {
  if (v === 'TCP' || v === 'UDP' || v === 'SCTP') return v;
  return refuse(`${what} is not TCP, UDP or SCTP`);
}

function portNumber(v: unknown, what: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 65535) refuse(`${what} is not a port number 1-65535`);
  return v;
}

// --- Pod ---

export function projectPod(raw: unknown): Projection<Pod> {
  return project(() => {
    const o = asObj(raw) ?? refuse('the Pod is not an object');
    const meta = asObj(own(o, 'metadata')) ?? refuse('metadata is missing');
    const spec = asObj(own(o, 'spec'));
    const status = asObj(own(o, 'status'));
    const pod: Pod = {
      namespace: text(own(meta, 'namespace'), 'metadata.namespace', 63),
      name: text(own(meta, 'name'), 'metadata.name', 253),
      uid: text(own(meta, 'uid'), 'metadata.uid', 128),
      labels: labelMap(own(meta, 'labels'), 'metadata.labels'),
      podIPs: podIPs(status),
      hostNetwork: own(spec, 'hostNetwork') === true,
      ports: namedPorts(spec),
    };
    const nodeName = own(spec, 'nodeName');
    if (nodeName !== undefined && nodeName !== '') pod.nodeName = text(nodeName, 'spec.nodeName', 253);
    const phase = own(status, 'phase');
    if (phase !== undefined && phase !== '') pod.phase = text(phase, 'status.phase', 32);
    return pod;
  });
}

/** status.podIPs (API: at most two, one per family), else status.podIP. */
function podIPs(status: Obj | undefined): string[] {
  const listed = list(own(status, 'podIPs'), 'status.podIPs', 2).map((e, i) => text(own(asObj(e), 'ip'), `status.podIPs[${i}].ip`, 45));
  const single = own(status, 'podIP');
  const raw = listed.length > 0 ? listed : single === undefined || single === '' ? [] : [text(single, 'status.podIP', 45)];
  const ips = raw.map((ip) => canonicalIp(ip) ?? refuse(`${JSON.stringify(ip)} is not an IP address`));
  if (ips.length === 2 && ips[0].includes(':') === ips[1].includes(':')) refuse('status.podIPs holds two addresses of one family');
  return ips;
}

/** Container ports with a name, as kubernetes pkg/api/v1/pod/util.go FindPort looks them up (containers, then sidecars). */
function namedPorts(spec: Obj | undefined): NamedPort[] {
  const sidecars = list(own(spec, 'initContainers'), 'spec.initContainers', NETPOL_BOUNDS.namedPorts).filter((c) => own(asObj(c), 'restartPolicy') === 'Always');
  const containers = [...list(own(spec, 'containers'), 'spec.containers', NETPOL_BOUNDS.namedPorts), ...sidecars];
  const out: NamedPort[] = [];
  containers.forEach((c, i) => {
    for (const [j, p] of list(own(asObj(c), 'ports'), `container ${i} ports`, NETPOL_BOUNDS.namedPorts).entries()) {
      const port = asObj(p) ?? refuse(`container ${i} port ${j} is not an object`);
      const name = own(port, 'name');
      if (name === undefined || name === '') continue;
      const proto = own(port, 'protocol');
      out.push({
        name: text(name, `container ${i} port ${j} name`, 15),
        protocol: proto === undefined ? 'TCP' : protocol(proto, `container ${i} port ${j} protocol`),
        containerPort: portNumber(own(port, 'containerPort'), `container ${i} port ${j} containerPort`),
      });
      if (out.length > NETPOL_BOUNDS.namedPorts) refuse(`the Pod names more than ${NETPOL_BOUNDS.namedPorts} ports`);
    }
  });
  return out;
}

// --- Namespace ---

export function projectNamespace(raw: unknown): Projection<Namespace> {
  return project(() => {
    const meta = asObj(own(asObj(raw) ?? refuse('the Namespace is not an object'), 'metadata')) ?? refuse('metadata is missing');
    const name = text(own(meta, 'name'), 'metadata.name', 63);
    // The control plane sets this label on every Namespace; a server that did not (a fake) gets it here.
    return { name, labels: { ...labelMap(own(meta, 'labels'), 'metadata.labels'), [NAMESPACE_NAME_LABEL]: name } };
  });
}

// --- LabelSelector ---

/** A metav1.LabelSelector, checked as labels.NewRequirement checks each requirement. */
function projectSelector(raw: unknown, what: string): LabelSelector {
  const o = asObj(raw) ?? refuse(`${what} is not an object`);
  const sel: LabelSelector = {};
  const ml = own(o, 'matchLabels');
  if (ml !== undefined && ml !== null) sel.matchLabels = labelMap(ml, `${what}.matchLabels`);
  const me = list(own(o, 'matchExpressions'), `${what}.matchExpressions`, NETPOL_BOUNDS.expressions);
  if (me.length > 0) {
    sel.matchExpressions = me.map((e, i) => {
      const r = asObj(e) ?? refuse(`${what}.matchExpressions[${i}] is not an object`);
      const key = text(own(r, 'key'), `${what}.matchExpressions[${i}].key`, 317);
      if (!isLabelKey(key)) refuse(`${what}.matchExpressions[${i}].key is not a label key`);
      const operator = own(r, 'operator');
      if (operator !== 'In' && operator !== 'NotIn' && operator !== 'Exists' && operator !== 'DoesNotExist') {
        return refuse(`${what}.matchExpressions[${i}].operator is not In, NotIn, Exists or DoesNotExist`);
      }
      const values = list(own(r, 'values'), `${what}.matchExpressions[${i}].values`, NETPOL_BOUNDS.values).map((v) => {
        if (typeof v !== 'string' || !isLabelValue(v)) refuse(`${what}.matchExpressions[${i}].values holds a value that is not a label value`);
        return v;
      });
      if ((operator === 'In' || operator === 'NotIn') && values.length === 0) refuse(`${what}.matchExpressions[${i}]: ${operator} needs values`);
      if ((operator === 'Exists' || operator === 'DoesNotExist') && values.length > 0) refuse(`${what}.matchExpressions[${i}]: ${operator} takes no values`);
      return { key, operator, values };
    });
  }
  return sel;
}

// --- NetworkPolicy ---

export function projectNetworkPolicy(raw: unknown): Projection<NetworkPolicy> {
  return project(() => {
    const o = asObj(raw) ?? refuse('the NetworkPolicy is not an object');
    const meta = asObj(own(o, 'metadata')) ?? refuse('metadata is missing');
    const spec = asObj(own(o, 'spec')) ?? {};
    const rawSelector = own(spec, 'podSelector');
    const base = {
      namespace: text(own(meta, 'namespace'), 'metadata.namespace', 63),
      name: text(own(meta, 'name'), 'metadata.name', 253),
      uid: text(own(meta, 'uid'), 'metadata.uid', 128),
    };
    const podSelector = rawSelector === undefined || rawSelector === null ? {} : projectSelector(rawSelector, 'spec.podSelector');
    const rawTypes = list(own(spec, 'policyTypes'), 'spec.policyTypes', 2).map((t) =>
      t === 'Ingress' || t === 'Egress' ? t : refuse('spec.policyTypes holds a value that is not Ingress or Egress'),
    );
    // Rules that cannot be read refuse the rules, not the policy: it still isolates (the `refused` case below).
    const rules = project(() => ({
      ingress: list(own(spec, 'ingress'), 'spec.ingress', NETPOL_BOUNDS.rules).map((r, i) => policyRule(r, `spec.ingress[${i}]`, 'from') as NetworkPolicyIngressRule),
      egress: list(own(spec, 'egress'), 'spec.egress', NETPOL_BOUNDS.rules).map((r, i) => policyRule(r, `spec.egress[${i}]`, 'to') as NetworkPolicyEgressRule),
    }));
    if (rules.ok) {
      const value: NetworkPolicy = { ...base, spec: { podSelector } };
      if (rules.value.ingress.length > 0) value.spec = { ...value.spec, ingress: rules.value.ingress };
      if (rules.value.egress.length > 0) value.spec = { ...value.spec, egress: rules.value.egress };
      if (rawTypes.length > 0) value.spec = { ...value.spec, policyTypes: rawTypes };
      return value;
    }
    // Unreadable rules: keep what the policy isolates. Without policyTypes, Egress is assumed when an egress
    // section is there at all (it would count had it been readable), Ingress always.
    const egress = own(spec, 'egress');
    const egressPresent = egress !== undefined && egress !== null && !(Array.isArray(egress) && egress.length === 0);
    const policyTypes: PolicyType[] = rawTypes.length > 0 ? rawTypes : egressPresent ? ['Ingress', 'Egress'] : ['Ingress'];
    return { ...base, spec: { podSelector, policyTypes }, refused: rules.reason };
  });
}

/** One rule: its ports and its peers, under `from` (ingress) or `to` (egress); empty lists left out. */
function policyRule(raw: unknown, what: string, peersKey: 'from' | 'to'): Record<string, unknown> {
  const o = asObj(raw) ?? refuse(`${what} is not an object`);
  const rule: Record<string, unknown> = {};
  const ports = policyPorts(own(o, 'ports'), `${what}.ports`);
  const listed = peers(own(o, peersKey), `${what}.${peersKey}`);
  if (ports.length > 0) rule.ports = ports;
  if (listed.length > 0) rule[peersKey] = listed;
  return rule;
}

// IANA_SVC_NAME (pkg/util/validation IsValidPortName): 1-15 characters, lower case letters, digits and
// '-', at least one letter, no '-' at either end, no '--'.
const PORT_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

function policyPorts(raw: unknown, what: string): NetworkPolicyPort[] {
  return list(raw, what, NETPOL_BOUNDS.ports).map((p, i) => {
    const o = asObj(p) ?? refuse(`${what}[${i}] is not an object`);
    const out: NetworkPolicyPort = {};
    const proto = own(o, 'protocol');
    if (proto !== undefined && proto !== null) out.protocol = protocol(proto, `${what}[${i}].protocol`);
    const port = own(o, 'port');
    if (typeof port === 'string') {
      if (port.length > 15 || !PORT_NAME.test(port) || port.includes('--') || !/[a-z]/.test(port)) refuse(`${what}[${i}].port is not a port name`);
      out.port = port;
    } else if (port !== undefined && port !== null) out.port = portNumber(port, `${what}[${i}].port`);
    const endPort = own(o, 'endPort');
    if (endPort !== undefined && endPort !== null) {
      if (typeof out.port !== 'number') refuse(`${what}[${i}].endPort needs a numeric port`);
      out.endPort = portNumber(endPort, `${what}[${i}].endPort`);
      if (out.endPort < out.port) refuse(`${what}[${i}].endPort is below port`);
    }
    return out;
  });
}

function peers(raw: unknown, what: string): NetworkPolicyPeer[] {
  return list(raw, what, NETPOL_BOUNDS.peers).map((p, i) => {
    const o = asObj(p) ?? refuse(`${what}[${i}] is not an object`);
    const peer: NetworkPolicyPeer = {};
    const ps = own(o, 'podSelector');
    const ns = own(o, 'namespaceSelector');
    const ib = own(o, 'ipBlock');
    if (ps !== undefined && ps !== null) peer.podSelector = projectSelector(ps, `${what}[${i}].podSelector`);
    if (ns !== undefined && ns !== null) peer.namespaceSelector = projectSelector(ns, `${what}[${i}].namespaceSelector`);
    if (ib !== undefined && ib !== null) {
      if (peer.podSelector || peer.namespaceSelector) refuse(`${what}[${i}]: ipBlock cannot be combined with a selector`);
      peer.ipBlock = ipBlock(ib, `${what}[${i}].ipBlock`);
    }
    if (!peer.podSelector && !peer.namespaceSelector && !peer.ipBlock) refuse(`${what}[${i}] names no peer`);
    return peer;
  });
}

function ipBlock(raw: unknown, what: string): IPBlock {
  const o = asObj(raw) ?? refuse(`${what} is not an object`);
  const cidr = canonicalCidr(text(own(o, 'cidr'), `${what}.cidr`, 49)) ?? refuse(`${what}.cidr is not a CIDR`);
  const except = list(own(o, 'except'), `${what}.except`, NETPOL_BOUNDS.except).map((e, i) => {
    const c = canonicalCidr(text(e, `${what}.except[${i}]`, 49)) ?? refuse(`${what}.except[${i}] is not a CIDR`);
    // ValidateIPBlock: an except must be a strict subset of the cidr (so of its family too).
    const outer = parseNet(cidr.cidr)!;
    const inner = parseNet(c.cidr)!;
    if (!netContains(outer, inner) || inner.prefix === outer.prefix) refuse(`${what}.except[${i}] is not inside ${cidr.cidr}`);
    return c.cidr;
  });
  return except.length > 0 ? { cidr: cidr.cidr, except } : { cidr: cidr.cidr };
}

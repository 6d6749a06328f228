// A cluster for the NetworkPolicy core's tests, as the upstream e2e tests build theirs (kubernetes
// test/e2e/network/netpol/kubemanager.go, model.go): namespaces x, y, z, pods a, b, c in each, labelled
// pod=<name>, every pod serving ports 80 and 81 on TCP and UDP under the names serve-<port>-<proto>; and
// the expected connectivity as a truth table (reachability.go: a matrix of booleans, set by peer patterns).
// Objects go through the real projections from API-shaped JSON, so the tests read like the YAML they mirror.
// Each table is checked on simulated Windows nodes running the core (./netpol-node.ts): the rules HNS holds
// after the agent's writes, judged by the simulated node's evaluator.
import { expect } from '@jest/globals';
import { projectNamespace, projectNetworkPolicy, projectPod } from '../../src/netpol/types.js';
import type { Namespace, NetworkPolicy, Pod } from '../../src/netpol/types.js';
import { computeIntent } from '../../src/netpol/intent.js';
import type { ClusterState, NodeContext } from '../../src/netpol/intent.js';
import { hnsRefusal, translate } from '../../src/netpol/translate.js';
import type { Translation } from '../../src/netpol/translate.js';
import { passes, PolicyNode, type NodeJudge } from './netpol-node.js';

export const NODE: NodeContext = { nodeName: 'win-1', nodeIPs: ['192.168.0.10', 'fd00:192:168::10'] };
export const OTHER_NODE = 'win-2';
export const PEER: NodeContext = { nodeName: OTHER_NODE, nodeIPs: ['192.168.0.11', 'fd00:192:168::11'] };
/** Each node's pod subnets (flannel's per-node leases), IPv4 and IPv6. */
export const SUBNETS: Readonly<Record<string, readonly string[]>> = {
  [NODE.nodeName]: ['10.244.1.0/24', 'fd00:10:244:1::/64'],
  [OTHER_NODE]: ['10.244.2.0/24', 'fd00:10:244:2::/64'],
};
export const NAMESPACES = ['x', 'y', 'z'] as const;
export const POD_NAMES = ['a', 'b', 'c'] as const;

export interface PodOptions {
  labels?: Record<string, string>;
  ips?: string[];
  node?: string;
  hostNetwork?: boolean;
  phase?: string;
  ports?: { name: string; containerPort: number; protocol?: string }[];
  uid?: string;
}

export const E2E_PORTS = [80, 81].flatMap((port) => ['TCP', 'UDP'].map((protocol) => ({ name: `serve-${port}-${protocol.toLowerCase()}`, containerPort: port, protocol })));

function podJson(namespace: string, name: string, o: PodOptions = {}): unknown {
  return {
    metadata: { namespace, name, uid: o.uid ?? `uid-${namespace}-${name}`, labels: o.labels ?? { pod: name } },
    spec: { nodeName: o.node ?? NODE.nodeName, hostNetwork: o.hostNetwork ?? false, containers: [{ name: 'c', ports: o.ports ?? E2E_PORTS }] },
    status: { phase: o.phase ?? 'Running', podIPs: (o.ips ?? []).map((ip) => ({ ip })) },
  };
}

function ok<T>(p: { ok: true; value: T } | { ok: false; reason: string }): T {
  if (!p.ok) throw new Error(`fixture refused: ${p.reason}`);
  return p.value;
}

export const pod = (namespace: string, name: string, o: PodOptions = {}): Pod => ok(projectPod(podJson(namespace, name, o)));
export const namespace = (name: string, labels: Record<string, string> = {}): Namespace => ok(projectNamespace({ metadata: { name, labels } }));
export const policy = (namespace: string, name: string, spec: unknown): NetworkPolicy =>
  ok(projectNetworkPolicy({ metadata: { namespace, name, uid: `uid-np-${namespace}-${name}` }, spec }));

/**
 * The e2e cluster: x/a .. z/c, on this node (10.244.1.1.., and fd00:10:244:1::1.. when dual-stack) but the pod
 * names in `onPeer`, which run on the peer node (10.244.2.1.., fd00:10:244:2::1..).
 */
export function e2eCluster(dualStack = false, onPeer: readonly string[] = []): { pods: Pod[]; namespaces: Namespace[]; ipOf: Map<string, string[]> } {
  const pods: Pod[] = [];
  const ipOf = new Map<string, string[]>();
  const next = { [NODE.nodeName]: 1, [OTHER_NODE]: 1 };
  for (const ns of NAMESPACES) {
    for (const name of POD_NAMES) {
      const node = onPeer.includes(name) ? OTHER_NODE : NODE.nodeName;
      const subnet = node === NODE.nodeName ? 1 : 2;
      const n = next[node]++;
      const ips = dualStack ? [`10.244.${subnet}.${n}`, `fd00:10:244:${subnet}::${n}`] : [`10.244.${subnet}.${n}`];
      pods.push(pod(ns, name, { ips, node }));
      ipOf.set(`${ns}/${name}`, ips);
    }
  }
  return { pods, namespaces: NAMESPACES.map((ns) => namespace(ns)), ipOf };
}

/** The whole pipeline the controller will run: intent (SCTP refused), then translation for an HNS version. */
export function translateCluster(state: ClusterState, hnsMajor: number, node: NodeContext = NODE): Translation {
  return translate(computeIntent(state, node, { unsupported: hnsRefusal }), { hnsVersion: { Major: hnsMajor, Minor: 0 } });
}

/** Simulated nodes (this one, and the peers named) on HNS `hnsMajor`.0, each converged on the cluster. */
export async function policyNodes(state: ClusterState, hnsMajor: number, nodes: readonly NodeContext[] = [NODE]): Promise<PolicyNode[]> {
  const out: PolicyNode[] = [];
  for (const node of nodes) {
    const n = await PolicyNode.start({ node, subnets: SUBNETS[node.nodeName], hnsVersion: { Major: hnsMajor, Minor: 0 } });
    await n.apply(state);
    out.push(n);
  }
  return out;
}

/** The judges of those nodes once converged. */
export async function judgesOf(state: ClusterState, hnsMajor: number, nodes: readonly NodeContext[] = [NODE]): Promise<NodeJudge[]> {
  return (await policyNodes(state, hnsMajor, nodes)).map((n) => n.judge());
}

/** A TCP or UDP connection opening (its first packet), from an ephemeral port. */
export function connect(judges: readonly NodeJudge[], src: string, dst: string, protocol: 'TCP' | 'UDP', port: number, srcPort = 40000): boolean {
  return passes(judges, { src, dst, protocol: protocol === 'TCP' ? 6 : 17, srcPort, dstPort: port });
}

export interface PeerPattern {
  namespace?: string;
  pod?: string;
}

/** reachability.go's truth table: from -> to -> expected, every pair true or false to start with. */
export class Reachability {
  readonly expected = new Map<string, Map<string, boolean>>();

  constructor(
    readonly pods: readonly string[],
    initial: boolean,
  ) {
    for (const f of pods) this.expected.set(f, new Map(pods.map((t) => [t, initial])));
  }

  private static matches(p: PeerPattern, podKey: string): boolean {
    const [ns, name] = podKey.split('/');
    return (p.namespace === undefined || p.namespace === ns) && (p.pod === undefined || p.pod === name);
  }

  expectPeer(from: PeerPattern, to: PeerPattern, value: boolean): this {
    for (const f of this.pods) for (const t of this.pods) if (Reachability.matches(from, f) && Reachability.matches(to, t)) this.expected.get(f)!.set(t, value);
    return this;
  }

  expect(from: string, to: string, value: boolean): this {
    this.expected.get(from)!.set(to, value);
    return this;
  }

  expectAllIngress(to: string, value: boolean): this {
    for (const f of this.pods) this.expected.get(f)!.set(to, value);
    return this;
  }

  expectAllEgress(from: string, value: boolean): this {
    for (const t of this.pods) this.expected.get(from)!.set(t, value);
    return this;
  }

  /** Every pair (but a pod to itself, which e2e ignores: ignoreLoopback) that the nodes judge otherwise, as `from -> to`. */
  wrong(judges: readonly NodeJudge[], ipOf: ReadonlyMap<string, readonly string[]>, protocol: 'TCP' | 'UDP', port: number, family = 0): string[] {
    const out: string[] = [];
    for (const f of this.pods) {
      for (const t of this.pods) {
        if (f === t) continue;
        const got = connect(judges, ipOf.get(f)![family], ipOf.get(t)![family], protocol, port);
        if (got !== this.expected.get(f)!.get(t)) out.push(`${f} -> ${t}: expected ${!got}`);
      }
    }
    return out;
  }
}

/** Check a truth table on both HNS translations (flattened below 13.0, IP sets from 13.0) and every family. */
export async function expectReachability(
  state: ClusterState,
  ipOf: ReadonlyMap<string, readonly string[]>,
  r: Reachability,
  protocol: 'TCP' | 'UDP',
  port: number,
  nodes: readonly NodeContext[] = [NODE],
): Promise<void> {
  const families = Math.max(...[...ipOf.values()].map((ips) => ips.length));
  for (const major of [12, 13]) {
    const judges = await judgesOf(state, major, nodes);
    for (let family = 0; family < families; family++)
      expect({ hns: major, family, wrong: r.wrong(judges, ipOf, protocol, port, family) }).toEqual({ hns: major, family, wrong: [] });
  }
}

// A cluster for the NetworkPolicy core's tests, as the upstream e2e tests build theirs (kubernetes
// test/e2e/network/netpol/kubemanager.go, model.go): namespaces x, y, z, pods a, b, c in each, labelled
// pod=<name>, every pod serving ports 80 and 81 on TCP and UDP under the names serve-<port>-<proto>; and
// the expected connectivity as a truth table (reachability.go: a matrix of booleans, set by peer patterns).
// Objects go through the real projections from API-shaped JSON, so the tests read like the YAML they mirror.
import { expect } from '@jest/globals';
import { projectNamespace, projectNetworkPolicy, projectPod } from '../../src/netpol/types.js';
import type { Namespace, NetworkPolicy, Pod } from '../../src/netpol/types.js';
import { computeIntent } from '../../src/netpol/intent.js';
import type { ClusterState, NodeContext } from '../../src/netpol/intent.js';
import { hnsRefusal, translate } from '../../src/netpol/translate.js';
import type { Translation } from '../../src/netpol/translate.js';
import { AclEvaluator } from './acl-eval.js';

export const NODE: NodeContext = { nodeName: 'win-1', nodeIPs: ['192.168.0.10', 'fd00:192:168::10'] };
export const OTHER_NODE = 'win-2';
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

/** The e2e cluster: x/a .. z/c on this node, addresses 10.244.1.1.. (and fd00:10:244:1::1.. when dual-stack). */
export function e2eCluster(dualStack = false): { pods: Pod[]; namespaces: Namespace[]; ipOf: Map<string, string[]> } {
  const pods: Pod[] = [];
  const ipOf = new Map<string, string[]>();
  let n = 1;
  for (const ns of NAMESPACES) {
    for (const name of POD_NAMES) {
      const ips = dualStack ? [`10.244.1.${n}`, `fd00:10:244:1::${n}`] : [`10.244.1.${n}`];
      n++;
      pods.push(pod(ns, name, { ips }));
      ipOf.set(`${ns}/${name}`, ips);
    }
  }
  return { pods, namespaces: NAMESPACES.map((ns) => namespace(ns)), ipOf };
}

/** The whole pipeline the controller will run: intent (SCTP refused), then translation for an HNS version. */
export function translateCluster(state: ClusterState, hnsMajor: number, node: NodeContext = NODE): Translation {
  return translate(computeIntent(state, node, { unsupported: hnsRefusal }), { hnsVersion: { Major: hnsMajor, Minor: 0 } });
}

export function evaluatorOf(t: Translation): AclEvaluator {
  return new AclEvaluator(
    t.endpoints.map((e) => ({ ips: e.podIPs, rules: e.rules })),
    t.sets,
  );
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

  /** Every pair (but a pod to itself, which e2e ignores: ignoreLoopback) that the evaluator judges otherwise, as `from -> to`. */
  wrong(evaluator: AclEvaluator, ipOf: ReadonlyMap<string, readonly string[]>, protocol: 'TCP' | 'UDP', port: number, family = 0): string[] {
    const out: string[] = [];
    for (const f of this.pods) {
      for (const t of this.pods) {
        if (f === t) continue;
        const got = evaluator.allows({ src: ipOf.get(f)![family], dst: ipOf.get(t)![family], protocol, port });
        if (got !== this.expected.get(f)!.get(t)) out.push(`${f} -> ${t}: expected ${!got}`);
      }
    }
    return out;
  }
}

/** Check a truth table on both HNS translations (flattened below 13.0, IP sets from 13.0) and every family. */
export function expectReachability(state: ClusterState, ipOf: ReadonlyMap<string, readonly string[]>, r: Reachability, protocol: 'TCP' | 'UDP', port: number): void {
  const families = Math.max(...[...ipOf.values()].map((ips) => ips.length));
  for (const major of [12, 13]) {
    const ev = evaluatorOf(translateCluster(state, major));
    for (let family = 0; family < families; family++) expect({ hns: major, family, wrong: r.wrong(ev, ipOf, protocol, port, family) }).toEqual({ hns: major, family, wrong: [] });
  }
}

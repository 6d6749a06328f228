// Properties of the NetworkPolicy core over random clusters and policies:
// - never two Switch rules of one endpoint, direction and priority with different actions (stronger than
//   "no two overlapping rules of different actions at one priority", which no public source settles for
//   HNS: Calico policysets.go only says HNS's tie-break differs from its own; the simulated node's evaluator
//   refuses to judge that case, FLANNEL_ERR_ACL_UNSETTLED, so no verdict below can rest on it);
// - the rules enforce the API's semantics: for every pair of pods and a few ports, what the translated
//   rules let through, once written to a simulated node and judged by its evaluator
//   (test/support/netpol-node.ts, src/simulator/acl.ts), is what a direct reading of the API reference says
//   (the oracle below, written from networking/v1 types.go, with no address sets, no CIDR arithmetic);
// - the flattened (HNS < 13.0) and IP set (HNS >= 13.0) translations agree.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { netHas, parseNet } from '../../src/netpol/cidr.js';
import { policyTypesOf } from '../../src/netpol/intent.js';
import type { ClusterState } from '../../src/netpol/intent.js';
import { selectorMatches } from '../../src/netpol/selectors.js';
import { hnsRefusal } from '../../src/netpol/translate.js';
import type { NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort, Pod } from '../../src/netpol/types.js';
import { connect, judgesOf, NODE, translateCluster } from '../support/netpol-cluster.js';
import { buildCluster, labels, podSpec, policySpec } from '../support/netpol-arbitraries.js';

// --- The oracle: the API reference read directly, pair by pair. ---

const live = (p: Pod) => !p.hostNetwork && p.podIPs.length > 0 && p.phase !== 'Succeeded' && p.phase !== 'Failed';

function peerMatches(state: ClusterState, peers: readonly NetworkPolicyPeer[] | undefined, policyNs: string, other: Pod, ip: string): boolean {
  if (peers === undefined || peers.length === 0) return true;
  return peers.some((p) => {
    if (p.ipBlock !== undefined) return netHas(parseNet(p.ipBlock.cidr)!, ip) && !(p.ipBlock.except ?? []).some((e) => netHas(parseNet(e)!, ip));
    if (!live(other)) return false;
    const nsOk =
      p.namespaceSelector === undefined ? other.namespace === policyNs : selectorMatches(p.namespaceSelector, state.namespaces.find((n) => n.name === other.namespace)!.labels);
    return nsOk && selectorMatches(p.podSelector ?? {}, other.labels);
  });
}

function portMatches(ports: readonly NetworkPolicyPort[] | undefined, named: Pod, protocol: 'TCP' | 'UDP', port: number): boolean {
  if (ports === undefined || ports.length === 0) return true;
  return ports.some((p) => {
    if ((p.protocol ?? 'TCP') !== protocol) return false;
    if (p.port === undefined) return true;
    if (typeof p.port === 'number') return port >= p.port && port <= (p.endPort ?? p.port);
    // A name is a pod's; a hostNetwork pod's traffic is its node's, which has no names.
    return live(named) && named.ports.find((q) => q.name === p.port && q.protocol === protocol)?.containerPort === port;
  });
}

/** Is the direction of `self` (the enforced pod) open to `other` at `otherIp`, port on `portPod`? */
function directionAllows(state: ClusterState, self: Pod, dir: 'Ingress' | 'Egress', other: Pod, otherIp: string, portPod: Pod, protocol: 'TCP' | 'UDP', port: number): boolean {
  if (self.nodeName !== NODE.nodeName || !live(self)) return true; // not enforced on this node
  const applying = state.policies.filter(
    (p: NetworkPolicy) => p.namespace === self.namespace && selectorMatches(p.spec.podSelector, self.labels) && policyTypesOf(p).includes(dir),
  );
  if (applying.length === 0) return true;
  if (self.podIPs.includes(otherIp) || NODE.nodeIPs.includes(otherIp)) return true; // itself, its node
  return applying.some((p) => {
    if (hnsRefusal(p) !== undefined) return false;
    const rules = dir === 'Ingress' ? (p.spec.ingress ?? []).map((r) => ({ peers: r.from, ports: r.ports })) : (p.spec.egress ?? []).map((r) => ({ peers: r.to, ports: r.ports }));
    return rules.some((r) => peerMatches(state, r.peers, p.namespace, other, otherIp) && portMatches(r.ports, portPod, protocol, port));
  });
}

function oracle(state: ClusterState, src: Pod, dst: Pod, family: number, protocol: 'TCP' | 'UDP', port: number): boolean {
  const s = src.podIPs[family];
  const d = dst.podIPs[family];
  return directionAllows(state, src, 'Egress', dst, d, dst, protocol, port) && directionAllows(state, dst, 'Ingress', src, s, dst, protocol, port);
}

const PROBES = [
  ['TCP', 80],
  ['TCP', 81],
  ['UDP', 81],
  ['TCP', 8080],
] as const;

describe('NetworkPolicy translation, by property', () => {
  it('no two Switch rules of one endpoint, direction and priority differ in action; and the rules enforce what the API says, in both HNS modes', async () => {
    let isolatedPairs = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(podSpec, { minLength: 2, maxLength: 6 }),
        fc.array(policySpec, { maxLength: 3 }),
        fc.array(labels, { minLength: 2, maxLength: 2 }),
        async (pods, specs, nsLabels) => {
          const state = buildCluster(pods, specs, nsLabels);
          const verdicts: boolean[][] = [];
          for (const major of [12, 13]) {
            const t = translateCluster(state, major);
            for (const e of t.endpoints) {
              const actions = new Map<string, string>();
              for (const r of e.rules.filter((x) => x.RuleType === 'Switch')) {
                const k = `${r.Direction} ${r.Priority}`;
                expect(actions.get(k) ?? r.Action).toBe(r.Action);
                actions.set(k, r.Action);
              }
            }
            const judges = await judgesOf(state, major);
            const got: boolean[] = [];
            const probed = state.pods.filter((p) => p.podIPs.length > 0 && p.phase !== 'Succeeded');
            for (const src of probed) {
              for (const dst of probed) {
                if (src.podIPs[0] === dst.podIPs[0]) continue;
                for (let family = 0; family < Math.min(src.podIPs.length, dst.podIPs.length); family++) {
                  for (const [protocol, port] of PROBES) {
                    const v = connect(judges, src.podIPs[family], dst.podIPs[family], protocol, port);
                    const want = oracle(state, src, dst, family, protocol, port);
                    if (!want) isolatedPairs++;
                    expect(`${src.namespace}/${src.name} -> ${dst.namespace}/${dst.name} ${protocol}/${port} family ${family}: ${v}`).toBe(
                      `${src.namespace}/${src.name} -> ${dst.namespace}/${dst.name} ${protocol}/${port} family ${family}: ${want}`,
                    );
                    got.push(v);
                  }
                }
              }
            }
            verdicts.push(got);
          }
          expect(verdicts[1]).toEqual(verdicts[0]);
        },
      ),
      { numRuns: 300 },
    );
    // Not vacuous: the runs denied something.
    expect(isolatedPairs).toBeGreaterThan(100);
  }, 120_000);
});

// Upstream's NetworkPolicy e2e scenarios (kubernetes test/e2e/network/netpol/network_policy.go; the cluster of
// kubemanager.go: namespaces x, y, z, pods a, b, c labelled pod=<name>, serving 80 and 81 on TCP and UDP; the
// expected connectivity of reachability.go: a matrix of every pair, loopback ignored), re-expressed on two
// simulated Windows nodes: pods a and b on this node (win-1), pod c of every namespace on a peer (win-2). Each
// node runs the core for its own pods and writes the result through HnsClient to its simulated HNS
// (test/support/netpol-node.ts); a connection is judged by the source node's evaluator and then the
// destination node's (src/simulator/acl.ts), on HNS 12.0 (addresses flattened into the rules) and 13.0 (IP
// sets, hcsshim hcn/hcnglobals.go SetPolicyVersion), IPv4 and dual-stack. The matrices are upstream's, written
// here; the case names are upstream's where the case is.
import { describe, expect, it } from '@jest/globals';
import type { ClusterState } from '../../src/netpol/intent.js';
import type { NetworkPolicy, Pod } from '../../src/netpol/types.js';
import { isAgentId } from '../../src/netpol/diff.js';
import { e2eCluster, expectReachability, namespace, NODE, PEER, pod, policy, Reachability, SUBNETS } from '../support/netpol-cluster.js';
import { PolicyNode, type Writes } from '../support/netpol-node.js';

const NS_KEY = 'kubernetes.io/metadata.name';
const NODES = [NODE, PEER];

function cluster(policies: NetworkPolicy[], dualStack = false) {
  const c = e2eCluster(dualStack, ['c']);
  const state: ClusterState = { pods: c.pods, namespaces: c.namespaces, policies };
  return { state, ipOf: c.ipOf, r: () => new Reachability([...c.ipOf.keys()], true) };
}

/** Upstream's check: the matrix on both HNS modes, every family the pods have, both nodes enforcing. */
const validate = (s: ReturnType<typeof cluster>, r: Reachability, protocol: 'TCP' | 'UDP', port: number) => expectReachability(s.state, s.ipOf, r, protocol, port, NODES);

const onA = { matchLabels: { pod: 'a' } };
const nsIs = (ns: string) => ({ matchLabels: { [NS_KEY]: ns } });

/** The cluster with `ns/name` given `labels` besides its own (upstream's netpol.AddPodLabels). */
function withLabels(state: ClusterState, ns: string, name: string, labels: Record<string, string>): ClusterState {
  const relabel = (p: Pod) => pod(p.namespace, p.name, { ips: [...p.podIPs], node: p.nodeName, labels: { ...p.labels, ...labels }, uid: p.uid });
  return { ...state, pods: state.pods.map((p) => (p.namespace === ns && p.name === name ? relabel(p) : p)) };
}

/**
 * Upstream's cases that change the cluster between two checks: the same two nodes apply each step in turn
 * (an update of what they wrote, not a fresh start), and the matrix holds after each, on both HNS modes and
 * every family the pods have.
 */
async function validateSteps(ipOf: ReadonlyMap<string, readonly string[]>, steps: { state: ClusterState; r: Reachability }[]): Promise<void> {
  const families = Math.max(...[...ipOf.values()].map((ips) => ips.length));
  for (const major of [12, 13]) {
    const nodes = await Promise.all(NODES.map((node) => PolicyNode.start({ node, subnets: SUBNETS[node.nodeName], hnsVersion: { Major: major, Minor: 0 } })));
    for (const [step, { state, r }] of steps.entries()) {
      for (const n of nodes) await n.apply(state);
      const judges = nodes.map((n) => n.judge());
      for (let family = 0; family < families; family++)
        expect({ hns: major, step, family, wrong: r.wrong(judges, ipOf, 'TCP', 80, family) }).toEqual({ hns: major, step, family, wrong: [] });
    }
  }
}

describe.each([
  ['IPv4', false],
  ['dual-stack', true],
])('e2e NetworkPolicy on simulated Windows nodes (%s)', (_family, dualStack) => {
  const scenario = (policies: NetworkPolicy[]) => cluster(policies, dualStack);

  it("should support a 'default-deny-ingress' policy", async () => {
    const s = scenario([policy('x', 'deny-ingress', { podSelector: {}, ingress: [] })]);
    await validate(s, s.r().expectPeer({}, { namespace: 'x' }, false), 'TCP', 80);
  });

  it("should support a 'default-deny-all' policy", async () => {
    const s = scenario([policy('x', 'deny-all', { podSelector: {}, policyTypes: ['Ingress', 'Egress'] })]);
    await validate(s, s.r().expectPeer({}, { namespace: 'x' }, false).expectPeer({ namespace: 'x' }, {}, false), 'TCP', 80);
  });

  it('should deny egress from all pods in a namespace', async () => {
    const s = scenario([policy('x', 'deny-egress-ns-x', { podSelector: {}, policyTypes: ['Egress'] })]);
    await validate(s, s.r().expectPeer({ namespace: 'x' }, {}, false), 'TCP', 80);
  });

  it('should enforce policy to allow traffic from pods within server namespace based on PodSelector', async () => {
    const s = scenario([policy('x', 'x-a-allows-x-b', { podSelector: onA, ingress: [{ from: [{ podSelector: { matchLabels: { pod: 'b' } } }] }] })]);
    await validate(s, s.r().expectAllIngress('x/a', false).expect('x/b', 'x/a', true), 'TCP', 80);
  });

  it('should enforce policy to allow traffic only from a different namespace, based on NamespaceSelector', async () => {
    const s = scenario([policy('x', 'allow-client-a-via-ns-selector', { podSelector: onA, ingress: [{ from: [{ namespaceSelector: nsIs('y') }] }] })]);
    await validate(s, s.r().expectPeer({ namespace: 'x' }, { namespace: 'x', pod: 'a' }, false).expectPeer({ namespace: 'z' }, { namespace: 'x', pod: 'a' }, false), 'TCP', 80);
  });

  it('should enforce policy based on PodSelector and NamespaceSelector', async () => {
    const s = scenario([
      policy('x', 'allow-ns-y-podselector-and-nsselector', {
        podSelector: onA,
        ingress: [{ from: [{ namespaceSelector: { matchExpressions: [{ key: NS_KEY, operator: 'NotIn', values: ['x'] }] }, podSelector: { matchLabels: { pod: 'b' } } }] }],
      }),
    ]);
    await validate(s, s.r().expectAllIngress('x/a', false).expect('y/b', 'x/a', true).expect('z/b', 'x/a', true), 'TCP', 80);
  });

  it('should enforce egress policy allowing traffic to a server in a different namespace based on PodSelector and NamespaceSelector (the server on the peer)', async () => {
    const s = scenario([
      policy('x', 'allow-to-ns-y-pod-c', {
        podSelector: onA,
        policyTypes: ['Egress'],
        egress: [{ to: [{ namespaceSelector: nsIs('y'), podSelector: { matchLabels: { pod: 'c' } } }] }],
      }),
    ]);
    await validate(s, s.r().expectAllEgress('x/a', false).expect('x/a', 'y/c', true), 'TCP', 80);
  });

  it('should enforce policy based on Ports (numeric), and a named port, and a port range', async () => {
    const numeric = scenario([policy('x', 'allow-81', { podSelector: onA, ingress: [{ from: [{ namespaceSelector: nsIs('y') }], ports: [{ port: 81, protocol: 'TCP' }] }] })]);
    const fromYOnly = (s: typeof numeric) =>
      s.r().expectPeer({ namespace: 'x' }, { namespace: 'x', pod: 'a' }, false).expectPeer({ namespace: 'z' }, { namespace: 'x', pod: 'a' }, false);
    await validate(numeric, fromYOnly(numeric), 'TCP', 81);
    await validate(numeric, numeric.r().expectAllIngress('x/a', false), 'TCP', 80);
    // Named: the server's own number for serve-80-tcp (an ingress rule names the local pod's port).
    const named = scenario([policy('x', 'allow-named', { podSelector: onA, ingress: [{ from: [{ namespaceSelector: nsIs('y') }], ports: [{ port: 'serve-80-tcp' }] }] })]);
    await validate(named, fromYOnly(named), 'TCP', 80);
    await validate(named, named.r().expectAllIngress('x/a', false), 'TCP', 81);
    // endPort: 80-81 on UDP, written as one HNS range.
    const ranged = scenario([policy('x', 'allow-range', { podSelector: onA, ingress: [{ ports: [{ protocol: 'UDP', port: 80, endPort: 81 }] }] })]);
    await validate(ranged, ranged.r(), 'UDP', 81);
    await validate(ranged, ranged.r().expectAllIngress('x/a', false), 'TCP', 81);
  });

  it('should allow egress access on one named port (the remote pod\u2019s number, pods on the peer included)', async () => {
    const s = scenario([policy('x', 'allow-egress', { podSelector: {}, policyTypes: ['Egress'], egress: [{ ports: [{ port: 'serve-80-tcp' }] }] })]);
    await validate(s, s.r(), 'TCP', 80);
    await validate(s, s.r().expectPeer({ namespace: 'x' }, {}, false), 'TCP', 81);
  });

  it('should enforce except clause while egress access to server in CIDR block', async () => {
    // The peer's pods are 10.244.2.0/24 (fd00:10:244:2::/64): x/a may reach them but z/c (10.244.2.3).
    const v4 = policy('x', 'deny-client-a-via-except-cidr-egress-rule', {
      podSelector: onA,
      policyTypes: ['Egress'],
      egress: [{ to: [{ ipBlock: { cidr: '10.244.2.0/24', except: ['10.244.2.3/32'] } }, { ipBlock: { cidr: 'fd00:10:244:2::/64', except: ['fd00:10:244:2::3/128'] } }] }],
    });
    const s = scenario([v4]);
    const r = s.r().expectAllEgress('x/a', false).expect('x/a', 'x/c', true).expect('x/a', 'y/c', true);
    await validate(s, r, 'TCP', 80);
  });

  it('should allow ingress access from updated pod', async () => {
    const s = scenario([
      policy('x', 'allow-client-a-via-pod-selector', { podSelector: onA, ingress: [{ from: [{ podSelector: { matchLabels: { pod: 'b', pod2: 'updated' } } }] }] }),
    ]);
    await validateSteps(s.ipOf, [
      { state: s.state, r: s.r().expectAllIngress('x/a', false) },
      { state: withLabels(s.state, 'x', 'b', { pod2: 'updated' }), r: s.r().expectAllIngress('x/a', false).expect('x/b', 'x/a', true) },
    ]);
  });

  it('should deny ingress access to updated pod', async () => {
    const s = scenario([policy('x', 'deny-ingress-via-label-selector', { podSelector: { matchLabels: { target: 'isolated' } }, policyTypes: ['Ingress'], ingress: [] })]);
    await validateSteps(s.ipOf, [
      { state: s.state, r: s.r() },
      { state: withLabels(s.state, 'x', 'a', { target: 'isolated' }), r: s.r().expectAllIngress('x/a', false) },
    ]);
  });

  it('should ensure an IP overlapping both IPBlock.CIDR and IPBlock.Except is allowed', async () => {
    // Upstream takes x/b's /24 (/64) as the cidr and x/b's /32 (/128) as its except, then updates the policy to
    // allow x/b's /32 alone. x/b's /24 here is this node's pods (10.244.1.0/24): the pods c, on the peer, are
    // outside it, so x/a reaches only this node's other pods, then x/b alone.
    const bare = scenario([]);
    const blocks = (only: boolean) =>
      bare.ipOf.get('x/b')!.map((ip, family) => {
        const host = `${ip}/${family === 0 ? 32 : 128}`;
        return { ipBlock: only ? { cidr: host } : { cidr: SUBNETS[NODE.nodeName][family], except: [host] } };
      });
    const egressTo = (only: boolean) => policy('x', 'allow-client-a-via-cidr-egress-rule', { podSelector: onA, policyTypes: ['Egress'], egress: [{ to: blocks(only) }] });
    const s = { ...bare, state: { ...bare.state, policies: [egressTo(false)] } };
    const local = ['y/a', 'y/b', 'z/a', 'z/b'];
    await validateSteps(s.ipOf, [
      { state: s.state, r: local.reduce((r, to) => r.expect('x/a', to, true), s.r().expectAllEgress('x/a', false)) },
      { state: { ...s.state, policies: [egressTo(true)] }, r: s.r().expectAllEgress('x/a', false).expect('x/a', 'x/b', true) },
    ]);
  });

  it('should enforce multiple, stacked policies with overlapping podSelectors (several policies at once)', async () => {
    const only = (port: number) => policy('x', `allow-${port}`, { podSelector: onA, ingress: [{ from: [{ namespaceSelector: nsIs('y') }], ports: [{ port }] }] });
    const s = scenario([only(80), only(81), policy('x', 'deny-egress-b', { podSelector: { matchLabels: { pod: 'b' } }, policyTypes: ['Egress'] })]);
    const r = (p: typeof s) =>
      p.r().expectPeer({ namespace: 'x' }, { namespace: 'x', pod: 'a' }, false).expectPeer({ namespace: 'z' }, { namespace: 'x', pod: 'a' }, false).expectAllEgress('x/b', false);
    await validate(s, r(s), 'TCP', 80);
    await validate(s, r(s), 'TCP', 81);
  });
});

// The changes of upstream's "updated" cases (should enforce updated policy, should stop enforcing policies
// after they are deleted, should deny ingress access to updated pod, should allow ingress access from updated
// namespace) and an address reused by another pod, as one stream on the two nodes: after each change the
// matrix holds, and what each node wrote is only what changed (counted on the simulated HNS) against what
// rewriting every endpoint's list and every set would write.
// Writes per step, this node + the peer (every pod the policies select is x/a or x/b, on this node):
// isolating a pod is 8 rules (Host In and Out, the node-and-self allow per family and direction, a catch-all
// per direction) and leaving isolation removes them; a peer's addresses are one allow rule per family, which a
// change of its members or ports replaces (remove + add) when flattened, while with IP sets a member change is
// one set update per family and a new peer two sets and two rules.
const EXPECTED_WRITES: Record<number, string[]> = {
  12: [0, 8, 2, 4, 0, 8, 8, 4, 10].map((n) => `${n}+0`),
  13: [0, 8, 4, 4, 0, 8, 8, 2, 12].map((n) => `${n}+0`),
};

describe.each([
  [12, 'flattened'],
  [13, 'IP sets'],
])('a stream of changes on HNS %i.0 (%s)', (major) => {
  it('matrices hold after each change, and each change writes only the rules it affects', async () => {
    const nodes = await Promise.all(NODES.map((node) => PolicyNode.start({ node, subnets: SUBNETS[node.nodeName], hnsVersion: { Major: major, Minor: 0 } })));
    const c = e2eCluster(true, ['c']);
    let state: ClusterState = { pods: c.pods, namespaces: c.namespaces, policies: [] };
    let ipOf = c.ipOf;
    const log: string[] = [];
    let ours = 0;
    let rewrite = 0;

    /** Apply a change on both nodes; the writes of each; then check the matrix. */
    const change = async (what: string, next: ClusterState, r: (fresh: Reachability) => Reachability, port = 80) => {
      state = next;
      const writes: Writes[] = [];
      for (const n of nodes) {
        const w = await n.apply(state);
        writes.push(w);
        ours += w.rules + w.sets;
        const t = n.translation(state);
        rewrite += t.endpoints.reduce((k, e) => k + e.rules.length, 0) + t.sets.length;
        // Converged: a second pass sends no request.
        expect(await n.apply(state)).toEqual({ requests: 0, rules: 0, sets: 0 });
      }
      log.push(`${what}: ${writes.map((w) => w.rules + w.sets).join('+')}`);
      const judges = nodes.map((n) => n.judge());
      const fresh = new Reachability([...ipOf.keys()], true);
      for (const family of [0, 1]) expect({ what, family, wrong: r(fresh).wrong(judges, ipOf, 'TCP', port, family) }).toEqual({ what, family, wrong: [] });
    };

    const allowFromY = (port: number) =>
      policy('x', 'allow-from-y', { podSelector: onA, ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'blue' } } }], ports: [{ port }] }] });
    const denyIngressToB = policy('x', 'deny-b', { podSelector: { matchLabels: { pod: 'b' } }, ingress: [] });
    const relabel = (p: Pod, labels: Record<string, string>) => pod(p.namespace, p.name, { ips: [...p.podIPs], node: p.nodeName, labels, uid: p.uid });
    const blueY = state.namespaces.map((n) => (n.name === 'y' ? namespace('y', { team: 'blue' }) : n));
    const toA = (r: Reachability, from: string[]) => from.reduce((m, f) => m.expect(f, 'x/a', true), r.expectAllIngress('x/a', false));

    await change('start: no policy', state, (r) => r);
    await change('x/a allows namespaces labelled team=blue (none yet) on 80', { ...state, policies: [allowFromY(80)] }, (r) => r.expectAllIngress('x/a', false));
    await change('namespace y relabelled team=blue', { ...state, namespaces: blueY }, (r) => toA(r, ['y/a', 'y/b', 'y/c']));
    await change('the policy updated to port 81', { ...state, policies: [allowFromY(81)] }, (r) => toA(r, ['y/a', 'y/b', 'y/c']), 81);
    await change('port 80 is closed by it', state, (r) => r.expectAllIngress('x/a', false));
    await change('a second policy isolates x/b', { ...state, policies: [allowFromY(81), denyIngressToB] }, (r) => toA(r, ['y/a', 'y/b', 'y/c']).expectAllIngress('x/b', false), 81);
    await change(
      "x/b relabelled pod=b2: deny-b selects it no more (upstream's 'should deny ingress access to updated pod', the other way)",
      { ...state, pods: state.pods.map((p) => (p.namespace === 'x' && p.name === 'b' ? relabel(p, { pod: 'b2' }) : p)) },
      (r) => toA(r, ['y/a', 'y/b', 'y/c']),
      81,
    );
    // y/c (on the peer) goes; z/c, a new pod in z, takes its addresses: it is no peer of the policy.
    const yc = state.pods.find((p) => p.namespace === 'y' && p.name === 'c')!;
    const reused = pod('z', 'c2', { ips: [...yc.podIPs], node: yc.nodeName, uid: 'uid-z-c2' });
    const pods = [...state.pods.filter((p) => p !== yc), reused];
    ipOf = new Map([...[...ipOf].filter(([k]) => k !== 'y/c'), ['z/c2', [...yc.podIPs]]]);
    await change('y/c deleted, its addresses reused by z/c2', { ...state, pods }, (r) => toA(r, ['y/a', 'y/b']), 81);
    await change('the policy deleted (should stop enforcing policies after they are deleted)', { ...state, policies: [] }, (r) => r, 81);

    // Nothing of the agent's is left on either node once no policy selects a pod.
    for (const n of nodes) {
      const left = [...(await n.hns.listEndpoints()).flatMap((e) => e.Policies ?? []), ...((await n.hns.getNetworkByName('cbr0'))!.Policies ?? [])];
      expect(left.filter((p) => isAgentId(p.Settings?.['Id']))).toEqual([]);
    }
    expect(log.map((l) => l.slice(l.lastIndexOf(': ') + 2))).toEqual(EXPECTED_WRITES[major]);
    // Rewriting every endpoint's whole list (and every set) on each change, as Calico's endpoint manager does:
    // more, even on six local pods of which two are ever selected.
    expect(ours).toBeLessThan(rewrite);
  });
});

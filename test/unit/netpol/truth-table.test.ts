// The NetworkPolicy core against the upstream e2e truth tables (kubernetes test/e2e/network/netpol/
// network_policy.go: namespaces x, y, z, pods a, b, c, every pair's connectivity expected): each scenario's
// policies go through projection, intent and translation, for HNS 12 (flattened addresses) and 13 (IP
// sets), the rules written through HnsClient to a simulated node's endpoints and sets, and every pair judged by
// the simulated node's evaluator (test/support/netpol-node.ts, src/simulator/acl.ts). The tables are written
// here, from the scenario, not computed.
import { describe, expect, it } from '@jest/globals';
import { connect, E2E_PORTS, e2eCluster, expectReachability, judgesOf, NODE, pod, policy, Reachability } from '../../support/netpol-cluster.js';
import type { NetworkPolicy } from '../../../src/netpol/types.js';

const NS_KEY = 'kubernetes.io/metadata.name';

function scenario(policies: NetworkPolicy[], dualStack = false) {
  const c = e2eCluster(dualStack);
  const state = { pods: c.pods, namespaces: c.namespaces, policies };
  const r = () => new Reachability([...c.ipOf.keys()], true);
  return { state, ipOf: c.ipOf, r };
}

const denyIngress = () => policy('x', 'deny-ingress', { podSelector: {}, ingress: [] });

describe('e2e truth tables: ingress', () => {
  it("should support a 'default-deny-ingress' policy", async () => {
    const s = scenario([denyIngress()]);
    await expectReachability(s.state, s.ipOf, s.r().expectPeer({}, { namespace: 'x' }, false), 'TCP', 80);
    await expectReachability(s.state, s.ipOf, s.r().expectPeer({}, { namespace: 'x' }, false), 'UDP', 81);
  });

  it("should support a 'default-deny-all' policy", async () => {
    const s = scenario([policy('x', 'deny-all', { podSelector: {}, policyTypes: ['Ingress', 'Egress'] })]);
    const r = s.r().expectPeer({}, { namespace: 'x' }, false).expectPeer({ namespace: 'x' }, {}, false);
    await expectReachability(s.state, s.ipOf, r, 'TCP', 80);
  });

  it('should enforce policy to allow traffic from pods within server namespace based on PodSelector', async () => {
    const s = scenario([policy('x', 'x-a-allows-x-b', { podSelector: { matchLabels: { pod: 'a' } }, ingress: [{ from: [{ podSelector: { matchLabels: { pod: 'b' } } }] }] })]);
    await expectReachability(s.state, s.ipOf, s.r().expectAllIngress('x/a', false).expect('x/b', 'x/a', true), 'TCP', 80);
  });

  it('should enforce policy to allow ingress traffic for a target (deny all, then allow all to x/a)', async () => {
    const s = scenario([
      denyIngress(),
      policy('x', 'allow-all-to-a', { podSelector: { matchLabels: { pod: 'a' } }, ingress: [{ from: [{ podSelector: {}, namespaceSelector: {} }] }] }),
    ]);
    const r = s.r().expectAllIngress('x/b', false).expectAllIngress('x/c', false);
    await expectReachability(s.state, s.ipOf, r, 'TCP', 80);
  });

  it('should enforce policy to allow ingress traffic from pods in all namespaces', async () => {
    const s = scenario([policy('x', 'allow-from-another-ns', { podSelector: { matchLabels: { pod: 'a' } }, ingress: [{ from: [{ namespaceSelector: { matchLabels: {} } }] }] })]);
    await expectReachability(s.state, s.ipOf, s.r(), 'TCP', 80);
  });

  it('should enforce policy to allow traffic only from a different namespace, based on NamespaceSelector', async () => {
    const s = scenario([
      policy('x', 'allow-client-a-via-ns-selector', {
        podSelector: { matchLabels: { pod: 'a' } },
        ingress: [{ from: [{ namespaceSelector: { matchLabels: { [NS_KEY]: 'y' } } }] }],
      }),
    ]);
    const r = s.r().expectPeer({ namespace: 'x' }, { namespace: 'x', pod: 'a' }, false).expectPeer({ namespace: 'z' }, { namespace: 'x', pod: 'a' }, false);
    await expectReachability(s.state, s.ipOf, r, 'TCP', 80);
  });

  it('should enforce policy based on PodSelector with MatchExpressions', async () => {
    const s = scenario([
      policy('x', 'x-a-allows-x-b', {
        podSelector: { matchLabels: { pod: 'a' } },
        ingress: [{ from: [{ podSelector: { matchExpressions: [{ key: 'pod', operator: 'In', values: ['b'] }] } }] }],
      }),
    ]);
    await expectReachability(s.state, s.ipOf, s.r().expectAllIngress('x/a', false).expect('x/b', 'x/a', true), 'TCP', 80);
  });

  it('should enforce policy based on PodSelector or NamespaceSelector', async () => {
    const s = scenario([
      policy('x', 'allow-ns-y-match-selector', {
        podSelector: { matchLabels: { pod: 'a' } },
        ingress: [{ from: [{ namespaceSelector: { matchExpressions: [{ key: NS_KEY, operator: 'NotIn', values: ['x'] }] } }, { podSelector: { matchLabels: { pod: 'b' } } }] }],
      }),
    ]);
    await expectReachability(s.state, s.ipOf, s.r().expect('x/c', 'x/a', false), 'TCP', 80);
  });

  it('should enforce policy based on PodSelector and NamespaceSelector (both in one peer)', async () => {
    const s = scenario([
      policy('x', 'allow-ns-y-podselector-and-nsselector', {
        podSelector: { matchLabels: { pod: 'a' } },
        ingress: [{ from: [{ namespaceSelector: { matchExpressions: [{ key: NS_KEY, operator: 'NotIn', values: ['x'] }] }, podSelector: { matchLabels: { pod: 'b' } } }] }],
      }),
    ]);
    const r = s.r().expectAllIngress('x/a', false).expect('y/b', 'x/a', true).expect('z/b', 'x/a', true);
    await expectReachability(s.state, s.ipOf, r, 'TCP', 80);
  });

  it('should enforce policy based on Multiple PodSelectors and NamespaceSelectors', async () => {
    const s = scenario([
      policy('x', 'allow-ns-y-z-pod-b-c', {
        podSelector: { matchLabels: { pod: 'a' } },
        ingress: [
          {
            from: [
              {
                namespaceSelector: { matchExpressions: [{ key: NS_KEY, operator: 'NotIn', values: ['x'] }] },
                podSelector: { matchExpressions: [{ key: 'pod', operator: 'In', values: ['b', 'c'] }] },
              },
            ],
          },
        ],
      }),
    ]);
    const r = s.r().expectPeer({ namespace: 'x' }, { namespace: 'x', pod: 'a' }, false).expect('y/a', 'x/a', false).expect('z/a', 'x/a', false);
    await expectReachability(s.state, s.ipOf, r, 'TCP', 80);
  });

  it('should enforce policy based on Ports (only namespace y, on TCP 81)', async () => {
    const s = scenario([
      policy('x', 'allow-client-a-via-ns-selector', {
        podSelector: { matchLabels: { pod: 'a' } },
        ingress: [{ from: [{ namespaceSelector: { matchLabels: { [NS_KEY]: 'y' } } }], ports: [{ port: 81, protocol: 'TCP' }] }],
      }),
    ]);
    const r81 = s.r().expectPeer({ namespace: 'x' }, { namespace: 'x', pod: 'a' }, false).expectPeer({ namespace: 'z' }, { namespace: 'x', pod: 'a' }, false);
    await expectReachability(s.state, s.ipOf, r81, 'TCP', 81);
    await expectReachability(s.state, s.ipOf, s.r().expectAllIngress('x/a', false), 'TCP', 80);
    await expectReachability(s.state, s.ipOf, s.r().expectAllIngress('x/a', false), 'UDP', 81);
  });

  it('should enforce multiple, stacked policies with overlapping podSelectors', async () => {
    const only81 = policy('x', 'allow-81', {
      podSelector: { matchLabels: { pod: 'a' } },
      ingress: [{ from: [{ namespaceSelector: { matchLabels: { [NS_KEY]: 'y' } } }], ports: [{ port: 81 }] }],
    });
    const only80 = policy('x', 'allow-80', {
      podSelector: { matchLabels: { pod: 'a' } },
      ingress: [{ from: [{ namespaceSelector: { matchLabels: { [NS_KEY]: 'y' } } }], ports: [{ port: 80 }] }],
    });
    const allow = (s: ReturnType<typeof scenario>) =>
      s.r().expectPeer({ namespace: 'x' }, { namespace: 'x', pod: 'a' }, false).expectPeer({ namespace: 'z' }, { namespace: 'x', pod: 'a' }, false);
    const one = scenario([only81]);
    await expectReachability(one.state, one.ipOf, allow(one), 'TCP', 81);
    await expectReachability(one.state, one.ipOf, one.r().expectAllIngress('x/a', false), 'TCP', 80);
    const both = scenario([only81, only80]);
    await expectReachability(both.state, both.ipOf, allow(both), 'TCP', 80);
    await expectReachability(both.state, both.ipOf, allow(both), 'TCP', 81);
  });

  it('should support allow-all policy', async () => {
    const s = scenario([policy('x', 'allow-all', { podSelector: {}, ingress: [{}] })]);
    await expectReachability(s.state, s.ipOf, s.r(), 'TCP', 80);
    await expectReachability(s.state, s.ipOf, s.r(), 'UDP', 81);
  });

  it('should allow ingress access on one named port', async () => {
    const s = scenario([policy('x', 'allow-all', { podSelector: {}, ingress: [{ ports: [{ port: 'serve-81-tcp' }] }] })]);
    await expectReachability(s.state, s.ipOf, s.r(), 'TCP', 81);
    await expectReachability(s.state, s.ipOf, s.r().expectPeer({}, { namespace: 'x' }, false), 'TCP', 80);
    // The name is TCP's: UDP 81 (serve-81-udp) is not allowed by it.
    await expectReachability(s.state, s.ipOf, s.r().expectPeer({}, { namespace: 'x' }, false), 'UDP', 81);
  });

  it('should allow ingress access from namespace on one named port', async () => {
    const s = scenario([
      policy('x', 'allow-client-a-via-ns-selector-80', {
        podSelector: { matchLabels: { pod: 'a' } },
        ingress: [{ from: [{ namespaceSelector: { matchLabels: { [NS_KEY]: 'y' } } }], ports: [{ port: 'serve-80-tcp', protocol: 'TCP' }] }],
      }),
    ]);
    const r = s.r().expectPeer({ namespace: 'x' }, { namespace: 'x', pod: 'a' }, false).expectPeer({ namespace: 'z' }, { namespace: 'x', pod: 'a' }, false);
    await expectReachability(s.state, s.ipOf, r, 'TCP', 80);
    await expectReachability(s.state, s.ipOf, s.r().expectAllIngress('x/a', false), 'TCP', 81);
  });

  it('should support a port range (endPort) and leave other protocols denied', async () => {
    const s = scenario([policy('x', 'range', { podSelector: { matchLabels: { pod: 'a' } }, ingress: [{ ports: [{ port: 80, endPort: 81, protocol: 'TCP' }] }] })]);
    await expectReachability(s.state, s.ipOf, s.r(), 'TCP', 80);
    await expectReachability(s.state, s.ipOf, s.r(), 'TCP', 81);
    await expectReachability(s.state, s.ipOf, s.r().expectAllIngress('x/a', false), 'UDP', 80);
  });

  it('should allow a protocol on every port when a port entry names only the protocol', async () => {
    const s = scenario([policy('x', 'udp', { podSelector: { matchLabels: { pod: 'a' } }, ingress: [{ ports: [{ protocol: 'UDP' }] }] })]);
    await expectReachability(s.state, s.ipOf, s.r(), 'UDP', 80);
    await expectReachability(s.state, s.ipOf, s.r(), 'UDP', 81);
    await expectReachability(s.state, s.ipOf, s.r().expectAllIngress('x/a', false), 'TCP', 80);
  });
});

describe('e2e truth tables: ipBlock', () => {
  // 10.244.1.5 is y/b (x/a .. x/c are .1-.3, y/a .. y/c .4-.6, z/a .. z/c .7-.9).
  it('should allow ingress from a CIDR and deny its except', async () => {
    const s = scenario([
      policy('x', 'cidr', { podSelector: { matchLabels: { pod: 'a' } }, ingress: [{ from: [{ ipBlock: { cidr: '10.244.1.0/24', except: ['10.244.1.5/32'] } }] }] }),
    ]);
    await expectReachability(s.state, s.ipOf, s.r().expect('y/b', 'x/a', false), 'TCP', 80);
  });

  it('should enforce egress to a CIDR with an except', async () => {
    const s = scenario([
      policy('x', 'egress-cidr', {
        podSelector: { matchLabels: { pod: 'a' } },
        policyTypes: ['Egress'],
        egress: [{ to: [{ ipBlock: { cidr: '10.244.1.0/28', except: ['10.244.1.4/30'] } }] }],
      }),
    ]);
    // .4-.7 are y/a, y/b, y/c, z/a.
    const r = s.r().expect('x/a', 'y/a', false).expect('x/a', 'y/b', false).expect('x/a', 'y/c', false).expect('x/a', 'z/a', false);
    await expectReachability(s.state, s.ipOf, r, 'TCP', 80);
  });

  it('a CIDR of one family allows nothing of the other (dual-stack)', async () => {
    const s = scenario(
      [
        policy('x', 'v6-only', {
          podSelector: { matchLabels: { pod: 'a' } },
          ingress: [{ from: [{ ipBlock: { cidr: 'fd00:10:244:1::/64', except: ['fd00:10:244:1::5/128'] } }] }],
        }),
      ],
      true,
    );
    const v6 = s.r().expect('y/b', 'x/a', false);
    const v4 = s.r().expectAllIngress('x/a', false);
    for (const major of [12, 13]) {
      const judges = await judgesOf(s.state, major);
      expect(v4.wrong(judges, s.ipOf, 'TCP', 80, 0)).toEqual([]);
      expect(v6.wrong(judges, s.ipOf, 'TCP', 80, 1)).toEqual([]);
    }
  });
});

describe('e2e truth tables: egress', () => {
  it('should allow egress access on one named port', async () => {
    const s = scenario([policy('x', 'allow-egress', { podSelector: {}, policyTypes: ['Egress'], egress: [{ ports: [{ port: 'serve-80-tcp' }] }] })]);
    await expectReachability(s.state, s.ipOf, s.r(), 'TCP', 80);
    await expectReachability(s.state, s.ipOf, s.r().expectPeer({ namespace: 'x' }, {}, false), 'TCP', 81);
  });

  it('a named egress port is the remote pod\u2019s number: pods giving the name different numbers each get theirs', async () => {
    const c = e2eCluster();
    // y/a serves "web" on 81, every other pod on 80.
    const pods = c.pods.map((p) =>
      p.namespace === 'y' && p.name === 'a'
        ? pod('y', 'a', { ips: c.ipOf.get('y/a'), ports: [{ name: 'web', containerPort: 81 }] })
        : pod(p.namespace, p.name, { ips: [...p.podIPs], ports: [...E2E_PORTS, { name: 'web', containerPort: 80 }] }),
    );
    const state = {
      pods,
      namespaces: c.namespaces,
      policies: [policy('x', 'web', { podSelector: { matchLabels: { pod: 'a' } }, policyTypes: ['Egress'], egress: [{ ports: [{ port: 'web' }] }] })],
    };
    const r = () => new Reachability([...c.ipOf.keys()], true);
    await expectReachability(state, c.ipOf, r().expect('x/a', 'y/a', false), 'TCP', 80);
    await expectReachability(state, c.ipOf, r().expectAllEgress('x/a', false).expect('x/a', 'y/a', true), 'TCP', 81);
  });

  it('should support denying of egress traffic on the client side (even if the server explicitly allows this traffic)', async () => {
    const s = scenario([
      policy('x', 'deny-egress-a', { podSelector: { matchLabels: { pod: 'a' } }, policyTypes: ['Egress'] }),
      policy('y', 'allow-all-to-y', { podSelector: {}, ingress: [{ from: [{ namespaceSelector: {} }] }] }),
    ]);
    await expectReachability(s.state, s.ipOf, s.r().expectAllEgress('x/a', false), 'TCP', 80);
  });

  it('should enforce egress policy allowing traffic to a server in a different namespace based on PodSelector and NamespaceSelector', async () => {
    const s = scenario([
      policy('x', 'allow-to-ns-y-pod-a', {
        podSelector: { matchLabels: { pod: 'a' } },
        policyTypes: ['Egress'],
        egress: [{ to: [{ namespaceSelector: { matchLabels: { [NS_KEY]: 'y' } }, podSelector: { matchLabels: { pod: 'a' } } }] }],
      }),
    ]);
    await expectReachability(s.state, s.ipOf, s.r().expectAllEgress('x/a', false).expect('x/a', 'y/a', true), 'TCP', 80);
  });

  it('ingress and egress together: both ends must allow', async () => {
    const s = scenario([
      policy('x', 'a-talks-to-y-only', {
        podSelector: { matchLabels: { pod: 'a' } },
        policyTypes: ['Egress'],
        egress: [{ to: [{ namespaceSelector: { matchLabels: { [NS_KEY]: 'y' } } }] }],
      }),
      policy('y', 'y-hears-b-only', { podSelector: {}, ingress: [{ from: [{ namespaceSelector: {}, podSelector: { matchLabels: { pod: 'a' } } }] }] }),
    ]);
    const r = s
      .r()
      .expectAllEgress('x/a', false)
      .expectPeer({}, { namespace: 'y' }, false)
      .expectPeer({ pod: 'a' }, { namespace: 'y' }, true)
      .expect('x/a', 'y/a', true)
      .expect('x/a', 'y/b', true)
      .expect('x/a', 'y/c', true);
    await expectReachability(s.state, s.ipOf, r, 'TCP', 80);
  });
});

describe('e2e truth tables: dual-stack', () => {
  it('a selector peer allows both of a dual-stack pod\u2019s addresses', async () => {
    const s = scenario(
      [policy('x', 'x-a-allows-x-b', { podSelector: { matchLabels: { pod: 'a' } }, ingress: [{ from: [{ podSelector: { matchLabels: { pod: 'b' } } }] }] })],
      true,
    );
    await expectReachability(s.state, s.ipOf, s.r().expectAllIngress('x/a', false).expect('x/b', 'x/a', true), 'TCP', 80);
  });
});

describe('traffic the policies never stop', () => {
  it('the node reaches an isolated pod and an isolated pod reaches its node (kubelet probes), in both families', async () => {
    const c = e2eCluster(true);
    const state = { pods: c.pods, namespaces: c.namespaces, policies: [policy('x', 'deny-all', { podSelector: {}, policyTypes: ['Ingress', 'Egress'] })] };
    for (const major of [12, 13]) {
      const judges = await judgesOf(state, major);
      for (const [family, nodeIP] of NODE.nodeIPs.entries()) {
        const xa = c.ipOf.get('x/a')![family];
        expect(connect(judges, nodeIP, xa, 'TCP', 8080)).toBe(true);
        expect(connect(judges, xa, nodeIP, 'UDP', 53)).toBe(true);
        expect(connect(judges, c.ipOf.get('y/a')![family], xa, 'TCP', 8080)).toBe(false);
        // A pod cannot block itself (a Service hairpin comes back with its own address).
        expect(connect(judges, xa, xa, 'TCP', 80)).toBe(true);
      }
    }
  });
});

// NetworkPolicy semantics for one node (src/netpol/intent.ts), table-driven: who is isolated in which
// direction (policyTypes and their default), what each peer kind resolves to, named ports on either side,
// the pods that are never selected or never peers, and refused policies.
import { describe, expect, it } from '@jest/globals';
import { computeIntent, policyTypesOf } from '../../../src/netpol/intent.js';
import type { ClusterState, PodIntent } from '../../../src/netpol/intent.js';
import { hnsRefusal } from '../../../src/netpol/translate.js';
import type { Pod } from '../../../src/netpol/types.js';
import { namespace, NODE, OTHER_NODE, pod, policy } from '../../support/netpol-cluster.js';

const nsX = namespace('x', { team: 'a' });
const nsY = namespace('y', { team: 'b' });
const local = pod('x', 'a', { ips: ['10.244.1.1'], labels: { app: 'web' } });

function intentOf(state: Partial<ClusterState>, of: Pod = local): PodIntent {
  const got = computeIntent({ pods: [local], namespaces: [nsX, nsY], policies: [], ...state }, NODE).pods.find((p) => p.pod.uid === of.uid);
  if (got === undefined) throw new Error(`${of.namespace}/${of.name} has no intent`);
  return got;
}

/** The allows as `peer -> ports` text, sorted: what a table can state. */
const allowsOf = (d: PodIntent['ingress']): string[] =>
  d.allows
    .map(
      (a) =>
        `${a.peers === undefined ? '*' : a.peers.cidrs.join(' ')} -> ${a.ports === undefined ? '*' : a.ports.map((p) => `${p.protocol}${p.from === undefined ? '' : `/${p.from}${p.to === p.from ? '' : `-${p.to}`}`}`).join(' ')}`,
    )
    .sort();

describe('isolation', () => {
  it.each([
    ['no policyTypes, no rules: Ingress', {}, true, false],
    ['no policyTypes, ingress rules: Ingress', { ingress: [{}] }, true, false],
    ['no policyTypes, egress rules: Ingress and Egress', { egress: [{}] }, true, true],
    ['no policyTypes, an empty egress list: Ingress', { egress: [] }, true, false],
    ['policyTypes Egress only', { policyTypes: ['Egress'] }, false, true],
    ['policyTypes both', { policyTypes: ['Ingress', 'Egress'] }, true, true],
  ])('%s', (_what, spec, ingress, egress) => {
    const i = intentOf({ policies: [policy('x', 'p', { podSelector: {}, ...spec })] });
    expect([i.ingress.isolated, i.egress.isolated]).toEqual([ingress, egress]);
    expect(policyTypesOf(policy('x', 'p', { podSelector: {}, ...spec }))).toEqual([...(ingress ? ['Ingress'] : []), ...(egress ? ['Egress'] : [])]);
  });

  it.each([
    ['a policy of another namespace', policy('y', 'p', { podSelector: {} })],
    ['a podSelector that does not match', policy('x', 'p', { podSelector: { matchLabels: { app: 'db' } } })],
  ])('is not isolated by %s', (_what, p) => {
    const i = intentOf({ policies: [p] });
    expect([i.ingress.isolated, i.egress.isolated, i.ingress.allows]).toEqual([false, false, []]);
  });

  it('policies add up: the union of their rules', () => {
    const i = intentOf({
      policies: [
        policy('x', 'tcp', { podSelector: {}, ingress: [{ ports: [{ port: 80 }] }] }),
        policy('x', 'udp', { podSelector: { matchLabels: { app: 'web' } }, ingress: [{ ports: [{ protocol: 'UDP', port: 53 }] }] }),
        policy('x', 'deny', { podSelector: {} }),
      ],
    });
    expect(allowsOf(i.ingress)).toEqual(['* -> TCP/80', '* -> UDP/53']);
  });
});

describe('which pods are enforced', () => {
  it('only live pod-network pods of this node, with an address', () => {
    const pods = [
      local,
      pod('x', 'remote', { ips: ['10.244.2.1'], node: OTHER_NODE }),
      pod('x', 'host', { ips: ['192.168.0.10'], hostNetwork: true }),
      pod('x', 'pending', { ips: [], phase: 'Pending' }),
      pod('x', 'starting', { ips: ['10.244.1.9'], phase: 'Pending' }),
      pod('x', 'done', { ips: ['10.244.1.8'], phase: 'Succeeded' }),
      pod('x', 'failed', { ips: ['10.244.1.7'], phase: 'Failed' }),
    ];
    const got = computeIntent({ pods, namespaces: [nsX], policies: [policy('x', 'deny', { podSelector: {} })] }, NODE).pods.map((p) => p.pod.name);
    expect(got).toEqual(['a', 'starting']);
  });

  it('always allows the node and the pod itself, in the pod\u2019s families only', () => {
    expect(intentOf({}).always).toEqual(['10.244.1.1/32', '192.168.0.10/32']);
    const dual = pod('x', 'd', { ips: ['10.244.1.2', 'fd00::2'] });
    expect(intentOf({ pods: [dual] }, dual).always).toEqual(['10.244.1.2/32', '192.168.0.10/32', 'fd00:192:168::10/128', 'fd00::2/128']);
  });
});

describe('peers', () => {
  const peers = [
    pod('x', 'b', { ips: ['10.244.1.2'], labels: { role: 'client' } }),
    pod('x', 'c', { ips: ['10.244.1.3'], labels: { role: 'server' } }),
    pod('y', 'b', { ips: ['10.244.2.2', 'fd00::22'], labels: { role: 'client' }, node: OTHER_NODE }),
    pod('z', 'b', { ips: ['10.244.3.2'], labels: { role: 'client' }, node: OTHER_NODE }),
    pod('y', 'host', { ips: ['192.168.0.20'], labels: { role: 'client' }, hostNetwork: true, node: OTHER_NODE }),
    pod('y', 'done', { ips: ['10.244.2.9'], labels: { role: 'client' }, phase: 'Succeeded', node: OTHER_NODE }),
  ];
  const from = (peer: unknown) => intentOf({ pods: [local, ...peers], policies: [policy('x', 'p', { podSelector: {}, ingress: [{ from: [peer] }] })] });

  it.each([
    ['podSelector: pods of the policy\u2019s namespace', { podSelector: { matchLabels: { role: 'client' } } }, ['10.244.1.2/32 -> *']],
    ['podSelector {}: every pod of the policy\u2019s namespace (itself included)', { podSelector: {} }, ['10.244.1.1/32 10.244.1.2/32 10.244.1.3/32 -> *']],
    ['namespaceSelector: every pod of the selected namespaces', { namespaceSelector: { matchLabels: { team: 'b' } } }, ['10.244.2.2/32 -> *']],
    ['namespaceSelector {}: every pod of every known namespace (z is not known)', { namespaceSelector: {} }, ['10.244.1.1/32 10.244.1.2/32 10.244.1.3/32 10.244.2.2/32 -> *']],
    [
      'both in one peer: pods matching podSelector in the selected namespaces',
      { namespaceSelector: {}, podSelector: { matchLabels: { role: 'client' } } },
      ['10.244.1.2/32 10.244.2.2/32 -> *'],
    ],
    ['ipBlock: the block less its excepts', { ipBlock: { cidr: '10.244.0.0/22', except: ['10.244.0.0/23', '10.244.3.0/24'] } }, ['10.244.2.0/24 -> *']],
  ])('%s', (_what, peer, expected) => {
    expect(allowsOf(from(peer).ingress)).toEqual(expected);
  });

  it('a selector peer that selects no pod allows nothing (and never everything)', () => {
    expect(from({ podSelector: { matchLabels: { role: 'nobody' } } }).ingress).toEqual({ isolated: true, allows: [] });
  });

  it('an ipBlock of the other family allows nothing to a single-stack pod', () => {
    expect(from({ ipBlock: { cidr: 'fd00::/64' } }).ingress).toEqual({ isolated: true, allows: [] });
  });

  it('a dual-stack pod gets each family of a selector peer as its own set', () => {
    const dual = pod('x', 'd', { ips: ['10.244.1.4', 'fd00::4'] });
    const i = intentOf(
      { pods: [dual, ...peers], policies: [policy('x', 'p', { podSelector: {}, ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'b' } } }] }] })] },
      dual,
    );
    expect(i.ingress.allows.map((a) => [a.peers?.family, a.peers?.cidrs])).toEqual([
      ['ipv4', ['10.244.2.2/32']],
      ['ipv6', ['fd00::22/128']],
    ]);
  });

  it('no from: every source', () => {
    expect(allowsOf(intentOf({ policies: [policy('x', 'p', { podSelector: {}, ingress: [{ ports: [{ port: 80 }] }] })] }).ingress)).toEqual(['* -> TCP/80']);
  });

  it('an address a finished pod held is the new pod\u2019s alone', () => {
    // y/old finished and its address went to y/new, which is not a client.
    const reused = [
      pod('y', 'old', { ips: ['10.244.2.5'], labels: { role: 'client' }, phase: 'Failed', node: OTHER_NODE }),
      pod('y', 'new', { ips: ['10.244.2.5'], labels: { role: 'other' }, node: OTHER_NODE }),
    ];
    const i = intentOf({
      pods: [local, ...reused],
      policies: [policy('x', 'p', { podSelector: {}, ingress: [{ from: [{ namespaceSelector: {}, podSelector: { matchLabels: { role: 'client' } } }] }] })],
    });
    expect(i.ingress.allows).toEqual([]);
  });
});

describe('ports', () => {
  const named = pod('x', 'a', {
    ips: ['10.244.1.1'],
    ports: [
      { name: 'http', containerPort: 8080 },
      { name: 'dns', containerPort: 5353, protocol: 'UDP' },
    ],
  });
  const ingress = (ports: unknown[]) => allowsOf(intentOf({ pods: [named], policies: [policy('x', 'p', { podSelector: {}, ingress: [{ ports }] })] }, named).ingress);

  it.each([
    ['no protocol: TCP', [{ port: 80 }], ['* -> TCP/80']],
    ['a protocol without port: all its ports', [{ protocol: 'UDP' }], ['* -> UDP']],
    ['endPort: a range', [{ port: 32000, endPort: 32768 }], ['* -> TCP/32000-32768']],
    ['a named port: the local pod\u2019s number', [{ port: 'http' }], ['* -> TCP/8080']],
    ['a named port of another protocol than the pod\u2019s: nothing', [{ port: 'http', protocol: 'UDP' }], []],
    ['a name the pod lacks: nothing (not every port)', [{ port: 'metrics' }], []],
    ['a name it lacks beside one it has', [{ port: 'metrics' }, { port: 'dns', protocol: 'UDP' }], ['* -> UDP/5353']],
  ])('ingress, %s', (_what, ports, expected) => {
    expect(ingress(ports)).toEqual(expected);
  });

  it('egress, a named port is each remote pod\u2019s number: one set per number', () => {
    const remotes = [
      pod('y', 'a', { ips: ['10.244.2.1'], ports: [{ name: 'http', containerPort: 80 }], node: OTHER_NODE }),
      pod('y', 'b', { ips: ['10.244.2.2'], ports: [{ name: 'http', containerPort: 8080 }], node: OTHER_NODE }),
      pod('y', 'c', { ips: ['10.244.2.3'], ports: [{ name: 'http', containerPort: 80 }], node: OTHER_NODE }),
      pod('y', 'd', { ips: ['10.244.2.4'], ports: [], node: OTHER_NODE }),
    ];
    const egress = (rule: unknown) =>
      allowsOf(intentOf({ pods: [local, ...remotes], policies: [policy('x', 'p', { podSelector: {}, policyTypes: ['Egress'], egress: [rule] })] }).egress);
    expect(egress({ to: [{ namespaceSelector: { matchLabels: { team: 'b' } } }], ports: [{ port: 'http' }, { port: 9000 }] })).toEqual([
      '10.244.2.1/32 10.244.2.2/32 10.244.2.3/32 10.244.2.4/32 -> TCP/9000',
      '10.244.2.1/32 10.244.2.3/32 -> TCP/80',
      '10.244.2.2/32 -> TCP/8080',
    ]);
    // No peers: every pod of the cluster that names the port; an ipBlock: the pods inside it.
    expect(egress({ ports: [{ port: 'http' }] })).toEqual(['10.244.2.1/32 10.244.2.3/32 -> TCP/80', '10.244.2.2/32 -> TCP/8080']);
    expect(egress({ to: [{ ipBlock: { cidr: '10.244.2.0/24', except: ['10.244.2.3/32'] } }], ports: [{ port: 'http' }] })).toEqual([
      '10.244.2.1/32 -> TCP/80',
      '10.244.2.2/32 -> TCP/8080',
    ]);
  });

  it('egress, a named port on an ipBlock: only the addresses inside the block (found by the property test)', () => {
    // A dual-stack pod inside an IPv6 block: its IPv4 address is not in the block, so not allowed.
    const dual = pod('x', 'd', { ips: ['10.244.1.4', 'fd00::4'] });
    const remote = pod('y', 'r', { ips: ['10.244.2.1', 'fd00::21'], ports: [{ name: 'http', containerPort: 80 }], node: OTHER_NODE });
    const p = policy('x', 'p', { podSelector: {}, policyTypes: ['Egress'], egress: [{ to: [{ ipBlock: { cidr: 'fd00::/64' } }], ports: [{ port: 'http' }] }] });
    expect(allowsOf(intentOf({ pods: [dual, remote], policies: [p] }, dual).egress)).toEqual(['fd00::21/128 -> TCP/80']);
  });
});

describe('refused policies', () => {
  it('an SCTP port: refused with a reason; the policy still isolates and allows nothing', () => {
    const p = policy('x', 'sctp', { podSelector: {}, ingress: [{ ports: [{ protocol: 'SCTP', port: 9 }, { port: 80 }] }] });
    const intent = computeIntent({ pods: [local], namespaces: [nsX], policies: [p, policy('x', 'ok', { podSelector: {}, ingress: [{ ports: [{ port: 443 }] }] })] }, NODE, {
      unsupported: hnsRefusal,
    });
    expect(intent.refusals).toEqual([{ namespace: 'x', name: 'sctp', uid: 'uid-np-x-sctp', reason: 'Unsupported', message: expect.stringContaining('SCTP') }]);
    expect(allowsOf(intent.pods[0].ingress)).toEqual(['* -> TCP/443']);
    expect(intent.pods[0].ingress.isolated).toBe(true);
  });

  it('rules the projection could not read: refused as InvalidRules, isolating', () => {
    const p = policy('x', 'bad', { podSelector: {}, policyTypes: ['Egress'], egress: [{ ports: [{ port: 70000 }] }] });
    const intent = computeIntent({ pods: [local], namespaces: [nsX], policies: [p] }, NODE, { unsupported: hnsRefusal });
    expect(intent.refusals.map((r) => [r.name, r.reason])).toEqual([['bad', 'InvalidRules']]);
    expect([intent.pods[0].ingress.isolated, intent.pods[0].egress]).toEqual([false, { isolated: true, allows: [] }]);
  });
});

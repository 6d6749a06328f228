// Translation of pod intents to HNS endpoint ACL rules and IP sets (src/netpol/translate.ts): the rule shapes
// Calico (HNS < 13.0) and Azure NPM (HNS >= 13.0, SetPolicy) write, Ids the agent can find and that change
// only with what they say, precedence, and what HNS cannot say.
import { describe, expect, it } from '@jest/globals';
import { computeIntent } from '../../../src/netpol/intent.js';
import type { ClusterState } from '../../../src/netpol/intent.js';
import { AGENT_ID_PREFIX, ENTRIES_PER_RULE, hnsRefusal, PRIORITY, translate } from '../../../src/netpol/translate.js';
import type { Translation } from '../../../src/netpol/translate.js';
import { connect, judgesOf, namespace, NODE, OTHER_NODE, pod, policy, translateCluster } from '../../support/netpol-cluster.js';

const nsX = namespace('x');
const a = pod('x', 'a', { ips: ['10.244.1.1'] });
const b = pod('x', 'b', { ips: ['10.244.2.1'], node: OTHER_NODE });

const rulesOf = (t: Translation, name = 'a') => t.endpoints.find((e) => e.name === name)!.rules;
const withoutIds = <T extends { Id?: string }>(rules: T[]) => rules.map(({ Id: _id, ...r }) => r);

describe('HNS version gate', () => {
  it.each([
    [12, 9, false],
    [13, 0, true],
    [13, 1, true],
    [15, 0, true],
  ])('IP sets on HNS %i.%i: %s (hcsshim SetPolicyVersion, 13.0 and later)', (Major, Minor, expected) => {
    const state = { pods: [a, b], namespaces: [nsX], policies: [policy('x', 'p', { podSelector: {}, ingress: [{ from: [{ podSelector: {} }] }] })] };
    const t = translate(computeIntent(state, NODE), { hnsVersion: { Major, Minor } });
    expect(t.sets.length > 0).toBe(expected);
  });
});

describe('rules of one endpoint', () => {
  const state = (policies: ClusterState['policies']): ClusterState => ({ pods: [a, b], namespaces: [nsX], policies });

  it('a pod no policy selects has no rules at all', () => {
    expect(translateCluster(state([]), 13).endpoints).toEqual([{ namespace: 'x', name: 'a', uid: 'uid-x-a', podIPs: ['10.244.1.1'], rules: [] }]);
  });

  it('default deny ingress: host-layer allows, node and own traffic allowed, Block for In, Allow for Out, each at its own priority', () => {
    expect(withoutIds(rulesOf(translateCluster(state([policy('x', 'deny', { podSelector: {} })]), 12)))).toEqual([
      { Action: 'Allow', Direction: 'In', RuleType: 'Host' },
      { Action: 'Allow', Direction: 'In', RuleType: 'Switch', Priority: PRIORITY.node, RemoteAddresses: '10.244.1.1/32,192.168.0.10/32' },
      { Action: 'Block', Direction: 'In', RuleType: 'Switch', Priority: PRIORITY.catchAll },
      { Action: 'Allow', Direction: 'Out', RuleType: 'Host' },
      { Action: 'Allow', Direction: 'Out', RuleType: 'Switch', Priority: PRIORITY.node, RemoteAddresses: '10.244.1.1/32,192.168.0.10/32' },
      { Action: 'Allow', Direction: 'Out', RuleType: 'Switch', Priority: PRIORITY.catchAll },
    ]);
  });

  it('HNS < 13.0: the peers written out in RemoteAddresses, ports as Calico writes them (ranges "a-b", comma-joined, merged)', () => {
    const p = policy('x', 'p', {
      podSelector: {},
      ingress: [
        {
          from: [{ podSelector: { matchLabels: { pod: 'b' } } }],
          ports: [{ port: 80 }, { port: 8080, endPort: 8090 }, { port: 8085, endPort: 8095 }, { protocol: 'UDP', port: 53 }],
        },
      ],
    });
    const allows = withoutIds(rulesOf(translateCluster(state([p]), 12))).filter((r) => r.Priority === PRIORITY.allow);
    expect(allows.sort((x, y) => Number(x.Protocols) - Number(y.Protocols))).toEqual([
      { Action: 'Allow', Direction: 'In', RuleType: 'Switch', Priority: PRIORITY.allow, RemoteAddresses: '10.244.2.1/32', Protocols: '6', LocalPorts: '80,8080-8095' },
      { Action: 'Allow', Direction: 'In', RuleType: 'Switch', Priority: PRIORITY.allow, RemoteAddresses: '10.244.2.1/32', Protocols: '17', LocalPorts: '53' },
    ]);
  });

  it('HNS >= 13.0: the peers in an IP set, named by its Id in LocalAddresses for In (NPM: source sets) and RemoteAddresses for Out', () => {
    const p = policy('x', 'p', {
      podSelector: {},
      policyTypes: ['Ingress', 'Egress'],
      ingress: [{ from: [{ podSelector: { matchLabels: { pod: 'b' } } }], ports: [{ port: 80 }] }],
      egress: [{ to: [{ podSelector: { matchLabels: { pod: 'b' } } }], ports: [{ port: 443 }] }],
    });
    const t = translateCluster(state([p]), 13);
    expect(t.sets).toHaveLength(1);
    const [set] = t.sets;
    expect(set).toEqual({ Id: set.Id, Name: set.Id, PolicyType: 'IPSET', Values: '10.244.2.1/32' });
    expect(set.Id.startsWith(`${AGENT_ID_PREFIX}set-`)).toBe(true);
    expect(withoutIds(rulesOf(t)).filter((r) => r.Priority === PRIORITY.allow)).toEqual([
      { Action: 'Allow', Direction: 'In', RuleType: 'Switch', Priority: PRIORITY.allow, LocalAddresses: set.Id, Protocols: '6', LocalPorts: '80' },
      { Action: 'Allow', Direction: 'Out', RuleType: 'Switch', Priority: PRIORITY.allow, RemoteAddresses: set.Id, Protocols: '6', RemotePorts: '443' },
    ]);
  });

  it('an IP set member 0.0.0.0/0 is written as its two halves (NPM ipBlockIPSet)', () => {
    const t = translateCluster(state([policy('x', 'all', { podSelector: {}, ingress: [{ from: [{ ipBlock: { cidr: '0.0.0.0/0' } }] }] })]), 13);
    expect(t.sets.map((s) => s.Values)).toEqual(['0.0.0.0/1,128.0.0.0/1']);
  });

  it('a rule without ports allows every protocol: no Protocols field', () => {
    const rules = rulesOf(translateCluster(state([policy('x', 'p', { podSelector: {}, ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/8' } }] }] })]), 12));
    expect(withoutIds(rules).filter((r) => r.Priority === PRIORITY.allow)).toEqual([
      { Action: 'Allow', Direction: 'In', RuleType: 'Switch', Priority: PRIORITY.allow, RemoteAddresses: '10.0.0.0/8' },
    ]);
  });

  it('one peer allowed by several rules and policies is one rule per protocol, the ports merged; a rule without ports wins', () => {
    const peer = { from: [{ podSelector: { matchLabels: { pod: 'b' } } }] };
    const p1 = policy('x', 'p1', {
      podSelector: {},
      ingress: [
        { ...peer, ports: [{ port: 80 }] },
        { ...peer, ports: [{ port: 81 }] },
      ],
    });
    const p2 = policy('x', 'p2', { podSelector: {}, ingress: [{ ...peer, ports: [{ port: 82 }] }] });
    const allows = (ps: ClusterState['policies']) => withoutIds(rulesOf(translateCluster(state(ps), 12))).filter((r) => r.Priority === PRIORITY.allow);
    expect(allows([p1, p2]).map((r) => r.LocalPorts)).toEqual(['80-82']);
    expect(allows([p1, policy('x', 'p3', { podSelector: {}, ingress: [peer] })])).toEqual([
      { Action: 'Allow', Direction: 'In', RuleType: 'Switch', Priority: PRIORITY.allow, RemoteAddresses: '10.244.2.1/32' },
    ]);
  });

  it(`more than ${ENTRIES_PER_RULE} addresses: split into rules of at most ${ENTRIES_PER_RULE} (Calico ipPortsPerRule)`, () => {
    const many = Array.from({ length: ENTRIES_PER_RULE + 10 }, (_, i) =>
      pod('x', `p${i}`, { ips: [`10.${100 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`], node: OTHER_NODE, labels: { role: 'c' } }),
    );
    const t = translate(
      computeIntent(
        {
          pods: [a, ...many],
          namespaces: [nsX],
          policies: [policy('x', 'p', { podSelector: { matchLabels: { pod: 'a' } }, ingress: [{ from: [{ podSelector: { matchLabels: { role: 'c' } } }] }] })],
        },
        NODE,
      ),
      {
        hnsVersion: { Major: 12, Minor: 0 },
      },
    );
    const allows = rulesOf(t).filter((r) => r.Priority === PRIORITY.allow);
    expect(allows.map((r) => r.RemoteAddresses!.split(',').length).sort((x, y) => x - y)).toEqual([10, ENTRIES_PER_RULE]);
  });

  it('dual-stack: one rule per family; the catch-all covers both', () => {
    const d = pod('x', 'a', { ips: ['10.244.1.1', 'fd00::1'] });
    const bd = pod('x', 'b', { ips: ['10.244.2.1', 'fd00::21'], node: OTHER_NODE });
    const t = translateCluster(
      { pods: [d, bd], namespaces: [nsX], policies: [policy('x', 'p', { podSelector: {}, ingress: [{ from: [{ podSelector: { matchLabels: { pod: 'b' } } }] }] })] },
      12,
    );
    expect(
      rulesOf(t)
        .filter((r) => r.Priority === PRIORITY.allow)
        .map((r) => r.RemoteAddresses),
    ).toEqual(expect.arrayContaining(['10.244.2.1/32', 'fd00::21/128']));
  });
});

describe('Ids', () => {
  const p = policy('x', 'p', { podSelector: {}, ingress: [{ from: [{ podSelector: { matchLabels: { pod: 'b' } } }], ports: [{ port: 80 }] }] });
  const st = (policies: ClusterState['policies'], pods = [a, b]): ClusterState => ({ pods, namespaces: [nsX], policies });

  it('every rule and set Id carries the agent\u2019s prefix, is unique on its endpoint, and the same input gives the same Ids', () => {
    for (const major of [12, 13]) {
      const t1 = translateCluster(st([p]), major);
      const t2 = translateCluster(st([p]), major);
      expect(t2).toEqual(t1);
      const ids = rulesOf(t1).map((r) => r.Id!);
      expect(new Set(ids).size).toBe(ids.length);
      expect([...ids, ...t1.sets.map((s) => s.Id)].every((id) => id.startsWith(AGENT_ID_PREFIX))).toBe(true);
    }
  });

  it('with IP sets, a peer\u2019s members changing changes the set, not the rules', () => {
    const b2 = pod('x', 'b2', { ips: ['10.244.2.2'], node: OTHER_NODE, labels: { pod: 'b' } });
    const before = translateCluster(st([p]), 13);
    const after = translateCluster(st([p], [a, b, b2]), 13);
    expect(rulesOf(after)).toEqual(rulesOf(before));
    expect(after.sets.map((s) => [s.Id, s.Values])).toEqual([[before.sets[0].Id, '10.244.2.1/32,10.244.2.2/32']]);
  });

  it('a changed policy changes only the rules it makes', () => {
    const other = policy('x', 'other', { podSelector: {}, ingress: [{ from: [{ ipBlock: { cidr: '10.9.0.0/16' } }] }] });
    const before = new Set(rulesOf(translateCluster(st([p, other]), 12)).map((r) => r.Id));
    const changed = policy('x', 'other', { podSelector: {}, ingress: [{ from: [{ ipBlock: { cidr: '10.8.0.0/16' } }] }] });
    const after = new Set(rulesOf(translateCluster(st([p, changed]), 12)).map((r) => r.Id));
    expect([...before].filter((id) => !after.has(id))).toHaveLength(1);
    expect([...after].filter((id) => !before.has(id))).toHaveLength(1);
  });
});

describe('what HNS cannot say', () => {
  it('except becomes the CIDRs that remain', () => {
    const t = translateCluster(
      { pods: [a], namespaces: [nsX], policies: [policy('x', 'p', { podSelector: {}, ingress: [{ from: [{ ipBlock: { cidr: '10.0.0.0/22', except: ['10.0.1.0/24'] } }] }] })] },
      12,
    );
    expect(rulesOf(t).find((r) => r.Priority === PRIORITY.allow)?.RemoteAddresses).toBe('10.0.0.0/24,10.0.2.0/23');
  });

  it('SCTP is refused: the policy isolates, and nothing of it is written as an allow', async () => {
    const sctp = policy('x', 'sctp', { podSelector: {}, ingress: [{ ports: [{ protocol: 'SCTP', port: 7777 }, { port: 80 }] }] });
    expect(hnsRefusal(sctp)).toContain('SCTP');
    const state = { pods: [a, b], namespaces: [nsX], policies: [sctp] };
    const t = translateCluster(state, 12);
    expect(rulesOf(t).filter((r) => r.Priority === PRIORITY.allow)).toEqual([]);
    expect(connect(await judgesOf(state, 12), '10.244.2.1', '10.244.1.1', 'TCP', 80)).toBe(false);
  });

  it('translation stops on an SCTP allow that was not refused first, rather than drop it silently', () => {
    const sctp = policy('x', 'sctp', { podSelector: {}, ingress: [{ ports: [{ protocol: 'SCTP', port: 7777 }] }] });
    expect(() => translate(computeIntent({ pods: [a], namespaces: [nsX], policies: [sctp] }, NODE), { hnsVersion: { Major: 13, Minor: 0 } })).toThrow('hnsRefusal');
  });
});

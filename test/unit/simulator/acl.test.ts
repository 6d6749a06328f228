// "Does HNS pass this packet?" (src/simulator/acl.ts AclEvaluator) over rules and sets the simulated HNS
// stored: Switch rules by ascending Priority, the first match decides (VFP, NSDI 2017; Calico
// felix/dataplane/windows flattener.go), no match passes (Out; In for TCP, UDP, ICMP, IGMP: learn.microsoft.com
// "Network isolation and security"), a reply to an allowed connection passes (VFP flow tracking), Host rules
// (WFP) where a Block wins, sets resolved to their members (Azure NPM policy_windows.go, ipset.go), port lists
// and ranges (Calico protoPortToHCSPort), and the cases no source settles refused with FLANNEL_ERR_ACL_UNSETTLED
// (docs/simulator.md, ACL rules and IP sets).
import { describe, expect, it } from '@jest/globals';
import { AclEvaluationError } from '../../../src/basics/errors.js';
import type { AclPolicySetting, SetPolicySetting } from '../../../src/hns/schema.js';
import { AclEvaluator, type Packet } from '../../../src/simulator/acl.js';
import { SimulatedDataplane } from '../../../src/simulator/model.js';
import { expectCode } from '../../support/errors.js';
import { editState } from '../../support/sim-dataplane.js';

const V2 = { Major: 2, Minor: 0 };
const A = '10.244.1.10';
const B = '10.244.1.11';
const C = '10.244.1.12';
const REMOTE = '10.244.2.7';

/** A node with three pods on cbr0 (pod-a .10, pod-b .11, pod-c .12, pod-a6 fd00:10:244:1::a), rules and sets as the simulated HNS stores them. */
function node(rules: { a?: AclPolicySetting[]; b?: AclPolicySetting[]; c?: AclPolicySetting[] } = {}, sets: SetPolicySetting[] = []) {
  const dp = new SimulatedDataplane();
  const net = dp.createNetwork('HcnCreateNetwork', {
    Name: 'cbr0',
    Type: 'L2Bridge',
    SchemaVersion: V2,
    Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: '10.244.1.0/24' }, { IpAddressPrefix: 'fd00:10:244:1::/64' }] }],
  });
  const pod = (name: string, ...ips: string[]) =>
    dp.createEndpoint('HcnCreateEndpoint', net.ID!, { Name: name, SchemaVersion: V2, IpConfigurations: ips.map((IpAddress) => ({ IpAddress })) }).ID!;
  const ids = { a: pod('pod-a', A, 'fd00:10:244:1::a'), b: pod('pod-b', B), c: pod('pod-c', C) };
  if (sets.length)
    dp.modifyNetworkPolicies(
      'HcnModifyNetwork',
      net.ID!,
      'Add',
      sets.map((s) => ({ Type: 'SetPolicy', Settings: { ...s } })),
    );
  for (const k of ['a', 'b', 'c'] as const) {
    const acls = rules[k] ?? [];
    if (acls.length)
      dp.modifyEndpointPolicies(
        'HcnModifyEndpoint',
        ids[k],
        'Add',
        acls.map((s) => ({ Type: 'ACL', Settings: { ...s } })),
      );
  }
  return { dp, ids, hns: () => new AclEvaluator(dp.snapshot()) };
}

const rule = (Id: string, o: Partial<AclPolicySetting>): AclPolicySetting => ({ Id, Action: 'Allow', Direction: 'In', RuleType: 'Switch', Priority: 100, ...o });
const tcp = (src: string, dst: string, dstPort: number, srcPort = 40000): Packet => ({ src, dst, protocol: 6, srcPort, dstPort });
const udp = (src: string, dst: string, dstPort: number, srcPort = 40000): Packet => ({ src, dst, protocol: 17, srcPort, dstPort });
const passes = (ev: AclEvaluator, p: Packet) => ev.send(p).allowed;
const decidedBy = (ev: AclEvaluator, p: Packet) => ev.send(p).decisions.map((d) => `${d.direction} ${d.action} ${d.rule?.Id ?? 'default'}`);
const blockAllIn = (Priority = 65000) => rule('block-in', { Action: 'Block', Priority });

describe('Switch rules: ascending Priority, the first match decides', () => {
  it('no rules: every protocol out, TCP, UDP, ICMP and IGMP in; other protocols in are blocked by default', () => {
    const ev = node().hns();
    expect(decidedBy(ev, tcp(B, A, 80))).toEqual(['Out Allow default', 'In Allow default']);
    for (const protocol of [1, 2, 17, 58]) expect(passes(ev, { src: REMOTE, dst: A, protocol })).toBe(true);
    expect(decidedBy(ev, { src: REMOTE, dst: A, protocol: 132, srcPort: 1, dstPort: 2 })).toEqual(['In Block default']);
    expect(passes(ev, { src: A, dst: REMOTE, protocol: 132, srcPort: 1, dstPort: 2 })).toBe(true);
  });

  it.each<[string, number, number, boolean, string]>([
    ['Allow at 100 before Block at 200', 100, 200, true, 'allow-80'],
    ['Block at 100 before Allow at 200', 200, 100, false, 'block-80'],
  ])('%s', (_what, allowAt, blockAt, allowed, by) => {
    const ev = node({
      a: [rule('block-80', { Action: 'Block', Protocols: '6', LocalPorts: '80', Priority: blockAt }), rule('allow-80', { Protocols: '6', LocalPorts: '80', Priority: allowAt })],
    }).hns();
    const v = ev.send(tcp(B, A, 80));
    expect(v.allowed).toBe(allowed);
    expect(v.decisions.at(-1)!.rule!.Id).toBe(by);
  });

  it('the first matching rule decides; a packet no rule matches passes', () => {
    const ev = node({ a: [rule('from-b', { RemoteAddresses: B, Priority: 100 }), rule('block-80', { Action: 'Block', Protocols: '6', LocalPorts: '80', Priority: 200 })] }).hns();
    expect(decidedBy(ev, tcp(B, A, 80))).toEqual(['Out Allow default', 'In Allow from-b']);
    expect(decidedBy(ev, tcp(C, A, 80))).toEqual(['Out Allow default', 'In Block block-80']);
    expect(decidedBy(ev, tcp(C, A, 443))).toEqual(['Out Allow default', 'In Allow default']);
    expect(decidedBy(ev, udp(C, A, 80))).toEqual(['Out Allow default', 'In Allow default']);
  });

  it("the source endpoint's Out rules judge first; an address off the node has no rules", () => {
    const ev = node({ a: [rule('no-dns', { Direction: 'Out', Action: 'Block', Protocols: '17', RemoteAddresses: '10.96.0.0/12', RemotePorts: '53' })], b: [blockAllIn()] }).hns();
    expect(decidedBy(ev, udp(A, '10.96.0.10', 53))).toEqual(['Out Block no-dns']);
    expect(decidedBy(ev, udp(A, '10.96.0.10', 5353))).toEqual(['Out Allow default']);
    // pod-b's In rules judge what pod-a's Out rules let through.
    expect(decidedBy(ev, tcp(A, B, 80))).toEqual(['Out Allow default', 'In Block block-in']);
    expect(decidedBy(ev, tcp(B, REMOTE, 80))).toEqual(['Out Allow default']);
  });

  it('Local is the endpoint side, Remote the other side, in both directions', () => {
    const ev = node({
      a: [
        rule('in', { LocalAddresses: A, RemoteAddresses: B, Protocols: '6', LocalPorts: '80', RemotePorts: '40000' }),
        rule('out', { Direction: 'Out', LocalAddresses: A, RemoteAddresses: C, Protocols: '6', LocalPorts: '40000', RemotePorts: '443', Action: 'Block' }),
      ],
    }).hns();
    expect(decidedBy(ev, tcp(B, A, 80))).toEqual(['Out Allow default', 'In Allow in']);
    expect(decidedBy(ev, tcp(A, C, 443))).toEqual(['Out Block out']);
    expect(decidedBy(ev, tcp(C, A, 443))).toEqual(['Out Allow default', 'In Allow default']);
  });

  it('a set Id in LocalAddresses is the packet\u2019s source, in RemoteAddresses its destination, in both directions (Azure NPM policy_windows.go)', () => {
    const sets: SetPolicySetting[] = [
      { Id: 'set-b', Name: 'b', PolicyType: 'IPSET', Values: B },
      { Id: 'set-c', Name: 'c', PolicyType: 'IPSET', Values: C },
    ];
    const ev = node(
      {
        a: [
          rule('in-from-b', { LocalAddresses: 'set-b', Priority: 100 }),
          rule('in-to-c', { RemoteAddresses: 'set-c', Priority: 100 }),
          blockAllIn(200),
          rule('out-to-c', { Direction: 'Out', RemoteAddresses: 'set-c', Priority: 100 }),
          rule('out-block', { Direction: 'Out', Action: 'Block', Priority: 200 }),
        ],
      },
      sets,
    ).hns();
    // In: the source set is LocalAddresses' (pod-b sends to pod-a); a set in RemoteAddresses is the destination, pod-a itself, never pod-c.
    expect(decidedBy(ev, tcp(B, A, 80))).toEqual(['Out Allow default', 'In Allow in-from-b']);
    expect(decidedBy(ev, tcp(C, A, 80))).toEqual(['Out Allow default', 'In Block block-in']);
    // Out: the destination set is RemoteAddresses', as an address there is.
    expect(decidedBy(ev, tcp(A, C, 80))).toEqual(['Out Allow out-to-c', 'In Allow default']);
    expect(decidedBy(ev, tcp(A, B, 80))).toEqual(['Out Block out-block']);
  });

  it('port lists and ranges; a rule with ports matches no packet without ports; Protocols 256 is any', () => {
    const ev = node({
      a: [
        rule('web', { Protocols: '6', LocalPorts: '80,8000-8100', Priority: 100 }),
        rule('tcp-rest', { Action: 'Block', Protocols: '6', Priority: 200 }),
        rule('any', { Action: 'Block', Protocols: '256', Priority: 300 }),
      ],
    }).hns();
    expect(passes(ev, tcp(B, A, 80))).toBe(true);
    expect(passes(ev, tcp(B, A, 8000))).toBe(true);
    expect(passes(ev, tcp(B, A, 8100))).toBe(true);
    expect(decidedBy(ev, tcp(B, A, 8101))).toEqual(['Out Allow default', 'In Block tcp-rest']);
    expect(decidedBy(ev, tcp(B, A, 81))).toEqual(['Out Allow default', 'In Block tcp-rest']);
    expect(decidedBy(ev, { src: B, dst: A, protocol: 1 })).toEqual(['Out Allow default', 'In Block any']);
  });

  it('IPv6 rules match IPv6 packets only', () => {
    const ev = node({ a: [rule('v6', { Action: 'Block', RemoteAddresses: 'fd00:10:244:2::/64' })] }).hns();
    expect(passes(ev, tcp('fd00:10:244:2::7', 'fd00:10:244:1::a', 80))).toBe(false);
    expect(passes(ev, tcp('fd00:10:244:3::7', 'fd00:10:244:1::a', 80))).toBe(true);
    expect(passes(ev, tcp(REMOTE, A, 80))).toBe(true);
  });
});

describe('replies to an allowed connection pass (stateful)', () => {
  it('a reply passes rules that would block it; an unsolicited packet the other way is judged', () => {
    const ev = node({
      a: [rule('web-from-b', { RemoteAddresses: B, Protocols: '6', LocalPorts: '80', Priority: 100 }), blockAllIn(), rule('no-out', { Direction: 'Out', Action: 'Block' })],
      b: [blockAllIn()],
    }).hns();
    expect(passes(ev, tcp(B, A, 80, 51000))).toBe(true);
    const reply = ev.send(tcp(A, B, 51000, 80));
    expect(reply).toEqual({ allowed: true, reply: true, decisions: [] });
    // Not a reply: another source port, or A starting a connection of its own.
    expect(decidedBy(ev, tcp(A, B, 51001, 80))).toEqual(['Out Block no-out']);
    expect(passes(ev, tcp(C, A, 80, 51000))).toBe(false);
    expect(passes(ev, tcp(A, C, 51000, 80))).toBe(false);
  });

  it('a blocked connection leaves no flow for replies', () => {
    const ev = node({ a: [blockAllIn()] }).hns();
    expect(passes(ev, tcp(B, A, 80, 51000))).toBe(false);
    expect(ev.send(tcp(A, B, 51000, 80)).reply).toBe(false);
  });
});

describe('SetPolicy references resolve to their members', () => {
  it('an IPSET stands for its addresses and prefixes; a NESTEDIPSET for its members', () => {
    const sets: SetPolicySetting[] = [
      { Id: 'azure-npm-web', Name: 'web', PolicyType: 'IPSET', Values: `${B},10.244.5.0/24` },
      { Id: 'azure-npm-db', Name: 'db', PolicyType: 'IPSET', Values: C },
      { Id: 'azure-npm-ns', Name: 'ns', PolicyType: 'NESTEDIPSET', Values: 'azure-npm-web,azure-npm-db' },
    ];
    const { hns } = node(
      {
        a: [rule('from-web', { LocalAddresses: 'azure-npm-web', Priority: 100 }), blockAllIn(200)],
        b: [rule('from-ns', { LocalAddresses: 'azure-npm-ns', Priority: 100 }), blockAllIn(200)],
      },
      sets,
    );
    const ev = hns();
    expect(passes(ev, tcp(B, A, 80))).toBe(true);
    expect(passes(ev, tcp('10.244.5.9', A, 80))).toBe(true);
    expect(decidedBy(ev, tcp(C, A, 80))).toEqual(['Out Allow default', 'In Block block-in']);
    expect(decidedBy(ev, tcp(C, B, 80))).toEqual(['Out Allow default', 'In Allow from-ns']);
    expect(passes(ev, tcp(A, B, 80))).toBe(false);
  });

  it('an Update of a set changes what the rules naming it match', () => {
    const { dp, hns } = node({ a: [rule('from-web', { LocalAddresses: 'azure-npm-web', Priority: 100 }), blockAllIn(200)] }, [
      { Id: 'azure-npm-web', Name: 'web', PolicyType: 'IPSET', Values: B },
    ]);
    expect(passes(hns(), tcp(C, A, 80))).toBe(false);
    const net = dp.getNetworkByName('cbr0')!.ID!;
    dp.modifyNetworkPolicies('HcnModifyNetwork', net, 'Update', [{ Type: 'SetPolicy', Settings: { Id: 'azure-npm-web', Name: 'web', PolicyType: 'IPSET', Values: `${B},${C}` } }]);
    expect(passes(hns(), tcp(C, A, 80))).toBe(true);
  });
});

describe('Host rules (WFP)', () => {
  it('a matching Host Block blocks what the Switch rules allow, whatever its priority; a Host Allow lets it be', () => {
    const ev = node({
      a: [
        rule('switch-allow', { Priority: 100 }),
        rule('host-allow', { RuleType: 'Host', Priority: 1 }),
        rule('host-block-c', { RuleType: 'Host', Action: 'Block', RemoteAddresses: C, Priority: 50000 }),
      ],
    }).hns();
    expect(decidedBy(ev, tcp(B, A, 80))).toEqual(['Out Allow default', 'In Allow switch-allow']);
    expect(decidedBy(ev, tcp(C, A, 80))).toEqual(['Out Allow default', 'In Block host-block-c']);
  });

  it('a Switch Block is final', () => {
    const ev = node({ a: [blockAllIn(100), rule('host-allow', { RuleType: 'Host' })] }).hns();
    expect(decidedBy(ev, tcp(B, A, 80))).toEqual(['Out Allow default', 'In Block block-in']);
  });
});

describe('what no source settles: FLANNEL_ERR_ACL_UNSETTLED', () => {
  const unsettled = (ev: AclEvaluator, p: Packet) => expectCode(() => ev.send(p), AclEvaluationError, 'FLANNEL_ERR_ACL_UNSETTLED').context['why'];

  it('two Switch rules of different actions matching at one priority; one action at one priority is fine', () => {
    const ev = node({
      a: [
        rule('allow-b', { RemoteAddresses: B, Priority: 100 }),
        rule('block-80', { Action: 'Block', Protocols: '6', LocalPorts: '80', Priority: 100 }),
        rule('allow-c', { RemoteAddresses: C, Priority: 100 }),
      ],
    }).hns();
    expect(unsettled(ev, tcp(B, A, 80))).toBe('same-priority');
    expect(decidedBy(ev, tcp(B, A, 443))).toEqual(['Out Allow default', 'In Allow allow-b']);
    expect(decidedBy(ev, { src: C, dst: A, protocol: 17, srcPort: 1, dstPort: 80 })).toEqual(['Out Allow default', 'In Allow allow-c']);
  });

  it('a rule without RuleType', () => {
    const ev = node({ a: [{ Id: 'untyped', Action: 'Allow', Direction: 'In', Priority: 100 }] }).hns();
    expect(unsettled(ev, tcp(B, A, 80))).toBe('rule-type');
    // Only the direction judged: pod-a's Out rules have no such rule.
    expect(passes(ev, tcp(A, REMOTE, 80))).toBe(true);
  });

  it('Host rules in a direction of which none matches', () => {
    const ev = node({ a: [rule('host-allow-b', { RuleType: 'Host', RemoteAddresses: B })] }).hns();
    expect(passes(ev, tcp(B, A, 80))).toBe(true);
    expect(unsettled(ev, tcp(C, A, 80))).toBe('host-default');
  });

  it('two local endpoints on one address; a rule naming a set the network does not hold (a hand-edited file)', () => {
    const { dp, hns } = node({ a: [rule('from-web', { LocalAddresses: 'azure-npm-web' })] }, [{ Id: 'azure-npm-web', Name: 'web', PolicyType: 'IPSET', Values: B }]);
    editState(dp, (s) => {
      const net = s.networks[0];
      net.Policies = net.Policies!.filter((p) => p.Type !== 'SetPolicy');
    });
    expect(unsettled(hns(), tcp(B, A, 80))).toBe('unknown-set');
    editState(dp, (s) => void s.endpoints.push({ ...structuredClone(s.endpoints[1]), ID: 'DUP' }));
    expect(unsettled(hns(), tcp(B, REMOTE, 80))).toBe('ambiguous-endpoint');
  });
});

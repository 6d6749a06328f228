// The diff between what HNS holds and what the translation wants (src/netpol/diff.ts): only the agent's
// objects, by Id; and, over a stream of cluster changes applied through HnsClient to the simulated node
// (test/support/netpol-node.ts), the writes it makes against what rewriting every endpoint's whole list (and
// every set) on each change would write.
import { describe, expect, it } from '@jest/globals';
import { agentAcls, agentSets, planEndpointAcls, planSets } from '../../../src/netpol/diff.js';
import type { AclPolicySetting, SetPolicySetting } from '../../../src/hns/schema.js';
import type { ClusterState } from '../../../src/netpol/intent.js';
import type { Translation } from '../../../src/netpol/translate.js';
import type { Pod } from '../../../src/netpol/types.js';
import { connect, e2eCluster, namespace, NODE, OTHER_NODE, pod, policy, SUBNETS, translateCluster } from '../../support/netpol-cluster.js';
import { PolicyNode } from '../../support/netpol-node.js';

const acl = (Id: string | undefined, extra: Partial<AclPolicySetting> = {}): AclPolicySetting => ({
  ...(Id === undefined ? {} : { Id }),
  Action: 'Allow',
  Direction: 'In',
  RuleType: 'Switch',
  Priority: 1000,
  ...extra,
});
const set = (Id: string, Values: string): SetPolicySetting => ({ Id, Name: Id, PolicyType: 'IPSET', Values });

describe('planEndpointAcls', () => {
  it('never plans a rule that is not the agent\u2019s: no Id, another prefix', () => {
    const foreign = [acl(undefined), acl('azure-acl-x-p'), acl('flannel-npx', { Action: 'Block' })];
    const plan = planEndpointAcls([...foreign, acl('flannel-np-stale')], [acl('flannel-np-new')]);
    expect(plan).toEqual({ remove: [acl('flannel-np-stale')], add: [acl('flannel-np-new')] });
  });

  it('a rule of the agent\u2019s Id that reads otherwise is replaced (remove, add); one that reads the same stays', () => {
    const want = acl('flannel-np-1', { RemoteAddresses: '10.0.0.1/32' });
    expect(planEndpointAcls([acl('flannel-np-1', { RemoteAddresses: '10.0.0.2/32' })], [want])).toEqual({
      remove: [acl('flannel-np-1', { RemoteAddresses: '10.0.0.2/32' })],
      add: [want],
    });
    expect(planEndpointAcls([want], [want])).toEqual({ remove: [], add: [] });
  });

  it('a field HNS leaves out reads as its empty value (Priority 0, no ports)', () => {
    const want: AclPolicySetting = { Id: 'flannel-np-h', Action: 'Allow', Direction: 'In', RuleType: 'Host' };
    expect(planEndpointAcls([{ ...want, Priority: 0, LocalPorts: '' }], [want])).toEqual({ remove: [], add: [] });
  });

  it('of two rules with one Id, the extra one goes', () => {
    const want = acl('flannel-np-1');
    expect(planEndpointAcls([acl('flannel-np-1', { Action: 'Block' }), want], [want])).toEqual({ remove: [acl('flannel-np-1', { Action: 'Block' })], add: [] });
  });

  it('finds the agent\u2019s rules and sets among the policies HNS returns', () => {
    const endpointPolicies = [
      { Type: 'ACL', Settings: { ...acl('flannel-np-1') } },
      { Type: 'ACL', Settings: { ...acl('azure-acl-1') } },
      { Type: 'PortMapping', Settings: { Id: 'flannel-np-2' } },
      { Type: 'ACL' },
    ];
    expect(agentAcls(endpointPolicies)).toEqual([acl('flannel-np-1')]);
    expect(
      agentSets([
        { Type: 'SetPolicy', Settings: { ...set('flannel-np-set-1', '') } },
        { Type: 'SetPolicy', Settings: { ...set('azure-npm-1', '') } },
      ]),
    ).toEqual([set('flannel-np-set-1', '')]);
    expect(agentAcls(undefined)).toEqual([]);
  });
});

describe('planSets', () => {
  it('adds, updates in place (the Id stays), removes only the agent\u2019s', () => {
    const plan = planSets(
      [set('flannel-np-set-a', '10.0.0.1/32'), set('flannel-np-set-gone', '10.0.0.9/32'), set('azure-npm-x', '1.1.1.1')],
      [set('flannel-np-set-a', '10.0.0.1/32,10.0.0.2/32'), set('flannel-np-set-b', '10.0.0.3/32')],
    );
    expect(plan).toEqual({
      add: [set('flannel-np-set-b', '10.0.0.3/32')],
      update: [set('flannel-np-set-a', '10.0.0.1/32,10.0.0.2/32')],
      remove: [set('flannel-np-set-gone', '10.0.0.9/32')],
    });
  });
});

/** What rewriting every endpoint's whole list and every set on a change writes. */
const rewriteWrites = (t: Translation): number => t.endpoints.reduce((n, e) => n + e.rules.length, 0) + t.sets.length;

describe('writes over a stream of changes', () => {
  const c = e2eCluster(true);
  const remote = (name: string, ip: string, labels: Record<string, string>, uid = `uid-${name}`): Pod => pod('y', name, { ips: [ip], node: OTHER_NODE, labels, uid });
  const fromY = (port: number) =>
    policy('x', 'from-y', {
      podSelector: { matchLabels: { pod: 'a' } },
      ingress: [{ from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'y' } }, podSelector: { matchLabels: { role: 'client' } } }], ports: [{ port }] }],
    });
  const denyX = policy('x', 'deny', { podSelector: {} });
  const egressZ = policy('z', 'egress', { podSelector: {}, policyTypes: ['Egress'], egress: [{ to: [{ namespaceSelector: { matchLabels: { team: 'blue' } } }] }] });

  /** Each step: what changes, and the cluster after it. */
  const steps: { what: string; state: ClusterState; sets?: number; flattened?: number }[] = [];
  let state: ClusterState = { pods: [...c.pods, remote('r1', '10.244.2.1', { role: 'client' })], namespaces: c.namespaces, policies: [denyX, fromY(80), egressZ] };
  const step = (what: string, next: ClusterState, expected: { sets?: number; flattened?: number } = {}) => {
    state = next;
    steps.push({ what, state, ...expected });
  };
  step('start', state);
  // A client appears in y: with sets, one set update; flattened, x/a's two rules (v4 address list) are rewritten.
  step('a client pod appears elsewhere', { ...state, pods: [...state.pods, remote('r2', '10.244.2.2', { role: 'client' })] }, { sets: 1, flattened: 2 });
  step('a pod that no policy names appears', { ...state, pods: [...state.pods, remote('r3', '10.244.2.3', { role: 'db' })] }, { sets: 0, flattened: 0 });
  step(
    'it is relabelled into the clients',
    { ...state, pods: state.pods.map((p) => (p.name === 'r3' ? remote('r3', '10.244.2.3', { role: 'client' }) : p)) },
    { sets: 1, flattened: 2 },
  );
  // y becomes blue: z's egress policy now allows y's pods: a rule per family on each of the three z endpoints
  // (dual-stack), and with IP sets the two sets they name.
  step('a namespace is relabelled', { ...state, namespaces: state.namespaces.map((n) => (n.name === 'y' ? namespace('y', { team: 'blue' }) : n)) }, { sets: 8, flattened: 6 });
  step('a policy\u2019s port changes', { ...state, policies: [denyX, fromY(81), egressZ] }, { sets: 2, flattened: 2 });
  step(
    'an address is reused: r1 is gone, a non-client takes 10.244.2.1',
    { ...state, pods: [...state.pods.filter((p) => p.name !== 'r1'), remote('r9', '10.244.2.1', { role: 'other' }, 'uid-r9')] },
    { sets: 1, flattened: 2 },
  );
  step('a local pod goes', { ...state, pods: state.pods.filter((p) => !(p.namespace === 'x' && p.name === 'c')) }, { sets: 0, flattened: 0 });
  // x/a's allow rule goes (and, with IP sets, the set it named).
  step('a policy is deleted', { ...state, policies: [denyX, egressZ] }, { sets: 2, flattened: 1 });
  // x/a and x/b are no longer isolated: their 8 rules each go (host layer and catch-all both ways, node rules per family).
  step('the last policy of x goes', { ...state, policies: [egressZ] }, { sets: 16, flattened: 16 });

  it.each([
    [12, 'flattened'],
    [13, 'sets'],
  ] as const)('HNS %i (%s): the diff converges, writes what changed, and far less than whole-list rewrites', async (major, mode) => {
    const node = await PolicyNode.start({ node: NODE, subnets: SUBNETS[NODE.nodeName], hnsVersion: { Major: major, Minor: 0 } });
    let ours = 0;
    let rewrite = 0;
    for (const s of steps) {
      const t = translateCluster(s.state, major);
      const w = await node.apply(s.state);
      const written = w.rules + w.sets;
      if (s !== steps[0]) {
        ours += written;
        rewrite += rewriteWrites(t);
      }
      const expected = s[mode];
      if (expected !== undefined) expect(`${s.what}: ${written}`).toBe(`${s.what}: ${expected}`);
      // Converged: HNS now holds exactly the wanted rules and sets, and a second pass sends no request.
      const held = await node.hns.listEndpoints();
      for (const e of t.endpoints) {
        const ep = held.find((x) => x.Name === e.uid)!;
        expect(new Set(await node.hns.getEndpointAcls(ep.ID!))).toEqual(new Set(e.rules));
      }
      expect(await node.apply(s.state)).toEqual({ requests: 0, rules: 0, sets: 0 });
      // And what it holds enforces the step's cluster: x/a hears clients of y on the policy's port only.
      const judges = [node.judge()];
      const xa = c.ipOf.get('x/a')![0];
      const port = s.state.policies.some((p) => p.name === 'from-y') ? (s.state.policies.find((p) => p.name === 'from-y')!.spec.ingress![0].ports![0].port as number) : 80;
      for (const p of s.state.pods.filter((q) => q.namespace === 'y' && q.nodeName === OTHER_NODE)) {
        const fromY = s.state.policies.some((q) => q.name === 'from-y') && p.labels.role === 'client';
        const denied = s.state.policies.some((q) => q.name === 'deny');
        expect(`${s.what}: ${p.name} -> x/a ${connect(judges, p.podIPs[0], xa, 'TCP', port)}`).toBe(`${s.what}: ${p.name} -> x/a ${fromY || !denied}`);
      }
    }
    expect(ours).toBeLessThan(rewrite / 10);
  });
});

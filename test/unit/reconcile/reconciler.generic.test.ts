// The Reconciler (src/reconcile/) is generic: it knows keys and items, not peers. Here it keeps one pod
// endpoint's ACL rules, keyed by rule Id, as the NetworkPolicy controller will (docs/network-policy.md):
// its own desired set (a Map of rules by Id), its own driver (HcnModifyEndpoint through the real HnsClient
// on the simulated HNS: hcsshim hcn/hcnendpoint.go ApplyPolicy, one request per call, refusals as
// src/simulator/refusals.ts refuseAcl models them) and its own sink (test/support/refusal-sink.ts). Nothing
// of src/peers/ is involved, and its keys are a type of their own (`RuleId`, a branded string), so a peer's
// prefix could not be passed where a rule Id is meant: the loop is generic over the key as well as the items,
// as Felix's deltatracker is (`DeltaTracker[K comparable, V any]`, felix/deltatracker/delta_tracker.go). A rule naming an IP set the network does not hold yet is refused
// (HCN_E_INVALID_POLICY), retried alone on its backoff and lands once the set exists: the order Azure NPM
// keeps, a set before the rules that name it (npm/pkg/dataplane/dataplane_windows.go).
import { describe, expect, it } from '@jest/globals';
import { Metrics, METRIC } from '../../../src/basics/metrics.js';
import { HnsClient } from '../../../src/hns/client.js';
import { hnsFailure, HRESULT } from '../../../src/hns/errors.js';
import type { AclPolicySetting } from '../../../src/hns/schema.js';
import { Reconciler, type DesiredSet } from '../../../src/reconcile/reconciler.js';
import type { ReconcileDriver } from '../../../src/reconcile/writes.js';
import { SimulatedHnsTransport } from '../../../src/simulator/hns.js';
import { SimulatedDataplane } from '../../../src/simulator/model.js';
import { readMetric } from '../../support/agent-signals.js';
import { FakeClock, flush } from '../../support/fake-clock.js';
import { MapSink } from '../../support/refusal-sink.js';

/** An ACL rule's Id, as the loop knows the rules: a string no other controller's key can be taken for. */
type RuleId = string & { readonly __ruleId: never };
const ruleId = (a: AclPolicySetting): RuleId => a.Id! as RuleId;

/** The rules wanted on one endpoint, by Id, each for a NetworkPolicy (its `owner`, named in the loop's log lines). */
class RuleSet implements DesiredSet<AclPolicySetting, RuleId> {
  listed = false;
  readonly rules = new Map<RuleId, { rule: AclPolicySetting; policy: string }>();
  readonly dirty = new Set<RuleId>();
  /** Keys the loop removed from the endpoint. */
  readonly removedKeys: RuleId[] = [];
  private onChange = () => {};

  set(policy: string, rule: AclPolicySetting): void {
    this.rules.set(ruleId(rule), { rule, policy });
    this.changed(ruleId(rule));
  }
  delete(id: RuleId): void {
    this.rules.delete(id);
    this.changed(id);
  }
  list(): void {
    this.listed = true;
    this.onChange();
  }
  private changed(id: RuleId): void {
    this.dirty.add(id);
    this.onChange();
  }

  desired(key: RuleId) {
    return this.rules.get(key)?.rule;
  }
  desiredItems() {
    return [...this.rules.values()].map((r) => r.rule);
  }
  takeDirty() {
    const keys = [...this.dirty];
    this.dirty.clear();
    return keys;
  }
  owner(key: RuleId) {
    return this.rules.get(key)?.policy;
  }
  removed(keys: readonly RuleId[]) {
    this.removedKeys.push(...keys);
  }
  subscribe(onChange: () => void) {
    this.onChange = onChange;
  }
}

/** One endpoint's ACL rules: read, added and removed with one HcnModifyEndpoint per call. */
function endpointAclDriver(hns: HnsClient, endpointId: string): ReconcileDriver<AclPolicySetting, AclPolicySetting, RuleId> {
  return {
    name: 'endpoint ACL rules',
    driftKind: 'acl',
    readActual: async () => (await hns.getEndpointAcls(endpointId)) ?? [],
    add: (rules) => hns.addEndpointAcls(endpointId, rules),
    remove: (rules) => hns.removeEndpointAcls(endpointId, rules),
    actualKey: ruleId,
    desiredKey: ruleId,
    same: (a, d) => JSON.stringify(a) === JSON.stringify(d),
    toActual: (d) => d,
    failure: hnsFailure,
  };
}

const V2 = { Major: 2, Minor: 0 };
const id = (s: string) => s as RuleId;
const rule = (Id: string, RemoteAddresses: string): AclPolicySetting => ({
  Id,
  Protocols: '6',
  Action: 'Allow',
  Direction: 'In',
  RemoteAddresses,
  LocalPorts: '80',
  RuleType: 'Switch',
  Priority: 100,
});

async function setup() {
  const dp = new SimulatedDataplane();
  const hns = new HnsClient(new SimulatedHnsTransport(dp));
  const net = await hns.createNetwork({
    Name: 'cbr0',
    Type: 'L2Bridge',
    SchemaVersion: V2,
    Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: '10.244.1.0/24', Routes: [{ NextHop: '10.244.1.1', DestinationPrefix: '0.0.0.0/0' }] }] }],
  });
  const ep = await hns.createEndpoint(net.ID!, { Name: 'pod-web', SchemaVersion: V2, IpConfigurations: [{ IpAddress: '10.244.1.10', PrefixLength: 24 }] });
  const clock = new FakeClock();
  const metrics = new Metrics();
  const rules = new RuleSet();
  const sink = new MapSink<RuleId>();
  const r = new Reconciler({ driver: endpointAclDriver(hns, ep.ID!), desired: rules, sink, clock, metrics, resyncMs: 10_000, backoffBaseMs: 100, backoffCapMs: 1000 });
  const ids = async () => ((await hns.getEndpointAcls(ep.ID!)) ?? []).map((a) => a.Id).sort();
  return { hns, net: net.ID!, ep: ep.ID!, clock, metrics, rules, sink, r, ids };
}

describe('the Reconciler with a desired set and a sink that are not the peers', () => {
  it("keeps an endpoint's ACL rules by Id: a refused rule retried alone until it lands, removals, drift repaired under the driver's own kind", async () => {
    const { hns, net, ep, clock, metrics, rules, sink, r, ids } = await setup();
    rules.set('allow-dns', rule('flannel-np-dns', '10.96.0.10'));
    rules.set('allow-web', rule('flannel-np-web', 'flannel-np-set-web')); // names an IP set not written yet
    rules.list();
    const ac = new AbortController();
    const done = r.run(ac.signal);
    await flush();

    // The batch is refused whole (one HcnModifyEndpoint); halved, the good rule lands and the other waits.
    expect(await ids()).toEqual(['flannel-np-dns']);
    expect([...sink.refusedNow]).toEqual([['flannel-np-web', { error: expect.objectContaining({ hresult: HRESULT.HCN_E_INVALID_POLICY }), attempts: 1, retryInMs: 100 }]]);
    expect(r.status()).toMatchObject({ inSync: false, refused: 1, consecutiveFailures: 0 });
    expect(r.isProgrammed(id('flannel-np-dns'))).toBe(true);
    expect(r.isProgrammed(id('flannel-np-web'))).toBe(false);

    // Retried alone on its backoff (100 ms, then 200 ms), refused alike until the set exists.
    await clock.advance(100);
    expect(sink.refusedNow.get(id('flannel-np-web'))).toMatchObject({ attempts: 2, retryInMs: 200 });
    await hns.addSetPolicies(net, [{ Id: 'flannel-np-set-web', Name: 'web clients', PolicyType: 'IPSET', Values: '10.244.2.7' }]);
    await clock.advance(200);
    expect(await ids()).toEqual(['flannel-np-dns', 'flannel-np-web']);
    expect(sink.refusedNow.size).toBe(0);
    expect(sink.clearings).toEqual([['flannel-np-web', 'written']]);
    expect(r.status()).toMatchObject({ inSync: true, refused: 0 });

    // A rule no longer wanted is removed, and the desired side is told which keys went.
    rules.delete(id('flannel-np-dns'));
    await flush();
    expect(await ids()).toEqual(['flannel-np-web']);
    expect(rules.removedKeys).toEqual(['flannel-np-dns']);

    // Someone removes the rule behind the loop's back: the resync puts it back, counted as the driver's kind.
    await hns.removeEndpointAcls(ep, [rule('flannel-np-web', 'flannel-np-set-web')]);
    await clock.advance(10_000);
    expect(await ids()).toEqual(['flannel-np-web']);
    expect(await readMetric(metrics, METRIC.driftRepairs, { kind: 'acl' })).toBe(1);
    ac.abort();
    await done;
  });

  it('a rule refused and then no longer wanted is forgotten: the sink hears it cleared, and the loop does not retry it', async () => {
    const { clock, rules, sink, r, ids } = await setup();
    rules.set('allow-web', rule('flannel-np-web', 'flannel-np-set-missing'));
    rules.list();
    const ac = new AbortController();
    const done = r.run(ac.signal);
    await flush();
    expect([...sink.refusedNow.keys()]).toEqual(['flannel-np-web']);
    rules.delete(id('flannel-np-web'));
    await clock.advance(1000);
    expect(sink.clearings).toEqual([['flannel-np-web', 'forgotten']]);
    expect(r.status()).toMatchObject({ inSync: true, refused: 0 });
    expect(await ids()).toEqual([]);
    ac.abort();
    await done;
  });
});

describe('writePlan with a driver that updates in place', () => {
  it('writes a replacement with one update (HNS RequestType Update of an IP set), never a remove and an add', async () => {
    const { writePlan } = await import('../../../src/reconcile/writes.js');
    const { Refusals } = await import('../../../src/reconcile/refusals.js');
    const calls: string[] = [];
    type Item = { Id: string; Values: string };
    const driver: ReconcileDriver<Item, Item> = {
      name: 'ip sets',
      driftKind: 'policy',
      readActual: async () => [],
      add: async (items) => void calls.push(`add ${items.map((i) => i.Id).join(',')}`),
      remove: async (items) => void calls.push(`remove ${items.map((i) => i.Id).join(',')}`),
      update: async (pairs) => void calls.push(`update ${pairs.map((p) => `${p.from.Values}->${p.to.Values}`).join(',')}`),
      actualKey: (a) => a.Id,
      desiredKey: (d) => d.Id,
      same: (a, d) => a.Values === d.Values,
    };
    const plan = {
      add: [{ Id: 'n', Values: '3' }],
      remove: [{ Id: 'o', Values: '1' }],
      replace: [{ from: { Id: 's', Values: '1' }, to: { Id: 's', Values: '1,2' } }],
      unchanged: 0,
    };
    const w = await writePlan(driver, plan, { early: false, now: 0, refusals: new Refusals(new MapSink<string>(), new FakeClock(), { baseMs: 1, capMs: 1 }), cache: undefined });
    expect(calls).toEqual(['remove o', 'update 1->1,2', 'add n']);
    expect(w).toMatchObject({ added: 1, removed: 1, replaced: 1, calls: 3 });
  });
});

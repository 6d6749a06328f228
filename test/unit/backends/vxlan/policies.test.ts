// The vxlan RemoteSubnetRoute driver on the real HnsClient and the simulated HNS: one HcnModifyNetwork per
// peer event on a network handle kept open (no open/query/close), a refused policy split out of its
// batch, and a missing network reported as such (HCN_E_NETWORK_NOT_FOUND, hcsshim hcn/hcnerrors.go).
import { describe, expect, it } from '@jest/globals';
import { Reconciler } from '../../../../src/reconcile/reconciler.js';
import { MapSink } from '../../../support/refusal-sink.js';
import { remoteSubnetRouteDriver, remoteSubnetRouteFor, type RemoteSubnetRoutePolicy } from '../../../../src/backends/vxlan/policies.js';
import { overlayNetworkFor } from '../../../../src/backends/vxlan/backend.js';
import { SimulatedDataplane } from '../../../../src/simulator/model.js';
import { HnsClient } from '../../../../src/hns/client.js';
import { HRESULT, isHnsRefusal, isNetworkGone, hnsError } from '../../../../src/hns/errors.js';
import { SimulatedHnsTransport } from '../../../../src/simulator/hns.js';
import { vxlanPeer } from '../../../support/lease-updates.js';
import { FakeClock, flush } from '../../../support/fake-clock.js';
import { editState, removeNetwork, removePolicy } from '../../../support/sim-dataplane.js';
import { Metrics } from '../../../../src/basics/metrics.js';
import { logSink } from '../../../support/log-sink.js';
import { ItemSet } from '../../../support/desired-set.js';

const peer = vxlanPeer;
/** Peer n's route policy, a peer of its own named by its key (the prefix). */
const alone = (n: number) => [peer(n).subnet, [remoteSubnetRouteFor(peer(n))]] as const;

describe('overlayNetworkFor: the VXLAN port', () => {
  const cfg = (port: number) => ({ type: 'vxlan' as const, name: 'flannel.4096', vni: 4096, port, macPrefix: '0E-2A', legacyRemoteEndpoints: false });
  const vxlanPort = (port: number) => overlayNetworkFor(cfg(port), '10.244.100.0/24', 'Ethernet').Policies!.filter((p) => p.Type === 'VxlanPort');

  it('4789, the port HNS encapsulates on by default: no VxlanPort policy (as OVN-Kubernetes overlay_windows.go)', () => {
    expect(vxlanPort(4789)).toEqual([]);
  });

  it('any other port: {"Type": "VxlanPort", "Settings": {"Port": <port>}} (hcsshim hcnpolicy.go VxlanPortPolicySetting)', () => {
    expect(vxlanPort(8472)).toEqual([{ Type: 'VxlanPort', Settings: { Port: 8472 } }]);
  });
});

async function setup() {
  const dp = new SimulatedDataplane();
  const hns = new HnsClient(new SimulatedHnsTransport(dp));
  const net = await hns.createNetwork(
    overlayNetworkFor({ type: 'vxlan', name: 'flannel.4096', vni: 4096, port: 4789, macPrefix: '0E-2A', legacyRemoteEndpoints: false }, '10.244.100.0/24', ''),
  );
  const driver = remoteSubnetRouteDriver(hns, net.ID!, 200, 'flannel.4096');
  const clock = new FakeClock();
  const items = new ItemSet<RemoteSubnetRoutePolicy>((d) => driver.desiredKey(d));
  const r = new Reconciler({ sink: new MapSink(), desired: items.store, driver, clock, resyncMs: 10_000 });
  const calls = () => Object.fromEntries([...dp.calls].filter(([op]) => op.startsWith('Hcn')));
  dp.calls.clear();
  const prefixes = () =>
    (dp.getNetwork(net.ID!)?.Policies ?? [])
      .filter((p) => p.Type === 'RemoteSubnetRoute')
      .map((p) => String(p.Settings?.['DestinationPrefix']))
      .sort();
  return { dp, hns, net, r, clock, calls, prefixes, items, driver };
}

describe('vxlan RemoteSubnetRoute driver', () => {
  it('a peer event costs one HcnModifyNetwork: the handle stays open between writes and closes after each full pass', async () => {
    const { dp, r, calls, prefixes, items, clock } = await setup();
    items.updatePeers([alone(1)]);
    items.markListed();
    const ac = new AbortController();
    const done = r.run(ac.signal);
    await flush();
    expect(prefixes()).toEqual(['10.244.1.0/24']);
    expect(dp.openHandles).toBe(0);
    dp.calls.clear();
    for (const n of [2, 3, 4]) {
      items.updatePeers([alone(n)]);
      await flush();
    }
    items.updatePeers([[peer(1).subnet, undefined]]);
    await flush();
    expect(prefixes()).toEqual(['10.244.2.0/24', '10.244.3.0/24', '10.244.4.0/24']);
    expect(calls()).toEqual({ HcnOpenNetwork: 1, HcnModifyNetwork: 4 });
    expect(dp.openHandles).toBe(1);
    await clock.advance(10_000); // a resync: reads, finds nothing to do, closes the kept handle
    expect(dp.openHandles).toBe(0);
    ac.abort();
    await done;
  });

  it('a batch Remove naming a policy already gone is split by the reconciler alone: logged writes = HNS calls = the metric', async () => {
    // HNS applies a multi-policy HcnModifyNetwork as one request (hcsshim hcn/hcnnetwork.go modifyNetwork),
    // so HCN_E_POLICY_NOT_FOUND for one policy removes none; the client makes only the call asked of it.
    const dp = new SimulatedDataplane();
    const metrics = new Metrics();
    const hns = new HnsClient(new SimulatedHnsTransport(dp), { metrics });
    const net = await hns.createNetwork(
      overlayNetworkFor({ type: 'vxlan', name: 'flannel.4096', vni: 4096, port: 4789, macPrefix: '0E-2A', legacyRemoteEndpoints: false }, '10.244.100.0/24', ''),
    );
    const driver = remoteSubnetRouteDriver(hns, net.ID!, 200, 'flannel.4096');
    const items = new ItemSet<RemoteSubnetRoutePolicy>((d) => driver.desiredKey(d));
    const { log, entries } = logSink();
    const r = new Reconciler({ sink: new MapSink(), desired: items.store, driver, clock: new FakeClock(), log, metrics });
    items.updatePeers([1, 2, 3, 4].map(alone));
    items.markListed();
    expect(await r.pass()).toMatchObject({ ok: true, added: 4 });
    expect(removePolicy(dp, 'flannel.4096', (p) => p.Settings?.['DestinationPrefix'] === '10.244.2.0/24')).toBe(1);
    const callsMetric = async () => Number(/^flannel_dataplane_calls_total\{op="hns\.removeNetworkPolicies"\} (\d+)$/m.exec(await metrics.render())?.[1] ?? 0);
    dp.calls.clear();
    entries.length = 0;
    items.updatePeers([1, 2, 3, 4].map((n) => [peer(n).subnet, undefined]));
    expect(await r.pass()).toMatchObject({ ok: true, removed: 4 });
    const pass = entries.find((e) => e.message === 'reconcile pass')!;
    expect(pass.writes).toBe(dp.calls.get('HcnModifyNetwork'));
    expect(await callsMetric()).toBe(dp.calls.get('HcnModifyNetwork'));
    expect(dp.calls.get('HcnModifyNetwork')).toBeGreaterThan(1); // the batch, then its halves
    expect((dp.getNetwork(net.ID!)?.Policies ?? []).filter((p) => p.Type === 'RemoteSubnetRoute')).toEqual([]);
  });

  it('HNS refusing one policy of a 200-policy batch leaves only that one out', async () => {
    const { dp, r, prefixes, items } = await setup();
    editState(dp, (s) => void (s.faults = [{ op: 'HcnModifyNetwork', match: '"10.244.137.0/24"', hresult: '0x803B002F', remaining: -1 }]));
    items.updatePeers(Array.from({ length: 200 }, (_, i) => alone(i + 1)));
    items.markListed();
    const res = await r.pass();
    expect(res).toMatchObject({ ok: true, added: 199, refused: 1 });
    expect(prefixes()).toHaveLength(199);
    expect(prefixes()).not.toContain('10.244.137.0/24');
    // One call for the batch, then two per halving down to the refused policy: at most 1 + 2 * ceil(log2(200)).
    expect(dp.calls.get('HcnModifyNetwork')).toBeLessThanOrEqual(1 + 2 * 8);
    // One open for the read, one for all the writes: a refusal does not make the handle suspect.
    expect(dp.calls.get('HcnOpenNetwork')).toBe(2);
    expect(dp.openHandles).toBe(0);
  });

  it('a deleted network: the read says it is gone, and so does a write on the kept handle', async () => {
    const { dp, hns, net, r, items, driver } = await setup();
    items.markListed();
    await r.pass();
    await hns.addNetworkPolicies(net.ID!, [remoteSubnetRouteFor(peer(9))], { keepOpen: true });
    removeNetwork(dp, 'flannel.4096');
    const write = await hns.addNetworkPolicies(net.ID!, [remoteSubnetRouteFor(peer(1))], { keepOpen: true }).catch((e: unknown) => e);
    expect(isNetworkGone(write)).toBe(true);
    const removal = await hns.removeNetworkPolicies(net.ID!, [remoteSubnetRouteFor(peer(1))]).catch((e: unknown) => e);
    expect(isNetworkGone(removal)).toBe(true);
    r.rebind(driver); // as after a rebuild: the next pass reads
    expect(await r.pass()).toMatchObject({ ok: false, gone: true, error: expect.objectContaining({ code: 'FLANNEL_ERR_NETWORK_GONE' }) });
    expect(dp.openHandles).toBe(0);
  });
});

describe('HNS error classes', () => {
  it.each([
    [HRESULT.HCN_E_ADDR_INVALID_OR_RESERVED, true, false],
    [HRESULT.HCN_E_INVALID_POLICY, true, false],
    [HRESULT.E_INVALIDARG, true, false],
    [HRESULT.HCN_E_INVALID_IP, true, false],
    [HRESULT.E_FAIL, false, false],
    [HRESULT.HCN_E_MANAGER_STOPPED, false, false],
    [HRESULT.HCN_E_POLICY_ALREADY_EXISTS, false, false],
    [HRESULT.E_NOT_FOUND, false, false],
    [HRESULT.HCN_E_NETWORK_NOT_FOUND, false, true],
  ])('0x%s: refusal %s, network gone %s', (hr, refusal, gone) => {
    const err = hnsError('HcnModifyNetwork', hr);
    expect(isHnsRefusal(err)).toBe(refusal);
    expect(isNetworkGone(err)).toBe(gone);
  });

  it('v1 errors without an HRESULT: "network not found" text means the network is gone', () => {
    expect(isNetworkGone(hnsError('HNSCall GET /networks/x', undefined, 'Network x not found'))).toBe(true);
    expect(isNetworkGone(hnsError('HNSCall GET /endpoints/x', undefined, 'Endpoint x not found'))).toBe(false);
    expect(isHnsRefusal(new Error('x'))).toBe(false);
  });
});

// HNS and route calls failing and hanging: the reconcile loop retries with bounded backoff and converges.
import { afterEach, describe, expect, it } from '@jest/globals';
import { METRIC } from '../../src/metrics.js';
import { HRESULT } from '../../src/hns/errors.js';
import { expectConverged, FaultCluster, HOSTGW_NET_CONF, policies, seeded, VXLAN_NET_CONF, waitFor, wantPolicies } from './harness.js';

let c: FaultCluster;
afterEach(async () => {
  await c?.stop();
});

const modifyCalls = (a: { sim: { calls: Map<string, number> } }) => a.sim.calls.get('HcnModifyNetwork') ?? 0;

describe('HNS faults', () => {
  it('vxlan: HcnModifyNetwork fails three times in a row; retried with backoff, then exact', async () => {
    c = await new FaultCluster().start();
    c.addWindowsNode();
    const a = c.startAgent({ netConf: VXLAN_NET_CONF });
    await expectConverged(a, 'vxlan', []);
    a.sim.injections.failNext('HcnModifyNetwork', HRESULT.E_FAIL, 3);
    for (const n of [1, 2, 3]) c.addLinux(n, 'vxlan');
    await expectConverged(a, 'vxlan', [1, 2, 3]);
    expect(a.agent.metrics.get(METRIC.applyPasses, { result: 'error' })).toBeGreaterThanOrEqual(3);
    // Each failed attempt is one call: the policies are added in one batch once HNS answers again.
    expect(modifyCalls(a)).toBeLessThanOrEqual(1 /* HostRoute */ + 3 + 1 + 1);
  });

  it('host-gw: half of all route calls fail while peers churn; exact once the failures stop', async () => {
    c = await new FaultCluster().start();
    for (const n of [1, 2, 3, 4, 5, 6]) c.addLinux(n, 'host-gw');
    c.addWindowsNode();
    const a = c.startAgent({ netConf: HOSTGW_NET_CONF, random: seeded(7) });
    await expectConverged(a, 'host-gw', [1, 2, 3, 4, 5, 6]);
    a.sim.injections.failRate(0.5, 1168, /IpForwardEntry2|GetIpForwardTable2/);
    for (let i = 0; i < 6; i++) {
      c.api.deleteNode(`linux-${i + 1}`);
      c.addLinux(20 + i, 'host-gw');
      await new Promise((r) => setTimeout(r, 60));
    }
    await waitFor(() => a.agent.metrics.get(METRIC.applyPasses, { result: 'error' }) >= 2, 'failed passes');
    a.sim.injections.failRate(0, 0);
    await expectConverged(a, 'host-gw', [20, 21, 22, 23, 24, 25]);
  });

  it('vxlan: a hung HcnModifyNetwork (4 s) while peers change; nothing is lost or duplicated after it returns', async () => {
    c = await new FaultCluster().start();
    c.addLinux(1, 'vxlan');
    c.addWindowsNode();
    const a = c.startAgent({ netConf: VXLAN_NET_CONF });
    await expectConverged(a, 'vxlan', [1]);
    a.sim.injections.stall('HcnModifyNetwork', 4000, 1);
    const before = modifyCalls(a);
    c.addLinux(2, 'vxlan');
    await waitFor(() => modifyCalls(a) > before, 'the hung call');
    // While HNS hangs the cluster keeps changing.
    c.addLinux(3, 'vxlan');
    c.api.deleteNode('linux-1');
    c.addLinux(4, 'vxlan');
    await new Promise((r) => setTimeout(r, 500));
    expect(policies(a)).toEqual(['10.244.1.0/24 10.0.1.1 4096 0e:2a:0a:00:01:01']); // still hung
    expect(a.agent.phase).toBe('running');
    await expectConverged(a, 'vxlan', [2, 3, 4]);
  });

  it('vxlan: an HcnModifyNetwork hung (3 s) past --hns-call-timeout=1 times out; the retry converges while it hangs; its late landing is reconciled away', async () => {
    c = await new FaultCluster().start();
    c.addLinux(1, 'vxlan');
    c.addWindowsNode();
    const a = c.startAgent({ netConf: VXLAN_NET_CONF, extraArgs: ['--hns-call-timeout=1'] });
    await expectConverged(a, 'vxlan', [1]);
    const errorsBefore = a.agent.metrics.get(METRIC.dataplaneErrors, { op: 'hns.addNetworkPolicies' });
    a.sim.injections.stall('HcnModifyNetwork', 3000, 1);
    const before = modifyCalls(a);
    const t0 = Date.now();
    c.addLinux(2, 'vxlan'); // its Add hangs
    await waitFor(() => modifyCalls(a) > before, 'the hung call');
    // The agent does not wait for HNS: the call times out after 1 s and the retried pass adds the policy.
    await waitFor(() => JSON.stringify(policies(a)) === JSON.stringify(wantPolicies([1, 2])), 'linux-2 programmed while the first call still hangs', 2500);
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(a.agent.metrics.get(METRIC.dataplaneErrors, { op: 'hns.addNetworkPolicies' })).toBe(errorsBefore + 1);
    expect(a.agent.metrics.get(METRIC.applyPasses, { result: 'error' })).toBeGreaterThanOrEqual(1);
    expect(a.agent.phase).toBe('running');
    // Still inside the hang: linux-2 goes away again and linux-3 comes.
    c.api.deleteNode('linux-2');
    c.addLinux(3, 'vxlan');
    await waitFor(() => JSON.stringify(policies(a)) === JSON.stringify(wantPolicies([1, 3])), 'linux-2 removed, linux-3 added', 2500);
    expect(Date.now() - t0).toBeLessThan(3000);
    // At 3 s the hung Add of linux-2 lands after all (seen below); the agent re-reads HNS and removes the stale policy.
    let staleSeen = false;
    const watch = setInterval(() => (staleSeen ||= policies(a).some((p) => p.startsWith('10.244.2.0/24'))), 5);
    await new Promise((r) => setTimeout(r, Math.max(0, 3300 - (Date.now() - t0))));
    clearInterval(watch);
    expect(staleSeen).toBe(true);
    await expectConverged(a, 'vxlan', [1, 3]);
    expect(a.sim.openHandles).toBe(0);
  });

  it('a failing HNS during registration stops the agent with a coded error; a restart on the same state converges', async () => {
    c = await new FaultCluster().start();
    c.addLinux(1, 'vxlan');
    c.addWindowsNode();
    const first = c.startAgent({ netConf: VXLAN_NET_CONF, before: (sim) => sim.injections.failNext(/HcnQueryNetworkProperties/, HRESULT.E_FAIL, 50) });
    const err = await first.outcome;
    expect(err).toMatchObject({ code: 'FLANNEL_ERR_HNS_CALL' });
    expect(first.agent.isReady).toBe(false);
    await first.stop();
    const second = c.startAgent({ netConf: VXLAN_NET_CONF });
    await expectConverged(second, 'vxlan', [1]);
  });
});

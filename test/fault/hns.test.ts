// HNS and route calls failing and hanging: the reconcile loop retries with bounded backoff and converges.
import { afterEach, describe, expect, it } from '@jest/globals';
import { METRIC } from '../../src/health/metrics.js';
import { HRESULT } from '../../src/hns/errors.js';
import { expectConverged, FaultCluster, HOSTGW_NET_CONF, policies, seeded, VXLAN_NET_CONF, waitFor } from './harness.js';

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
    a.sim.failNext('HcnModifyNetwork', HRESULT.E_FAIL, 3);
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
    a.sim.failRate(0.5, 1168, /IpForwardEntry2|GetIpForwardTable2/);
    for (let i = 0; i < 6; i++) {
      c.api.deleteNode(`linux-${i + 1}`);
      c.addLinux(20 + i, 'host-gw');
      await new Promise((r) => setTimeout(r, 60));
    }
    await waitFor(() => a.agent.metrics.get(METRIC.applyPasses, { result: 'error' }) >= 2, 'failed passes');
    a.sim.failRate(0, 0);
    await expectConverged(a, 'host-gw', [20, 21, 22, 23, 24, 25]);
  });

  it('vxlan: a hung HcnModifyNetwork (4 s) while peers change; nothing is lost or duplicated after it returns', async () => {
    c = await new FaultCluster().start();
    c.addLinux(1, 'vxlan');
    c.addWindowsNode();
    const a = c.startAgent({ netConf: VXLAN_NET_CONF });
    await expectConverged(a, 'vxlan', [1]);
    a.sim.stall('HcnModifyNetwork', 4000, 1);
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

  it('a failing HNS during registration stops the agent with a coded error; a restart on the same state converges', async () => {
    c = await new FaultCluster().start();
    c.addLinux(1, 'vxlan');
    c.addWindowsNode();
    const first = c.startAgent({ netConf: VXLAN_NET_CONF, before: (sim) => sim.failNext(/HcnQueryNetworkProperties/, HRESULT.E_FAIL, 50) });
    const err = await first.outcome;
    expect(err).toMatchObject({ code: 'FLANNEL_ERR_HNS_CALL' });
    expect(first.agent.isReady).toBe(false);
    await first.stop();
    const second = c.startAgent({ netConf: VXLAN_NET_CONF });
    await expectConverged(second, 'vxlan', [1]);
  });
});

// HNS and route calls failing and hanging: the reconcile loop retries with bounded backoff and converges.
import { afterEach, describe, expect, it } from '@jest/globals';
import { METRIC } from '../../src/basics/metrics.js';
import { HRESULT } from '../../src/hns/errors.js';
import { PEERS, readMetric, waitForMetric } from '../support/agent-signals.js';
import { NEWEST_PROFILE, PROFILES } from '../support/hns-profiles.js';
import { expectConverged, FaultCluster, HELD, HOSTGW_NET_CONF, policies, seeded, VXLAN_NET_CONF, waitFor, waitForPasses, wantPolicies } from './harness.js';

let c: FaultCluster;
afterEach(async () => {
  await c?.stop();
});

const modifyCalls = (a: { sim: { calls: Map<string, number> } }) => a.sim.calls.get('HcnModifyNetwork') ?? 0;

// On each HNS profile (../support/hns-profiles.ts): the vxlan cases fail and hang HcnModifyNetwork, the call
// that adds and removes RemoteSubnetRoute policies, which hcsshim gates on RemoteSubnetVersion (hcn/hcnglobals.go,
// 9.2; every profile has it), and registration's network query. The host-gw case's faults are route calls
// (IP Helper), which no HNS version gates, and it is the slow one: it runs on the newest profile only.
describe.each(PROFILES)('HNS faults on $os (HNS $hns)', ({ version: hnsVersion }) => {
  it('vxlan: HcnModifyNetwork fails three times in a row; retried with backoff, then exact', async () => {
    c = await new FaultCluster().start();
    c.addWindowsNode();
    const a = c.startAgent({ netConf: VXLAN_NET_CONF, hnsVersion });
    await expectConverged(a, 'vxlan', []);
    a.sim.injections.failNext('HcnModifyNetwork', HRESULT.E_FAIL, 3);
    for (const n of [1, 2, 3]) c.addLinux(n, 'vxlan');
    await expectConverged(a, 'vxlan', [1, 2, 3]);
    expect(await readMetric(a.agent.metrics, METRIC.applyPasses, { result: 'error' })).toBeGreaterThanOrEqual(3);
    // Each failed attempt is one call: the policies are added in one batch once HNS answers again.
    expect(modifyCalls(a)).toBeLessThanOrEqual(1 /* HostRoute */ + 3 + 1 + 1);
  });

  it('vxlan: a hung HcnModifyNetwork (until released) while peers change; nothing is lost or duplicated after it returns', async () => {
    c = await new FaultCluster().start();
    c.addLinux(1, 'vxlan');
    c.addWindowsNode();
    const a = c.startAgent({ netConf: VXLAN_NET_CONF, hnsVersion });
    await expectConverged(a, 'vxlan', [1]);
    a.sim.injections.stall('HcnModifyNetwork', HELD, 1);
    const before = modifyCalls(a);
    c.addLinux(2, 'vxlan');
    await waitFor(() => modifyCalls(a) > before, 'the hung call');
    // While HNS hangs the cluster keeps changing; the agent takes it in (2 -> 1 -> 2 -> 3 peers: only the
    // last step makes three).
    c.api.deleteNode('linux-1');
    c.addLinux(3, 'vxlan');
    c.addLinux(4, 'vxlan');
    await waitForMetric(a.metrics, PEERS, 3, 'the agent saw every change while HNS hangs');
    expect(a.state.sleeping).toBe(1); // the call has not returned
    expect(policies(a)).toEqual(['10.244.1.0/24 10.0.1.1 4096 0e:2a:0a:00:01:01']); // still hung
    expect(a.agent.phase).toBe('running');
    a.state.wake();
    await expectConverged(a, 'vxlan', [2, 3, 4]);
  });

  it('vxlan: an HcnModifyNetwork hung past --hns-call-timeout=1 times out; the retry converges while it hangs; its late landing is reconciled away', async () => {
    c = await new FaultCluster().start();
    c.addLinux(1, 'vxlan');
    c.addWindowsNode();
    const a = c.startAgent({ netConf: VXLAN_NET_CONF, extraArgs: ['--hns-call-timeout=1'], hnsVersion });
    await expectConverged(a, 'vxlan', [1]);
    const errorsBefore = await readMetric(a.agent.metrics, METRIC.dataplaneErrors, { op: 'hns.addNetworkPolicies' });
    a.sim.injections.stall('HcnModifyNetwork', HELD, 1);
    const before = modifyCalls(a);
    c.addLinux(2, 'vxlan'); // its Add hangs until the test wakes it
    await waitFor(() => modifyCalls(a) > before, 'the hung call');
    // The agent does not wait for HNS: the call times out after 1 s and the retried pass adds the policy.
    await waitFor(() => JSON.stringify(policies(a)) === JSON.stringify(wantPolicies([1, 2])), 'linux-2 programmed while the first call still hangs');
    expect(a.state.sleeping).toBe(1); // the first call still hangs
    expect(await readMetric(a.agent.metrics, METRIC.dataplaneErrors, { op: 'hns.addNetworkPolicies' })).toBe(errorsBefore + 1);
    expect(await readMetric(a.agent.metrics, METRIC.applyPasses, { result: 'error' })).toBeGreaterThanOrEqual(1);
    expect(a.agent.phase).toBe('running');
    // Still inside the hang: linux-2 goes away again and linux-3 comes.
    c.api.deleteNode('linux-2');
    c.addLinux(3, 'vxlan');
    await waitFor(() => JSON.stringify(policies(a)) === JSON.stringify(wantPolicies([1, 3])), 'linux-2 removed, linux-3 added');
    expect(a.state.sleeping).toBe(1);
    // Now the hung Add of linux-2 lands after all (seen in the state file); the agent re-reads HNS and removes the stale policy.
    let staleSeen = false;
    a.state.onWrite = (s) => (staleSeen ||= s.networks.some((n) => (n.Policies ?? []).some((p) => p.Type === 'RemoteSubnetRoute' && JSON.stringify(p).includes('10.244.2.0/24'))));
    a.state.wake();
    await waitFor(() => staleSeen, 'the late Add of linux-2 landing');
    await expectConverged(a, 'vxlan', [1, 3]);
    expect(a.sim.openHandles).toBe(0);
  });

  it('a failing HNS during registration stops the agent with a coded error; a restart on the same state converges', async () => {
    c = await new FaultCluster().start();
    c.addLinux(1, 'vxlan');
    c.addWindowsNode();
    const first = c.startAgent({ netConf: VXLAN_NET_CONF, hnsVersion, before: (sim) => sim.injections.failNext(/HcnQueryNetworkProperties/, HRESULT.E_FAIL, 50) });
    const err = await first.outcome;
    expect(err).toMatchObject({ code: 'FLANNEL_ERR_HNS_CALL' });
    expect(first.agent.isReady).toBe(false);
    await first.stop();
    const second = c.startAgent({ netConf: VXLAN_NET_CONF, hnsVersion });
    await expectConverged(second, 'vxlan', [1]);
  });
});

describe(`route faults on ${NEWEST_PROFILE.os} (HNS ${NEWEST_PROFILE.hns})`, () => {
  it('host-gw: half of all route calls fail while peers churn; exact once the failures stop', async () => {
    c = await new FaultCluster().start();
    for (const n of [1, 2, 3, 4, 5, 6]) c.addLinux(n, 'host-gw');
    c.addWindowsNode();
    const a = c.startAgent({ netConf: HOSTGW_NET_CONF, random: seeded(7), hnsVersion: NEWEST_PROFILE.version });
    await expectConverged(a, 'host-gw', [1, 2, 3, 4, 5, 6]);
    a.sim.injections.failRate(0.5, 1168, /IpForwardEntry2|GetIpForwardTable2/);
    for (let i = 0; i < 6; i++) {
      c.api.deleteNode(`linux-${i + 1}`);
      c.addLinux(20 + i, 'host-gw');
      await waitForPasses(a, 1, `a pass (ok or failed) after churn step ${i + 1}`);
    }
    await waitFor(async () => (await readMetric(a.agent.metrics, METRIC.applyPasses, { result: 'error' })) >= 2, 'failed passes');
    a.sim.injections.failRate(0, 0);
    await expectConverged(a, 'host-gw', [20, 21, 22, 23, 24, 25]);
  });
});

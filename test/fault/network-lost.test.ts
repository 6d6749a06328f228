// The lost-network case beyond a deleted network: the HNS network renamed under the agent (HNS keeps
// its ID, but the CNI plugins find their network by name: hcsshim hcn.GetNetworkByName in win-overlay
// and win-bridge, so pods can no longer be wired), and the simulated node's state file deleted (its HNS
// state lost, as after an HNS restart without persisted networks). Both are noticed on the next pass and
// handled as a deleted network: recreated under its name with the same subnet, every peer reprogrammed.
import { afterEach, describe, expect, it } from '@jest/globals';
import { existsSync, rmSync } from 'node:fs';
import { METRIC } from '../../src/basics/metrics.js';
import { expectConverged, FaultCluster, HOSTGW_NET_CONF, VXLAN_NET_CONF, waitFor, WIN_CIDR } from './harness.js';
import { readMetric } from '../support/agent-signals.js';

let c: FaultCluster;
afterEach(async () => {
  await c?.stop();
});

const rebuilt = (a: { agent: { metrics: Parameters<typeof readMetric>[0] } }) => readMetric(a.agent.metrics, METRIC.networkRebuilds, { result: 'ok' });

describe.each<['vxlan' | 'host-gw', string, typeof VXLAN_NET_CONF | typeof HOSTGW_NET_CONF]>([
  ['vxlan', 'flannel.4096', VXLAN_NET_CONF],
  ['host-gw', 'cbr0', HOSTGW_NET_CONF],
])('%s', (backend, name, netConf) => {
  it(`the HNS network renamed under the agent: noticed, recreated as ${name}, the renamed one gone`, async () => {
    c = await new FaultCluster().start();
    c.addLinux(1, backend);
    c.addWindowsNode();
    const a = c.startAgent({ netConf });
    await expectConverged(a, backend, [1]);
    const before = await rebuilt(a);
    a.sim.store.update((s) => {
      const net = s.networks.find((n) => n.Name === name)!;
      net.Name = 'renamed-by-hand';
    });
    await waitFor(async () => (await rebuilt(a)) > before || undefined, 'the network rebuilt', 20_000);
    await expectConverged(a, backend, [1]);
    const nets = a.sim.snapshot().networks;
    expect(nets.filter((n) => n.Name === name)).toHaveLength(1);
    expect(nets.find((n) => n.Name === 'renamed-by-hand')).toBeUndefined();
    expect(nets.find((n) => n.Name === name)!.Ipams?.[0]?.Subnets?.[0]?.IpAddressPrefix).toBe(WIN_CIDR);
  });

  it('the simulated node state file deleted: its networks are lost, noticed, rebuilt and written again', async () => {
    c = await new FaultCluster().start();
    c.addLinux(1, backend);
    c.addWindowsNode();
    const a = c.startAgent({ netConf });
    await expectConverged(a, backend, [1]);
    const before = await rebuilt(a);
    expect(existsSync(a.statePath)).toBe(true);
    rmSync(a.statePath);
    await waitFor(async () => (await rebuilt(a)) > before || undefined, 'the network rebuilt', 20_000);
    await expectConverged(a, backend, [1]);
    await waitFor(() => existsSync(a.statePath) || undefined, 'the state file written again');
  });
});

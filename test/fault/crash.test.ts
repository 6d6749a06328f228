// The process killed between HNS writes: a new agent on the same state file converges with no
// duplicate policies or routes (and keeps the network it had).
import { afterEach, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { expectConverged, FaultCluster, HOSTGW_NET_CONF, policies, routes, VXLAN_NET_CONF, waitFor, WIN_CIDR } from './harness.js';
import { POLICY_BATCH } from '../../src/backends/vxlan/policies.js';
import { DEFAULT_LIST_PAGE_SIZE } from '../../src/subnet/kube/manager.js';

let c: FaultCluster;
afterEach(async () => {
  await c?.stop();
});

type State = { networks: { ID?: string; Policies?: { Type: string }[] }[]; routes: { DestinationPrefix: string }[] };
const onDisk = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as State;
const diskPolicies = (s: State) => s.networks.flatMap((n) => n.Policies ?? []).filter((p) => p.Type === 'RemoteSubnetRoute').length;
const diskRoutes = (s: State) => s.routes.filter((r) => r.DestinationPrefix.startsWith('10.244.') && r.DestinationPrefix !== WIN_CIDR).length;

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('killed between HNS writes', () => {
  it('vxlan: killed after the first of two policy writes landed', async () => {
    c = await new FaultCluster().start();
    const peers = range(1, POLICY_BATCH + 6).filter((n) => `10.244.${n}.0/24` !== WIN_CIDR);
    for (const n of peers) c.addLinux(n, 'vxlan');
    c.addWindowsNode();
    const first = c.startAgent({ netConf: VXLAN_NET_CONF });
    first.state.killAfter = (s) => diskPolicies(s) > 0; // dies right after the first batch
    await waitFor(() => first.state.dead, 'the kill');
    await first.kill();
    const disk = onDisk(first.statePath);
    // The first write carries the first list page's peers (the start is pipelined), at most one batch.
    expect(diskPolicies(disk)).toBe(Math.min(POLICY_BATCH, DEFAULT_LIST_PAGE_SIZE));
    const id = disk.networks[0].ID;

    c.api.deleteNode('linux-3'); // the cluster moves on while the node restarts
    const second = c.startAgent({ netConf: VXLAN_NET_CONF });
    await expectConverged(
      second,
      'vxlan',
      peers.filter((n) => n !== 3),
    );
    expect(second.sim.snapshot().networks[0].ID).toBe(id);
  });

  for (const k of [1, 5]) {
    it(`host-gw: killed after ${k} of 12 route writes`, async () => {
      c = await new FaultCluster().start();
      const peers = range(1, 12);
      for (const n of peers) c.addLinux(n, 'host-gw');
      c.addWindowsNode();
      const first = c.startAgent({ netConf: HOSTGW_NET_CONF });
      first.state.killAfter = (s) => diskRoutes(s) >= k;
      await waitFor(() => first.state.dead, 'the kill');
      await first.kill();
      expect(diskRoutes(onDisk(first.statePath))).toBe(k);

      const second = c.startAgent({ netConf: HOSTGW_NET_CONF });
      await expectConverged(second, 'host-gw', peers);
    });
  }

  it('vxlan: killed while an HcnModifyNetwork hangs (the pending call never lands); restart converges', async () => {
    c = await new FaultCluster().start();
    c.addLinux(1, 'vxlan');
    c.addWindowsNode();
    const first = c.startAgent({ netConf: VXLAN_NET_CONF });
    await expectConverged(first, 'vxlan', [1]);
    first.sim.injections.stall('HcnModifyNetwork', 60_000, 1);
    const before = first.sim.calls.get('HcnModifyNetwork') ?? 0;
    c.addLinux(2, 'vxlan');
    c.addLinux(3, 'vxlan');
    await waitFor(() => (first.sim.calls.get('HcnModifyNetwork') ?? 0) > before, 'the hung call');
    await first.kill();
    expect(policies(first)).toHaveLength(1); // the hung call never landed

    const second = c.startAgent({ netConf: VXLAN_NET_CONF });
    await expectConverged(second, 'vxlan', [1, 2, 3]);
  });

  it('host-gw: killed while route writes hang; a restart while some peers were removed sweeps them', async () => {
    c = await new FaultCluster().start();
    for (const n of range(1, 4)) c.addLinux(n, 'host-gw');
    c.addWindowsNode();
    const first = c.startAgent({ netConf: HOSTGW_NET_CONF });
    await expectConverged(first, 'host-gw', range(1, 4));
    first.sim.injections.stall('DeleteIpForwardEntry2', 60_000, 10);
    c.api.deleteNode('linux-1');
    c.api.deleteNode('linux-2');
    await waitFor(() => (first.sim.calls.get('DeleteIpForwardEntry2') ?? 0) > 0, 'the hung delete');
    await first.kill();
    expect(routes(first)).toHaveLength(4);

    c.addLinux(9, 'host-gw');
    const second = c.startAgent({ netConf: HOSTGW_NET_CONF });
    await expectConverged(second, 'host-gw', [3, 4, 9]);
  });
});

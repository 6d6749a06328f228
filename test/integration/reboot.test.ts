// Reboot awareness on the simulated dataplane. A restart within the same boot reuses the HNS network
// (never deletes it); a reboot (the injected boot time moves, and the non-persistent Overlay network is
// gone, as Windows drops Flags=8 networks at boot) recreates it with its peers and the source VIP. The
// start kind is recorded in boot.json beside subnet.env.
import { afterEach, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent } from '../../src/agent.js';
import { SimulatedDataplane } from '../../src/simulator/model.js';
import { HCN_FLAG_NON_PERSISTENT } from '../../src/hns/schema.js';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { HOSTGW_NET_CONF, TestCluster, VXLAN_NET_CONF, waitFor, WIN_IP } from '../support/cluster.js';
import { removeNetwork } from '../support/sim-dataplane.js';

const WIN = 'win-1';
const T0 = Date.parse('2025-01-01T00:00:00Z');

let cluster: TestCluster | undefined;
let stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops) await s();
  stops = [];
  await cluster?.stop();
  cluster = undefined;
});

interface Run {
  agent: Agent;
  sim: SimulatedDataplane;
  stop(): Promise<void>;
}

function paths(c: TestCluster) {
  const dir = join(c.dir, WIN);
  return { dir, netConf: join(dir, 'net-conf.json'), subnetFile: join(dir, 'run', 'flannel', 'subnet.env'), state: join(dir, 'dataplane.json') };
}

/** One agent process lifetime with an injected boot time; resolves once it is in sync with its peer. */
async function start(c: TestCluster, netConf: unknown, bootTimeMs: number): Promise<Run> {
  const p = paths(c);
  const a = c.startAgent({
    nodeName: WIN,
    ip: WIN_IP,
    netConf,
    ipMasq: false,
    bootTimeMs: () => bootTimeMs,
    extraArgs: [`--source-vip-file=${join(p.dir, 'run', 'flannel', 'sourcevip.json')}`],
  });
  stops.push(a.stop);
  const { agent, sim } = a;
  await waitFor(() => agent.phase === 'running', 'agent running');
  await waitFor(() => agent.network !== undefined && inSync(sim, netConf), 'peer programmed');
  return { agent, sim, stop: a.stop };
}

function inSync(sim: SimulatedDataplane, netConf: unknown): boolean {
  if (netConf === VXLAN_NET_CONF) return (sim.getNetworkByName('flannel.4096')?.Policies ?? []).some((p) => p.Type === 'RemoteSubnetRoute');
  return sim.listRoutes().some((r) => r.DestinationPrefix === '10.244.1.0/24');
}

/** What a Windows reboot does to HNS: non-persistent networks (and their endpoints) are gone. */
function reboot(statePath: string): string[] {
  const sim = new SimulatedDataplane({ statePath });
  const gone = sim.listNetworks().filter((n) => ((n.Flags ?? 0) & HCN_FLAG_NON_PERSISTENT) !== 0);
  for (const n of gone) removeNetwork(sim, n.ID!);
  return gone.map((n) => n.Name);
}

async function setup(backend: 'vxlan' | 'host-gw'): Promise<TestCluster> {
  const c = await new TestCluster().start();
  c.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: backend }));
  c.addWindowsNode(WIN, '10.244.100.0/24', WIN_IP);
  cluster = c;
  return c;
}

const creates = (sim: SimulatedDataplane) => sim.calls.get('HcnCreateNetwork') ?? 0;
const deletes = (sim: SimulatedDataplane) => (sim.calls.get('HcnDeleteNetwork') ?? 0) + (sim.calls.get('HNSCall DELETE /networks/{id}') ?? 0);

describe('reboot or restart', () => {
  it('vxlan: a restart reuses the network and the source VIP; a reboot recreates both', async () => {
    const c = await setup('vxlan');
    const p = paths(c);

    const first = await start(c, VXLAN_NET_CONF, T0);
    expect(first.agent.startKind).toBe('first-start');
    const net1 = first.sim.getNetworkByName('flannel.4096')!;
    expect(net1.Flags).toBe(HCN_FLAG_NON_PERSISTENT);
    const vip1 = first.agent.sourceVip!;
    expect(vip1.ip).toBe('10.244.100.2');
    const subnetEnv = readFileSync(p.subnetFile, 'utf8');
    await first.stop();

    // Service restart: uptime-derived boot time wanders a little (clock corrections).
    const second = await start(c, VXLAN_NET_CONF, T0 + 4_000);
    expect(second.agent.startKind).toBe('restart');
    expect(second.sim.getNetworkByName('flannel.4096')!.ID).toBe(net1.ID);
    expect(creates(second.sim)).toBe(0);
    expect(deletes(second.sim)).toBe(0);
    expect(second.agent.sourceVip).toEqual(vip1);
    expect(second.sim.calls.get('HcnCreateEndpoint') ?? 0).toBe(0);
    expect(JSON.parse(readFileSync(join(p.dir, 'run', 'flannel', 'boot.json'), 'utf8'))).toMatchObject({ bootTimeMs: T0, starts: 2 });
    await second.stop();

    expect(reboot(p.state)).toEqual(['flannel.4096']);
    const third = await start(c, VXLAN_NET_CONF, T0 + 3_600_000);
    expect(third.agent.startKind).toBe('reboot');
    const net3 = third.sim.getNetworkByName('flannel.4096')!;
    expect(net3.ID).not.toBe(net1.ID);
    expect(creates(third.sim)).toBe(1);
    expect(deletes(third.sim)).toBe(0);
    expect(third.agent.sourceVip!.ip).toBe(vip1.ip); // same address, new endpoint on the new network
    expect(third.agent.sourceVip!.endpointId).not.toBe(vip1.endpointId);
    expect(readFileSync(p.subnetFile, 'utf8')).toBe(subnetEnv);
    expect(JSON.parse(readFileSync(join(p.dir, 'run', 'flannel', 'boot.json'), 'utf8'))).toMatchObject({ bootTimeMs: T0 + 3_600_000, starts: 1 });
  });

  it('host-gw: the persistent L2Bridge network survives a reboot and is reused, never deleted', async () => {
    const c = await setup('host-gw');
    const p = paths(c);
    const first = await start(c, HOSTGW_NET_CONF, T0);
    const id = first.sim.getNetworkByName('cbr0')!.ID;
    await first.stop();
    expect(reboot(p.state)).toEqual([]);
    const second = await start(c, HOSTGW_NET_CONF, T0 + 3_600_000);
    expect(second.agent.startKind).toBe('reboot');
    expect(second.sim.getNetworkByName('cbr0')!.ID).toBe(id);
    expect(deletes(second.sim)).toBe(0);
    expect(second.sim.calls.get('HNSCall POST /networks/') ?? 0).toBe(0);
  });
});

// What a vxlan resync costs in HNS reads of the network: the reconciler's full pass reads the Overlay
// network (its RemoteSubnetRoute policies) and the network's HNS check (src/backends/route-network.ts
// watchHns) trusts that read instead of reading the network again; the check reads it itself only when no
// full pass did since its last check. A network lost between the two is still counted and rebuilt, by the
// pass's read or, after an HNS restart, by the rebuild that recreates it under a new ID.
import { afterEach, describe, expect, it } from '@jest/globals';
import { VxlanBackend } from '../../../../src/backends/vxlan/backend.js';
import type { BackendDeps, Network } from '../../../../src/backends/backend.js';
import { METRIC, Metrics } from '../../../../src/basics/metrics.js';
import { silentLogger } from '../../../../src/basics/log.js';
import { SimulatedDataplane } from '../../../../src/simulator/model.js';
import { simulatedSeams } from '../../../../src/simulator/node.js';
import type { Lease, LeaseAttrsSource, LeaseUpdateHandler, SubnetManager } from '../../../../src/subnet/lease.js';
import { parseNetConf } from '../../../../src/subnet/net-conf.js';
import type { NodeEvent, NodeEvents } from '../../../../src/node-events.js';
import { FakeClock, flush } from '../../../support/fake-clock.js';
import { readMetric } from '../../../support/agent-signals.js';
import { removeNetwork } from '../../../support/sim-dataplane.js';
import { storeUpdates, vxlanPeer, type OldLeaseUpdate } from '../../../support/lease-updates.js';

const RESYNC_MS = 10_000;
const OWN_SUBNET = '10.244.100.0/24';
const NODE_IP = '10.0.0.2';

const peer = vxlanPeer;

class Manager implements SubnetManager {
  readonly name = 'fake';
  private onUpdate: LeaseUpdateHandler = () => undefined;
  events: NodeEvent[] = [];
  emit(u: OldLeaseUpdate): void {
    for (const x of storeUpdates(u)) this.onUpdate(x);
  }
  nodeEvents(): NodeEvents {
    return { record: (e) => this.events.push(e) };
  }
  async acquireLease(attrsFor: LeaseAttrsSource): Promise<Lease> {
    return { key: 'win-1', subnet: OWN_SUBNET, ...(await attrsFor(OWN_SUBNET)) };
  }
  watchLeases(onUpdate: LeaseUpdateHandler, signal: AbortSignal): Promise<void> {
    this.onUpdate = onUpdate;
    return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  }
  completeLease(): Promise<void> {
    return Promise.resolve();
  }
  republishLease(): Promise<void> {
    return Promise.resolve();
  }
}

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  stop = undefined;
});

/** A vxlan network on the simulated node with two peers, its first full pass done `passAfterMs` after it began to run. */
async function start(passAfterMs = 0) {
  const clock = new FakeClock();
  const metrics = new Metrics();
  const sim = new SimulatedDataplane({ nodeIP: NODE_IP });
  const log = silentLogger();
  const seams = simulatedSeams(sim, { log, metrics, clock, hnsCallTimeoutMs: 0 });
  const extIface = (await seams.host.interfaces()).find((i) => i.ipv4 === NODE_IP)!;
  const manager = new Manager();
  const deps: BackendDeps = {
    netConf: parseNetConf(JSON.stringify({ Network: '10.244.0.0/16', Backend: { Type: 'vxlan', VNI: 4096 } })),
    subnetManager: manager,
    ...seams,
    extIface,
    publicIP: NODE_IP,
    log,
    metrics,
    clock,
    resyncMs: RESYNC_MS,
  };
  const ac = new AbortController();
  const network: Network = await new VxlanBackend(deps).registerNetwork(ac.signal);
  const done = network.run(ac.signal);
  stop = async () => {
    ac.abort();
    await done;
  };
  await clock.advance(passAfterMs);
  manager.emit({ kind: 'snapshot', leases: [peer(1), peer(2)] });
  await flush();
  expect(network.status()).toMatchObject({ inSync: true, peersProgrammed: 2 });
  const reads = () => readMetric(metrics, METRIC.dataplaneCalls, { op: 'hns.getNetwork' });
  const passes = () => readMetric(metrics, METRIC.applyPasses, { result: 'ok' });
  return { clock, metrics, sim, manager, network, reads, passes };
}

describe('vxlan: HNS reads of the network per resync', () => {
  it('each resync reads the network once: the full pass reads it and the HNS check trusts that read', async () => {
    const { clock, reads, passes } = await start();
    for (let i = 0; i < 3; i++) {
      const [readsBefore, passesBefore] = [await reads(), await passes()];
      await clock.advance(RESYNC_MS);
      expect((await passes()) - passesBefore).toBe(1); // the resync's full pass ran
      expect((await reads()) - readsBefore).toBe(1);
    }
  });

  it('a network deleted between two resyncs: found by the next pass, counted once as network drift, rebuilt with an Event', async () => {
    const { clock, metrics, sim, manager, network, reads } = await start();
    expect(removeNetwork(sim, 'flannel.4096')).toBe(true);
    await clock.advance(RESYNC_MS);
    await clock.advance(RESYNC_MS);
    expect(await readMetric(metrics, METRIC.networkRebuilds, { result: 'ok' })).toBe(1);
    expect(await readMetric(metrics, METRIC.driftRepairs, { kind: 'network' })).toBe(1);
    expect(manager.events.map((e) => e.reason)).toEqual(['FlannelNetworkRebuilt']);
    expect(network.status()).toMatchObject({ networkMissing: false, inSync: true, peersProgrammed: 2 });
    const before = await reads();
    await clock.advance(RESYNC_MS);
    expect((await reads()) - before).toBe(1);
  });

  it("HNS restarted, the HNS check first: it trusts the pass's read, asks for the rebuild, and the recreated network is counted", async () => {
    // The pass a second after the check's period began: the check's next run comes first.
    const { clock, metrics, sim, manager, network, reads } = await start(1_000);
    sim.restartHns();
    await clock.advance(RESYNC_MS - 1_000);
    expect(await readMetric(metrics, METRIC.hnsRestarts)).toBe(1);
    expect(await readMetric(metrics, METRIC.networkRebuilds, { result: 'ok' })).toBe(1);
    expect(await readMetric(metrics, METRIC.driftRepairs, { kind: 'network' })).toBe(1);
    expect(manager.events.map((e) => e.reason)).toEqual(['FlannelHNSRestarted']);
    expect(network.status()).toMatchObject({ networkMissing: false, inSync: true, peersProgrammed: 2 });
    await clock.advance(1_000); // the full pass after the rebuild is done; the next resync reads once again
    const before = await reads();
    await clock.advance(RESYNC_MS);
    expect((await reads()) - before).toBe(1);
  });

  it('HNS restarted, the pass first: it finds the network gone and rebuilds; the check then repairs after the restart', async () => {
    const { clock, metrics, sim, manager, network } = await start();
    sim.restartHns();
    await clock.advance(RESYNC_MS);
    expect(await readMetric(metrics, METRIC.hnsRestarts)).toBe(1);
    expect(await readMetric(metrics, METRIC.driftRepairs, { kind: 'network' })).toBe(1);
    expect(manager.events.map((e) => e.reason)).toEqual(['FlannelNetworkRebuilt', 'FlannelHNSRestarted']);
    expect(network.status()).toMatchObject({ networkMissing: false, inSync: true, peersProgrammed: 2 });
  });
});

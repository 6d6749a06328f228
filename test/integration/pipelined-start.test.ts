// Pipelined cold start, the agent's side: peers that arrive before the first complete list (partial
// pages of the first list) are programmed at once, but nothing is removed or replaced, nothing counts as
// in sync and NetworkUnavailable is not cleared until the complete list is in.
import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from '../../src/agent.js';
import { systemClock } from '../../src/basics/clock.js';
import { parseConfig } from '../../src/config/parse.js';
import { simulatedSeams } from '../../src/simulator/node.js';
import { SimulatedDataplane } from '../../src/simulator/model.js';
import { Metrics } from '../../src/basics/metrics.js';
import type { Lease, LeaseAttrsSource, LeaseUpdateHandler, SubnetManager } from '../../src/subnet/lease.js';
import { vxlanPeer } from '../support/lease-updates.js';
import { LOG, VXLAN_NET_CONF, waitFor } from '../support/cluster.js';
import { metricValue, PASSES_ENDED, waitForIncrease } from '../support/agent-signals.js';
import { addPolicy } from '../support/sim-dataplane.js';

const OWN = '10.244.100.0/24';
const peer = vxlanPeer;

/** A subnet manager the test drives: it emits what the test says, when it says. */
class ScriptedSubnetManager implements SubnetManager {
  readonly name = 'scripted';
  emit: LeaseUpdateHandler | undefined;
  completed = 0;
  async acquireLease(attrsFor: LeaseAttrsSource): Promise<Lease> {
    const attrs = await attrsFor(OWN);
    return { key: 'win-1', subnet: OWN, ...attrs };
  }
  watchLeases(onUpdate: LeaseUpdateHandler, signal: AbortSignal): Promise<void> {
    this.emit = onUpdate;
    return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  }
  async completeLease(): Promise<void> {
    this.completed++;
  }
  republishLease(): Promise<void> {
    return Promise.reject(new Error('not used'));
  }
}

let dir: string | undefined;
let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('before the first complete list', () => {
  it('peers are added as they arrive; the stale policy stays and NetworkUnavailable waits for the complete list', async () => {
    dir = mkdtempSync(join(tmpdir(), 'flanneld-pipelined-'));
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'net-conf.json'), JSON.stringify(VXLAN_NET_CONF));
    const parsed = parseConfig(
      [`--net-config-path=${join(dir, 'net-conf.json')}`, `--subnet-file=${join(dir, 'subnet.env')}`, '--dataplane=simulated', '--iface=10.0.0.2'],
      {},
      { platform: 'linux' },
    );
    if (parsed.kind !== 'run') throw new Error('expected a run config');
    const sim = new SimulatedDataplane({ nodeIP: '10.0.0.2' });
    const metrics = new Metrics();
    const sm = new ScriptedSubnetManager();
    const agent = new Agent({
      config: parsed.config,
      log: LOG,
      metrics,
      subnetManager: sm,
      dataplane: simulatedSeams(sim, { log: LOG, metrics, clock: systemClock, hnsCallTimeoutMs: 0 }),
      resyncMs: 200,
    });
    const ac = new AbortController();
    const done = agent.run(ac.signal);
    stop = async () => {
      ac.abort();
      await done;
    };
    await waitFor(() => agent.phase === 'running' && sm.emit !== undefined, 'the network, subnet.env and the watch');
    const stale = {
      Type: 'RemoteSubnetRoute',
      Settings: { DestinationPrefix: '10.244.9.0/24', IsolationId: 4096, ProviderAddress: '10.0.1.9', DistributedRouterMacAddress: '0e:2a:0a:00:01:09' },
    };
    addPolicy(sim, 'flannel.4096', stale);
    const prefixes = () =>
      (sim.getNetworkByName('flannel.4096')?.Policies ?? [])
        .filter((p) => p.Type === 'RemoteSubnetRoute')
        .map((p) => String(p.Settings?.['DestinationPrefix']))
        .sort();

    // Two pages of the first list, then a changed peer, all before the complete list.
    sm.emit!({ kind: 'peers', peers: [{ key: 'linux-1', lease: peer(1) }] });
    await waitFor(() => prefixes().includes('10.244.1.0/24'), 'the first page programmed');
    // Before the complete list there is no resync: each change gets one (early) pass, counted when it
    // ends in the pass-duration histogram (the pass counter counts only passes after the list).
    const ended = () => metrics.render().then((t) => metricValue(t, PASSES_ENDED));
    const beforePage2 = await ended();
    sm.emit!({ kind: 'peers', peers: [{ key: 'linux-2', lease: peer(2) }] });
    await waitFor(async () => prefixes().includes('10.244.2.0/24') && (await ended()) > beforePage2, 'the second page programmed');
    sm.emit!({ kind: 'peers', peers: [{ key: 'linux-1', lease: { ...peer(1), publicIP: '10.0.1.99' } }] });
    await waitForIncrease(() => metrics.render(), PASSES_ENDED, 1, 'the pass after the changed peer');
    expect(prefixes()).toEqual(['10.244.1.0/24', '10.244.2.0/24', '10.244.9.0/24']);
    const pa1 = () => sim.getNetworkByName('flannel.4096')!.Policies!.find((p) => p.Settings?.['DestinationPrefix'] === '10.244.1.0/24')!.Settings!['ProviderAddress'];
    expect(pa1()).toBe('10.0.1.1'); // a replacement waits for the complete list
    expect(sm.completed).toBe(0);
    expect(agent.isReady).toBe(false); // subnet.env is written, but no complete list has come: not ready (docs/compatibility.md §7)

    sm.emit!({ kind: 'listed', keys: new Set(['linux-1', 'linux-2']) });
    await waitFor(() => prefixes().join() === '10.244.1.0/24,10.244.2.0/24' && pa1() === '10.0.1.99', 'the stale policy removed, the peer replaced');
    await waitFor(() => sm.completed === 1, 'CompleteLease');
    expect(agent.isReady).toBe(true);
  });
});

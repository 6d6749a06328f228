// The network owns its lease watch, as flannel's RouteNetwork.Run does (pkg/backend/route_network_windows.go:
// WatchLeases, then handleSubnetEvents for each batch): RouteNetwork.run watches the subnet manager, passes
// each update through the LeaseWatcher into the Reconciler, and completes the lease once the first pass
// was tried (flannel main.go calls CompleteLease once the backend runs). A rebuild re-binds every peer and
// runs the afterRebuild hook the agent gives run.
import { describe, expect, it } from '@jest/globals';
import type { BackendDeps, Network, NetworkHooks } from '../../../src/backends/backend.js';
import { FakeDriver } from '../../support/fake-driver.js';
import { RouteNetwork, type NetworkBinding } from '../../../src/backends/route-network.js';
import { SimulatedDataplane } from '../../../src/simulator/model.js';
import { Metrics } from '../../../src/basics/metrics.js';
import { HnsClient } from '../../../src/hns/client.js';
import { SimulatedHnsTransport } from '../../../src/simulator/hns.js';
import { SimulatedHost } from '../../../src/simulator/host.js';
import { silentLogger } from '../../../src/basics/log.js';
import { EtcdError } from '../../../src/basics/errors.js';
import { SimulatedRouteTable } from '../../../src/simulator/host.js';
import type { Lease, LeaseUpdateHandler, SubnetManager } from '../../../src/subnet/lease.js';
import { parseNetConf } from '../../../src/subnet/net-conf.js';
import { FakeClock, flush } from '../../support/fake-clock.js';
import { logSink } from '../../support/log-sink.js';
import { storeUpdates, type OldLeaseUpdate } from '../../support/lease-updates.js';
import type { NodeEvent, NodeEvents } from '../../../src/node-events.js';

class Manager implements SubnetManager {
  readonly name = 'fake';
  private onUpdate: LeaseUpdateHandler = () => undefined;
  /** Send what a subnet manager's list or watch says, as the store's updates. */
  emit(u: OldLeaseUpdate): void {
    for (const x of storeUpdates(u)) this.onUpdate(x);
  }
  completed: Lease[] = [];
  /** What the network reported as Events on the own Node (kube mode's recorder). */
  events: NodeEvent[] = [];
  nodeEvents(): NodeEvents {
    return { record: (e) => this.events.push(e) };
  }
  acquireLease(): Promise<Lease> {
    return Promise.reject(new Error('not used'));
  }
  /** End the watch with a fatal error (an etcd lease revoked, a watch the manager cannot resume). */
  failWatch: (err: Error) => void = () => undefined;
  watchLeases(onUpdate: LeaseUpdateHandler, signal: AbortSignal): Promise<void> {
    this.onUpdate = onUpdate;
    return new Promise((resolve, reject) => {
      signal.addEventListener('abort', () => resolve(), { once: true });
      this.failWatch = reject;
    });
  }
  completeLease(lease: Lease): Promise<void> {
    this.completed.push(lease);
    return Promise.resolve();
  }
  republishLease(): Promise<void> {
    return Promise.reject(new Error('not used'));
  }
}

const lease = (key: string, n: number, publicIP = `10.0.0.${10 + n}`): Lease => ({ key, subnet: `10.244.${n}.0/24`, publicIP, backendType: 'host-gw', backendData: null });
const own = lease('me', 1);

function setup(log = silentLogger()) {
  const clock = new FakeClock();
  const manager = new Manager();
  const sim = new SimulatedDataplane();
  const rebuilt: Network[] = [];
  const deps: BackendDeps = {
    netConf: parseNetConf('{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw"}}'),
    subnetManager: manager,
    hns: new HnsClient(new SimulatedHnsTransport(sim)),
    routes: new SimulatedRouteTable(sim),
    host: new SimulatedHost(sim),
    extIface: { name: 'Ethernet', index: 4, ipv4: own.publicIP, prefixLength: 24, mtu: 1500 },
    publicIP: own.publicIP,
    log,
    metrics: new Metrics(),
    clock,
  };
  const hooks: NetworkHooks = {
    afterRebuild: async (n) => {
      rebuilt.push(n);
    },
  };
  const bind = (driver: FakeDriver, mtu: number): NetworkBinding<string, string> => ({ driver, mtu });
  const first = new FakeDriver();
  const second = new FakeDriver();
  const network = new RouteNetwork({ deps, lease: own, networkName: 'cbr0', binding: bind(first, 1500), rebuild: async () => bind(second, 1450) });
  return { clock, manager, network, first, second, hooks, rebuilt, ac: new AbortController() };
}

describe('RouteNetwork', () => {
  it('runs the lease watch through the peer store into the reconciler and completes the lease after the first pass', async () => {
    const { manager, network, first, ac } = setup();
    const done = network.run(ac.signal);
    await flush();
    expect(manager.completed).toEqual([]);
    const outside = { ...lease('far', 2), subnet: '10.99.0.0/24' };
    manager.emit({ kind: 'snapshot', leases: [own, lease('node-2', 2), outside] });
    await flush();
    expect(first.log).toEqual(['read', 'add 10.244.2.0/24=10.0.0.12']);
    expect(manager.completed).toEqual([own]);
    expect(network.status()).toMatchObject({
      inSync: true,
      peersDesired: 1,
      peersProgrammed: 1,
      rejections: [expect.objectContaining({ key: 'far', reason: 'subnet-outside-network' })],
    });
    expect(manager.events).toEqual([{ type: 'Warning', reason: 'FlannelPeerRejected', message: expect.stringMatching(/^peer far rejected \(subnet-outside-network\)/) }]);

    first.log = [];
    manager.emit({
      kind: 'events',
      events: [
        { type: 'added', lease: lease('node-2', 2, '10.0.0.99') },
        { type: 'added', lease: lease('node-3', 3) },
      ],
    });
    await flush();
    expect(first.log).toEqual(['remove 10.244.2.0/24=10.0.0.12', 'add 10.244.3.0/24=10.0.0.13,10.244.2.0/24=10.0.0.99']);
    manager.emit({ kind: 'events', events: [{ type: 'removed', lease: lease('node-3', 3) }] });
    await flush();
    expect(first.actual).toEqual(['10.244.2.0/24=10.0.0.99']);
    expect(network.status()).toMatchObject({ peersDesired: 1, peersProgrammed: 1 });
    expect(manager.completed).toHaveLength(1);
    ac.abort();
    await done;
  });

  it("counts the programmed peers only when the status's peersProgrammed is read", async () => {
    // The readiness loop and /readyz read the status every 10 s for other fields; the count walks every
    // peer's items (docs/performance.md, 50,000 Nodes).
    const { manager, network, first, ac } = setup();
    const done = network.run(ac.signal);
    await flush();
    manager.emit({ kind: 'snapshot', leases: [own, lease('node-2', 2), lease('node-3', 3)] });
    await flush();
    let compared = 0;
    const same = first.same;
    first.same = (a, d) => {
      compared++;
      return same(a, d);
    };
    const s = network.status();
    expect(s).toMatchObject({ listed: true, inSync: true, peersDesired: 2, rejections: [] });
    expect(compared).toBe(0);
    expect(s.peersProgrammed).toBe(2);
    expect(compared).toBe(2);
    ac.abort();
    await done;
  });

  it.each([
    ['succeeds', true, 0],
    ['fails after an early page was written', false, 1],
  ])('when the first full pass %s, the lease is still completed and the log line says ok: %s', async (_name, ok, failNext) => {
    const sink = logSink();
    const { manager, network, first, ac } = setup(sink.log);
    const done = network.run(ac.signal);
    manager.emit({ kind: 'page', leases: [lease('node-2', 2)] }); // an add-only pass before the list completes
    await flush();
    expect(first.actual).toEqual(['10.244.2.0/24=10.0.0.12']);
    // The full pass after the complete list plans against the cache (no read) and writes node-3.
    first.failNext = failNext;
    manager.emit({ kind: 'snapshot', leases: [own, lease('node-2', 2), lease('node-3', 3)] });
    await flush();
    expect(first.reads).toBe(1);
    expect(manager.completed).toEqual([own]);
    expect(sink.entries).toContainEqual(expect.objectContaining({ message: 'first reconcile pass done', peers: 2, ok }));
    ac.abort();
    await done;
  });

  it('a fatal error in one part (the lease watch) stops the others, and run() rejects once they have: no loop is left waiting', async () => {
    const { clock, manager, network, ac } = setup();
    const done = network.run(ac.signal);
    manager.emit({ kind: 'snapshot', leases: [own, lease('node-2', 2)] });
    await flush();
    expect(clock.pending().length).toBeGreaterThan(0); // the reconciler's resync and the HNS check wait on the clock
    manager.failWatch(new EtcdError('FLANNEL_ERR_LEASE_REVOKED', 'the own lease was deleted', {}));
    await expect(done).rejects.toMatchObject({ code: 'FLANNEL_ERR_LEASE_REVOKED' });
    expect(clock.pending()).toEqual([]);
    expect(ac.signal.aborted).toBe(false);
  });

  it('after a rebuild every peer is written through the new binding, then the afterRebuild hook runs', async () => {
    const { manager, network, first, second, hooks, rebuilt, ac } = setup();
    const done = network.run(ac.signal, hooks);
    manager.emit({ kind: 'snapshot', leases: [lease('node-2', 2), lease('node-3', 3)] });
    await flush();
    first.gone = true;
    manager.emit({
      kind: 'events',
      events: [
        { type: 'removed', lease: lease('node-3', 3) },
        { type: 'added', lease: lease('node-4', 4) },
      ],
    });
    await flush();
    await flush();
    expect(second.log).toEqual(['read', 'add 10.244.2.0/24=10.0.0.12,10.244.4.0/24=10.0.0.14']);
    expect(rebuilt).toEqual([network]);
    expect(manager.events).toEqual([{ type: 'Warning', reason: 'FlannelNetworkRebuilt', message: expect.stringContaining('HNS network cbr0 was gone') }]);
    expect(network.mtu).toBe(1450);
    expect(network.status()).toMatchObject({ networkMissing: false, inSync: true, peersDesired: 2, peersProgrammed: 2 });
    ac.abort();
    await done;
  });
});

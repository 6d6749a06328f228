// The programmed-peers count of RouteNetwork.status() (programmedCounter, src/backends/route-network.ts):
// kept between reads and walked again only when the peer store's or the reconcile loop's version moved. The
// oracle is the walk itself, PeerStore.countProgrammed called at every read: through random sequences of
// lease updates, complete lists, drift, failed and refused writes, resyncs and a rebuilt network (rebind),
// read mid-pass and after, the kept count equals it. A read with nothing changed walks no peer.
import { describe, expect, it, jest } from '@jest/globals';
import fc from 'fast-check';
import { programmedCounter } from '../../../src/backends/route-network.js';
import { PeerStore } from '../../../src/peers/store.js';
import { Reconciler } from '../../../src/reconcile/reconciler.js';
import type { Lease } from '../../../src/subnet/lease.js';
import { FakeClock, flush } from '../../support/fake-clock.js';
import { FakeDriver, itemKey } from '../../support/fake-driver.js';
import { MapSink } from '../../support/refusal-sink.js';

function peer(n: number, subnet: number, ip: number): Lease {
  return { key: `node-${n}`, subnet: `10.244.${subnet}.0/24`, publicIP: `192.168.1.${ip}`, backendType: 'vxlan', backendData: { VNI: 4096, VtepMAC: '0e:2a:0a:f4:00:01' } };
}

type Op =
  | { kind: 'set'; n: number; subnet: number; ip: number }
  | { kind: 'del'; n: number }
  | { kind: 'listed'; keep: number[] }
  | { kind: 'driftRemove'; subnet: number }
  | { kind: 'fail'; n: number }
  | { kind: 'refuse'; subnet: number; ip: number }
  | { kind: 'unrefuse' }
  | { kind: 'rebind' }
  | { kind: 'tick'; ms: number };

const nArb = fc.integer({ min: 2, max: 7 });
const subnetArb = fc.integer({ min: 2, max: 6 }); // fewer subnets than peers: contested subnets, refused claimants
const ipArb = fc.integer({ min: 2, max: 4 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('set' as const), n: nArb, subnet: subnetArb, ip: ipArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('del' as const), n: nArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('listed' as const), keep: fc.array(nArb, { maxLength: 6 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('driftRemove' as const), subnet: subnetArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('fail' as const), n: fc.integer({ min: 1, max: 2 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('refuse' as const), subnet: subnetArb, ip: ipArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('unrefuse' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('rebind' as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 12_000 }) }) },
);

function setup() {
  const clock = new FakeClock();
  let driver = new FakeDriver({ batch: 2 });
  const store = new PeerStore<string>({
    ownLeaseKey: 'node-1',
    ownSubnet: '10.244.1.0/24',
    validation: { network: '10.244.0.0/16', subnetLen: 24, backendType: 'vxlan' },
    items: driver,
    clock,
  });
  const loop = new Reconciler<string, string>({ sink: new MapSink(), desired: store, driver, clock, resyncMs: 10_000, backoffBaseMs: 100, backoffCapMs: 1000 });
  /** The walk, at every read: what the count was before it was kept. */
  const walked = () => store.countProgrammed((k) => !store.isDirty(k) && loop.isProgrammed(k));
  const rebind = () => {
    const next = new FakeDriver({ batch: 2 });
    next.actual = [...driver.actual];
    next.refused.clear();
    driver = next;
    store.rebind(next);
    loop.rebind(next);
  };
  return { clock, store, loop, walked, rebind, driver: () => driver };
}

describe('the programmed-peers count', () => {
  it('equals the walk over every peer in every state', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 40 }), async (ops) => {
        const { clock, store, loop, walked, rebind, driver } = setup();
        const count = programmedCounter(store, loop);
        const ac = new AbortController();
        const done = loop.run(ac.signal);
        const check = () => expect(count()).toBe(walked());
        check();
        for (const op of ops) {
          if (op.kind === 'set') store.apply({ kind: 'peers', peers: [{ key: `node-${op.n}`, lease: peer(op.n, op.subnet, op.ip) }] });
          else if (op.kind === 'del') store.apply({ kind: 'peers', peers: [{ key: `node-${op.n}`, lease: undefined }] });
          else if (op.kind === 'listed') store.apply({ kind: 'listed', keys: new Set(op.keep.map((n) => `node-${n}`)) });
          else if (op.kind === 'driftRemove') driver().actual = driver().actual.filter((i) => itemKey(i) !== `10.244.${op.subnet}.0/24`);
          else if (op.kind === 'fail') driver().failNext += op.n;
          else if (op.kind === 'refuse') driver().refused.add(`10.244.${op.subnet}.0/24=192.168.1.${op.ip}`);
          else if (op.kind === 'unrefuse') driver().refused.clear();
          else if (op.kind === 'rebind') rebind();
          else await clock.advance(op.ms);
          check(); // before the loop's pass (dirty keys, a pass under way)
          await Promise.resolve();
          check();
          await flush();
          check();
        }
        ac.abort();
        await done;
      }),
      { numRuns: 200 },
    );
  }, 120_000);

  it('walks no peer when nothing changed since the last read', async () => {
    const { clock, store, loop } = setup();
    const ac = new AbortController();
    const done = loop.run(ac.signal);
    store.apply({ kind: 'peers', peers: [2, 3, 4].map((n) => ({ key: `node-${n}`, lease: peer(n, n, 2) })) });
    store.apply({ kind: 'listed', keys: new Set(['node-2', 'node-3', 'node-4']) });
    await flush();
    const walk = jest.spyOn(store, 'countProgrammed');
    const count = programmedCounter(store, loop);
    expect(count()).toBe(3);
    expect(walk).toHaveBeenCalledTimes(1);
    for (let i = 0; i < 5; i++) expect(count()).toBe(3);
    expect(walk).toHaveBeenCalledTimes(1);
    // A change counts again, once.
    store.apply({ kind: 'peers', peers: [{ key: 'node-5', lease: peer(5, 5, 2) }] });
    expect(count()).toBe(3); // node-5's item is dirty until the loop's pass
    await flush();
    expect(count()).toBe(4);
    expect(count()).toBe(4);
    expect(walk).toHaveBeenCalledTimes(3);
    // Time passing alone (a resync is not due yet) changes nothing.
    await clock.advance(1000);
    expect(count()).toBe(4);
    expect(walk).toHaveBeenCalledTimes(3);
    ac.abort();
    await done;
  });
});

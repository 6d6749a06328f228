// Property-based tests of the lease diff: the LeaseWatcher's peer set and the reconcile plan.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import type { Lease } from '../../src/subnet/lease.js';
import { leaseContent } from '../../src/peers/store.js';
import { LeaseSet, type OldLeaseUpdate as LeaseUpdate } from '../support/lease-updates.js';
import { ItemSet } from '../support/desired-set.js';
import { validateLease } from '../../src/peers/validate.js';
import { normalizeCidr } from '../../src/basics/ip4.js';
import { planReconcile } from '../../src/reconcile/plan.js';
import { Reconciler } from '../../src/reconcile/reconciler.js';
import { MapSink } from '../support/refusal-sink.js';
import type { ReconcileDriver } from '../../src/reconcile/writes.js';

const OWN_KEY = 'me';
const OWN_SUBNET = '10.244.1.0/24';
const CTX = { network: '10.244.0.0/16', subnetLen: 24, ownSubnet: OWN_SUBNET, backendType: 'vxlan' as const };

// Small domains, so keys collide, subnets conflict and valid leases turn invalid and back.
const leaseArb: fc.Arbitrary<Lease> = fc.record({
  key: fc.constantFrom(OWN_KEY, 'a', 'b', 'c', 'd', 'e', 'f'),
  subnet: fc.constantFrom(
    '10.244.1.0/24', // own
    '10.244.2.0/24',
    '10.244.3.0/24',
    '10.244.4.0/24',
    '10.244.2.0/24',
    '10.244.3.9/24', // host bits
    '10.244.0.0/16', // whole network
    '10.244.5.0/25', // wrong length
    '10.245.0.0/24', // outside
    '0.0.0.0/0',
    'garbage',
  ),
  publicIP: fc.constantFrom('192.168.0.2', '192.168.0.3', '192.168.0.4', '10.244.9.9', '127.0.0.1', '0.0.0.0', '224.0.0.1', 'x', ''),
  backendType: fc.constantFrom('vxlan', 'vxlan', 'vxlan', 'host-gw', ''),
  backendData: fc.constantFrom<unknown>(
    { VNI: 4096, VtepMAC: '0e:2a:00:00:00:01' },
    { VNI: 4096, VtepMAC: '0e:2a:00:00:00:02' },
    { VtepMAC: '0e:2a:00:00:00:01', VNI: 4096 }, // same content, other key order
    { VNI: 1, VtepMAC: '0e:2a:00:00:00:01' },
    { VNI: 4096, VtepMAC: 'ff:ff:ff:ff:ff:ff' },
    { VNI: '4096', VtepMAC: '0e:2a:00:00:00:01' },
    null,
    undefined,
    [],
  ),
  created: fc.constantFrom<number | undefined>(undefined, 1000, 1000, 2000), // who holds a contested subnet
});

const updateArb: fc.Arbitrary<LeaseUpdate> = fc.oneof(
  fc.array(leaseArb, { maxLength: 8 }).map((leases) => ({ kind: 'snapshot' as const, leases })),
  fc.array(leaseArb, { maxLength: 4 }).map((leases) => ({ kind: 'page' as const, leases })),
  fc
    .array(fc.record({ type: fc.constantFrom('added' as const, 'removed' as const), lease: leaseArb }), { minLength: 1, maxLength: 6 })
    .map((events) => ({ kind: 'events' as const, events })),
);

/** The leases the subnet manager reports after `updates` (latest per key). */
function finalState(updates: LeaseUpdate[]): Map<string, Lease> {
  const m = new Map<string, Lease>();
  for (const u of updates) {
    if (u.kind === 'snapshot') {
      m.clear();
      for (const l of u.leases) m.set(l.key, l);
    } else if (u.kind === 'page') {
      for (const l of u.leases) m.set(l.key, l); // additions only
    } else {
      for (const e of u.events) {
        if (e.type === 'removed') m.delete(e.lease.key);
        else m.set(e.lease.key, e.lease);
      }
    }
  }
  return m;
}

function newWatcher() {
  return new LeaseSet({ ownLeaseKey: OWN_KEY, ownSubnet: OWN_SUBNET, validation: CTX });
}

describe('PeerStore: the peer set after any sequence of snapshots and events', () => {
  it('is the validated, own-free, overlap-free set implied by the final state; events replay to it', () => {
    fc.assert(
      fc.property(fc.array(updateArb, { minLength: 1, maxLength: 12 }), (updates) => {
        const w = newWatcher();
        const mirror = new Map<string, Lease>(); // the accepted set rebuilt from emitted events only
        for (const u of updates) {
          for (const e of w.update(u)) {
            if (e.type === 'removed') {
              expect(mirror.has(e.lease.key)).toBe(true);
              mirror.delete(e.lease.key);
            } else mirror.set(e.lease.key, e.lease);
          }
        }
        const state = finalState(updates);
        // Candidates: valid leases that are not the own one (by key or subnet).
        const valid = [...state.values()].filter((l) => l.key !== OWN_KEY && normalizeCidr(l.subnet) !== OWN_SUBNET && validateLease(l, CTX).ok);
        const peers = w.peers();
        // Every accepted peer is the latest reported lease for its key, and valid.
        for (const p of peers) {
          const cur = state.get(p.key);
          expect(cur).toBeDefined();
          expect(leaseContent(p)).toBe(leaseContent(cur!));
          expect(valid.some((l) => l.key === p.key)).toBe(true);
        }
        // No two peers share a subnet (all valid subnets have one length, so overlap = equal).
        const subnets = peers.map((p) => normalizeCidr(p.subnet));
        expect(new Set(subnets).size).toBe(subnets.length);
        // Maximal: a subnet only one valid lease asks for is held by it; a contested one (two or more
        // valid claimants) by at most one of them (none after a tie in age).
        const claims = new Map<string | undefined, number>();
        for (const l of valid) claims.set(normalizeCidr(l.subnet), (claims.get(normalizeCidr(l.subnet)) ?? 0) + 1);
        for (const [sn, n] of claims) if (n === 1) expect(subnets).toContain(sn);
        for (const sn of subnets) expect(claims.has(sn)).toBe(true);
        // Without conflicts the set is exactly the valid leases.
        if (new Set(valid.map((l) => normalizeCidr(l.subnet))).size === valid.length) {
          expect(peers.map((p) => p.key)).toEqual(valid.map((l) => l.key).sort());
        }
        // The emitted events describe the set exactly.
        expect([...mirror.keys()].sort()).toEqual(peers.map((p) => p.key));
        for (const p of peers) expect(leaseContent(mirror.get(p.key)!)).toBe(leaseContent(p));
        expect(w.size).toBe(peers.length);
      }),
      { numRuns: 1500 },
    );
  });

  it('applying the same snapshot twice yields no events and no change', () => {
    fc.assert(
      fc.property(fc.array(updateArb, { maxLength: 8 }), fc.array(leaseArb, { maxLength: 8 }), (history, leases) => {
        const w = newWatcher();
        for (const u of history) w.update(u);
        w.update({ kind: 'snapshot', leases });
        const before = w.peers().map(leaseContent);
        expect(w.update({ kind: 'snapshot', leases: structuredClone(leases) })).toEqual([]);
        expect(w.peers().map(leaseContent)).toEqual(before);
      }),
      { numRuns: 1000 },
    );
  });

  it('the outcome of one snapshot does not depend on the order of its leases', () => {
    // One lease per key, so every order describes the same state.
    const uniqueLeases = fc.uniqueArray(leaseArb, { maxLength: 8, selector: (l) => l.key });
    fc.assert(
      fc.property(
        uniqueLeases.chain((ls) => fc.tuple(fc.constant(ls), fc.shuffledSubarray(ls, { minLength: ls.length, maxLength: ls.length }))),
        ([a, b]) => {
          const x = newWatcher();
          const y = newWatcher();
          x.update({ kind: 'snapshot', leases: a });
          y.update({ kind: 'snapshot', leases: b });
          expect(y.peers().map(leaseContent)).toEqual(x.peers().map(leaseContent));
          expect(y.peers().map((l) => l.key)).toEqual(x.peers().map((l) => l.key));
        },
      ),
      { numRuns: 500 },
    );
  });
});

// ---- planReconcile -------------------------------------------------------------------------------

interface Item {
  key: string;
  val: number;
  id: number;
}
const ops = { actualKey: (a: Item) => a.key, desiredKey: (d: Item) => d.key, same: (a: Item, d: Item) => a.val === d.val };
const itemArb = fc.record({ key: fc.constantFrom('k1', 'k2', 'k3', 'k4', 'k5', 'k6'), val: fc.integer({ min: 0, max: 2 }) });
const withIds = (xs: { key: string; val: number }[], base: number): Item[] => xs.map((x, i) => ({ ...x, id: base + i }));

/** desired, first entry per key winning (planReconcile's rule). */
function byKey(desired: Item[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const d of desired) if (!m.has(d.key)) m.set(d.key, d.val);
  return m;
}

describe('planReconcile', () => {
  it('applying the plan to actual yields exactly desired by key, with no duplicates and minimal writes', () => {
    fc.assert(
      fc.property(fc.array(itemArb, { maxLength: 12 }), fc.array(itemArb, { maxLength: 8 }), (a, d) => {
        const actual = withIds(a, 0);
        const desired = withIds(d, 1000);
        const plan = planReconcile(actual, desired, ops);
        const removed = [...plan.remove, ...plan.replace.map((r) => r.from)];
        // Only actual items are removed, each once.
        expect(new Set(removed.map((x) => x.id)).size).toBe(removed.length);
        for (const x of removed) expect(actual).toContain(x);
        const result = [...actual.filter((x) => !removed.includes(x)), ...plan.add, ...plan.replace.map((r) => r.to)];
        const keys = result.map((x) => x.key);
        expect(new Set(keys).size).toBe(keys.length);
        expect(new Map(result.map((x) => [x.key, x.val]))).toEqual(byKey(desired));
        // Minimal: a key that already had a matching item is left alone.
        const want = byKey(desired);
        const keep = [...want].filter(([k, v]) => actual.some((x) => x.key === k && x.val === v)).length;
        expect(plan.unchanged).toBe(keep);
        expect(plan.add.length + plan.replace.length).toBe(want.size - keep);
      }),
      { numRuns: 1000 },
    );
  });
});

// ---- Reconciler on a flaky driver ---------------------------------------------------------------

describe('Reconciler against a driver that fails part-way through writes', () => {
  it('converges to exactly the desired set with no duplicates', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(itemArb, { maxLength: 10 }),
        fc.array(itemArb, { maxLength: 8 }),
        fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 40, maxLength: 40 }),
        async (a, d, dice) => {
          let actual = withIds(a, 0);
          let roll = 0;
          // ~30% of the first 40 calls fail, then the dataplane recovers (a run of all failures must end)
          const flaky = () => roll < dice.length && dice[roll++] < 3;
          let nextId = 5000;
          const driver: ReconcileDriver<Item, Item> = {
            name: 'flaky',
            driftKind: 'policy',
            ...ops,
            async readActual() {
              if (flaky()) throw new Error('read failed');
              return actual.map((x) => ({ ...x }));
            },
            async remove(items) {
              for (const it of items) {
                if (flaky()) throw new Error('remove failed');
                const i = actual.findIndex((x) => x.id === it.id);
                if (i < 0) throw new Error('remove of a missing item');
                actual.splice(i, 1);
              }
            },
            async add(items) {
              for (const it of items) {
                if (flaky()) throw new Error('add failed');
                // A write that lands but reports failure (the HNS call that timed out after applying).
                actual = [...actual, { ...it, id: nextId++ }];
                if (flaky()) throw new Error('add reported failure after applying');
              }
            },
          };
          // No toActual: every pass reads and diffs everything.
          const items = new ItemSet<Item>((x) => driver.desiredKey(x));
          const r = new Reconciler<Item, Item>({ sink: new MapSink(), driver, desired: items.store });
          items.updatePeers(withIds(d, 1000).map((x, i) => [`peer-${i}`, [x]])); // a key desired twice: the first claimant wins
          items.markListed();
          let ok = false;
          for (let i = 0; i < 60 && !ok; i++) ok = (await r.pass()).ok;
          expect(ok).toBe(true);
          const keys = actual.map((x) => x.key);
          expect(new Set(keys).size).toBe(keys.length);
          expect(new Map(actual.map((x) => [x.key, x.val]))).toEqual(byKey(withIds(d, 1000)));
          // A pass on the converged state writes nothing.
          const before = actual;
          expect(await r.pass()).toMatchObject({ added: 0, removed: 0, replaced: 0 });
          expect(actual).toBe(before);
        },
      ),
      { numRuns: 300 },
    );
  });
});

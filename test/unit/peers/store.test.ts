import { describe, it, expect } from '@jest/globals';
import type { Lease } from '../../../src/subnet/lease.js';
import { LEASE_ITEMS, LeaseSet, type LeaseEvent } from '../../support/lease-updates.js';
import { Metrics, METRIC } from '../../../src/basics/metrics.js';
import { FakeClock } from '../../support/fake-clock.js';
import { logSink } from '../../support/log-sink.js';
import { readMetric } from '../../support/agent-signals.js';
import { heapAfterGc, oldSpaceAfterScavenges } from '../../support/heap.js';

function peer(n: number, over: Partial<Lease> = {}): Lease {
  return {
    key: `node-${n}`,
    subnet: `10.244.${n}.0/24`,
    publicIP: `192.168.1.${n}`,
    backendType: 'vxlan',
    backendData: { VNI: 4096, VtepMAC: `0e:2a:0a:f4:0${n % 10}:01` },
    ...over,
  };
}

function setup() {
  const cap = logSink();
  const log = cap.log;
  const metrics = new Metrics();
  const clock = new FakeClock();
  const w = new LeaseSet({
    ownLeaseKey: 'node-1',
    ownSubnet: '10.244.1.0/24',
    validation: { network: '10.244.0.0/16', subnetLen: 24, backendType: 'vxlan' },
    log,
    metrics,
    clock,
    rejectLogIntervalMs: 60_000,
  });
  const rejections = () => cap.entries.filter((e) => e['message'] === 'peer lease rejected');
  const handovers = () => cap.entries.filter((e) => e['message'] === 'subnet handed over');
  return { w, metrics, rejections, handovers, clock, entries: cap.entries };
}

const T0 = Date.UTC(2024, 0, 1);

const brief = (evs: LeaseEvent[]) => evs.map((e) => `${e.type}:${e.lease.key}`);

describe('PeerStore', () => {
  it('rejected() lists the peers rejected now, with the reason; a renewal keeps them, a fix or removal clears them', () => {
    const { w } = setup();
    const bad = peer(3, { backendData: { VNI: 1, VtepMAC: '0e:2a:0a:f4:03:01' } });
    w.update({ kind: 'snapshot', leases: [peer(2), bad] });
    expect(w.rejected()).toEqual([
      { key: 'node-3', subnet: '10.244.3.0/24', publicIP: '192.168.1.3', reason: 'vni-too-low', message: expect.any(String), backendType: 'vxlan', vni: 1 },
    ]);
    w.update({ kind: 'events', events: [{ type: 'added', lease: { ...bad } }] }); // same content, a new record
    expect(w.rejected().map((r) => r.key)).toEqual(['node-3']);
    w.update({ kind: 'events', events: [{ type: 'added', lease: peer(3) }] });
    expect(w.rejected()).toEqual([]);
    w.update({ kind: 'events', events: [{ type: 'added', lease: bad }] });
    w.update({ kind: 'events', events: [{ type: 'removed', lease: bad }] });
    expect(w.rejected()).toEqual([]);
  });

  it('accepts a first snapshot and drops the own lease by key; another node with our subnet is rejected with a reason', async () => {
    const { w, metrics, rejections } = setup();
    const evs = w.update({ kind: 'snapshot', leases: [peer(1), peer(2), peer(3), peer(4, { key: 'alias-of-me', subnet: '10.244.1.0/24' })] });
    expect(brief(evs)).toEqual(['added:node-2', 'added:node-3']);
    expect(w.size).toBe(2);
    expect(w.peers().map((l) => l.key)).toEqual(['node-2', 'node-3']);
    expect(await readMetric(metrics, METRIC.peers)).toBe(2);
    expect(await readMetric(metrics, METRIC.leasesRejected, { reason: 'subnet-equals-own' })).toBe(1);
    expect(rejections()).toEqual([expect.objectContaining({ node: 'alias-of-me', reason: 'subnet-equals-own' })]);
  });

  it('an IPv6-only podCIDR and one that is not a CIDR are rejected with their reasons', async () => {
    const { w, metrics, rejections } = setup();
    w.update({ kind: 'snapshot', leases: [peer(2, { subnet: 'fd00:1::/64' }), peer(3, { subnet: 'banana' }), peer(4, { subnet: '' })] });
    expect(w.size).toBe(0);
    expect(await readMetric(metrics, METRIC.leasesRejected, { reason: 'subnet-ipv6-only' })).toBe(1);
    expect(await readMetric(metrics, METRIC.leasesRejected, { reason: 'subnet-invalid' })).toBe(2);
    expect(
      rejections()
        .map((e) => `${String(e['node'])}:${String(e['reason'])}`)
        .sort(),
    ).toEqual(['node-2:subnet-ipv6-only', 'node-3:subnet-invalid', 'node-4:subnet-invalid']);
  });

  it('a re-list snapshot removes peers missing from it and re-adds changed ones', async () => {
    const { w, metrics } = setup();
    w.update({ kind: 'snapshot', leases: [peer(2), peer(3), peer(4)] });
    const evs = w.update({ kind: 'snapshot', leases: [peer(2), peer(4, { publicIP: '192.168.1.44' }), peer(5)] });
    expect(brief(evs)).toEqual(['removed:node-3', 'added:node-4', 'added:node-5']);
    expect(evs.find((e) => e.lease.key === 'node-4')!.lease.publicIP).toBe('192.168.1.44');
    expect(await readMetric(metrics, METRIC.peers)).toBe(3);
  });

  it('an unchanged re-add produces no event (heartbeats cost nothing)', () => {
    const { w } = setup();
    const first = peer(2);
    w.update({ kind: 'snapshot', leases: [first] });
    expect(w.update({ kind: 'events', events: [{ type: 'added', lease: peer(2) }] })).toEqual([]);
    // backend-data with another key order is the same content; the stored record stays (a status update
    // allocates nothing the store keeps), and a rebuild (the network recreated) makes the same items from it
    const same = peer(2, { backendData: { VtepMAC: '0e:2a:0a:f4:02:01', VNI: 4096 } });
    expect(w.update({ kind: 'events', events: [{ type: 'added', lease: same }] })).toEqual([]);
    w.store.rebind(LEASE_ITEMS);
    expect(w.peers()[0]).toBe(first);
    expect(w.peers()[0].backendData).toEqual(same.backendData);
    expect(w.update({ kind: 'snapshot', leases: [peer(2)] })).toEqual([]);
  });

  it('a subnet change emits removed(old) then added(new)', () => {
    const { w } = setup();
    w.update({ kind: 'snapshot', leases: [peer(2)] });
    const evs = w.update({ kind: 'events', events: [{ type: 'added', lease: peer(2, { subnet: '10.244.22.0/24' }) }] });
    expect(evs.map((e) => `${e.type}:${e.lease.subnet}`)).toEqual(['removed:10.244.2.0/24', 'added:10.244.22.0/24']);
  });

  it('removed events remove; removing an unknown key is a no-op', () => {
    const { w } = setup();
    w.update({ kind: 'snapshot', leases: [peer(2), peer(3)] });
    expect(brief(w.update({ kind: 'events', events: [{ type: 'removed', lease: peer(2) }] }))).toEqual(['removed:node-2']);
    expect(w.update({ kind: 'events', events: [{ type: 'removed', lease: peer(9) }] })).toEqual([]);
    expect(w.update({ kind: 'events', events: [{ type: 'removed', lease: peer(1) }] })).toEqual([]);
    expect(w.size).toBe(1);
  });

  it('a lease that turns invalid is removed and the rejection counted', async () => {
    const { w, metrics } = setup();
    w.update({ kind: 'snapshot', leases: [peer(2)] });
    const bad = peer(2, { backendData: { VNI: 1, VtepMAC: '0e:2a:0a:f4:02:01' } });
    expect(brief(w.update({ kind: 'events', events: [{ type: 'added', lease: bad }] }))).toEqual(['removed:node-2']);
    expect(await readMetric(metrics, METRIC.leasesRejected, { reason: 'vni-too-low' })).toBe(1);
    expect(w.size).toBe(0);
    // fixed again -> added back
    expect(brief(w.update({ kind: 'events', events: [{ type: 'added', lease: peer(2) }] }))).toEqual(['added:node-2']);
  });

  it('counts a rejected lease once per (key, reason, content) and logs it with the node name', async () => {
    const { w, metrics, rejections, clock } = setup();
    const zero = peer(7, { subnet: '0.0.0.0/0' });
    for (let i = 0; i < 3; i++) {
      expect(w.update({ kind: 'snapshot', leases: [peer(2), zero] }).filter((e) => e.lease.key === 'node-7')).toEqual([]);
    }
    w.update({ kind: 'events', events: [{ type: 'added', lease: zero }] });
    expect(rejections()).toHaveLength(1);
    expect(rejections()[0]).toMatchObject({ node: 'node-7', reason: 'subnet-outside-network', level: 'warn' });
    expect(await readMetric(metrics, METRIC.leasesRejected, { reason: 'subnet-outside-network' })).toBe(1);
    // different content -> counted; logged again once the interval has passed, with what was held back
    w.update({ kind: 'events', events: [{ type: 'added', lease: { ...zero, publicIP: '192.168.1.77' } }] });
    expect(await readMetric(metrics, METRIC.leasesRejected, { reason: 'subnet-outside-network' })).toBe(2);
    expect(rejections()).toHaveLength(1);
    clock.t += 60_000;
    w.update({ kind: 'events', events: [{ type: 'added', lease: { ...zero, publicIP: '192.168.1.78' } }] });
    expect(rejections()).toHaveLength(2);
    expect(rejections()[1]).toMatchObject({ node: 'node-7', reason: 'subnet-outside-network', heldBack: 1 });
    expect(w.peers().map((l) => l.key)).toEqual(['node-2']);
  });

  it('overlap with an accepted peer: the earlier one keeps its place', async () => {
    const { w, metrics, rejections } = setup();
    w.update({ kind: 'snapshot', leases: [peer(5, { key: 'zeta' })] });
    const evs = w.update({ kind: 'events', events: [{ type: 'added', lease: peer(5, { key: 'alpha', publicIP: '192.168.1.99' }) }] });
    expect(evs).toEqual([]);
    expect(w.peers().map((l) => l.key)).toEqual(['zeta']);
    expect(await readMetric(metrics, METRIC.leasesRejected, { reason: 'subnet-overlaps-peer' })).toBe(1);
    expect(rejections()[0]).toMatchObject({ node: 'alpha', reason: 'subnet-overlaps-peer', otherNode: 'zeta' });
    expect(await readMetric(metrics, METRIC.subnetConflicts)).toBe(1);
    // a re-list keeps the incumbent, whatever the order
    expect(w.update({ kind: 'snapshot', leases: [peer(5, { key: 'alpha', publicIP: '192.168.1.99' }), peer(5, { key: 'zeta' })] })).toEqual([]);
    expect(w.peers().map((l) => l.key)).toEqual(['zeta']);
    // when the holder goes, the waiting lease takes the subnet
    expect(brief(w.update({ kind: 'events', events: [{ type: 'removed', lease: peer(5, { key: 'zeta' }) }] }))).toEqual(['added:alpha', 'removed:zeta']);
  });

  it('first list: the oldest claimant (creationTimestamp) holds a contested subnet, whatever the names or order', async () => {
    for (const order of [
      ['a', 'b'],
      ['b', 'a'],
    ]) {
      const { w, metrics, rejections } = setup();
      const created = { a: T0 + 1000, b: T0 };
      w.update({ kind: 'snapshot', leases: order.map((k) => peer(6, { key: k, created: created[k as 'a' | 'b'] })) });
      expect(w.peers().map((l) => l.key)).toEqual(['b']);
      expect(await readMetric(metrics, METRIC.subnetConflicts)).toBe(1);
      expect(rejections()).toEqual([expect.objectContaining({ node: 'a', reason: 'subnet-overlaps-peer', otherNode: 'b' })]);
    }
  });

  it('first list: equal creation times: the name that sorts first holds the subnet, whatever the order; when it leaves, the other gets it (logged)', async () => {
    for (const order of [
      ['a', 'b'],
      ['b', 'a'],
    ]) {
      const { w, metrics, rejections, handovers } = setup();
      const evs = w.update({ kind: 'snapshot', leases: [...order.map((key) => peer(6, { key, created: T0 })), peer(2)] });
      expect(brief(evs).sort()).toEqual(['added:a', 'added:node-2']);
      expect(await readMetric(metrics, METRIC.leasesRejected, { reason: 'subnet-overlaps-peer' })).toBe(1);
      expect(await readMetric(metrics, METRIC.subnetConflicts)).toBe(1);
      expect(rejections().map((e) => [e['node'], e['otherNode']])).toEqual([['b', 'a']]);
      expect(brief(w.update({ kind: 'events', events: [{ type: 'removed', lease: peer(6, { key: 'a' }) }] }))).toEqual(['removed:a', 'added:b']);
      expect(handovers()).toEqual([expect.objectContaining({ subnet: '10.244.6.0/24', from: 'a', to: 'b' })]);
    }
  });

  it('the holder keeps its subnet when it flickers (changes, re-lists); a duplicate never takes over until it is gone', async () => {
    const { w, rejections, handovers, metrics } = setup();
    // zeta holds 10.244.5.0/24; alpha (older, and sorting first) turns up later with the same podCIDR.
    w.update({ kind: 'snapshot', leases: [peer(5, { key: 'zeta', created: T0 + 5000 })] });
    const alpha = peer(5, { key: 'alpha', created: T0, publicIP: '192.168.1.99' });
    expect(w.update({ kind: 'events', events: [{ type: 'added', lease: alpha }] })).toEqual([]);
    // the holder changes its public IP, then is seen again by a re-list: it keeps the subnet each time
    const zeta2 = peer(5, { key: 'zeta', created: T0 + 5000, publicIP: '192.168.1.55' });
    expect(brief(w.update({ kind: 'events', events: [{ type: 'added', lease: zeta2 }] }))).toEqual(['added:zeta']);
    expect(w.update({ kind: 'snapshot', leases: [alpha, zeta2] })).toEqual([]);
    expect(w.peers().map((l) => l.key)).toEqual(['zeta']);
    // logged once, counted once
    expect(rejections().filter((e) => e['node'] === 'alpha')).toHaveLength(1);
    expect(await readMetric(metrics, METRIC.subnetConflicts)).toBe(1);
    expect(handovers()).toEqual([]);
    // the holder gives the subnet up (moves to another): the subnet changes hands, logged
    const zeta3 = peer(9, { key: 'zeta', created: T0 + 5000 });
    expect(brief(w.update({ kind: 'events', events: [{ type: 'added', lease: zeta3 }] }))).toEqual(['added:alpha', 'removed:zeta', 'added:zeta']);
    expect(handovers()).toEqual([expect.objectContaining({ subnet: '10.244.5.0/24', from: 'zeta', to: 'alpha' })]);
  });

  it('three claimants of one subnet: the holder keeps it while others come and go; then the next by age, then a newcomer waits', () => {
    const { w, handovers } = setup();
    const a = peer(6, { key: 'a', created: T0 });
    const b = peer(6, { key: 'b', created: T0 + 1, publicIP: '192.168.1.98' });
    const c = peer(6, { key: 'c', created: T0 + 2, publicIP: '192.168.1.97' });
    w.update({ kind: 'snapshot', leases: [c, b, a] });
    expect(w.peers().map((l) => l.key)).toEqual(['a']);
    // b leaves, then a: c, the last claimant, takes the subnet
    expect(w.update({ kind: 'events', events: [{ type: 'removed', lease: b }] })).toEqual([]);
    expect(brief(w.update({ kind: 'events', events: [{ type: 'removed', lease: a }] }))).toEqual(['removed:a', 'added:c']);
    expect(handovers()).toEqual([expect.objectContaining({ subnet: '10.244.6.0/24', from: 'a', to: 'c' })]);
    // b (older than c) comes back: c holds, b waits; c moves away: b takes it
    expect(w.update({ kind: 'events', events: [{ type: 'added', lease: b }] })).toEqual([]);
    expect(w.store.keeperOf('10.244.6.0/24', T0 + 9)).toBe('c');
    expect(brief(w.update({ kind: 'events', events: [{ type: 'added', lease: peer(7, { key: 'c', created: T0 + 2 }) }] }))).toEqual(['added:b', 'removed:c', 'added:c']);
    // one claimant again: a re-list decides nothing anew
    w.store.takeDirty();
    expect(w.update({ kind: 'snapshot', leases: [b, peer(7, { key: 'c', created: T0 + 2 })] })).toEqual([]);
    expect(w.store.takeDirty()).toEqual([]);
  });

  it('keeps under 550 bytes of heap per accepted peer: no Set per uncontested subnet (624 bytes with one; docs/performance.md, session 13)', () => {
    const w = new LeaseSet({ ownLeaseKey: 'own', ownSubnet: '10.255.255.0/24', validation: { network: '10.0.0.0/8', subnetLen: 24, backendType: 'vxlan' } });
    const n = 10_000;
    const leases = Array.from({ length: n }, (_, i) => peer(2, { key: `peer-${i}`, subnet: `10.${1 + (i >> 8)}.${i & 255}.0/24`, publicIP: `192.168.${i >> 8}.${i & 255}` }));
    const before = heapAfterGc();
    for (const l of leases) w.store.apply({ kind: 'peers', peers: [{ key: l.key, lease: l }] });
    const perPeer = (heapAfterGc() - before) / n;
    expect(w.size).toBe(n);
    expect(perPeer).toBeLessThan(550);
  });

  it('takes 20,000 same-content updates without growing old space (a table per update was promoted; docs/performance.md, session 17)', () => {
    const w = new LeaseSet({ ownLeaseKey: 'own', ownSubnet: '10.255.255.0/24', validation: { network: '10.0.0.0/8', subnetLen: 24, backendType: 'vxlan' } });
    const leases = Array.from({ length: 1000 }, (_, i) => peer(2, { key: `peer-${i}`, subnet: `10.${1 + (i >> 8)}.${i & 255}.0/24`, publicIP: `192.168.${i >> 8}.${i & 255}` }));
    for (const l of leases) w.store.apply({ kind: 'peers', peers: [{ key: l.key, lease: l }] });
    w.store.takeDirty();
    heapAfterGc(); // the store in old space, as after a list
    const before = oldSpaceAfterScavenges();
    for (let i = 0; i < 20_000; i++) {
      const l = leases[i % leases.length];
      w.store.apply({ kind: 'peers', peers: [{ key: l.key, lease: { ...l } }] }); // a status update: the same lease again
    }
    expect(w.store.takeDirty()).toEqual([]);
    expect(oldSpaceAfterScavenges() - before).toBeLessThan(256 * 1024);
  });

  it('pages before the first complete list only add; the list then decides a contested subnet by age', () => {
    const { w } = setup();
    expect(brief(w.update({ kind: 'page', leases: [peer(2), peer(6, { key: 'newer', created: T0 + 1 })] }))).toEqual(['added:newer', 'added:node-2']);
    // a later page brings an older claimant: nothing removed yet
    expect(w.update({ kind: 'page', leases: [peer(6, { key: 'older', created: T0 })] })).toEqual([]);
    expect(w.peers().map((l) => l.key)).toEqual(['newer', 'node-2']);
    // the complete list: node-2 is gone, the older claimant holds the subnet
    const evs = w.update({ kind: 'snapshot', leases: [peer(6, { key: 'newer', created: T0 + 1 }), peer(6, { key: 'older', created: T0 })] });
    expect(brief(evs)).toEqual(['removed:newer', 'removed:node-2', 'added:older']);
  });

  it('the complete list decides again only the contested subnets: an uncontested peer listed on a page keeps its items, nothing of it dirty', () => {
    const { w } = setup();
    w.update({ kind: 'page', leases: [peer(2), peer(3), peer(6, { key: 'newer', created: T0 + 1 })] });
    w.update({ kind: 'page', leases: [peer(4), peer(6, { key: 'older', created: T0 })] });
    expect(w.store.takeDirty().sort()).toEqual(['10.244.2.0/24', '10.244.3.0/24', '10.244.4.0/24', '10.244.6.0/24']);
    const items = w.store.desiredItems();
    const evs = w.update({ kind: 'snapshot', leases: [peer(2), peer(3), peer(4), peer(6, { key: 'newer', created: T0 + 1 }), peer(6, { key: 'older', created: T0 })] });
    expect(brief(evs)).toEqual(['removed:newer', 'added:older']);
    expect(w.store.takeDirty()).toEqual(['10.244.6.0/24']);
    // The same item objects: not made again.
    for (const key of ['10.244.2.0/24', '10.244.3.0/24', '10.244.4.0/24']) expect(w.store.desired(key)).toBe(items.find((d) => d.subnet === key));
  });

  // The own Node registered again with a peer's podCIDR is judged by the same rule (src/agent.ts asks).
  it.each<[string, Lease[], number | undefined, string | undefined]>([
    ['nobody claims it', [peer(2)], T0 + 9000, undefined],
    ['an older holder keeps it', [peer(6, { key: 'a', created: T0 })], T0 + 9000, 'a'],
    ['a younger holder loses it to the older Node', [peer(6, { key: 'a', created: T0 + 9000 })], T0, undefined],
    ['an equal time: the name that sorts first keeps it (a before node-1)', [peer(6, { key: 'a', created: T0 })], T0, 'a'],
    ['an equal time: the name that sorts first keeps it (node-1 before z)', [peer(6, { key: 'z', created: T0 })], T0, undefined],
    ['an unknown time of the Node counts as the newest', [peer(6, { key: 'a', created: T0 })], undefined, 'a'],
    ['a holder of unknown age against a known time: the Node is older', [peer(6, { key: 'a' })], T0, undefined],
    ['both unknown: the name that sorts first', [peer(6, { key: 'z' })], undefined, undefined],
    ['tied claimants (no holder): the oldest of them keeps it', [peer(6, { key: 'a', created: T0 + 5 }), peer(6, { key: 'b', created: T0 + 5 })], T0 + 9000, 'a'],
    ['an invalid lease claims nothing', [peer(6, { key: 'a', created: T0, backendData: { VNI: 1, VtepMAC: '0e:2a:0a:f4:06:01' } })], T0 + 9000, undefined],
  ])('keeperOf a podCIDR the own Node was registered again with: %s', (_what, leases, created, keeper) => {
    const { w } = setup();
    w.update({ kind: 'snapshot', leases });
    expect(w.store.keeperOf('10.244.6.0/24', created)).toBe(keeper);
  });

  it('whenFree resolves once the keeper is gone; an abort rejects it', async () => {
    const { w } = setup();
    w.update({ kind: 'snapshot', leases: [peer(6, { key: 'a', created: T0 })] });
    let freed = false;
    const free = w.store.whenFree('10.244.6.0/24', T0 + 9000, new AbortController().signal).then(() => (freed = true));
    w.update({ kind: 'events', events: [{ type: 'added', lease: peer(2) }] });
    await Promise.resolve();
    expect(freed).toBe(false);
    w.update({ kind: 'events', events: [{ type: 'removed', lease: peer(6, { key: 'a' }) }] });
    await free;
    expect(freed).toBe(true);
    const ctrl = new AbortController();
    w.update({ kind: 'events', events: [{ type: 'added', lease: peer(6, { key: 'b', created: T0 }) }] });
    const waiting = w.store.whenFree('10.244.6.0/24', T0 + 9000, ctrl.signal);
    ctrl.abort(new Error('ended'));
    await expect(waiting).rejects.toThrow('ended');
  });

  it('rejection spam: one node rewriting an invalid annotation 90,000 times keeps one record and a bounded number of log lines', async () => {
    const { w, metrics, rejections, clock, entries } = setup();
    w.update({ kind: 'snapshot', leases: [peer(2)] });
    const spamMs = 10 * 60_000;
    const n = 90_000;
    const bad = (i: number) => peer(3, { backendData: { VNI: 4096, VtepMAC: `not-a-mac-${i}` } });
    let heapAfterFirst = 0;
    for (let i = 0; i < n; i++) {
      clock.t += spamMs / n;
      w.update({ kind: 'events', events: [{ type: 'added', lease: bad(i) }] });
      if (i % 1000 === 0) expect(w.rejected()).toEqual([expect.objectContaining({ key: 'node-3', reason: 'vtep-mac-invalid' })]);
      if (i === 999) heapAfterFirst = heapAfterGc();
    }
    // One record however often it is rewritten: the last 89,000 rewrites keep nothing (a record per rewrite,
    // even of 50 bytes, would be 4 MB).
    expect(heapAfterGc() - heapAfterFirst).toBeLessThan(512 * 1024);
    expect(await readMetric(metrics, METRIC.leasesRejected, { reason: 'vtep-mac-invalid' })).toBe(n);
    // one line per node and reason per minute (plus the first): 11 lines for 10 minutes, not 90,000
    expect(rejections().length).toBeLessThanOrEqual(11);
    expect(rejections().at(-1)).toMatchObject({ node: 'node-3', reason: 'vtep-mac-invalid', heldBack: expect.any(Number) });
    expect(entries.length).toBeLessThanOrEqual(20);
    // deleted: nothing about it is remembered: the same lease again is counted and logged at once, as new
    w.update({ kind: 'events', events: [{ type: 'removed', lease: peer(3) }] });
    expect(w.rejected()).toEqual([]);
    expect(w.peers().map((l) => l.key)).toEqual(['node-2']);
    const lines = rejections().length;
    w.update({ kind: 'events', events: [{ type: 'added', lease: bad(n - 1) }] });
    expect(await readMetric(metrics, METRIC.leasesRejected, { reason: 'vtep-mac-invalid' })).toBe(n + 1);
    expect(rejections()).toHaveLength(lines + 1);
    expect(rejections().at(-1)).not.toHaveProperty('heldBack');
  });
});

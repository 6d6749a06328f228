import { describe, it, expect } from '@jest/globals';
import { Writable } from 'node:stream';
import winston from 'winston';
import type { Lease, LeaseEvent } from '../../src/subnet/lease.js';
import { LeaseWatcher } from '../../src/subnet/watcher.js';
import { Metrics, METRIC } from '../../src/health/metrics.js';

function capture() {
  const entries: Record<string, unknown>[] = [];
  const stream = new Writable({
    objectMode: true,
    write(info: Record<string, unknown>, _enc, cb) {
      entries.push(info);
      cb();
    },
  });
  return { entries, transport: new winston.transports.Stream({ stream }) };
}

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
  const cap = capture();
  const log = winston.createLogger({ level: 'debug', transports: [cap.transport] });
  const metrics = new Metrics();
  const w = new LeaseWatcher({
    ownLeaseKey: 'node-1',
    ownSubnet: '10.244.1.0/24',
    validation: { network: '10.244.0.0/16', subnetLen: 24, backendType: 'vxlan' },
    log,
    metrics,
  });
  const rejections = () => cap.entries.filter((e) => e['message'] === 'peer lease rejected');
  return { w, metrics, rejections };
}

const brief = (evs: LeaseEvent[]) => evs.map((e) => `${e.type}:${e.lease.key}`);

describe('LeaseWatcher', () => {
  it('accepts a first snapshot and drops the own lease by key and by subnet', () => {
    const { w, metrics } = setup();
    const evs = w.apply({ kind: 'snapshot', leases: [peer(1), peer(2), peer(3), peer(4, { key: 'alias-of-me', subnet: '10.244.1.0/24' })] });
    expect(brief(evs)).toEqual(['added:node-2', 'added:node-3']);
    expect(w.size).toBe(2);
    expect(w.peers().map((l) => l.key)).toEqual(['node-2', 'node-3']);
    expect(metrics.get(METRIC.peers)).toBe(2);
    expect(metrics.total(METRIC.leasesRejected)).toBe(0);
  });

  it('a re-list snapshot removes peers missing from it and re-adds changed ones', () => {
    const { w, metrics } = setup();
    w.apply({ kind: 'snapshot', leases: [peer(2), peer(3), peer(4)] });
    const evs = w.apply({ kind: 'snapshot', leases: [peer(2), peer(4, { publicIP: '192.168.1.44' }), peer(5)] });
    expect(brief(evs)).toEqual(['removed:node-3', 'added:node-4', 'added:node-5']);
    expect(evs.find((e) => e.lease.key === 'node-4')!.lease.publicIP).toBe('192.168.1.44');
    expect(metrics.get(METRIC.peers)).toBe(3);
  });

  it('an unchanged re-add produces no event (heartbeats cost nothing)', () => {
    const { w } = setup();
    w.apply({ kind: 'snapshot', leases: [peer(2)] });
    expect(w.apply({ kind: 'events', events: [{ type: 'added', lease: peer(2) }] })).toEqual([]);
    // backend-data with another key order and a new expiration is the same content
    const same = peer(2, { backendData: { VtepMAC: '0e:2a:0a:f4:02:01', VNI: 4096 }, expiration: 123 });
    expect(w.apply({ kind: 'events', events: [{ type: 'added', lease: same }] })).toEqual([]);
    expect(w.peers()[0]!.expiration).toBe(123);
    expect(w.apply({ kind: 'snapshot', leases: [peer(2)] })).toEqual([]);
  });

  it('a subnet change emits removed(old) then added(new)', () => {
    const { w } = setup();
    w.apply({ kind: 'snapshot', leases: [peer(2)] });
    const evs = w.apply({ kind: 'events', events: [{ type: 'added', lease: peer(2, { subnet: '10.244.22.0/24' }) }] });
    expect(evs.map((e) => `${e.type}:${e.lease.subnet}`)).toEqual(['removed:10.244.2.0/24', 'added:10.244.22.0/24']);
  });

  it('removed events remove; removing an unknown key is a no-op', () => {
    const { w } = setup();
    w.apply({ kind: 'snapshot', leases: [peer(2), peer(3)] });
    expect(brief(w.apply({ kind: 'events', events: [{ type: 'removed', lease: peer(2) }] }))).toEqual(['removed:node-2']);
    expect(w.apply({ kind: 'events', events: [{ type: 'removed', lease: peer(9) }] })).toEqual([]);
    expect(w.apply({ kind: 'events', events: [{ type: 'removed', lease: peer(1) }] })).toEqual([]);
    expect(w.size).toBe(1);
  });

  it('a lease that turns invalid is removed and the rejection counted', () => {
    const { w, metrics } = setup();
    w.apply({ kind: 'snapshot', leases: [peer(2)] });
    const bad = peer(2, { backendData: { VNI: 1, VtepMAC: '0e:2a:0a:f4:02:01' } });
    expect(brief(w.apply({ kind: 'events', events: [{ type: 'added', lease: bad }] }))).toEqual(['removed:node-2']);
    expect(metrics.get(METRIC.leasesRejected, { reason: 'vni-too-low' })).toBe(1);
    expect(w.size).toBe(0);
    // fixed again -> added back
    expect(brief(w.apply({ kind: 'events', events: [{ type: 'added', lease: peer(2) }] }))).toEqual(['added:node-2']);
  });

  it('rejected() lists the peers rejected now, with the reason; a renewal keeps them, a fix or removal clears them', () => {
    const { w } = setup();
    const bad = peer(3, { backendData: { VNI: 1, VtepMAC: '0e:2a:0a:f4:03:01' } });
    w.apply({ kind: 'snapshot', leases: [peer(2), bad] });
    expect(w.rejected()).toEqual([{ key: 'node-3', subnet: '10.244.3.0/24', publicIP: '192.168.1.3', reason: 'vni-too-low', message: expect.any(String) }]);
    w.apply({ kind: 'events', events: [{ type: 'added', lease: { ...bad, expiration: 123 } }] }); // same content
    expect(w.rejected().map((r) => r.key)).toEqual(['node-3']);
    w.apply({ kind: 'events', events: [{ type: 'added', lease: peer(3) }] });
    expect(w.rejected()).toEqual([]);
    w.apply({ kind: 'events', events: [{ type: 'added', lease: bad }] });
    w.apply({ kind: 'events', events: [{ type: 'removed', lease: bad }] });
    expect(w.rejected()).toEqual([]);
  });

  it('logs and counts a rejected lease once per (key, reason, content), with the node name', () => {
    const { w, metrics, rejections } = setup();
    const zero = peer(7, { subnet: '0.0.0.0/0' });
    for (let i = 0; i < 3; i++) {
      expect(w.apply({ kind: 'snapshot', leases: [peer(2), zero] }).filter((e) => e.lease.key === 'node-7')).toEqual([]);
    }
    w.apply({ kind: 'events', events: [{ type: 'added', lease: zero }] });
    expect(rejections()).toHaveLength(1);
    expect(rejections()[0]).toMatchObject({ node: 'node-7', reason: 'subnet-outside-network', level: 'warn' });
    expect(metrics.get(METRIC.leasesRejected, { reason: 'subnet-outside-network' })).toBe(1);
    // different content -> logged again
    w.apply({ kind: 'events', events: [{ type: 'added', lease: { ...zero, publicIP: '192.168.1.77' } }] });
    expect(rejections()).toHaveLength(2);
    expect(w.peers().map((l) => l.key)).toEqual(['node-2']);
  });

  it('overlap with an accepted peer: the earlier one keeps its place', () => {
    const { w, metrics, rejections } = setup();
    w.apply({ kind: 'snapshot', leases: [peer(5, { key: 'zeta' })] });
    const evs = w.apply({ kind: 'events', events: [{ type: 'added', lease: peer(5, { key: 'alpha', publicIP: '192.168.1.99' }) }] });
    expect(evs).toEqual([]);
    expect(w.peers().map((l) => l.key)).toEqual(['zeta']);
    expect(metrics.get(METRIC.leasesRejected, { reason: 'subnet-overlaps-peer' })).toBe(1);
    expect(rejections()[0]).toMatchObject({ node: 'alpha', heldBy: 'zeta' });
    // a re-list keeps the incumbent, whatever the order
    expect(w.apply({ kind: 'snapshot', leases: [peer(5, { key: 'alpha', publicIP: '192.168.1.99' }), peer(5, { key: 'zeta' })] })).toEqual([]);
    expect(w.peers().map((l) => l.key)).toEqual(['zeta']);
    // when the holder goes, the waiting lease takes the subnet
    expect(brief(w.apply({ kind: 'events', events: [{ type: 'removed', lease: peer(5, { key: 'zeta' }) }] }))).toEqual([
      'added:alpha',
      'removed:zeta',
    ]);
  });

  it('overlap inside one update is decided by key order, not arrival order', () => {
    for (const order of [
      ['b', 'a'],
      ['a', 'b'],
    ]) {
      const { w } = setup();
      const leases = order.map((k) => peer(6, { key: k }));
      w.apply({ kind: 'snapshot', leases });
      expect(w.peers().map((l) => l.key)).toEqual(['a']);
    }
  });
});

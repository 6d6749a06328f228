// Taking back the own etcd lease (docs/compatibility.md §6): two agents that both believe they own a key
// must not ping-pong writes at etcd's speed. Take-backs are paced by RoundBackoff (0.8 s doubling,
// jittered, as client-go's reflector rounds: tools/cache/reflector.go), after TAKE_BACK_LIMIT of them
// within TAKE_BACK_WINDOW_MS the keeper revokes its lease (upstream's "Lease has been revoked" ends the
// agent: flannel main.go MonitorLease), and a take-back seen while a renewal is running is not lost.
import { describe, expect, it } from '@jest/globals';
import type { LeaseAttrs } from '../../../../src/subnet/lease.js';
import { LeaseKeeper, REVOKED_MESSAGE, TAKE_BACK_LIMIT, type LeaseKeeperOptions } from '../../../../src/subnet/etcd/lease-keeper.js';
import type { EtcdRegistry, PutResult, RawSubnetKv } from '../../../../src/subnet/etcd/registry.js';
import { parseNetConf } from '../../../../src/subnet/net-conf.js';
import { FakeClock, flush } from '../../../support/fake-clock.js';
import { logSink } from '../../../support/log-sink.js';

const TTL = 86_400;
const MARGIN_MS = 60 * 60_000;
const OURS: LeaseAttrs = { publicIP: '192.168.64.3', backendType: 'vxlan', backendData: { VNI: 4096, VtepMAC: '0e:2a:00:00:00:03' } };
const THEIRS = '{"PublicIP":"192.168.64.77","PublicIPv6":null,"BackendType":"vxlan","BackendData":{"VNI":4096,"VtepMAC":"0e:2a:00:00:00:77"}}';

/** An etcd holding the leases in memory; every write of the own key is counted. */
class FakeRegistry {
  readonly kvs = new Map<string, RawSubnetKv>();
  writes = 0;
  private lease = 100;
  /** When set, updateSubnet waits on it (a renewal in flight). */
  hold: Promise<void> | undefined;
  readonly subnetsPrefix = '/coreos.com/network/subnets/';
  readonly configKey = '/coreos.com/network/config';
  keyOf(name: string): string {
    return this.subnetsPrefix + name;
  }
  listSubnets(): Promise<{ kvs: RawSubnetKv[]; revision: string }> {
    return Promise.resolve({ kvs: [...this.kvs.values()], revision: '1' });
  }
  createSubnet(name: string, value: string, ttlSeconds: number): Promise<PutResult> {
    this.kvs.set(name, { name, value, leaseId: String(++this.lease) });
    return Promise.resolve({ ok: true, leaseId: String(this.lease), ttlSeconds });
  }
  async updateSubnet(name: string, value: string, ttlSeconds: number): Promise<PutResult> {
    if (this.hold) await this.hold;
    this.writes++;
    this.kvs.set(name, { name, value, leaseId: String(++this.lease) });
    return { ok: true, leaseId: String(this.lease), ttlSeconds };
  }
  revoke(): Promise<void> {
    return Promise.resolve();
  }
}

async function acquired() {
  const clock = new FakeClock();
  const reg = new FakeRegistry();
  const sink = logSink();
  const ctrl = new AbortController();
  const opts: LeaseKeeperOptions = {
    registry: reg as unknown as EtcdRegistry,
    prefix: '/coreos.com/network',
    netConf: parseNetConf('{"Network":"10.5.0.0/16","Backend":{"Type":"vxlan","VNI":4096}}'),
    publicIP: OURS.publicIP,
    renewMarginMs: MARGIN_MS,
    leaseTtlSeconds: TTL,
    renewRetryMs: 60_000,
    backoffBaseMs: 100,
    backoffCapMs: 5000,
    apiRetryTimeoutMs: 60_000,
    random: () => 0, // no jitter: pauses of 800, 1600, 3200 ... ms
    log: sink.log,
    clock,
  };
  const keeper = new LeaseKeeper(opts);
  const lease = await keeper.acquire(() => Promise.resolve(OURS), ctrl.signal);
  await flush();
  return { clock, reg, keeper, sink, ctrl, name: lease.key, ours: reg.kvs.get(lease.key)!.value };
}

/** Another writer puts its value on the own key, and the watch reports it. */
function overwrite(h: Awaited<ReturnType<typeof acquired>>): void {
  h.reg.kvs.set(h.name, { name: h.name, value: THEIRS, leaseId: '7' });
  h.keeper.observed(h.name, THEIRS);
}

describe('LeaseKeeper take-backs', () => {
  it('are paced by RoundBackoff: no write before the pause, one write after it', async () => {
    const h = await acquired();
    overwrite(h);
    await flush();
    expect(h.clock.pending()[0]).toBe(800);
    await h.clock.advance(799);
    expect(h.reg.writes).toBe(0);
    await h.clock.advance(1);
    expect(h.reg.writes).toBe(1);
    expect(h.reg.kvs.get(h.name)!.value).toBe(h.ours);

    overwrite(h);
    await flush();
    expect(h.clock.pending()[0]).toBe(1600); // doubled
    await h.clock.advance(1600);
    expect(h.reg.writes).toBe(2);
    h.ctrl.abort();
  });

  it('two agents both owning the key: the writes stop after TAKE_BACK_LIMIT take-backs, the lease is revoked', async () => {
    const h = await acquired();
    let revoked = 0;
    h.keeper.onRevoke(() => revoked++);
    // The other agent takes the key back as soon as we write it: overwrite after each of our writes.
    for (let round = 0; round < 3 * TAKE_BACK_LIMIT; round++) {
      overwrite(h);
      await h.clock.advance(60_000);
    }
    expect(h.reg.writes).toBe(TAKE_BACK_LIMIT);
    expect(revoked).toBe(1);
    expect(h.keeper.revoked).toMatchObject({ code: 'FLANNEL_ERR_LEASE_REVOKED' });
    expect(h.sink.entries.filter((e) => e['message'] === REVOKED_MESSAGE)).toHaveLength(1);
    // and no renewal writes once revoked
    await h.clock.advance(2 * TTL * 1000);
    expect(h.reg.writes).toBe(TAKE_BACK_LIMIT);
    h.ctrl.abort();
  });

  it('a take-back seen while a renewal is running is done after it', async () => {
    const h = await acquired();
    let release!: () => void;
    h.reg.hold = new Promise<void>((r) => (release = r));
    await h.clock.advance(TTL * 1000 - MARGIN_MS); // the renewal starts and waits on etcd
    expect(h.reg.writes).toBe(0);
    // The watch reports the foreign value while our renewal's call is in flight; in etcd's order that
    // write lands after the renewal's, so the key holds theirs once the renewal has returned.
    h.keeper.observed(h.name, THEIRS);
    h.reg.hold = undefined;
    release();
    await flush();
    expect(h.reg.writes).toBe(1); // the renewal
    h.reg.kvs.set(h.name, { name: h.name, value: THEIRS, leaseId: '7' });
    await h.clock.advance(800);
    expect(h.reg.writes).toBe(2); // the pending take-back
    expect(h.reg.kvs.get(h.name)!.value).toBe(h.ours);
    h.ctrl.abort();
  });
});

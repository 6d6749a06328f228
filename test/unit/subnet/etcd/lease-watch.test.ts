// The etcd peer watch (src/subnet/etcd/lease-watch.ts) against an etcd that misbehaves, held to the same
// bounds as the Node watch (docs/architecture.md, "Bounds on the list and watch loop"), on virtual time: a
// registry whose every watch is cancelled for compaction (a relist each time), whose watch streams end as
// soon as they are created, or fail, or whose list fails. Requests are counted over 15 s: a handful, each
// round after a logged pause of at least 800 ms (client-go's reflector backoff, src/basics/round-backoff.ts).
// The watch response shapes are etcd's (etcdserverpb.WatchResponse: created, canceled, compact_revision,
// cancel_reason). Each failed round is logged with its code, FLANNEL_ERR_ETCD_WATCH (docs/errors.md).
import { describe, expect, it } from '@jest/globals';
import { EventEmitter } from 'node:events';
import { Metrics } from '../../../../src/basics/metrics.js';
import type { OwnLeaseState } from '../../../../src/subnet/etcd/lease-keeper.js';
import { EtcdLeaseWatch } from '../../../../src/subnet/etcd/lease-watch.js';
import type { EtcdRegistry } from '../../../../src/subnet/etcd/registry.js';
import { FakeClock } from '../../../support/fake-clock.js';
import { logSink } from '../../../support/log-sink.js';

type Misbehaviour = 'compacted' | 'ends-at-once' | 'fails-at-once' | 'list-fails';
/** Past this many requests the run aborts (the code before the fix never paused). */
const REQUEST_CAP = 2000;

const header = { revision: '9' };

class FakeWatchStream extends EventEmitter {
  constructor(private readonly mode: Misbehaviour) {
    super();
  }
  write(): void {
    setImmediate(() => {
      if (this.mode === 'compacted') {
        this.emit('data', { created: true, canceled: true, compact_revision: '5', cancel_reason: 'mvcc: required revision has been compacted', events: [], header });
        return;
      }
      this.emit('data', { created: true, canceled: false, compact_revision: '0', cancel_reason: '', events: [], header });
      if (this.mode === 'ends-at-once') this.emit('end');
      else this.emit('error', new Error('rpc error: code = Unavailable'));
    });
  }
  end(): void {}
  cancel(): void {}
}

async function misbehaving(mode: Misbehaviour, random: () => number): Promise<{ lists: number; watches: number; pauses: Record<string, unknown>[] }> {
  const clock = new FakeClock();
  const ctrl = new AbortController();
  const counts = { lists: 0, watches: 0 };
  const capped = () => {
    if (counts.lists + counts.watches <= REQUEST_CAP) return false;
    ctrl.abort();
    return true;
  };
  const registry = {
    subnetsPrefix: '/coreos.com/network/subnets/',
    keyOf: (name: string) => `/coreos.com/network/subnets/${name}`,
    listSubnets: () => {
      counts.lists++;
      if (capped() || mode === 'list-fails') return Promise.reject(new Error('etcdserver: request timed out'));
      return Promise.resolve({ kvs: [], revision: '9' });
    },
    openWatchStream: () => {
      counts.watches++;
      if (capped()) return Promise.reject(new Error('request cap'));
      return Promise.resolve(new FakeWatchStream(mode));
    },
    subnetsWatchRequest: (start: string) => ({ start_revision: start }),
    toRaw: () => undefined,
  } as unknown as EtcdRegistry;
  const own: OwnLeaseState = { key: undefined, revoked: undefined, revoke: () => new Error('no') as never, onRevoke: () => () => undefined, observed: () => undefined };
  const { log, entries } = logSink('info');
  const watch = new EtcdLeaseWatch({ registry, own, log, metrics: new Metrics(), clock, random });
  const done = watch.run(() => undefined, ctrl.signal);
  // 15 s of virtual time in 100 ms steps, each letting the stream callbacks (setImmediate) run.
  for (let i = 0; i < 150 && !ctrl.signal.aborted; i++) await clock.advance(100);
  ctrl.abort();
  await done;
  watch.close();
  return { ...counts, pauses: entries.filter((e) => typeof e.delayMs === 'number') };
}

// The jitter at both extremes (as test/unit/basics/relist.test.ts does): the counts hold whatever it draws.
describe.each<[string, () => number]>([
  ['jitter 0', () => 0],
  ['jitter 0.999', () => 0.999],
])('EtcdLeaseWatch against a misbehaving etcd, %s', (_jitter, random) => {
  it.each<[Misbehaviour, string, boolean]>([
    ['compacted', 'fell behind compaction, backing off before relisting', true],
    ['ends-at-once', 'etcd watch failed, backing off before resuming', false],
    ['fails-at-once', 'etcd watch failed, backing off before resuming', false],
    ['list-fails', 'listing subnet leases failed, backing off', true],
  ])('%s: a handful of requests in 15 s, each round after a logged pause of 800 ms or more', async (mode, message, relists) => {
    const r = await misbehaving(mode, random);
    const rounds = mode === 'list-fails' ? r.lists : r.watches;
    expect(rounds).toBeGreaterThanOrEqual(2);
    expect(rounds).toBeLessThanOrEqual(5);
    expect(r.lists).toBeLessThanOrEqual(relists ? 5 : 1);
    expect(r.watches).toBeLessThanOrEqual(5);
    expect(r.pauses.length).toBe(rounds);
    expect(r.pauses.every((e) => String(e.message).includes(message) && (e.delayMs as number) >= 800)).toBe(true);
    // Every failed round is a coded error: the log line carries FLANNEL_ERR_ETCD_WATCH.
    if (mode !== 'compacted') expect(r.pauses.every((e) => e.code === 'FLANNEL_ERR_ETCD_WATCH')).toBe(true);
  });
});

// The peers' leases from etcd: a prefix list (the snapshot) and a watch from the next revision, turned
// into LeaseUpdates, run by the relist loop (../../basics/relist.ts). Mirrors the watch half of flannel
// pkg/subnet/etcd/registry.go (watchSubnets) and pkg/subnet/etcd/local_manager.go WatchLeases (the
// resync after compaction: leasesWatchReset on ErrCompacted). Watches are raw streams
// (EtcdRegistry.openWatchStream) resumed on the loop's abortable timers; the own lease being deleted
// or missing from a list revokes it (OwnLeaseState), which ends the watch with that error.
// The peer set itself lives in the peer store: this watch keeps only the keys it last reported (to
// report a key whose value stopped decoding as gone), reads raw values only to hand the own key's to
// OwnLeaseState.observed, and asks etcd nothing per peer: upstream's registry.go calls TimeToLive for
// every listed key and watched put to fill Lease.Expiration, which nothing here reads; a peer's expiry
// is etcd's to enforce (an expired lease deletes its key, a Delete event).
// The loop's rules (../../basics/relist.ts, never hammer the server) hold here too: an etcd watch has no clean end, so every end of a stream
// — an error, etcd closing or cancelling it, a compaction that needs a relist — and every failed list
// waits the loop's pause (client-go's reflector backoff: 800 ms doubling to 30 s, jittered, reset
// after 2 quiet minutes) before the next round; upstream's pkg/subnet/watch.go retries after 1 s flat.
import type { IWatchResponse } from 'etcd3';
import type { Clock, Random } from '../../basics/clock.js';
import { EtcdError, errorMessage, isFlannelError } from '../../basics/errors.js';
import { METRIC } from '../../basics/metrics.js';
import type { Metrics } from '../../basics/metrics.js';
import type { Logger } from '../../basics/log.js';
import type { Lease, LeaseUpdateHandler, PeerLease } from '../lease.js';
import { runRelistLoop } from '../../basics/relist.js';
import type { ListWatchSource, RelistOptions, WatchEnd } from '../../basics/relist.js';
import type { OwnLeaseState } from './lease-keeper.js';
import { decodeLeaseAttrs } from './lease-json.js';
import { closeWatchStream } from './registry.js';
import type { EtcdRegistry, RawSubnetKv, WatchStream } from './registry.js';
import { parseSubnetKey } from './subnet-key.js';

export interface LeaseWatchOptions {
  registry: EtcdRegistry;
  own: OwnLeaseState;
  log: Logger;
  metrics: Metrics;
  clock: Clock;
  /** Jitter of the pauses between rounds. */
  random: Random;
  /** The pause schedule (default client-go's reflector backoff). */
  backoff?: RelistOptions['backoff'];
}

type WatchOutcome = 'aborted' | 'compacted' | 'error' | 'revoked';

/** The `resource` label of this watch's reconnects: flannel's etcd keys live under `<prefix>/subnets/`. */
const RESOURCE = 'subnets';

interface WatchCursor {
  /** The revision the next watch starts from. */
  next: string;
  /** Set once etcd created the watch. */
  created: boolean;
  /** The watch resumes after a broken one (a reconnect once created). */
  resumed: boolean;
}

export class EtcdLeaseWatch {
  /** The keys last reported as peers with a lease (the leases themselves live in the peer store). */
  private keys = new Set<string>();
  private closed = false;
  /** Open watch streams, ended by close() should a watch still be running then. */
  private readonly streams = new Set<WatchStream>();

  constructor(private readonly o: LeaseWatchOptions) {
    o.metrics.declare(METRIC.apiReconnects, 'resource', [RESOURCE]);
  }

  /** End any open watch stream; no watch opens afterwards. Idempotent. */
  close(): void {
    this.closed = true;
    for (const s of this.streams) closeWatchStream(s);
    this.streams.clear();
  }

  /** Decode one key; undefined (with a warning) when the key or value is not a lease. */
  private toLease(kv: RawSubnetKv): Lease | undefined {
    const key = parseSubnetKey(kv.name);
    if (!key) {
      this.o.log.warn('ignoring etcd key that is not a subnet lease', { key: this.o.registry.keyOf(kv.name).slice(0, 200) });
      return undefined;
    }
    const attrs = decodeLeaseAttrs(kv.value);
    if (typeof attrs === 'string') {
      this.o.log.warn('ignoring subnet lease with a malformed value', { key: kv.name, error: attrs });
      return undefined;
    }
    const lease: Lease = { key: kv.name, subnet: key.subnet, publicIP: attrs.publicIP, backendType: attrs.backendType, backendData: attrs.backendData };
    // A dual-stack peer (upstream registry.go: IPv6Subnet from the key, PublicIPv6 from the value) gets its
    // IPv6 route; a key or value with only one of them keeps the IPv4 half only, as in kube mode.
    if (key.ipv6Subnet !== undefined && attrs.publicIPv6 !== undefined) Object.assign(lease, { ipv6Subnet: key.ipv6Subnet, publicIPv6: attrs.publicIPv6 });
    return lease;
  }

  /** List + watch until `signal` aborts or the own lease is revoked (rejects with that error). */
  async run(onUpdate: LeaseUpdateHandler, signal: AbortSignal): Promise<void> {
    const { own, log, clock, metrics, random, backoff } = this.o;
    const source: ListWatchSource<WatchCursor> = {
      list: () => this.list(onUpdate),
      watch: (cursor, s) => this.watch(cursor, onUpdate, s),
      onRetry: ({ reason, err, attempt, delayMs }) => {
        const fields = { attempt, delayMs, ...(err === undefined ? {} : { error: errorMessage(err) }), ...(isFlannelError(err) ? { code: err.code } : {}) };
        if (reason === 'list-failed') log.warn('listing subnet leases failed, backing off', fields);
        else if (reason === 'stale') log.warn(`etcd watch for ${this.o.registry.subnetsPrefix} fell behind compaction, backing off before relisting`, fields);
        else log.warn('etcd watch failed, backing off before resuming', fields);
      },
      isFatal: (err) => err !== undefined && err === own.revoked,
    };
    await runRelistLoop(source, { clock, metrics, random, backoff, resource: RESOURCE }, signal);
    if (own.revoked) throw own.revoked;
  }

  /** The complete list as a snapshot; the watch starts after its revision. */
  private async list(onUpdate: LeaseUpdateHandler): Promise<WatchCursor> {
    const { own, registry: reg, log } = this.o;
    if (own.revoked) throw own.revoked;
    const res = await reg.listSubnets().catch((err: unknown) => {
      throw watchError(`listing subnet leases under ${reg.subnetsPrefix} failed: ${errorMessage(err)}`, err);
    });
    const peers: PeerLease[] = [];
    const keys = new Set<string>();
    for (const kv of res.kvs) {
      const lease = this.toLease(kv);
      if (!lease || keys.has(lease.key)) continue;
      keys.add(lease.key);
      peers.push({ key: lease.key, lease });
    }
    this.keys = keys;
    if (own.key !== undefined && !keys.has(own.key)) throw own.revoke('is missing from the lease list');
    const ownKv = res.kvs.find((kv) => kv.name === own.key);
    if (ownKv) own.observed(ownKv.name, ownKv.value);
    log.info('subnet leases listed', { leases: keys.size, revision: res.revision });
    if (peers.length > 0) onUpdate({ kind: 'peers', peers });
    onUpdate({ kind: 'listed', keys: new Set(keys) });
    return { next: String(BigInt(res.revision) + 1n), created: false, resumed: false };
  }

  private async watch(cursor: WatchCursor, onUpdate: LeaseUpdateHandler, signal: AbortSignal): Promise<WatchEnd<WatchCursor>> {
    cursor.created = false;
    const { outcome, err } = await this.watchOnce(cursor, onUpdate, signal);
    if (cursor.created && cursor.resumed) this.o.metrics.inc(METRIC.apiReconnects, { resource: RESOURCE });
    if (outcome === 'aborted') return { kind: 'aborted' };
    if (outcome === 'revoked') throw this.o.own.revoked!;
    if (outcome === 'compacted') return { kind: 'stale' };
    // Resume from the last applied revision (etcd replays what we missed), like clientv3 does.
    cursor.resumed = true;
    return { kind: 'broken', cursor, err };
  }

  /** Apply one watch response's events in order; returns the peers they changed. */
  private applyEvents(events: { type: string; kv: RawSubnetKv }[]): PeerLease[] {
    const own = this.o.own;
    const out: PeerLease[] = [];
    for (const ev of events) {
      const name = ev.kv.name;
      if (ev.type === 'Delete') {
        if (own.key !== undefined && name === own.key) own.revoke('was deleted');
        if (this.keys.delete(name)) out.push({ key: name, lease: undefined });
        continue;
      }
      own.observed(name, ev.kv.value);
      const lease = this.toLease(ev.kv);
      if (lease) {
        this.keys.add(name);
        out.push({ key: name, lease });
      } else if (this.keys.delete(name)) {
        out.push({ key: name, lease: undefined });
      }
    }
    return out;
  }

  /**
   * One watch stream from `cursor.next` until it fails, falls behind compaction, the lease is revoked or
   * the signal aborts. `cursor.next` advances only as responses are applied, so a resumed watch neither
   * skips nor repeats events; `cursor.created` tells whether etcd accepted the watch.
   */
  private watchOnce(cursor: WatchCursor, onUpdate: LeaseUpdateHandler, signal: AbortSignal): Promise<{ outcome: WatchOutcome; err?: unknown }> {
    const { registry: reg, own, log } = this.o;
    return new Promise<{ outcome: WatchOutcome; err?: unknown }>((resolve) => {
      let settled = false;
      let stream: WatchStream | undefined;
      let chain: Promise<void> = Promise.resolve();
      let unsubscribe = (): void => undefined;
      const finish = (outcome: WatchOutcome, err?: unknown) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        unsubscribe();
        if (outcome === 'error') log.debug('etcd watch ended', { from: cursor.next, error: errorMessage(err) });
        if (stream) {
          this.streams.delete(stream);
          closeWatchStream(stream);
        }
        resolve({ outcome, err });
      };
      const onAbort = () => finish('aborted');
      if (signal.aborted || this.closed) return finish('aborted');
      if (own.revoked) return finish('revoked');
      signal.addEventListener('abort', onAbort, { once: true });
      unsubscribe = own.onRevoke(() => finish('revoked'));

      const onResponse = (res: IWatchResponse) => {
        if (settled) return;
        if (res.canceled) {
          // etcd cancels a watch whose start revision was compacted away (with created=true when it
          // never started), or for other reasons given in cancel_reason.
          const compacted = (res.compact_revision !== '' && res.compact_revision !== '0') || /compacted/i.test(res.cancel_reason);
          chain = chain.then(() => finish(compacted ? 'compacted' : 'error', watchError(`etcd cancelled the watch: ${res.cancel_reason || 'no reason given'}`)));
          return;
        }
        if (res.created) {
          cursor.created = true;
          log.debug('watching subnet leases', { from: cursor.next });
          return;
        }
        const evs: { type: string; kv: RawSubnetKv }[] = [];
        for (const e of res.events) {
          const kv = reg.toRaw(e.kv);
          if (kv) evs.push({ type: String(e.type).toUpperCase() === 'DELETE' ? 'Delete' : 'Put', kv });
        }
        const revision = res.header.revision;
        chain = chain.then(() => {
          if (settled) return;
          try {
            const events = evs.length > 0 ? this.applyEvents(evs) : [];
            if (settled) return;
            cursor.next = String(BigInt(revision) + 1n);
            if (events.length > 0) onUpdate({ kind: 'peers', peers: events });
            if (own.revoked) finish('revoked');
          } catch (err) {
            finish('error', err);
          }
        });
      };

      reg.openWatchStream().then(
        (s) => {
          if (settled) {
            closeWatchStream(s);
            return;
          }
          stream = s;
          this.streams.add(s);
          s.on('data', onResponse);
          s.on('error', (err: Error) => {
            chain = chain.then(() => finish('error', watchError(`the etcd watch stream failed: ${errorMessage(err)}`, err)));
          });
          s.on('end', () => {
            chain = chain.then(() => finish('error', watchError('etcd closed the watch stream')));
          });
          s.write({ create_request: reg.subnetsWatchRequest(cursor.next) });
        },
        (err: unknown) => finish('error', watchError(`could not open an etcd watch stream: ${errorMessage(err)}`, err)),
      );
    });
  }
}

/** A failed round of the peer list-watch; the relist loop retries it after its pause. */
function watchError(message: string, cause?: unknown): EtcdError {
  return new EtcdError('FLANNEL_ERR_ETCD_WATCH', `${message}; retried after the list-watch loop's pause`, {}, { cause });
}

// The etcd subnet manager: allocates the own subnet under `<prefix>/subnets/`, keeps its 24 h etcd lease
// renewed, and turns a prefix list + watch into LeaseUpdates. Mirrors flannel
// pkg/subnet/etcd/local_manager.go (AcquireLease/tryAcquireLease, RenewLease, CompleteLease's renew loop
// and "Lease has been revoked") and the watch half of registry.go (watchSubnets, resync after compaction).
import {
  EtcdAuthenticationFailedError,
  EtcdInvalidAuthTokenError,
  EtcdPermissionDeniedError,
  EtcdRoleNotGrantedError,
  EtcdUserNotFoundError,
} from 'etcd3';
import type { IWatchResponse } from 'etcd3';
import { backoffDelay, pause, systemClock } from '../../clock.js';
import type { Clock } from '../../clock.js';
import { BackendError, errorMessage, EtcdError, FlannelError, UnsupportedError } from '../../errors.js';
import { METRIC, Metrics } from '../../health/metrics.js';
import { silentLogger } from '../../log.js';
import type { Logger } from '../../log.js';
import type { Lease, LeaseAttrs, LeaseAttrsSource, LeaseEvent, LeaseUpdateHandler, SubnetManager } from '../lease.js';
import { publishableAttrs } from '../lease.js';
import type { NetworkConfig } from '../net-conf-types.js';
import { allocateSubnet, isSubnetConfigCompat, widerThanSubnetLen } from './allocate.js';
import { decodeLeaseAttrs, encodeLeaseAttrs } from './lease-json.js';
import { closeWatchStream } from './registry.js';
import type { EtcdRegistry, RawSubnetKv, WatchStream } from './registry.js';
import { makeSubnetKey, parseSubnetKey } from './subnet-key.js';

export const SUBNET_TTL_SECONDS = 24 * 60 * 60;
export const RACE_RETRIES = 10;
export const REVOKED_MESSAGE = 'Lease has been revoked. Shutting down daemon.';

export interface EtcdSubnetManagerOptions {
  registry: EtcdRegistry;
  /** `--etcd-prefix`, for messages. */
  prefix: string;
  netConf: NetworkConfig;
  /** The address this node publishes (`--public-ip` or the interface address): finds our old lease. */
  publicIP: string;
  /** FLANNEL_SUBNET of the previous subnet.env (network form), tried before a random subnet. */
  previousSubnet?: string;
  /** `--subnet-lease-renew-margin` in minutes (default 60). */
  renewMarginMinutes?: number;
  /** Overrides the margin in ms (tests). */
  renewMarginMs?: number;
  /** TTL of the etcd lease (default 86400 s). */
  leaseTtlSeconds?: number;
  /** Delay after a failed renewal (default 1 min, as upstream). */
  renewRetryMs?: number;
  /** Capped exponential backoff for retries and relists (default 100 ms / 5 s). */
  backoffBaseMs?: number;
  backoffCapMs?: number;
  /** How long transient etcd failures during acquire are retried (default 5 min). */
  apiRetryTimeoutMs?: number;
  /** Close the client once the signal of acquireLease/watchLeases aborts (the factory's client). */
  onClose?: () => void;
  random?: () => number;
  log?: Logger;
  metrics?: Metrics;
  clock?: Clock;
}

interface Known {
  lease: Lease;
  leaseId: string;
}

type WatchOutcome = 'aborted' | 'compacted' | 'error' | 'revoked';

interface WatchCursor {
  /** The revision the next watch starts from. */
  next: string;
  /** Set once etcd created the watch. */
  created: boolean;
}

function etcdError(what: string, err: unknown): FlannelError {
  if (err instanceof FlannelError) return err;
  return new EtcdError('FLANNEL_ERR_ETCD', `${what}: ${errorMessage(err)}; check --etcd-endpoints, TLS files and credentials`, {}, { cause: err });
}

/** etcd refused the credentials or the role: retrying cannot help. */
function isAuthError(err: unknown): boolean {
  return (
    err instanceof EtcdAuthenticationFailedError ||
    err instanceof EtcdPermissionDeniedError ||
    err instanceof EtcdInvalidAuthTokenError ||
    err instanceof EtcdUserNotFoundError ||
    err instanceof EtcdRoleNotGrantedError
  );
}


export class EtcdSubnetManager implements SubnetManager {
  readonly name = 'etcd';

  private readonly reg: EtcdRegistry;
  private readonly opts: EtcdSubnetManagerOptions;
  private readonly log: Logger;
  private readonly metrics: Metrics;
  private readonly clock: Clock;
  private readonly ttl: number;
  private own: { name: string; value: string; leaseId: string; reservation: boolean } | undefined;
  private records = new Map<string, Known>();
  /** Lease keys already logged as ignored by the allocation (ignoreKeyOnce). */
  private readonly ignoredKeys = new Set<string>();
  private revokedErr: FlannelError | undefined;
  private readonly revokeWaiters = new Set<() => void>();
  private closed = false;
  /** Open watch streams, ended by close() should a watch still be running then. */
  private readonly streams = new Set<WatchStream>();

  constructor(opts: EtcdSubnetManagerOptions) {
    this.opts = opts;
    this.reg = opts.registry;
    this.log = opts.log ?? silentLogger();
    this.metrics = opts.metrics ?? new Metrics();
    this.clock = opts.clock ?? systemClock;
    this.ttl = opts.leaseTtlSeconds ?? SUBNET_TTL_SECONDS;
    if (!opts.netConf.enableIPv4 || opts.netConf.enableIPv6) {
      throw new UnsupportedError('the etcd subnet manager of this agent supports IPv4-only networks; set EnableIPv4 true and EnableIPv6 false in the etcd config', {
        prefix: opts.prefix,
      });
    }
  }

  private get base(): number {
    return this.opts.backoffBaseMs ?? 100;
  }
  private get cap(): number {
    return this.opts.backoffCapMs ?? 5000;
  }


  /**
   * Stop using etcd: ends any open watch stream, then closes the client when the manager owns it
   * (onClose). Watches are raw streams reconnected on this manager's abortable timers (see
   * EtcdRegistry.openWatchStream), so nothing of the client keeps running afterwards. Idempotent.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const s of this.streams) closeWatchStream(s);
    this.streams.clear();
    this.opts.onClose?.();
  }

  private closeOnAbort(signal: AbortSignal): void {
    if (!this.opts.onClose) return;
    if (signal.aborted) return this.close();
    // After the watch's own abort handler has started cancelling it.
    signal.addEventListener('abort', () => setImmediate(() => this.close()), { once: true });
  }

  private revoke(why: string): void {
    if (this.revokedErr) return;
    this.log.error(REVOKED_MESSAGE, { key: this.own?.name, reason: why });
    this.revokedErr = new EtcdError('FLANNEL_ERR_LEASE_REVOKED', `${REVOKED_MESSAGE} (${this.reg.keyOf(this.own?.name ?? '?')} ${why})`, {
      key: this.own?.name,
    });
    for (const w of this.revokeWaiters) w();
    this.revokeWaiters.clear();
  }

  /** Retry transient etcd failures with capped backoff, for at most apiRetryTimeoutMs. */
  private async retry<T>(what: string, fn: () => Promise<T>, signal: AbortSignal): Promise<T> {
    const deadline = this.clock.now() + (this.opts.apiRetryTimeoutMs ?? 5 * 60_000);
    for (let attempt = 0; ; attempt++) {
      if (signal.aborted) throw signal.reason;
      try {
        return await fn();
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        if (err instanceof FlannelError || isAuthError(err) || this.clock.now() >= deadline) throw etcdError(what, err);
        const delayMs = backoffDelay(attempt, this.base, this.cap);
        this.log.warn('etcd call failed, retrying', { call: what, attempt: attempt + 1, delayMs, error: errorMessage(err) });
        await this.clock.sleep(delayMs, signal);
      }
    }
  }

  // ---- acquire + renew -----------------------------------------------------------------------------

  async acquireLease(attrsFor: LeaseAttrsSource, signal: AbortSignal): Promise<Lease> {
    this.closeOnAbort(signal);
    const { netConf } = this.opts;
    for (let i = 0; i < RACE_RETRIES; i++) {
      const lease = await this.tryAcquire(netConf, attrsFor, signal);
      if (lease) {
        void this.renewLoop(signal);
        return lease;
      }
    }
    throw new EtcdError('FLANNEL_ERR_ETCD', 'Max retries reached trying to acquire a subnet', { prefix: this.opts.prefix });
  }

  private async attrsToPublish(subnet: string, attrsFor: LeaseAttrsSource, signal: AbortSignal): Promise<LeaseAttrs> {
    const attrs = await attrsFor(subnet);
    if (signal.aborted) throw signal.reason;
    if (!publishableAttrs(attrs)) {
      throw new BackendError('FLANNEL_ERR_BACKEND', 'refusing to publish vxlan backend-data without a VtepMAC: peers could not decode it', { subnet });
    }
    if (attrs.publicIP !== this.opts.publicIP) {
      this.log.warn('backend publishes a different public IP than the one used to find our lease', { publicIP: attrs.publicIP, expected: this.opts.publicIP });
    }
    return attrs;
  }

  private ownLease(name: string, subnet: string, attrs: LeaseAttrs, ttlSeconds: number): Lease {
    const lease: Lease = { key: name, subnet, publicIP: attrs.publicIP, backendType: attrs.backendType, backendData: attrs.backendData };
    if (ttlSeconds > 0) lease.expiration = this.clock.now() + ttlSeconds * 1000;
    return lease;
  }

  /** One pass of upstream's tryAcquireLease; undefined = lost a race, try again. */
  private async tryAcquire(netConf: NetworkConfig, attrsFor: LeaseAttrsSource, signal: AbortSignal): Promise<Lease | undefined> {
    const { kvs } = await this.retry('listing subnet leases', () => this.reg.listSubnets(), signal);
    const taken: string[] = [];
    let mine: { name: string; subnet: string; ipv6: boolean; leaseId: string } | undefined;
    for (const kv of kvs) {
      const key = parseSubnetKey(kv.name);
      if (!key) continue;
      if (widerThanSubnetLen(netConf, key.subnet)) this.ignoreKeyOnce(kv.name, netConf.subnetLen);
      else taken.push(key.subnet); // a key with a bad value still holds its subnet
      const attrs = decodeLeaseAttrs(kv.value);
      if (typeof attrs !== 'string' && attrs.publicIP === this.opts.publicIP && !mine) {
        mine = { name: kv.name, subnet: key.subnet, ipv6: key.ipv6Subnet !== undefined, leaseId: kv.leaseId };
      }
    }

    if (mine) {
      if (!mine.ipv6 && isSubnetConfigCompat(netConf, mine.subnet)) {
        this.log.info(`Found lease (ip: ${mine.subnet} ipv6: ) for current IP (${this.opts.publicIP}), reusing`, { key: mine.name });
        const attrs = await this.attrsToPublish(mine.subnet, attrsFor, signal);
        const value = encodeLeaseAttrs(attrs);
        const reservation = mine.leaseId === '0';
        const res = await this.retry('updating own subnet lease', () => this.reg.updateSubnet(mine.name, value, reservation ? 0 : this.ttl, false), signal);
        this.own = { name: mine.name, value, leaseId: res.leaseId, reservation };
        if (!reservation) await this.reg.revoke(mine.leaseId).catch(() => undefined);
        return this.ownLease(mine.name, mine.subnet, attrs, res.ttlSeconds);
      }
      this.log.info(`Found lease (${mine.subnet}) for current IP (${this.opts.publicIP}) but not compatible with current config, deleting`, { key: mine.name });
      await this.retry('deleting incompatible subnet lease', () => this.reg.deleteSubnet(mine.name), signal);
      const idx = taken.indexOf(mine.subnet);
      if (idx >= 0) taken.splice(idx, 1);
    }

    let subnet: string | undefined;
    const prev = this.opts.previousSubnet;
    if (prev !== undefined && !taken.includes(prev)) {
      if (isSubnetConfigCompat(netConf, prev)) {
        this.log.info(`Found previously leased subnet (${prev}), reusing`);
        subnet = prev;
      } else {
        this.log.error(`Found previously leased subnet (${prev}) that is not compatible with the Etcd network config, ignoring`);
      }
    }
    if (subnet === undefined) {
      this.log.info(`Picking subnet in range ${netConf.subnetMin} ... ${netConf.subnetMax}`);
      subnet = allocateSubnet(netConf, taken, this.opts.random);
      if (subnet === undefined) {
        throw new EtcdError(
          'FLANNEL_ERR_ETCD',
          `out of subnets: every /${netConf.subnetLen} between SubnetMin ${netConf.subnetMin} and SubnetMax ${netConf.subnetMax} of ${netConf.network} is leased under ${this.reg.subnetsPrefix}; delete stale leases or widen the network in ${this.reg.configKey}`,
          { network: netConf.network, leases: taken.length },
        );
      }
    }
    const name = makeSubnetKey(subnet)!;
    const attrs = await this.attrsToPublish(subnet, attrsFor, signal);
    const value = encodeLeaseAttrs(attrs);
    const res = await this.retry('creating subnet lease', () => this.reg.createSubnet(name, value, this.ttl), signal);
    if (!res.ok) {
      this.log.info('subnet was taken by another node meanwhile, trying again', { subnet });
      return undefined;
    }
    this.log.info(`Allocated lease (ip: ${subnet} ipv6: ) to current node (${this.opts.publicIP}) `, { key: name, ttlSeconds: res.ttlSeconds });
    this.own = { name, value, leaseId: res.leaseId, reservation: false };
    return this.ownLease(name, subnet, attrs, res.ttlSeconds);
  }

  /** Log a lease key that cannot be a lease of this network once per key, not on every allocation. */
  private ignoreKeyOnce(name: string, subnetLen: number): void {
    if (this.ignoredKeys.has(name)) return;
    this.ignoredKeys.add(name);
    this.log.warn(`ignoring lease key wider than SubnetLen /${subnetLen} when allocating: it cannot be a lease of this network; delete it`, {
      key: this.reg.keyOf(name).slice(0, 200),
    });
  }

  /** Renew `--subnet-lease-renew-margin` before expiry; retried after failures; stops on abort/revocation. */
  private async renewLoop(signal: AbortSignal): Promise<void> {
    const own = this.own;
    if (!own || own.reservation) return;
    const margin = this.opts.renewMarginMs ?? (this.opts.renewMarginMinutes ?? 60) * 60_000;
    let expiration = this.clock.now() + this.ttl * 1000;
    let wait = Math.max(0, expiration - this.clock.now() - margin);
    for (;;) {
      try {
        await this.clock.sleep(wait, signal);
      } catch {
        return;
      }
      if (this.revokedErr) return;
      try {
        const res = await this.reg.updateSubnet(own.name, own.value, this.ttl, true);
        if (!res.ok) {
          this.revoke('was deleted (found at renewal)');
          return;
        }
        const old = own.leaseId;
        own.leaseId = res.leaseId;
        await this.reg.revoke(old).catch(() => undefined);
        expiration = this.clock.now() + res.ttlSeconds * 1000;
        this.log.info('Lease renewed, new expiration: ' + new Date(expiration).toISOString(), { key: own.name });
        wait = Math.max(0, expiration - this.clock.now() - margin);
      } catch (err) {
        if (signal.aborted) return;
        const retryMs = this.opts.renewRetryMs ?? 60_000;
        this.log.error(`Error renewing lease (trying again in ${Math.round(retryMs / 1000)}s)`, { key: own.name, error: errorMessage(err) });
        wait = retryMs;
      }
    }
  }

  async completeLease(lease: Lease, _signal: AbortSignal): Promise<void> {
    // Renewal already runs since acquireLease (upstream starts it here); nothing to publish.
    this.log.info('own lease complete', { key: lease.key, expiration: lease.expiration === undefined ? 'never' : new Date(lease.expiration).toISOString() });
  }

  // ---- list + watch --------------------------------------------------------------------------------

  /** Decode one key; undefined (with a warning) when the key or value is not a lease. */
  private async toKnown(kv: RawSubnetKv): Promise<Known | undefined> {
    const key = parseSubnetKey(kv.name);
    if (!key) {
      this.log.warn('ignoring etcd key that is not a subnet lease', { key: this.reg.keyOf(kv.name).slice(0, 200) });
      return undefined;
    }
    const attrs = decodeLeaseAttrs(kv.value);
    if (typeof attrs === 'string') {
      this.log.warn('ignoring subnet lease with a malformed value', { key: kv.name, error: attrs });
      return undefined;
    }
    const lease: Lease = { key: kv.name, subnet: key.subnet, publicIP: attrs.publicIP, backendType: attrs.backendType, backendData: attrs.backendData };
    const ttl = await this.reg.ttlSeconds(kv.leaseId);
    if (ttl !== undefined) lease.expiration = this.clock.now() + Math.max(0, ttl) * 1000;
    return { lease, leaseId: kv.leaseId };
  }

  private emit(onUpdate: LeaseUpdateHandler, update: Parameters<LeaseUpdateHandler>[0]): void {
    try {
      onUpdate(update);
    } catch (err) {
      this.log.error('lease update handler failed', { error: errorMessage(err) });
    }
  }


  async watchLeases(onUpdate: LeaseUpdateHandler, signal: AbortSignal): Promise<void> {
    this.closeOnAbort(signal);
    let failures = 0;
    let lists = 0;
    /** Where the watch resumes: after the last applied revision; undefined = (re)list first. */
    let cursor: WatchCursor | undefined;
    let resuming = false;
    while (!signal.aborted) {
      if (this.revokedErr) throw this.revokedErr;
      if (!cursor) {
        let revision: string;
        try {
          const res = await this.reg.listSubnets();
          const records = new Map<string, Known>();
          for (const k of await Promise.all(res.kvs.map((kv) => this.toKnown(kv)))) if (k) records.set(k.lease.key, k);
          this.records = records;
          revision = res.revision;
        } catch (err) {
          if (signal.aborted) break;
          const delayMs = backoffDelay(failures++, this.base, this.cap);
          this.log.warn('listing subnet leases failed, retrying', { attempt: failures, delayMs, error: errorMessage(err) });
          if (!(await pause(this.clock, delayMs, signal))) break;
          continue;
        }
        if (lists++ > 0) this.metrics.inc(METRIC.apiReconnects);
        if (this.own && !this.records.has(this.own.name)) this.revoke('is missing from the lease list');
        if (this.revokedErr) throw this.revokedErr;
        this.log.info('subnet leases listed', { leases: this.records.size, revision });
        this.emit(onUpdate, { kind: 'snapshot', leases: [...this.records.values()].map((k) => k.lease) });
        cursor = { next: String(BigInt(revision) + 1n), created: false };
        resuming = false;
      }

      cursor.created = false;
      const outcome = await this.watchOnce(cursor, onUpdate, signal);
      if (cursor.created) {
        failures = 0;
        if (resuming) this.metrics.inc(METRIC.apiReconnects);
      }
      if (outcome === 'aborted' || signal.aborted) return;
      if (outcome === 'revoked') throw this.revokedErr!;
      if (outcome === 'compacted') {
        this.log.warn(`etcd watch for ${this.reg.subnetsPrefix} fell behind compaction, re-listing and resuming`);
        failures = 0;
        cursor = undefined;
        continue;
      }
      // Resume from the last applied revision (etcd replays what we missed), like clientv3 does.
      resuming = true;
      const delayMs = backoffDelay(failures++, this.base, this.cap);
      if (!(await pause(this.clock, delayMs, signal))) return;
    }
    if (this.revokedErr) throw this.revokedErr;
  }

  /** Apply one watch response's events in order; returns the lease events to emit. */
  private async applyEvents(events: { type: string; kv: RawSubnetKv }[]): Promise<LeaseEvent[]> {
    const out: LeaseEvent[] = [];
    for (const ev of events) {
      const prev = this.records.get(ev.kv.name);
      if (ev.type === 'Delete') {
        if (this.own && ev.kv.name === this.own.name) this.revoke('was deleted');
        if (prev) {
          this.records.delete(ev.kv.name);
          out.push({ type: 'removed', lease: prev.lease });
        }
        continue;
      }
      const next = await this.toKnown(ev.kv);
      if (next) {
        this.records.set(next.lease.key, next);
        out.push({ type: 'added', lease: next.lease });
      } else if (prev) {
        this.records.delete(ev.kv.name);
        out.push({ type: 'removed', lease: prev.lease });
      }
    }
    return out;
  }

  /**
   * One watch stream from `cursor.next` until it fails, falls behind compaction, the lease is revoked or
   * the signal aborts. `cursor.next` advances only as responses are applied, so a resumed watch neither
   * skips nor repeats events; `cursor.created` tells whether etcd accepted the watch.
   */
  private watchOnce(cursor: WatchCursor, onUpdate: LeaseUpdateHandler, signal: AbortSignal): Promise<WatchOutcome> {
    return new Promise<WatchOutcome>((resolve) => {
      let settled = false;
      let stream: WatchStream | undefined;
      let chain: Promise<void> = Promise.resolve();
      const finish = (outcome: WatchOutcome, err?: unknown) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        this.revokeWaiters.delete(onRevoke);
        if (outcome === 'error') this.log.warn('etcd watch failed, reconnecting', { from: cursor.next, error: errorMessage(err) });
        if (stream) {
          this.streams.delete(stream);
          closeWatchStream(stream);
        }
        resolve(outcome);
      };
      const onAbort = () => finish('aborted');
      const onRevoke = () => finish('revoked');
      if (signal.aborted || this.closed) return finish('aborted');
      if (this.revokedErr) return finish('revoked');
      signal.addEventListener('abort', onAbort, { once: true });
      this.revokeWaiters.add(onRevoke);

      const onResponse = (res: IWatchResponse) => {
        if (settled) return;
        if (res.canceled) {
          // etcd cancels a watch whose start revision was compacted away (with created=true when it
          // never started), or for other reasons given in cancel_reason.
          const compacted = (res.compact_revision !== '' && res.compact_revision !== '0') || /compacted/i.test(res.cancel_reason);
          chain = chain.then(() => finish(compacted ? 'compacted' : 'error', new Error(`watch canceled by etcd: ${res.cancel_reason || 'no reason given'}`)));
          return;
        }
        if (res.created) {
          cursor.created = true;
          this.log.debug('watching subnet leases', { from: cursor.next });
          return;
        }
        const evs: { type: string; kv: RawSubnetKv }[] = [];
        for (const e of res.events) {
          const kv = this.reg.toRaw(e.kv);
          if (kv) evs.push({ type: String(e.type).toUpperCase() === 'DELETE' ? 'Delete' : 'Put', kv });
        }
        const revision = res.header.revision;
        chain = chain.then(async () => {
          if (settled) return;
          try {
            const events = evs.length > 0 ? await this.applyEvents(evs) : [];
            if (settled) return;
            cursor.next = String(BigInt(revision) + 1n);
            if (events.length > 0) this.emit(onUpdate, { kind: 'events', events });
            if (this.revokedErr) finish('revoked');
          } catch (err) {
            finish('error', err);
          }
        });
      };

      this.reg.openWatchStream().then(
        (s) => {
          if (settled) {
            closeWatchStream(s);
            return;
          }
          stream = s;
          this.streams.add(s);
          s.on('data', onResponse);
          s.on('error', (err: Error) => {
            chain = chain.then(() => finish('error', err));
          });
          s.on('end', () => {
            chain = chain.then(() => finish('error', new Error('etcd closed the watch stream')));
          });
          s.write({ create_request: this.reg.subnetsWatchRequest(cursor.next) });
        },
        (err: unknown) => finish('error', err),
      );
    });
  }
}

// The own subnet lease in etcd: allocate it under `<prefix>/subnets/` (our PublicIP's old lease, else the
// previous subnet.env's subnet, else a random free one), keep its TTL'd etcd lease renewed, and hold the
// revocation ("Lease has been revoked") that ends the agent. Mirrors flannel
// pkg/subnet/etcd/local_manager.go (AcquireLease/tryAcquireLease, RenewLease, CompleteLease's renew loop).
// When the peer watch sees the own key rewritten with another value (another node took our subnet while
// this agent was paused), the keeper logs it and renews at once: upstream's RenewLease puts the own
// attributes back unconditionally (registry.updateSubnet), but only at the next renewal, hours later, and
// its MonitorLease (main.go) only reads the new expiration from the event, so two nodes held one subnet.
import { retryWithBackoff } from '../../clock.js';
import type { Clock, Random } from '../../clock.js';
import { EtcdAuthenticationFailedError, EtcdInvalidAuthTokenError, EtcdPermissionDeniedError, EtcdRoleNotGrantedError, EtcdUserNotFoundError } from 'etcd3';
import { BackendError, errorMessage, EtcdError, FlannelError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { Lease, LeaseAttrs, LeaseAttrsSource } from '../lease.js';
import { publishableAttrs } from '../lease.js';
import type { NetworkConfig } from '../net-conf-types.js';
import { allocateSubnet, isSubnetConfigCompat, widerThanSubnetLen } from './allocate.js';
import { decodeLeaseAttrs, encodeLeaseAttrs } from './lease-json.js';
import type { EtcdRegistry } from './registry.js';
import { makeSubnetKey, parseSubnetKey } from './subnet-key.js';

export const SUBNET_TTL_SECONDS = 24 * 60 * 60;
export const RACE_RETRIES = 10;
export const REVOKED_MESSAGE = 'Lease has been revoked. Shutting down daemon.';

export interface LeaseKeeperOptions {
  registry: EtcdRegistry;
  /** `--etcd-prefix`, for messages. */
  prefix: string;
  netConf: NetworkConfig;
  /** The address this node publishes: finds our old lease. */
  publicIP: string;
  /** FLANNEL_SUBNET of the previous subnet.env (network form), tried before a random subnet. */
  previousSubnet?: string;
  /** Renew this long before expiry. */
  renewMarginMs: number;
  /** TTL of the etcd lease. */
  leaseTtlSeconds: number;
  /** Delay after a failed renewal. */
  renewRetryMs: number;
  backoffBaseMs: number;
  backoffCapMs: number;
  /** How long transient etcd failures during acquire are retried. */
  apiRetryTimeoutMs: number;
  /** Picks among the free subnets. */
  random: Random;
  log: Logger;
  clock: Clock;
}

/** What the peer watch needs to know of the own lease. */
export interface OwnLeaseState {
  /** The own lease's key (e.g. `10.5.3.0-24`) once acquired. */
  readonly key: string | undefined;
  readonly revoked: FlannelError | undefined;
  /** Mark the own lease revoked (once) and return the error that ends the agent. */
  revoke(why: string): FlannelError;
  /** Call `fn` once on revocation; returns the unsubscribe. */
  onRevoke(fn: () => void): () => void;
  /** The watch or a list saw the own key hold `value` (taken back when another writer changed it). */
  observed(name: string, value: string): void;
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

export class LeaseKeeper implements OwnLeaseState {
  private own: { name: string; value: string; leaseId: string; reservation: boolean } | undefined;
  /** Lease keys already logged as ignored by the allocation (ignoreKeyOnce). */
  private readonly ignoredKeys = new Set<string>();
  private revokedErr: FlannelError | undefined;
  private readonly revokeWaiters = new Set<() => void>();
  /** Ends the renewal loop's current wait: renew now. */
  private renewNow: (() => void) | undefined;

  constructor(private readonly o: LeaseKeeperOptions) {}

  get key(): string | undefined {
    return this.own?.name;
  }

  get revoked(): FlannelError | undefined {
    return this.revokedErr;
  }

  revoke(why: string): FlannelError {
    if (this.revokedErr) return this.revokedErr;
    this.o.log.error(REVOKED_MESSAGE, { key: this.own?.name, reason: why });
    const err = (this.revokedErr = new EtcdError('FLANNEL_ERR_LEASE_REVOKED', `${REVOKED_MESSAGE} (${this.o.registry.keyOf(this.own?.name ?? '?')} ${why})`, {
      key: this.own?.name,
    }));
    for (const w of this.revokeWaiters) w();
    this.revokeWaiters.clear();
    return err;
  }

  onRevoke(fn: () => void): () => void {
    this.revokeWaiters.add(fn);
    return () => this.revokeWaiters.delete(fn);
  }

  observed(name: string, value: string): void {
    const own = this.own;
    if (!own || name !== own.name || value === own.value || this.revokedErr) return;
    const theirs = decodeLeaseAttrs(value);
    this.o.log.error('own subnet lease was overwritten by another writer; taking it back', {
      key: this.o.registry.keyOf(name),
      publicIP: typeof theirs === 'string' ? undefined : theirs.publicIP,
      ownPublicIP: this.o.publicIP,
    });
    if (!own.reservation) {
      this.renewNow?.();
      return;
    }
    // A reservation (no TTL) has no renewal loop: put it back once.
    this.o.registry.updateSubnet(own.name, own.value, 0, true).catch((err: unknown) => {
      this.o.log.error('cannot take back the own subnet reservation', { key: own.name, error: errorMessage(err) });
    });
  }

  /** Rewrite the own lease's value with changed attributes (a rebuilt vxlan network's DR MAC), under a new etcd lease. */
  async republish(attrs: LeaseAttrs, signal: AbortSignal): Promise<void> {
    const own = this.own;
    if (!own) return;
    if (!publishableAttrs(attrs)) {
      throw new BackendError('FLANNEL_ERR_BACKEND', 'refusing to publish vxlan backend-data without a VtepMAC: peers could not decode it', { key: own.name });
    }
    const value = encodeLeaseAttrs(attrs);
    if (value === own.value) return;
    own.value = value; // before the write: the watch then sees our own value, not a foreign one
    const ttl = own.reservation ? 0 : this.o.leaseTtlSeconds;
    const res = await this.retry('republishing own subnet lease', () => this.o.registry.updateSubnet(own.name, value, ttl, true), signal);
    if (!res.ok) throw this.revoke('was deleted (found when republishing)');
    if (!own.reservation) {
      const old = own.leaseId;
      own.leaseId = res.leaseId;
      await this.o.registry.revoke(old).catch(() => undefined);
    }
    this.o.log.info('own subnet lease republished', { key: own.name });
  }

  /** Retry transient etcd failures with capped backoff, for at most apiRetryTimeoutMs. */
  private async retry<T>(what: string, fn: () => Promise<T>, signal: AbortSignal): Promise<T> {
    const { clock, log, backoffBaseMs, backoffCapMs } = this.o;
    try {
      return await retryWithBackoff(
        fn,
        {
          clock,
          backoffBaseMs,
          backoffCapMs,
          timeoutMs: this.o.apiRetryTimeoutMs,
          retryable: (err) => !(err instanceof FlannelError) && !isAuthError(err),
          onRetry: (err, attempt, delayMs) => log.warn('etcd call failed, retrying', { call: what, attempt, delayMs, error: errorMessage(err) }),
        },
        signal,
      );
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      throw etcdError(what, err);
    }
  }

  /** Acquire the own lease (up to RACE_RETRIES lost races), then renew it in the background until `signal` aborts. */
  async acquire(attrsFor: LeaseAttrsSource, signal: AbortSignal): Promise<Lease> {
    for (let i = 0; i < RACE_RETRIES; i++) {
      const lease = await this.tryAcquire(this.o.netConf, attrsFor, signal);
      if (lease) {
        void this.renewLoop(signal);
        return lease;
      }
    }
    throw new EtcdError('FLANNEL_ERR_ETCD', 'Max retries reached trying to acquire a subnet', { prefix: this.o.prefix });
  }

  private async attrsToPublish(subnet: string, attrsFor: LeaseAttrsSource, signal: AbortSignal): Promise<LeaseAttrs> {
    const attrs = await attrsFor(subnet);
    if (signal.aborted) throw signal.reason;
    if (!publishableAttrs(attrs)) {
      throw new BackendError('FLANNEL_ERR_BACKEND', 'refusing to publish vxlan backend-data without a VtepMAC: peers could not decode it', { subnet });
    }
    if (attrs.publicIP !== this.o.publicIP) {
      this.o.log.warn('backend publishes a different public IP than the one used to find our lease', { publicIP: attrs.publicIP, expected: this.o.publicIP });
    }
    return attrs;
  }

  private ownLease(name: string, subnet: string, attrs: LeaseAttrs, ttlSeconds: number): Lease {
    const lease: Lease = { key: name, subnet, publicIP: attrs.publicIP, backendType: attrs.backendType, backendData: attrs.backendData };
    if (ttlSeconds > 0) lease.expiration = this.o.clock.now() + ttlSeconds * 1000;
    return lease;
  }

  /** One pass of upstream's tryAcquireLease; undefined = lost a race, try again. */
  private async tryAcquire(netConf: NetworkConfig, attrsFor: LeaseAttrsSource, signal: AbortSignal): Promise<Lease | undefined> {
    const { registry: reg, log, publicIP, leaseTtlSeconds: ttl } = this.o;
    const { kvs } = await this.retry('listing subnet leases', () => reg.listSubnets(), signal);
    const taken: string[] = [];
    let mine: { name: string; subnet: string; ipv6: boolean; leaseId: string } | undefined;
    for (const kv of kvs) {
      const key = parseSubnetKey(kv.name);
      if (!key) continue;
      if (widerThanSubnetLen(netConf, key.subnet)) this.ignoreKeyOnce(kv.name, netConf.subnetLen);
      else taken.push(key.subnet); // a key with a bad value still holds its subnet
      const attrs = decodeLeaseAttrs(kv.value);
      if (typeof attrs !== 'string' && attrs.publicIP === publicIP && !mine) {
        mine = { name: kv.name, subnet: key.subnet, ipv6: key.ipv6Subnet !== undefined, leaseId: kv.leaseId };
      }
    }

    if (mine) {
      if (!mine.ipv6 && isSubnetConfigCompat(netConf, mine.subnet)) {
        log.info(`Found lease (ip: ${mine.subnet} ipv6: ) for current IP (${publicIP}), reusing`, { key: mine.name });
        const attrs = await this.attrsToPublish(mine.subnet, attrsFor, signal);
        const value = encodeLeaseAttrs(attrs);
        const reservation = mine.leaseId === '0';
        const res = await this.retry('updating own subnet lease', () => reg.updateSubnet(mine.name, value, reservation ? 0 : ttl, false), signal);
        this.own = { name: mine.name, value, leaseId: res.leaseId, reservation };
        if (!reservation) await reg.revoke(mine.leaseId).catch(() => undefined);
        return this.ownLease(mine.name, mine.subnet, attrs, res.ttlSeconds);
      }
      log.info(`Found lease (${mine.subnet}) for current IP (${publicIP}) but not compatible with current config, deleting`, { key: mine.name });
      await this.retry('deleting incompatible subnet lease', () => reg.deleteSubnet(mine.name), signal);
      const idx = taken.indexOf(mine.subnet);
      if (idx >= 0) taken.splice(idx, 1);
    }

    let subnet: string | undefined;
    const prev = this.o.previousSubnet;
    if (prev !== undefined && !taken.includes(prev)) {
      if (isSubnetConfigCompat(netConf, prev)) {
        log.info(`Found previously leased subnet (${prev}), reusing`);
        subnet = prev;
      } else {
        log.error(`Found previously leased subnet (${prev}) that is not compatible with the Etcd network config, ignoring`);
      }
    }
    if (subnet === undefined) {
      log.info(`Picking subnet in range ${netConf.subnetMin} ... ${netConf.subnetMax}`);
      subnet = allocateSubnet(netConf, taken, this.o.random);
      if (subnet === undefined) {
        throw new EtcdError(
          'FLANNEL_ERR_ETCD',
          `out of subnets: every /${netConf.subnetLen} between SubnetMin ${netConf.subnetMin} and SubnetMax ${netConf.subnetMax} of ${netConf.network} is leased under ${reg.subnetsPrefix}; delete stale leases or widen the network in ${reg.configKey}`,
          { network: netConf.network, leases: taken.length },
        );
      }
    }
    const name = makeSubnetKey(subnet)!;
    const attrs = await this.attrsToPublish(subnet, attrsFor, signal);
    const value = encodeLeaseAttrs(attrs);
    const res = await this.retry('creating subnet lease', () => reg.createSubnet(name, value, ttl), signal);
    if (!res.ok) {
      log.info('subnet was taken by another node meanwhile, trying again', { subnet });
      return undefined;
    }
    log.info(`Allocated lease (ip: ${subnet} ipv6: ) to current node (${publicIP}) `, { key: name, ttlSeconds: res.ttlSeconds });
    this.own = { name, value, leaseId: res.leaseId, reservation: false };
    return this.ownLease(name, subnet, attrs, res.ttlSeconds);
  }

  /** Log a lease key that cannot be a lease of this network once per key, not on every allocation. */
  private ignoreKeyOnce(name: string, subnetLen: number): void {
    if (this.ignoredKeys.has(name)) return;
    this.ignoredKeys.add(name);
    this.o.log.warn(`ignoring lease key wider than SubnetLen /${subnetLen} when allocating: it cannot be a lease of this network; delete it`, {
      key: this.o.registry.keyOf(name).slice(0, 200),
    });
  }

  /** Renew `--subnet-lease-renew-margin` before expiry; retried after failures; stops on abort/revocation. */
  private async renewLoop(signal: AbortSignal): Promise<void> {
    const own = this.own;
    if (!own || own.reservation) return;
    const { clock, log, registry: reg, renewMarginMs: margin, leaseTtlSeconds: ttl } = this.o;
    let expiration = clock.now() + ttl * 1000;
    let wait = Math.max(0, expiration - clock.now() - margin);
    for (;;) {
      if (signal.aborted) return;
      const wake = new AbortController();
      const onAbort = () => wake.abort(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      this.renewNow = () => wake.abort(new Error('renew now'));
      try {
        await clock.sleep(wait, wake.signal);
      } catch {
        // woken: renew now, unless the agent is stopping
      } finally {
        signal.removeEventListener('abort', onAbort);
        this.renewNow = undefined;
      }
      if (signal.aborted || this.revokedErr) return;
      try {
        const res = await reg.updateSubnet(own.name, own.value, ttl, true);
        if (!res.ok) {
          this.revoke('was deleted (found at renewal)');
          return;
        }
        const old = own.leaseId;
        own.leaseId = res.leaseId;
        await reg.revoke(old).catch(() => undefined);
        expiration = clock.now() + res.ttlSeconds * 1000;
        log.info('Lease renewed, new expiration: ' + new Date(expiration).toISOString(), { key: own.name });
        wait = Math.max(0, expiration - clock.now() - margin);
      } catch (err) {
        if (signal.aborted) return;
        const retryMs = this.o.renewRetryMs;
        log.error(`Error renewing lease (trying again in ${Math.round(retryMs / 1000)}s)`, { key: own.name, error: errorMessage(err) });
        wait = retryMs;
      }
    }
  }
}

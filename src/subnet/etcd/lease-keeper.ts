// The own subnet lease in etcd: allocate it under `<prefix>/subnets/` (our PublicIP's old lease, else the
// previous subnet.env's subnet, else a random free one), keep its TTL'd etcd lease renewed, and hold the
// revocation ("Lease has been revoked") that ends the agent. Mirrors flannel
// pkg/subnet/etcd/local_manager.go (AcquireLease/tryAcquireLease, RenewLease, CompleteLease's renew loop).
// With EnableIPv6 the lease is dual-stack as upstream's: an IPv6 subnet allocated beside the IPv4 one,
// both in the key (`10.5.52.0-24&fd00:12:13::-64`, subnet.go MakeSubnetKey), PublicIPv6 in the value.
// When the peer watch sees the own key rewritten with another value (another node took our subnet while
// this agent was paused), the keeper logs it and takes the key back: upstream's RenewLease puts the own
// attributes back unconditionally (registry.updateSubnet), but only at the next renewal, hours later, and
// its MonitorLease (main.go) only reads the new expiration from the event, so two nodes held one subnet.
// Take-backs are paced by a RoundBackoff (../../basics/round-backoff.ts: 0.8 s doubling to 30 s, jittered, as
// client-go paces its reflector rounds), so two agents that both believe they own the key do not
// ping-pong writes at etcd's speed; and after TAKE_BACK_LIMIT take-backs within TAKE_BACK_WINDOW_MS the
// keeper gives up: the own lease is revoked (FLANNEL_ERR_LEASE_REVOKED ends the agent, as upstream's
// "Lease has been revoked" does), and the restarted agent, whose PublicIP no longer finds the key,
// acquires a different subnet. A take-back seen while a renewal is running is kept pending and done
// after it. A renewal checks the key still holds our value (an etcd transaction comparing it): another
// node's value found there, a watch event missed while the agent was paused, is handled the same way.
import { retryWithBackoff } from '../../basics/clock.js';
import type { Clock, Random } from '../../basics/clock.js';
import { EtcdAuthenticationFailedError, EtcdInvalidAuthTokenError, EtcdPermissionDeniedError, EtcdRoleNotGrantedError, EtcdUserNotFoundError } from 'etcd3';
import { errorMessage, EtcdError, FlannelError } from '../../basics/errors.js';
import type { Logger } from '../../basics/log.js';
import type { Lease, LeaseAttrs, LeaseAttrsSource } from '../lease.js';
import type { NetworkConfig } from '../net-conf-types.js';
import { RoundBackoff } from '../../basics/round-backoff.js';
import { checkDualStackPublicIPv6, checkPublishableAttrs } from '../own-lease.js';
import { allocateIPv6Subnet, allocateSubnet, ipv6HalfOutsideNetwork, isIPv6SubnetConfigCompat, isSubnetConfigCompat, widerThanSubnetLen } from './allocate.js';
import { decodeLeaseAttrs, encodeLeaseAttrs } from './lease-json.js';
import type { EtcdRegistry } from './registry.js';
import { makeSubnetKey, parseSubnetKey } from './subnet-key.js';

const RACE_RETRIES = 10;
export const REVOKED_MESSAGE = 'Lease has been revoked. Shutting down daemon.';
/** Take-backs of the own key within TAKE_BACK_WINDOW_MS after which the keeper gives the subnet up. */
export const TAKE_BACK_LIMIT = 5;
const TAKE_BACK_WINDOW_MS = 10 * 60_000;

export interface LeaseKeeperOptions {
  registry: EtcdRegistry;
  /** `--etcd-prefix`, for messages. */
  prefix: string;
  netConf: NetworkConfig;
  /** The address this node publishes: finds our old lease. */
  publicIP: string;
  /** FLANNEL_SUBNET of the previous subnet.env (network form), tried before a random subnet. */
  previousSubnet?: string;
  /** FLANNEL_IPV6_SUBNET of the previous subnet.env (network form), tried with previousSubnet (dual-stack). */
  previousIPv6Subnet?: string;
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
  /** Lease keys already logged as ignored by the allocation (ignoreKeyOnce), by the half ignored. */
  private readonly ignoredKeys = new Set<string>();
  private revokedErr: FlannelError | undefined;
  private readonly revokeWaiters = new Set<() => void>();
  /** Ends the renewal loop's current wait, to schedule a pending take-back. */
  private wakeLoop: (() => void) | undefined;
  /** A take-back was observed and not yet scheduled (also when seen during a renewal). */
  private takeBackPending = false;
  /** When the take-backs of the current window were scheduled. */
  private takeBacks: number[] = [];
  private readonly takeBackBackoff: RoundBackoff;

  constructor(private readonly o: LeaseKeeperOptions) {
    this.takeBackBackoff = new RoundBackoff({ clock: o.clock, random: o.random });
  }

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
      this.takeBackPending = true;
      this.wakeLoop?.(); // else a renewal is running: the loop schedules it after
      return;
    }
    // A reservation (no TTL) has no renewal loop: put it back after the pause.
    const pause = this.takeBackPause();
    if (pause === undefined) return;
    this.o.clock
      .sleep(pause)
      .then(() => (this.revokedErr ? undefined : this.o.registry.updateSubnet(own.name, own.value, 0, true)))
      .catch((err: unknown) => {
        this.o.log.error('cannot take back the own subnet reservation', { key: own.name, error: errorMessage(err) });
      });
  }

  /**
   * The pause before the next take-back (RoundBackoff), or undefined once TAKE_BACK_LIMIT take-backs
   * fell within TAKE_BACK_WINDOW_MS: then another node holds the key as surely as we do, and the own
   * lease is revoked rather than fought over.
   */
  private takeBackPause(): number | undefined {
    const now = this.o.clock.now();
    this.takeBacks = this.takeBacks.filter((t) => now - t < TAKE_BACK_WINDOW_MS);
    if (this.takeBacks.length >= TAKE_BACK_LIMIT) {
      this.revoke(
        `was overwritten by another writer ${this.takeBacks.length + 1} times within ${TAKE_BACK_WINDOW_MS / 1000} s: another node holds this subnet; the restarted agent acquires a different one`,
      );
      return undefined;
    }
    this.takeBacks.push(now);
    return this.takeBackBackoff.next();
  }

  /** Rewrite the own lease's value with changed attributes (a rebuilt vxlan network's DR MAC), under a new etcd lease. */
  async republish(attrs: LeaseAttrs, signal: AbortSignal): Promise<void> {
    const own = this.own;
    if (!own) return;
    checkPublishableAttrs(attrs, { key: own.name });
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
    checkPublishableAttrs(attrs, { subnet });
    if (this.o.netConf.enableIPv6) checkDualStackPublicIPv6(attrs, { subnet });
    if (attrs.publicIP !== this.o.publicIP) {
      this.o.log.warn('backend publishes a different public IP than the one used to find our lease', { publicIP: attrs.publicIP, expected: this.o.publicIP });
    }
    return attrs;
  }

  private ownLease(name: string, subnet: string, subnet6: string | undefined, attrs: LeaseAttrs): Lease {
    const lease: Lease = { key: name, subnet, publicIP: attrs.publicIP, backendType: attrs.backendType, backendData: attrs.backendData };
    if (subnet6 !== undefined) Object.assign(lease, { ipv6Subnet: subnet6, publicIPv6: attrs.publicIPv6 });
    return lease;
  }

  /** One pass of upstream's tryAcquireLease; undefined = lost a race, try again. */
  private async tryAcquire(netConf: NetworkConfig, attrsFor: LeaseAttrsSource, signal: AbortSignal): Promise<Lease | undefined> {
    const { registry: reg, log, publicIP, leaseTtlSeconds: ttl } = this.o;
    const { kvs } = await this.retry('listing subnet leases', () => reg.listSubnets(), signal);
    const taken: string[] = [];
    /** The IPv6 halves of the keys (upstream's allocateSubnet skips IPv6 candidates overlapping them). */
    const taken6: string[] = [];
    let mine: { name: string; subnet: string; subnet6: string | undefined; leaseId: string } | undefined;
    for (const kv of kvs) {
      const key = parseSubnetKey(kv.name);
      if (!key) continue;
      if (widerThanSubnetLen(netConf, key.subnet)) {
        this.ignoreKeyOnce(kv.name, 'ipv4', `ignoring lease key wider than SubnetLen /${netConf.subnetLen} when allocating: it cannot be a lease of this network; delete it`);
      } else taken.push(key.subnet); // a key with a bad value still holds its subnet
      const sn6 = key.ipv6Subnet;
      if (sn6 !== undefined && netConf.enableIPv6 && ipv6HalfOutsideNetwork(netConf, sn6)) {
        this.ignoreKeyOnce(
          kv.name,
          'ipv6',
          `ignoring the IPv6 half of a lease key when allocating: it is not a /${netConf.ipv6SubnetLen} inside IPv6Network, so no node of this network wrote it; delete the key`,
          { ipv6Subnet: sn6, ipv6Network: netConf.ipv6Network },
        );
      } else if (sn6 !== undefined) taken6.push(sn6);
      const attrs = decodeLeaseAttrs(kv.value);
      if (typeof attrs !== 'string' && attrs.publicIP === publicIP && !mine) {
        mine = { name: kv.name, subnet: key.subnet, subnet6: key.ipv6Subnet, leaseId: kv.leaseId };
      }
    }

    if (mine) {
      if (isSubnetConfigCompat(netConf, mine.subnet) && isIPv6SubnetConfigCompat(netConf, mine.subnet6)) {
        log.info(`Found lease (ip: ${mine.subnet} ipv6: ${mine.subnet6 ?? ''}) for current IP (${publicIP}), reusing`, { key: mine.name });
        const attrs = await this.attrsToPublish(mine.subnet, attrsFor, signal);
        const value = encodeLeaseAttrs(attrs);
        const reservation = mine.leaseId === '0';
        const res = await this.retry('updating own subnet lease', () => reg.updateSubnet(mine.name, value, reservation ? 0 : ttl, false), signal);
        this.own = { name: mine.name, value, leaseId: res.leaseId, reservation };
        if (!reservation) await reg.revoke(mine.leaseId).catch(() => undefined);
        return this.ownLease(mine.name, mine.subnet, mine.subnet6, attrs);
      }
      log.info(`Found lease (${mine.subnet}) for current IP (${publicIP}) but not compatible with current config, deleting`, { key: mine.name });
      await this.retry('deleting incompatible subnet lease', () => reg.deleteSubnet(mine.name), signal);
      const idx = taken.indexOf(mine.subnet);
      if (idx >= 0) taken.splice(idx, 1);
      const idx6 = mine.subnet6 === undefined ? -1 : taken6.indexOf(mine.subnet6);
      if (idx6 >= 0) taken6.splice(idx6, 1);
    }

    let subnet: string | undefined;
    let subnet6: string | undefined;
    const prev = this.o.previousSubnet;
    const prev6 = netConf.enableIPv6 ? this.o.previousIPv6Subnet : undefined;
    // Upstream looks the previous subnet up by its IPv4 half only; an IPv6 half another lease holds is
    // not reused either here (the key would differ, so etcd would not stop two nodes sharing it).
    if (prev !== undefined && !taken.includes(prev) && (prev6 === undefined || !taken6.includes(prev6))) {
      if (isSubnetConfigCompat(netConf, prev) && isIPv6SubnetConfigCompat(netConf, prev6)) {
        log.info(`Found previously leased subnet (${prev}), reusing`, prev6 === undefined ? {} : { ipv6Subnet: prev6 });
        subnet = prev;
        subnet6 = prev6;
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
      if (netConf.enableIPv6) {
        log.info(`Picking ipv6 subnet in range ${netConf.ipv6SubnetMin ?? ''} ... ${netConf.ipv6SubnetMax ?? ''}`);
        subnet6 = allocateIPv6Subnet(netConf, taken6, this.o.random);
        if (subnet6 === undefined) {
          throw new EtcdError(
            'FLANNEL_ERR_ETCD',
            `out of subnets: every /${netConf.ipv6SubnetLen} between IPv6SubnetMin ${netConf.ipv6SubnetMin ?? '?'} and IPv6SubnetMax ${netConf.ipv6SubnetMax ?? '?'} of ${netConf.ipv6Network} is leased under ${reg.subnetsPrefix}; delete stale leases or widen IPv6Network in ${reg.configKey}`,
            { network: netConf.ipv6Network, leases: taken6.length },
          );
        }
      }
    }
    const name = makeSubnetKey(subnet, subnet6)!;
    const attrs = await this.attrsToPublish(subnet, attrsFor, signal);
    const value = encodeLeaseAttrs(attrs);
    const res = await this.retry('creating subnet lease', () => reg.createSubnet(name, value, ttl), signal);
    if (!res.ok) {
      log.info('subnet was taken by another node meanwhile, trying again', { subnet });
      return undefined;
    }
    log.info(`Allocated lease (ip: ${subnet} ipv6: ${subnet6 ?? ''}) to current node (${publicIP}) `, { key: name, ttlSeconds: res.ttlSeconds });
    this.own = { name, value, leaseId: res.leaseId, reservation: false };
    return this.ownLease(name, subnet, subnet6, attrs);
  }

  /** Log a lease key (or its IPv6 half) that cannot be a lease of this network once per key, not on every allocation. */
  private ignoreKeyOnce(name: string, half: 'ipv4' | 'ipv6', message: string, fields: Record<string, unknown> = {}): void {
    if (this.ignoredKeys.has(`${half} ${name}`)) return;
    this.ignoredKeys.add(`${half} ${name}`);
    this.o.log.warn(message, { key: this.o.registry.keyOf(name).slice(0, 200), ...fields });
  }

  /**
   * Renew `--subnet-lease-renew-margin` before expiry; retried after failures; a pending take-back
   * brings the next write forward to the take-back pause; stops on abort/revocation.
   */
  private async renewLoop(signal: AbortSignal): Promise<void> {
    const own = this.own;
    if (!own || own.reservation) return;
    const { clock, log, registry: reg, renewMarginMs: margin, leaseTtlSeconds: ttl } = this.o;
    let dueAt = clock.now() + ttl * 1000 - margin;
    /** The next write takes the key back (unconditionally); a plain renewal first checks the key is still ours. */
    let takeBack = false;
    for (;;) {
      if (signal.aborted || this.revokedErr) return;
      if (this.takeBackPending) {
        this.takeBackPending = false;
        takeBack = true;
        const pause = this.takeBackPause();
        if (pause === undefined) return;
        dueAt = Math.min(dueAt, clock.now() + pause);
      }
      const wake = new AbortController();
      const onAbort = () => wake.abort(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      this.wakeLoop = () => wake.abort(new Error('take back'));
      let woken = false;
      try {
        await clock.sleep(Math.max(0, dueAt - clock.now()), wake.signal);
      } catch {
        woken = true; // a take-back to schedule, or the agent is stopping
      } finally {
        signal.removeEventListener('abort', onAbort);
        this.wakeLoop = undefined;
      }
      if (woken) continue;
      if (signal.aborted || this.revokedErr) return;
      try {
        // A renewal puts our value back only where it still is: another node's value found there (a watch
        // event missed while this agent was paused) is reported and taken back as one seen by the watch.
        const res = await reg.updateSubnet(own.name, own.value, ttl, true, takeBack ? undefined : own.value);
        takeBack = false;
        if (!res.ok && typeof res.current === 'string') {
          this.observed(own.name, res.current);
          if (!this.takeBackPending) dueAt = clock.now() + this.o.renewRetryMs;
          continue;
        }
        if (!res.ok) {
          this.revoke('was deleted (found at renewal)');
          return;
        }
        const old = own.leaseId;
        own.leaseId = res.leaseId;
        await reg.revoke(old).catch(() => undefined);
        const expiration = clock.now() + res.ttlSeconds * 1000;
        log.info('Lease renewed, new expiration: ' + new Date(expiration).toISOString(), { key: own.name });
        dueAt = expiration - margin;
      } catch (err) {
        if (signal.aborted) return;
        const retryMs = this.o.renewRetryMs;
        log.error(`Error renewing lease (trying again in ${Math.round(retryMs / 1000)}s)`, { key: own.name, error: errorMessage(err) });
        dueAt = clock.now() + retryMs;
      }
    }
  }
}

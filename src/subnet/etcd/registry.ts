// Raw etcd v3 operations on flannel's keyspace: `<prefix>/config` and `<prefix>/subnets/<key>`.
// Mirrors flannel pkg/subnet/etcd/registry.go (getNetworkConfig, getSubnets, createSubnet,
// updateSubnet, deleteSubnet, the subnets watch), without any lease logic of its own.
import { posix } from 'node:path';
import type { Etcd3, IDuplexStream, IKeyValue, IWatchCreateRequest, IWatchRequest, IWatchResponse } from 'etcd3';

/** One key under `<prefix>/subnets/`, undecoded. */
export interface RawSubnetKv {
  /** The key below `<prefix>/subnets/`, e.g. `10.5.52.0-24`. */
  name: string;
  value: string;
  /** etcd lease ID (decimal string); `0` = no lease (a reservation). */
  leaseId: string;
}

/** A raw etcd v3 Watch RPC stream (see EtcdRegistry.openWatchStream). */
export type WatchStream = IDuplexStream<IWatchRequest, IWatchResponse>;

/** The range_end of a prefix request: the prefix with its last byte incremented (etcd's GetPrefixRangeEnd). */
function prefixRangeEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    const b = end[i];
    if (b < 0xff) {
      end[i] = b + 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]); // all 0xff: to the end of the keyspace
}

export interface PutResult {
  ok: boolean;
  leaseId: string;
  /** Granted TTL in seconds; 0 without a lease. */
  ttlSeconds: number;
  /** With `expect`, when the put did not happen: the key's value then (null: the key does not exist). */
  current?: string | null;
}

export class EtcdRegistry {
  readonly configKey: string;
  /** `<prefix>/subnets/` (with the slash, so `<prefix>/subnets-x` never matches). */
  readonly subnetsPrefix: string;

  constructor(
    readonly client: Etcd3,
    prefix: string,
  ) {
    this.configKey = posix.join(prefix, 'config');
    this.subnetsPrefix = posix.join(prefix, 'subnets') + '/';
  }

  keyOf(name: string): string {
    return this.subnetsPrefix + name;
  }

  /** The net-conf JSON stored at `<prefix>/config`, undefined when the key does not exist. */
  async getNetworkConfig(): Promise<string | undefined> {
    const v = await this.client.get(this.configKey).string();
    return v ?? undefined;
  }

  toRaw(kv: IKeyValue): RawSubnetKv | undefined {
    const key = kv.key.toString('utf8');
    if (!key.startsWith(this.subnetsPrefix)) return undefined;
    return { name: key.slice(this.subnetsPrefix.length), value: kv.value.toString('utf8'), leaseId: String(kv.lease || '0') };
  }

  /** Every key under `<prefix>/subnets/` and the revision the list was read at. */
  async listSubnets(): Promise<{ kvs: RawSubnetKv[]; revision: string }> {
    const res = await this.client.getAll().prefix(this.subnetsPrefix).exec();
    const kvs: RawSubnetKv[] = [];
    for (const kv of res.kvs) {
      const raw = this.toRaw(kv);
      if (raw) kvs.push(raw);
    }
    return { kvs, revision: res.header.revision };
  }

  private async grant(ttlSeconds: number): Promise<{ id: string; ttl: number }> {
    const g = await this.client.leaseClient.leaseGrant({ TTL: ttlSeconds });
    return { id: g.ID, ttl: Number(g.TTL) };
  }

  async revoke(leaseId: string): Promise<void> {
    if (leaseId === '0' || leaseId === '') return;
    await this.client.leaseClient.leaseRevoke({ ID: leaseId });
  }

  private async revokeQuietly(leaseId: string): Promise<void> {
    try {
      await this.revoke(leaseId);
    } catch {
      // The unused lease expires by itself.
    }
  }

  /** Put `value` under a fresh lease only if the key does not exist (upstream createSubnet). */
  async createSubnet(name: string, value: string, ttlSeconds: number): Promise<PutResult> {
    const key = this.keyOf(name);
    const lease = await this.grant(ttlSeconds);
    let ok: boolean;
    try {
      const res = await this.client.if(key, 'Version', '==', 0).then(this.client.put(key).value(value).lease(lease.id)).commit();
      ok = res.succeeded;
    } catch (err) {
      await this.revokeQuietly(lease.id);
      throw err;
    }
    if (!ok) await this.revokeQuietly(lease.id);
    return { ok, leaseId: lease.id, ttlSeconds: lease.ttl };
  }

  /**
   * Rewrite the key under a fresh lease (`ttlSeconds` 0: no lease, a reservation stays one). With
   * `mustExist` the put only happens while the key exists, so a renewal never resurrects a revoked lease.
   * With `expect` it only happens while the key holds that value (a renewal that finds another node's
   * value there reports it in `current` instead of overwriting it unseen).
   */
  async updateSubnet(name: string, value: string, ttlSeconds: number, mustExist: boolean, expect?: string): Promise<PutResult> {
    const key = this.keyOf(name);
    const lease = ttlSeconds > 0 ? await this.grant(ttlSeconds) : { id: '0', ttl: 0 };
    const put = this.client.put(key).value(value);
    if (lease.id !== '0') put.lease(lease.id);
    let ok = true;
    let current: string | null | undefined;
    try {
      if (expect !== undefined) {
        const res = await this.client.if(key, 'Value', '==', expect).then(put).else(this.client.get(key)).commit();
        ok = res.succeeded;
        if (!ok) {
          const kv = res.responses[0]?.response_range?.kvs[0];
          current = kv ? kv.value.toString() : null;
        }
      } else if (mustExist) ok = (await this.client.if(key, 'Version', '>', 0).then(put).commit()).succeeded;
      else await put.exec();
    } catch (err) {
      await this.revokeQuietly(lease.id);
      throw err;
    }
    if (!ok) await this.revokeQuietly(lease.id);
    return { ok, leaseId: lease.id, ttlSeconds: lease.ttl, ...(current !== undefined ? { current } : {}) };
  }

  async deleteSubnet(name: string): Promise<void> {
    await this.client.delete().key(this.keyOf(name)).exec();
  }

  /**
   * A raw Watch RPC stream; send `subnetsWatchRequest()` as its create_request. Deliberately not the
   * client's `watch()` builder: etcd3's WatchManager reconnects on its own backoff timers, which keep
   * running (and keep Node alive) after the watcher is cancelled or the client is closed. The peer watch
   * (lease-watch.ts) reconnects on the relist loop's abortable timers and ends the stream itself with
   * closeWatchStream().
   */
  openWatchStream(): Promise<WatchStream> {
    return this.client.watchClient.watch();
  }

  /** The create_request of a prefix watch of `<prefix>/subnets/` from `startRevision`. */
  subnetsWatchRequest(startRevision: string): IWatchCreateRequest {
    const key = Buffer.from(this.subnetsPrefix);
    return { key, range_end: prefixRangeEnd(key), start_revision: startRevision, progress_notify: false };
  }
}

/**
 * End a watch stream now: half-close first (so etcd3 does not count the CANCELLED status against the
 * host), then cancel the call. Safe to call twice; later stream errors are swallowed.
 */
export function closeWatchStream(stream: WatchStream): void {
  stream.on('error', () => undefined);
  try {
    stream.end();
  } catch {
    // already ended
  }
  try {
    stream.cancel();
  } catch {
    // already finished
  }
}

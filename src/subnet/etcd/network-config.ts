// Reads the network config from `<prefix>/config` and checks it like net-conf.json. Mirrors flannel
// pkg/subnet/etcd/registry.go (getNetworkConfig, errConfigNotFound) and local_manager.go
// (GetNetworkConfig: ParseConfig + CheckNetworkConfig), with main.go's wait for the config.
import { backoffDelay, systemClock } from '../../basics/clock.js';
import type { Clock } from '../../basics/clock.js';
import { errorMessage, EtcdError, FlannelError, NetConfError } from '../../basics/errors.js';
import { silentLogger } from '../../basics/log.js';
import type { Logger } from '../../basics/log.js';
import { parseNetConf } from '../net-conf.js';
import { DEFAULT_VXLAN_PORT } from '../net-conf-types.js';
import type { NetworkConfig } from '../net-conf-types.js';
import type { EtcdRegistry } from './registry.js';

const CONFIG_NOT_FOUND = 'flannel config not found in etcd store. Did you create your config using etcdv3 API?';

export interface ReadNetworkConfigOptions {
  /** How long a missing config or an unreachable etcd is waited for (default 5 min; 0 = one try). */
  waitTimeoutMs?: number;
  /** How often the wait is logged (default 10 s). */
  logIntervalMs?: number;
  backoffBaseMs?: number;
  backoffCapMs?: number;
  log?: Logger;
  clock?: Clock;
}

function notFound(key: string): NetConfError {
  const example = `{"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan", "VNI": 4096, "Port": ${DEFAULT_VXLAN_PORT}}}`;
  return new NetConfError('FLANNEL_ERR_NET_CONF', `${CONFIG_NOT_FOUND} (${key}: key not found); create it with the v3 API, e.g. ETCDCTL_API=3 etcdctl put ${key} '${example}'`, {
    key,
  });
}

/** parseNetConf, its errors naming the etcd key. */
function parseAt(key: string, text: string): NetworkConfig {
  try {
    return parseNetConf(text);
  } catch (err) {
    if (err instanceof NetConfError) throw new NetConfError('FLANNEL_ERR_NET_CONF', `${key}: ${err.message}`, { ...err.context, key }, { cause: err });
    throw err;
  }
}

/** The parsed, checked network config; waits (bounded, logged) while it is missing or etcd is down. */
export async function readNetworkConfig(registry: EtcdRegistry, signal: AbortSignal, opts: ReadNetworkConfigOptions = {}): Promise<NetworkConfig> {
  const log = opts.log ?? silentLogger();
  const clock = opts.clock ?? systemClock;
  const timeoutMs = opts.waitTimeoutMs ?? 5 * 60_000;
  const logEvery = opts.logIntervalMs ?? 10_000;
  const key = registry.configKey;
  const start = clock.now();
  let lastLog = -Infinity;
  for (let attempt = 0; ; attempt++) {
    if (signal.aborted) throw signal.reason;
    let failure: NetConfError | EtcdError;
    try {
      const text = await registry.getNetworkConfig();
      if (text !== undefined) return parseAt(key, text);
      failure = notFound(key);
    } catch (err) {
      if (err instanceof FlannelError) throw err;
      failure = new EtcdError(
        'FLANNEL_ERR_ETCD',
        `Couldn't fetch network config from ${key}: ${errorMessage(err)}; check --etcd-endpoints, TLS files and credentials`,
        { key },
        { cause: err },
      );
    }
    if (signal.aborted) throw signal.reason;
    const waited = clock.now() - start;
    if (waited >= timeoutMs) throw failure;
    if (clock.now() - lastLog >= logEvery) {
      lastLog = clock.now();
      log.warn("Couldn't fetch network config, waiting", { key, waitedS: Math.round(waited / 1000), error: failure.message });
    }
    const delay = backoffDelay(attempt, opts.backoffBaseMs ?? 250, opts.backoffCapMs ?? 5000);
    await clock.sleep(Math.max(0, Math.min(delay, timeoutMs - waited)), signal);
  }
}

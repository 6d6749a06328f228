// Builds the etcd subnet manager (and reads the network config) from the agent's flags. Mirrors the
// etcd half of flannel main.go (newSubnetManager: EtcdConfig from the flags, the previous subnet from
// subnet.env, getConfig's wait for `<prefix>/config`).
import type { Clock } from '../../basics/clock.js';
import type { AgentConfig } from '../../config/agent-config.js';
import type { Metrics } from '../../basics/metrics.js';
import { componentLogger } from '../../basics/log.js';
import type { Logger } from '../../basics/log.js';
import type { NetworkConfig } from '../net-conf-types.js';
import type { SubnetTimings } from '../timings.js';
import { createEtcdClient } from './client.js';
import type { EtcdClientConfig } from './client.js';
import { EtcdSubnetManager } from './manager.js';
import { readNetworkConfig } from './network-config.js';
import type { ReadNetworkConfigOptions } from './network-config.js';
import { EtcdRegistry } from './registry.js';

export { EtcdSubnetManager } from './manager.js';

type EtcdFlags = Pick<AgentConfig, 'etcdEndpoints' | 'etcdPrefix' | 'etcdKeyfile' | 'etcdCertfile' | 'etcdCafile' | 'etcdUsername' | 'etcdPassword'>;

function clientConfig(config: EtcdFlags, log: Logger): EtcdClientConfig {
  return {
    endpoints: config.etcdEndpoints,
    keyfile: config.etcdKeyfile,
    certfile: config.etcdCertfile,
    cafile: config.etcdCafile,
    username: config.etcdUsername,
    password: config.etcdPassword,
    log,
  };
}

export interface FetchEtcdNetworkConfigDeps extends ReadNetworkConfigOptions {
  /** Root logger; an `etcd` child is used. */
  log: Logger;
  signal: AbortSignal;
}

/**
 * etcd mode's replacement for readNetConf: the JSON at `<prefix>/config`, parsed and checked like
 * net-conf.json. Waits (logged) while the key is missing or etcd is unreachable, then throws
 * FLANNEL_ERR_NET_CONF (missing, with an etcdctl hint) or FLANNEL_ERR_ETCD. Uses its own short-lived client.
 */
export async function fetchEtcdNetworkConfig(config: EtcdFlags, deps: FetchEtcdNetworkConfigDeps): Promise<NetworkConfig> {
  const log = componentLogger(deps.log, 'etcd');
  const client = createEtcdClient(clientConfig(config, log));
  try {
    const netConf = await readNetworkConfig(new EtcdRegistry(client, config.etcdPrefix), deps.signal, { ...deps, log });
    log.info('network config read from etcd', { key: `${config.etcdPrefix}/config`, network: netConf.network, backend: netConf.backend.type });
    return netConf;
  } finally {
    client.close();
  }
}

export interface CreateEtcdSubnetManagerDeps {
  /** From fetchEtcdNetworkConfig. */
  netConf: NetworkConfig;
  /** The public IP the agent publishes (`--public-ip` or the external interface's address). */
  publicIP: string;
  /** Root logger; an `etcd` child is used. */
  log: Logger;
  metrics?: Metrics;
  clock?: Clock;
  /** Previous own subnet (FLANNEL_SUBNET of the previous subnet.env, which the agent reads once). */
  previousSubnet?: string;
  /** Previous own IPv6 subnet (FLANNEL_IPV6_SUBNET of the previous subnet.env). */
  previousIPv6Subnet?: string;
  /** The subnet manager's timings (../timings.ts), over the flag's renew margin and the defaults. */
  timings?: Partial<SubnetTimings>;
}

/** The etcd SubnetManager for `--etcd-*` flags. It owns its client and closes it when the agent's signal aborts. */
export function createEtcdSubnetManager(config: EtcdFlags & Pick<AgentConfig, 'subnetLeaseRenewMargin'>, deps: CreateEtcdSubnetManagerDeps): EtcdSubnetManager {
  const log = componentLogger(deps.log, 'etcd');
  const client = createEtcdClient(clientConfig(config, log));
  let manager: EtcdSubnetManager;
  try {
    manager = new EtcdSubnetManager({
      registry: new EtcdRegistry(client, config.etcdPrefix),
      prefix: config.etcdPrefix,
      netConf: deps.netConf,
      publicIP: deps.publicIP,
      previousSubnet: deps.previousSubnet,
      previousIPv6Subnet: deps.previousIPv6Subnet,
      onClose: () => client.close(),
      log,
      metrics: deps.metrics,
      clock: deps.clock,
      timings: { leaseRenewMarginMs: config.subnetLeaseRenewMargin * 60_000, ...deps.timings },
    });
  } catch (err) {
    client.close();
    throw err;
  }
  log.info(`Etcd Local Manager with Previous Subnet: ${deps.previousSubnet ?? 'None'}`, { endpoints: config.etcdEndpoints.join(','), prefix: config.etcdPrefix });
  return manager;
}

// Builds the dataplane the agent runs on: the simulated one (anywhere) or the native Windows one.
// Each is imported only when chosen: ./simulated-node.ts or ./win32.ts.
import type { Clock } from '../clock.js';
import type { AgentConfig } from '../config/agent-config.js';
import { errorMessage, UnsupportedError } from '../errors.js';
import type { Metrics } from '../health/metrics.js';
import type { HnsClient } from '../hns/client.js';
import { isIp4 } from '../ip4.js';
import type { Host } from '../host/host.js';
import type { Logger } from '../log.js';
import type { RouteTable } from '../routes/route-table.js';
import type { SimulatedDataplane } from './simulated.js';

export interface Dataplane {
  hns: HnsClient;
  routes: RouteTable;
  host: Host;
  /** The simulated model, when the dataplane is simulated (tests and the demo inspect it). */
  simulated?: SimulatedDataplane;
}

/** The simulated node's IP: the first --iface given as an IP, else --public-ip, else 10.0.0.2. */
export function simulatedNodeIP(config: Pick<AgentConfig, 'iface' | 'publicIP'>): string {
  return config.iface.find((i) => isIp4(i)) ?? (config.publicIP || '10.0.0.2');
}

export interface DataplaneDeps {
  log: Logger;
  metrics: Metrics;
  clock: Clock;
}

/** The per-call HNS timeout (`--hns-call-timeout`, seconds) in ms, for the transport decorator (src/hns/timed.ts). */
export function hnsCallTimeoutMs(config: Pick<AgentConfig, 'hnsCallTimeoutSeconds'>): number {
  return config.hnsCallTimeoutSeconds * 1000;
}

export async function createDataplane(config: AgentConfig, deps: DataplaneDeps): Promise<Dataplane> {
  if (config.dataplane === 'simulated') return (await import('./simulated-node.js')).createSimulatedDataplane(config, deps);
  // Loaded lazily: only the win32 modules import ffi-rs, so nothing native is touched elsewhere.
  let win32: typeof import('./win32.js');
  try {
    win32 = await import('./win32.js');
  } catch (err) {
    throw new UnsupportedError(
      'FLANNEL_ERR_UNSUPPORTED',
      `the native Windows dataplane could not be loaded (${errorMessage(err)}); on Windows install the win32 ffi-rs addon beside flanneld, elsewhere run with --dataplane simulated`,
      { dataplane: config.dataplane },
    );
  }
  return win32.createWin32Dataplane(config, deps);
}

// Builds the dataplane the agent runs on: the simulated one (anywhere) or the native Windows one.
import type { Clock } from '../clock.js';
import type { AgentConfig } from '../config/agent-config.js';
import { errorMessage, FlannelError } from '../errors.js';
import { METRIC, type Metrics } from '../health/metrics.js';
import { HnsClient } from '../hns/client.js';
import { SimulatedHnsTransport } from '../hns/simulated.js';
import type { Host } from '../host/host.js';
import { SimulatedHost } from '../host/simulated.js';
import { componentLogger, type Logger } from '../log.js';
import type { RouteTable } from '../routes/route-table.js';
import { MeteredRouteTable } from '../routes/metered.js';
import { SimulatedRouteTable } from '../routes/simulated.js';
import { SimulatedDataplane } from './simulated.js';
import { isIPv4 } from 'node:net';

export interface Dataplane {
  hns: HnsClient;
  routes: RouteTable;
  host: Host;
  /** The simulated model, when the dataplane is simulated (tests and the demo inspect it). */
  simulated?: SimulatedDataplane;
}

/** The simulated node's IP: the first --iface given as an IP, else --public-ip, else 10.0.0.2. */
export function simulatedNodeIP(config: Pick<AgentConfig, 'iface' | 'publicIP'>): string {
  return config.iface.find((i) => isIPv4(i)) ?? (config.publicIP || '10.0.0.2');
}

export interface DataplaneDeps {
  log: Logger;
  metrics: Metrics;
  clock: Clock;
}

/** HnsClient options from the config: `--hns-call-timeout` (seconds) as `callTimeoutMs`. */
export function hnsCallTimeoutMs(config: Pick<AgentConfig, 'hnsCallTimeoutSeconds'>): number {
  return config.hnsCallTimeoutSeconds * 1000;
}

export function simulatedDataplane(sim: SimulatedDataplane, deps: DataplaneDeps & { hnsCallTimeoutMs?: number }): Dataplane {
  return {
    hns: new HnsClient(new SimulatedHnsTransport(sim), {
      log: componentLogger(deps.log, 'hns'),
      metrics: deps.metrics,
      clock: deps.clock,
      callTimeoutMs: deps.hnsCallTimeoutMs,
    }),
    routes: new MeteredRouteTable(new SimulatedRouteTable(sim), deps.metrics),
    host: new SimulatedHost(sim),
    simulated: sim,
  };
}

export async function createDataplane(config: AgentConfig, deps: DataplaneDeps): Promise<Dataplane> {
  if (config.dataplane === 'simulated') {
    const sim = new SimulatedDataplane({
      statePath: config.dataplaneState || undefined,
      nodeIP: simulatedNodeIP(config),
      clock: deps.clock,
      onCall: (op) => deps.metrics.inc(METRIC.simulatedCalls, { op }),
    });
    return simulatedDataplane(sim, { ...deps, hnsCallTimeoutMs: hnsCallTimeoutMs(config) });
  }
  // Loaded lazily: only the win32 modules import ffi-rs, so nothing native is touched elsewhere.
  let win32: typeof import('./win32.js');
  try {
    win32 = await import('./win32.js');
  } catch (err) {
    throw new FlannelError(
      'FLANNEL_ERR_UNSUPPORTED',
      `the native Windows dataplane could not be loaded (${errorMessage(err)}); on Windows install the win32 ffi-rs addon beside flanneld, elsewhere run with --dataplane simulated`,
      { dataplane: config.dataplane },
    );
  }
  return win32.createWin32Dataplane(config, deps);
}

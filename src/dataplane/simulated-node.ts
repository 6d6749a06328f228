// The simulated dataplane: the HNS, route and host seams over one SimulatedDataplane model.
// Imported lazily by ./factory.ts (like ./win32.ts), so a native node never loads the simulator.
import type { AgentConfig } from '../config/agent-config.js';
import { METRIC } from '../metrics.js';
import { HnsClient } from '../hns/client.js';
import { SimulatedHnsTransport } from '../hns/simulated.js';
import { withCallTimeout } from '../hns/timed.js';
import { SimulatedHost } from '../host/simulated.js';
import { componentLogger } from '../log.js';
import { MeteredRouteTable } from '../routes/metered.js';
import { SimulatedRouteTable } from '../routes/simulated.js';
import { hnsCallTimeoutMs, simulatedNodeIP, type Dataplane, type DataplaneDeps } from './factory.js';
import { SimulatedDataplane } from './simulated.js';

export function simulatedDataplane(sim: SimulatedDataplane, deps: DataplaneDeps & { hnsCallTimeoutMs?: number }): Dataplane {
  const hnsLog = componentLogger(deps.log, 'hns');
  return {
    hns: new HnsClient(withCallTimeout(new SimulatedHnsTransport(sim), { timeoutMs: deps.hnsCallTimeoutMs, clock: deps.clock, log: hnsLog }), {
      log: hnsLog,
      metrics: deps.metrics,
      clock: deps.clock,
    }),
    routes: new MeteredRouteTable(new SimulatedRouteTable(sim), deps.metrics),
    host: new SimulatedHost(sim),
    simulated: sim,
  };
}

/** The dataplane `--dataplane simulated` runs on: in memory, or kept in `--dataplane-state`. */
export function createSimulatedDataplane(config: AgentConfig, deps: DataplaneDeps): Dataplane {
  const sim = new SimulatedDataplane({
    statePath: config.dataplaneState || undefined,
    nodeIP: simulatedNodeIP(config),
    clock: deps.clock,
    onCall: (op) => deps.metrics.inc(METRIC.simulatedCalls, { op }),
  });
  return simulatedDataplane(sim, { ...deps, hnsCallTimeoutMs: hnsCallTimeoutMs(config) });
}

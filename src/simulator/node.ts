// The simulated node as the agent meets it: the HNS, route and host seams over one SimulatedDataplane
// model (`--dataplane simulated`). Imported lazily by src/dataplane/factory.ts (like the win32 dataplane),
// so a native node never loads the simulator. The builder hands back the model beside the seams, for
// whoever built the node (the demo, tests, benchmarks) to look at; the agent only ever gets the seams.
import type { Clock } from '../basics/clock.js';
import type { AgentConfig } from '../config/agent-config.js';
import { METRIC, type Metrics } from '../basics/metrics.js';
import type { HnsVersion } from '../hns/schema.js';
import { HnsClient } from '../hns/client.js';
import { withCallTimeout } from '../hns/timed.js';
import type { Host } from '../host/host.js';
import { isIp4 } from '../basics/ip4.js';
import { componentLogger, type Logger } from '../basics/log.js';
import { MeteredRouteTable } from '../routes/metered.js';
import type { RouteTable } from '../routes/route-table.js';
import { SimulatedHnsTransport } from './hns.js';
import { SimulatedHost, SimulatedRouteTable } from './host.js';
import { SimulatedDataplane } from './model.js';

export interface SimulatedNodeDeps {
  log: Logger;
  metrics: Metrics;
  clock: Clock;
  /** The per-call HNS timeout (src/hns/timed.ts); 0 or absent = none. */
  hnsCallTimeoutMs?: number;
  /** What the simulated HNS reports as its version when the state file names none (default 15.4, ./hns.ts). */
  hnsVersion?: HnsVersion;
  /** Aborts when the agent stops (./model.ts: ends a wait for the state file's lock). */
  signal?: AbortSignal;
}

/** The seams the agent takes (src/dataplane/factory.ts `Dataplane`). */
export interface SimulatedSeams {
  hns: HnsClient;
  routes: RouteTable;
  host: Host;
}

/** A simulated node: the seams, and the model behind them. */
export interface SimulatedNode {
  dataplane: SimulatedSeams;
  model: SimulatedDataplane;
}

/** The simulated node's IP: the first --iface given as an IP, else --public-ip, else 10.0.0.2. */
export function simulatedNodeIP(config: Pick<AgentConfig, 'iface' | 'publicIP'>): string {
  return config.iface.find((i) => isIp4(i)) ?? (config.publicIP || '10.0.0.2');
}

/** The seams over an existing model. */
export function simulatedSeams(model: SimulatedDataplane, deps: SimulatedNodeDeps): SimulatedSeams {
  const hnsLog = componentLogger(deps.log, 'hns');
  return {
    hns: new HnsClient(
      withCallTimeout(new SimulatedHnsTransport(model, deps.hnsVersion ? { version: deps.hnsVersion } : {}), {
        timeoutMs: deps.hnsCallTimeoutMs,
        clock: deps.clock,
        log: hnsLog,
        metrics: deps.metrics,
      }),
      {
        log: hnsLog,
        metrics: deps.metrics,
        clock: deps.clock,
      },
    ),
    routes: new MeteredRouteTable(new SimulatedRouteTable(model), deps.metrics, deps.clock),
    host: new SimulatedHost(model),
  };
}

/** The node `--dataplane simulated` runs on: in memory, or kept in `--dataplane-state`. */
export function createSimulatedNode(config: AgentConfig, deps: Omit<SimulatedNodeDeps, 'hnsCallTimeoutMs'>): SimulatedNode {
  const model = new SimulatedDataplane({
    statePath: config.dataplaneState || undefined,
    nodeIP: simulatedNodeIP(config),
    clock: deps.clock,
    onCall: (op) => deps.metrics.inc(METRIC.simulatedCalls, { op }),
    ...(deps.signal ? { signal: deps.signal } : {}),
  });
  return { model, dataplane: simulatedSeams(model, { ...deps, hnsCallTimeoutMs: config.hnsCallTimeoutSeconds * 1000 }) };
}

// The agent's parts: the jobs it runs beside the network it leases (the readiness loop, the net-conf watch,
// the CNI config check; a NetworkPolicy controller would be one more). Each is built from the same shared
// deps (PartDeps: the config, the dataplane, the subnet manager (../subnet/lease.ts), the metrics, the Node's
// Events, the network), started once the first network is up and run until the agent stops; each may say what
// keeps the node from serving pods (its readiness contribution: /readyz, /status, the NetworkUnavailable
// condition) and what /status shows of it. A new part is a module of its own and one entry in src/agent.ts's
// list, as a Felix manager is one RegisterManager call on the Windows dataplane driver, whose loop then fans
// out to every registered manager (projectcalico/calico felix/dataplane/windows/win_dataplane.go).
import type { Network } from '../backends/backend.js';
import type { Clock } from '../basics/clock.js';
import type { Logger } from '../basics/log.js';
import type { Metrics } from '../basics/metrics.js';
import type { AgentConfig } from '../config/agent-config.js';
import type { Dataplane } from '../dataplane/factory.js';
import type { StatusInput } from '../health/status.js';
import type { NodeEvents } from '../node-events.js';
import type { SubnetManager } from '../subnet/lease.js';
import type { NetworkConfig } from '../subnet/net-conf-types.js';

/** What every part is built with: the agent's flags and what the agent built once for all of them. */
export interface PartDeps {
  config: AgentConfig;
  /** The net-conf the node runs (--ipv4-only applied). */
  netConf: NetworkConfig;
  dataplane: Dataplane;
  subnetManager: SubnetManager;
  metrics: Metrics;
  clock: Clock;
  /** The root logger: a part logs through a componentLogger child of its own. */
  log: Logger;
  /** The network the agent runs now (undefined before the first lease; a new lease round replaces it). */
  network(): Network | undefined;
  /** Events on the own Node, for the current lease (none in etcd mode, or before the first lease). */
  events(): NodeEvents;
}

/**
 * One thing that keeps this node from serving pods although its network is up: it reaches no peer (the
 * cluster mismatch), or a pod cannot start (a CNI problem). `check` is its stable id, `reason` the
 * NetworkUnavailable condition's reason.
 */
export interface PodNetworkProblem {
  check: string;
  reason: string;
  detail: string;
  fix: string;
}

export interface AgentPart {
  /** Names the part (the log line of a part that stopped). */
  readonly name: string;
  /**
   * Runs from the first network on until `signal` aborts. A rejection stops the agent, as a failed network
   * does: a part retries what it can itself and gives up only on what a restart would mend.
   */
  run?(signal: AbortSignal): Promise<void>;
  /**
   * After the network was settled (src/backends/backend.ts Network.settle): registered, or rebuilt after HNS
   * lost it (with it the endpoints, and what was applied to them). A failure makes a rebuild retry.
   */
  settled?(network: Network): Promise<void>;
  /** What keeps the node from serving pods, as this part sees it now: read at every /readyz and /status, so cheap. */
  problems?(): PodNetworkProblem[];
  /** Repair what it can of its `problems` before the Node is told about them; they are read again after. */
  repair?(problems: readonly PodNetworkProblem[]): Promise<void>;
  /** Its problems the Node is told changed (`before` undefined at the first check): log them, record Events. */
  changed?(problems: readonly PodNetworkProblem[], before: readonly PodNetworkProblem[] | undefined): void;
  /** Its part of /status, given its `problems` as this request read them. */
  status?(problems: readonly PodNetworkProblem[]): Partial<StatusInput>;
}

/**
 * Run every part's `run` until `signal` aborts; `fail` is called with the first error of a part that
 * rejected while the signal was not aborted (the caller stops the others). Settles once all have.
 */
export async function runParts(parts: readonly AgentPart[], signal: AbortSignal, fail: (part: AgentPart, err: unknown) => void): Promise<void> {
  await Promise.all(
    parts.map((part) =>
      (part.run?.(signal) ?? Promise.resolve()).catch((err: unknown) => {
        if (!signal.aborted) fail(part, err);
      }),
    ),
  );
}

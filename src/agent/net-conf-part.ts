// The net-conf.json re-check (../subnet/net-conf-watch.ts) as one of the agent's parts (./part.ts): in kube
// mode net-conf.json is a file (a mounted ConfigMap), and a change under the running agent is said (a log
// line, an Event) until a restart applies it. Its failure stops only the re-check, never the agent.
import { errorMessage } from '../basics/errors.js';
import { componentLogger } from '../basics/log.js';
import type { NetworkConfig } from '../subnet/net-conf-types.js';
import type { AgentPart, PartDeps } from './part.js';

export interface NetConfPartOptions {
  /** Reads and parses net-conf.json (readNetConf). */
  read: (path: string) => NetworkConfig;
  /** How often it is read again; default the watch's. */
  intervalMs?: number;
}

export function netConfPart(deps: PartDeps, opts: NetConfPartOptions): AgentPart {
  return {
    name: 'net-conf',
    async run(signal) {
      const { watchNetConf } = await import('../subnet/net-conf-watch.js');
      await watchNetConf({
        path: deps.config.netConfigPath,
        read: opts.read,
        running: deps.netConf,
        clock: deps.clock,
        intervalMs: opts.intervalMs,
        log: componentLogger(deps.log, 'net-conf'),
        events: { record: (event) => deps.events().record(event) },
        signal,
      }).catch((err: unknown) => componentLogger(deps.log, 'agent').warn('net-conf.json re-check stopped', { error: errorMessage(err) }));
    },
  };
}

// The cluster mismatch as one of the agent's parts (./part.ts): the cluster has peers and this node rejects
// every one for a cluster-configuration mismatch (backend type, VNI; ../peers/cluster-mismatch.ts), so it
// reaches none: not ready, the NetworkUnavailable reason, an Event, and /status's `clusterMismatch`.
import { componentLogger } from '../basics/log.js';
import { clusterMismatchEvent } from '../node-events.js';
import { clusterMismatch } from '../peers/cluster-mismatch.js';
import type { AgentPart, PartDeps } from './part.js';

export function clusterConfigPart(deps: PartDeps): AgentPart {
  const log = componentLogger(deps.log, 'agent');
  const { backend } = deps.netConf;
  const problems = () => {
    const network = deps.network();
    const mismatch =
      network &&
      clusterMismatch(network.status(), {
        type: backend.type,
        ...(backend.type === 'vxlan' ? { vni: backend.vni } : {}),
        netConfPath: deps.config.netConfigPath,
      });
    return mismatch ? [mismatch] : [];
  };
  return {
    name: 'cluster-config',
    problems,
    changed(now, before) {
      for (const p of now) {
        log.warn('this node reaches no peer: it rejects every peer for a cluster configuration mismatch', { check: p.check, reason: p.reason, detail: p.detail, fix: p.fix });
        if (!before?.length) deps.events().record(clusterMismatchEvent(p.detail, p.fix));
      }
      if (before?.length && now.length === 0) log.info('a peer is accepted again: this node reaches the cluster');
    },
    status: ([mismatch]) => ({ clusterMismatch: mismatch }),
  };
}

// --network-policy as one of the agent's parts (./part.ts): the NetworkPolicy controller
// (src/policy/controller.ts) built from the agent's shared deps, run from the first network on, its view in
// `flanneld status`. One line in src/agent.ts, as a Felix manager is one RegisterManager call
// (projectcalico/calico felix/dataplane/windows/win_dataplane.go).
import type { AgentPart, PartDeps } from './part.js';
import { componentLogger } from '../basics/log.js';
import { NetpolController } from '../policy/controller.js';
import { netpolSources } from '../policy/sources.js';

export function netpolPart(deps: PartDeps): AgentPart {
  const watch = deps.subnetManager.watchDeps;
  if (watch === undefined) throw new Error('internal: --network-policy without the kube subnet manager (the flag parser refuses it)');
  const log = componentLogger(deps.log, 'netpol');
  const { clock, metrics } = deps;
  const controller = new NetpolController({
    hns: deps.dataplane.hns,
    nodeName: deps.config.nodeName ?? '',
    networkName: () => deps.network()?.networkName,
    nodeIPs: () => {
      const lease = deps.network()?.lease;
      return [lease?.publicIP, lease?.publicIPv6].filter((ip): ip is string => ip !== undefined && ip !== '');
    },
    sources: netpolSources({ ...watch, log, metrics, clock }),
    events: () => deps.events(),
    clock,
    log,
    metrics,
  });
  return {
    name: 'network-policy',
    run: (signal) => controller.run(signal),
    status: () => ({ networkPolicy: controller.status() }),
  };
}

// The dual-stack guidance (../health/dual-stack.ts) as one of the agent's parts (./part.ts): on a node that
// leased an IPv6 subnet, /status's `dualStack` names the IPv6 lease and what the kubelet and kube-proxy need.
import { dualStackGuidance } from '../health/dual-stack.js';
import type { AgentPart, PartDeps } from './part.js';

export function dualStackPart(deps: PartDeps): AgentPart {
  return {
    name: 'dual-stack',
    status() {
      const network = deps.network();
      const lease = network?.lease;
      if (!network || lease?.ipv6Subnet === undefined || lease.publicIPv6 === undefined) return {};
      const guidance = dualStackGuidance({
        nodeIP: lease.publicIP,
        nodeIPv6: lease.publicIPv6,
        network: deps.netConf.network,
        ipv6Network: deps.netConf.ipv6Network,
        networkName: network.networkName,
        internalIPs: deps.subnetManager.nodeInternalIPs?.(),
      });
      return { dualStack: { ipv6Subnet: lease.ipv6Subnet, publicIPv6: lease.publicIPv6, ...guidance } };
    },
  };
}

// What a dual-stack node needs beside this agent, for `flanneld status` and start.ps1: the kubelet's
// `--node-ip=<v4>,<v6>` (without it the Node has an InternalIP of one family and kube-proxy runs single-stack
// there), kube-proxy winkernel's `--cluster-cidr=<v4>,<v6>` and the HNS network it attaches service
// endpoints to (`KUBE_NETWORK` / winkernel `networkName`), as the Kubernetes dual-stack guide
// (kubernetes.io/docs/concepts/services-networking/dual-stack, "Configure IPv4/IPv6 dual-stack") lists
// them. Pure.
import { isIPv4, isIPv6 } from 'node:net';

export interface DualStackFacts {
  /** The node's IPv4 and IPv6 addresses (published public IPs). */
  nodeIP: string;
  nodeIPv6: string;
  /** net-conf Network and IPv6Network (the cluster CIDRs). */
  network: string;
  ipv6Network: string;
  /** The HNS network pods and kube-proxy use. */
  networkName: string;
  /** The own Node's status.addresses InternalIP values, when the kube subnet manager read them. */
  internalIPs?: readonly string[];
}

export interface DualStackGuidance {
  kubelet: string[];
  kubeProxy: string[];
  warnings: string[];
}

export function dualStackGuidance(f: DualStackFacts): DualStackGuidance {
  const warnings: string[] = [];
  const ips = f.internalIPs;
  if (ips !== undefined) {
    const v4 = ips.some((ip) => isIPv4(ip));
    const v6 = ips.some((ip) => isIPv6(ip));
    if (v4 !== v6) {
      warnings.push(
        `the Node has an InternalIP of one family only (${ips.join(', ')}): kube-proxy and the API server treat it as single-stack; start the kubelet with --node-ip=${f.nodeIP},${f.nodeIPv6}`,
      );
    }
  }
  return {
    kubelet: [`--node-ip=${f.nodeIP},${f.nodeIPv6}`],
    kubeProxy: [`--cluster-cidr=${f.network},${f.ipv6Network}`, `--proxy-mode=kernelspace`, `KUBE_NETWORK=${f.networkName} (winkernel networkName)`],
    warnings,
  };
}

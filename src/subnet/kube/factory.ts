// Builds the kube subnet manager from the agent's flags. Mirrors the kube half of flannel main.go
// (newSubnetManager -> kube.NewSubnetManager with the kubeconfig file, the API URL or the in-cluster
// config; GetStoredPublicIP, read before the external interface is chosen).
import type { Clock } from '../../basics/clock.js';
import type { AgentConfig } from '../../config/agent-config.js';
import type { Metrics } from '../../basics/metrics.js';
import { componentLogger, type Logger } from '../../basics/log.js';
import type { NetworkConfig } from '../net-conf-types.js';
import type { SubnetTimings } from '../timings.js';
import { buildKubeConfig } from '../../kube/client.js';
import type { RbacFeature } from '../../kube/api-error.js';
import { KubeSubnetManager } from './manager.js';
import { readNodePublicIPs } from './node-public-ip.js';

type KubeFlags = Pick<
  AgentConfig,
  | 'kubeconfigFile'
  | 'kubeApiUrl'
  | 'inClusterEnv'
  | 'nodeName'
  | 'podName'
  | 'podNamespace'
  | 'kubeAnnotationPrefix'
  | 'setNodeNetworkUnavailable'
  | 'nodeWaitTimeoutSeconds'
  | 'publicIP'
  | 'networkPolicy'
>;

export interface KubeStartDeps {
  /** Root logger; a `kube` child is used. */
  log: Logger;
  metrics: Metrics;
  clock: Clock;
  /** The subnet manager's timings (../timings.ts), over the flag's node wait and the defaults; the public-IP read's too. */
  timings?: Partial<SubnetTimings>;
}

/** The kube side of the agent's start: the own Node's public IPs, then the subnet manager (one kubeconfig for both). */
export interface KubeStart {
  /** The own Node's public-ip-overwrite and node-public-ip annotations, in that order (none without --node-name). */
  publicIPs(signal: AbortSignal): Promise<string[]>;
  /** The own Node's public-ipv6-overwrite and node-public-ipv6 annotations, in that order (dual-stack; same one read). */
  publicIPv6s(signal: AbortSignal): Promise<string[]>;
  /**
   * The kube subnet manager for this net-conf (`flanneld cni-config` reads the own Node's subnets through it
   * too); `ipv4OnlyPublicIPv6`: --ipv4-only in a dual-stack cluster (./own-node.ts).
   */
  subnetManager(netConf: NetworkConfig, ipv4OnlyPublicIPv6?: string): KubeSubnetManager;
}

export function kubeStart(config: KubeFlags, deps: KubeStartDeps): KubeStart {
  const log = componentLogger(deps.log, 'kube');
  let kubeConfig: ReturnType<typeof buildKubeConfig> | undefined;
  const kc = () => (kubeConfig ??= buildKubeConfig({ kubeconfigFile: config.kubeconfigFile, kubeApiUrl: config.kubeApiUrl, env: config.inClusterEnv, log, clock: deps.clock }));
  let read: ReturnType<typeof readNodePublicIPs> | undefined;
  /** The start of the start-up window (a 403 retried), the public-IP read's and the manager's alike. */
  let startedAt: number | undefined;
  /** A 403 names the NetworkPolicy controller's RBAC too when it runs (../../kube/api-error.ts rbacFix). */
  const rbacFeatures: readonly RbacFeature[] = config.networkPolicy ? ['network-policy'] : [];
  // One read of the own Node's public-IP annotations serves both families.
  const annotations = (signal: AbortSignal) => {
    if (read === undefined) {
      startedAt = deps.clock.now();
      read = readNodePublicIPs({
        kubeConfig: kc(),
        nodeName: config.nodeName!,
        annotationPrefix: config.kubeAnnotationPrefix,
        log,
        clock: deps.clock,
        signal,
        timings: { nodeWaitTimeoutMs: config.nodeWaitTimeoutSeconds * 1000, ...deps.timings },
        rbacFeatures,
      });
    }
    return read;
  };
  return {
    async publicIPs(signal) {
      if (!config.nodeName) return [];
      const annotated = await annotations(signal);
      return [annotated.publicIPOverwrite, annotated.nodePublicIP].filter((ip): ip is string => ip !== undefined);
    },
    async publicIPv6s(signal) {
      if (!config.nodeName) return [];
      const annotated = await annotations(signal);
      return [annotated.publicIPv6Overwrite, annotated.nodePublicIPv6].filter((ip): ip is string => ip !== undefined);
    },
    subnetManager(netConf, ipv4OnlyPublicIPv6) {
      return new KubeSubnetManager({
        kubeConfig: kc(),
        nodeName: config.nodeName,
        podName: config.podName,
        podNamespace: config.podNamespace,
        network: netConf.network,
        annotationPrefix: config.kubeAnnotationPrefix,
        setNodeNetworkUnavailable: config.setNodeNetworkUnavailable,
        publicIPOverride: config.publicIP || undefined,
        ...(netConf.enableIPv6 ? { ipv6Network: netConf.ipv6Network } : {}),
        ...(ipv4OnlyPublicIPv6 !== undefined ? { ipv4OnlyPublicIPv6 } : {}),
        log,
        metrics: deps.metrics,
        clock: deps.clock,
        timings: { nodeWaitTimeoutMs: config.nodeWaitTimeoutSeconds * 1000, ...deps.timings },
        ...(startedAt !== undefined ? { startedAt } : {}),
        rbacFeatures,
      });
    },
  };
}

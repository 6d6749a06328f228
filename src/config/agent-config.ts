// The one typed, validated configuration of the agent, produced by ./parse.ts from argv, FLANNELD_* env
// and an optional env file. Mirrors flanneld's CmdLineOpts (main.go) plus this agent's own options.
import type { LogLevel } from '../basics/log.js';

export type Dataplane = 'windows' | 'simulated';

export interface AgentConfig {
  kubeSubnetMgr: boolean;
  kubeconfigFile: string;
  kubeApiUrl: string;
  /** Normalised per docs/compatibility.md §3 (ends in `/` or `-`). */
  kubeAnnotationPrefix: string;
  netConfigPath: string;
  subnetFile: string;
  iface: string[];
  ifaceRegex: string[];
  publicIP: string;
  /** `--public-ipv6` (dual-stack): the IPv6 address peers route this node's IPv6 subnet to; absent when not given. */
  publicIPv6?: string;
  /** `--ipv4-only`: net-conf's IPv6 keys are not run on this node (src/subnet/net-conf.ts windowsNetConf). */
  ipv4Only?: boolean;
  /** `--network-policy`: the NetworkPolicy controller runs (src/policy/controller.ts); kube mode only. */
  networkPolicy: boolean;
  ipMasq: boolean;
  healthzIP: string;
  /** 0 = health server off. */
  healthzPort: number;
  /** /healthz fails once no reconcile pass succeeded for this long (--healthz-stale-after); 0 = never. */
  healthzStaleAfterSeconds: number;
  setNodeNetworkUnavailable: boolean;
  subnetLeaseRenewMargin: number;
  /** How long the kube subnet manager waits for the own Node and its podCIDR (--node-wait-timeout). */
  nodeWaitTimeoutSeconds: number;
  etcdEndpoints: string[];
  etcdPrefix: string;
  etcdKeyfile: string;
  etcdCertfile: string;
  etcdCafile: string;
  etcdUsername: string;
  etcdPassword: string;

  dataplane: Dataplane;
  /** Simulated dataplane persistence (JSON); empty = in memory only. */
  dataplaneState: string;
  /** Where the win32 dataplane loads its DLLs from; empty = the system's (bare names). */
  win32DllDir: string;
  /** Per HNS call timeout in seconds (--hns-call-timeout); 0 = no timeout. */
  hnsCallTimeoutSeconds: number;
  /** vxlan: RemoteSubnetRoute policies per HcnModifyNetwork (--hns-policy-batch-size; 1 = upstream's one per call). */
  hnsPolicyBatchSize: number;
  /** The Windows service to restart after an HNS restart (--restart-service-on-hns-restart); '' = none. */
  restartServiceOnHnsRestart: string;
  /** How long that restart waits for HNS to restore kube-proxy's load balancers (--restart-service-lb-wait). */
  restartServiceLbWaitSeconds: number;
  /** vxlan: the documented source VIP file ('' = no source VIP reservation). */
  sourceVipFile: string;
  /** vxlan: sourceVip.json paths in host-local format for the familiar scripts. */
  sourceVipCompatFiles: string[];
  /** vxlan: host-local IPAM data dir to reserve the source VIP in ('' = none). */
  cniIpamDataDir: string;
  /** containerd's CNI conf dir whose first config readiness checks ('' = no check). */
  cniConfDir: string;
  /** containerd's CNI bin dir, where that config's plugins must be. */
  cniBinDir: string;
  /** containerd's config.toml (--containerd-config), read for its CNI directories when it is there ('' = none). */
  containerdConfig: string;
  /** Whether --cni-conf-dir / --cni-bin-dir were given (flag or environment): a given one wins over containerd's config. */
  cniDirsGiven: { confDir: boolean; binDir: boolean };
  logLevel: LogLevel;
  logFormat: 'text' | 'json';
  logFile: string;

  /** From NODE_NAME, or undefined when POD_NAME/POD_NAMESPACE must be resolved through the API. */
  nodeName: string | undefined;
  podName: string | undefined;
  podNamespace: string | undefined;
  /** In-cluster API settings (KUBERNETES_SERVICE_HOST/_PORT, CONTAINER_SANDBOX_MOUNT_POINT), read here once. */
  inClusterEnv: Record<'KUBERNETES_SERVICE_HOST' | 'KUBERNETES_SERVICE_PORT' | 'CONTAINER_SANDBOX_MOUNT_POINT', string | undefined>;
}

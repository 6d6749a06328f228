// The agent: wires config, net-conf, the subnet manager, the dataplane and a backend together and runs
// them until the signal aborts. Mirrors flannel main.go (newSubnetManager, backend registration,
// WriteSubnetFile, the health server) with Windows rules and the reconcile design of docs/adr/0001.
// Each mode's modules are imported when that mode starts: an etcd node never loads the kube client
// (@kubernetes/client-node), a kube node never loads etcd3, and only the configured backend, dataplane
// and health server are loaded (see docs/performance.md, What the process loads).
import type { Backend, BackendDeps, Network } from './backends/backend.js';
import type { SourceVipRecord } from './backends/vxlan/source-vip.js';
import { join, resolve } from 'node:path';
import { backoffDelay, pause, systemClock, type Clock } from './basics/clock.js';
import type { AgentConfig } from './config/agent-config.js';
import { createDataplane, type Dataplane } from './dataplane/factory.js';
import { errorMessage, FlannelError, HostError } from './basics/errors.js';
import { METRIC, Metrics } from './basics/metrics.js';
import { buildStatusReport, type StatusInput, type StatusReport } from './health/status.js';
import { dualStackGuidance } from './health/dual-stack.js';
import { hostFiles, type SubnetEnvFs } from './basics/fs.js';
import { selectExternalInterface, selectIPv6Address, selectionNeedsIPv6 } from './host/select.js';
import type { HostInterface, Ipv6Address } from './host/host.js';
import { acquireAgentLock, agentLockPath } from './host/agent-lock.js';
import { checkCniReadiness, nodeCniReadinessFs, type CniProblem, type CniReadinessFs } from './commands/cni-readiness.js';
import { bootRecordPath, checkBoot, recordBootNetwork, systemBootTimeMs, type StartKind } from './host/boot.js';
import { componentLogger, type Logger } from './basics/log.js';
import { keepMetadataRoute, noteMetadataRoute } from './host/metadata-route.js';
import { keepNic, snapshotNic } from './host/nic-keeper.js';
import { routeRecordPath } from './backends/hostgw/route-record.js';
import type { KubeStart } from './subnet/kube/factory.js';
import { ownNodeEvents, type OwnLeaseChange, type SubnetManager } from './subnet/lease.js';
import { clusterMismatchEvent, cniConfigRenamedEvent, nodeReregisteredEvent, ownSubnetContestedEvent, ownSubnetContestedFix, type NodeEvents } from './node-events.js';
import { clusterMismatch, type ClusterMismatch } from './peers/cluster-mismatch.js';
import { checkIPv6NetworkExcludesNode, checkNetworkExcludesNode, readNetConf, windowsNetConf } from './subnet/net-conf.js';
import type { NetworkConfig } from './subnet/net-conf-types.js';
import type { SubnetTimings } from './subnet/timings.js';
import { encodeSubnetEnv, previousIPv6SubnetFromEnv, previousSubnetFromEnv, readSubnetEnv, writeSubnetEnv } from './subnet/subnet-env.js';
import { VERSION } from './basics/version.js';
import { writeFileAtomicSync } from './basics/fs.js';

export interface AgentOptions {
  config: AgentConfig;
  log: Logger;
  clock?: Clock;
  metrics?: Metrics;
  /** Injected dataplane (tests, demo); default: built from config.dataplane. */
  dataplane?: Dataplane;
  /** Injected subnet manager; default: kube (with --kube-subnet-mgr) or etcd. */
  subnetManager?: SubnetManager;
  readFile?: (path: string) => string;
  resyncMs?: number;
  /** The subnet manager's backoffs, windows and deadlines (src/subnet/timings.ts); default its own. */
  subnetTimings?: Partial<SubnetTimings>;
  /**
   * The host's boot time, ms since the epoch. Default on Windows: now - os.uptime(); elsewhere (the
   * simulated dataplane has no reboots) no boot record is kept unless this is given. Tests inject reboots.
   */
  bootTimeMs?: () => number;
  /** The file system subnet.env is read (the previous subnet) and written through; default node:fs (frozen). */
  fs?: SubnetEnvFs;
  /** The file system the CNI config check reads (tests); default node:fs. */
  cniFs?: CniReadinessFs;
  /** How often the CNI config is checked again; default CNI_CHECK_INTERVAL_MS (the kubelet's probe period). */
  cniCheckIntervalMs?: number;
  /** How often net-conf.json is read again to say that a change needs a restart (kube mode); default 30 s. */
  netConfRecheckMs?: number;
}

/** How often the agent reads the CNI config again (the kubelet probes /readyz every 10 s in deploy/). */
const CNI_CHECK_INTERVAL_MS = 10_000;

/** The NetworkUnavailable condition's reason per CNI check (CamelCase, as condition reasons are). */
const CNI_CONDITION_REASONS: Record<CniProblem['check'], string> = {
  'cni-conf-missing': 'CNIConfigMissing',
  'cni-conf-invalid': 'CNIConfigInvalid',
  'cni-network-name': 'CNINetworkNameMismatch',
  'cni-subnet-file': 'CNISubnetFileMismatch',
  'cni-plugin-missing': 'CNIPluginMissing',
};

/**
 * One thing that keeps this node from serving pods although its network is up: it reaches no peer (the
 * cluster mismatch), or a pod cannot start (a CNI problem). `reason` is the NetworkUnavailable reason.
 */
export interface PodNetworkProblem {
  check: string;
  reason: string;
  detail: string;
  fix: string;
}

/** What the Node is told about a set of problems: equal keys, nothing new to tell. */
const problemsKey = (problems: readonly PodNetworkProblem[]): string => problems.map((p) => `${p.check}\n${p.reason}\n${p.detail}`).join('\n');

export type AgentPhase = 'starting' | 'registering' | 'running' | 'stopped';

type OwnNodeReplaced = Extract<OwnLeaseChange, { kind: 'replaced' }>;

export class Agent {
  readonly metrics: Metrics;
  private readonly log: Logger;
  private readonly clock: Clock;
  private ready = false;
  private phaseValue: AgentPhase = 'starting';
  private networkValue: Network | undefined;
  private dataplaneValue: Dataplane | undefined;
  private netConfValue: NetworkConfig | undefined;
  private subnetManagerValue: SubnetManager | undefined;
  private startKindValue: StartKind | undefined;
  private sourceVipValue: SourceVipRecord | undefined;
  private runningSince: number | undefined;
  /** The bytes subnet.env was last written with. */
  private writtenEnv: string | undefined;
  /** The retry of subnet.env after a rebuild, while one runs. */
  private subnetEnvRetry: Promise<void> | undefined;
  /** Why the own Node is missing from the API server, while it is (the agent is not ready then). */
  private ownNodeGone: string | undefined;
  /** Ends the running lease round so the lease is taken again (the own Node was registered again). */
  private leaseAgain: ((change: OwnNodeReplaced) => void) | undefined;
  /** The own Node's last re-registration, until the lease is taken from it. */
  private replacement: OwnNodeReplaced | undefined;
  /** While an older peer keeps the podCIDR the own Node was registered again with: why, the fix, the wait for the subnet (not ready meanwhile). */
  private ownSubnetContest: { reason: string; fix: string; wait: AbortController } | undefined;
  /** The pod-network problems last told to the subnet manager (the Node condition), and their problemsKey. */
  private told: { key: string; problems: PodNetworkProblem[] } | undefined;
  /** A read saw problems the Node was not told; the readiness loop checks again before it sleeps. */
  private readinessRung = false;
  /** Ends the readiness loop's sleep, while it sleeps. */
  private wakeReadiness: (() => void) | undefined;
  /** Resolved once the readiness loop has checked and told the Node after they were added. */
  private readinessWaiters: (() => void)[] = [];

  constructor(private readonly opts: AgentOptions) {
    this.log = componentLogger(opts.log, 'agent');
    this.clock = opts.clock ?? systemClock;
    this.metrics = opts.metrics ?? new Metrics();
    // Read at each scrape, as /readyz and /status answer (a read that finds new pod-network problems wakes
    // the readiness loop, as a /readyz read does).
    this.metrics.onRender(() => {
      const s = this.networkValue?.status();
      this.metrics.set(METRIC.ready, this.isReady ? 1 : 0);
      this.metrics.set(METRIC.peersProgrammed, s?.peersProgrammed ?? 0);
      this.metrics.set(METRIC.peersRejected, s?.rejections.length ?? 0);
    });
  }

  /**
   * subnet.env is written, the first complete list of the peers has arrived and the HNS network exists
   * (false while it is missing and being rebuilt). A list that never completes (an API server paging
   * forever) keeps the agent not ready, as upstream's kube subnet manager waits for its node
   * informer to sync (pkg/subnet/kube/kube.go, nodeController.HasSynced) before the agent goes on.
   */
  get isReady(): boolean {
    const s = this.networkValue?.status();
    return (
      this.ready &&
      this.ownNodeGone === undefined &&
      this.ownSubnetContest === undefined &&
      s !== undefined &&
      s.listed &&
      !s.networkMissing &&
      this.podNetworkProblems().length === 0
    );
  }

  /**
   * What keeps this node from serving pods although its network is up, the cluster mismatch first (it is
   * the NetworkUnavailable reason when there are several). Read at each call, as /readyz and /status ask:
   * a read that finds them other than the Node was last told wakes the readiness loop, which tells the
   * Node at once, so the scheduler (the condition) and the probe (/readyz) see the same state.
   */
  podNetworkProblems(): PodNetworkProblem[] {
    const problems = this.currentProblems();
    if (problemsKey(problems) !== this.told?.key) this.ringReadiness();
    return problems;
  }

  private ringReadiness(): void {
    this.readinessRung = true;
    this.wakeReadiness?.();
  }

  /** Resolves once the readiness loop has checked again and told the Node what it found (or has stopped). */
  private readinessChecked(): Promise<void> {
    return new Promise((resolve) => {
      this.readinessWaiters.push(resolve);
      this.ringReadiness();
    });
  }

  private currentProblems(): PodNetworkProblem[] {
    const mismatch = this.clusterMismatch();
    return [...(mismatch ? [mismatch] : []), ...this.cniProblems().map((p) => ({ ...p, reason: CNI_CONDITION_REASONS[p.check] }))];
  }

  /** The cluster has peers and this node rejects every one for a cluster-configuration mismatch (./peers/cluster-mismatch.ts). */
  clusterMismatch(): ClusterMismatch | undefined {
    const network = this.networkValue;
    const backend = this.netConfValue?.backend;
    if (!network || !backend) return undefined;
    return clusterMismatch(network.status(), {
      type: backend.type,
      ...(backend.type === 'vxlan' ? { vni: backend.vni } : {}),
      netConfPath: this.opts.config.netConfigPath,
    });
  }

  /**
   * What stops a pod from starting although the network is up: the CNI config containerd loads first
   * (--cni-conf-dir) names another network, another subnet file, or a plugin missing from --cni-bin-dir.
   * [] while the check is off ("none") or before the network exists. Read at each call (a directory
   * listing and one small file), so /readyz follows an operator's fix at once.
   */
  cniProblems(): CniProblem[] {
    const { config } = this.opts;
    const network = this.networkValue;
    if (!config.cniConfDir || !network) return [];
    return checkCniReadiness(
      { cniConfDir: config.cniConfDir, cniBinDir: config.cniBinDir, networkName: network.networkName, subnetFile: resolve(config.subnetFile) },
      this.opts.cniFs,
    );
  }

  /** Why /readyz answers 503, once the network is up: the own Node gone from the API server, the pod-network problems; each with its fix. */
  notReadyReason(): string | undefined {
    const reasons = [
      ...(this.ownNodeGone !== undefined ? [`own-node-deleted: ${this.ownNodeGone}; fix: register the Node again (restart the kubelet); the dataplane is kept meanwhile`] : []),
      ...(this.ownSubnetContest ? [`own-subnet-contested: ${this.ownSubnetContest.reason}; fix: ${this.ownSubnetContest.fix}`] : []),
      ...this.podNetworkProblems().map((p) => `${p.check}: ${p.detail}; fix: ${p.fix}`),
    ];
    return reasons.length === 0 ? undefined : reasons.join('\n');
  }

  /**
   * False once the reconcile loop has not been good (idle after a successful pass) for --healthz-stale-after:
   * its passes keep failing, a call hangs, or the first list never came. The kubelet's liveness probe or
   * the service manager then restarts the agent. True before the loop runs.
   */
  get isHealthy(): boolean {
    const staleMs = this.opts.config.healthzStaleAfterSeconds * 1000;
    if (staleMs <= 0 || this.runningSince === undefined || !this.networkValue) return true;
    const since = this.networkValue.status().lastGoodAt ?? this.runningSince;
    return this.clock.now() - Math.max(since, this.runningSince) <= staleMs;
  }
  get phase(): AgentPhase {
    return this.phaseValue;
  }
  get network(): Network | undefined {
    return this.networkValue;
  }
  get dataplane(): Dataplane | undefined {
    return this.dataplaneValue;
  }
  get netConf(): NetworkConfig | undefined {
    return this.netConfValue;
  }
  /** Whether this start follows a reboot, a restart in the same boot, or is the first (boot.json beside subnet.env). */
  get startKind(): StartKind | undefined {
    return this.startKindValue;
  }
  /** The kube-proxy source VIP reserved on a vxlan node. */
  get sourceVip(): SourceVipRecord | undefined {
    return this.sourceVipValue;
  }

  /** What `flanneld status` shows (GET /status); reads the HNS network once. */
  async status(): Promise<StatusReport> {
    const network = this.networkValue;
    const problems = this.podNetworkProblems();
    const cni = problems.filter((p) => p.check !== 'cluster-config').map(({ check, detail, fix }) => ({ check, detail, fix }));
    let hnsNetwork: StatusInput['hnsNetwork'];
    if (network && this.dataplaneValue) {
      try {
        const n = await this.dataplaneValue.hns.getNetworkByNameV1(network.networkName);
        hnsNetwork = n && { id: n.ID, type: n.Type, adapter: n.NetworkAdapterName };
      } catch (err) {
        hnsNetwork = err instanceof Error ? err : new Error(String(err));
      }
    }
    return buildStatusReport({
      version: VERSION,
      phase: this.phaseValue,
      ready: this.ready,
      startKind: this.startKindValue,
      lease: network && { subnet: network.lease.subnet, publicIP: network.lease.publicIP },
      networkName: network?.networkName ?? this.netConfValue?.backend.name,
      hnsNetwork,
      mtu: network?.mtu,
      sourceVip: this.sourceVipValue?.ip,
      network: network?.status(),
      ...(this.opts.config.cniConfDir ? { cni: { confDir: this.opts.config.cniConfDir, binDir: this.opts.config.cniBinDir, problems: cni } } : {}),
      ...(network?.lease.ipv6Subnet !== undefined && network.lease.publicIPv6 !== undefined && this.netConfValue
        ? {
            dualStack: {
              ipv6Subnet: network.lease.ipv6Subnet,
              publicIPv6: network.lease.publicIPv6,
              ...dualStackGuidance({
                nodeIP: network.lease.publicIP,
                nodeIPv6: network.lease.publicIPv6,
                network: this.netConfValue.network,
                ipv6Network: this.netConfValue.ipv6Network,
                networkName: network.networkName,
                internalIPs: this.subnetManagerValue?.nodeInternalIPs?.(),
              }),
            },
          }
        : {}),
      ...(this.ownNodeGone !== undefined ? { ownNodeGone: this.ownNodeGone } : {}),
      ...(this.ownSubnetContest ? { ownSubnetContested: `${this.ownSubnetContest.reason}; fix: ${this.ownSubnetContest.fix}` } : {}),
      clusterMismatch: problems.find((p) => p.check === 'cluster-config'),
    });
  }

  /** Run until `signal` aborts (resolves) or a fatal error (rejects). */
  async run(signal: AbortSignal): Promise<void> {
    const { config } = this.opts;
    // One agent per node: fails with FLANNEL_ERR_AGENT_LOCK naming the running agent's PID.
    const lock = acquireAgentLock(agentLockPath(config.subnetFile));
    const health =
      config.healthzPort > 0
        ? await (
            await import('./health/server.js')
          )
            .startHealthServer({
              host: config.healthzIP,
              port: config.healthzPort,
              metrics: this.metrics,
              isReady: () => this.isReady,
              notReadyReason: () => this.notReadyReason(),
              isHealthy: () => this.isHealthy,
              status: () => this.status(),
              log: componentLogger(this.opts.log, 'health'),
            })
            .catch((err: unknown) => {
              lock.release();
              throw err;
            })
        : undefined;
    // A fatal error in one part (e.g. a revoked etcd lease) stops the others: watch, renewal, reconcile.
    const inner = new AbortController();
    const onAbort = () => inner.abort(signal.reason);
    if (signal.aborted) inner.abort(signal.reason);
    else signal.addEventListener('abort', onAbort, { once: true });
    try {
      await this.runInner(inner.signal);
    } catch (err) {
      if (signal.aborted) return;
      inner.abort(err);
      throw err;
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.phaseValue = 'stopped';
      await health?.close();
      lock.release();
    }
  }

  private async runInner(signal: AbortSignal): Promise<void> {
    const { config } = this.opts;
    const root = this.opts.log;
    // kube mode reads net-conf.json; etcd mode reads <prefix>/config (waits, bounded, while it is missing).
    const clusterNetConf =
      config.kubeSubnetMgr || this.opts.subnetManager
        ? readNetConf(config.netConfigPath, this.opts.readFile)
        : await (await import('./subnet/etcd/factory.js')).fetchEtcdNetworkConfig(config, { log: root, signal, clock: this.clock });
    // IPv4 alone, or dual-stack host-gw: IPv6-only and vxlan with IPv6 are refused (FLANNEL_ERR_UNSUPPORTED),
    // unless --ipv4-only runs a dual-stack net-conf's IPv4 half only.
    const netConf = windowsNetConf(clusterNetConf, config.ipv4Only === true, { path: config.netConfigPath });
    const ipv4OnlyInDualStack = clusterNetConf.enableIPv6 && !netConf.enableIPv6;
    this.netConfValue = netConf;
    if (ipv4OnlyInDualStack) {
      this.log.warn("--ipv4-only: this node runs IPv4 only in a dual-stack cluster; its pods get no IPv6 address and peers' IPv6 subnets are not routed from here", {
        ipv6Network: clusterNetConf.ipv6Network,
        backend: netConf.backend.type,
      });
    }
    this.log.info('network config', {
      network: netConf.network,
      backend: netConf.backend.type,
      name: netConf.backend.name,
      ...(netConf.enableIPv6 ? { ipv6Network: netConf.ipv6Network } : {}),
    });

    const dataplane = this.opts.dataplane ?? (await createDataplane(config, { log: root, metrics: this.metrics, clock: this.clock, signal }));
    this.dataplaneValue = dataplane;

    // kube mode: one kubeconfig (--kubeconfig-file, --kube-api-url or in-cluster) for the annotations and the manager.
    const kube =
      config.kubeSubnetMgr && !this.opts.subnetManager
        ? (await import('./subnet/kube/factory.js')).kubeStart(config, { log: root, metrics: this.metrics, clock: this.clock, timings: this.opts.subnetTimings })
        : undefined;
    const publicIPs = await this.publicIPCandidates(kube, signal);
    // The Linux peers of an --ipv4-only node in a kube dual-stack cluster need its public IPv6 (below).
    const linuxPeersNeedIPv6 = ipv4OnlyInDualStack && kube !== undefined;
    const adapters = await dataplane.host.interfaces({ ipv6: selectionNeedsIPv6(config.iface, netConf.enableIPv6 || linuxPeersNeedIPv6) });
    const extIface = selectExternalInterface(adapters, await dataplane.host.defaultRouteInterfaceIndex(), {
      iface: config.iface,
      ifaceRegex: config.ifaceRegex,
      publicIPs,
    });
    const publicIP = config.publicIP || extIface.ipv4;
    if (publicIPs.length > 0 && !publicIPs.includes(extIface.ipv4)) {
      this.log.warn('no interface holds the public IP; using the default route interface', { publicIPs: publicIPs.join(','), interface: extIface.name });
    }
    this.log.info('using interface', { interface: extIface.name, index: extIface.index, ip: extIface.ipv4, mtu: extIface.mtu, publicIP });
    checkNetworkExcludesNode(netConf.network, [publicIP, extIface.ipv4]);
    const ipv6 = netConf.enableIPv6 ? await this.publicIPv6(kube, extIface, signal) : undefined;
    if (ipv6) checkIPv6NetworkExcludesNode(netConf.ipv6Network, [ipv6.publicIPv6, ipv6.address.address]);
    const ipv4OnlyPublicIPv6 = linuxPeersNeedIPv6 ? await this.ipv4OnlyPublicIPv6(kube, extIface, signal) : undefined;

    const { subnet: previousSubnet, ipv6Subnet: previousIPv6Subnet } = await this.previousSubnet(config.subnetFile);
    this.recordBoot(config.subnetFile);

    const subnetManager =
      this.opts.subnetManager ??
      (kube
        ? kube.subnetManager(netConf, ipv4OnlyPublicIPv6)
        : (await import('./subnet/etcd/factory.js')).createEtcdSubnetManager(config, {
            netConf,
            publicIP,
            previousSubnet,
            previousIPv6Subnet,
            log: root,
            metrics: this.metrics,
            clock: this.clock,
            timings: this.opts.subnetTimings,
          }));
    this.subnetManagerValue = subnetManager;
    // The cloud metadata route and the chosen NIC's own settings, read before the vSwitch replaces the NIC, are restored by settle.
    const metadataRoute = await noteMetadataRoute(dataplane.routes, dataplane.host).catch(() => undefined);
    const nic = await snapshotNic(dataplane.host, extIface, [netConf.network, ...(netConf.ipv6Network ? [netConf.ipv6Network] : [])], this.log);
    // What the host needs once the HNS network exists, and again after each rebuild of it.
    const settle = async (network: Network): Promise<void> => {
      await keepNic(nic, { host: dataplane.host, routes: dataplane.routes, log: this.log, events: ownNodeEvents(subnetManager, network.lease) });
      await keepMetadataRoute(metadataRoute, dataplane.routes, dataplane.host, this.log);
      if (netConf.backend.type === 'vxlan') await this.reserveSourceVip(network, dataplane);
      else await this.reserveHostEndpoint(network);
      if (this.subnetEnvText(netConf, network) !== this.writtenEnv) {
        // At start a failed write stops the agent; after a rebuild the network stands and the write is retried.
        if (this.ready) this.keepSubnetEnv(netConf, signal);
        else await this.writeSubnetEnv(netConf, network);
      }
      await this.recordNetwork(netConf, network, dataplane);
      await this.rerenderOwnConflist(netConf, network, ownNodeEvents(subnetManager, network.lease));
    };
    const deps: BackendDeps = {
      netConf,
      subnetManager,
      hns: dataplane.hns,
      routes: dataplane.routes,
      host: dataplane.host,
      extIface,
      publicIP,
      ...(ipv6 ? { extIPv6: ipv6.address, publicIPv6: ipv6.publicIPv6 } : {}),
      log: componentLogger(root, netConf.backend.type),
      metrics: this.metrics,
      clock: this.clock,
      resyncMs: this.opts.resyncMs,
      policyBatch: config.hnsPolicyBatchSize,
      restartServiceOnHnsRestart: config.restartServiceOnHnsRestart,
      restartServiceLbWaitMs: config.restartServiceLbWaitSeconds * 1000,
      afterRebuild: settle,
      beforeCompleteLease: () => this.readinessChecked(),
      routeRecord: { path: routeRecordPath(config.subnetFile), fs: hostFiles },
      // The source VIP endpoint, under the ID reserveSourceVip recorded (an HNS restart drops it); while it
      // stands, the files kube-proxy's scripts read it from are kept too (one deleted is written again).
      lostHostObjects: async () => {
        const vip = this.sourceVipValue;
        if (netConf.backend.type !== 'vxlan' || !vip?.endpointId) return [];
        if (!(await dataplane.hns.getEndpoint(vip.endpointId))) return ['source-vip'];
        await this.keepSourceVipFiles(vip);
        return [];
      },
    };
    const newBackend = async (): Promise<Backend> =>
      netConf.backend.type === 'vxlan'
        ? new (await import('./backends/vxlan/backend.js')).VxlanBackend(deps)
        : new (await import('./backends/hostgw/backend.js')).HostGwBackend(deps);

    const manager: SubnetManager = subnetManager;
    // The CNI check runs from the first network on, across lease rounds, and stops with the run, however that ends.
    const cniCheck = new AbortController();
    const stopCheck = () => cniCheck.abort(signal.reason);
    signal.addEventListener('abort', stopCheck, { once: true });
    let watching: Promise<void> | undefined;
    try {
      manager.onOwnLeaseChange?.((change) => this.ownLeaseChanged(change));
      // One round per lease: a new one when the own Node was deleted and registered again, as a restart
      // would (the backend reuses a matching network, or builds one on a new podCIDR).
      for (let again: OwnNodeReplaced | undefined; ;) {
        const round = new AbortController();
        const endRound = () => round.abort(signal.reason);
        if (signal.aborted) round.abort(signal.reason);
        else signal.addEventListener('abort', endRound, { once: true });
        let next: typeof again;
        this.leaseAgain = (change) => {
          next ??= change;
          round.abort(new Error('the own Node was registered again'));
        };
        const previous = this.networkValue;
        try {
          this.phaseValue = 'registering';
          const network = await (await newBackend()).registerNetwork(round.signal);
          this.networkValue = network;
          await settle(network);
          this.ready = true;
          this.ownNodeGone = undefined;
          this.replacement = undefined;
          this.phaseValue = 'running';
          this.runningSince = this.clock.now();
          if (again && previous) this.leasedAgain(manager, previous, network);
          if (!watching) {
            // kube mode reads net-conf.json from a file (a mounted ConfigMap): say when it changes under the agent.
            if (config.kubeSubnetMgr || this.opts.subnetManager) {
              const { watchNetConf } = await import('./subnet/net-conf-watch.js');
              void watchNetConf({
                path: config.netConfigPath,
                read: (p) => readNetConf(p, this.opts.readFile),
                running: netConf,
                clock: this.clock,
                intervalMs: this.opts.netConfRecheckMs,
                log: componentLogger(root, 'net-conf'),
                events: ownNodeEvents(subnetManager, network.lease),
                signal,
              }).catch((err: unknown) => this.log.warn('net-conf.json re-check stopped', { error: errorMessage(err) }));
            }
            watching = this.watchReadiness(netConf, subnetManager, cniCheck.signal);
          }
          await network.run(round.signal);
        } catch (err) {
          // What the round started (the lease's renewal, the network's loops) stops with it.
          round.abort(err);
          if (signal.aborted || next === undefined) throw err;
        } finally {
          signal.removeEventListener('abort', endRound);
          this.leaseAgain = undefined;
          this.endSubnetContest(); // the round's network, which the wait watched, is done
        }
        if (signal.aborted || next === undefined) return;
        again = next;
        this.ready = false;
      }
    } finally {
      signal.removeEventListener('abort', stopCheck);
      cniCheck.abort(new Error('the network stopped'));
      await watching;
    }
  }

  /**
   * Check what keeps the node from serving pods (the cluster mismatch, the CNI config of --cni-conf-dir)
   * now, every CNI_CHECK_INTERVAL_MS and whenever a read saw it change, until `signal` aborts; on each
   * change log it and tell the subnet manager (kube: the NetworkUnavailable condition), so the operator
   * sees a conflist that names the wrong network before the first pod fails, and the scheduler sees what
   * /readyz says.
   */
  private async watchReadiness(netConf: NetworkConfig, subnetManager: SubnetManager, signal: AbortSignal): Promise<void> {
    try {
      while (!signal.aborted) {
        this.readinessRung = false;
        const waiting = this.readinessWaiters.splice(0);
        await this.checkReadiness(netConf, subnetManager, signal);
        for (const done of waiting) done();
        if (this.readinessRung) continue;
        // Sleep until the next check, or until a read rings (podNetworkProblems) or the run ends.
        const nap = new AbortController();
        const wake = () => nap.abort();
        this.wakeReadiness = wake;
        signal.addEventListener('abort', wake, { once: true });
        await this.clock.sleep(this.opts.cniCheckIntervalMs ?? CNI_CHECK_INTERVAL_MS, nap.signal).catch(() => undefined);
        signal.removeEventListener('abort', wake);
        this.wakeReadiness = undefined;
      }
    } finally {
      for (const done of this.readinessWaiters.splice(0)) done();
    }
  }

  /** Check what keeps the node from serving pods; when it changed, log it and tell the subnet manager. */
  private async checkReadiness(netConf: NetworkConfig, subnetManager: SubnetManager, signal: AbortSignal): Promise<void> {
    let problems = this.currentProblems();
    // The agent's own conflist written again with net-conf's name after the start (an installer re-run).
    const network = this.networkValue;
    if (network && problems.some((p) => p.check === 'cni-network-name')) {
      await this.rerenderOwnConflist(netConf, network, ownNodeEvents(subnetManager, network.lease));
      problems = this.currentProblems();
    }
    const key = problemsKey(problems);
    const before = this.told;
    if (key === before?.key) return;
    this.told = { key, problems };
    this.logReadiness(problems, before?.problems, network && ownNodeEvents(subnetManager, network.lease));
    const problem = problems[0] && { reason: problems[0].reason, message: `${problems[0].detail}; fix: ${problems[0].fix}` };
    await subnetManager.reportPodNetwork?.(problem, signal).catch((err: unknown) => {
      if (!signal.aborted) this.log.warn('could not report the readiness check on the node condition', { error: errorMessage(err) });
    });
  }

  /** Log a change of the pod-network problems (`before`: what was told last, undefined at the first check); the cluster mismatch is an Event too. */
  private logReadiness(problems: readonly PodNetworkProblem[], before: readonly PodNetworkProblem[] | undefined, events: NodeEvents | undefined): void {
    const { config } = this.opts;
    const mismatchBefore = before?.some((p) => p.check === 'cluster-config') ?? false;
    for (const p of problems) {
      const fields = { check: p.check, reason: p.reason, detail: p.detail, fix: p.fix };
      if (p.check !== 'cluster-config') this.log.warn('pods cannot start on this node: the CNI config does not fit this agent', fields);
      else {
        this.log.warn('this node reaches no peer: it rejects every peer for a cluster configuration mismatch', fields);
        if (!mismatchBefore) events?.record(clusterMismatchEvent(p.detail, p.fix));
      }
    }
    if (mismatchBefore && !problems.some((p) => p.check === 'cluster-config')) this.log.info('a peer is accepted again: this node reaches the cluster');
    if (config.cniConfDir && !problems.some((p) => p.check !== 'cluster-config') && (before === undefined || before.some((p) => p.check !== 'cluster-config')))
      this.log.info(before === undefined ? 'CNI config checked: pods can start' : 'the CNI config fits this agent again: pods can start', { confDir: config.cniConfDir });
  }

  /** The lease watch saw the own Node go, come back, or be registered anew. */
  private ownLeaseChanged(change: OwnLeaseChange): void {
    this.endSubnetContest(); // decided anew below
    if (change.kind === 'lost') {
      this.ownNodeGone = change.reason;
      this.log.warn('own Node deleted from the API server; keeping the dataplane, not ready until it is registered again', { reason: change.reason });
    } else if (change.kind === 'back') {
      this.ownNodeGone = undefined;
      this.log.info('own Node is in the API server again (the same Node)');
      if (this.replacement) this.leaseFromReplacement(this.replacement);
    } else this.leaseFromReplacement(change);
  }

  /**
   * The own Node was registered again with `change.subnet`: lease again from it, unless an older peer
   * holds that subnet. The agent applies to itself the rule it applies to peers (src/peers/store.ts: the
   * older Node keeps a contested subnet): it keeps its network and the peer's route, is not ready and
   * says why, and leases again once the subnet is free or the Node is registered with another podCIDR.
   */
  private leaseFromReplacement(change: OwnNodeReplaced): void {
    this.replacement = change;
    const network = this.networkValue;
    const keeper = network?.subnetKeeper(change.subnet, change.created);
    if (network && keeper !== undefined) {
      const node = network.lease.key;
      const kept = network.lease.subnet;
      const reason = `the own Node "${node}" was registered again with podCIDR ${change.subnet}, which the older Node "${keeper}" holds; the older Node keeps a contested subnet, so this node keeps its network on ${kept} and does not take it`;
      const wait = new AbortController();
      this.ownSubnetContest = { reason, fix: ownSubnetContestedFix(node, keeper), wait };
      this.ownNodeGone = undefined;
      this.log.warn('own Node registered again with the podCIDR an older peer holds; keeping the network, not ready until that subnet is free or the Node has another podCIDR', {
        node,
        subnet: change.subnet,
        holder: keeper,
        kept,
      });
      if (this.subnetManagerValue) ownNodeEvents(this.subnetManagerValue, network.lease).record(ownSubnetContestedEvent(node, change.subnet, keeper, kept));
      network.whenSubnetFree(change.subnet, change.created, wait.signal).then(
        () => {
          this.endSubnetContest();
          this.log.info('the podCIDR the own Node was registered again with is free now', { node, subnet: change.subnet });
          this.leaseFromReplacement(change);
        },
        () => undefined, // ended: a later change of the own Node, or the round, decides
      );
      return;
    }
    this.ownNodeGone = change.reason;
    this.log.warn('own Node registered again; leasing again', {
      node: this.networkValue?.lease.key,
      previousSubnet: this.networkValue?.lease.subnet,
      subnet: change.subnet,
      reason: change.reason,
    });
    this.leaseAgain?.(change);
  }

  private endSubnetContest(): void {
    this.ownSubnetContest?.wait.abort(new Error('the contest of the own subnet ended'));
    this.ownSubnetContest = undefined;
  }

  /** Logged and told as an Event once the new lease's network runs. */
  private leasedAgain(subnetManager: SubnetManager, previous: Network, network: Network): void {
    const rebuilt = previous.lease.subnet !== network.lease.subnet;
    this.log.info('leased again from the re-registered own Node', { node: network.lease.key, previousSubnet: previous.lease.subnet, subnet: network.lease.subnet, rebuilt });
    ownNodeEvents(subnetManager, network.lease).record(nodeReregisteredEvent(previous.lease.subnet, network.lease.subnet, rebuilt));
  }

  /**
   * subnet.env's bytes for the network: its subnets and current MTU. Written again whenever they differ
   * from the bytes last written (a rebuild's MTU, a new lease's subnets, also one with only another IPv6 subnet).
   */
  private subnetEnvText(netConf: NetworkConfig, network: Network): string {
    // FLANNEL_IPV6_NETWORK / FLANNEL_IPV6_SUBNET only when IPv6 is on (upstream WriteSubnetFile).
    const v6 = netConf.enableIPv6 && network.lease.ipv6Subnet !== undefined ? { ipv6Network: netConf.ipv6Network, ipv6Subnet: network.lease.ipv6Subnet } : {};
    return encodeSubnetEnv({ network: netConf.network, subnet: network.lease.subnet, mtu: network.mtu, ipMasq: this.opts.config.ipMasq, ...v6 });
  }

  /** Write subnet.env for the network's subnet and current MTU (again after a rebuild changed the MTU). */
  private async writeSubnetEnv(netConf: NetworkConfig, network: Network): Promise<void> {
    const { config } = this.opts;
    const text = this.subnetEnvText(netConf, network);
    await writeSubnetEnv(config.subnetFile, text, { fs: this.opts.fs, clock: this.clock });
    this.writtenEnv = text;
    this.log.info('wrote subnet.env', { path: config.subnetFile, subnet: network.lease.subnet, mtu: network.mtu });
  }

  /**
   * The first config in --cni-conf-dir, when it is this agent's own (src/commands/cni-config.ts
   * rerenderedOwnConflist: one cni-config rendered, by content; never a foreign one), is kept naming the
   * network the agent runs and, dual-stack, the node's subnets in host-local's ranges (sdnbridge does
   * not read subnet.env). A DaemonSet's init container renders it before the agent has adopted an
   * existing network (net-conf's `flannel.4096` for microsoft/SDN's `vxlan0`): rewritten here,
   * atomically, logged and told as an Event, readiness goes green without a restart of the pod.
   */
  private async rerenderOwnConflist(netConf: NetworkConfig, network: Network, events: NodeEvents): Promise<void> {
    const { config } = this.opts;
    const dir = config.cniConfDir;
    if (!dir) return;
    const { cniConfigFiles } = await import('./commands/cni-conf-dir.js');
    const { rerenderedOwnConflist } = await import('./commands/cni-config.js');
    // Read through the CNI check's seam (a regular file of at most 1 MiB), as the check reads it.
    const fs = this.opts.cniFs ?? nodeCniReadinessFs;
    let path = dir;
    try {
      const first = cniConfigFiles(dir, (d) => fs.readdir(d))[0];
      if (first === undefined) return;
      path = join(dir, first);
      const { subnet, ipv6Subnet } = network.lease;
      const next = rerenderedOwnConflist(fs.readFile(path), {
        networkName: network.networkName,
        configuredName: netConf.backend.name,
        subnetFile: resolve(config.subnetFile),
        ...(ipv6Subnet !== undefined ? { dualStack: { subnet, ipv6Subnet } } : {}),
      });
      if (next === undefined) return;
      writeFileAtomicSync(path, next.text);
      if (next.reranged) this.log.info('rewrote the dual-stack CNI config for the new lease', { path, subnet, ipv6Subnet });
      if (next.renamedFrom !== undefined) {
        this.log.warn('rewrote the CNI config to name the HNS network this agent runs', { path, network: network.networkName, previous: next.renamedFrom });
        events.record(cniConfigRenamedEvent(path, next.renamedFrom, network.networkName));
      }
    } catch (err) {
      this.log.warn('could not update the CNI config for the network this agent runs; run flanneld cni-config -o again', { path, error: errorMessage(err) });
    }
  }

  /**
   * subnet.env for the network's current MTU, retried (1 s doubling to 30 s) until written: a rebuild
   * that changed the MTU while the directory was read-only or full must not leave the old MTU there.
   * One retry loop at a time; each attempt writes what the agent's network holds then (a later lease
   * round may have replaced the network that started the loop, and written subnet.env for its own).
   */
  private keepSubnetEnv(netConf: NetworkConfig, signal: AbortSignal): void {
    if (this.subnetEnvRetry) return;
    this.subnetEnvRetry = (async () => {
      for (let attempt = 0; ; attempt++) {
        const network = this.networkValue;
        if (signal.aborted || network === undefined || this.subnetEnvText(netConf, network) === this.writtenEnv) return;
        try {
          await this.writeSubnetEnv(netConf, network);
        } catch (err) {
          const delayMs = backoffDelay(attempt, 1000, 30_000);
          this.log.warn('cannot write subnet.env after the network was rebuilt; retrying', {
            path: this.opts.config.subnetFile,
            mtu: network.mtu,
            delayMs,
            error: errorMessage(err),
            ...(err instanceof FlannelError ? { code: err.code } : {}),
          });
          if (!(await pause(this.clock, delayMs, signal))) break;
        }
      }
    })().finally(() => (this.subnetEnvRetry = undefined));
  }

  /**
   * With no --iface/--iface-regex: the public IPs that pick the external interface, in order: --public-ip,
   * then (kube mode) the own Node's public-ip-overwrite and node-public-ip annotations.
   */
  private async publicIPCandidates(kube: KubeStart | undefined, signal: AbortSignal): Promise<string[]> {
    const { config } = this.opts;
    if (config.iface.length > 0 || config.ifaceRegex.length > 0) return [];
    const ips = config.publicIP ? [config.publicIP] : [];
    if (kube) ips.push(...(await kube.publicIPs(signal)));
    return ips;
  }

  /**
   * Dual-stack: the external interface's IPv6 address (--iface or --public-ipv6 name it, else the Node's
   * public-ipv6-overwrite / node-public-ipv6 annotations, else the first stable global one) and the IPv6
   * address to publish (--public-ipv6, else that address).
   */
  private async publicIPv6(kube: KubeStart | undefined, extIface: HostInterface, signal: AbortSignal): Promise<{ address: Ipv6Address; publicIPv6: string }> {
    const { config } = this.opts;
    const annotated = kube && config.iface.length === 0 && config.ifaceRegex.length === 0 ? await kube.publicIPv6s(signal) : [];
    const address = selectIPv6Address(extIface, {
      iface: config.iface,
      publicIPv6s: [...(config.publicIPv6 ? [config.publicIPv6] : []), ...annotated],
      ...(config.publicIPv6 ? { assumed: config.publicIPv6 } : {}),
    });
    if (extIface.ipv6Addresses === undefined) {
      this.log.warn("this host does not list the adapter's IPv6 addresses; --public-ipv6 is taken as its address with a /64 on-link prefix", { publicIPv6: config.publicIPv6 });
    }
    const publicIPv6 = config.publicIPv6 ?? address.address;
    this.log.info('using IPv6 address', { interface: extIface.name, ipv6: address.address, prefixLength: address.prefixLength, publicIPv6 });
    return { address, publicIPv6 };
  }

  /**
   * `--ipv4-only` in a kube dual-stack cluster: the public-ipv6 the Linux nodes need to program this Node at
   * all (./subnet/kube/own-node.ts ipv4OnlyPublicIPv6), found as a dual-stack node's: --public-ipv6, the
   * Node's annotations, else the adapter's address. None is a start-up error naming the fix.
   */
  private async ipv4OnlyPublicIPv6(kube: KubeStart, extIface: HostInterface, signal: AbortSignal): Promise<string> {
    try {
      return (await this.publicIPv6(kube, extIface, signal)).publicIPv6;
    } catch (err) {
      if (!(err instanceof HostError)) throw err;
      throw new HostError(
        'FLANNEL_ERR_HOST',
        `--ipv4-only in a dual-stack cluster still publishes this node's public-ipv6: Linux flanneld with EnableIPv6 skips a Node without one (its IPv4 routes too); pass --public-ipv6=<this node's IPv6 address> (${err.message})`,
        { ...err.context, reason: 'ipv4-only-no-ipv6' },
        { cause: err },
      );
    }
  }

  /** Record the boot time beside subnet.env and say whether this start follows a reboot. */
  private recordBoot(subnetFile: string): void {
    const bootTime = this.opts.bootTimeMs ?? (process.platform === 'win32' ? () => systemBootTimeMs() : undefined);
    if (!bootTime) return;
    const path = bootRecordPath(subnetFile);
    try {
      const check = checkBoot(path, bootTime(), this.clock.now());
      this.startKindValue = check.kind;
      const what =
        check.kind === 'reboot'
          ? 'this start follows a reboot: non-persistent HNS networks are gone and will be recreated'
          : check.kind === 'restart'
            ? 'this start is a restart within the same boot: a matching HNS network is reused, never deleted'
            : 'first start on this host (no boot record yet)';
      this.log.info(what, { startKind: check.kind, bootTime: check.current.bootTime, previousBootTime: check.previous?.bootTime, starts: check.current.starts, path });
    } catch (err) {
      this.log.warn('could not record the boot time; reboot detection is off for this start', { path, error: errorMessage(err) });
    }
  }

  /**
   * Keep the HNS network this agent runs (created or adopted) in the boot record, where whoever renders
   * the CNI config finds the name pods must use (`flanneld cni-config` reads it).
   */
  private async recordNetwork(netConf: NetworkConfig, network: Network, dataplane: Dataplane): Promise<void> {
    const path = bootRecordPath(this.opts.config.subnetFile);
    try {
      const id = (await dataplane.hns.getNetworkByNameV1(network.networkName))?.ID ?? '';
      recordBootNetwork(path, { name: network.networkName, id, backend: netConf.backend.type });
      const adopted = network.networkName !== netConf.backend.name;
      const fields = { network: network.networkName, id, adopted, configured: netConf.backend.name, path };
      if (adopted) this.log.warn("pods use the adopted HNS network, not net-conf's name: the CNI config must name it (flanneld cni-config reads it from the boot record)", fields);
      else this.log.info('the HNS network pods use, recorded for the CNI config', fields);
    } catch (err) {
      this.log.warn('could not record the HNS network in the boot record; flanneld cni-config falls back to net-conf.json', {
        path,
        network: network.networkName,
        error: errorMessage(err),
      });
    }
  }

  /** vxlan: reserve kube-proxy's source VIP (an endpoint no pod can get) and write where the scripts look. */
  private async reserveSourceVip(network: Network, dataplane: Dataplane): Promise<void> {
    const { config } = this.opts;
    if (!config.sourceVipFile) return;
    const { reserveSourceVip } = await import('./backends/vxlan/source-vip.js');
    this.sourceVipValue = await reserveSourceVip({
      hns: dataplane.hns,
      networkName: network.networkName,
      subnet: network.lease.subnet,
      file: config.sourceVipFile,
      compatFiles: config.sourceVipCompatFiles,
      ipamDataDir: config.cniIpamDataDir,
      macFor: (providerAddress) => dataplane.host.macAddress(providerAddress),
      log: componentLogger(this.opts.log, 'source-vip'),
      fs: hostFiles,
    });
    this.log.info('kube-proxy source VIP', { ip: this.sourceVipValue.ip, file: config.sourceVipFile, endpoint: this.sourceVipValue.endpointId });
  }

  /**
   * The source VIP files as reserveSourceVip wrote them: kube-proxy's scripts read them at each kube-proxy
   * start, and one deleted or edited (C:\k cleaned by hand) would send them to host-local for another
   * address than the endpoint's. Written again, with a warning.
   */
  private async keepSourceVipFiles(vip: SourceVipRecord): Promise<void> {
    const { config } = this.opts;
    const { writeSourceVipFiles } = await import('./backends/vxlan/source-vip.js');
    const log = componentLogger(this.opts.log, 'source-vip');
    for (const path of writeSourceVipFiles(hostFiles, vip, { file: config.sourceVipFile, compatFiles: config.sourceVipCompatFiles, log })) {
      log.warn('a source VIP file kube-proxy reads was missing or changed; wrote it again', { path, ip: vip.ip });
    }
  }

  /**
   * host-gw: reserve the bridge endpoint's address (`.2`, every pod's gateway under win-bridge) in
   * host-local's store, so no pod gets it. An address a pod already holds stays with that pod.
   */
  private async reserveHostEndpoint(network: Network): Promise<void> {
    const { config } = this.opts;
    if (!config.cniIpamDataDir) return;
    const { HOST_ENDPOINT_OWNER, hostEndpointAddress } = await import('./backends/hostgw/backend.js');
    const { reserveAddressOrWarn } = await import('./backends/ipam-reservation.js');
    const ip = hostEndpointAddress(network.lease.subnet);
    const ifname = `${network.networkName}_ep`;
    const r = reserveAddressOrWarn(hostFiles, { dataDir: config.cniIpamDataDir, network: network.networkName, ip, owner: HOST_ENDPOINT_OWNER, ifname }, this.log);
    if (!r) return;
    if (r.torn) this.log.warn('rewrote a torn host-local reservation (empty or zero-filled: no container holds it)', { path: r.path, ip, endpoint: ifname });
    else if (r.result === 'reserved') this.log.info('reserved the host endpoint address in host-local IPAM', { path: r.path, ip, endpoint: ifname });
    if (r.result === 'held') {
      this.log.warn("a pod holds the host endpoint's address (every pod's gateway); it keeps it until it is deleted: recreate that pod", {
        path: r.path,
        ip,
        container: r.holder,
      });
    }
  }

  /** The previous subnet.env tells what this node had (the etcd manager prefers it); a bad one is only logged. */
  private async previousSubnet(path: string): Promise<{ subnet?: string; ipv6Subnet?: string }> {
    try {
      const previous = await readSubnetEnv(path, this.opts.fs);
      if (previous === undefined) return {};
      const subnet = previousSubnetFromEnv(previous);
      const ipv6Subnet = previousIPv6SubnetFromEnv(previous);
      this.log.info('found previous subnet.env', { path, subnet, ...(ipv6Subnet !== undefined ? { ipv6Subnet } : {}) });
      return { subnet, ipv6Subnet };
    } catch (err) {
      this.log.warn('ignoring unreadable previous subnet.env; it will be rewritten', { path, error: errorMessage(err) });
      return {};
    }
  }
}

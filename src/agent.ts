// The agent: wires config, net-conf, the subnet manager, the dataplane and a backend together and runs
// them until the signal aborts. Mirrors flannel main.go (newSubnetManager, backend registration,
// WriteSubnetFile, the health server) with Windows rules and the reconcile design of docs/adr/0001.
// Each mode's modules are imported when that mode starts: an etcd node never loads the kube client
// (@kubernetes/client-node), a kube node never loads etcd3, and only the configured backend, dataplane
// and health server are loaded (see docs/performance.md, What the process loads).
import type { Backend, BackendDeps, Network, SourceVip } from './backends/backend.js';
import { join, resolve } from 'node:path';
import { systemClock, type Clock } from './basics/clock.js';
import type { AgentConfig } from './config/agent-config.js';
import { createDataplane, type Dataplane } from './dataplane/factory.js';
import { errorMessage } from './basics/errors.js';
import { Metrics } from './basics/metrics.js';
import { buildStatusReport, type StatusInput, type StatusReport } from './health/status.js';
import { dualStackGuidance } from './health/dual-stack.js';
import { hostFiles, type SubnetEnvFs } from './basics/fs.js';
import { acquireAgentLock, agentLockPath } from './host/agent-lock.js';
import { checkCniReadiness, nodeCniReadinessFs, type CniProblem, type CniReadinessFs } from './cni/readiness.js';
import { systemBootTimeMs, type StartKind } from './host/boot.js';
import { componentLogger, type Logger } from './basics/log.js';
import { keepMetadataRoute, noteMetadataRoute } from './host/metadata-route.js';
import { ownNodeEvents, type OwnLeaseChange, type SubnetManager } from './subnet/lease.js';
import { clusterMismatchEvent, cniConfigRenamedEvent, nodeReregisteredEvent, type NodeEvents } from './node-events.js';
import { clusterMismatch, type ClusterMismatch } from './peers/cluster-mismatch.js';
import { readNetConf, windowsNetConf } from './subnet/net-conf.js';
import type { NetworkConfig } from './subnet/net-conf-types.js';
import type { SubnetTimings } from './subnet/timings.js';
import { VERSION } from './basics/version.js';
import { lookupExtIface } from './agent/external-interface.js';
import { SubnetEnvFile } from './agent/subnet-env-file.js';
import { recordBoot, recordNetwork } from './agent/boot-record.js';
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
  private runningSince: number | undefined;
  /** Why the own Node is missing from the API server, while it is (the agent is not ready then). */
  private ownNodeGone: string | undefined;
  /** Ends the running lease round so the lease is taken again (the own Node was registered again). */
  private leaseAgain: ((change: Extract<OwnLeaseChange, { kind: 'replaced' }>) => void) | undefined;
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
  }

  /**
   * subnet.env is written, the first complete list of the peers has arrived and the HNS network exists
   * (false while it is missing and being rebuilt). A list that never completes (an API server paging
   * forever) keeps the agent not ready, as upstream's kube subnet manager waits for its node
   * informer to sync (pkg/subnet/kube/kube.go, nodeController.HasSynced) before the agent goes on.
   */
  get isReady(): boolean {
    const s = this.networkValue?.status();
    return this.ready && this.ownNodeGone === undefined && s !== undefined && s.listed && !s.networkMissing && this.podNetworkProblems().length === 0;
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
  get sourceVip(): SourceVip | undefined {
    return this.networkValue?.sourceVip;
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
      sourceVip: network?.sourceVip?.ip,
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
    const ext = await lookupExtIface({ config, netConf, ipv4OnlyInDualStack, dataplane, kube, log: this.log, signal });

    const subnetEnv = new SubnetEnvFile({ path: config.subnetFile, ipMasq: config.ipMasq, netConf, fs: this.opts.fs, clock: this.clock, log: this.log });
    const { subnet: previousSubnet, ipv6Subnet: previousIPv6Subnet } = await subnetEnv.previous();
    const bootTime = this.opts.bootTimeMs ?? (process.platform === 'win32' ? () => systemBootTimeMs() : undefined);
    if (bootTime) this.startKindValue = recordBoot(config.subnetFile, bootTime(), this.clock, this.log);

    const subnetManager =
      this.opts.subnetManager ??
      (kube
        ? kube.subnetManager(netConf, ext.ipv4OnlyPublicIPv6)
        : (await import('./subnet/etcd/factory.js')).createEtcdSubnetManager(config, {
            netConf,
            publicIP: ext.publicIP,
            previousSubnet,
            previousIPv6Subnet,
            log: root,
            metrics: this.metrics,
            clock: this.clock,
            timings: this.opts.subnetTimings,
          }));
    this.subnetManagerValue = subnetManager;
    // The cloud metadata route, read before the vSwitch moves the node's routes, is restored by settle.
    const metadataRoute = await noteMetadataRoute(dataplane.routes, dataplane.host).catch(() => undefined);
    // What the host needs once the HNS network exists, and again after each rebuild of it.
    const settle = async (network: Network): Promise<void> => {
      await keepMetadataRoute(metadataRoute, dataplane.routes, dataplane.host, this.log);
      await network.settle();
      if (subnetEnv.differs(network)) {
        // At start a failed write stops the agent; after a rebuild the network stands and the write is retried.
        if (this.ready) subnetEnv.keep(() => this.networkValue, signal);
        else await subnetEnv.write(network);
      }
      await recordNetwork(config.subnetFile, netConf, network, dataplane.hns, this.log);
      await this.rerenderOwnConflist(netConf, network, ownNodeEvents(subnetManager, network.lease));
    };
    const deps: BackendDeps = {
      netConf,
      subnetManager,
      hns: dataplane.hns,
      routes: dataplane.routes,
      host: dataplane.host,
      extIface: ext.iface,
      publicIP: ext.publicIP,
      ...(ext.ipv6 ? { extIPv6: ext.ipv6.address, publicIPv6: ext.ipv6.publicIPv6 } : {}),
      log: componentLogger(root, netConf.backend.type),
      metrics: this.metrics,
      clock: this.clock,
      resyncMs: this.opts.resyncMs,
      flags: config,
      files: hostFiles,
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
      for (let again: Extract<OwnLeaseChange, { kind: 'replaced' }> | undefined; ;) {
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
          await network.run(round.signal, { afterRebuild: settle, beforeCompleteLease: () => this.readinessChecked() });
        } catch (err) {
          // What the round started (the lease's renewal, the network's loops) stops with it.
          round.abort(err);
          if (signal.aborted || next === undefined) throw err;
        } finally {
          signal.removeEventListener('abort', endRound);
          this.leaseAgain = undefined;
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
    if (change.kind === 'lost') {
      this.ownNodeGone = change.reason;
      this.log.warn('own Node deleted from the API server; keeping the dataplane, not ready until it is registered again', { reason: change.reason });
    } else if (change.kind === 'back') {
      this.ownNodeGone = undefined;
      this.log.info('own Node is in the API server again (the same Node)');
    } else {
      this.ownNodeGone = change.reason;
      this.log.warn('own Node registered again; leasing again', {
        node: this.networkValue?.lease.key,
        previousSubnet: this.networkValue?.lease.subnet,
        subnet: change.subnet,
        reason: change.reason,
      });
      this.leaseAgain?.(change);
    }
  }

  /** Logged and told as an Event once the new lease's network runs. */
  private leasedAgain(subnetManager: SubnetManager, previous: Network, network: Network): void {
    const rebuilt = previous.lease.subnet !== network.lease.subnet;
    this.log.info('leased again from the re-registered own Node', { node: network.lease.key, previousSubnet: previous.lease.subnet, subnet: network.lease.subnet, rebuilt });
    ownNodeEvents(subnetManager, network.lease).record(nodeReregisteredEvent(previous.lease.subnet, network.lease.subnet, rebuilt));
  }

  /**
   * The first config in --cni-conf-dir, when it is this agent's own (src/cni/conflist.ts
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
    const { cniConfigFiles } = await import('./cni/conf-dir.js');
    const { rerenderedOwnConflist } = await import('./cni/conflist.js');
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
}

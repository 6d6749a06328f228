// The agent: wires config, net-conf, the subnet manager, the dataplane, a backend and the agent's parts
// together and runs them until the signal aborts. Mirrors flannel main.go (newSubnetManager, backend
// registration, WriteSubnetFile, the health server) with Windows rules and the reconcile design of
// docs/adr/0001-reconcile-as-a-set.md; registering, publishing and running the network on each lease is
// ./agent/lease-rounds.ts. Beside the network it leases, the agent runs its parts
// (./agent/part.ts): each built from the same shared deps, run from the first network on, each with its
// readiness contribution and its part of /status; a new one is one line in `parts` below, as a Felix
// manager is one RegisterManager call (projectcalico/calico felix/dataplane/windows/win_dataplane.go). The
// agent never asks which backend it runs: what a backend keeps on the node is the network's `settle`
// (./backends/backend.ts).
// Each mode's modules are imported when that mode starts: an etcd node never loads the kube client
// (@kubernetes/client-node), a kube node never loads etcd3, and only the configured backend, dataplane
// and health server are loaded (see docs/performance.md, What the process loads).
import type { Backend, BackendDeps, Network, SourceVip } from './backends/backend.js';
import { systemClock, untilAborted, type Clock } from './basics/clock.js';
import type { AgentConfig } from './config/agent-config.js';
import { createDataplane, type Dataplane } from './dataplane/factory.js';
import { errorMessage } from './basics/errors.js';
import { readHnsVersion } from './hns/features.js';
import type { HnsVersion } from './hns/schema.js';
import { METRIC, Metrics } from './basics/metrics.js';
import { buildStatusReport, type StatusInput, type StatusReport } from './health/status.js';
import { hostFiles, type SubnetEnvFs } from './basics/fs.js';
import { acquireAgentLock, agentLockPath } from './host/agent-lock.js';
import { systemBootTimeMs, type StartKind } from './host/boot.js';
import { componentLogger, type Logger } from './basics/log.js';
import { keepMetadataRoute, noteMetadataRoute } from './host/metadata-route.js';
import { keepNic, snapshotNic } from './host/nic-keeper.js';
import { ownNodeEvents, type SubnetManager } from './subnet/lease.js';
import { noNodeEvents } from './node-events.js';
import { readNetConf, windowsNetConf } from './subnet/net-conf.js';
import type { NetworkConfig } from './subnet/net-conf-types.js';
import type { SubnetTimings } from './subnet/timings.js';
import { VERSION } from './basics/version.js';
import { runParts, type AgentPart, type PartDeps, type PodNetworkProblem } from './agent/part.js';
import { PodNetworkReadiness } from './agent/readiness.js';
import { clusterConfigPart } from './agent/cluster-config-part.js';
import { dualStackPart } from './agent/dual-stack-part.js';
import { netConfPart } from './agent/net-conf-part.js';
import { lookupExtIface } from './agent/external-interface.js';
import { OwnNode } from './agent/own-node.js';
import { LeaseRounds } from './agent/lease-rounds.js';
import { SubnetEnvFile } from './agent/subnet-env-file.js';
import { recordBoot, recordNetwork } from './agent/boot-record.js';
import { cniPart, type CniPart } from './cni/part.js';
import type { CniProblem, CniReadinessFs } from './cni/readiness.js';

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
  /** How often the readiness problems (the CNI config) are checked again; default the kubelet's probe period, 10 s. */
  cniCheckIntervalMs?: number;
  /** How often net-conf.json is read again to say that a change needs a restart (kube mode); default 30 s. */
  netConfRecheckMs?: number;
}

export type AgentPhase = 'starting' | 'registering' | 'running' | 'stopped';

export class Agent {
  readonly metrics: Metrics;
  private readonly log: Logger;
  private readonly clock: Clock;
  private stopped = false;
  /** The lease rounds (./agent/lease-rounds.ts): the network, once the run has built them. */
  private rounds: LeaseRounds | undefined;
  private dataplaneValue: Dataplane | undefined;
  private netConfValue: NetworkConfig | undefined;
  /** What HNS reported at start (hcsshim GetGlobals): every HNS feature the agent uses is gated on it (src/hns/features.ts). */
  private hnsVersionValue: HnsVersion | undefined;
  private startKindValue: StartKind | undefined;
  /** The own Node as the lease watch reports it (gone, contested, registered again), once the run has the subnet manager. */
  private ownNode: OwnNode | undefined;
  /** The agent's parts, the readiness loop over their problems and the CNI part, once the run has built them. */
  private parts: readonly AgentPart[] = [];
  private readiness: PodNetworkReadiness | undefined;
  private cni: CniPart | undefined;

  constructor(private readonly opts: AgentOptions) {
    this.log = componentLogger(opts.log, 'agent');
    this.clock = opts.clock ?? systemClock;
    this.metrics = opts.metrics ?? new Metrics();
    // Read at each scrape, as /readyz and /status answer (a read that finds new pod-network problems wakes
    // the readiness loop, as a /readyz read does).
    this.metrics.onRender(() => {
      const s = this.network?.status();
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
    const s = this.network?.status();
    return this.rounds?.ready === true && (this.ownNode?.ready ?? true) && s !== undefined && s.listed && !s.networkMissing && this.podNetworkProblems().length === 0;
  }

  /**
   * What keeps this node from serving pods although its network is up, as the parts see it (the own
   * Node's contested podCIDR, then the cluster mismatch: the first is the NetworkUnavailable reason). Read
   * at each call, as /readyz and /status ask: a read that finds them other than the Node was last told
   * wakes the readiness loop, which tells the Node at once (./agent/readiness.ts).
   */
  podNetworkProblems(): PodNetworkProblem[] {
    return this.readiness?.problems() ?? [];
  }

  /** What stops a pod from starting although the network is up (./cni/part.ts); [] while the check is off. */
  cniProblems(): CniProblem[] {
    return this.cni?.cniProblems() ?? [];
  }

  /** Why /readyz answers 503, once the network is up: the own Node gone, the pod-network problems (its podCIDR contested first); each with its fix. */
  notReadyReason(): string | undefined {
    const reasons = [...(this.ownNode?.notReadyReasons() ?? []), ...this.podNetworkProblems().map((p) => `${p.check}: ${p.detail}; fix: ${p.fix}`)];
    return reasons.length === 0 ? undefined : reasons.join('\n');
  }

  /**
   * False once the reconcile loop has not been good (idle after a successful pass) for --healthz-stale-after:
   * its passes keep failing, a call hangs, or the first list never came. The kubelet's liveness probe or
   * the service manager then restarts the agent. True before the loop runs.
   */
  get isHealthy(): boolean {
    const staleMs = this.opts.config.healthzStaleAfterSeconds * 1000;
    const runningSince = this.rounds?.runningSince;
    if (staleMs <= 0 || runningSince === undefined || !this.network) return true;
    const since = this.network.status().lastGoodAt ?? runningSince;
    return this.clock.now() - Math.max(since, runningSince) <= staleMs;
  }
  get phase(): AgentPhase {
    return this.stopped ? 'stopped' : (this.rounds?.phase ?? 'starting');
  }
  get network(): Network | undefined {
    return this.rounds?.network;
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
    return this.network?.sourceVip;
  }

  /** What `flanneld status` shows (GET /status); reads the HNS network once. */
  async status(): Promise<StatusReport> {
    const network = this.network;
    const problems = this.readiness?.byPart() ?? [];
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
      phase: this.phase,
      ready: this.rounds?.ready === true,
      startKind: this.startKindValue,
      lease: network && { subnet: network.lease.subnet, publicIP: network.lease.publicIP },
      networkName: network?.networkName ?? this.netConfValue?.backend.name,
      hnsNetwork,
      mtu: network?.mtu,
      sourceVip: network?.sourceVip?.ip,
      network: network?.status(),
      hnsVersion: this.hnsVersionValue,
      ...this.parts.reduce<Partial<StatusInput>>((s, part, i) => ({ ...s, ...part.status?.(problems[i] ?? []) }), {}),
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
    // A fatal error in one part (e.g. a revoked etcd lease, a part that stopped) stops the others: watch, renewal, reconcile.
    const inner = new AbortController();
    const onAbort = () => inner.abort(signal.reason);
    if (signal.aborted) inner.abort(signal.reason);
    else signal.addEventListener('abort', onAbort, { once: true });
    let failed: { error: unknown } | undefined;
    try {
      await this.runInner(inner.signal, (error) => {
        failed ??= { error };
        inner.abort(error);
      });
      if (failed && !signal.aborted) throw failed.error;
    } catch (err) {
      if (signal.aborted) return;
      inner.abort(err);
      throw err;
    } finally {
      signal.removeEventListener('abort', onAbort);
      this.stopped = true;
      await health?.close();
      lock.release();
    }
  }

  /** `fail`: a part stopped with an error; the run ends with it. */
  private async runInner(signal: AbortSignal, fail: (error: unknown) => void): Promise<void> {
    const { config } = this.opts;
    const root = this.opts.log;
    const kubeMode = config.kubeSubnetMgr || this.opts.subnetManager !== undefined;
    // kube mode reads net-conf.json; etcd mode reads <prefix>/config (waits, bounded, while it is missing).
    const clusterNetConf = kubeMode
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
    this.hnsVersionValue = await readHnsVersion(dataplane.hns, this.log);

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

    const subnetManager: SubnetManager =
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

    // The agent's parts, built from the same deps; their problems count in this order (the first is the
    // NetworkUnavailable reason). A new part is one more line here.
    const shared: PartDeps = {
      config,
      netConf,
      dataplane,
      subnetManager,
      metrics: this.metrics,
      clock: this.clock,
      log: root,
      network: () => this.network,
      events: () => (this.network ? ownNodeEvents(subnetManager, this.network.lease) : noNodeEvents),
    };
    this.cni = cniPart(shared, this.opts.cniFs);
    const ownNode = new OwnNode({
      log: this.log,
      network: () => this.network,
      events: () => shared.events(),
      leaseAgain: (change) => this.rounds?.again(change),
      contestChanged: () => void this.readiness?.checked(),
    });
    this.ownNode = ownNode;
    this.parts = [
      // The own Node first: its contested subnet is the NetworkUnavailable reason before any other.
      ownNode,
      clusterConfigPart(shared),
      this.cni,
      // kube mode reads net-conf.json from a file (a mounted ConfigMap): say when it changes under the agent.
      ...(kubeMode ? [netConfPart(shared, { read: (p) => readNetConf(p, this.opts.readFile), intervalMs: this.opts.netConfRecheckMs })] : []),
      dualStackPart(shared),
      ...(config.networkPolicy ? [(await import('./agent/netpol-part.js')).netpolPart(shared)] : []),
    ];
    const readiness = new PodNetworkReadiness({ parts: this.parts, subnetManager, clock: this.clock, log: this.log, intervalMs: this.opts.cniCheckIntervalMs });
    this.readiness = readiness;

    // The cloud metadata route and the chosen NIC's own settings, read before the vSwitch replaces the NIC, are restored by settle.
    const metadataRoute = await noteMetadataRoute(dataplane.routes, dataplane.host).catch(() => undefined);
    const nic = await snapshotNic(dataplane.host, ext.iface, [netConf.network, ...(netConf.ipv6Network ? [netConf.ipv6Network] : [])], this.log);
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

    // The parts run from the first network on, across lease rounds, and stop with the run, however that ends.
    const partsRun = new AbortController();
    const stopParts = () => partsRun.abort(signal.reason);
    signal.addEventListener('abort', stopParts, { once: true });
    let running: Promise<void> | undefined;
    const startParts = () =>
      (running ??= runParts([...this.parts, readiness], partsRun.signal, (part, error) => {
        this.log.error('a part of the agent stopped; stopping the agent', { part: part.name, error: errorMessage(error) });
        fail(error);
      }));
    const rounds = new LeaseRounds({
      subnetManager,
      backend: newBackend,
      settle: async (network) => {
        await keepNic(nic, { host: dataplane.host, routes: dataplane.routes, log: this.log, events: ownNodeEvents(subnetManager, network.lease) });
        await keepMetadataRoute(metadataRoute, dataplane.routes, dataplane.host, this.log);
        await network.settle();
      },
      subnetEnv,
      publish: async (network) => {
        await recordNetwork(config.subnetFile, netConf, network, dataplane.hns, this.log);
        for (const part of this.parts) await part.settled?.(network);
      },
      beforeCompleteLease: (sig) => untilAborted(readiness.checked(), sig),
      ownNode,
      running: () => void startParts(),
      clock: this.clock,
    });
    this.rounds = rounds;
    try {
      subnetManager.onOwnLeaseChange?.((change) => ownNode.leaseChanged(change));
      await rounds.run(signal);
    } finally {
      signal.removeEventListener('abort', stopParts);
      partsRun.abort(new Error('the network stopped'));
      await running;
    }
  }
}

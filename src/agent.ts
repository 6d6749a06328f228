// The agent: wires config, net-conf, the subnet manager, the dataplane and a backend together and runs
// them until the signal aborts. Mirrors flannel main.go (newSubnetManager, backend registration,
// WriteSubnetFile, the health server) with Windows rules and the reconcile design of docs/adr/0001.
// Each mode's modules are imported when that mode starts: an etcd node never loads the kube client
// (@kubernetes/client-node), a kube node never loads etcd3, and only the configured backend, dataplane
// and health server are loaded (see docs/performance.md, What the process loads).
import type { Backend, BackendDeps, Network } from './backends/backend.js';
import type { SourceVipRecord } from './backends/vxlan/source-vip.js';
import { systemClock, type Clock } from './clock.js';
import type { AgentConfig } from './config/agent-config.js';
import { createDataplane, type Dataplane } from './dataplane/factory.js';
import { errorMessage, UnsupportedError } from './errors.js';
import { Metrics } from './metrics.js';
import { buildStatusReport, type StatusInput, type StatusReport } from './health/status.js';
import { hostFiles } from './fs-seams.js';
import { selectExternalInterface } from './host/select.js';
import { acquireAgentLock, agentLockPath } from './host/agent-lock.js';
import { bootRecordPath, checkBoot, systemBootTimeMs, type StartKind } from './host/boot.js';
import { componentLogger, type Logger } from './log.js';
import { keepMetadataRoute, noteMetadataRoute } from './host/metadata-route.js';
import type { KubeStart } from './subnet/kube/factory.js';
import type { OwnLeaseChange, SubnetManager } from './subnet/lease.js';
import { nodeReregisteredEvent } from './node-events.js';
import { checkNetworkExcludesNode, readNetConf } from './subnet/net-conf.js';
import type { NetworkConfig } from './subnet/net-conf-types.js';
import type { RelistOptions } from './subnet/relist.js';
import { encodeSubnetEnv, previousSubnetFromEnv, readSubnetEnv, writeSubnetEnv } from './subnet/subnet-env.js';
import { VERSION } from './version.js';

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
  /** The subnet manager's pauses between list and watch rounds (tests); default client-go's reflector backoff. */
  relistBackoff?: RelistOptions['backoff'];
  /**
   * The host's boot time, ms since the epoch. Default on Windows: now - os.uptime(); elsewhere (the
   * simulated dataplane has no reboots) no boot record is kept unless this is given. Tests inject reboots.
   */
  bootTimeMs?: () => number;
}

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
  private startKindValue: StartKind | undefined;
  private sourceVipValue: SourceVipRecord | undefined;
  private runningSince: number | undefined;
  private writtenMtu: number | undefined;
  private writtenSubnet: string | undefined;
  /** Why the own Node is missing from the API server, while it is (the agent is not ready then). */
  private ownNodeGone: string | undefined;
  /** Ends the running lease round so the lease is taken again (the own Node was registered again). */
  private leaseAgain: ((change: Extract<OwnLeaseChange, { kind: 'replaced' }>) => void) | undefined;

  constructor(private readonly opts: AgentOptions) {
    this.log = componentLogger(opts.log, 'agent');
    this.clock = opts.clock ?? systemClock;
    this.metrics = opts.metrics ?? new Metrics();
  }

  /**
   * subnet.env is written, the first complete list of the peers has arrived and the HNS network exists
   * (false while it is missing and being rebuilt). A list that never completes (an API server paging
   * forever, issue 18) keeps the agent not ready, as upstream's kube subnet manager waits for its node
   * informer to sync (pkg/subnet/kube/kube.go, nodeController.HasSynced) before the agent goes on.
   */
  get isReady(): boolean {
    const s = this.networkValue?.status();
    return this.ready && this.ownNodeGone === undefined && s !== undefined && s.listed && !s.networkMissing;
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
      ...(this.ownNodeGone !== undefined ? { ownNodeGone: this.ownNodeGone } : {}),
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
    const netConf =
      config.kubeSubnetMgr || this.opts.subnetManager
        ? readNetConf(config.netConfigPath, this.opts.readFile)
        : await (await import('./subnet/etcd/factory.js')).fetchEtcdNetworkConfig(config, { log: root, signal, clock: this.clock });
    this.netConfValue = netConf;
    if (!netConf.enableIPv4 || netConf.enableIPv6) {
      throw new UnsupportedError(
        'FLANNEL_ERR_UNSUPPORTED',
        'this agent supports IPv4-only pod networks: set EnableIPv4 true and remove EnableIPv6/IPv6Network from the network config',
        {
          path: config.netConfigPath,
        },
      );
    }
    this.log.info('network config', { network: netConf.network, backend: netConf.backend.type, name: netConf.backend.name });

    const dataplane = this.opts.dataplane ?? (await createDataplane(config, { log: root, metrics: this.metrics, clock: this.clock }));
    this.dataplaneValue = dataplane;

    // kube mode: one kubeconfig (--kubeconfig-file, --kube-api-url or in-cluster) for the annotations and the manager.
    const kube =
      config.kubeSubnetMgr && !this.opts.subnetManager
        ? (await import('./subnet/kube/factory.js')).kubeStart(config, { log: root, metrics: this.metrics, clock: this.clock, relistBackoff: this.opts.relistBackoff })
        : undefined;
    const publicIPs = await this.publicIPCandidates(kube, signal);
    const extIface = selectExternalInterface(await dataplane.host.interfaces(), await dataplane.host.defaultRouteInterfaceIndex(), {
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

    const previousSubnet = await this.previousSubnet(config.subnetFile);
    this.recordBoot(config.subnetFile);

    const subnetManager =
      this.opts.subnetManager ??
      (kube
        ? kube.subnetManager(netConf)
        : (await import('./subnet/etcd/factory.js')).createEtcdSubnetManager(config, {
            netConf,
            publicIP,
            previousSubnet,
            log: root,
            metrics: this.metrics,
            clock: this.clock,
            tuning: { relistBackoff: this.opts.relistBackoff },
          }));
    // The cloud metadata route, read before the vSwitch moves the node's routes, is restored by settle.
    const metadataRoute = await noteMetadataRoute(dataplane.routes, dataplane.host).catch(() => undefined);
    // What the host needs once the HNS network exists, and again after each rebuild of it.
    const settle = async (network: Network): Promise<void> => {
      await keepMetadataRoute(metadataRoute, dataplane.routes, dataplane.host, this.log);
      if (netConf.backend.type === 'vxlan') await this.reserveSourceVip(network, dataplane);
      else await this.reserveHostEndpoint(network);
      if (network.mtu !== this.writtenMtu || network.lease.subnet !== this.writtenSubnet) await this.writeSubnetEnv(netConf, network);
    };
    const deps: BackendDeps = {
      netConf,
      subnetManager,
      hns: dataplane.hns,
      routes: dataplane.routes,
      host: dataplane.host,
      extIface,
      publicIP,
      log: componentLogger(root, netConf.backend.type),
      metrics: this.metrics,
      clock: this.clock,
      resyncMs: this.opts.resyncMs,
      policyBatch: config.hnsPolicyBatchSize,
      afterRebuild: settle,
    };
    const newBackend = async (): Promise<Backend> =>
      netConf.backend.type === 'vxlan'
        ? new (await import('./backends/vxlan/backend.js')).VxlanBackend(deps)
        : new (await import('./backends/hostgw/backend.js')).HostGwBackend(deps);

    const manager: SubnetManager = subnetManager;
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
        await network.run(round.signal);
      } catch (err) {
        if (signal.aborted || next === undefined) throw err;
      } finally {
        signal.removeEventListener('abort', endRound);
        this.leaseAgain = undefined;
      }
      if (signal.aborted || next === undefined) return;
      again = next;
      this.ready = false;
    }
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
    subnetManager.nodeEvents?.(network.lease).record(nodeReregisteredEvent(previous.lease.subnet, network.lease.subnet, rebuilt));
  }

  /** Write subnet.env for the network's subnet and current MTU (again after a rebuild changed the MTU). */
  private async writeSubnetEnv(netConf: NetworkConfig, network: Network): Promise<void> {
    const { config } = this.opts;
    const contents = encodeSubnetEnv({ network: netConf.network, subnet: network.lease.subnet, mtu: network.mtu, ipMasq: config.ipMasq });
    await writeSubnetEnv(config.subnetFile, contents, { clock: this.clock });
    this.writtenMtu = network.mtu;
    this.writtenSubnet = network.lease.subnet;
    this.log.info('wrote subnet.env', { path: config.subnetFile, subnet: network.lease.subnet, mtu: network.mtu });
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
   * host-gw: reserve the bridge endpoint's address (`.2`, every pod's gateway under win-bridge) in
   * host-local's store, so no pod gets it. An address a pod already holds stays with that pod.
   */
  private async reserveHostEndpoint(network: Network): Promise<void> {
    const { config } = this.opts;
    if (!config.cniIpamDataDir) return;
    const { HOST_ENDPOINT_OWNER, hostEndpointAddress } = await import('./backends/hostgw/backend.js');
    const { reserveAddress } = await import('./backends/ipam-reservation.js');
    const ip = hostEndpointAddress(network.lease.subnet);
    const ifname = `${network.networkName}_ep`;
    const r = reserveAddress(hostFiles, { dataDir: config.cniIpamDataDir, network: network.networkName, ip, owner: HOST_ENDPOINT_OWNER, ifname });
    if (r.result === 'reserved') this.log.info('reserved the host endpoint address in host-local IPAM', { path: r.path, ip, endpoint: ifname });
    if (r.result === 'held') {
      this.log.warn("a pod holds the host endpoint's address (every pod's gateway); it keeps it until it is deleted: recreate that pod", {
        path: r.path,
        ip,
        container: r.holder,
      });
    }
  }

  /** The previous subnet.env tells what this node had (the etcd manager prefers it); a bad one is only logged. */
  private async previousSubnet(path: string): Promise<string | undefined> {
    try {
      const previous = await readSubnetEnv(path);
      if (previous === undefined) return undefined;
      const subnet = previousSubnetFromEnv(previous);
      this.log.info('found previous subnet.env', { path, subnet });
      return subnet;
    } catch (err) {
      this.log.warn('ignoring unreadable previous subnet.env; it will be rewritten', { path, error: errorMessage(err) });
      return undefined;
    }
  }
}

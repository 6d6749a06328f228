// The agent: wires config, net-conf, the subnet manager, the dataplane and a backend together and runs
// them until the signal aborts. Mirrors flannel main.go (newSubnetManager, backend registration,
// WriteSubnetFile, the health server) with Windows rules and the reconcile design of ARCHITECTURE.md.
import type { KubeConfig } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import type { Backend, BackendDeps, Network } from './backends/backend.js';
import { HostGwBackend } from './backends/hostgw/backend.js';
import { VxlanBackend } from './backends/vxlan/backend.js';
import { systemClock, type Clock } from './clock.js';
import type { AgentConfig } from './config/agent-config.js';
import { createDataplane, type Dataplane } from './dataplane/factory.js';
import { errorMessage } from './errors.js';
import { Metrics } from './health/metrics.js';
import { startHealthServer } from './health/server.js';
import { selectExternalInterface } from './host/select.js';
import { componentLogger, type Logger } from './log.js';
import type { SubnetManager } from './subnet/lease.js';
import { readNetConf } from './subnet/net-conf.js';
import type { NetworkConfig } from './subnet/net-conf-types.js';
import { loadKubeConfig } from './subnet/kube/client.js';
import { KubeSubnetManager } from './subnet/kube/manager.js';
import { createEtcdSubnetManager, fetchEtcdNetworkConfig } from './subnet/etcd/factory.js';
import { encodeSubnetEnv, previousSubnetFromEnv, readSubnetEnv, writeSubnetEnv } from './subnet/subnet-env.js';
import { LeaseWatcher } from './subnet/watcher.js';

export interface AgentOptions {
  config: AgentConfig;
  log: Logger;
  clock?: Clock;
  metrics?: Metrics;
  /** Injected dataplane (tests, demo); default: built from config.dataplane. */
  dataplane?: Dataplane;
  /** Injected kubeconfig (demo); default: from --kubeconfig-file / --kube-api-url / in-cluster. */
  kubeConfig?: KubeConfig;
  /** Injected subnet manager; default: kube (with --kube-subnet-mgr) or etcd. */
  subnetManager?: SubnetManager;
  readFile?: (path: string) => string;
  resyncMs?: number;
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

  constructor(private readonly opts: AgentOptions) {
    this.log = componentLogger(opts.log, 'agent');
    this.clock = opts.clock ?? systemClock;
    this.metrics = opts.metrics ?? new Metrics();
  }

  get isReady(): boolean {
    return this.ready;
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

  /** Run until `signal` aborts (resolves) or a fatal error (rejects). */
  async run(signal: AbortSignal): Promise<void> {
    const { config } = this.opts;
    const health =
      config.healthzPort > 0
        ? await startHealthServer({
            host: config.healthzIP,
            port: config.healthzPort,
            metrics: this.metrics,
            isReady: () => this.ready,
            log: componentLogger(this.opts.log, 'health'),
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
    }
  }

  private async runInner(signal: AbortSignal): Promise<void> {
    const { config } = this.opts;
    const root = this.opts.log;
    // kube mode reads net-conf.json; etcd mode reads <prefix>/config (waits, bounded, while it is missing).
    const netConf =
      config.kubeSubnetMgr || this.opts.subnetManager
        ? readNetConf(config.netConfigPath, this.opts.readFile ?? ((p) => readFileSync(p, 'utf8')))
        : await fetchEtcdNetworkConfig(config, { log: root, signal, clock: this.clock });
    this.netConfValue = netConf;
    this.log.info('network config', { network: netConf.network, backend: netConf.backend.type, name: netConf.backend.name });

    const dataplane = this.opts.dataplane ?? (await createDataplane(config, { log: root, metrics: this.metrics, clock: this.clock }));
    this.dataplaneValue = dataplane;

    const extIface = selectExternalInterface(await dataplane.host.interfaces(), await dataplane.host.defaultRouteInterfaceIndex(), {
      iface: config.iface,
      ifaceRegex: config.ifaceRegex,
    });
    const publicIP = config.publicIP || extIface.ipv4;
    this.log.info('using interface', { interface: extIface.name, index: extIface.index, ip: extIface.ipv4, mtu: extIface.mtu, publicIP });

    await this.logPreviousSubnetEnv(config.subnetFile);

    const subnetManager =
      this.opts.subnetManager ??
      (config.kubeSubnetMgr
        ? this.createKubeSubnetManager(netConf)
        : await createEtcdSubnetManager(config, { netConf, publicIP, log: root, metrics: this.metrics, clock: this.clock }));
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
    };
    const backend: Backend = netConf.backend.type === 'vxlan' ? new VxlanBackend(deps) : new HostGwBackend(deps);

    this.phaseValue = 'registering';
    const network = await backend.registerNetwork(signal);
    this.networkValue = network;

    const contents = encodeSubnetEnv({ network: netConf.network, subnet: network.lease.subnet, mtu: network.mtu, ipMasq: config.ipMasq });
    await writeSubnetEnv(config.subnetFile, contents);
    this.ready = true;
    this.phaseValue = 'running';
    this.log.info('wrote subnet.env', { path: config.subnetFile, subnet: network.lease.subnet, mtu: network.mtu });

    const watcher = new LeaseWatcher({
      ownLeaseKey: network.lease.key,
      ownSubnet: network.lease.subnet,
      validation: {
        network: netConf.network,
        subnetLen: Number(network.lease.subnet.split('/')[1]),
        ownSubnet: network.lease.subnet,
        backendType: netConf.backend.type,
      },
      log: componentLogger(root, 'leases'),
      metrics: this.metrics,
    });

    let synced = false;
    const watching = subnetManager.watchLeases((update) => {
      const changes = watcher.apply(update);
      if (changes.length > 0 || !synced) network.setPeers(watcher.peers());
      if (update.kind === 'snapshot' && !synced) {
        synced = true;
        network.markSynced();
      }
    }, signal);

    const running = network.run(signal);
    const completing = network.waitForInSync(signal).then(
      () => {
        this.log.info('dataplane in sync with peers', { peers: watcher.size });
        return subnetManager.completeLease(network.lease, signal);
      },
      (err: unknown) => {
        if (!signal.aborted) throw err;
      },
    );
    await Promise.all([watching, running, completing]);
  }

  /** The previous subnet.env tells what this node had (the etcd manager prefers it); a bad one is only logged. */
  private async logPreviousSubnetEnv(path: string): Promise<void> {
    try {
      const previous = await readSubnetEnv(path);
      if (previous !== undefined) this.log.info('found previous subnet.env', { path, subnet: previousSubnetFromEnv(previous) });
    } catch (err) {
      this.log.warn('ignoring unreadable previous subnet.env; it will be rewritten', { path, error: errorMessage(err) });
    }
  }

  private createKubeSubnetManager(netConf: NetworkConfig): SubnetManager {
    const { config } = this.opts;
    const kubeConfig = this.opts.kubeConfig ?? loadKubeConfig({ kubeconfigFile: config.kubeconfigFile, kubeApiUrl: config.kubeApiUrl });
    return new KubeSubnetManager({
      kubeConfig,
      nodeName: config.nodeName,
      podName: config.podName,
      podNamespace: config.podNamespace,
      network: netConf.network,
      annotationPrefix: config.kubeAnnotationPrefix,
      setNodeNetworkUnavailable: config.setNodeNetworkUnavailable,
      nodeWaitTimeoutMs: config.nodeWaitTimeoutSeconds * 1000,
      publicIPOverride: config.publicIP || undefined,
      log: componentLogger(this.opts.log, 'kube'),
      metrics: this.metrics,
      clock: this.clock,
    });
  }
}


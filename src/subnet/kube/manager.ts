// The Kubernetes subnet manager: the own Node's podCIDR is the lease, flannel's annotations publish it,
// and a list + watch of Nodes yields the peers (node-watch.ts). Mirrors flannel pkg/subnet/kube/kube.go
// (NewSubnetManager node-name resolution, AcquireLease, CompleteLease).
// Differences by design: bounded wait for the own node, a deadline on every request (client-go has
// rest.Config.Timeout; a GET that never answers must not freeze the agent), retries for API blips, only
// changed annotation keys patched. Requests are raw JSON (http.ts): no typed model of any Node is built.
import { backoffDelay, systemClock } from '../../clock.js';
import type { Clock } from '../../clock.js';
import { BackendError, ConfigError, KubeError } from '../../errors.js';
import { Metrics } from '../../health/metrics.js';
import { silentLogger } from '../../log.js';
import type { Logger } from '../../log.js';
import type { Lease, LeaseAttrsSource, LeaseUpdateHandler, SubnetManager } from '../lease.js';
import { isVxlanBackendData, publishableAttrs } from '../lease.js';
import { annotationKeys, encodeBackendData } from './annotations.js';
import type { AnnotationKeys } from './annotations.js';
import { describe, httpStatus, kubeError, retryable } from './api-error.js';
import { KubeHttp } from './http.js';
import { NodeWatch } from './node-watch.js';
import { projectNode } from './projection.js';
import { isIp4, isNetworkCidr } from '../../ip4.js';
import { checkOwnPublicIPs, checkOwnSubnet } from '../own-lease.js';
import type { NodeLease } from './projection.js';
import type { KubeConfig } from '@kubernetes/client-node';

export interface KubeSubnetManagerOptions {
  kubeConfig: KubeConfig;
  /** NODE_NAME; when absent the node is found through POD_NAME + POD_NAMESPACE. */
  nodeName?: string;
  podName?: string;
  podNamespace?: string;
  /** net-conf `Network` (IPv4 CIDR). */
  network: string;
  /** Normalised `--kube-annotation-prefix` (ends in `/` or `-`). */
  annotationPrefix: string;
  setNodeNetworkUnavailable: boolean;
  /** `--public-ip`, for the log line when the node-public-ip annotation overrides it. */
  publicIPOverride?: string;
  log?: Logger;
  metrics?: Metrics;
  clock?: Clock;
  /** How long to wait for the own Node to exist and get a podCIDR (default 5 min). */
  nodeWaitTimeoutMs?: number;
  /** How often the wait is logged (default 10 s). */
  nodeWaitLogIntervalMs?: number;
  /** How often the own Node is re-read while waiting (default 1 s). */
  nodePollIntervalMs?: number;
  /** Capped exponential backoff for API retries and reconnects (default 1 s / 30 s). */
  backoffBaseMs?: number;
  backoffCapMs?: number;
  /** How long a failing API call (get pod, patch) is retried before giving up (default 5 min). */
  apiRetryTimeoutMs?: number;
  /** Deadline of every request: list pages, the own-Node get, patches, the pod lookup (default 30 s). */
  requestTimeoutMs?: number;
  /** Server-side watch timeout; default 30-40 s (jittered), so a healthy watch is never silent longer. */
  watchTimeoutSeconds?: number;
  /** A watch with no byte for this long is abandoned and relisted (default: watch timeout + 10 s). */
  watchSilenceMs?: number;
  /**
   * Page size of the Node list (default 250). bench/kube-api.mjs, 5,000 ~9 KB Nodes, raw path: 250 cost
   * the least CPU (583 ms against 641 at 100 and 730 at 500) with peak RSS growth near 100's (51 MB
   * against 47; 117 MB at 500, 179 MB unpaged).
   */
  listPageSize?: number;
}

const MIN = 60_000;
const SMP = 'application/strategic-merge-patch+json';

type Obj = Record<string, unknown>;
const asObj = (v: unknown): Obj | undefined => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined);

function encodeAttrsData(d: unknown): string {
  if (d === null || d === undefined) return 'null';
  if (isVxlanBackendData(d)) return encodeBackendData(d);
  return JSON.stringify(d);
}

/** RFC 3339 with seconds, as metav1.Time marshals. */
function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

export class KubeSubnetManager implements SubnetManager {
  readonly name = 'kube';

  private readonly http: KubeHttp;
  private readonly nodes: NodeWatch;
  private readonly keys: AnnotationKeys;
  private readonly log: Logger;
  private readonly metrics: Metrics;
  private readonly clock: Clock;
  private readonly opts: KubeSubnetManagerOptions;
  private nodeName: string | undefined;

  constructor(opts: KubeSubnetManagerOptions) {
    this.opts = opts;
    this.keys = annotationKeys(opts.annotationPrefix);
    this.log = opts.log ?? silentLogger();
    this.metrics = opts.metrics ?? new Metrics();
    this.clock = opts.clock ?? systemClock;
    this.http = new KubeHttp(opts.kubeConfig, this.clock);
    this.nodes = new NodeWatch({
      http: this.http,
      keys: this.keys,
      log: this.log,
      metrics: this.metrics,
      clock: this.clock,
      backoffBaseMs: this.base,
      backoffCapMs: this.cap,
      requestTimeoutMs: this.requestTimeoutMs,
      listPageSize: opts.listPageSize ?? 250,
      watchTimeoutSeconds: opts.watchTimeoutSeconds,
      watchSilenceMs: opts.watchSilenceMs,
    });
    this.nodeName = opts.nodeName || undefined;
    if (!isNetworkCidr(opts.network)) {
      throw new ConfigError('FLANNEL_ERR_CONFIG', `kube subnet manager: Network "${opts.network}" is not an IPv4 CIDR; fix net-conf.json`, { network: opts.network });
    }
  }

  /** True once the first complete Node list has been delivered as a snapshot. */
  get hasSynced(): boolean {
    return this.nodes.hasSynced;
  }

  private get requestTimeoutMs(): number {
    return this.opts.requestTimeoutMs ?? 30_000;
  }

  private get(path: string, signal: AbortSignal, timeoutMs = this.requestTimeoutMs): Promise<unknown> {
    return this.http.json({ method: 'GET', path, timeoutMs, signal });
  }

  private patchStatus(name: string, body: unknown, signal: AbortSignal): Promise<unknown> {
    const path = `/api/v1/nodes/${encodeURIComponent(name)}/status`;
    return this.http.json({ method: 'PATCH', path, body, contentType: SMP, timeoutMs: this.requestTimeoutMs, signal });
  }

  private get base(): number {
    return this.opts.backoffBaseMs ?? 1000;
  }

  private get cap(): number {
    return this.opts.backoffCapMs ?? 30_000;
  }

  /** Retry `fn` on retryable failures with capped backoff, for at most apiRetryTimeoutMs. */
  private async retry<T>(what: string, fn: () => Promise<T>, signal: AbortSignal): Promise<T> {
    const deadline = this.clock.now() + (this.opts.apiRetryTimeoutMs ?? 5 * MIN);
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        if (!retryable(err) || this.clock.now() >= deadline) throw kubeError(what, err);
        const delayMs = backoffDelay(attempt, this.base, this.cap);
        this.log.warn('kubernetes API call failed, retrying', { call: what, attempt: attempt + 1, delayMs, error: describe(err) });
        await this.clock.sleep(delayMs, signal);
      }
    }
  }

  /** NODE_NAME, else `spec.nodeName` of the pod POD_NAMESPACE/POD_NAME (flannel NewSubnetManager). */
  async resolveNodeName(signal: AbortSignal): Promise<string> {
    if (this.nodeName) return this.nodeName;
    const { podName, podNamespace } = this.opts;
    if (!podName || !podNamespace) {
      throw new KubeError('FLANNEL_ERR_NODE', 'env variables POD_NAME and POD_NAMESPACE must be set');
    }
    const pod = await this.retry(
      `error retrieving pod spec for '${podNamespace}/${podName}'`,
      () => this.get(`/api/v1/namespaces/${encodeURIComponent(podNamespace)}/pods/${encodeURIComponent(podName)}`, signal),
      signal,
    );
    const nodeName = asObj(asObj(pod)?.spec)?.nodeName;
    if (typeof nodeName !== 'string' || nodeName === '') {
      throw new KubeError('FLANNEL_ERR_NODE', `node name not present in pod spec '${podNamespace}/${podName}'`, { pod: `${podNamespace}/${podName}` });
    }
    this.log.info('node name resolved from pod', { pod: `${podNamespace}/${podName}`, node: nodeName });
    this.nodeName = nodeName;
    return nodeName;
  }

  /** Wait (bounded, logged) until the own Node exists and has an IPv4 podCIDR. */
  private async waitForOwnNode(name: string, signal: AbortSignal): Promise<NodeLease & { podCIDR: string }> {
    const timeoutMs = this.opts.nodeWaitTimeoutMs ?? 5 * MIN;
    const logEvery = this.opts.nodeWaitLogIntervalMs ?? 10_000;
    const pollMs = this.opts.nodePollIntervalMs ?? 1000;
    const start = this.clock.now();
    let lastLog = -Infinity;
    let apiFailures = 0;
    for (;;) {
      let state: 'missing' | 'no-podcidr' | 'api-error';
      let lastErr: unknown;
      try {
        // Bounded by what is left of the wait (at least 1 s, so a slow but healthy answer still counts).
        const left = Math.max(1000, timeoutMs - (this.clock.now() - start));
        const node = await this.get(`/api/v1/nodes/${encodeURIComponent(name)}`, signal, Math.min(this.requestTimeoutMs, left));
        const rec = projectNode(node, this.keys);
        if (rec?.podCIDR !== undefined) {
          if (apiFailures > 0 || lastLog > -Infinity) this.log.info('own node is ready', { node: name, podCIDR: rec.podCIDR });
          return rec as NodeLease & { podCIDR: string };
        }
        const spec = asObj(asObj(node)?.spec);
        if (typeof spec?.podCIDR === 'string' && spec.podCIDR !== '') {
          throw new KubeError('FLANNEL_ERR_NODE', `node "${name}" has no IPv4 pod cidr (podCIDR "${spec.podCIDR.slice(0, 100)}"); this agent supports IPv4 pod networks only`, { node: name });
        }
        state = 'no-podcidr';
        apiFailures = 0;
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        if (err instanceof KubeError) throw err;
        if (httpStatus(err) === 404) {
          state = 'missing';
          apiFailures = 0;
        } else if (retryable(err)) {
          state = 'api-error';
          lastErr = err;
          apiFailures++;
        } else {
          throw kubeError(`reading node "${name}"`, err);
        }
      }
      const waited = this.clock.now() - start;
      if (waited >= timeoutMs) {
        if (state === 'no-podcidr') throw new KubeError('FLANNEL_ERR_NODE', `node "${name}" pod cidr not assigned`, { node: name, waitedMs: waited });
        if (state === 'missing') {
          throw new KubeError(
            'FLANNEL_ERR_NODE',
            `node "${name}" not found after waiting ${Math.round(waited / 1000)}s; check NODE_NAME (or POD_NAME/POD_NAMESPACE) and that the kubelet registered the node`,
            { node: name, waitedMs: waited, reason: 'not found' },
          );
        }
        throw kubeError(`reading node "${name}" (gave up after ${Math.round(waited / 1000)}s)`, lastErr);
      }
      if (this.clock.now() - lastLog >= logEvery) {
        lastLog = this.clock.now();
        const reason = state === 'missing' ? 'node not registered yet' : state === 'no-podcidr' ? 'podCIDR not assigned yet' : 'API unreachable';
        this.log.info('waiting for own node', {
          node: name,
          reason,
          waitedS: Math.round(waited / 1000),
          timeoutS: Math.round(timeoutMs / 1000),
          ...(lastErr !== undefined ? { error: describe(lastErr) } : {}),
        });
      }
      const delay = state === 'api-error' ? backoffDelay(apiFailures - 1, this.base, this.cap) : pollMs;
      await this.clock.sleep(Math.max(0, Math.min(delay, timeoutMs - waited)), signal);
    }
  }

  async acquireLease(attrsFor: LeaseAttrsSource, signal: AbortSignal): Promise<Lease> {
    const name = await this.resolveNodeName(signal);
    const rec = await this.waitForOwnNode(name, signal);
    checkOwnSubnet(name, this.opts.network, rec.podCIDR);
    checkOwnPublicIPs(name, { [this.keys.nodePublicIP]: rec.nodePublicIP, [this.keys.publicIPOverwrite]: rec.publicIPOverwrite });
    this.log.info('own subnet from node podCIDR', { node: name, subnet: rec.podCIDR });
    const attrs = await attrsFor(rec.podCIDR);
    if (signal.aborted) throw signal.reason;
    if (!publishableAttrs(attrs)) {
      throw new BackendError('FLANNEL_ERR_BACKEND', 'refusing to publish vxlan backend-data without a VtepMAC: peers could not decode it', { node: name });
    }

    let publicIP = attrs.publicIP;
    if (rec.nodePublicIP !== undefined && rec.nodePublicIP !== '') {
      if (isIp4(rec.nodePublicIP)) {
        if (rec.nodePublicIP !== publicIP) {
          this.log.info('public IP overridden by node annotation', {
            annotation: this.keys.nodePublicIP,
            publicIP: rec.nodePublicIP,
            previous: publicIP,
            ...(this.opts.publicIPOverride ? { flag: this.opts.publicIPOverride } : {}),
          });
        }
        publicIP = rec.nodePublicIP;
      } else {
        this.log.warn('ignoring invalid node-public-ip annotation', { annotation: this.keys.nodePublicIP, value: rec.nodePublicIP.slice(0, 64) });
      }
    }
    let published = publicIP;
    if (rec.publicIPOverwrite !== undefined && rec.publicIPOverwrite !== '') {
      if (isIp4(rec.publicIPOverwrite)) {
        if (rec.publicIPOverwrite !== publicIP) {
          this.log.info('overriding public ip from node annotation', { annotation: this.keys.publicIPOverwrite, publicIP: rec.publicIPOverwrite });
        }
        published = rec.publicIPOverwrite;
      } else {
        this.log.warn('ignoring invalid public-ip-overwrite annotation', { annotation: this.keys.publicIPOverwrite, value: rec.publicIPOverwrite.slice(0, 64) });
      }
    }

    const desired: Record<string, string> = {
      [this.keys.kubeSubnetManager]: 'true',
      [this.keys.backendType]: attrs.backendType,
      [this.keys.backendData]: encodeAttrsData(attrs.backendData),
      [this.keys.publicIP]: published,
    };
    const current: Record<string, string | undefined> = {
      [this.keys.kubeSubnetManager]: rec.subnetManager,
      [this.keys.backendType]: rec.backendType,
      [this.keys.backendData]: rec.backendData,
      [this.keys.publicIP]: rec.publicIP,
    };
    const changed: Record<string, string> = {};
    for (const [k, v] of Object.entries(desired)) if (current[k] !== v) changed[k] = v;
    if (Object.keys(changed).length > 0) {
      await this.retry(
        `patching annotations of node "${name}"`,
        () => this.patchStatus(name, { metadata: { annotations: changed } }, signal),
        signal,
      );
      this.log.info('node annotations published', { node: name, keys: Object.keys(changed).join(',') });
    } else {
      this.log.info('node annotations already up to date', { node: name });
    }

    return { key: name, subnet: rec.podCIDR, publicIP: published, backendType: attrs.backendType, backendData: attrs.backendData };
  }

  async completeLease(_lease: Lease, signal: AbortSignal): Promise<void> {
    if (!this.opts.setNodeNetworkUnavailable) return;
    const name = await this.resolveNodeName(signal);
    const now = rfc3339(this.clock.now());
    const condition = {
      type: 'NetworkUnavailable',
      status: 'False',
      lastHeartbeatTime: now,
      lastTransitionTime: now,
      reason: 'FlannelIsUp',
      message: 'Flannel is running on this node',
    };
    await this.retry(
      `setting NetworkUnavailable=False on node "${name}"`,
      () => this.patchStatus(name, { status: { conditions: [condition] } }, signal),
      signal,
    );
    this.log.info('node condition NetworkUnavailable set to False', { node: name });
  }

  async watchLeases(onUpdate: LeaseUpdateHandler, signal: AbortSignal): Promise<void> {
    await this.nodes.run(onUpdate, signal);
  }
}

// The Kubernetes subnet manager: the own Node's podCIDR is the lease, flannel's annotations publish it,
// and a list + watch of Nodes yields the peers. Mirrors flannel pkg/subnet/kube/kube.go
// (NewSubnetManager node-name resolution, AcquireLease, CompleteLease, the node informer handlers).
// Differences by design: bounded wait for the own node, retries for API blips, only changed annotation
// keys patched, and list + watch driven here (relist and snapshot after 410 Gone or a broken watch).
import { CoreV1Api, PatchStrategy, setHeaderOptions, Watch } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { backoffDelay, pause, systemClock } from '../../clock.js';
import type { Clock } from '../../clock.js';
import { errorMessage, FlannelError } from '../../errors.js';
import type { ErrorCode } from '../../errors.js';
import { METRIC, Metrics } from '../../health/metrics.js';
import { silentLogger } from '../../log.js';
import type { Logger } from '../../log.js';
import type { Lease, LeaseAttrsSource, LeaseEvent, LeaseUpdateHandler, SubnetManager } from '../lease.js';
import { isVxlanBackendData, publishableAttrs } from '../lease.js';
import { annotationKeys, encodeBackendData } from './annotations.js';
import type { AnnotationKeys } from './annotations.js';
import { leaseRelevantChanged, projectNode, toLease } from './projection.js';
import { isIp4, isNetworkCidr } from '../../ip4.js';
import { checkOwnPublicIPs, checkOwnSubnet } from '../own-lease.js';
import type { NodeLease } from './projection.js';

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
  /** Server-side watch timeout; default 300-600 s (jittered, as client-go). */
  watchTimeoutSeconds?: number;
  /**
   * Page size of the Node list (default 100). Each page is decoded into full typed Node objects before
   * projection; at ~9 KB per real Node, 500-node pages left ~45 MB of freed-but-retained RSS at 5k nodes
   * against ~20 MB with 100-node pages (bench/memory.mjs).
   */
  listPageSize?: number;
}

const MIN = 60_000;

type WatchOutcome = 'aborted' | 'closed' | 'gone' | 'error';

interface WatchResult {
  outcome: WatchOutcome;
  rv: string;
  events: number;
  err?: unknown;
}

/** HTTP status of a client-node ApiException (or a Watch error), undefined for network errors. */
function httpStatus(err: unknown): number | undefined {
  if (err === null || typeof err !== 'object') return undefined;
  const e = err as { code?: unknown; statusCode?: unknown };
  if (typeof e.code === 'number') return e.code;
  if (typeof e.statusCode === 'number') return e.statusCode;
  return undefined;
}

/** A short description of an API failure: HTTP status and the Status message, never headers. */
function describe(err: unknown): string {
  const code = httpStatus(err);
  if (code === undefined) return errorMessage(err);
  const body = (err as { body?: unknown }).body;
  let msg: string | undefined;
  if (typeof body === 'string') {
    try {
      const parsed = JSON.parse(body) as { message?: unknown };
      if (typeof parsed.message === 'string') msg = parsed.message;
    } catch {
      msg = body.slice(0, 200);
    }
  } else if (body && typeof body === 'object' && typeof (body as { message?: unknown }).message === 'string') {
    msg = (body as { message: string }).message;
  }
  return `HTTP ${code}${msg ? `: ${msg}` : ''}`;
}

function retryable(err: unknown): boolean {
  const code = httpStatus(err);
  if (code === undefined) return true; // connection refused/reset, timeouts: the API blip
  return code === 408 || code === 409 || code === 429 || code >= 500;
}

function kubeError(what: string, err: unknown, code: ErrorCode = 'FLANNEL_ERR_KUBE'): FlannelError {
  const status = httpStatus(err);
  const hint =
    status === 401
      ? '; check the credentials in the kubeconfig / service account token'
      : status === 403
        ? "; check flannel's ClusterRole (nodes: get, list, watch; nodes/status: patch; pods: get)"
        : '';
  return new FlannelError(code, `${what}: ${describe(err)}${hint}`, { status }, { cause: err });
}

/** Resolve with `p`, or reject with the signal's reason as soon as it aborts. */
function withSignal<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    p.catch(() => undefined);
    return Promise.reject(signal.reason as Error);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e as Error);
      },
    );
  });
}


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

  private readonly kc: KubeConfig;
  private readonly api: CoreV1Api;
  private readonly keys: AnnotationKeys;
  private readonly log: Logger;
  private readonly metrics: Metrics;
  private readonly clock: Clock;
  private readonly opts: KubeSubnetManagerOptions;
  private nodeName: string | undefined;
  private records = new Map<string, NodeLease>();
  private synced = false;

  constructor(opts: KubeSubnetManagerOptions) {
    this.opts = opts;
    this.kc = opts.kubeConfig;
    this.api = opts.kubeConfig.makeApiClient(CoreV1Api);
    this.keys = annotationKeys(opts.annotationPrefix);
    this.log = opts.log ?? silentLogger();
    this.metrics = opts.metrics ?? new Metrics();
    this.clock = opts.clock ?? systemClock;
    this.nodeName = opts.nodeName || undefined;
    if (!isNetworkCidr(opts.network)) {
      throw new FlannelError('FLANNEL_ERR_CONFIG', `kube subnet manager: Network "${opts.network}" is not an IPv4 CIDR; fix net-conf.json`, { network: opts.network });
    }
  }

  /** True once the first complete Node list has been delivered as a snapshot. */
  get hasSynced(): boolean {
    return this.synced;
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
        return await withSignal(fn(), signal);
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
      throw new FlannelError('FLANNEL_ERR_NODE', 'env variables POD_NAME and POD_NAMESPACE must be set');
    }
    const pod = await this.retry(
      `error retrieving pod spec for '${podNamespace}/${podName}'`,
      () => this.api.readNamespacedPod({ name: podName, namespace: podNamespace }),
      signal,
    );
    const nodeName = pod.spec?.nodeName;
    if (!nodeName) {
      throw new FlannelError('FLANNEL_ERR_NODE', `node name not present in pod spec '${podNamespace}/${podName}'`, { pod: `${podNamespace}/${podName}` });
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
        const node = await withSignal(this.api.readNode({ name }), signal);
        const rec = projectNode(node, this.keys);
        if (rec?.podCIDR !== undefined) {
          if (apiFailures > 0 || lastLog > -Infinity) this.log.info('own node is ready', { node: name, podCIDR: rec.podCIDR });
          return rec as NodeLease & { podCIDR: string };
        }
        const spec = (node as { spec?: { podCIDR?: unknown; podCIDRs?: unknown } }).spec;
        if (typeof spec?.podCIDR === 'string' && spec.podCIDR !== '') {
          throw new FlannelError('FLANNEL_ERR_NODE', `node "${name}" has no IPv4 pod cidr (podCIDR "${spec.podCIDR.slice(0, 100)}"); this agent supports IPv4 pod networks only`, { node: name });
        }
        state = 'no-podcidr';
        apiFailures = 0;
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        if (err instanceof FlannelError) throw err;
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
        if (state === 'no-podcidr') throw new FlannelError('FLANNEL_ERR_NODE', `node "${name}" pod cidr not assigned`, { node: name, waitedMs: waited });
        if (state === 'missing') {
          throw new FlannelError(
            'FLANNEL_ERR_NODE',
            `node "${name}" not found after waiting ${Math.round(waited / 1000)}s; check NODE_NAME (or POD_NAME/POD_NAMESPACE) and that the kubelet registered the node`,
            { node: name, waitedMs: waited },
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
      throw new FlannelError('FLANNEL_ERR_BACKEND', 'refusing to publish vxlan backend-data without a VtepMAC: peers could not decode it', { node: name });
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
        () =>
          this.api.patchNodeStatus(
            { name, body: { metadata: { annotations: changed } } },
            setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
          ),
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
      () =>
        this.api.patchNodeStatus(
          { name, body: { status: { conditions: [condition] } } },
          setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
        ),
      signal,
    );
    this.log.info('node condition NetworkUnavailable set to False', { node: name });
  }

  // ---- list + watch ------------------------------------------------------------------------------

  private async listAll(signal: AbortSignal): Promise<{ records: Map<string, NodeLease>; rv: string }> {
    const records = new Map<string, NodeLease>();
    const limit = this.opts.listPageSize ?? 100;
    let cont: string | undefined;
    let rv = '';
    do {
      const page = await withSignal(this.api.listNode({ limit, _continue: cont }), signal);
      if (rv === '') rv = page.metadata?.resourceVersion ?? '';
      for (const item of page.items ?? []) {
        const rec = projectNode(item, this.keys);
        if (rec) records.set(rec.name, rec);
      }
      cont = page.metadata?._continue || undefined;
    } while (cont);
    return { records, rv };
  }

  private emit(onUpdate: LeaseUpdateHandler, events: LeaseEvent[]): void {
    if (events.length === 0) return;
    try {
      onUpdate({ kind: 'events', events });
    } catch (err) {
      this.log.error('lease update handler failed', { error: errorMessage(err) });
    }
  }

  /** Apply one watch event to the records; returns the lease events it implies. */
  private apply(type: string, obj: unknown): LeaseEvent[] {
    const rec = projectNode(obj, this.keys);
    if (!rec) return [];
    const prev = this.records.get(rec.name);
    if (type === 'DELETED') {
      this.records.delete(rec.name);
      const lease = toLease(prev ?? rec);
      return lease ? [{ type: 'removed', lease }] : [];
    }
    this.records.set(rec.name, rec);
    if (prev && !leaseRelevantChanged(prev, rec)) return [];
    const next = toLease(rec);
    if (next) return [{ type: 'added', lease: next }];
    const old = prev && toLease(prev);
    return old ? [{ type: 'removed', lease: old }] : [];
  }

  private watchOnce(rv: string, onUpdate: LeaseUpdateHandler, signal: AbortSignal): Promise<WatchResult> {
    const timeoutSeconds = this.opts.watchTimeoutSeconds ?? 300 + Math.floor(Math.random() * 300);
    return new Promise<WatchResult>((resolve) => {
      let settled = false;
      let lastRv = rv;
      let events = 0;
      let ctrl: AbortController | undefined;
      const watchdog = new AbortController();
      const finish = (outcome: WatchOutcome, err?: unknown) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        watchdog.abort();
        ctrl?.abort();
        resolve({ outcome, rv: lastRv, events, err });
      };
      const onAbort = () => finish('aborted');
      if (signal.aborted) return finish('aborted');
      signal.addEventListener('abort', onAbort, { once: true });
      // A watch the server forgot (no FIN, no events past its own timeout) is abandoned.
      this.clock.sleep((timeoutSeconds + 30) * 1000, watchdog.signal).then(
        () => finish('error', new Error('watch stalled past its timeout')),
        () => undefined,
      );
      const callback = (phase: string, obj: unknown) => {
        if (settled) return;
        try {
          if (phase === 'ERROR') {
            const st = obj as { code?: unknown; message?: unknown } | undefined;
            if (st?.code === 410) finish('gone');
            else finish('error', new Error(`watch error: ${typeof st?.message === 'string' ? st.message : 'unknown'}`));
            return;
          }
          const meta = (obj as { metadata?: { resourceVersion?: unknown } } | undefined)?.metadata;
          if (typeof meta?.resourceVersion === 'string' && meta.resourceVersion !== '') lastRv = meta.resourceVersion;
          if (phase === 'BOOKMARK') return;
          if (phase !== 'ADDED' && phase !== 'MODIFIED' && phase !== 'DELETED') return;
          events++;
          this.emit(onUpdate, this.apply(phase, obj));
        } catch (err) {
          this.log.warn('ignoring malformed watch event', { phase, error: errorMessage(err) });
        }
      };
      new Watch(this.kc)
        .watch('/api/v1/nodes', { resourceVersion: rv, allowWatchBookmarks: true, timeoutSeconds }, callback, (err: unknown) =>
          finish(err ? 'error' : 'closed', err ?? undefined),
        )
        .then(
          (c) => {
            ctrl = c;
            if (settled) c.abort();
          },
          (err: unknown) => finish('error', err),
        );
    });
  }

  async watchLeases(onUpdate: LeaseUpdateHandler, signal: AbortSignal): Promise<void> {
    let failures = 0;
    let lists = 0;
    while (!signal.aborted) {
      let rv: string;
      try {
        const { records, rv: listRv } = await this.listAll(signal);
        rv = listRv;
        this.records = records;
      } catch (err) {
        if (signal.aborted) break;
        const delayMs = backoffDelay(failures++, this.base, this.cap);
        this.log.warn('listing nodes failed, retrying', { attempt: failures, delayMs, error: describe(err) });
        if (!(await pause(this.clock, delayMs, signal))) break;
        continue;
      }
      if (lists++ > 0) this.metrics.inc(METRIC.apiReconnects);
      failures = 0; // the API answered: a watch that breaks next starts its backoff afresh
      this.synced = true;
      const leases: Lease[] = [];
      for (const rec of this.records.values()) {
        const l = toLease(rec);
        if (l) leases.push(l);
      }
      this.log.info('node list synced', { nodes: this.records.size, leases: leases.length, resourceVersion: rv });
      try {
        onUpdate({ kind: 'snapshot', leases });
      } catch (err) {
        this.log.error('lease update handler failed', { error: errorMessage(err) });
      }

      // Watch from the list's resourceVersion until the watch breaks; then relist.
      for (;;) {
        const started = this.clock.now();
        const r = await this.watchOnce(rv, onUpdate, signal);
        rv = r.rv;
        if (r.outcome === 'aborted' || signal.aborted) return;
        if (r.outcome === 'closed') {
          // Normal end (server timeout): resume from the last resourceVersion without a relist.
          this.metrics.inc(METRIC.apiReconnects);
          if (r.events > 0 || this.clock.now() - started >= 1000) {
            failures = 0;
          } else {
            const delayMs = backoffDelay(failures++, this.base, this.cap);
            if (!(await pause(this.clock, delayMs, signal))) return;
          }
          continue;
        }
        if (r.outcome === 'gone') {
          this.log.info('watch resourceVersion expired (410 Gone), relisting nodes', { resourceVersion: rv });
          failures = 0;
          break;
        }
        const delayMs = backoffDelay(failures++, this.base, this.cap);
        this.log.warn('node watch failed, relisting', { attempt: failures, delayMs, error: describe(r.err) });
        if (!(await pause(this.clock, delayMs, signal))) return;
        break;
      }
    }
  }
}

// The own Node, as the kube subnet manager publishes it: its name (--node-name, else the pod's
// spec.nodeName), a bounded wait until it exists and has an IPv4 podCIDR (the lease), flannel's
// annotations patched onto it, and the NetworkUnavailable=False condition. Mirrors flannel
// pkg/subnet/kube/kube.go (NewSubnetManager's node-name lookup, AcquireLease, CompleteLease's
// setNodeNetworkUnavailableFalse). Differences by design: the wait is bounded and logged, API blips are
// retried (../../kube/api-error.ts), so is an RBAC refusal while the agent starts (upstream's NewSubnetManager waits
// up to 10 minutes for its Node informer to sync, whose reflector retries a forbidden list; its pod lookup
// fails at once), and only the annotation keys that changed are patched.
import { backoffDelay } from '../../basics/clock.js';
import type { Clock } from '../../basics/clock.js';
import { KubeError } from '../../basics/errors.js';
import { isIp4 } from '../../basics/ip4.js';
import type { Logger } from '../../basics/log.js';
import type { Lease, LeaseAttrs, LeaseAttrsSource } from '../lease.js';
import { isVxlanBackendData } from '../lease.js';
import { checkDualStackPublicIPv6, checkOwnIPv6Subnet, checkPublishableAttrs, checkOwnPublicIPs, checkOwnSubnet, unusablePublicIPv6 } from '../own-lease.js';
import { formatIp6, parseIp6 } from '../../basics/ip6.js';
import { encodeBackendData } from './annotations.js';
import type { AnnotationKeys } from './annotations.js';
import { describe, httpStatus, kubeError, logApiRetry, rbacRefusal, retryAfterMs, retryApiCall, retryable, retryableAtStartUp } from '../../kube/api-error.js';
import type { ApiRetryOptions } from '../../kube/api-error.js';
import type { KubeHttp } from '../../kube/http.js';
import { asObj } from '../../basics/json-object.js';
import { projectNode } from './node-list-watch.js';
import type { NodeLease } from './node-list-watch.js';

export interface OwnNodeOptions {
  http: KubeHttp;
  keys: AnnotationKeys;
  /** net-conf `Network` (IPv4 CIDR). */
  network: string;
  /** NODE_NAME; when absent the node is found through POD_NAME + POD_NAMESPACE. */
  nodeName?: string;
  podName?: string;
  podNamespace?: string;
  setNodeNetworkUnavailable: boolean;
  /** `--public-ip`, for the log line when the node-public-ip annotation overrides it. */
  publicIPOverride?: string;
  /** net-conf `IPv6Network` when EnableIPv6: the Node must then have an IPv6 podCIDR too, and public-ipv6 is published. */
  ipv6Network?: string;
  /**
   * `--ipv4-only` in a dual-stack cluster: this node runs IPv4 only, yet publishes public-ipv6 (this
   * address) and backend-v6-data, because Linux flanneld with EnableIPv6 drops a Node without them, its
   * IPv4 half included (flannel pkg/subnet/kube/kube.go nodeToLease: ip.ParseIP6 of the public-ipv6
   * annotation fails on ""; pkg/backend/vxlan/vxlan_network.go handleSubnetEvents: a backend-v6-data that
   * does not decode skips the event). backend-v6-data repeats the IPv4 VTEP (vxlan) or is `null`
   * (host-gw), as upstream writes it. The Linux nodes then route this Node's IPv6 podCIDR to it, where no
   * pod has an address: nothing is sent there.
   */
  ipv4OnlyPublicIPv6?: string;
  log: Logger;
  clock: Clock;
  /** Retries of the pod lookup and the patches. */
  retry: ApiRetryOptions;
  /** Deadline of every request. */
  requestTimeoutMs: number;
  /** How long to wait for the own Node to exist and get a podCIDR. */
  nodeWaitTimeoutMs: number;
  /** How often the wait is logged. */
  nodeWaitLogIntervalMs: number;
  /** How often the own Node is re-read while waiting. */
  nodePollIntervalMs: number;
  /**
   * For this long after the first start-up request (the pod lookup, the own Node's get, the nodes/status
   * patches), a 403 on the start-up path is retried like a 5xx: an API server that is still starting, or
   * a ClusterRole applied after the agent, refuses until RBAC grants it (../../kube/api-error.ts
   * retryableAtStartUp). Later a 403 fails at once.
   */
  startUpWindowMs: number;
  /** When start-up began, if before this publisher's first request (the public-IP read, ./factory.ts). */
  startedAt?: number;
}

const SMP = 'application/strategic-merge-patch+json';

function encodeAttrsData(d: unknown): string {
  if (d === null || d === undefined) return 'null';
  if (isVxlanBackendData(d)) return encodeBackendData(d);
  return JSON.stringify(d);
}

/** RFC 3339 with seconds, as metav1.Time marshals. */
function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
}

/**
 * A dual-stack node's podCIDRs: at most one per family (upstream's AcquireLease refuses three or more
 * with this message) and an IPv6 one beside the IPv4 one, which kube-controller-manager allocates only
 * with a dual-stack --cluster-cidr.
 */
/** The InternalIP values of a raw Node's status.addresses (at most 8, each bounded). */
function internalIPsOf(node: unknown): string[] {
  const addresses = asObj(asObj(node)?.status)?.addresses;
  if (!Array.isArray(addresses)) return [];
  return addresses
    .slice(0, 16)
    .map((a) => asObj(a))
    .filter((a) => a?.type === 'InternalIP' && typeof a.address === 'string' && a.address.length <= 45)
    .map((a) => a!.address as string)
    .slice(0, 8);
}

function checkDualStackPodCIDRs(name: string, rec: NodeLease): void {
  if (rec.podCIDRCount !== undefined) {
    throw new KubeError('FLANNEL_ERR_NODE', `node ${JSON.stringify(name)} pod cidrs should be IPv4/IPv6 only or dualstack`, { node: name, podCIDRs: rec.podCIDRCount });
  }
  if (rec.ipv6PodCIDR === undefined) {
    throw new KubeError(
      'FLANNEL_ERR_NODE',
      `node "${name}" has no IPv6 pod cidr but net-conf.json enables IPv6: run kube-controller-manager with a dual-stack --cluster-cidr=<v4>,<v6> (and --allocate-node-cidrs), or remove EnableIPv6 from net-conf.json`,
      { node: name, reason: 'no-ipv6-podcidr' },
    );
  }
}

export class OwnNodePublisher {
  private nodeName: string | undefined;
  /** When the first start-up request was made (the start of the start-up window). */
  private startedAt: number | undefined;
  /** The own Node's status.addresses InternalIPs at the last read (bounded). */
  internalIPs: string[] | undefined;
  /** metadata.uid of the Node the last lease was taken from. */
  acquiredUid: string | undefined;
  /** Its metadata.creationTimestamp, ms since the epoch (who keeps a contested podCIDR). */
  acquiredCreated: number | undefined;
  /** The annotations acquire held (`hold`) until publishHeld: the Node's name and the keys to patch. */
  private held: { name: string; changed: Record<string, string> } | undefined;

  constructor(private readonly o: OwnNodeOptions) {
    this.nodeName = o.nodeName || undefined;
    this.startedAt = o.startedAt;
  }

  /** Whether `err` is retried now: a transient failure, or on the start-up path a 403 within the start-up window. */
  private retried(err: unknown, startUp = true): boolean {
    if (retryable(err)) return true;
    if (!startUp) return false;
    this.startedAt ??= this.o.clock.now();
    return this.o.clock.now() - this.startedAt < this.o.startUpWindowMs && retryableAtStartUp(err);
  }

  private get(path: string, signal: AbortSignal, timeoutMs = this.o.requestTimeoutMs): Promise<unknown> {
    return this.o.http.json({ method: 'GET', path, timeoutMs, signal });
  }

  private patchStatus(what: string, name: string, body: unknown, signal: AbortSignal, startUp = true): Promise<unknown> {
    const path = `/api/v1/nodes/${encodeURIComponent(name)}/status`;
    const patch = () => this.o.http.json({ method: 'PATCH', path, body, contentType: SMP, timeoutMs: this.o.requestTimeoutMs, signal });
    return retryApiCall(what, patch, { ...this.o.retry, retryable: (err) => this.retried(err, startUp) }, signal);
  }

  /** NODE_NAME, else `spec.nodeName` of the pod POD_NAMESPACE/POD_NAME (flannel NewSubnetManager). */
  async resolveNodeName(signal: AbortSignal): Promise<string> {
    if (this.nodeName) return this.nodeName;
    const { podName, podNamespace } = this.o;
    if (!podName || !podNamespace) {
      throw new KubeError('FLANNEL_ERR_NODE', 'env variables POD_NAME and POD_NAMESPACE must be set');
    }
    const pod = await retryApiCall(
      `error retrieving pod spec for '${podNamespace}/${podName}'`,
      () => this.get(`/api/v1/namespaces/${encodeURIComponent(podNamespace)}/pods/${encodeURIComponent(podName)}`, signal),
      { ...this.o.retry, retryable: (err) => this.retried(err) },
      signal,
    );
    const nodeName = asObj(asObj(pod)?.spec)?.nodeName;
    if (typeof nodeName !== 'string' || nodeName === '') {
      throw new KubeError('FLANNEL_ERR_NODE', `node name not present in pod spec '${podNamespace}/${podName}'`, { pod: `${podNamespace}/${podName}` });
    }
    this.o.log.info('node name resolved from pod', { pod: `${podNamespace}/${podName}`, node: nodeName });
    this.nodeName = nodeName;
    return nodeName;
  }

  /** Wait (bounded from `start`, logged) until the own Node exists and has an IPv4 podCIDR. */
  private async waitForOwnNode(name: string, start: number, signal: AbortSignal): Promise<NodeLease & { podCIDR: string }> {
    const { clock, log, nodeWaitTimeoutMs: timeoutMs, nodeWaitLogIntervalMs: logEvery, nodePollIntervalMs: pollMs } = this.o;
    let lastLog = -Infinity;
    let apiFailures = 0;
    for (;;) {
      let state: 'missing' | 'no-podcidr' | 'api-error' | 'refused';
      let lastErr: unknown;
      try {
        // Bounded by what is left of the wait (at least 1 s, so a slow but healthy answer still counts).
        const left = Math.max(1000, timeoutMs - (clock.now() - start));
        const node = await this.get(`/api/v1/nodes/${encodeURIComponent(name)}`, signal, Math.min(this.o.requestTimeoutMs, left));
        const rec = projectNode(node, this.o.keys, this.o.ipv6Network !== undefined);
        this.internalIPs = internalIPsOf(node);
        if (rec?.podCIDR !== undefined && this.o.ipv6Network !== undefined) checkDualStackPodCIDRs(name, rec);
        if (rec?.podCIDR !== undefined) {
          if (apiFailures > 0 || lastLog > -Infinity) log.info('own node is ready', { node: name, podCIDR: rec.podCIDR });
          return rec as NodeLease & { podCIDR: string };
        }
        if (rec?.badPodCIDR !== undefined) {
          throw new KubeError('FLANNEL_ERR_NODE', `node "${name}" has no IPv4 pod cidr (podCIDR "${rec.badPodCIDR}"); this agent supports IPv4 pod networks only`, {
            node: name,
          });
        }
        state = 'no-podcidr';
        apiFailures = 0;
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        // A credential plugin or token file that failed once is retried like an unreachable API server.
        if (err instanceof KubeError && err.code !== 'FLANNEL_ERR_KUBE_AUTH') throw err;
        if (httpStatus(err) === 404) {
          state = 'missing';
          apiFailures = 0;
        } else if (this.retried(err)) {
          state = rbacRefusal(err, this.o.retry.rbacFeatures) ? 'refused' : 'api-error';
          lastErr = err;
          apiFailures++;
        } else {
          throw kubeError(`reading node "${name}"`, err, this.o.retry.rbacFeatures);
        }
      }
      const waited = clock.now() - start;
      if (waited >= timeoutMs) {
        if (state === 'no-podcidr') throw new KubeError('FLANNEL_ERR_NODE', `node "${name}" pod cidr not assigned`, { node: name, waitedMs: waited });
        if (state === 'missing') {
          throw new KubeError(
            'FLANNEL_ERR_NODE',
            `node "${name}" not found after waiting ${Math.round(waited / 1000)}s; check NODE_NAME (or POD_NAME/POD_NAMESPACE) and that the kubelet registered the node`,
            { node: name, waitedMs: waited, reason: 'not found' },
          );
        }
        throw kubeError(`reading node "${name}" (gave up after ${Math.round(waited / 1000)}s)`, lastErr, this.o.retry.rbacFeatures);
      }
      // A 429 or 5xx with Retry-After waits that long when it is longer than the backoff (../../kube/api-error.ts).
      const failed = state === 'api-error' || state === 'refused';
      const delay = failed ? Math.max(backoffDelay(apiFailures - 1, this.o.retry.backoffBaseMs, this.o.retry.backoffCapMs), retryAfterMs(lastErr) ?? 0) : pollMs;
      const progress = { node: name, waitedS: Math.round(waited / 1000), timeoutS: Math.round(timeoutMs / 1000) };
      // Each refusal is told (its backoff spaces them): it names the permission and the fix.
      if (state === 'refused') logApiRetry(log, `reading node "${name}"`, lastErr, { attempt: apiFailures, delayMs: delay, ...progress }, this.o.retry.rbacFeatures);
      else if (clock.now() - lastLog >= logEvery) {
        lastLog = clock.now();
        const reason = state === 'missing' ? 'node not registered yet' : state === 'no-podcidr' ? 'podCIDR not assigned yet' : 'API unreachable';
        log.info('waiting for own node', { ...progress, reason, ...(lastErr !== undefined ? { error: describe(lastErr) } : {}) });
      }
      await clock.sleep(Math.max(0, Math.min(delay, timeoutMs - waited)), signal);
    }
  }

  /**
   * The public IPv6 to publish, as the IPv4 one: node-public-ipv6 overrides the backend's (upstream main.go
   * takes it through GetStoredPublicIP), public-ipv6-overwrite both (pkg/subnet/kube/kube.go AcquireLease).
   */
  private publishedPublicIPv6(rec: NodeLease, backendIP: string): string {
    const { keys, log } = this.o;
    let publicIP = formatIp6(parseIp6(backendIP)!);
    for (const [key, value] of [
      [keys.nodePublicIPv6, rec.nodePublicIPv6],
      [keys.publicIPv6Overwrite, rec.publicIPv6Overwrite],
    ] as const) {
      if (value === undefined || value === '') continue;
      if (unusablePublicIPv6(value) !== undefined) {
        log.warn('ignoring invalid public IPv6 annotation', { annotation: key, value: value.slice(0, 64) });
        continue;
      }
      if (value !== publicIP) log.info('overriding public ipv6 from node annotation', { annotation: key, publicIPv6: value, previous: publicIP });
      publicIP = value;
    }
    return publicIP;
  }

  /** The public IP to publish: the node-public-ip annotation overrides the backend's, public-ip-overwrite both. */
  private publishedPublicIP(rec: NodeLease, backendIP: string): string {
    const { keys, log } = this.o;
    let publicIP = backendIP;
    if (rec.nodePublicIP !== undefined && rec.nodePublicIP !== '') {
      if (isIp4(rec.nodePublicIP)) {
        if (rec.nodePublicIP !== publicIP) {
          log.info('public IP overridden by node annotation', {
            annotation: keys.nodePublicIP,
            publicIP: rec.nodePublicIP,
            previous: publicIP,
            ...(this.o.publicIPOverride ? { flag: this.o.publicIPOverride } : {}),
          });
        }
        publicIP = rec.nodePublicIP;
      } else {
        log.warn('ignoring invalid node-public-ip annotation', { annotation: keys.nodePublicIP, value: rec.nodePublicIP.slice(0, 64) });
      }
    }
    if (rec.publicIPOverwrite !== undefined && rec.publicIPOverwrite !== '') {
      if (isIp4(rec.publicIPOverwrite)) {
        if (rec.publicIPOverwrite !== publicIP) {
          log.info('overriding public ip from node annotation', { annotation: keys.publicIPOverwrite, publicIP: rec.publicIPOverwrite });
        }
        return rec.publicIPOverwrite;
      }
      log.warn('ignoring invalid public-ip-overwrite annotation', { annotation: keys.publicIPOverwrite, value: rec.publicIPOverwrite.slice(0, 64) });
    }
    return publicIP;
  }

  /**
   * The own Node's subnets, as the lease takes them: the bounded wait until the Node has its podCIDR(s),
   * checked against net-conf. Nothing is written to the Node.
   */
  async ownSubnets(signal: AbortSignal): Promise<{ name: string; rec: NodeLease & { podCIDR: string }; ipv6Subnet?: string }> {
    this.startedAt ??= this.o.clock.now();
    // The first lease's wait counts from the start of start-up (the public-IP read, the pod lookup): one --node-wait-timeout in all.
    const since = this.acquiredUid === undefined ? this.startedAt : this.o.clock.now();
    const name = await this.resolveNodeName(signal);
    const rec = await this.waitForOwnNode(name, since, signal);
    checkOwnSubnet(name, this.o.network, rec.podCIDR);
    const ipv6Subnet = this.o.ipv6Network !== undefined ? rec.ipv6PodCIDR : undefined;
    if (this.o.ipv6Network !== undefined && ipv6Subnet !== undefined) checkOwnIPv6Subnet(name, this.o.ipv6Network, ipv6Subnet);
    return { name, rec, ...(ipv6Subnet !== undefined ? { ipv6Subnet } : {}) };
  }

  /**
   * The own lease: wait for the Node's podCIDR, then publish the backend's attributes as annotations, or
   * with `hold` keep the ones that change until publishHeld.
   */
  async acquire(attrsFor: LeaseAttrsSource, signal: AbortSignal, hold = false): Promise<Lease> {
    const { keys, log } = this.o;
    const { name, rec, ipv6Subnet } = await this.ownSubnets(signal);
    checkOwnPublicIPs(name, { [keys.nodePublicIP]: rec.nodePublicIP, [keys.publicIPOverwrite]: rec.publicIPOverwrite });
    log.info('own subnet from node podCIDR', { node: name, subnet: rec.podCIDR, ...(ipv6Subnet !== undefined ? { ipv6Subnet } : {}) });
    const attrs = await attrsFor(rec.podCIDR);
    if (signal.aborted) throw signal.reason;
    checkPublishableAttrs(attrs, { node: name });
    const published = this.publishedPublicIP(rec, attrs.publicIP);

    const desired: Record<string, string> = {
      [keys.kubeSubnetManager]: 'true',
      [keys.backendType]: attrs.backendType,
      [keys.backendData]: encodeAttrsData(attrs.backendData),
      [keys.publicIP]: published,
    };
    const current: Record<string, string | undefined> = {
      [keys.kubeSubnetManager]: rec.subnetManager,
      [keys.backendType]: rec.backendType,
      [keys.backendData]: rec.backendData,
      [keys.publicIP]: rec.publicIP,
    };
    // Dual-stack host-gw, as upstream's AcquireLease writes it for a backend with a PublicIPv6:
    // backend-v6-data `null` (host-gw has none) and public-ipv6 (public-ipv6-overwrite when set).
    let publishedV6: string | undefined;
    if (ipv6Subnet !== undefined) {
      publishedV6 = this.publishedPublicIPv6(rec, checkDualStackPublicIPv6(attrs, { node: name }));
      desired[keys.backendV6Data] = 'null';
      desired[keys.publicIPv6] = publishedV6;
      current[keys.backendV6Data] = rec.backendV6Data;
      current[keys.publicIPv6] = rec.publicIPv6;
    }
    if (ipv6Subnet === undefined && this.o.ipv4OnlyPublicIPv6 !== undefined) {
      desired[keys.backendV6Data] = this.ipv4OnlyBackendV6Data(attrs);
      desired[keys.publicIPv6] = this.publishedPublicIPv6(rec, this.o.ipv4OnlyPublicIPv6);
      current[keys.backendV6Data] = rec.backendV6Data;
      current[keys.publicIPv6] = rec.publicIPv6;
    }
    const changed: Record<string, string> = {};
    for (const [k, v] of Object.entries(desired)) if (current[k] !== v) changed[k] = v;
    this.held = undefined;
    if (Object.keys(changed).length === 0) {
      log.info('node annotations already up to date', { node: name });
    } else if (hold) {
      this.held = { name, changed };
      log.info('node annotations held until the Node list is complete', { node: name, keys: Object.keys(changed).join(',') });
    } else {
      await this.publish(name, changed, signal);
    }

    this.acquiredUid = rec.uid;
    this.acquiredCreated = rec.created;
    return {
      key: name,
      subnet: rec.podCIDR,
      publicIP: published,
      backendType: attrs.backendType,
      backendData: attrs.backendData,
      ...(ipv6Subnet !== undefined && publishedV6 !== undefined ? { ipv6Subnet, publicIPv6: publishedV6 } : {}),
    };
  }

  /** `--ipv4-only` in a dual-stack cluster: backend-v6-data as Linux peers decode it (see ipv4OnlyPublicIPv6). */
  private ipv4OnlyBackendV6Data(attrs: LeaseAttrs): string {
    return attrs.backendType === 'vxlan' ? encodeAttrsData(attrs.backendData) : 'null';
  }

  /** Whether acquire holds annotations unpublished. */
  get holding(): boolean {
    return this.held !== undefined;
  }

  /** The annotations acquire held, patched now (nothing when none are held). */
  async publishHeld(signal: AbortSignal): Promise<void> {
    const held = this.held;
    if (!held) return;
    await this.publish(held.name, held.changed, signal);
    this.held = undefined;
  }

  /** Drop what acquire held: the lease is not taken (another Node keeps the podCIDR). */
  dropHeld(): void {
    this.held = undefined;
  }

  private async publish(name: string, changed: Record<string, string>, signal: AbortSignal, startUp = true): Promise<void> {
    await this.patchStatus(`patching annotations of node "${name}"`, name, { metadata: { annotations: changed } }, signal, startUp);
    this.o.log.info('node annotations published', { node: name, keys: Object.keys(changed).join(',') });
  }

  /**
   * The backend-data annotation again, after the backend's attributes changed (a rebuilt vxlan network's DR
   * MAC); while acquire holds the annotations, it replaces the held value instead.
   */
  async republishBackendData(attrs: LeaseAttrs, signal: AbortSignal): Promise<void> {
    checkPublishableAttrs(attrs, {});
    const changed = {
      [this.o.keys.backendData]: encodeAttrsData(attrs.backendData),
      ...(this.o.ipv4OnlyPublicIPv6 !== undefined ? { [this.o.keys.backendV6Data]: this.ipv4OnlyBackendV6Data(attrs) } : {}),
    };
    if (this.held) {
      Object.assign(this.held.changed, changed);
      return;
    }
    await this.publish(await this.resolveNodeName(signal), changed, signal, false);
  }

  /** NetworkUnavailable=False on the own Node, unless --set-node-network-unavailable=false. */
  async markNetworkAvailable(signal: AbortSignal): Promise<void> {
    this.marked = true;
    await this.patchNetworkCondition(signal);
  }

  /**
   * A problem that keeps pods from starting (the agent's CNI config check), or undefined once it is gone:
   * NetworkUnavailable=True with its reason and message while there is one. Before markNetworkAvailable
   * it is only kept, and that call writes it.
   */
  async reportPodNetwork(problem: { reason: string; message: string } | undefined, signal: AbortSignal): Promise<void> {
    if (problem?.reason === this.podProblem?.reason && problem?.message === this.podProblem?.message) return;
    this.podProblem = problem;
    if (this.marked) await this.patchNetworkCondition(signal);
  }

  private marked = false;
  private podProblem: { reason: string; message: string } | undefined;

  private async patchNetworkCondition(signal: AbortSignal): Promise<void> {
    if (!this.o.setNodeNetworkUnavailable) return;
    const name = await this.resolveNodeName(signal);
    const now = rfc3339(this.o.clock.now());
    const problem = this.podProblem;
    const status = problem ? 'True' : 'False';
    const condition = {
      type: 'NetworkUnavailable',
      status,
      lastHeartbeatTime: now,
      lastTransitionTime: now,
      reason: problem ? problem.reason : 'FlannelIsUp',
      message: problem ? problem.message : 'Flannel is running on this node',
    };
    try {
      await this.patchStatus(`setting NetworkUnavailable=${status} on node "${name}"`, name, { status: { conditions: [condition] } }, signal);
    } catch (err) {
      // The own Node was deleted since the lease was taken: the Node watch tells the agent (own-node-watch.ts),
      // which keeps the dataplane, is not ready, and writes the condition on the Node registered again.
      if (!(err instanceof KubeError && err.context.status === 404)) throw err;
      this.o.log.warn('the own Node is not in the API server: NetworkUnavailable is written on it once it is registered again', { node: name });
      return;
    }
    if (problem) this.o.log.warn('node condition NetworkUnavailable set to True: pods cannot start', { node: name, reason: problem.reason, message: problem.message });
    else this.o.log.info('node condition NetworkUnavailable set to False', { node: name });
  }
}

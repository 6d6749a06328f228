// HnsClient: typed HNS operations on any HnsTransport (win32 or simulated, bounded by ./timed.ts in the
// dataplanes), one class: the v1 calls (vmcompute.dll!HNSCall, JSON envelopes: the version, v1 networks
// and endpoints by name or ID, host attach, waiting for a network's ManagementIP; hcsshim internal/hns
// hnsfuncs.go, hnsnetwork.go, hnsendpoint.go, hnsglobals.go) and the v2 calls (HCN; hcsshim hcn
// hcnnetwork.go, hcnendpoint.go, hcnpolicy.go: get-by-name, create/delete, policies, SetPolicy IP sets,
// endpoints and their ACL rules). Every
// operation is counted in /metrics, and its errors keep their codes and gain context. Handles are closed
// after each call, except the network handle policy writes may keep open (`keepOpen`, KeptNetworkHandles
// below) until `releaseNetwork`, an error on it, or the network's deletion: hcsshim's modifyNetwork opens
// and closes a handle per call; keeping one open is our own addition for nodes with many remote subnets.
import { systemClock } from '../basics/clock.js';
import type { Clock } from '../basics/clock.js';
import { FlannelError, HnsError, errorMessage } from '../basics/errors.js';
import type { ErrorContext } from '../basics/errors.js';
import { silentLogger } from '../basics/log.js';
import type { Logger } from '../basics/log.js';
import { METRIC, callFailure } from '../basics/metrics.js';
import type { Metrics } from '../basics/metrics.js';
import { hnsError, isHnsAttached, isHnsExists, isHnsNotFound, isHnsPolicyGone, isHnsRefusal, namingAdapter, parseEnvelope } from './errors.js';
import { featureNeeds, formatHnsVersion, isFeatureSupported, type HnsFeatureName } from './features.js';
import { ACL_POLICY, HCN_SCHEMA_V2, SET_POLICY, policySetting } from './schema.js';
import type {
  AclPolicySetting,
  HcnEndpoint,
  HcnLoadBalancer,
  HcnNetwork,
  HcnPolicy,
  HcnPolicyRequest,
  HcnRequestType,
  HnsEndpointV1,
  HnsNetworkV1,
  HnsVersion,
  SetPolicySetting,
} from './schema.js';
import { ZERO_GUID, hnsCallOp } from './transport.js';
import type { HcnHandle, HnsTransport } from './transport.js';

export interface HnsClientOptions {
  log?: Logger;
  metrics?: Metrics;
  /** Polling (`waitForManagementIP`). Per-call timeouts are the transport's: see ./timed.ts. */
  clock?: Clock;
}

export interface WaitOptions {
  timeoutMs: number;
  intervalMs: number;
  signal?: AbortSignal;
}

/** The host-attach request body (hcsshim HostAttach). */
const HOST_ATTACH_REQUEST = { SystemType: 'Host', CompartmentId: 1 } as const;

/** HcnClose* of the handle's kind. */
const CLOSE = {
  network: { op: 'HcnCloseNetwork', id: 'networkId', close: (t: HnsTransport, h: HcnHandle) => t.closeNetwork(h) },
  endpoint: { op: 'HcnCloseEndpoint', id: 'endpointId', close: (t: HnsTransport, h: HcnHandle) => t.closeEndpoint(h) },
  loadBalancer: { op: 'HcnCloseLoadBalancer', id: 'loadBalancerId', close: (t: HnsTransport, h: HcnHandle) => t.closeLoadBalancer(h) },
} as const;

/** HcnCloseNetwork / HcnCloseEndpoint / HcnCloseLoadBalancer; a failure is logged (the handle leaks), never thrown. False when it failed. */
export async function closeQuietly(transport: HnsTransport, log: Logger, h: HcnHandle): Promise<boolean> {
  const c = CLOSE[h.kind];
  try {
    await c.close(transport, h);
    return true;
  } catch (err) {
    log.warn(`${c.op} failed; the handle leaks`, { [c.id]: h.id, error: errorMessage(err) });
    return false;
  }
}

/** Network handles kept open for policy writes, by network ID (case-insensitive, as HNS GUIDs are). */
class KeptNetworkHandles {
  private readonly kept = new Map<string, Promise<HcnHandle>>();
  /** The handles of `kept` that have opened. */
  private readonly open = new Map<string, HcnHandle>();

  constructor(
    private readonly transport: HnsTransport,
    private readonly log: Logger,
  ) {}

  /**
   * HcnModifyNetwork on network `id`. `keepOpen`: through the handle kept for it (opened on first
   * use), else open, modify, close. A kept handle is dropped after any error that may mean it is stale.
   */
  async modify(id: string, settings: string, keepOpen: boolean): Promise<void> {
    if (!keepOpen) {
      const h = await this.transport.openNetwork(id);
      try {
        await this.transport.modifyNetwork(h, settings);
      } finally {
        await closeQuietly(this.transport, this.log, h);
      }
      return;
    }
    const key = id.toUpperCase();
    // The handle once open, without awaiting its settled promise again: one async hop fewer per write.
    let h = this.open.get(key);
    if (h === undefined) {
      let opening = this.kept.get(key);
      if (!opening) {
        opening = this.transport.openNetwork(id);
        this.kept.set(key, opening);
      }
      try {
        h = await opening;
      } catch (err) {
        if (this.kept.get(key) === opening) this.kept.delete(key);
        throw err;
      }
      if (this.kept.get(key) === opening) this.open.set(key, h);
    }
    try {
      await this.transport.modifyNetwork(h, settings);
    } catch (err) {
      // Unless HNS only refused what the request carried, the handle may be stale (HNS restarted, the
      // network deleted): the next write opens a new one.
      if (!isHnsRefusal(err) && !isHnsExists(err)) await this.release(id);
      throw err;
    }
  }

  /** Close the handle kept open for network `id`, if any. */
  async release(id: string): Promise<void> {
    const key = id.toUpperCase();
    const opening = this.kept.get(key);
    if (!opening) return;
    this.kept.delete(key);
    this.open.delete(key);
    let h: HcnHandle;
    try {
      h = await opening;
    } catch {
      return;
    }
    await closeQuietly(this.transport, this.log, h);
  }
}

export interface PolicyOptions {
  /** Add of one policy: one that already exists counts as added. */
  ignoreExisting?: boolean;
  /**
   * Keep the network handle open for the next policy write (one HcnModifyNetwork per write instead of
   * open, modify, close). It is closed by `releaseNetwork`, after any error on it, and by `deleteNetwork`.
   */
  keepOpen?: boolean;
}

/** The Settings of the policies of one type. */
function settingsOf<T>(policies: readonly HcnPolicy[] | undefined, type: string): T[] {
  return (policies ?? []).filter((p) => p.Type === type).map((p) => p.Settings as T);
}

/** `HcnQuery*` / `HcnEnumerate*` query JSON, with an optional field-equality filter. */
export function hcnQuery(filter?: Record<string, unknown>): string {
  return JSON.stringify({
    SchemaVersion: HCN_SCHEMA_V2,
    Flags: 0,
    ...(filter && Object.keys(filter).length ? { Filter: JSON.stringify(filter) } : {}),
  });
}

export class HnsClient {
  private readonly log: Logger;
  private readonly metrics: Metrics | undefined;
  private readonly clock: Clock;
  private cachedVersion: Promise<HnsVersion> | undefined;

  private readonly kept: KeptNetworkHandles;

  constructor(
    private readonly transport: HnsTransport,
    opts: HnsClientOptions = {},
  ) {
    this.log = opts.log ?? silentLogger();
    this.metrics = opts.metrics;
    this.clock = opts.clock ?? systemClock;
    this.kept = new KeptNetworkHandles(transport, this.log);
  }

  /**
   * Count the operation, add `context` to any FlannelError it throws, count the failure. `done`: a failure
   * that answers the call as asked (a policy already there, or already gone), which settles it without a value.
   */
  private async run<T>(op: string, context: ErrorContext, fn: () => Promise<T>, done?: (err: unknown) => boolean): Promise<T> {
    // metered() inline: one async layer fewer per HNS write (docs/performance.md, "CPU per node event at 5,000 Nodes").
    this.metrics?.inc(METRIC.dataplaneCalls, { op: `hns.${op}` });
    try {
      return await fn();
    } catch (err) {
      // Only the policy writes, which answer nothing, pass `done` (one async layer fewer per write than a wrapper).
      if (done?.(err)) return undefined as T;
      this.metrics?.inc(METRIC.dataplaneErrors, { op: `hns.${op}` });
      if (err instanceof FlannelError) {
        for (const [k, v] of Object.entries(context)) if (v !== undefined && err.context[k] === undefined) err.context[k] = v;
      }
      this.log.debug('HNS operation failed', { op, ...context, code: err instanceof FlannelError ? err.code : undefined, error: errorMessage(err) });
      throw err;
    }
  }

  /** JSON an Hcn* call returned; invalid JSON is FLANNEL_ERR_HNS_CALL. */
  private parse<T>(op: string, json: string): T {
    try {
      return JSON.parse(json) as T;
    } catch {
      throw hnsError(op, undefined, `HNS returned invalid JSON: ${json.slice(0, 200)}`);
    }
  }

  /**
   * One HNSCall; unwraps the envelope (Success:false -> HnsError). The transport's seam timed the call; a
   * failure HNS answers inside the envelope is counted here, by the ErrorCode it carries.
   */
  private async v1<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown, context: ErrorContext = {}): Promise<T> {
    const response = await this.transport.hnsCall(method, path, body === undefined ? '' : JSON.stringify(body));
    try {
      return parseEnvelope<T>(`HNSCall ${method} ${path}`, response, context);
    } catch (err) {
      this.metrics?.countCallError(hnsCallOp(method, path), callFailure(err));
      throw err;
    }
  }

  // ================================================================ version

  /** HNS version (v1 `GET /globals/version`), read once. */
  version(): Promise<HnsVersion> {
    this.cachedVersion ??= this.run('version', {}, () => this.v1<HnsVersion>('GET', '/globals/version')).catch((err: unknown) => {
      this.cachedVersion = undefined;
      throw err;
    });
    return this.cachedVersion;
  }

  /**
   * The HNS version, when it has `feature` (./features.ts); else FLANNEL_ERR_HNS_VERSION naming the version
   * it needs, as hcsshim hcn/hcn.go's RemoteSubnetSupported, VxlanPortSupported, ... refuse ("Platform does
   * not support feature"). `what` needs it; `fix` is what to do on this host instead.
   */
  async requireFeature(feature: HnsFeatureName, what: string, fix: string): Promise<HnsVersion> {
    const v = await this.version();
    if (isFeatureSupported(v, feature)) return v;
    const needs = featureNeeds(feature);
    throw new HnsError('FLANNEL_ERR_HNS_VERSION', `${what} needs HNS ${needs} or newer (its ${feature} feature); this node's HNS is ${formatHnsVersion(v)}: ${fix}`, {
      feature,
      needs,
      major: v.Major,
      minor: v.Minor,
    });
  }

  // ================================================================ v1 networks

  listNetworksV1(): Promise<HnsNetworkV1[]> {
    return this.run('listNetworksV1', {}, async () => (await this.v1<HnsNetworkV1[] | null>('GET', '/networks/')) ?? []);
  }

  /** hcsshim GetHNSNetworkByName: list all, compare Name exactly. */
  async getNetworkByNameV1(name: string): Promise<HnsNetworkV1 | undefined> {
    return this.run('getNetworkByNameV1', { network: name }, async () => {
      const all = (await this.v1<HnsNetworkV1[] | null>('GET', '/networks/')) ?? [];
      return all.find((n) => n.Name === name);
    });
  }

  /** `GET /networks/<id>`; undefined when HNS does not know it. */
  getNetworkV1(id: string): Promise<HnsNetworkV1 | undefined> {
    return this.run('getNetworkV1', { networkId: id }, async () => {
      try {
        return await this.v1<HnsNetworkV1>('GET', `/networks/${id}`, undefined, { networkId: id });
      } catch (err) {
        if (isHnsNotFound(err)) return undefined;
        throw err;
      }
    });
  }

  createNetworkV1(net: HnsNetworkV1): Promise<HnsNetworkV1> {
    const ctx = { network: net.Name, adapter: net.NetworkAdapterName };
    return this.run('createNetworkV1', ctx, () => this.v1<HnsNetworkV1>('POST', '/networks/', net, ctx));
  }

  /** `DELETE /networks/<id>`; a network that is already gone counts as deleted. */
  deleteNetworkV1(id: string): Promise<void> {
    return this.run('deleteNetworkV1', { networkId: id }, async () => {
      try {
        await this.v1<unknown>('DELETE', `/networks/${id}`, undefined, { networkId: id });
      } catch (err) {
        if (!isHnsNotFound(err)) throw err;
      }
    });
  }

  /** Poll `GET /networks/<id>` until HNS fills in ManagementIP (the host vNIC is up). */
  async waitForManagementIP(id: string, opts: WaitOptions): Promise<HnsNetworkV1> {
    const start = this.clock.now();
    for (;;) {
      const net = await this.run('getNetworkV1', { networkId: id }, () => this.v1<HnsNetworkV1>('GET', `/networks/${id}`, undefined, { networkId: id }));
      if (net?.ManagementIP) return net;
      if (this.clock.now() - start >= opts.timeoutMs) {
        throw new HnsError(
          'FLANNEL_ERR_HNS_CALL',
          `HNS network ${net?.Name ?? id} has no ManagementIP after ${opts.timeoutMs} ms: the host vNIC did not come up; check the adapter and the Microsoft-Windows-Host-Network-Service-Admin event log`,
          { networkId: id, network: net?.Name, timeoutMs: opts.timeoutMs },
        );
      }
      await this.clock.sleep(opts.intervalMs, opts.signal);
    }
  }

  // ================================================================ v1 endpoints

  listEndpointsV1(): Promise<HnsEndpointV1[]> {
    return this.run('listEndpointsV1', {}, async () => (await this.v1<HnsEndpointV1[] | null>('GET', '/endpoints/')) ?? []);
  }

  getEndpointByNameV1(name: string): Promise<HnsEndpointV1 | undefined> {
    return this.run('getEndpointByNameV1', { endpoint: name }, async () => {
      const all = (await this.v1<HnsEndpointV1[] | null>('GET', '/endpoints/')) ?? [];
      return all.find((e) => e.Name === name);
    });
  }

  createEndpointV1(ep: HnsEndpointV1): Promise<HnsEndpointV1> {
    const ctx = { endpoint: ep.Name, networkId: ep.VirtualNetwork };
    return this.run('createEndpointV1', ctx, () => this.v1<HnsEndpointV1>('POST', '/endpoints/', ep, ctx));
  }

  /** `DELETE /endpoints/<id>`; an endpoint that is already gone counts as deleted. */
  deleteEndpointV1(id: string): Promise<void> {
    return this.run('deleteEndpointV1', { endpointId: id }, async () => {
      try {
        await this.v1<unknown>('DELETE', `/endpoints/${id}`, undefined, { endpointId: id });
      } catch (err) {
        if (!isHnsNotFound(err)) throw err;
      }
    });
  }

  /** `POST /endpoints/<id>/attach` to the host compartment; already attached counts as attached. */
  attachEndpointToHost(id: string): Promise<void> {
    return this.run('attachEndpointToHost', { endpointId: id }, async () => {
      try {
        await this.v1<unknown>('POST', `/endpoints/${id}/attach`, HOST_ATTACH_REQUEST, { endpointId: id });
      } catch (err) {
        if (!isHnsAttached(err)) throw err;
      }
    });
  }

  // ================================================================ v2 networks

  /** Open, query, close; undefined when the network is gone. */
  private async queryNetwork(id: string): Promise<HcnNetwork | undefined> {
    let h: HcnHandle;
    try {
      h = await this.transport.openNetwork(id);
    } catch (err) {
      if (isHnsNotFound(err)) return undefined;
      throw err;
    }
    try {
      return this.parse<HcnNetwork>('HcnQueryNetworkProperties', await this.transport.queryNetworkProperties(h, hcnQuery()));
    } catch (err) {
      if (isHnsNotFound(err)) return undefined;
      throw err;
    } finally {
      await closeQuietly(this.transport, this.log, h);
    }
  }

  /** hcsshim GetNetworkByName: enumerate with a Name filter, then open/query/close. */
  getNetworkByName(name: string): Promise<HcnNetwork | undefined> {
    return this.run('getNetworkByName', { network: name }, async () => {
      const ids = this.parse<string[] | null>('HcnEnumerateNetworks', await this.transport.enumerateNetworks(hcnQuery({ Name: name }))) ?? [];
      for (const id of ids) {
        const net = await this.queryNetwork(id);
        if (net && net.Name === name) return net;
      }
      return undefined;
    });
  }

  /**
   * Whether the network with that ID exists: HcnOpenNetwork and HcnCloseNetwork, the first step of hcsshim's
   * hcn network queries (hcn/hcnnetwork.go getNetwork: HCN_E_NETWORK_NOT_FOUND when it is gone), without
   * reading its properties: a vxlan network of a 50,000-Node cluster holds 50,000 policies.
   */
  hasNetwork(id: string): Promise<boolean> {
    return this.run('hasNetwork', { networkId: id }, async () => {
      let h: HcnHandle;
      try {
        h = await this.transport.openNetwork(id);
      } catch (err) {
        if (isHnsNotFound(err)) return false;
        throw err;
      }
      await closeQuietly(this.transport, this.log, h);
      return true;
    });
  }

  /** The network with that ID, or undefined. */
  getNetwork(id: string): Promise<HcnNetwork | undefined> {
    return this.run('getNetwork', { networkId: id }, () => this.queryNetwork(id));
  }

  /** All networks (enumerate, then open/query/close each). */
  listNetworks(): Promise<HcnNetwork[]> {
    return this.run('listNetworks', {}, async () => {
      const ids = this.parse<string[] | null>('HcnEnumerateNetworks', await this.transport.enumerateNetworks(hcnQuery())) ?? [];
      const out: HcnNetwork[] = [];
      for (const id of ids) {
        const net = await this.queryNetwork(id);
        if (net) out.push(net);
      }
      return out;
    });
  }

  /** HcnCreateNetwork with the zero GUID (HNS picks the ID); returns the network as HNS stored it. */
  createNetwork(net: HcnNetwork): Promise<HcnNetwork> {
    return this.run('createNetwork', { network: net.Name }, async () => {
      const body: HcnNetwork = { ...net, SchemaVersion: net.SchemaVersion ?? HCN_SCHEMA_V2 };
      let h: HcnHandle;
      try {
        h = await this.transport.createNetwork(ZERO_GUID, JSON.stringify(body));
      } catch (err) {
        throw namingAdapter(err, policySetting(net.Policies, 'NetAdapterName', 'NetworkAdapterName'));
      }
      try {
        return this.parse<HcnNetwork>('HcnQueryNetworkProperties', await this.transport.queryNetworkProperties(h, hcnQuery()));
      } finally {
        await closeQuietly(this.transport, this.log, h);
      }
    });
  }

  /** HcnDeleteNetwork; a network that is already gone counts as deleted. */
  deleteNetwork(id: string): Promise<void> {
    return this.run('deleteNetwork', { networkId: id }, async () => {
      await this.releaseNetwork(id);
      try {
        await this.transport.deleteNetwork(id);
      } catch (err) {
        if (!isHnsNotFound(err)) throw err;
      }
    });
  }

  private modifyPolicies(id: string, requestType: HcnRequestType, policies: readonly HcnPolicy<object>[], keepOpen = false): Promise<void> {
    const request: HcnPolicyRequest = { ResourceType: 'Policy', RequestType: requestType, Settings: { Policies: policies as HcnPolicy[] } };
    return this.kept.modify(id, JSON.stringify(request), keepOpen);
  }

  /** Close the handle kept open for policy writes on network `id`, if any. */
  releaseNetwork(id: string): Promise<void> {
    return this.kept.release(id);
  }

  /**
   * One HcnModifyNetwork adding all `policies`. 0x803B0012 (EXISTS) is thrown unless `ignoreExisting` and
   * the call carried one policy: HNS applies a batch as one request (hcsshim hcn/hcnnetwork.go
   * modifyNetwork), so an EXISTS for a batch says nothing about the others. This client makes exactly
   * the call asked of it; splitting a batch is its caller's (src/reconcile/writes.ts).
   */
  addNetworkPolicies(networkId: string, policies: readonly HcnPolicy<object>[], opts: PolicyOptions = {}): Promise<void> {
    if (policies.length === 0) return Promise.resolve();
    return this.run(
      'addNetworkPolicies',
      { networkId, policies: policies.length },
      () => this.modifyPolicies(networkId, 'Add', policies, opts.keepOpen),
      (err) => opts.ignoreExisting === true && policies.length === 1 && isHnsExists(err),
    );
  }

  /**
   * One HcnModifyNetwork removing all `policies`. A single policy already gone counts as removed; for a
   * batch that answer is thrown (the batch is atomic: the others are still there) and its caller splits
   * it (src/reconcile/writes.ts), so the calls counted are the calls made. A missing network is an error
   * (HCN_E_NETWORK_NOT_FOUND): the caller must learn that its network is gone.
   */
  removeNetworkPolicies(networkId: string, policies: readonly HcnPolicy<object>[], opts: Pick<PolicyOptions, 'keepOpen'> = {}): Promise<void> {
    if (policies.length === 0) return Promise.resolve();
    return this.run(
      'removeNetworkPolicies',
      { networkId, policies: policies.length },
      () => this.modifyPolicies(networkId, 'Remove', policies, opts.keepOpen),
      (err) => policies.length === 1 && isHnsPolicyGone(err),
    );
  }

  // ================================================================ v2 IP sets (SetPolicy network policies)

  /** The network's SetPolicy IP sets (open, query, close); undefined when the network is gone. */
  getSetPolicies(networkId: string): Promise<SetPolicySetting[] | undefined> {
    return this.run('getSetPolicies', { networkId }, async () => {
      const net = await this.queryNetwork(networkId);
      return net && settingsOf<SetPolicySetting>(net.Policies, SET_POLICY);
    });
  }

  /**
   * One HcnModifyNetwork per call on the network's SetPolicy IP sets (HNS >= 13.0, NESTEDIPSET >= 15.0:
   * ./features.ts): Add new sets; Update replaces the Values of sets that exist (Azure NPM
   * npm/pkg/dataplane/ipsets/ipsetmanager_windows.go applyIPSets updates an existing set so); Remove
   * deletes sets by Id. HNS refuses to remove a set an ACL rule or a NESTEDIPSET still names: remove
   * those first (NPM dataplane_windows.go: "clean-up ACLs before ipsets"). Errors are thrown as they come.
   */
  addSetPolicies(networkId: string, sets: readonly SetPolicySetting[], opts: Pick<PolicyOptions, 'keepOpen'> = {}): Promise<void> {
    return this.modifySets('addSetPolicies', networkId, 'Add', sets, opts.keepOpen);
  }

  updateSetPolicies(networkId: string, sets: readonly SetPolicySetting[], opts: Pick<PolicyOptions, 'keepOpen'> = {}): Promise<void> {
    return this.modifySets('updateSetPolicies', networkId, 'Update', sets, opts.keepOpen);
  }

  removeSetPolicies(networkId: string, sets: readonly SetPolicySetting[], opts: Pick<PolicyOptions, 'keepOpen'> = {}): Promise<void> {
    return this.modifySets('removeSetPolicies', networkId, 'Remove', sets, opts.keepOpen);
  }

  private modifySets(op: string, networkId: string, requestType: HcnRequestType, sets: readonly SetPolicySetting[], keepOpen = false): Promise<void> {
    if (sets.length === 0) return Promise.resolve();
    const policies = sets.map((s) => ({ Type: SET_POLICY, Settings: s }));
    return this.run(op, { networkId, policies: sets.length }, () => this.modifyPolicies(networkId, requestType, policies, keepOpen));
  }

  // ================================================================ v2 endpoint ACLs

  /** The ACL rules an endpoint holds (open, query, close); undefined when the endpoint is gone. */
  getEndpointAcls(endpointId: string): Promise<AclPolicySetting[] | undefined> {
    return this.run('getEndpointAcls', { endpointId }, async () => {
      const ep = await this.queryEndpoint(endpointId);
      return ep && settingsOf<AclPolicySetting>(ep.Policies, ACL_POLICY);
    });
  }

  /**
   * One HcnModifyEndpoint adding `acls` to the endpoint (RequestType Add, hcsshim hcn/hcnendpoint.go
   * ApplyPolicy). Errors are thrown as they come (no retry, no split).
   */
  addEndpointAcls(endpointId: string, acls: readonly AclPolicySetting[]): Promise<void> {
    return this.modifyAcls('addEndpointAcls', endpointId, 'Add', acls);
  }

  /** One HcnModifyEndpoint removing `acls` (RequestType Remove): each rule as it was added or read, Id included. */
  removeEndpointAcls(endpointId: string, acls: readonly AclPolicySetting[]): Promise<void> {
    return this.modifyAcls('removeEndpointAcls', endpointId, 'Remove', acls);
  }

  private modifyAcls(op: string, endpointId: string, requestType: HcnRequestType, acls: readonly AclPolicySetting[]): Promise<void> {
    if (acls.length === 0) return Promise.resolve();
    return this.run(op, { endpointId, policies: acls.length }, async () => {
      const request: HcnPolicyRequest = { ResourceType: 'Policy', RequestType: requestType, Settings: { Policies: acls.map((a) => ({ Type: ACL_POLICY, Settings: { ...a } })) } };
      const h = await this.transport.openEndpoint(endpointId);
      try {
        await this.transport.modifyEndpoint(h, JSON.stringify(request));
      } finally {
        await closeQuietly(this.transport, this.log, h);
      }
    });
  }

  // ================================================================ v2 endpoints

  private async queryEndpoint(id: string): Promise<HcnEndpoint | undefined> {
    let h: HcnHandle;
    try {
      h = await this.transport.openEndpoint(id);
    } catch (err) {
      if (isHnsNotFound(err)) return undefined;
      throw err;
    }
    try {
      return this.parse<HcnEndpoint>('HcnQueryEndpointProperties', await this.transport.queryEndpointProperties(h, hcnQuery()));
    } catch (err) {
      if (isHnsNotFound(err)) return undefined;
      throw err;
    } finally {
      await closeQuietly(this.transport, this.log, h);
    }
  }

  /** Endpoints (of one network, by the `VirtualNetwork` filter hcsshim uses). */
  listEndpoints(networkId?: string): Promise<HcnEndpoint[]> {
    return this.run('listEndpoints', { networkId }, async () => {
      const query = hcnQuery(networkId ? { VirtualNetwork: networkId } : undefined);
      const ids = this.parse<string[] | null>('HcnEnumerateEndpoints', await this.transport.enumerateEndpoints(query)) ?? [];
      const out: HcnEndpoint[] = [];
      for (const id of ids) {
        const ep = await this.queryEndpoint(id);
        if (ep) out.push(ep);
      }
      return out;
    });
  }

  getEndpoint(id: string): Promise<HcnEndpoint | undefined> {
    return this.run('getEndpoint', { endpointId: id }, () => this.queryEndpoint(id));
  }

  /** HcnCreateEndpoint on a network (zero GUID); returns the endpoint as HNS stored it. */
  createEndpoint(networkId: string, ep: HcnEndpoint): Promise<HcnEndpoint> {
    return this.run('createEndpoint', { networkId, endpoint: ep.Name }, async () => {
      const nh = await this.transport.openNetwork(networkId);
      try {
        const body: HcnEndpoint = { ...ep, SchemaVersion: ep.SchemaVersion ?? HCN_SCHEMA_V2 };
        const eh = await this.transport.createEndpoint(nh, ZERO_GUID, JSON.stringify(body));
        try {
          return this.parse<HcnEndpoint>('HcnQueryEndpointProperties', await this.transport.queryEndpointProperties(eh, hcnQuery()));
        } finally {
          await closeQuietly(this.transport, this.log, eh);
        }
      } finally {
        await closeQuietly(this.transport, this.log, nh);
      }
    });
  }

  // ================================================================ v2 load balancers (kube-proxy's; read only)

  /** The IDs of the node's load balancers (HcnEnumerateLoadBalancers, as hcsshim ListLoadBalancers asks). */
  listLoadBalancerIds(): Promise<string[]> {
    return this.run('listLoadBalancerIds', {}, async () => {
      const ids = this.parse<string[] | null>('HcnEnumerateLoadBalancers', await this.transport.enumerateLoadBalancers(hcnQuery())) ?? [];
      return ids.filter((id): id is string => typeof id === 'string');
    });
  }

  /** The node's load balancers, each queried (one gone between the enumerate and the open is left out). */
  listLoadBalancers(): Promise<HcnLoadBalancer[]> {
    return this.run('listLoadBalancers', {}, async () => {
      const out: HcnLoadBalancer[] = [];
      for (const id of await this.listLoadBalancerIds()) {
        let h: HcnHandle;
        try {
          h = await this.transport.openLoadBalancer(id);
        } catch (err) {
          if (isHnsNotFound(err)) continue;
          throw err;
        }
        try {
          out.push(this.parse<HcnLoadBalancer>('HcnQueryLoadBalancerProperties', await this.transport.queryLoadBalancerProperties(h, hcnQuery())));
        } finally {
          await closeQuietly(this.transport, this.log, h);
        }
      }
      return out;
    });
  }

  /** HcnDeleteEndpoint; an endpoint that is already gone counts as deleted. */
  deleteEndpoint(id: string): Promise<void> {
    return this.run('deleteEndpoint', { endpointId: id }, async () => {
      try {
        await this.transport.deleteEndpoint(id);
      } catch (err) {
        if (!isHnsNotFound(err)) throw err;
      }
    });
  }
}

// The HNS v1 half of HnsClient (vmcompute.dll!HNSCall, JSON envelopes): the version, v1 networks and
// endpoints by name or ID, host attach, and waiting for a network's ManagementIP. Mirrors hcsshim
// internal/hns (hnsfuncs.go, hnsnetwork.go, hnsendpoint.go, hnsglobals.go). Also the ground both
// halves stand on: every operation is counted in /metrics, and its errors keep their codes and gain
// context. ./client.ts adds the v2 (HCN) calls.
import { FlannelError, HnsError, errorMessage } from '../errors.js';
import type { ErrorContext } from '../errors.js';
import { metered } from '../metrics.js';
import type { Metrics } from '../metrics.js';
import { silentLogger } from '../log.js';
import type { Logger } from '../log.js';
import { systemClock } from '../clock.js';
import type { Clock } from '../clock.js';
import { hnsError, isHnsAttached, isHnsNotFound, parseEnvelope } from './errors.js';
import type { HnsEndpointV1, HnsNetworkV1, HnsVersion } from './schema.js';
import type { HnsTransport } from './transport.js';

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

/** HNS 9.2 (Windows Server 2019) brought HCN v2 and the RemoteSubnet policies. */
export const REMOTE_SUBNET_MIN_VERSION: HnsVersion = { Major: 9, Minor: 2 };

/** The host-attach request body (hcsshim HostAttach). */
export const HOST_ATTACH_REQUEST = { SystemType: 'Host', CompartmentId: 1 } as const;

export function versionAtLeast(v: HnsVersion, min: HnsVersion): boolean {
  return v.Major > min.Major || (v.Major === min.Major && v.Minor >= min.Minor);
}

export class HnsV1Client {
  protected readonly log: Logger;
  private readonly metrics: Metrics | undefined;
  private readonly clock: Clock;
  private cachedVersion: Promise<HnsVersion> | undefined;

  constructor(
    protected readonly transport: HnsTransport,
    opts: HnsClientOptions = {},
  ) {
    this.log = opts.log ?? silentLogger();
    this.metrics = opts.metrics;
    this.clock = opts.clock ?? systemClock;
  }

  /** Count the operation, add `context` to any FlannelError it throws, count the failure. */
  protected async run<T>(op: string, context: ErrorContext, fn: () => Promise<T>): Promise<T> {
    try {
      return await metered(this.metrics, `hns.${op}`, fn);
    } catch (err) {
      if (err instanceof FlannelError) {
        for (const [k, v] of Object.entries(context)) if (v !== undefined && err.context[k] === undefined) err.context[k] = v;
      }
      this.log.debug('HNS operation failed', { op, ...context, code: err instanceof FlannelError ? err.code : undefined, error: errorMessage(err) });
      throw err;
    }
  }

  /** JSON an Hcn* call returned; invalid JSON is FLANNEL_ERR_HNS_CALL. */
  protected parse<T>(op: string, json: string): T {
    try {
      return JSON.parse(json) as T;
    } catch {
      throw hnsError(op, undefined, `HNS returned invalid JSON: ${json.slice(0, 200)}`);
    }
  }

  /** One HNSCall; unwraps the envelope (Success:false -> HnsError). */
  private async v1<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown, context: ErrorContext = {}): Promise<T> {
    const response = await this.transport.hnsCall(method, path, body === undefined ? '' : JSON.stringify(body));
    return parseEnvelope<T>(`HNSCall ${method} ${path}`, response, context);
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

  /** HCN v2 and RemoteSubnetRoute policies need HNS >= 9.2. */
  async supportsRemoteSubnet(): Promise<boolean> {
    return versionAtLeast(await this.version(), REMOTE_SUBNET_MIN_VERSION);
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
}

// HnsClient: typed HNS operations on any HnsTransport (win32 or simulated, bounded by ./timed.ts in
// the dataplanes). This file holds the v2 (HCN) calls and mirrors hcsshim hcn (hcnnetwork.go,
// hcnendpoint.go, hcnpolicy.go: get-by-name, create/delete, policies, endpoints); the v1 calls, the
// version and the metering it inherits are in ./client-v1.ts. Handles are closed after each call,
// except the network handle policy writes may keep open (`keepOpen`, ./handles.ts) until
// `releaseNetwork`, an error on it, or the network's deletion.
import { isHnsExists, isHnsNetworkNotFound, isHnsNotFound, namingAdapter } from './errors.js';
import { HnsV1Client } from './client-v1.js';
import type { HnsClientOptions } from './client-v1.js';
import { closeQuietly, KeptNetworkHandles } from './handles.js';
import { HCN_SCHEMA_V2, policySetting } from './schema.js';
import type { HcnEndpoint, HcnNetwork, HcnPolicy, HcnPolicyRequest } from './schema.js';
import { ZERO_GUID } from './transport.js';
import type { HcnHandle, HnsTransport } from './transport.js';

export interface PolicyOptions {
  /** Add: policies that already exist count as added (falls back to one call per policy). */
  ignoreExisting?: boolean;
  /**
   * Keep the network handle open for the next policy write (one HcnModifyNetwork per write instead of
   * open, modify, close). It is closed by `releaseNetwork`, after any error on it, and by `deleteNetwork`.
   */
  keepOpen?: boolean;
}

/** `HcnQuery*` / `HcnEnumerate*` query JSON, with an optional field-equality filter. */
export function hcnQuery(filter?: Record<string, unknown>): string {
  return JSON.stringify({
    SchemaVersion: HCN_SCHEMA_V2,
    Flags: 0,
    ...(filter && Object.keys(filter).length ? { Filter: JSON.stringify(filter) } : {}),
  });
}

export class HnsClient extends HnsV1Client {
  private readonly kept: KeptNetworkHandles;

  constructor(transport: HnsTransport, opts: HnsClientOptions = {}) {
    super(transport, opts);
    this.kept = new KeptNetworkHandles(transport, this.log);
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

  private modifyPolicies(id: string, requestType: 'Add' | 'Remove', policies: readonly HcnPolicy<object>[], keepOpen = false): Promise<void> {
    const request: HcnPolicyRequest = { ResourceType: 'Policy', RequestType: requestType, Settings: { Policies: policies as HcnPolicy[] } };
    return this.kept.modify(id, JSON.stringify(request), keepOpen);
  }

  /** Close the handle kept open for policy writes on network `id`, if any. */
  releaseNetwork(id: string): Promise<void> {
    return this.kept.release(id);
  }

  /** One HcnModifyNetwork adding all `policies`. 0x803B0012 (EXISTS) is thrown unless `ignoreExisting`. */
  addNetworkPolicies(networkId: string, policies: readonly HcnPolicy<object>[], opts: PolicyOptions = {}): Promise<void> {
    if (policies.length === 0) return Promise.resolve();
    return this.run('addNetworkPolicies', { networkId, policies: policies.length }, async () => {
      try {
        await this.modifyPolicies(networkId, 'Add', policies, opts.keepOpen);
      } catch (err) {
        if (!opts.ignoreExisting || !isHnsExists(err)) throw err;
        // The batch is atomic: add the others one by one, skipping those already there.
        if (policies.length > 1) {
          for (const p of policies) {
            try {
              await this.modifyPolicies(networkId, 'Add', [p], opts.keepOpen);
            } catch (e) {
              if (!isHnsExists(e)) throw e;
            }
          }
        }
      }
    });
  }

  /**
   * One HcnModifyNetwork removing all `policies`; policies already gone count as removed. A missing
   * network is an error (HCN_E_NETWORK_NOT_FOUND): the caller must learn that its network is gone.
   */
  removeNetworkPolicies(networkId: string, policies: readonly HcnPolicy<object>[], opts: Pick<PolicyOptions, 'keepOpen'> = {}): Promise<void> {
    if (policies.length === 0) return Promise.resolve();
    const policyGone = (err: unknown) => isHnsNotFound(err) && !isHnsNetworkNotFound(err);
    return this.run('removeNetworkPolicies', { networkId, policies: policies.length }, async () => {
      try {
        await this.modifyPolicies(networkId, 'Remove', policies, opts.keepOpen);
      } catch (err) {
        if (!policyGone(err)) throw err;
        // The batch is atomic: one missing policy rejects all, so remove the rest one by one.
        if (policies.length > 1) {
          for (const p of policies) {
            try {
              await this.modifyPolicies(networkId, 'Remove', [p], opts.keepOpen);
            } catch (e) {
              if (!policyGone(e)) throw e;
            }
          }
        }
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

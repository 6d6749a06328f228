// The vxlan reconcile driver: RemoteSubnetRoute network policies on the Overlay network, one per peer,
// written in bounded batches through HcnModifyNetwork. Policy shape: flannel vxlan_network_windows.go.
import type { ReconcileDriver } from '../reconcile.js';
import { chunk } from '../../concurrency.js';
import type { HnsClient } from '../../hns/client.js';
import type { HcnPolicy, RemoteSubnetRoutePolicySettings } from '../../hns/schema.js';
import type { Lease, VxlanBackendData } from '../../subnet/lease.js';

export const REMOTE_SUBNET_ROUTE = 'RemoteSubnetRoute';
/** Policies per HcnModifyNetwork request (bounded so one bad policy cannot sink thousands). */
export const POLICY_BATCH = 64;

export type RemoteSubnetRoutePolicy = HcnPolicy<RemoteSubnetRoutePolicySettings>;

export function remoteSubnetRouteFor(peer: Lease): RemoteSubnetRoutePolicy {
  const data = peer.backendData as VxlanBackendData;
  return {
    Type: REMOTE_SUBNET_ROUTE,
    Settings: {
      DestinationPrefix: peer.subnet,
      IsolationId: data.VNI,
      ProviderAddress: peer.publicIP,
      DistributedRouterMacAddress: data.VtepMAC,
    },
  };
}

const normMac = (m: unknown) => String(m ?? '').replace(/-/g, ':').toLowerCase();

export function sameRemoteSubnetRoute(a: RemoteSubnetRoutePolicySettings, d: RemoteSubnetRoutePolicySettings): boolean {
  return (
    a.DestinationPrefix === d.DestinationPrefix &&
    Number(a.IsolationId) === d.IsolationId &&
    a.ProviderAddress === d.ProviderAddress &&
    normMac(a.DistributedRouterMacAddress) === normMac(d.DistributedRouterMacAddress)
  );
}

export function remoteSubnetRouteDriver(hns: HnsClient, networkId: string): ReconcileDriver<RemoteSubnetRoutePolicy, RemoteSubnetRoutePolicy> {
  return {
    name: 'vxlan RemoteSubnetRoute policies',
    async readActual() {
      const net = await hns.getNetwork(networkId);
      const found = (net?.Policies ?? []).filter((p) => p.Type === REMOTE_SUBNET_ROUTE && p.Settings !== undefined);
      return found as unknown[] as RemoteSubnetRoutePolicy[];
    },
    actualKey: (p) => String(p.Settings?.DestinationPrefix),
    desiredKey: (p) => p.Settings!.DestinationPrefix,
    same: (a, d) => sameRemoteSubnetRoute(a.Settings!, d.Settings!),
    async remove(items) {
      for (const batch of chunk(items, POLICY_BATCH)) await hns.removeNetworkPolicies(networkId, batch);
    },
    async add(items) {
      for (const batch of chunk(items, POLICY_BATCH)) await hns.addNetworkPolicies(networkId, batch);
    },
  };
}

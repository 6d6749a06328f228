// Legacy vxlan dataplane (flannel before 2019): one HNS v1 remote endpoint per remote pod IP, named
// `remote_<ip>`, MAC `<MacPrefix>-<ip octets in hex>`, with a PA policy naming the peer's public IP.
// Off by default (Backend.LegacyRemoteEndpoints), for tooling that still expects the old remote
// endpoints; the Overlay network itself is still created through HCN v2 (HNS >= 9.2 is required either way).
import type { LeaseDriver } from '../route-network.js';
import type { HnsClient } from '../../hns/client.js';
import { checkNetworkPresent, hnsFailure } from '../../hns/errors.js';
import { sameId, type HnsEndpointV1 } from '../../hns/schema.js';
import { hostAddresses } from '../../basics/ip4.js';
import type { Lease } from '../../subnet/lease.js';

const ENDPOINT_WRITE_CONCURRENCY = 8;

function remoteEndpointMac(macPrefix: string, ip: string): string {
  const hex = ip.split('.').map((o) => Number(o).toString(16).toUpperCase().padStart(2, '0'));
  return `${macPrefix.toUpperCase()}-${hex.join('-')}`;
}

function paOf(ep: HnsEndpointV1): string | undefined {
  const pa = (ep.Policies ?? []).find((p) => (p as { Type?: string }).Type === 'PA') as { PA?: string } | undefined;
  return pa?.PA;
}

/** Every pod address of the peer's subnet (not the network address, gateway .1, or broadcast). */
function remoteEndpointsFor(peer: Lease, networkId: string, macPrefix: string): HnsEndpointV1[] {
  return hostAddresses(peer.subnet)
    .slice(1)
    .map((ip) => ({
      Name: `remote_${ip}`,
      VirtualNetwork: networkId,
      IPAddress: ip,
      MacAddress: remoteEndpointMac(macPrefix, ip),
      IsRemoteEndpoint: true,
      Policies: [{ Type: 'PA', PA: peer.publicIP }],
    }));
}

/** Endpoints are written one per call, several in flight; without `toActual` (HNS assigns the IDs) every pass reads. */
export function remoteEndpointDriver(hns: HnsClient, networkId: string, macPrefix: string, networkName = networkId): LeaseDriver<HnsEndpointV1, HnsEndpointV1> {
  return {
    name: 'vxlan remote endpoints',
    driftKind: 'policy', // the legacy stand-in for a RemoteSubnetRoute policy, counted as one
    desiredFor: (peer) => remoteEndpointsFor(peer, networkId, macPrefix),
    async readActual() {
      checkNetworkPresent(await hns.getNetworkV1(networkId), networkName, networkId);
      const all = await hns.listEndpointsV1();
      return all.filter((e) => e.IsRemoteEndpoint === true && sameId(e.VirtualNetwork, networkId));
    },
    actualKey: (e) => String(e.IPAddress),
    desiredKey: (e) => e.IPAddress!,
    same: (a, d) => a.MacAddress?.toUpperCase() === d.MacAddress && paOf(a) === paOf(d),
    batch: 1,
    concurrency: ENDPOINT_WRITE_CONCURRENCY,
    remove: ([e]) => hns.deleteEndpointV1(e.ID!),
    add: async ([e]) => {
      await hns.createEndpointV1(e);
    },
    failure: hnsFailure,
  };
}

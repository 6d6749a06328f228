// The v1 view of HNS objects: HNS stores v2 (HCN) objects and renders them for HNSCall as the v1
// JSON hcsshim internal/hns reads (hnsnetwork.go HNSNetwork, hnsendpoint.go HNSEndpoint, hnspolicy.go),
// and turns a v1 POST body into the v2 object (hcn/hcnnetwork.go HostComputeNetwork,
// hcnendpoint.go HostComputeEndpoint). Pure; the simulated HNS (src/simulator/hns-v1.ts) answers with it.
import { contains } from '../basics/ip4.js';
import type { HcnEndpoint, HcnNetwork, HcnPolicy, HcnSubnet, HnsEndpointV1, HnsNetworkV1, HnsSubnetV1 } from './schema.js';
import { ENDPOINT_FLAG_REMOTE, HCN_SCHEMA_V2, policySetting } from './schema.js';

/** v1 policy `{"Type":"VSID","VSID":4096}` -> v2 `{"Type":"VSID","Settings":{"IsolationId":4096}}`. */
function policyV1toV2(p: unknown): HcnPolicy {
  const { Type, ...rest } = (p ?? {}) as Record<string, unknown>;
  const type = String(Type);
  if (type === 'VSID') return { Type: 'VSID', Settings: { IsolationId: rest.VSID } };
  if (type === 'PA') return { Type: 'ProviderAddress', Settings: { ProviderAddress: rest.PA } };
  return { Type: type, Settings: rest };
}

function policyV2toV1(p: HcnPolicy): Record<string, unknown> {
  const s = p.Settings ?? {};
  if (p.Type === 'VSID') return { Type: 'VSID', VSID: s.IsolationId };
  if (p.Type === 'ProviderAddress') return { Type: 'PA', PA: s.ProviderAddress };
  return { Type: p.Type, ...s };
}

/** Network policies that surface as v1 fields rather than v1 policies. */
const V1_FIELD_POLICIES = new Set(['NetAdapterName', 'ProviderAddress']);

function gatewayOf(subnet: HcnSubnet): string | undefined {
  return subnet.Routes?.find((r) => r.DestinationPrefix === '0.0.0.0/0')?.NextHop;
}

/** The v1 view (`GET /networks/<id>`) of a stored v2 network. */
export function networkV2toV1(net: HcnNetwork, withManagementIP = true): HnsNetworkV1 {
  const subnets: HnsSubnetV1[] = (net.Ipams ?? []).flatMap((ipam) =>
    (ipam.Subnets ?? []).map((s) => {
      const out: HnsSubnetV1 = { AddressPrefix: s.IpAddressPrefix };
      const gw = gatewayOf(s);
      if (gw) out.GatewayAddress = gw;
      if (s.Policies?.length) out.Policies = s.Policies.map(policyV2toV1);
      return out;
    }),
  );
  const v1: HnsNetworkV1 = {
    ID: net.ID,
    Name: net.Name,
    Type: net.Type,
    Policies: (net.Policies ?? []).filter((p) => !V1_FIELD_POLICIES.has(p.Type)).map(policyV2toV1),
    Subnets: subnets,
    ManagementIP: withManagementIP ? (policySetting(net.Policies, 'ProviderAddress', 'ProviderAddress') ?? '') : '',
  };
  const adapter = policySetting(net.Policies, 'NetAdapterName', 'NetworkAdapterName');
  if (adapter) v1.NetworkAdapterName = adapter;
  if (net.MacPool?.Ranges?.length) v1.MacPools = net.MacPool.Ranges.map((r) => ({ ...r }));
  if (net.Dns?.Domain) v1.DNSSuffix = net.Dns.Domain;
  if (net.Dns?.ServerList?.length) v1.DNSServerList = net.Dns.ServerList.join(',');
  return v1;
}

/** v1 `POST /networks/` body -> the v2 object HNS stores. */
export function networkV1toV2(v1: HnsNetworkV1): HcnNetwork {
  const net: HcnNetwork = { Name: v1.Name, Type: v1.Type, SchemaVersion: { ...HCN_SCHEMA_V2 }, Flags: 0 };
  const policies = (v1.Policies ?? []).map(policyV1toV2);
  if (v1.NetworkAdapterName) policies.push({ Type: 'NetAdapterName', Settings: { NetworkAdapterName: v1.NetworkAdapterName } });
  net.Policies = policies;
  if (v1.Subnets?.length) {
    net.Ipams = [
      {
        Type: 'Static',
        Subnets: v1.Subnets.map((s) => {
          const sub: HcnSubnet = { IpAddressPrefix: s.AddressPrefix };
          if (s.GatewayAddress) sub.Routes = [{ NextHop: s.GatewayAddress, DestinationPrefix: '0.0.0.0/0' }];
          if (s.Policies?.length) sub.Policies = s.Policies.map(policyV1toV2);
          return sub;
        }),
      },
    ];
  }
  if (v1.MacPools?.length) net.MacPool = { Ranges: v1.MacPools.map((r) => ({ ...r })) };
  const servers =
    v1.DNSServerList?.split(',')
      .map((s) => s.trim())
      .filter(Boolean) ?? [];
  if (v1.DNSSuffix || servers.length) net.Dns = { ...(v1.DNSSuffix ? { Domain: v1.DNSSuffix } : {}), ...(servers.length ? { ServerList: servers } : {}) };
  return net;
}

/** v1 view of a stored v2 endpoint. */
export function endpointV2toV1(ep: HcnEndpoint, net: HcnNetwork | undefined, attached: boolean): HnsEndpointV1 {
  const ipc = ep.IpConfigurations?.[0];
  const v1: HnsEndpointV1 = {
    ID: ep.ID,
    Name: ep.Name ?? '',
    VirtualNetwork: ep.HostComputeNetwork,
    Policies: (ep.Policies ?? []).map(policyV2toV1),
    MacAddress: ep.MacAddress,
    IsRemoteEndpoint: ((ep.Flags ?? 0) & ENDPOINT_FLAG_REMOTE) !== 0,
    State: attached ? 2 : 1,
  };
  if (net) v1.VirtualNetworkName = net.Name;
  if (ipc) {
    v1.IPAddress = ipc.IpAddress;
    if (ipc.PrefixLength !== undefined) v1.PrefixLength = ipc.PrefixLength;
    const subnet = net?.Ipams?.flatMap((i) => i.Subnets ?? []).find((s) => contains(s.IpAddressPrefix, ipc.IpAddress));
    const gw = subnet && gatewayOf(subnet);
    if (gw) v1.GatewayAddress = gw;
  }
  return v1;
}

/** v1 `POST /endpoints/` body -> the v2 object HNS stores. */
export function endpointV1toV2(v1: HnsEndpointV1, prefixLength: number | undefined): HcnEndpoint {
  const ep: HcnEndpoint = {
    Name: v1.Name,
    Policies: (v1.Policies ?? []).map(policyV1toV2),
    Flags: v1.IsRemoteEndpoint ? ENDPOINT_FLAG_REMOTE : 0,
    SchemaVersion: { ...HCN_SCHEMA_V2 },
  };
  if (v1.MacAddress) ep.MacAddress = v1.MacAddress;
  if (v1.IPAddress) {
    const pl = v1.PrefixLength ?? prefixLength;
    ep.IpConfigurations = [{ IpAddress: v1.IPAddress, ...(pl !== undefined ? { PrefixLength: pl } : {}) }];
  }
  return ep;
}

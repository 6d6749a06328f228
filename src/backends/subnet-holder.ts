// One subnet, one HNS network. Before a backend creates its network it asks whether another HNS network
// on the node already uses the own subnet: a node migrated from microsoft/SDN (`"Name": "vxlan0"`) whose
// net-conf.json lost its Name would otherwise get `flannel.4096` beside `vxlan0`, both Overlay networks
// on 10.244.3.0/24, while the pods' endpoints and kube-proxy's source VIP stay on the old one (HNS accepts
// the second network; the pods' traffic then depends on which one the vSwitch picks). A network holds the
// subnet when one of its subnets overlaps it. The holder is adopted when the backend's own matcher (the
// one that also decides reuse-or-replace of its network: type, first subnet, VSID or gateway, adapter;
// hostgw_windows.go and device_windows.go build exactly that) accepts it, and refused with
// FLANNEL_ERR_NETWORK_CLASH otherwise: a network adopted only to fail that matcher would be deleted,
// pods and all. One exception: an Overlay network named `flannel.<its VSID>` is
// this agent's own network of an earlier VNI (the default name follows the VNI), so a VNI change replaces
// it, as a VNI change of a named network does (docs/install.md, Upgrading: drain the node first). Pure: the
// backends pass the networks they listed.
import { BackendError } from '../basics/errors.js';
import { overlaps } from '../basics/ip4.js';

/** The facts of one HNS network that decide whether it may be adopted. */
export interface NetworkSummary {
  name: string;
  id?: string;
  type: string;
  subnets: string[];
  /** Overlay: the VSID (IsolationId) of its subnet, when HNS reports one. */
  vsid?: number;
  /** L2Bridge: the gateway of its subnet, when HNS reports one. */
  gateway?: string;
}

/** What the backend would create. */
export interface WantedNetwork {
  name: string;
  type: 'Overlay' | 'L2Bridge';
  subnet: string;
  vni?: number;
  gateway?: string;
}

export type HolderDecision<N extends NetworkSummary = NetworkSummary> = { kind: 'none' } | { kind: 'adopt'; network: N } | { kind: 'replace'; network: N };

/**
 * `none` when no other network holds (overlaps) `want.subnet`; `adopt` when exactly one does and `fits`
 * (the backend's reuse matcher) accepts it; `replace` when it is the agent's own Overlay network of another
 * VNI (`flannel.<VSID>`); else throws FLANNEL_ERR_NETWORK_CLASH naming both networks and the fix.
 */
export function decideSubnetHolder<N extends NetworkSummary>(networks: readonly N[], want: WantedNetwork, fits: (n: N) => boolean): HolderDecision<N> {
  const holders = networks.filter((n) => n.name !== want.name && n.subnets.some((s) => overlaps(s, want.subnet)));
  if (holders.length === 0) return { kind: 'none' };
  const [first] = holders;
  if (holders.length === 1 && first && fits(first)) return { kind: 'adopt', network: first };
  const ownEarlierVni = (n: NetworkSummary) => want.type === 'Overlay' && n.type === 'Overlay' && n.vsid !== undefined && n.name === `flannel.${n.vsid}`;
  if (holders.length === 1 && first && ownEarlierVni(first)) return { kind: 'replace', network: first };
  const held = holders.map(describe).join(' and ');
  const mine = `${want.name} (${want.type}, ${want.subnet}${want.vni !== undefined ? `, VSID ${want.vni}` : ''})`;
  throw new BackendError(
    'FLANNEL_ERR_NETWORK_CLASH',
    `HNS network ${held} already uses this node's subnet ${want.subnet}, so flanneld will not create ${mine} beside it: ` +
      (holders.length === 1
        ? `if ${first.name} is flannel's network from an earlier install, set "Backend": {"Name": "${first.name}"} in net-conf.json with the same type and VNI; otherwise drain the node and delete it (Get-HnsNetwork | Where-Object Name -eq '${first.name}' | Remove-HnsNetwork)`
        : "drain the node and delete the networks that are not flannel's (Get-HnsNetwork | Remove-HnsNetwork)"),
    { network: want.name, subnet: want.subnet, holder: holders.map((n) => n.name).join(','), holderType: holders.map((n) => n.type).join(',') },
  );
}

function describe(n: NetworkSummary): string {
  const extra = n.vsid !== undefined ? `, VSID ${n.vsid}` : n.gateway !== undefined ? `, gateway ${n.gateway}` : '';
  return `${n.name} (${n.type}, ${n.subnets.join(',')}${extra}${n.id ? `, ID ${n.id}` : ''})`;
}

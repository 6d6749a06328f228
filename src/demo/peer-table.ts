// Renders what the simulated dataplane holds for each peer, for the demo's output.
import type { Network } from '../backends/backend.js';
import type { FakeNode } from './kube-fake/api-server.js';
import type { SimulatedDataplane } from '../simulator/model.js';

export interface PeerRow {
  node: string;
  subnet: string;
  via: string;
  detail: string;
}

/** One row per programmed route (host-gw) or RemoteSubnetRoute policy (vxlan), named by Node. */
export function peerTable(sim: SimulatedDataplane, net: Network | undefined, nodes: FakeNode[]): PeerRow[] {
  if (!net) return [];
  const nodeBySubnet = new Map(nodes.map((n) => [String((n.spec as { podCIDR?: string } | undefined)?.podCIDR), n.metadata.name]));
  const state = sim.snapshot();
  const rows: PeerRow[] = [];
  const hns = state.networks.find((n) => n.Name === net.networkName);
  for (const p of hns?.Policies ?? []) {
    if (p.Type !== 'RemoteSubnetRoute') continue;
    const s = p.Settings as { DestinationPrefix: string; ProviderAddress: string; DistributedRouterMacAddress: string; IsolationId: number };
    rows.push({
      node: nodeBySubnet.get(s.DestinationPrefix) ?? '?',
      subnet: s.DestinationPrefix,
      via: s.ProviderAddress,
      detail: `VNI ${s.IsolationId} MAC ${s.DistributedRouterMacAddress}`,
    });
  }
  for (const r of state.routes) {
    if (r.DestinationPrefix === '0.0.0.0/0' || !nodeBySubnet.has(r.DestinationPrefix)) continue;
    rows.push({ node: nodeBySubnet.get(r.DestinationPrefix)!, subnet: r.DestinationPrefix, via: r.NextHop, detail: `route ifIndex ${r.InterfaceIndex} metric ${r.Metric}` });
  }
  return rows.sort((a, b) => a.subnet.localeCompare(b.subnet, 'en', { numeric: true }));
}

export function renderTable(rows: PeerRow[]): string {
  const head: PeerRow = { node: 'NODE', subnet: 'SUBNET', via: 'VIA', detail: 'DATAPLANE' };
  const all = [head, ...rows];
  const w = (k: keyof PeerRow) => Math.max(...all.map((r) => r[k].length));
  const line = (r: PeerRow) => `  ${r.node.padEnd(w('node'))}  ${r.subnet.padEnd(w('subnet'))}  ${r.via.padEnd(w('via'))}  ${r.detail}`;
  return [...all.map(line), rows.length === 0 ? '  (none)' : ''].filter(Boolean).join('\n');
}

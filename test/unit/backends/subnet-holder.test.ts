// decideSubnetHolder (src/backends/subnet-holder.ts): before a backend creates its HNS network, another
// network holding (overlapping) the own subnet is adopted when the backend's matcher accepts it, else refused.
// The backends pass their reuse matchers (overlayMatches, l2BridgeMatches); these tables use a stand-in
// that compares the summary's type, VSID and gateway, as those do.
import { describe, expect, it } from '@jest/globals';
import { decideSubnetHolder, type NetworkSummary, type WantedNetwork } from '../../../src/backends/subnet-holder.js';
import { BackendError } from '../../../src/basics/errors.js';
import { expectCode } from '../../support/errors.js';

const SUBNET = '10.244.7.0/24';
const overlay: WantedNetwork = { name: 'flannel.4096', type: 'Overlay', subnet: SUBNET, vni: 4096 };
const bridge: WantedNetwork = { name: 'cbr0', type: 'L2Bridge', subnet: SUBNET, gateway: '10.244.7.1' };
const net = (name: string, type: string, subnets: string[], extra: Partial<NetworkSummary> = {}): NetworkSummary => ({ name, id: `id-${name}`, type, subnets, ...extra });

/** A stand-in for the backend's matcher: same type, and the VSID / gateway when reported. */
const fitsWant = (want: WantedNetwork) => (n: NetworkSummary) =>
  n.type === want.type && (n.vsid === undefined || n.vsid === want.vni) && (n.gateway === undefined || n.gateway === want.gateway);

describe('decideSubnetHolder', () => {
  it.each<[string, NetworkSummary[], WantedNetwork, string | undefined]>([
    ['no other network', [], overlay, undefined],
    ['only its own name holds the subnet', [net('flannel.4096', 'Overlay', [SUBNET])], overlay, undefined],
    ['another subnet only', [net('nat', 'NAT', ['172.20.0.0/16'])], overlay, undefined],
    ['SDN vxlan0, same VSID', [net('vxlan0', 'Overlay', [SUBNET], { vsid: 4096 })], overlay, 'vxlan0'],
    ['Overlay without a VSID reported', [net('vxlan0', 'Overlay', [SUBNET])], overlay, 'vxlan0'],
    ['L2Bridge with the same gateway', [net('l2bridge', 'L2Bridge', [SUBNET], { gateway: '10.244.7.1' })], bridge, 'l2bridge'],
  ])('%s', (_what, networks, want, adopted) => {
    const d = decideSubnetHolder(networks, want, fitsWant(want));
    expect(d.kind === 'adopt' ? d.network.name : undefined).toBe(adopted);
  });

  it("replaces the agent's own Overlay network of an earlier VNI (flannel.<VSID>): a VNI change under the default name", () => {
    const want = { ...overlay, name: 'flannel.4097', vni: 4097 };
    const d = decideSubnetHolder([net('flannel.4096', 'Overlay', [SUBNET], { vsid: 4096 })], want, fitsWant(want));
    expect(d).toMatchObject({ kind: 'replace', network: { name: 'flannel.4096' } });
    // Not a network merely named like one: flannel.4096 with VSID 4097 is nobody's default.
    expectCode(() => decideSubnetHolder([net('flannel.4096', 'Overlay', [SUBNET], { vsid: 4098 })], want, fitsWant(want)), BackendError, 'FLANNEL_ERR_NETWORK_CLASH');
  });

  it.each<[string, NetworkSummary[], WantedNetwork, string]>([
    ['Overlay with another VSID', [net('vxlan0', 'Overlay', [SUBNET], { vsid: 4097 })], overlay, 'vxlan0'],
    ['an L2Bridge where vxlan wants an Overlay', [net('cbr0', 'L2Bridge', [SUBNET])], overlay, 'cbr0'],
    ['an L2Bridge with another gateway', [net('l2bridge', 'L2Bridge', [SUBNET], { gateway: '10.244.7.254' })], bridge, 'l2bridge'],
    ['a wider network covering the subnet (overlap, not string equality)', [net('vxlan0', 'Overlay', ['10.244.0.0/16'], { vsid: 4097 })], overlay, 'vxlan0'],
    ['the subnet written with host bits', [net('l2bridge', 'L2Bridge', ['10.244.7.5/24'], { gateway: '10.244.7.254' })], bridge, 'l2bridge'],
    ['two holders, even if both fit', [net('vxlan0', 'Overlay', [SUBNET]), net('vxlan1', 'Overlay', [SUBNET])], overlay, 'vxlan0,vxlan1'],
  ])('refuses %s with FLANNEL_ERR_NETWORK_CLASH naming both networks', (_what, networks, want, holder) => {
    const err = expectCode(() => decideSubnetHolder(networks, want, fitsWant(want)), BackendError, 'FLANNEL_ERR_NETWORK_CLASH');
    expect(err.context).toMatchObject({ network: want.name, holder, subnet: SUBNET });
    expect(err.message).toContain(want.name);
    for (const h of holder.split(',')) expect(err.message).toContain(h);
  });

  it("refuses, never adopts, a holder the backend's matcher rejects (another adapter, the subnet not first): adopting it would delete it", () => {
    const holder = net('vxlan0', 'Overlay', ['10.0.9.0/24', SUBNET], { vsid: 4096 });
    expect(decideSubnetHolder([holder], overlay, fitsWant(overlay))).toMatchObject({ kind: 'adopt' });
    const err = expectCode(() => decideSubnetHolder([holder], overlay, () => false), BackendError, 'FLANNEL_ERR_NETWORK_CLASH');
    expect(err.context).toMatchObject({ holder: 'vxlan0' });
  });
});

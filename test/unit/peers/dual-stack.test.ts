// Dual-stack peers: the Node projection with the IPv6 half (as upstream's kube subnet manager reads a
// Node: pkg/subnet/kube/kube.go nodeToLease), the IPv6 half checked as the IPv4 one, and the host-gw
// driver's one route per family (upstream pkg/backend/hostgw/hostgw.go GetV6Route: the IPv6 subnet via
// the peer's PublicIPv6).
import { describe, expect, it } from '@jest/globals';
import { annotationKeys } from '../../../src/subnet/kube/annotations.js';
import { normalizeAnnotationPrefix } from '../../../src/config/annotation-prefix.js';
import { projectNode, toLease } from '../../../src/subnet/kube/node-list-watch.js';
import { nodePublicIPsOf } from '../../../src/subnet/kube/node-public-ip.js';
import type { Lease } from '../../../src/subnet/lease.js';
import { validateLease, type LeaseValidationContext } from '../../../src/peers/validate.js';
import { hostGwRouteDriver } from '../../../src/backends/hostgw/routes.js';
import type { Route, RouteTable } from '../../../src/routes/route-table.js';
import type { IpFamily } from '../../../src/host/host.js';
import { RouteRecord } from '../../../src/backends/hostgw/route-record.js';
import { logSink } from '../../support/log-sink.js';
import { Metrics, METRIC } from '../../../src/basics/metrics.js';
import { PeerStore } from '../../../src/peers/store.js';
import type { NodeEvent } from '../../../src/node-events.js';
import { readMetric } from '../../support/agent-signals.js';

const P = 'flannel.alpha.coreos.com/';
const keys = annotationKeys(normalizeAnnotationPrefix('flannel.alpha.coreos.com'));

/** A dual-stack Linux host-gw node as upstream flanneld annotates it (AcquireLease with a PublicIPv6). */
function linuxNode(name: string, v4: string, v6: string | undefined, ip: string, ip6: string | undefined): unknown {
  return {
    metadata: {
      name,
      annotations: {
        [`${P}kube-subnet-manager`]: 'true',
        [`${P}backend-type`]: 'host-gw',
        [`${P}backend-data`]: 'null',
        [`${P}public-ip`]: ip,
        ...(ip6 !== undefined ? { [`${P}backend-v6-data`]: 'null', [`${P}public-ipv6`]: ip6 } : {}),
      },
    },
    spec: { podCIDR: v4, podCIDRs: v6 === undefined ? [v4] : [v4, v6] },
  };
}

describe('the Node projection with IPv6', () => {
  it('reads the IPv6 podCIDR and public-ipv6 of a dual-stack peer', () => {
    const rec = projectNode(linuxNode('linux-1', '10.42.1.0/24', '2001:cafe:42:1::/64', '192.168.10.11', '2001:db8:10::11'), keys, true);
    expect(toLease(rec!)).toEqual({
      key: 'linux-1',
      subnet: '10.42.1.0/24',
      publicIP: '192.168.10.11',
      backendType: 'host-gw',
      backendData: null,
      ipv6Subnet: '2001:cafe:42:1::/64',
      publicIPv6: '2001:db8:10::11',
    });
  });

  it('keeps a peer without public-ipv6 (or without an IPv6 podCIDR) IPv4-only', () => {
    for (const n of [
      linuxNode('v4-only', '10.42.2.0/24', '2001:cafe:42:2::/64', '192.168.10.12', undefined),
      linuxNode('no-v6-cidr', '10.42.3.0/24', undefined, '192.168.10.13', '2001:db8:10::13'),
    ]) {
      const lease = toLease(projectNode(n, keys, true)!)!;
      expect(lease).not.toHaveProperty('ipv6Subnet');
      expect(lease).not.toHaveProperty('publicIPv6');
    }
  });

  it('without IPv6 the projection is the IPv4 one exactly', () => {
    const n = linuxNode('linux-1', '10.42.1.0/24', '2001:cafe:42:1::/64', '192.168.10.11', '2001:db8:10::11');
    expect(projectNode(n, keys)).toEqual({
      name: 'linux-1',
      podCIDR: '10.42.1.0/24',
      subnetManager: 'true',
      backendType: 'host-gw',
      backendData: 'null',
      publicIP: '192.168.10.11',
    });
  });

  it('IPv6 podCIDR: the v6 entry of podCIDRs, host bits masked; three or more entries are counted', () => {
    const spec = (podCIDRs: unknown, podCIDR?: string) => ({ metadata: { name: 'n' }, spec: { podCIDRs, podCIDR } });
    expect(projectNode(spec(['2001:cafe:42:1::5/64', '10.42.1.0/24']), keys, true)).toMatchObject({ ipv6PodCIDR: '2001:cafe:42:1::/64', podCIDR: '10.42.1.0/24' });
    expect(projectNode(spec(undefined, 'fd00::/64'), keys, true)).toMatchObject({ ipv6PodCIDR: 'fd00::/64' });
    expect(projectNode(spec(['10.42.1.0/24', 'fd00::/64', 'fd01::/64']), keys, true)).toMatchObject({ podCIDRCount: 3 });
    expect(projectNode(spec(['10.42.1.0/24', 'fd00::/64', 'fd01::/64']), keys, true)).not.toHaveProperty('ipv6PodCIDR');
  });

  it('node-public-ipv6 and public-ipv6-overwrite are read for the interface choice (valid global addresses only)', () => {
    const n = (a: Record<string, string>) => ({ metadata: { name: 'n', annotations: a } });
    expect(nodePublicIPsOf(n({ [`${P}node-public-ipv6`]: '2001:db8::7', [`${P}public-ipv6-overwrite`]: 'fd00:1::7' }), 'flannel.alpha.coreos.com')).toEqual({
      nodePublicIPv6: '2001:db8::7',
      publicIPv6Overwrite: 'fd00:1::7',
    });
    expect(nodePublicIPsOf(n({ [`${P}node-public-ipv6`]: 'fe80::7', [`${P}public-ipv6-overwrite`]: 'x' }), 'flannel.alpha.coreos.com')).toEqual({});
  });
});

const ctx: LeaseValidationContext = {
  network: '10.42.0.0/16',
  subnetLen: 24,
  ownSubnet: '10.42.0.0/24',
  backendType: 'host-gw',
  ownIPs: ['192.168.10.10'],
  nodeNetwork: '192.168.10.10/24',
  ipv6: { network: '2001:cafe:42::/56', subnetLen: 64, ownSubnet: '2001:cafe:42::/64', ownIPs: ['2001:db8:10::10'], nodeNetwork: '2001:db8:10::10/64' },
};

function peer(over: Partial<Lease> = {}): Lease {
  return {
    key: 'linux-1',
    subnet: '10.42.1.0/24',
    publicIP: '192.168.10.11',
    backendType: 'host-gw',
    backendData: null,
    ipv6Subnet: '2001:cafe:42:1::/64',
    publicIPv6: '2001:db8:10::11',
    ...over,
  };
}

// docs/compatibility.md, Dual-stack: the IPv6 half is checked by the IPv4 half's rules, and a bad one is
// rejected alone: the peer keeps its IPv4 route (as a peer publishing no IPv6 does), the IPv6 reason is
// counted and named. Upstream trusts the IPv6 half (pkg/backend/hostgw/hostgw.go GetV6Route routes
// whatever PublicIPv6 says) and the kube-apiserver checks podCIDRs only as CIDRs of one family each
// (pkg/apis/core/validation ValidateNode: "must be a valid CIDR"), so `::/0` or a `/128` reach a peer.
describe('validateLease: the IPv6 half, checked as the IPv4 one and rejected alone', () => {
  it.each<[string, Partial<Lease>, string]>([
    ['IPv6 subnet not a CIDR', { ipv6Subnet: 'banana' }, 'subnet-invalid'],
    ['IPv6 subnet with host bits', { ipv6Subnet: '2001:cafe:42:1::1/64' }, 'subnet-not-network-address'],
    ['IPv6 subnet outside IPv6Network', { ipv6Subnet: '2001:cafe:43:1::/64' }, 'subnet-outside-network'],
    ['IPv6 subnet ::/0', { ipv6Subnet: '::/0' }, 'subnet-outside-network'],
    ['IPv6 subnet of another length', { ipv6Subnet: '2001:cafe:42:1::/80' }, 'subnet-length'],
    ['IPv6 subnet a /128', { ipv6Subnet: '2001:cafe:42:1::/128' }, 'subnet-length'],
    ['IPv6 subnet equal to ours', { ipv6Subnet: '2001:cafe:42::/64' }, 'subnet-equals-own'],
    ['public IPv6 not an address', { publicIPv6: 'nope' }, 'public-ip-invalid'],
    ['public IPv6 missing beside an IPv6 subnet', { publicIPv6: undefined }, 'public-ip-invalid'],
    ['public IPv6 with a zone', { publicIPv6: '2001:db8:10::11%3' }, 'public-ip-invalid'],
    ['public IPv6 link-local with a zone', { publicIPv6: 'fe80::11%eth0' }, 'public-ip-invalid'],
    ['public IPv6 link-local', { publicIPv6: 'fe80::11' }, 'public-ip-link-local'],
    ['public IPv6 multicast', { publicIPv6: 'ff02::1' }, 'public-ip-not-unicast'],
    ['public IPv6 loopback', { publicIPv6: '::1' }, 'public-ip-not-unicast'],
    ['public IPv6 unspecified', { publicIPv6: '::' }, 'public-ip-not-unicast'],
    ['public IPv6 IPv4-mapped', { publicIPv6: '::ffff:192.168.10.11' }, 'public-ip-not-unicast'],
    ['public IPv6 ours', { publicIPv6: '2001:db8:10::10' }, 'public-ip-own'],
    ['public IPv6 inside IPv6Network', { publicIPv6: '2001:cafe:42:9::1' }, 'public-ip-inside-network'],
    ['public IPv6 off link', { publicIPv6: '2001:db8:99::11' }, 'public-ip-off-link'],
  ])('%s: the IPv6 half is rejected (%s), the lease is accepted', (_name, over, reason) => {
    const v = validateLease(peer(over), ctx);
    expect(v).toEqual({ ok: true, ipv6: { reason, message: expect.stringMatching(/IPv6/) } });
  });

  it('a valid dual-stack peer and an IPv4-only one are accepted whole', () => {
    expect(validateLease(peer(), ctx)).toEqual({ ok: true });
    expect(validateLease(peer({ ipv6Subnet: undefined, publicIPv6: undefined }), ctx)).toEqual({ ok: true });
  });

  it('a bad IPv4 half still rejects the lease, whatever its IPv6 half', () => {
    expect(validateLease(peer({ publicIP: '127.0.0.1', publicIPv6: 'ff02::1' }), ctx)).toMatchObject({ ok: false, reason: 'public-ip-not-unicast' });
  });

  it('an IPv4-only node never looks at an IPv6 half', () => {
    const { ipv6: _ipv6, ...v4only } = ctx;
    expect(validateLease(peer({ ipv6Subnet: 'banana' }), v4only)).toEqual({ ok: true });
  });
});

describe('the peer store with a dual-stack peer whose IPv6 half is rejected', () => {
  const vnic = { index: 7, refresh: () => Promise.resolve(false) };
  function store() {
    const metrics = new Metrics();
    const sink = logSink('info');
    const events: NodeEvent[] = [];
    const driver = hostGwRouteDriver({
      routes: new FamilyRoutes([]),
      network: '10.42.0.0/16',
      ownSubnet: '10.42.0.0/24',
      vnic,
      ipv6: { network: '2001:cafe:42::/56', ownSubnet: '2001:cafe:42::/64' },
    });
    const s = new PeerStore({ ownLeaseKey: 'win-1', ownSubnet: '10.42.0.0/24', validation: ctx, items: driver, metrics, log: sink.log, events: { record: (e) => events.push(e) } });
    const put = (l: Lease) => s.apply({ kind: 'peers', peers: [{ key: l.key, lease: l }] });
    s.apply({ kind: 'listed', keys: new Set() });
    return { s, put, metrics, events, entries: sink.entries };
  }
  const routes = (s: PeerStore<Route>) => s.desiredItems().map((r) => `${r.destinationPrefix} via ${r.nextHop}`);

  it.each<[string, Partial<Lease>, string]>([
    ['a multicast public IPv6', { publicIPv6: 'ff02::1' }, 'public-ip-not-unicast'],
    ['an IPv4-mapped public IPv6', { publicIPv6: '::ffff:192.168.10.11' }, 'public-ip-not-unicast'],
    ['a loopback public IPv6', { publicIPv6: '::1' }, 'public-ip-not-unicast'],
    ['a link-local public IPv6', { publicIPv6: 'fe80::11' }, 'public-ip-link-local'],
    ['a zoned public IPv6', { publicIPv6: '2001:db8:10::11%3' }, 'public-ip-invalid'],
    ['a ::/0 podCIDR', { ipv6Subnet: '::/0' }, 'subnet-outside-network'],
    ['a /128 podCIDR', { ipv6Subnet: '2001:cafe:42:1::/128' }, 'subnet-length'],
    ['a podCIDR outside IPv6Network', { ipv6Subnet: 'fd99::/64' }, 'subnet-outside-network'],
  ])('%s: its IPv4 route is kept, the IPv6 half counted and named', async (_what, over, reason) => {
    const { s, put, metrics, events, entries } = store();
    put(peer(over));
    expect(routes(s)).toEqual(['10.42.1.0/24 via 192.168.10.11']);
    expect(s.size).toBe(1);
    expect(await readMetric(metrics, METRIC.leasesIPv6Rejected, { reason })).toBe(1);
    expect(await readMetric(metrics, METRIC.leasesRejected, { reason })).toBe(0);
    const { ipv6Subnet, publicIPv6 } = peer(over);
    expect(s.rejected()).toEqual([
      { key: 'linux-1', family: 'ipv6', subnet: ipv6Subnet, publicIP: publicIPv6, reason, message: expect.stringMatching(/IPv6/), backendType: 'host-gw' },
    ]);
    expect(entries.filter((e) => e['message'] === 'peer lease IPv6 half rejected; its IPv4 route is kept')).toEqual([expect.objectContaining({ node: 'linux-1', reason })]);
    expect(events).toEqual([expect.objectContaining({ reason: 'FlannelPeerRejected', message: expect.stringMatching(/^peer linux-1: IPv6 half rejected/) })]);

    // A heartbeat changes nothing; a fixed IPv6 half gets its route and clears the record.
    put(peer(over));
    expect(await readMetric(metrics, METRIC.leasesIPv6Rejected, { reason })).toBe(1);
    put(peer());
    expect(routes(s).sort()).toEqual(['10.42.1.0/24 via 192.168.10.11', '2001:cafe:42:1::/64 via 2001:db8:10::11']);
    expect(s.rejected()).toEqual([]);
  });

  it('a whole-lease rejection clears the IPv6 half record; deletion forgets both', async () => {
    const { s, put, metrics } = store();
    put(peer({ publicIPv6: 'ff02::1' }));
    put(peer({ publicIP: '127.0.0.1', publicIPv6: 'ff02::1' }));
    expect(s.rejected()).toEqual([expect.objectContaining({ key: 'linux-1', reason: 'public-ip-not-unicast' })]);
    expect(s.rejected()[0]).not.toHaveProperty('family');
    expect(routes(s)).toEqual([]);
    s.apply({ kind: 'peers', peers: [{ key: 'linux-1', lease: undefined }] });
    expect(s.rejected()).toEqual([]);
    put(peer({ publicIP: '127.0.0.1', publicIPv6: 'ff02::1' })); // nothing of it was kept: the same lease is news again
    expect(await readMetric(metrics, METRIC.leasesRejected, { reason: 'public-ip-not-unicast' })).toBe(2);
  });
});

/** A RouteTable holding rows of both families, listed per family as GetIpForwardTable2 does. */
class FamilyRoutes implements RouteTable {
  constructor(public rows: Route[]) {}
  list(interfaceIndex?: number, family: IpFamily = 'ipv4'): Promise<Route[]> {
    return Promise.resolve(
      this.rows.filter((r) => (interfaceIndex === undefined || r.interfaceIndex === interfaceIndex) && r.destinationPrefix.includes(':') === (family === 'ipv6')),
    );
  }
  add(route: Route): Promise<void> {
    this.rows.push(route);
    return Promise.resolve();
  }
  remove(route: Route): Promise<void> {
    this.rows = this.rows.filter((r) => r.destinationPrefix !== route.destinationPrefix);
    return Promise.resolve();
  }
}

describe('hostGwRouteDriver with IPv6', () => {
  const vnic = { index: 7, refresh: () => Promise.resolve(false) };
  const ipv6 = { network: '2001:cafe:42::/56', ownSubnet: '2001:cafe:42::/64' };

  it('one route per family for a dual-stack peer, one for an IPv4-only peer', () => {
    const d = hostGwRouteDriver({ routes: new FamilyRoutes([]), network: '10.42.0.0/16', ownSubnet: '10.42.0.0/24', vnic, ipv6 });
    expect(d.desiredFor(peer({ publicIPv6: '2001:DB8:10:0::11' }))).toEqual([
      { destinationPrefix: '10.42.1.0/24', nextHop: '192.168.10.11', interfaceIndex: 7, metric: 256 },
      { destinationPrefix: '2001:cafe:42:1::/64', nextHop: '2001:db8:10::11', interfaceIndex: 7, metric: 256 },
    ]);
    expect(d.desiredFor(peer({ ipv6Subnet: undefined, publicIPv6: undefined }))).toHaveLength(1);
  });

  it('reads both families on the vNIC inside the networks, not the own subnets, not elsewhere', async () => {
    const r = (destinationPrefix: string, nextHop: string, interfaceIndex = 7): Route => ({ destinationPrefix, nextHop, interfaceIndex, metric: 256 });
    const routes = new FamilyRoutes([
      r('10.42.1.0/24', '192.168.10.11'),
      r('10.42.0.0/24', '0.0.0.0'),
      r('2001:cafe:42:1::/64', '2001:db8:10::11'),
      r('2001:cafe:42::/64', '::'),
      r('2001:db8:10::/64', '::'),
      r('2001:cafe:42:2::/64', '2001:db8:10::12', 9),
    ]);
    const d = hostGwRouteDriver({ routes, network: '10.42.0.0/16', ownSubnet: '10.42.0.0/24', vnic, ipv6 });
    expect((await d.readActual()).map((x) => x.destinationPrefix)).toEqual(['10.42.1.0/24', '2001:cafe:42:1::/64']);
    const v4only = hostGwRouteDriver({ routes, network: '10.42.0.0/16', ownSubnet: '10.42.0.0/24', vnic });
    expect((await v4only.readActual()).map((x) => x.destinationPrefix)).toEqual(['10.42.1.0/24']);
    expect(v4only.desiredFor(peer())).toHaveLength(1);
  });

  it('a foreign route overlapping a peer route being written is told, IPv6 as IPv4', async () => {
    const r = (destinationPrefix: string, nextHop: string): Route => ({ destinationPrefix, nextHop, interfaceIndex: 7, metric: 256 });
    const routes = new FamilyRoutes([r('2001:cafe:42:1::/80', '2001:db8:10::99'), r('10.42.1.0/25', '192.168.10.99')]);
    const { log, entries } = logSink('warn');
    const d = hostGwRouteDriver({ routes, network: '10.42.0.0/16', ownSubnet: '10.42.0.0/24', vnic, ipv6, record: new RouteRecord(undefined, log), log });
    expect(await d.readActual()).toEqual([]); // both are foreign: kept, not ours
    await d.add(d.desiredFor(peer({ publicIPv6: '2001:db8:10::11' })).filter((x) => x.destinationPrefix.includes(':')));
    await d.add(d.desiredFor(peer()).filter((x) => !x.destinationPrefix.includes(':')));
    expect(entries.map((e) => [e['route'], e['peerSubnet']])).toEqual([
      ['2001:cafe:42:1::/80', '2001:cafe:42:1::/64'],
      ['10.42.1.0/25', '10.42.1.0/24'],
    ]);
  });
});

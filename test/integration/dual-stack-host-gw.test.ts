// Dual-stack host-gw on the simulated node against the fake API server: dual-stack Linux Nodes annotated
// as upstream's kube subnet manager annotates them (pkg/subnet/kube/kube.go AcquireLease: public-ipv6 and
// backend-v6-data `null` for host-gw), a Windows Node with one podCIDR per family, and an adapter with an
// IPv6 address (state file IPv6Address / IPv6PrefixLength).
import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { renderCniConfig } from '../../src/cni/conflist.js';
import { renderStatusTable } from '../../src/commands/status.js';
import { parseNetConf } from '../../src/subnet/net-conf.js';
import { bareNode, linuxFlannelNode, type FakeNode } from '../../src/demo/kube-fake/nodes.js';
import { TestCluster, waitFor, type RunningAgent, WIN_IP } from '../support/cluster.js';
import { editState } from '../support/sim-dataplane.js';
import { isFlannelError } from '../../src/basics/errors.js';
import { runFlanneld } from '../support/flanneld-process.js';
import { expectHnsVersionRefusal, PROFILES } from '../support/hns-profiles.js';
import { isFeatureSupported } from '../../src/hns/features.js';

const P = 'flannel.alpha.coreos.com/';
const WIN = 'win-1';
const WIN_IP6 = 'fd00:10::2';
const DUAL_NET_CONF = { Network: '10.244.0.0/16', EnableIPv6: true, IPv6Network: 'fd00:10:244::/56', Backend: { Type: 'host-gw' } };

function dualLinux(name: string, v4: string, v6: string, ip: string, ip6: string | undefined): FakeNode {
  const n = linuxFlannelNode({ name, podCIDR: v4, publicIP: ip, backendType: 'host-gw' });
  n.spec = { podCIDR: v4, podCIDRs: [v4, v6] };
  if (ip6 !== undefined) Object.assign(n.metadata.annotations!, { [`${P}backend-v6-data`]: 'null', [`${P}public-ipv6`]: ip6 });
  return n;
}

function windowsNode(podCIDRs: string[]): FakeNode {
  const n = bareNode({ name: WIN, podCIDR: podCIDRs[0], internalIP: WIN_IP });
  n.spec = { podCIDR: podCIDRs[0], podCIDRs };
  return n;
}

function withIPv6(sim: RunningAgent['sim']): void {
  editState(sim, (st) => st.adapters.filter((a) => a.IPAddress === WIN_IP).forEach((a) => Object.assign(a, { IPv6Address: WIN_IP6, IPv6PrefixLength: 64 })));
}

function peerRoutes(a: RunningAgent): string[] {
  return a.sim
    .snapshot()
    .routes.filter((r) => r.DestinationPrefix.startsWith('10.244.') || r.DestinationPrefix.startsWith('fd00:10:244:'))
    .map((r) => `${r.DestinationPrefix} via ${r.NextHop}`)
    .sort();
}

let cluster: TestCluster;
afterEach(async () => {
  await cluster?.stop();
});

// Dual stack needs HNS 11.10 (hcsshim hcn/hcnglobals.go IPv6DualStackVersion, "HNS 11.10+ supports Ipv6 dual
// stack"). On each profile (../support/hns-profiles.ts) the node joins dual-stack, or, on Windows Server 2019's
// 9.3, the agent refuses before it leases or creates anything. The other cases below run on the newest profile
// (the simulator's default): the HNS version enters only at this gate, which the first case covers.
describe.each(PROFILES)('dual-stack host-gw on $os (HNS $hns)', ({ version: hnsVersion }) => {
  async function start(): Promise<RunningAgent> {
    cluster = await new TestCluster().start();
    cluster.api.addNode(dualLinux('linux-1', '10.244.1.0/24', 'fd00:10:244:1::/64', '10.0.0.11', 'fd00:10::11'));
    cluster.api.addNode(dualLinux('linux-2', '10.244.2.0/24', 'fd00:10:244:2::/64', '10.0.0.12', undefined));
    cluster.api.addNode(windowsNode(['10.244.100.0/24', 'fd00:10:244:64::/64']));
    return cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: DUAL_NET_CONF, before: (sim) => withIPv6(sim), hnsVersion });
  }

  if (!isFeatureSupported(hnsVersion, 'IPv6DualStack')) {
    it('is refused before anything is leased or created: FLANNEL_ERR_HNS_VERSION naming HNS 11.10', async () => {
      const a = await start();
      expectHnsVersionRefusal(await a.outcome, 'IPv6DualStack', hnsVersion);
      expect(a.sim.snapshot().networks).toEqual([]);
      expect(peerRoutes(a)).toEqual([]);
      expect(cluster.api.getNode(WIN)!.metadata.annotations?.[`${P}public-ipv6`]).toBeUndefined();
    });
    return;
  }

  it('gets both subnets, publishes public-ipv6, writes both families to subnet.env, builds one dual-stack L2Bridge, routes each family', async () => {
    const a = await start();

    await waitFor(() => a.agent.isReady && peerRoutes(a).length === 3, 'three routes');
    expect(peerRoutes(a)).toEqual(['10.244.1.0/24 via 10.0.0.11', '10.244.2.0/24 via 10.0.0.12', 'fd00:10:244:1::/64 via fd00:10::11']);

    const ann = cluster.api.getNode(WIN)!.metadata.annotations!;
    expect(ann[`${P}public-ipv6`]).toBe(WIN_IP6);
    expect(ann[`${P}backend-v6-data`]).toBe('null');
    expect(ann[`${P}public-ip`]).toBe(WIN_IP);

    expect(readFileSync(a.subnetFile, 'utf8')).toBe(
      'FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.100.1/24\nFLANNEL_IPV6_NETWORK=fd00:10:244::/56\nFLANNEL_IPV6_SUBNET=fd00:10:244:64::1/64\nFLANNEL_MTU=1500\nFLANNEL_IPMASQ=true\n',
    );

    const st = a.sim.snapshot();
    const net = st.networks.find((n) => n.Name === 'cbr0')!;
    expect(net.Type).toBe('L2Bridge');
    expect(net.Ipams?.flatMap((i) => i.Subnets ?? []).map((s) => [s.IpAddressPrefix, s.Routes?.[0]?.DestinationPrefix, s.Routes?.[0]?.NextHop])).toEqual([
      ['10.244.100.0/24', '0.0.0.0/0', '10.244.100.1'],
      ['fd00:10:244:64::/64', '::/0', 'fd00:10:244:64::1'],
    ]);
    const ep = st.endpoints.find((e) => e.Name === 'cbr0_ep')!;
    expect(ep.IpConfigurations).toEqual([
      { IpAddress: '10.244.100.2', PrefixLength: 24 },
      { IpAddress: 'fd00:10:244:64::2', PrefixLength: 64 },
    ]);
    expect(ep.Routes?.map((r) => r.DestinationPrefix)).toEqual(['0.0.0.0/0', '::/0']);
    const forwarding = st.adapters.filter((ad) => ad.Name.startsWith('vEthernet'));
    expect(forwarding.length).toBeGreaterThanOrEqual(2);
    for (const ad of forwarding) expect([ad.Name, ad.Forwarding, ad.ForwardingV6]).toEqual([ad.Name, true, true]);

    // flanneld status: the IPv6 lease, the kubelet and kube-proxy settings, and a warning: the Node has an IPv4 InternalIP only.
    const status = await a.agent.status();
    expect(status.dualStack).toMatchObject({
      ipv6Subnet: 'fd00:10:244:64::/64',
      publicIPv6: WIN_IP6,
      kubelet: [`--node-ip=${WIN_IP},${WIN_IP6}`],
      kubeProxy: ['--cluster-cidr=10.244.0.0/16,fd00:10:244::/56', '--proxy-mode=kernelspace', 'KUBE_NETWORK=cbr0 (winkernel networkName)'],
    });
    expect(status.dualStack!.warnings).toHaveLength(1);
    const table = renderStatusTable(status);
    expect(table).toContain(`--node-ip=${WIN_IP},${WIN_IP6}`);
    expect(table).toContain('WARNING');

    // The IPv6 half of a peer changes: its route follows; it drops its public-ipv6: IPv4 only again (swept).
    cluster.api.updateNode('linux-1', (n) => void (n.metadata.annotations![`${P}public-ipv6`] = 'fd00:10::21'));
    await waitFor(() => peerRoutes(a).includes('fd00:10:244:1::/64 via fd00:10::21'), 'the IPv6 route follows the new public-ipv6');
    cluster.api.updateNode('linux-1', (n) => void delete n.metadata.annotations![`${P}public-ipv6`]);
    await waitFor(() => peerRoutes(a).length === 2, 'the IPv6 route swept');
    expect(peerRoutes(a)).toEqual(['10.244.1.0/24 via 10.0.0.11', '10.244.2.0/24 via 10.0.0.12']);
  });
});

describe('dual-stack host-gw', () => {
  // docs/compatibility.md, Dual-stack: a peer whose IPv6 half is hostile keeps its IPv4 route; the IPv6 half
  // alone is rejected, counted and named (src/peers/validate.ts). Through the built CLI: its routes, its
  // /metrics and `flanneld status`.
  it('the built CLI: a hostile IPv6 half (mapped public-ipv6, ::/0 podCIDR) is rejected alone, the IPv4 routes stay', async () => {
    cluster = await new TestCluster().start();
    cluster.api.addNode(dualLinux('linux-1', '10.244.1.0/24', 'fd00:10:244:1::/64', '10.0.0.11', '::ffff:10.0.0.11'));
    cluster.api.addNode(dualLinux('linux-2', '10.244.2.0/24', '::/0', '10.0.0.12', 'fd00:10::12'));
    cluster.api.addNode(dualLinux('linux-3', '10.244.3.0/24', 'fd00:10:244:3::/64', '10.0.0.13', 'fd00:10::13'));
    cluster.api.addNode(windowsNode(['10.244.100.0/24', 'fd00:10:244:64::/64']));
    mkdirSync(join(cluster.dir, WIN), { recursive: true });
    const state = cluster.stateOf(WIN);
    state.edit((st) => st.adapters.filter((ad) => ad.IPAddress === WIN_IP).forEach((ad) => Object.assign(ad, { IPv6Address: WIN_IP6, IPv6PrefixLength: 64 })));
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: DUAL_NET_CONF, args: [`--iface=${WIN_IP}`] });
    await agent.waitReady();
    const routes = () =>
      state
        .read()
        .routes.filter((r) => r.DestinationPrefix.startsWith('10.244.') || r.DestinationPrefix.startsWith('fd00:10:244:') || r.DestinationPrefix === '::/0')
        .map((r) => `${r.DestinationPrefix} via ${r.NextHop}`)
        .sort();
    await state.waitFor(() => routes().length === 4, 'the three IPv4 routes and linux-3 IPv6 route');
    expect(routes()).toEqual(['10.244.1.0/24 via 10.0.0.11', '10.244.2.0/24 via 10.0.0.12', '10.244.3.0/24 via 10.0.0.13', 'fd00:10:244:3::/64 via fd00:10::13']);

    const metrics = await agent.metrics();
    expect(metrics).toContain('flannel_leases_ipv6_rejected_total{reason="public-ip-not-unicast"} 1');
    expect(metrics).toContain('flannel_leases_ipv6_rejected_total{reason="subnet-outside-network"} 1');
    expect(metrics).toContain('flannel_peers 3');
    const status = await runFlanneld(['status', `--healthz-port=${agent.port}`, '--healthz-ip=127.0.0.1']);
    expect(status.stdout).toMatch(/^ {2}rejected IPv6 +linux-1 fd00:10:244:1::\/64 via ::ffff:10\.0\.0\.11: public-ip-not-unicast \(public IPv6 ::ffff:10\.0\.0\.11 /m);
    expect(status.stdout).toMatch(/^ {2}rejected IPv6 +linux-2 ::\/0 via fd00:10::12: subnet-outside-network \(IPv6 subnet ::\/0 /m);
    expect(agent.lines.filter((l) => l.message === 'peer lease IPv6 half rejected; its IPv4 route is kept').map((l) => l['node'])).toEqual(['linux-1', 'linux-2']);
    await waitFor(() => cluster.api.events({ kind: 'Node', name: WIN }).filter((e) => String(e['message']).includes('IPv6 half rejected')).length === 2, 'two Events');
  });

  it('a change of the family set rebuilds cbr0: IPv4-only, then dual-stack, then IPv4-only again', async () => {
    cluster = await new TestCluster().start();
    cluster.api.addNode(windowsNode(['10.244.100.0/24', 'fd00:10:244:64::/64']));
    const subnets = (a: RunningAgent) =>
      a.sim
        .snapshot()
        .networks.filter((n) => n.Name === 'cbr0')
        .map((n) => [n.ID, (n.Ipams ?? []).flatMap((i) => i.Subnets ?? []).map((x) => x.IpAddressPrefix)]);
    const v4 = { Network: '10.244.0.0/16', Backend: { Type: 'host-gw' } };
    let a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: v4, before: (sim) => withIPv6(sim) });
    await waitFor(() => a.agent.isReady, 'IPv4-only ready');
    const [[firstId, first]] = subnets(a) as [[string, string[]]];
    expect(first).toEqual(['10.244.100.0/24']);
    await a.stop();
    a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: DUAL_NET_CONF });
    await waitFor(() => a.agent.isReady, 'dual-stack ready');
    const [[dualId, dual]] = subnets(a) as [[string, string[]]];
    expect(dual).toEqual(['10.244.100.0/24', 'fd00:10:244:64::/64']);
    expect(dualId).not.toBe(firstId);
    await a.stop();
    a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: v4 });
    await waitFor(() => a.agent.isReady, 'IPv4-only again');
    expect(subnets(a).map(([, x]) => x)).toEqual([['10.244.100.0/24']]);
    await a.stop();
  });

  it('re-renders its dual-stack conflist in --cni-conf-dir for the lease it got', async () => {
    cluster = await new TestCluster().start();
    cluster.api.addNode(windowsNode(['10.244.100.0/24', 'fd00:10:244:64::/64']));
    const confDir = mkdtempSync(join(tmpdir(), 'flanneld-dual-cni-'));
    const stale = renderCniConfig({
      netConf: parseNetConf(JSON.stringify(DUAL_NET_CONF)),
      subnetFile: 'x',
      dataDir: 'y',
      serviceCidr: '10.96.0.0/12',
      managementSubnet: '10.0.0.0/24',
      dnsServers: ['10.96.0.10'],
      dnsSearch: ['svc.cluster.local'],
      dualStack: { subnet: '10.244.7.0/24', ipv6Subnet: 'fd00:10:244:7::/64' },
    });
    const file = join(confDir, '10-flannel.conflist');
    writeFileSync(file, JSON.stringify(stale, null, 2) + '\n');
    const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: DUAL_NET_CONF, before: (sim) => withIPv6(sim), extraArgs: [`--cni-conf-dir=${confDir}`] });
    const ranges = () => (JSON.parse(readFileSync(file, 'utf8')) as { plugins: { ipam: { ranges: { subnet: string }[][] } }[] }).plugins[0].ipam.ranges.map((r) => r[0].subnet);
    await waitFor(() => ranges()[0] === '10.244.100.0/24', 'the conflist names the new lease');
    expect(ranges()).toEqual(['10.244.100.0/24', 'fd00:10:244:64::/64']);
    await a.stop();
  });

  it('three podCIDRs are refused with upstream message', async () => {
    cluster = await new TestCluster().start();
    cluster.api.addNode(windowsNode(['10.244.100.0/24', 'fd00:10:244:64::/64', 'fd00:10:244:65::/64']));
    const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: DUAL_NET_CONF, before: (sim) => withIPv6(sim) });
    const err = await a.outcome;
    expect(isFlannelError(err, 'FLANNEL_ERR_NODE')).toBe(true);
    expect((err as Error).message).toBe('node "win-1" pod cidrs should be IPv4/IPv6 only or dualstack');
  });

  it('vxlan with IPv6 and IPv6-only are refused (FLANNEL_ERR_UNSUPPORTED)', async () => {
    cluster = await new TestCluster().start();
    cluster.api.addNode(windowsNode(['10.244.100.0/24', 'fd00:10:244:64::/64']));
    for (const [netConf, reason] of [
      [{ ...DUAL_NET_CONF, Backend: { Type: 'vxlan' } }, 'vxlan-ipv6'],
      [{ EnableIPv4: false, EnableIPv6: true, IPv6Network: 'fd00:10:244::/56', Backend: { Type: 'host-gw' } }, 'ipv6-only'],
    ] as const) {
      const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf });
      const err = await a.outcome;
      expect(isFlannelError(err, 'FLANNEL_ERR_UNSUPPORTED')).toBe(true);
      expect((err as { context: Record<string, unknown> }).context).toMatchObject({ reason });
    }
  });

  it('refuses a Windows Node without an IPv6 podCIDR (FLANNEL_ERR_NODE)', async () => {
    cluster = await new TestCluster().start();
    cluster.api.addNode(windowsNode(['10.244.100.0/24']));
    const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: DUAL_NET_CONF, before: (sim) => withIPv6(sim) });
    const err = await a.outcome;
    expect(isFlannelError(err, 'FLANNEL_ERR_NODE')).toBe(true);
    expect((err as { context: Record<string, unknown> }).context).toMatchObject({ reason: 'no-ipv6-podcidr' });
  });
});

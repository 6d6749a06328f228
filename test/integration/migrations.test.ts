// docs/install.md "Migrating from upstream flanneld on Windows", replayed: the simulated node starts in the layout
// the old install left (its HNS network, the pods' endpoints, kube-proxy's nameless source VIP endpoint,
// the old files), the built CLI takes over as docs/install.md says, and the pods' endpoints and kube-proxy's
// source VIP endpoint must survive on the same network (same IDs).
//
// The old layouts:
//  * upstream flanneld.exe (as sig-windows-tools' HostProcess flannel runs it): Overlay `flannel.4096`
//    (flannel pkg/backend/vxlan/device_windows.go; the same body as overlayNetworkFor), pods attached by
//    win-overlay as `<containerID>_<network>` endpoints, kube-proxy's source VIP from host-local (CNI 0.3.0)
//    in C:\sourcevip\sourceVip.json, and the CNI config C:\etc\cni\net.d\10-flannel.conf;
//  * microsoft/SDN Kubernetes/flannel/overlay start.ps1: Overlay `vxlan0` (net-conf `"Name": "vxlan0"`),
//    kube-proxy's source VIP from host-local (CNI 0.2.0) in C:\k\sourceVip.json.
// kube-proxy winkernel makes the source VIP endpoint nameless and local (proxier.go newSourceVIP).
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { overlayNetworkFor } from '../../src/backends/vxlan/backend.js';
import { parseNetConf } from '../../src/subnet/net-conf.js';
import type { HcnEndpoint, HcnNetwork } from '../../src/hns/schema.js';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { type SimNodeState } from '../support/sim-node.js';
import { WIN_IP, TestCluster } from '../support/cluster.js';

const WIN = 'win-1';
const SUBNET = '10.244.7.0/24';
const PEERS = ['10.244.1.0/24', '10.244.2.0/24'];

let cluster: TestCluster;
beforeEach(async () => {
  cluster = await (await new TestCluster().start()).withNodes({ name: WIN, internalIP: WIN_IP });
  cluster.api.addNode(linuxFlannelNode({ name: 'linux-2', podCIDR: PEERS[1], publicIP: '10.0.0.12', backendType: 'vxlan' }));
});
afterEach(() => cluster.stop());

interface OldNode {
  networkId: string;
  pods: HcnEndpoint[];
  kubeProxyVip: HcnEndpoint;
  dir: string;
}

/** The node as the old install left it: an Overlay network, two pods and kube-proxy's source VIP endpoint. */
function oldOverlayNode(state: SimNodeState, name: string, vni = 4096, shape: (n: HcnNetwork) => HcnNetwork = (n) => n): OldNode {
  const cfg = parseNetConf(JSON.stringify({ Network: '10.244.0.0/16', Backend: { Type: 'vxlan', VNI: vni, Name: name } })).backend;
  if (cfg.type !== 'vxlan') throw new Error('vxlan');
  const model = state.model();
  const net = model.createNetwork('HcnCreateNetwork', shape(overlayNetworkFor(cfg, SUBNET, 'Ethernet')));
  const pod = (id: string, ip: string) =>
    model.createEndpoint('HcnCreateEndpoint', net.ID!, { Name: `${id}_${name}`, IpConfigurations: [{ IpAddress: ip }], Flags: 0, SchemaVersion: { Major: 2, Minor: 0 } });
  const pods = [pod('3f2a9c41', '10.244.7.5'), pod('8be07d12', '10.244.7.6')];
  const kubeProxyVip = model.createEndpoint('HcnCreateEndpoint', net.ID!, {
    IpConfigurations: [{ IpAddress: '10.244.7.2' }],
    MacAddress: '00-15-5D-00-00-02',
    Flags: 0,
    SchemaVersion: { Major: 2, Minor: 0 },
  });
  return { networkId: net.ID!, pods, kubeProxyVip, dir: join(cluster.dir, WIN) };
}

/** What must hold after the take-over: one network holding the subnet, the same one, with every old endpoint. */
async function expectSurvived(state: SimNodeState, old: OldNode, name: string): Promise<void> {
  await state.waitFor(() => state.remoteSubnets(name).join() === PEERS.join(), `the peers programmed on ${name}`);
  const s = state.read();
  const holders = s.networks.filter((n) => n.Ipams?.some((i) => i.Subnets?.some((x) => x.IpAddressPrefix === SUBNET)));
  expect(holders.map((n) => [n.Name, n.ID])).toEqual([[name, old.networkId]]);
  for (const ep of [...old.pods, old.kubeProxyVip]) {
    expect(s.endpoints.find((e) => e.ID === ep.ID)).toMatchObject({ HostComputeNetwork: old.networkId, IpConfigurations: ep.IpConfigurations });
  }
  // kube-proxy's VIP was adopted: no second local endpoint of the agent's own.
  expect(s.endpoints.filter((e) => e.Name === `${name}_sourcevip`)).toEqual([]);
}

function vipArgs(dir: string, compatFile: string): string[] {
  return [`--source-vip-file=${join(dir, 'run', 'sourcevip.json')}`, `--source-vip-compat-files=${compatFile}`, `--cni-ipam-data-dir=${join(dir, 'cni')}`];
}

describe('migrations replayed on the simulated node (docs/install.md, Migrating)', () => {
  it('from upstream flanneld / sig-windows-tools: flannel.4096 is reused; pods and the kube-proxy source VIP survive', async () => {
    const state = cluster.stateOf(WIN);
    const old = oldOverlayNode(state, 'flannel.4096');
    mkdirSync(join(old.dir, 'sourcevip'), { recursive: true });
    const compat = join(old.dir, 'sourcevip', 'sourceVip.json');
    writeFileSync(compat, '{"cniVersion":"0.3.0","ips":[{"version":"4","address":"10.244.7.2/24","gateway":"10.244.7.1"}],"dns":{}}\r\n');
    const agent = await cluster.startProcess({
      nodeName: WIN,
      netConf: { Network: '10.244.0.0/16', Backend: { Type: 'vxlan', VNI: 4096, Port: 4789 } },
      args: [`--iface=${WIN_IP}`, ...vipArgs(old.dir, compat)],
    });
    await agent.waitReady();
    await agent.waitForLog("adopting kube-proxy's source VIP endpoint");
    await expectSurvived(state, old, 'flannel.4096');
  });

  it('from microsoft/SDN with "Name": "vxlan0" kept (the docs/install.md path): vxlan0 is reused by name', async () => {
    const state = cluster.stateOf(WIN);
    const old = oldOverlayNode(state, 'vxlan0');
    const compat = join(old.dir, 'k', 'sourceVip.json');
    mkdirSync(join(old.dir, 'k'), { recursive: true });
    writeFileSync(compat, '{"cniVersion":"0.2.0","ip4":{"ip":"10.244.7.2/24","gateway":"10.244.7.1"},"dns":{}}\r\n');
    const agent = await cluster.startProcess({
      nodeName: WIN,
      // microsoft/SDN Kubernetes/flannel/overlay/net-conf.json (commit 86a902f0), lower-case keys as it has them,
      // with this cluster's Network: no VNI (flanneld.exe defaults to 4096 on Windows).
      netConf: '{\n  "Network": "10.244.0.0/16",\n  "Backend": {\n    "name": "vxlan0",\n    "type": "vxlan"\n  }\n}\n',
      args: [`--iface=${WIN_IP}`, ...vipArgs(old.dir, compat)],
    });
    await agent.waitReady();
    await expectSurvived(state, old, 'vxlan0');
  });

  it('from microsoft/SDN with the Name lost (net-conf rewritten without it): vxlan0 is adopted, never a second network on the subnet', async () => {
    const state = cluster.stateOf(WIN);
    const old = oldOverlayNode(state, 'vxlan0');
    const compat = join(old.dir, 'k', 'sourceVip.json');
    mkdirSync(join(old.dir, 'k'), { recursive: true });
    writeFileSync(compat, '{"cniVersion":"0.2.0","ip4":{"ip":"10.244.7.2/24","gateway":"10.244.7.1"},"dns":{}}\r\n');
    const agent = await cluster.startProcess({
      nodeName: WIN,
      netConf: { Network: '10.244.0.0/16', Backend: { Type: 'vxlan', VNI: 4096, Port: 4789 } },
      args: [`--iface=${WIN_IP}`, ...vipArgs(old.dir, compat)],
    });
    await agent.waitReady();
    const adopted = await agent.waitForLog("adopting the HNS network that already holds this node's subnet");
    expect(adopted).toMatchObject({ level: 'warn', network: 'vxlan0', id: old.networkId, configured: 'flannel.4096', subnet: SUBNET });
    await expectSurvived(state, old, 'vxlan0');
    expect(state.network('flannel.4096')).toBeUndefined();
  });

  it('a network on the subnet that the backend would not make (another VNI) is refused with FLANNEL_ERR_NETWORK_CLASH naming both; nothing is created', async () => {
    const state = cluster.stateOf(WIN);
    const old = oldOverlayNode(state, 'vxlan0', 4097);
    const agent = await cluster.startProcess({
      nodeName: WIN,
      netConf: { Network: '10.244.0.0/16', Backend: { Type: 'vxlan', VNI: 4096, Port: 4789 } },
      args: [`--iface=${WIN_IP}`, ...vipArgs(old.dir, 'none')],
    });
    expect(await agent.exited).toBe(1);
    const err = agent.lines.find((l) => l.level === 'error');
    expect(err).toMatchObject({ code: 'FLANNEL_ERR_NETWORK_CLASH', network: 'flannel.4096', holder: 'vxlan0', subnet: SUBNET });
    expect(err?.message).toContain('"Name": "vxlan0"');
    expect(state.read().networks.map((n) => n.ID)).toEqual([old.networkId]);
    expect(state.read().endpoints).toHaveLength(3);
  });

  // The adoption check and the reuse check are one matcher (overlayMatches / l2BridgeMatches): before,
  // a holder with the right type and VSID was adopted although its adapter or first subnet differed, and
  // the reuse check then deleted it, pods and all.
  it.each<[string, (n: HcnNetwork) => HcnNetwork]>([
    ['bound to another adapter', (n) => ({ ...n, Policies: [{ Type: 'NetAdapterName', Settings: { NetworkAdapterName: 'Ethernet 2' } }] })],
    [
      'with the subnet second in its Ipam',
      (n) => ({ ...n, Ipams: [{ Type: 'Static', Subnets: [{ ...n.Ipams![0].Subnets![0], IpAddressPrefix: '10.244.99.0/24' }, n.Ipams![0].Subnets![0]] }] }),
    ],
  ])('vxlan: a holder the backend would not reuse (%s) is refused with FLANNEL_ERR_NETWORK_CLASH, never adopted then deleted', async (_what, shape) => {
    const state = cluster.stateOf(WIN);
    state.addAdapter({ name: 'Ethernet 2', ip: '192.168.5.7' });
    const old = oldOverlayNode(state, 'vxlan0', 4096, shape);
    const agent = await cluster.startProcess({
      nodeName: WIN,
      netConf: { Network: '10.244.0.0/16', Backend: { Type: 'vxlan', VNI: 4096, Port: 4789 } },
      args: [`--iface=${WIN_IP}`, ...vipArgs(old.dir, 'none')],
    });
    expect(await agent.exited).toBe(1);
    expect(agent.lines.find((l) => l.level === 'error')).toMatchObject({ code: 'FLANNEL_ERR_NETWORK_CLASH', holder: 'vxlan0', subnet: SUBNET });
    expect(state.read().networks.map((n) => n.ID)).toEqual([old.networkId]);
    expect(
      state
        .read()
        .endpoints.map((e) => e.ID)
        .sort(),
    ).toEqual([...old.pods, old.kubeProxyVip].map((e) => e.ID).sort());
  });

  it('host-gw: an L2Bridge holder bound to another adapter is refused with FLANNEL_ERR_NETWORK_CLASH; its pod endpoint survives', async () => {
    const state = cluster.stateOf(WIN);
    state.addAdapter({ name: 'Ethernet 2', ip: '192.168.5.7' });
    const model = state.model();
    const net = model.createNetwork('HcnCreateNetwork', {
      Name: 'l2bridge',
      Type: 'L2Bridge',
      Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: SUBNET, Routes: [{ NextHop: '10.244.7.1', DestinationPrefix: '0.0.0.0/0' }] }] }],
      Policies: [{ Type: 'NetAdapterName', Settings: { NetworkAdapterName: 'Ethernet 2' } }],
      SchemaVersion: { Major: 2, Minor: 0 },
    });
    const pod = model.createEndpoint('HcnCreateEndpoint', net.ID!, {
      Name: '3f2a9c41_l2bridge',
      IpConfigurations: [{ IpAddress: '10.244.7.5' }],
      Flags: 0,
      SchemaVersion: { Major: 2, Minor: 0 },
    });
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: { Network: '10.244.0.0/16', Backend: { Type: 'host-gw' } }, args: [`--iface=${WIN_IP}`] });
    expect(await agent.exited).toBe(1);
    expect(agent.lines.find((l) => l.level === 'error')).toMatchObject({ code: 'FLANNEL_ERR_NETWORK_CLASH', holder: 'l2bridge', subnet: SUBNET });
    expect(state.read().networks.map((n) => n.ID)).toEqual([net.ID]);
    expect(state.read().endpoints.map((e) => e.ID)).toEqual([pod.ID]);
  });

  it('host-gw: an L2Bridge network of an earlier install under another name than cbr0, holding the subnet, is adopted; the pods keep their endpoints', async () => {
    const state = cluster.stateOf(WIN);
    const model = state.model();
    // An L2Bridge network as HNS v1 POST /networks/ makes it (hostgw_windows.go: Subnets with the .1 gateway).
    const net = model.createNetwork('HcnCreateNetwork', {
      Name: 'l2bridge',
      Type: 'L2Bridge',
      Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: SUBNET, Routes: [{ NextHop: '10.244.7.1', DestinationPrefix: '0.0.0.0/0' }] }] }],
      Policies: [{ Type: 'NetAdapterName', Settings: { NetworkAdapterName: 'Ethernet' } }],
      SchemaVersion: { Major: 2, Minor: 0 },
    });
    const pod = model.createEndpoint('HcnCreateEndpoint', net.ID!, {
      Name: '3f2a9c41_l2bridge',
      IpConfigurations: [{ IpAddress: '10.244.7.5' }],
      Flags: 0,
      SchemaVersion: { Major: 2, Minor: 0 },
    });
    cluster.api.updateNode('linux-1', (n) => void (n.metadata.annotations!['flannel.alpha.coreos.com/backend-type'] = 'host-gw'));
    cluster.api.updateNode('linux-2', (n) => void (n.metadata.annotations!['flannel.alpha.coreos.com/backend-type'] = 'host-gw'));
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: { Network: '10.244.0.0/16', Backend: { Type: 'host-gw' } }, args: [`--iface=${WIN_IP}`] });
    await agent.waitReady();
    expect(await agent.waitForLog("adopting the HNS network that already holds this node's subnet")).toMatchObject({ network: 'l2bridge', configured: 'cbr0' });
    await state.waitFor(() => state.peerRoutes('10.244.0.0/16').length === 2, 'the peer routes');
    const s = state.read();
    expect(s.networks.map((n) => [n.Name, n.ID])).toEqual([['l2bridge', net.ID]]);
    expect(s.endpoints.find((e) => e.ID === pod.ID)).toMatchObject({ HostComputeNetwork: net.ID });
    expect(s.endpoints.some((e) => e.Name === 'l2bridge_ep')).toBe(true);
  });
});

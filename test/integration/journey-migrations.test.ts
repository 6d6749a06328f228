// docs/install.md "Migrating from upstream flanneld on Windows", as journeys: the simulated node starts as
// the old install left it (its HNS network on the node's subnet, two pods' endpoints, kube-proxy's nameless
// source VIP endpoint and the old files), the documented steps of the path run on it in order (the old
// agent's removal is NOT_EXECUTED: no old agent runs on the simulated node), and the recorded CNI ADD and
// DEL of a pod pass against what the steps left, while the old pods' and kube-proxy's endpoints survive on
// the same network (same IDs).
//
// The old layouts (as test/integration/migrations.test.ts builds them, there with the agent alone):
//  * upstream flanneld.exe run as a Windows service: Overlay `flannel.4096`, its net-conf.json (VNI 4096,
//    port 4789), kube-proxy's source VIP from host-local (CNI 0.2.0) in C:\k\sourceVip.json, and an older
//    release of the four CNI plugins beside a plugin of someone else's in C:\opt\cni\bin;
//  * microsoft/SDN Kubernetes/flannel/overlay start.ps1: Overlay `vxlan0`, its net-conf.json
//    (Kubernetes/flannel/overlay/net-conf.json: lower-case keys, `"name": "vxlan0"`, no VNI), kube-proxy's
//    source VIP in C:\k\sourceVip.json; and the same node whose net-conf.json lost the name (rewritten by hand);
//  * sig-windows-tools' HostProcess flannel (upstream flanneld.exe): Overlay `flannel.4096` (flannel
//    pkg/backend/vxlan/device_windows.go; the body overlayNetworkFor makes), pods attached by its sdnoverlay
//    as `<containerID>_flannel.4096`, kube-proxy's source VIP from host-local (CNI 0.3.0) in
//    C:\sourcevip\sourceVip.json, and its CNI config C:\etc\cni\net.d\10-flannel.conf
//    (kubernetes-sigs/sig-windows-tools hostprocess/flannel/flanneld/flannel-overlay.yml cni-conf-containerd.json,
//    filled by its start.ps1: ConvertTo-Json, UTF-8 with a BOM).
// kube-proxy winkernel makes the source VIP endpoint nameless and local (proxier.go newSourceVIP).
import { expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { overlayNetworkFor } from '../../src/backends/vxlan/backend.js';
import { parseNetConf } from '../../src/subnet/net-conf.js';
import type { HcnEndpoint } from '../../src/hns/schema.js';
import { journeySteps } from '../support/install-doc.js';
import { journeyFrame, JourneyNode, replayPod, replayProblems } from '../support/journey.js';
import { JourneyCluster } from '../support/journey-cluster.js';
import { NodeConsole } from '../support/journey-service.js';
import { exe } from '../support/cni-releases.js';

const IMAGE = 'REGISTRY/flanneld-windows:0.1.0';
const VXLAN_NET_CONF = '{\n  "Network": "10.244.0.0/16",\n  "Backend": {\n    "Type": "vxlan",\n    "VNI": 4096,\n    "Port": 4789\n  }\n}\n';

const frame = journeyFrame();

interface OldNode {
  networkId: string;
  endpoints: HcnEndpoint[];
}

/** The old install's Overlay network on the node's subnet, two pods and kube-proxy's nameless source VIP endpoint. */
function oldOverlay(n: JourneyNode, name: string): OldNode {
  const cfg = parseNetConf(JSON.stringify({ Network: '10.244.0.0/16', Backend: { Type: 'vxlan', VNI: 4096, Name: name } })).backend;
  if (cfg.type !== 'vxlan') throw new Error('vxlan');
  const model = n.state.model();
  const net = model.createNetwork('HcnCreateNetwork', overlayNetworkFor(cfg, n.podCIDR, 'Ethernet'));
  const pod = (id: string, ip: string) =>
    model.createEndpoint('HcnCreateEndpoint', net.ID!, { Name: `${id}_${name}`, IpConfigurations: [{ IpAddress: ip }], Flags: 0, SchemaVersion: { Major: 2, Minor: 0 } });
  const vip = model.createEndpoint('HcnCreateEndpoint', net.ID!, {
    IpConfigurations: [{ IpAddress: '10.244.100.2' }],
    MacAddress: '00-15-5D-00-00-02',
    Flags: 0,
    SchemaVersion: { Major: 2, Minor: 0 },
  });
  return { networkId: net.ID!, endpoints: [pod('3f2a9c41', '10.244.100.5'), pod('8be07d12', '10.244.100.6'), vip] };
}

/** The old network is the one pods use, with every old endpoint on it, and kube-proxy's VIP adopted (no second one). */
function expectSurvived(n: JourneyNode, old: OldNode, name: string): void {
  const s = n.state.read();
  expect(s.networks.map((x) => [x.Name, x.ID])).toEqual([[name, old.networkId]]);
  for (const ep of old.endpoints) expect(s.endpoints.find((e) => e.ID === ep.ID)).toMatchObject({ HostComputeNetwork: old.networkId, IpConfigurations: ep.IpConfigurations });
  expect(s.endpoints.filter((e) => e.Name === `${name}_sourcevip`)).toEqual([]);
}

/** sig-windows-tools' 10-flannel.conf for this cluster, as its start.ps1 writes it (see the header). */
const SIG_WINDOWS_TOOLS_CONF = `\ufeff{
    "name":  "flannel.4096",
    "cniVersion":  "0.2.0",
    "type":  "flannel",
    "capabilities":  { "portMappings":  true, "dns":  true },
    "delegate":  {
        "type":  "sdnoverlay",
        "AdditionalArgs":  [
            { "Name":  "EndpointPolicy", "Value":  { "Type":  "OutBoundNAT", "Settings":  { "Exceptions":  [ "10.96.0.0/12", "10.244.0.0/16" ] } } },
            { "Name":  "EndpointPolicy", "Value":  { "Type":  "SDNROUTE", "Settings":  { "DestinationPrefix":  "10.96.0.0/12", "NeedEncap":  true } } },
            { "Name":  "EndpointPolicy", "Value":  { "Type":  "ProviderAddress", "Settings":  { "ProviderAddress":  "10.0.0.2" } } }
        ]
    }
}`;

it("sig-windows-tools' HostProcess flannel: the DaemonSet's steps reuse flannel.4096, move its 10-flannel.conf aside, and the recorded ADD and DEL pass", async () => {
  const node = await frame.start({ backend: 'vxlan' });
  const old = oldOverlay(node, 'flannel.4096');
  const netd = node.onHost('C:\\etc\\cni\\net.d');
  mkdirSync(netd, { recursive: true });
  writeFileSync(join(netd, '10-flannel.conf'), SIG_WINDOWS_TOOLS_CONF);
  mkdirSync(node.onHost('C:\\sourcevip'), { recursive: true });
  writeFileSync(node.onHost('C:\\sourcevip\\sourceVip.json'), '{"cniVersion":"0.3.0","ips":[{"version":"4","address":"10.244.100.2/24","gateway":"10.244.100.1"}],"dns":{}}\r\n');

  const cluster = new JourneyCluster(node, VXLAN_NET_CONF, { reference: IMAGE, image: { main: frame.build.main } });
  await cluster.runSteps(journeySteps('migration-sig-windows-tools'), frame.build.main);
  const agent = await cluster.agentReady();
  await agent.waitForLog("adopting kube-proxy's source VIP endpoint");
  expect(readFileSync(join(netd, '10-flannel.conf.bak'), 'utf8')).toBe(SIG_WINDOWS_TOOLS_CONF);
  expect(existsSync(join(netd, '10-flannel.conf'))).toBe(false);
  expect(node.loadedConflist().file).toBe('10-flannel.conflist');
  expectSurvived(node, old, 'flannel.4096');

  const r = await replayPod(node, { full: false });
  expect(r.network).toBe('flannel.4096');
  expect(replayProblems(node, r)).toBe('');
  expectSurvived(node, old, 'flannel.4096');
}, 120_000);

/** The start.ps1 path's steps on the old node's console (the release unpacked, the kubeconfig in place). */
async function startPs1(name: string, n: JourneyNode): Promise<NodeConsole> {
  n.writeKubeconfig('C:\\k\\config');
  const shell = new NodeConsole(n, frame.build.main);
  await shell.runSteps(journeySteps(name));
  await shell.serviceReady();
  return shell;
}

/** A file on the node. */
function put(n: JourneyNode, at: string, text: string | Buffer): void {
  mkdirSync(join(n.onHost(at), '..'), { recursive: true });
  writeFileSync(n.onHost(at), text);
}

it('upstream flanneld.exe as a service: start.ps1 reuses flannel.4096, replaces only the four plugins, and the recorded ADD and DEL pass', async () => {
  const node = await frame.start({ backend: 'vxlan' });
  const old = oldOverlay(node, 'flannel.4096');
  put(node, 'C:\\etc\\kube-flannel\\net-conf.json', VXLAN_NET_CONF);
  put(node, 'C:\\k\\sourceVip.json', '{"cniVersion":"0.2.0","ip4":{"ip":"10.244.100.2/24","gateway":"10.244.100.1"},"dns":{}}\r\n');
  for (const p of ['flannel.exe', 'win-overlay.exe', 'win-bridge.exe', 'host-local.exe', 'nat.exe']) put(node, `C:\\opt\\cni\\bin\\${p}`, exe(p, 'v1.0.0-old'));
  await startPs1('migration-upstream-flanneld', node);
  expectSurvived(node, old, 'flannel.4096');
  for (const p of ['flannel.exe', 'win-overlay.exe', 'win-bridge.exe', 'host-local.exe']) expect(readFileSync(node.onHost(`C:\\opt\\cni\\bin\\${p}`))).toEqual(exe(p, 'test'));
  expect(readFileSync(node.onHost('C:\\opt\\cni\\bin\\nat.exe'))).toEqual(exe('nat.exe', 'v1.0.0-old')); // someone else's: kept
  const r = await replayPod(node, { full: false });
  expect(r.network).toBe('flannel.4096');
  expect(replayProblems(node, r)).toBe('');
}, 120_000);

/** microsoft/SDN Kubernetes/flannel/overlay/net-conf.json (commit 86a902f0), with this cluster's Network. */
const SDN_NET_CONF = '{\n  "Network": "10.244.0.0/16",\n  "Backend": {\n    "name": "vxlan0",\n    "type": "vxlan"\n  }\n}\n';

it.each([
  ['with "Name": "vxlan0" kept', SDN_NET_CONF, 'Keeping Backend.Name vxlan0'],
  ['with the name lost from net-conf.json', '{"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan"}}', "adopting the HNS network that already holds this node's subnet"],
])(
  'microsoft/SDN %s: start.ps1 takes vxlan0 over, the conflist names it, and the recorded ADD and DEL pass',
  async (_what, netConf, said) => {
    const node = await frame.start({ backend: 'vxlan' });
    const old = oldOverlay(node, 'vxlan0');
    put(node, 'C:\\etc\\kube-flannel\\net-conf.json', netConf);
    put(node, 'C:\\k\\sourceVip.json', '{"cniVersion":"0.2.0","ip4":{"ip":"10.244.100.2/24","gateway":"10.244.100.1"},"dns":{}}\r\n');
    const shell = await startPs1('migration-microsoft-sdn', node);
    expect([...shell.output, ...node.agents.flatMap((a) => a.lines.map((l) => l.message))].join('\n')).toContain(said);
    expect(shell.output.join('\n')).toContain('The CNI config names HNS network vxlan0, the one flanneld runs');
    expectSurvived(node, old, 'vxlan0');
    const r = await replayPod(node, { full: false });
    expect(r.network).toBe('vxlan0');
    expect(replayProblems(node, r)).toBe('');
  },
  120_000,
);

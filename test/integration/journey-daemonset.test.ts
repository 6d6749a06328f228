// docs/install.md "4b. flanneld as a HostProcess DaemonSet" as a journey, on a fresh simulated Windows
// node: the operator's documented steps in order (test/support/install-doc.ts, journeySteps), run in a
// checkout of deploy/ (test/support/journey-cluster.ts: the overlay copied, its cluster-config.yaml written
// by `flanneld cluster-config` from the cluster's kubeadm-config and kube-proxy ConfigMaps, `kubectl apply -k`
// rendered by kubectl itself and run by the kubelet: the init containers' PowerShell lines, then the
// agent's), then the recorded CNI plugin calls of a pod ADD and DEL replayed against what the steps left
// (test/fixtures/cni-traces): win-bridge's on host-gw, win-overlay's on vxlan (after the net-conf steps of
// "2. The net-conf (vxlan)" moved the shared ConfigMap to VNI 4096 / port 4789), sdnbridge's dual-stack.
// What stands in for the node and the cluster: test/support/journey.ts and journey-cluster.ts.
import { expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { docBlocks, INSTALL_MD, journeySteps } from '../support/install-doc.js';
import { journeyFrame, replayPod, replayProblems, type Backend } from '../support/journey.js';
import { JourneyCluster, type Image } from '../support/journey-cluster.js';

// kubectl's rendering and the conflist, read field by field.
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-return */
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** The Linux manifest's net-conf.json (flannel-io/flannel Documentation/kube-flannel.yml): vxlan, no VNI. */
const UPSTREAM_NET_CONF = '{\n  "Network": "10.244.0.0/16",\n  "EnableNFTables": false,\n  "Backend": {\n    "Type": "vxlan"\n  }\n}\n';
const HOST_GW_NET_CONF = '{\n  "Network": "10.244.0.0/16",\n  "Backend": {\n    "Type": "host-gw"\n  }\n}\n';
const DUAL_STACK_NET_CONF = '{\n  "Network": "10.244.0.0/16",\n  "EnableIPv6": true,\n  "IPv6Network": "fd00:10:244::/56",\n  "Backend": {\n    "Type": "host-gw"\n  }\n}\n';
/** The image docs/install.md "1. The package" builds and pushes. */
const IMAGE = 'REGISTRY/flanneld-windows:0.1.0';

const frame = journeyFrame();

async function journey(name: string, backend: Backend, netConf: string, opts: { dualStack?: boolean; image?: Image } = {}): Promise<JourneyCluster> {
  const node = await frame.start({ backend, dualStack: opts.dualStack });
  const cluster = new JourneyCluster(node, netConf, { reference: IMAGE, image: opts.image ?? { main: frame.build.main } });
  await cluster.runSteps(journeySteps(name), frame.build.main);
  await cluster.agentReady();
  return cluster;
}

it('host-gw: the documented steps leave a ready node whose win-bridge conflist the recorded pod ADD and DEL run against, as recorded', async () => {
  await journey('daemonset-host-gw', 'host-gw', HOST_GW_NET_CONF);
  const r = await replayPod(frame.node, { full: true });
  expect(r.network).toBe('cbr0');
  expect(replayProblems(frame.node, r)).toBe('');
}, 120_000);

it('vxlan: the net-conf steps move the shared ConfigMap to VNI 4096 / port 4789 as documented; the recorded win-overlay ADD and DEL pass', async () => {
  const cluster = await journey('daemonset-vxlan', 'vxlan', UPSTREAM_NET_CONF);
  // What "2. The net-conf (vxlan)" says the shared ConfigMap must say, and the pods read it.
  const said = JSON.parse(docBlocks(INSTALL_MD).find((b) => b.section === '2. The net-conf (vxlan)' && b.lang === 'json')!.text) as Record<string, unknown>;
  const applied = JSON.parse(cluster.flannelCfg['data']['net-conf.json'] as string) as Record<string, unknown>;
  expect({ Network: applied['Network'], Backend: applied['Backend'] }).toEqual(said);
  const r = await replayPod(frame.node, { full: true });
  expect(r.network).toBe('flannel.4096');
  expect(replayProblems(frame.node, r)).toBe('');
}, 120_000);

it('dual-stack host-gw: the conflist is rendered from the Node before the agent runs; the recorded sdnbridge ADD gets both addresses, and DEL removes it', async () => {
  await journey('daemonset-dual-stack', 'host-gw', DUAL_STACK_NET_CONF, {
    dualStack: true,
    image: { main: frame.build.main, plugins: [...frame.build.releases, ...frame.build.dualStack] },
  });
  // Rendered by install-cni-config before the agent first ran (from the Node's podCIDRs), with the node's
  // addresses from the simulated host's adapter as the agent reads them: IPv4 and IPv6 alike.
  const conflist = JSON.parse(readFileSync(frame.node.onHost('C:\\etc\\cni\\net.d\\10-flannel.conflist'), 'utf8')) as Obj;
  expect([conflist['name'], conflist['cniVersion']]).toEqual(['cbr0', '0.2.0']);
  const plugin = conflist['plugins'][0] as Obj;
  expect(plugin['type']).toBe('sdnbridge');
  expect(plugin['ipam']['ranges']).toEqual([
    [{ subnet: '10.244.3.0/24', rangeStart: '10.244.3.3', gateway: '10.244.3.2' }],
    [{ subnet: 'fd00:10:244:3::/64', rangeStart: 'fd00:10:244:3::3', gateway: 'fd00:10:244:3::2' }],
  ]);
  const policies = (plugin['AdditionalArgs'] as Obj[]).map((a) => a['Value'] as Obj);
  expect(policies.filter((p) => p['Type'] === 'OutBoundNAT').map((p) => p['Settings']['Exceptions'])).toEqual([
    ['10.244.0.0/16', '10.96.0.0/12', '10.0.0.0/24'],
    ['fd00:10:244::/56', 'fd00:10:96::/112', 'fd00:10::/64'],
  ]);
  // The IPv6 Service range from kubeadm-config through cluster-config's FLANNELD_IPV6_SERVICE_CIDR.
  expect(policies.filter((p) => p['Type'] === 'SDNRoute').map((p) => p['Settings']['DestinationPrefix'])).toEqual([
    '10.96.0.0/12',
    'fd00:10:96::/112',
    '10.0.0.2/32',
    'fd00:10::2/128',
  ]);
  // The plugins the conflist runs, from the image's release files.
  expect(readFileSync(frame.node.onHost('C:\\opt\\cni\\bin\\sdnbridge.exe')).toString('latin1')).toContain(' sdnbridge.exe test ');
  const r = await replayPod(frame.node, { full: false });
  expect(r.endpoint?.IpConfigurations).toEqual([
    { IpAddress: '10.244.3.10', PrefixLength: 24 },
    { IpAddress: 'fd00:10:244:3::10', PrefixLength: 64 },
  ]);
  expect(replayProblems(frame.node, r)).toBe('');
  expect(frame.node.state.read().endpoints.map((e) => e.Name)).toEqual(['cbr0_ep']);
}, 120_000);

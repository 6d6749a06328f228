// Uninstalling, as a journey (docs/install.md "Uninstalling", which defers to deploy/README.md "Removing" for
// the DaemonSet): the node installed by the documented steps, a pod's recorded ADD and DEL passing, then the
// documented removal steps in order, and at the end the node clean (no HNS network or endpoint, no files of
// the agent's, no CNI config) and the recorded calls of a pod ADD and DEL on a node without the network
// replayed as recorded (`*-network-missing`: the plugin finds no network, the failed sandbox's DEL succeeds).
// What stands in for the node and the cluster: test/support/journey.ts and journey-cluster.ts.
import { expect, it } from '@jest/globals';
import { existsSync, readdirSync } from 'node:fs';
import { journeySteps } from '../support/install-doc.js';
import { journeyFrame, JourneyNode, replayNetworkMissing, replayPod, replayProblems } from '../support/journey.js';
import { JourneyCluster } from '../support/journey-cluster.js';
import { NodeConsole } from '../support/journey-service.js';
import { describeMismatches } from '../support/cni-replay.js';

const IMAGE = 'REGISTRY/flanneld-windows:0.1.0';
const VXLAN_NET_CONF = '{\n  "Network": "10.244.0.0/16",\n  "Backend": {\n    "Type": "vxlan",\n    "VNI": 4096,\n    "Port": 4789\n  }\n}\n';

const frame = journeyFrame();

/** Nothing of the agent's is left on the node. */
function expectClean(n: JourneyNode): void {
  const s = n.state.read();
  expect({ networks: s.networks.map((x) => x.Name), endpoints: s.endpoints.map((x) => x.Name) }).toEqual({ networks: [], endpoints: [] });
  const run = n.onHost('C:\\run\\flannel');
  expect(existsSync(run) ? readdirSync(run) : []).toEqual([]);
  expect(readdirSync(n.onHost('C:\\etc\\cni\\net.d'))).toEqual([]);
}

it('DaemonSet: delete the overlay, wait for its pods, apply the cleanup DaemonSet: the node is clean, and a pod ADD finds no network', async () => {
  const node = await frame.start({ backend: 'vxlan' });
  const cluster = new JourneyCluster(node, VXLAN_NET_CONF, { reference: IMAGE, image: { main: frame.build.main } });
  const steps = journeySteps('daemonset-uninstall');
  const removal = steps.findIndex((s) => s.file === 'deploy/README.md');
  await cluster.runSteps(steps.slice(0, removal), frame.build.main);
  await cluster.agentReady();
  const r = await replayPod(node, { full: true });
  expect(replayProblems(node, r)).toBe('');

  // deploy/README.md "Removing", step 2: "set your image in overlays/my-cluster/cleanup/kustomization.yaml".
  cluster.setImage('deploy/overlays/my-cluster/cleanup', IMAGE, { main: frame.build.main });
  await cluster.runSteps(steps.slice(removal), frame.build.main);
  const cleanup = cluster.pods.get('kube-flannel-ds-windows-cleanup');
  expect(cleanup?.inits).toEqual([{ name: 'cleanup', code: 0 }]);
  expect(node.transcript.join('\n')).toMatch(/removed HNS network flannel\.4096/);
  expectClean(node);
  expect(describeMismatches(await replayNetworkMissing(node, 'vxlan', r.network))).toBe('');
}, 120_000);

it('Windows service: service uninstall, then cleanup on the node: the node is clean, and a pod ADD finds no network', async () => {
  const node = await frame.start({ backend: 'vxlan' });
  node.writeKubeconfig('C:\\k\\config');
  const shell = new NodeConsole(node, frame.build.main);
  const steps = journeySteps('service-uninstall');
  const removal = steps.findIndex((s) => s.section === 'Uninstalling');
  await shell.runSteps(steps.slice(0, removal));
  await shell.serviceReady();
  const r = await replayPod(node, { full: true });
  expect(r.network).toBe('flannel.4096');
  expect(replayProblems(node, r)).toBe('');

  await shell.runSteps(steps.slice(removal));
  expect(shell.scm.services.size).toBe(0);
  expect(shell.output.join('\n')).toMatch(/removed HNS network flannel\.4096/);
  expectClean(node);
  expect(describeMismatches(await replayNetworkMissing(node, 'vxlan', r.network))).toBe('');
}, 120_000);

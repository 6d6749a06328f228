// docs/install.md "4a. flanneld as a Windows service" (and its dual-stack forms) as journeys, on a fresh
// simulated Windows node: the release zip unpacked in C:\k\flannel, a kubeconfig at C:\k\config (the
// prerequisites), then the documented PowerShell lines in order on the node's console
// (test/support/journey-service.ts): scripts/start.ps1 interpreted whole (its CNI plugin install, net-conf.json,
// CNI config, the service install and start through `flanneld.exe service` and the stand-in service host, the
// wait for the agent's boot record and /readyz), or the "by hand" lines. Each ends with the recorded CNI
// plugin calls of a pod ADD and DEL replayed against what the steps left (test/fixtures/cni-traces).
// The documented node address (192.168.1.21) is this node's (test/support/journey.ts NODE_ADDRESSES).
import { expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { journeySteps } from '../support/install-doc.js';
import { journeyFrame, replayPod, replayProblems, type SceneOptions } from '../support/journey.js';
import { NodeConsole } from '../support/journey-service.js';

const frame = journeyFrame();

/** The node with the release unpacked and the kubeconfig in place; the journey's steps run on its console. */
async function serviceJourney(name: string, scene: SceneOptions): Promise<NodeConsole> {
  const node = await frame.start(scene);
  node.writeKubeconfig('C:\\k\\config');
  const shell = new NodeConsole(node, frame.build.main);
  await shell.runSteps(journeySteps(name));
  await shell.serviceReady();
  return shell;
}

it('start.ps1 (overlay): the node ends ready with the service running, and the recorded win-overlay ADD and DEL pass', async () => {
  const shell = await serviceJourney('service-start-ps1', { backend: 'vxlan' });
  expect(shell.output.join('\n')).toContain('The CNI config names HNS network flannel.4096, the one flanneld runs');
  const r = await replayPod(frame.node, { full: true });
  expect(r.network).toBe('flannel.4096');
  expect(replayProblems(frame.node, r)).toBe('');
}, 120_000);

it('by hand: the plugins, the service installed and started as documented; the recorded win-overlay ADD and DEL pass', async () => {
  await serviceJourney('service-by-hand', { backend: 'vxlan' });
  const r = await replayPod(frame.node, { full: true });
  expect(replayProblems(frame.node, r)).toBe('');
}, 120_000);

it('start.ps1 dual-stack (l2bridge): sdnbridge installed, the conflist rendered once the agent wrote subnet.env; the recorded sdnbridge ADD and DEL pass', async () => {
  const shell = await serviceJourney('service-dual-stack', { backend: 'host-gw', dualStack: true });
  expect(shell.output.join('\n')).toContain('Dual-stack node');
  const conflist = JSON.parse(readFileSync(frame.node.onHost('C:\\etc\\cni\\net.d\\10-flannel.conflist'), 'utf8')) as { plugins: { type: string }[] };
  expect(conflist.plugins[0].type).toBe('sdnbridge');
  const r = await replayPod(frame.node, { full: false });
  expect(replayProblems(frame.node, r)).toBe('');
}, 120_000);

it('start.ps1 -IPv4Only (overlay in the dual-stack cluster): the node runs IPv4-only, and the recorded win-overlay ADD and DEL pass', async () => {
  const shell = await serviceJourney('service-ipv4-only', { backend: 'vxlan', ipv4OnlyNode: true });
  const netConf = JSON.parse(readFileSync(frame.node.onHost('C:\\etc\\kube-flannel\\net-conf.json'), 'utf8')) as Record<string, unknown>;
  expect(netConf).toMatchObject({ EnableIPv6: true, IPv6Network: 'fd00:10:244::/56', Backend: { Type: 'vxlan', VNI: 4096, Port: 4789 } });
  expect(shell.output.join('\n')).not.toContain('Dual-stack node');
  const r = await replayPod(frame.node, { full: true });
  expect(replayProblems(frame.node, r)).toBe('');
}, 120_000);

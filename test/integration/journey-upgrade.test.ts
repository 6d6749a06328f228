// Upgrading, as a journey (docs/install.md "Upgrading"): the node installed by the documented steps, a pod
// added (the recorded CNI ADD replayed), then the documented upgrade steps with a new build, and the pod's
// endpoint kept (same HNS ID) across the upgrade, the recorded DEL of that pod passing afterwards.
// What stands in for the node and the cluster: test/support/journey.ts and journey-cluster.ts.
import { expect, it } from '@jest/globals';
import { join } from 'node:path';
import { journeySteps } from '../support/install-doc.js';
import { journeyFrame, replayPodAdd, replayPodDel, replayProblems } from '../support/journey.js';
import { JourneyCluster } from '../support/journey-cluster.js';
import { NodeConsole } from '../support/journey-service.js';
import { pinnedBuild } from '../support/pinned-build.js';

const IMAGE = 'REGISTRY/flanneld-windows:0.1.0';
const NEW_IMAGE = 'REGISTRY/flanneld-windows:0.1.1';
const VXLAN_NET_CONF = '{\n  "Network": "10.244.0.0/16",\n  "Backend": {\n    "Type": "vxlan",\n    "VNI": 4096,\n    "Port": 4789\n  }\n}\n';

const frame = journeyFrame({ buildIn: 'old' });

/** The new build: another copy of the built CLI with the same pins (what a new image or zip holds). */
const newBuild = () => pinnedBuild(join(frame.dir, `new-${Date.now()}`), { releases: frame.build.releases.map((r) => r.pin), dualStack: frame.build.dualStack.map((r) => r.pin) });

it('DaemonSet: a new image tag applied reruns the pod (init containers, then the agent); the pod added before keeps its endpoint and its DEL passes', async () => {
  const node = await frame.start({ backend: 'vxlan' });
  const cluster = new JourneyCluster(node, VXLAN_NET_CONF, { reference: IMAGE, image: { main: frame.build.main } });
  const steps = journeySteps('daemonset-upgrade');
  const upgrade = steps.findIndex((s) => s.section === 'Upgrading');
  await cluster.runSteps(steps.slice(0, upgrade), frame.build.main);
  const old = await cluster.agentReady();
  const added = await replayPodAdd(node, { full: true });
  expect(replayProblems(node, added)).toBe('');

  // "build and push the new image (a new tag), set `newTag` in your overlay", then the documented apply.
  cluster.setImage('deploy/overlays/my-cluster', NEW_IMAGE, { main: newBuild() });
  await cluster.runSteps(steps.slice(upgrade), frame.build.main);
  expect(old.child.exitCode).toBe(0); // the old pod's agent stopped on SIGTERM
  expect(cluster.pods.get('kube-flannel-ds-windows')?.image).toBe(NEW_IMAGE);
  const agent = await cluster.agentReady();
  expect(agent).not.toBe(old);
  // The network and the pod's endpoint were reused, not recreated.
  expect(node.state.read().endpoints.find((e) => e.ID === added.endpoint?.ID)).toMatchObject({
    Name: added.endpoint?.Name,
    HostComputeNetwork: added.endpoint?.HostComputeNetwork,
  });
  expect(replayProblems(node, { add: [], del: await replayPodDel(node, added, { full: true }) })).toBe('');
}, 120_000);

it('Windows service: service stop, the new zip unpacked over the old folder, service start; the pod added before keeps its endpoint and its DEL passes', async () => {
  const node = await frame.start({ backend: 'vxlan' });
  node.writeKubeconfig('C:\\k\\config');
  const shell = new NodeConsole(node, frame.build.main);
  const steps = journeySteps('service-upgrade');
  const upgrade = steps.findIndex((s) => s.section === 'Upgrading');
  await shell.runSteps(steps.slice(0, upgrade));
  const old = await shell.serviceReady();
  const added = await replayPodAdd(node, { full: true });
  expect(replayProblems(node, added)).toBe('');

  const upgraded = newBuild();
  // "`flanneld.exe service stop`, unpack the new zip over the old folder, then `flanneld.exe service start`".
  await shell.runSteps(steps.slice(upgrade), (s) => {
    if (/service start$/.test(s.text)) shell.unpack(upgraded);
  });
  expect(old.child.exitCode).toBe(0); // stopped by the service stop (Ctrl+C), cleanly
  const agent = await shell.serviceReady();
  expect(agent).not.toBe(old);
  expect(shell.build('C:\\k\\flannel\\flanneld.exe')).toBe(upgraded);
  expect(node.state.read().endpoints.find((e) => e.ID === added.endpoint?.ID)).toMatchObject({
    Name: added.endpoint?.Name,
    HostComputeNetwork: added.endpoint?.HostComputeNetwork,
  });
  expect(replayProblems(node, { add: [], del: await replayPodDel(node, added, { full: true }) })).toBe('');
}, 120_000);

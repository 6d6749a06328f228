// The simulated node is shared truth: the built CLI runs against a state file that the test (as
// kube-proxy, an admin or HNS would) changes from outside while the agent runs.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { VXLAN_NET_CONF, waitFor, TestCluster } from '../support/cluster.js';
import { runFlanneld } from '../support/flanneld-process.js';
import { SimulatedDataplane } from '../../src/simulator/model.js';

const WIN = 'win-1';
let cluster: TestCluster;
beforeEach(async () => {
  cluster = await (await new TestCluster().start()).withNodes({ name: WIN, internalIP: '10.0.0.7' });
});
afterEach(() => cluster.stop());

describe('the state file is the node, shared by every process', () => {
  it('flanneld cleanup against a running agent: the network stays deleted until the agent sees it gone and builds a new one', async () => {
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: VXLAN_NET_CONF, args: ['--iface=10.0.0.7'] });
    await agent.waitReady();
    await agent.state.waitFor(() => agent.state.remoteSubnets('flannel.4096').join() === '10.244.1.0/24', 'the peer policy');
    const oldId = agent.state.network('flannel.4096')?.ID;

    // --force: the agent holds flanneld.lock (cleanup refuses beside a running agent without it).
    const r = await runFlanneld([
      'cleanup',
      '--force',
      `--net-config-path=${join(agent.dir, 'net-conf.json')}`,
      `--subnet-file=${agent.subnetFile}`,
      '--dataplane=simulated',
      `--dataplane-state=${agent.state.path}`,
    ]);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/^removed HNS network flannel\.4096 \(Overlay/m);
    expect(agent.state.read().networks.filter((n) => n.ID === oldId)).toEqual([]);

    // A new peer makes the agent write: its HcnModifyNetwork finds no network (as on Windows), so the agent
    // creates a new network (a new ID: its stale copy of the node never overwrites what cleanup did) and
    // programs every peer on it.
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-2', podCIDR: '10.244.2.0/24', publicIP: '10.0.0.12', backendType: 'vxlan' }));
    await waitFor(async () => /flannel_dataplane_errors_total\{op="hns\.\w+"\} [1-9]/.test(await agent.metrics()), 'a failed HNS call');
    await agent.state.waitFor(
      (s) => s.networks.some((n) => n.Name === 'flannel.4096' && n.ID !== oldId) && agent.state.remoteSubnets('flannel.4096').join() === '10.244.1.0/24,10.244.2.0/24',
      'the rebuilt network with both peers',
    );
    expect(agent.state.read().networks.filter((n) => n.ID === oldId)).toEqual([]);
    expect(await agent.metrics()).toMatch(/^flannel_network_rebuilds_total\{result="ok"\} 1$/m);
  });

  it('a faults rule installed from outside fails the matching call until it is spent, then the agent converges', async () => {
    const state = cluster.stateOf(WIN);
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: VXLAN_NET_CONF, args: ['--iface=10.0.0.7'] });
    await agent.waitReady();
    await state.waitFor(() => state.remoteSubnets('flannel.4096').join() === '10.244.1.0/24', 'the first peer');

    state.addFault({ op: 'HcnModifyNetwork', match: '10.244.3.0/24', hresult: '0x803B002F', remaining: 2 });
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-3', podCIDR: '10.244.3.0/24', publicIP: '10.0.0.13', backendType: 'vxlan' }));
    await state.waitFor(() => state.remoteSubnets('flannel.4096').join() === '10.244.1.0/24,10.244.3.0/24', 'the second peer after the faults', 30_000);
    expect(state.read().faults).toEqual([{ op: 'HcnModifyNetwork', match: '10.244.3.0/24', hresult: '0x803B002F', remaining: 0 }]);
    expect(await agent.metrics()).toMatch(/^flannel_dataplane_errors_total\{op="hns\.addNetworkPolicies"\} [2-9]/m);
    // the rule's op is the call name /metrics counts for the simulated dataplane
    expect(await agent.metrics()).toMatch(/^flannel_simulated_dataplane_calls_total\{op="HcnModifyNetwork"\} \d+$/m);
  });
});

// The state file's lock (src/simulator/store.ts) held by another live process (here the test itself, as a
// slow kube-proxy or an admin's script would) while SIGTERM arrives: the agent answers the signal while it
// waits for the lock, and exits without touching the lock. Before, the wait kept polling until the lock
// went stale (LOCK_STALE_MS, then broke it and carried on) and, on a node without a state file yet, the
// constructor blocked the thread for LOCK_WAIT_MS; either way the service manager's stop went unanswered.
describe('SIGTERM while another process holds the state lock', () => {
  it.each([
    ['the node has its state file', true],
    ['a fresh node (no state file yet)', false],
  ])(
    '%s: the agent stops while the lock is still held, and leaves it alone',
    async (_what, withFile) => {
      const state = cluster.stateOf(WIN);
      if (withFile) new SimulatedDataplane({ statePath: state.path, nodeIP: '10.0.0.7' });
      const lock = `${state.path}.lock`;
      const held = JSON.stringify({ pid: process.pid, at: Date.now() });
      mkdirSync(dirname(lock), { recursive: true });
      writeFileSync(lock, held);
      try {
        const agent = await cluster.startProcess({ nodeName: WIN, netConf: VXLAN_NET_CONF, args: ['--iface=10.0.0.7'] });
        let exited = false;
        void agent.exited.then(() => (exited = true));
        // A dataplane call has begun (counted as it enters, before it waits for the lock) and cannot finish.
        await waitFor(
          async () => /^flannel_simulated_dataplane_calls_total\{op="[^"]+"\} [1-9]/m.test(await agent.metrics().catch(() => '')),
          'a dataplane call waiting for the lock',
          {
            timeoutMs: 20_000,
            failIf: () => (exited ? `the agent exited: ${agent.dump()}` : undefined),
          },
        );
        agent.child.kill('SIGTERM');
        await waitFor(() => exited, 'the agent exited after SIGTERM', 45_000);
        expect(await agent.exited).toBe(0);
        expect(agent.lines.map((l) => l.message)).toEqual(expect.arrayContaining(['shutting down', 'stopped']));
        expect(readFileSync(lock, 'utf8')).toBe(held);
      } finally {
        rmSync(lock, { force: true });
      }
    },
    60_000,
  );
});

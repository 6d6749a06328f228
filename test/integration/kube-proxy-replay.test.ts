// The kube-proxy replay tier (docs/testing.md "The kube-proxy replay tier"): what the real kube-proxy
// (winkernel, v1.25) did against the agent's network (test/fixtures/kube-proxy-traces, recorded under Wine
// through the stand-in DLLs), replayed in CI without Wine or the binary. For each backend the agent builds its
// network on the simulated node with the recorded net-conf (in this process: test/support/cluster.ts); the pod
// endpoint the recording harness made is made the same way; then every call kube-proxy made is sent again, in
// order, as another process on the node (test/support/kube-proxy-replay.ts), while the agent keeps running
// and resyncing. A reply the simulator gave in the recording is compared field by field, a placeholder's is
// checked against hcsshim's schema, and the node after the run against the recorded stateAfter.
//
// What kube-proxy needs of the agent's network, asserted on the live node: its remote endpoints carry the
// provider address the agent's RemoteSubnetRoute gives the peer's subnet (vxlan; none on host-gw), its load
// balancers the source VIP the agent reserved (vxlan; the host-gw run gave kube-proxy none), and the agent
// makes no create, modify or delete call while kube-proxy runs: through its resyncs and through a restart in
// the middle (vxlan-agent-restart.json), kube-proxy's endpoints and load balancers stay as kube-proxy left them.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import type { HcnEndpoint } from '../../src/hns/schema.js';
import { TestCluster, WIN_IP, waitFor, type RunningAgent } from '../support/cluster.js';
import { PASSES_ENDED, waitForIncrease } from '../support/agent-signals.js';
import { bindAgentNetwork, compareState, describeMismatches, macsSent, newBindings, type ReplayBindings } from '../support/cni-replay.js';
import {
  agentRestartAt,
  checkPlaceholderAnswer,
  checkServicePath,
  kubeProxyHnsVersion,
  kubeProxyObjects,
  loadKubeProxyTrace,
  replayKubeProxy,
  writesSince,
  type KubeProxyTrace,
} from '../support/kube-proxy-replay.js';
import { PROFILES, sameVersion } from '../support/hns-profiles.js';
import { formatHnsVersion } from '../../src/hns/features.js';
import type { HnsVersion } from '../../src/hns/schema.js';

const WIN = 'win-1';
const POD_CIDR = '10.244.100.0/24';
/** The recording's peer (inputs.kubernetesObjects): linux-1, 10.244.1.0/24 at 10.0.0.11, VtepMAC aa:bb:cc:00:00:0b. */
const PEER = { name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', vtepMAC: 'aa:bb:cc:00:00:0b' };

let cluster: TestCluster;
beforeEach(async () => {
  cluster = await new TestCluster().start();
});
afterEach(() => cluster.stop());

/** The agent on win-1 as recorded (its source VIP in its own file), on a node whose HNS reports `version` (default: the recorded one). */
function startAgent(trace: KubeProxyTrace, version: HnsVersion = kubeProxyHnsVersion(trace)): RunningAgent {
  const dir = join(cluster.dir, WIN);
  return cluster.startAgent({
    nodeName: WIN,
    ip: WIN_IP,
    netConf: trace.agent.netConf,
    extraArgs: [`--source-vip-file=${join(dir, 'run', 'flannel', 'sourcevip.json')}`, '--source-vip-compat-files=none', `--cni-ipam-data-dir=${join(dir, 'cni', 'networks')}`],
    // Every process on a node reports its HNS version from the state file (docs/simulator.md `hnsVersion`).
    before: (sim) => sim.store.update((s) => void (s.hnsVersion = `${version.Major}.${version.Minor}`)),
  });
}

async function ready(running: RunningAgent): Promise<void> {
  await waitFor(
    () => {
      const s = running.agent.network?.status();
      return s !== undefined && s.listed && s.inSync && s.peersProgrammed === 1 && s.peersDesired === 1;
    },
    'the agent network with its peer programmed',
    { timeoutMs: 20_000 },
  );
}

/** The recorded scene: win-1 and linux-1 in the API server, the agent running, the pod endpoint the harness made. */
async function scene(trace: KubeProxyTrace, version?: HnsVersion): Promise<{ running: RunningAgent; b: ReplayBindings }> {
  cluster.addWindowsNode(WIN, POD_CIDR, WIN_IP);
  cluster.api.addNode(linuxFlannelNode({ ...PEER, backendType: trace.backend }));
  const running = startAgent(trace, version);
  await ready(running);
  const b = newBindings();
  const agentEndpoint = trace.backend === 'vxlan' ? `${trace.network}_sourcevip` : 'cbr0_ep';
  bindAgentNetwork(running.sim, b, trace.network, agentEndpoint);
  // inputs.podEndpointMadeByHarness: the pod endpoint, made directly in the simulator before kube-proxy started.
  const pod = (trace.stateBefore.endpoints as (HcnEndpoint & { ID: string })[]).find((e) => e.ID === '<POD_ENDPOINT_ID>')!;
  const { ID: _id, HostComputeNetwork: _net, ...settings } = pod;
  b.ids.set('<POD_ENDPOINT_ID>', running.sim.createEndpoint('HcnCreateEndpoint', b.ids.get('<NETWORK_ID>')!, settings).ID!);
  const before = compareState(trace.stateBefore, running.sim, b, 'stateBefore', macsSent(trace.calls));
  expect(describeMismatches(before)).toBe('');
  return { running, b };
}

/** What kube-proxy needs of the agent's network, on the live node after the run. */
function checkKubeProxyNeeds(trace: KubeProxyTrace, running: RunningAgent): void {
  const vip = trace.backend === 'vxlan' ? (JSON.parse(readFileSync(join(cluster.dir, WIN, 'run', 'flannel', 'sourcevip.json'), 'utf8')) as { ip: string }).ip : undefined;
  expect(vip).toBe(trace.backend === 'vxlan' ? trace.agent.agentEndpointIp : undefined);
  expect(trace.kubeProxy.args.includes(`--source-vip=${vip}`)).toBe(vip !== undefined);
  checkServicePath(trace, running.sim.snapshot(), PEER, vip);
}

describe.each<[string]>([['vxlan-load-balancers-stubbed'], ['host-gw-load-balancers-stubbed']])('the recorded kube-proxy run %s replayed against the agent’s network', (name) => {
  const trace = loadKubeProxyTrace(name);

  it('every answer the simulator gave is given again, every placeholder answer fits hcsshim; the agent resyncs and writes nothing of kube-proxy’s', async () => {
    const { running, b } = await scene(trace);
    const agentCalls = new Map(running.sim.calls);
    const r = await replayKubeProxy(trace, running.statePath, b);
    expect(describeMismatches(r.mismatches)).toBe('');
    const objects = kubeProxyObjects(running.sim.snapshot());
    // The agent's resync runs over kube-proxy's objects (two more passes, each with its read of HNS).
    await waitForIncrease(running.metrics, PASSES_ENDED, 2, 'two reconcile passes after kube-proxy ran');
    expect(describeMismatches(compareState(trace.stateAfter, running.sim, b, 'stateAfter', macsSent(trace.calls)))).toBe('');
    expect(kubeProxyObjects(running.sim.snapshot())).toEqual(objects);
    expect(writesSince(running.sim.calls, agentCalls)).toEqual({});
    checkKubeProxyNeeds(trace, running);
  }, 60_000);
});

// On each HNS profile (../support/hns-profiles.ts). kube-proxy's calls depend on the version it reads: winkernel
// runs dual-stack where HNS has IPv6DualStack (hcsshim hcn/hcnglobals.go IPv6DualStackVersion, 11.10; the
// host-gw recording did), and HNS 9.3 lacks it. So the recorded calls replay only on the profile of the version
// they recorded (13.2, Windows Server 2022: above). On every other profile the agent builds what kube-proxy found
// when it started (the recording's stateBefore: the network, its peer's RemoteSubnetRoute with the provider
// address kube-proxy's remote endpoints take, the source VIP endpoint), which `scene` compares.
describe.each<[string]>([['vxlan-load-balancers-stubbed'], ['host-gw-load-balancers-stubbed']])('what the recorded kube-proxy run %s found, on each HNS profile', (name) => {
  const trace = loadKubeProxyTrace(name);
  const recorded = PROFILES.filter((p) => sameVersion(p.version, kubeProxyHnsVersion(trace)));

  it('its recorded HNS version is one profile’s: the replay above runs on it', () => {
    expect(recorded.map((p) => p.hns)).toEqual(['13.2']);
  });

  it.each(PROFILES.filter((p) => !recorded.includes(p)))(
    'on $os (HNS $hns): the network and the source VIP kube-proxy found',
    async ({ version }) => {
      const { running } = await scene(trace, version);
      expect(running.sim.snapshot().hnsVersion).toBe(formatHnsVersion(version));
    },
    60_000,
  );
});

describe('vxlan-agent-restart: the agent restarted while kube-proxy runs', () => {
  const trace = loadKubeProxyTrace('vxlan-agent-restart');

  it('the restarted agent adopts the network and the source VIP, makes no create, modify or delete call, and kube-proxy’s objects stay', async () => {
    const { running, b } = await scene(trace);
    const at = agentRestartAt(trace)!;
    expect(at).toBeDefined();
    const handles = new Map<number, number>();
    const first = await replayKubeProxy(trace, running.statePath, b, { calls: trace.calls.filter((c) => c.tMs < at), handles });
    expect(describeMismatches(first.mismatches)).toBe('');
    const network = running.sim.getNetworkByName(trace.network)!.ID;
    const vipEndpoint = running.sim.listEndpoints().find((e) => e.Name === `${trace.network}_sourcevip`)!.ID;
    const objects = kubeProxyObjects(running.sim.snapshot());
    const firstWrites = writesSince(running.sim.calls, new Map());

    await running.stop();
    const again = startAgent(trace);
    await ready(again);
    await waitForIncrease(again.metrics, PASSES_ENDED, 2, 'two reconcile passes of the restarted agent');
    expect(kubeProxyObjects(again.sim.snapshot())).toEqual(objects);
    expect(again.sim.getNetworkByName(trace.network)!.ID).toBe(network);
    expect(again.sim.listEndpoints().find((e) => e.Name === `${trace.network}_sourcevip`)!.ID).toBe(vipEndpoint);
    // Its whole life, start-up included: reads only (the recording's agentCallsDuringKubeProxy).
    expect(writesSince(again.sim.calls, new Map())).toEqual({});

    const rest = await replayKubeProxy(trace, again.statePath, b, { calls: trace.calls.filter((c) => c.tMs >= at), handles });
    expect(describeMismatches(rest.mismatches)).toBe('');
    expect(describeMismatches(compareState(trace.stateAfter, again.sim, b, 'stateAfter', macsSent(trace.calls)))).toBe('');
    expect(writesSince(again.sim.calls, new Map())).toEqual({});
    // The control: the count sees writes (the first agent's start-up made its network, source VIP and peer).
    expect(Object.keys(firstWrites).length).toBeGreaterThan(0);
    checkKubeProxyNeeds(trace, again);
  }, 90_000);
});

// The replay can fail: a node that answers kube-proxy otherwise than recorded is reported where it does.
describe('a planted break fails the kube-proxy replay', () => {
  const trace = loadKubeProxyTrace('vxlan-load-balancers-stubbed');

  it('HNS refusing kube-proxy’s first load balancer (a `faults` rule): the replay names that call', async () => {
    const { running, b } = await scene(trace);
    running.sim.store.update((s) => void (s.faults = [{ op: 'HcnCreateLoadBalancer', hresult: '0x803B0013', remaining: 1 }]));
    const r = await replayKubeProxy(trace, running.statePath, b);
    const first = trace.calls.find((c) => c.fn === 'HcnCreateLoadBalancer')!;
    expect(r.mismatches.map((m) => m.where)).toContain(`seq ${first.seq} HcnCreateLoadBalancer hr`);
  }, 60_000);

  it('a placeholder answer outside hcsshim’s schema is reported; one inside it is not compared with the placeholder', () => {
    const query = trace.calls.find((c) => c.fn === 'HcnQueryLoadBalancerProperties')!;
    const lb = { ...(query.reply['out'] as object), ID: '6B0D3C5E-7A1F-4B2C-9D8E-0F1A2B3C4D5E' };
    expect(checkPlaceholderAnswer(query, { hr: 0, out: JSON.stringify({ ...lb, SourceVIP: '10.244.100.99' }), err: null }, 'q')).toEqual([]);
    expect(checkPlaceholderAnswer(query, { hr: 0, out: JSON.stringify({ ...lb, Vip: '10.96.0.10' }), err: null }, 'q')).toHaveLength(1);
    expect(checkPlaceholderAnswer(query, { hr: 0, out: JSON.stringify({ ...lb, ID: 'lb-1' }), err: null }, 'q')).toHaveLength(1);
    const simulated = trace.calls.find((c) => c.answeredBy === 'simulator')!;
    expect(checkPlaceholderAnswer(simulated, { hr: 0 }, 's')).toBe('compare');
  });
});

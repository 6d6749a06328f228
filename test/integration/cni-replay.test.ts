// The CNI replay tier (docs/testing.md "The CNI replay tier"): what the real win-overlay.exe / win-bridge.exe did
// when they attached pods to the agent's network (test/fixtures/cni-traces, recorded under Wine through the
// stand-in DLLs), replayed in CI without Wine or the binaries. For each backend the agent builds its network
// on the simulated node with the recorded flags and net-conf (in this process: test/support/cluster.ts);
// its own outputs that the plugins consume (the conflist, subnet.env, host-local's reservation of .2) are
// checked against the recorded inputs; then every recorded call of the backend's scenarios is sent again,
// in order, through the stand-ins' seam (test/support/cni-replay.ts), each answer compared field by field
// with the recording, and the node's state after each file with the recorded stateAfter.
//
// The network name the calls use comes from the agent's own conflist, as the plugins take it from there
// (libcni passes the list's `name`, the delegate looks the HNS network up by it): a conflist that names
// another network than the agent runs fails the replay, and so does a network the plugins would read
// differently (the planted breaks below).
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { agentNetworkName, DEFAULT_DNS_SEARCH, renderCniConfig } from '../../src/cni/conflist.js';
import { HRESULT } from '../../src/hns/errors.js';
import { parseNetConf } from '../../src/subnet/net-conf.js';
import { SimulatedDataplane } from '../../src/simulator/model.js';
import { overlayNetworkFor } from '../../src/backends/vxlan/backend.js';
import { TestCluster, WIN_IP, waitFor, type RunningAgent } from '../support/cluster.js';
import { logSink } from '../support/log-sink.js';
import type { Logger } from '../../src/basics/log.js';
import { removeNetwork, editState } from '../support/sim-dataplane.js';
import {
  SCENARIOS,
  bindAgentNetwork,
  compareState,
  describeMismatches,
  loadState,
  loadTrace,
  macsSent,
  newBindings,
  recordedHnsVersion,
  replayScenario,
  type ReplayBindings,
  type Trace,
} from '../support/cni-replay.js';
import { PROFILES, sameVersion } from '../support/hns-profiles.js';
import { formatHnsVersion } from '../../src/hns/features.js';

const WIN = 'win-1';
const POD_CIDR = '10.244.100.0/24';
/** The recording's cni-config flags (test/fixtures/cni-traces/README.md, "The agent and the node"). */
const CNI_CONFIG = { serviceCidr: '10.96.0.0/12', managementIP: WIN_IP, managementSubnet: '10.0.0.0/24', dnsServers: ['10.96.0.10'], dnsSearch: [DEFAULT_DNS_SEARCH] };
/** The recording ran the Windows build with its default paths; the conflist carries them. */
const WIN_PATHS = { subnetFile: 'C:\\run\\flannel\\subnet.env', dataDir: 'C:\\var\\lib\\cni\\flannel' };
const PLUGINS = ['flannel.exe', 'win-overlay.exe', 'win-bridge.exe', 'host-local.exe'];

type Backend = keyof typeof SCENARIOS;

let cluster: TestCluster;
beforeEach(async () => {
  cluster = await new TestCluster().start();
});
afterEach(() => cluster.stop());

interface Node {
  running: RunningAgent;
  ipamDir: string;
  confDir: string;
}

/** The recorded scene: win-1 (podCIDR 10.244.100.0/24 at 10.0.0.2) and the flannel peer linux-1. */
async function startNode(
  backend: Backend,
  netConf: unknown,
  before?: (sim: SimulatedDataplane) => void,
  conf?: (subnetFile: string) => Record<string, unknown>,
  log?: Logger,
): Promise<Node> {
  cluster.addWindowsNode(WIN, POD_CIDR, WIN_IP);
  cluster.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: backend }));
  const dir = join(cluster.dir, WIN);
  const ipamDir = join(dir, 'cni', 'networks');
  const confDir = join(dir, 'cni', 'net.d');
  const binDir = join(dir, 'cni', 'bin');
  mkdirSync(binDir, { recursive: true });
  mkdirSync(confDir, { recursive: true });
  for (const p of PLUGINS) writeFileSync(join(binDir, p), 'MZ');
  if (conf) writeFileSync(join(confDir, '10-flannel.conflist'), JSON.stringify(conf(join(dir, 'run', 'flannel', 'subnet.env')), null, 2) + '\n');
  // The Windows defaults the recording ran with, on this host's paths: the source VIP and the host-local store.
  const running = cluster.startAgent({
    nodeName: WIN,
    ip: WIN_IP,
    netConf,
    extraArgs: [
      `--source-vip-file=${join(dir, 'run', 'flannel', 'sourcevip.json')}`,
      '--source-vip-compat-files=none',
      `--cni-ipam-data-dir=${ipamDir}`,
      `--cni-conf-dir=${confDir}`,
      `--cni-bin-dir=${binDir}`,
    ],
    before: before && ((sim) => before(sim)),
    cniCheckIntervalMs: 100,
    log,
  });
  await waitFor(
    () => {
      const s = running.agent.network?.status();
      // subnet.env follows the complete list (the first start holds it until the podCIDR is known ours).
      return s !== undefined && s.listed && s.inSync && s.peersProgrammed === s.peersDesired && s.peersDesired === 1 && existsSync(running.subnetFile);
    },
    'the agent network with its peer programmed and subnet.env written',
    { timeoutMs: 20_000 },
  );
  return { running, ipamDir, confDir };
}

/** `flanneld cni-config` with the recording's flags, for the network the agent runs (its boot record). */
function conflistOf(node: Node, trace: Trace): Record<string, unknown> {
  const netConf = parseNetConf(JSON.stringify(trace.agent!.netConf));
  return renderCniConfig({ netConf, networkName: agentNetworkName(netConf, node.running.subnetFile), ...WIN_PATHS, ...CNI_CONFIG });
}

/** The file names and contents of host-local's store for `network`. */
function store(dir: string): Record<string, string> {
  return Object.fromEntries(readdirSync(dir).map((f) => [f, readFileSync(join(dir, f), 'utf8')]));
}

/** Replay a backend's files in order against the agent's node; returns every mismatch, by file. */
async function replayBackend(node: Node, traces: Trace[], b: ReplayBindings, liveName: string): Promise<string[]> {
  const problems: string[] = [];
  const sim = node.running.sim;
  for (const trace of traces) {
    if (trace.scenario.endsWith('add-network-missing')) {
      // As recorded: the network deleted (the agent's endpoint with it), every network creation failing.
      sim.injections.failRate(1, HRESULT.E_FAIL, /^(HcnCreateNetwork|HNSCall POST \/networks)/);
      removeNetwork(sim, liveName);
      await waitFor(() => node.running.agent.network?.status().networkMissing === true, 'the agent to see its network gone', { timeoutMs: 20_000 });
    }
    const r = await replayScenario(trace, sim, b);
    if (r.mismatches.length > 0) problems.push(`${trace.scenario}:\n${describeMismatches(r.mismatches)}\n${r.transcript.slice(0, 5).join('\n')}`);
  }
  return problems;
}

// On each HNS profile (../support/hns-profiles.ts) the agent builds its network for the plugins, the node's HNS
// reporting the profile's version to every process (the state file's `hnsVersion`). The plugins' calls replay
// only on the profile of the version they recorded (13.2, Windows Server 2022: recordedHnsVersion): they ask
// it (`GET /globals/version`) for hcsshim's feature checks (hcn/hcnglobals.go: V2ApiVersion 9.2, DSRVersion
// for loopbackDSR), whose outcome decides what they call next, and the recorded answer is 13.2. On the other
// profiles the agent's outputs and network are checked against what the plugins read: the first file's inputs
// and its stateBefore.
describe.each<[Backend, string, string]>([
  ['vxlan', 'flannel.4096', 'flannel.4096_sourcevip'],
  ['host-gw', 'cbr0', 'cbr0_ep'],
])('the recorded %s plugin calls replayed against the agent’s network', (backend, network, agentEndpoint) => {
  const traces = SCENARIOS[backend].map((s) => loadTrace(s));
  const recorded = recordedHnsVersion(traces[0])!;

  it('their recorded HNS version is one profile’s, and every file recorded the same', () => {
    expect(PROFILES.filter((p) => sameVersion(p.version, recorded)).map((p) => p.hns)).toEqual(['13.2']);
    for (const t of traces) expect([t.scenario, recordedHnsVersion(t) ?? recorded]).toEqual([t.scenario, recorded]);
  });

  describe.each(PROFILES)('on $os (HNS $hns)', ({ version, hns }) => {
    const replays = sameVersion(version, recorded);
    const what = replays ? 'and every recorded answer is given again' : `and the network is the one the plugins found (their calls replay on HNS ${formatHnsVersion(recorded)})`;

    it(`the agent’s conflist, subnet.env and .2 reservation are the recorded inputs, ${what}`, async () => {
      const first = traces[0];
      const node = await startNode(backend, first.agent!.netConf, (sim) => sim.store.update((st) => void (st.hnsVersion = hns)));
      const conflist = conflistOf(node, first);
      expect(JSON.stringify(conflist)).toBe(JSON.stringify(first.inputs.conflist));
      // libcni's stdin for flannel.exe: the single plugin with the list's name and cniVersion.
      const plugin = (conflist.plugins as Record<string, unknown>[])[0];
      expect(JSON.stringify({ ...plugin, name: conflist.name, cniVersion: conflist.cniVersion })).toBe(first.inputs.stdin);
      expect(readFileSync(node.running.subnetFile, 'utf8')).toBe(first.inputs.subnetEnv);
      expect(store(join(node.ipamDir, network))).toEqual(first.inputs.hostLocalStore!.before);

      const b = newBindings({ names: { [first.network]: String(conflist.name) } });
      bindAgentNetwork(node.running.sim, b, String(conflist.name), agentEndpoint);
      if (replays) expect(await replayBackend(node, traces, b, String(conflist.name))).toEqual([]);
      else {
        // The agent's network and endpoint (the pod's namespace, which containerd makes, is not the agent's).
        const { networks, endpoints } = first.stateBefore;
        expect(describeMismatches(compareState({ networks, endpoints }, node.running.sim, b, 'stateBefore', macsSent(first.calls)))).toBe('');
      }
    }, 60_000);
  });
});

describe('a planted break fails the replay', () => {
  /** vxlan-add replayed alone on a node loaded with its recorded stateBefore, after `plant` changed it. */
  async function replayPlanted(plant: (sim: SimulatedDataplane) => void, names: Record<string, string> = {}, edit?: (t: Trace) => void): Promise<string[]> {
    const trace = loadTrace('vxlan-add');
    edit?.(trace);
    const sim = new SimulatedDataplane({ nodeIP: WIN_IP });
    const b = newBindings();
    loadState(sim, trace.stateBefore, b);
    expect(compareState(trace.stateBefore, sim, b, 'loaded')).toEqual([]);
    b.names = Object.entries(names);
    plant(sim);
    const r = await replayScenario(trace, sim, b, { checkStateBefore: false });
    return r.mismatches.map((m) => m.where);
  }

  it('the unchanged recorded state replays without a mismatch (the control)', async () => {
    expect(await replayPlanted(() => undefined)).toEqual([]);
  });

  it("the network's gateway moved (the v1 Subnets[0].GatewayAddress win-overlay reads): the replay reports it", async () => {
    const where = await replayPlanted((sim) =>
      editState(sim, (s) => {
        s.networks[0].Ipams![0].Subnets![0].Routes![0].NextHop = '10.244.100.254';
      }),
    );
    expect(where).toContain('seq 1 HNSCall out.Output[0].Subnets[0].GatewayAddress');
  });

  it('the conflist names another network than the node has: the lookups find nothing and the replay reports it', async () => {
    const where = await replayPlanted(() => undefined, { 'flannel.4096': 'flannel.4097' });
    expect(where).toContain('seq 2 HcnEnumerateNetworks out');
  });
});

// The simulator accepts what the plugins really send (the control above: mixed-case MACs, three OutBoundNAT
// policies, Health {Extra: {}}, the all-zero endpoint ID, no PrefixLength) and still refuses what HNS refuses
// (src/simulator/refusals.ts refuseEndpointAddress): the same ADD with another address is refused.
describe('the recorded ADD with an address HNS refuses', () => {
  const withAddress = (ip: string) => (t: Trace) => {
    const create = t.calls.find((c) => c.fn === 'HcnCreateEndpoint')!;
    (create.args.settings as { IpConfigurations: { IpAddress: string }[] }).IpConfigurations[0].IpAddress = ip;
  };
  async function createEndpointAnswer(ip: string): Promise<number> {
    const trace = loadTrace('vxlan-add');
    withAddress(ip)(trace);
    const sim = new SimulatedDataplane({ nodeIP: WIN_IP });
    const b = newBindings();
    loadState(sim, trace.stateBefore, b);
    const r = await replayScenario(trace, sim, b, { checkStateBefore: false });
    const m = r.mismatches.find((x) => x.where === 'seq 10 HcnCreateEndpoint hr');
    return Number(m?.live ?? 0);
  }

  it.each<[string, string, number]>([
    ['outside the network subnet', '10.244.200.3', HRESULT.HCN_E_INVALID_IP],
    ["held by the agent's source VIP endpoint", '10.244.100.2', HRESULT.HCN_E_ADDR_INVALID_OR_RESERVED],
  ])('%s: refused', async (_what, ip, hresult) => {
    expect(await createEndpointAnswer(ip)).toBe(hresult >>> 0);
  });
});

describe('the SDN migration: net-conf without Backend.Name, an existing vxlan0 adopted', () => {
  const trace = loadTrace('vxlan-add');
  const netConf = trace.agent!.netConf; // {"Type":"vxlan","VNI":4096,"Port":4789}: no Name

  /** microsoft/SDN's start.ps1 left an Overlay `vxlan0` on the node's subnet (the body the agent would make). */
  const sdnVxlan0 = (sim: SimulatedDataplane) => {
    const cfg = parseNetConf(JSON.stringify({ Network: '10.244.0.0/16', Backend: { Type: 'vxlan', VNI: 4096, Name: 'vxlan0' } })).backend;
    if (cfg.type !== 'vxlan') throw new Error('vxlan');
    sim.createNetwork('HcnCreateNetwork', overlayNetworkFor(cfg, POD_CIDR, 'Ethernet'));
  };

  it('cni-config names vxlan0, readiness is green, and the recorded ADD (network name mapped to vxlan0) gives the pod its address', async () => {
    const sink = logSink('info');
    const node = await startNode('vxlan', netConf, sdnVxlan0, undefined, sink.log);
    expect(node.running.sim.getNetworkByName('flannel.4096')).toBeUndefined();
    // The agent says which network pods use, and that it is not net-conf's.
    expect(sink.entries).toContainEqual(expect.objectContaining({ level: 'warn', network: 'vxlan0', configured: 'flannel.4096', adopted: true }));
    const conflist = conflistOf(node, trace);
    expect(conflist.name).toBe('vxlan0');
    // Written as the installer does, with this host's subnet.env path.
    writeFileSync(
      join(node.confDir, '10-flannel.conflist'),
      JSON.stringify({ ...conflist, plugins: [{ ...(conflist.plugins as object[])[0], subnetFile: node.running.subnetFile }] }, null, 2) + '\n',
    );
    expect(node.running.agent.cniProblems()).toEqual([]);
    await waitFor(() => node.running.agent.isReady, 'ready with the conflist naming vxlan0', { timeoutMs: 10_000 });

    const b = newBindings({ names: { 'flannel.4096': String(conflist.name) } });
    bindAgentNetwork(node.running.sim, b, 'vxlan0', 'vxlan0_sourcevip');
    const r = await replayScenario(trace, node.running.sim, b);
    expect(describeMismatches(r.mismatches)).toBe('');
    // The pod got its address on vxlan0, attached to its namespace.
    const pod = node.running.sim.listEndpoints().find((e) => e.Name === `${trace.inputs.env.CNI_CONTAINERID}_vxlan0`);
    expect(pod?.IpConfigurations).toEqual([{ IpAddress: '10.244.100.3' }]);
    expect(pod?.HostComputeNetwork).toBe(node.running.sim.getNetworkByName('vxlan0')?.ID);
  }, 60_000);

  // What cni-config rendered before the agent recorded its network (the DaemonSet's install-cni-config
  // runs before the agent): net-conf's default name, flannel.4096.
  const preAdoption = (subnetFile: string) => renderCniConfig({ netConf: parseNetConf(JSON.stringify(netConf)), ...WIN_PATHS, ...CNI_CONFIG, subnetFile });

  it('the conflist rendered before adoption (flannel.4096) is rewritten to name vxlan0: ready, and the ADD works, nothing deleted', async () => {
    const sink = logSink('info');
    const node = await startNode('vxlan', netConf, sdnVxlan0, preAdoption, sink.log);
    const file = join(node.confDir, '10-flannel.conflist');
    expect(node.running.agent.network?.networkName).toBe('vxlan0');
    await waitFor(() => node.running.agent.isReady, 'ready without a pod delete', { timeoutMs: 10_000 });
    const rewritten = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    // Only the name changed: the operator's flags (DNS, Service CIDR, paths) are kept.
    expect(rewritten).toEqual({ ...preAdoption(node.running.subnetFile), name: 'vxlan0' });
    expect(readdirSync(node.confDir)).toEqual(['10-flannel.conflist']);
    expect(sink.entries).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        message: 'rewrote the CNI config to name the HNS network this agent runs',
        path: file,
        network: 'vxlan0',
        previous: 'flannel.4096',
      }),
    );
    await waitFor(() => cluster.api.events({ kind: 'Node', name: WIN }).find((e) => e['reason'] === 'FlannelCNIConfigRewritten'), 'the FlannelCNIConfigRewritten Event', {
      timeoutMs: 20_000,
    });
    await waitFor(
      () => {
        const c = cluster.api.getNode(WIN)?.status?.conditions?.find((x) => x.type === 'NetworkUnavailable');
        return c?.status === 'False' && c.reason === 'FlannelIsUp' ? c : undefined;
      },
      'NetworkUnavailable=False',
      { timeoutMs: 20_000 },
    );
    // The plugins read the rewritten conflist's name: the recorded ADD gives the pod its address on vxlan0.
    const b = newBindings({ names: { 'flannel.4096': String(rewritten['name']) } });
    bindAgentNetwork(node.running.sim, b, 'vxlan0', 'vxlan0_sourcevip');
    const r = await replayScenario(trace, node.running.sim, b);
    expect(describeMismatches(r.mismatches)).toBe('');
    expect(node.running.sim.listEndpoints().find((e) => e.Name === `${trace.inputs.env.CNI_CONTAINERID}_vxlan0`)?.IpConfigurations).toEqual([{ IpAddress: '10.244.100.3' }]);
  }, 60_000);

  it('the same conflist installed again after the start is rewritten again by the readiness check', async () => {
    const node = await startNode('vxlan', netConf, sdnVxlan0);
    const file = join(node.confDir, '10-flannel.conflist');
    writeFileSync(file, JSON.stringify(preAdoption(node.running.subnetFile), null, 2) + '\n');
    await waitFor(() => ((JSON.parse(readFileSync(file, 'utf8')) as { name: string }).name === 'vxlan0' ? true : undefined), 'the conflist renamed', {
      timeoutMs: 10_000,
    });
    await waitFor(() => node.running.agent.isReady, 'ready', { timeoutMs: 10_000 });
  }, 60_000);

  it('a conflist that is not only misnamed (another subnet.env) is left alone: readiness red with the reason and the fix', async () => {
    const foreign = (subnetFile: string) => preAdoption(join(subnetFile, '..', 'other', 'subnet.env'));
    const node = await startNode('vxlan', netConf, sdnVxlan0, foreign);
    const file = join(node.confDir, '10-flannel.conflist');
    const before = readFileSync(file, 'utf8');
    expect(node.running.agent.network?.networkName).toBe('vxlan0');
    const problems = node.running.agent.cniProblems();
    expect(problems.map((p) => p.check)).toEqual(['cni-network-name', 'cni-subnet-file']);
    expect(problems[0].detail).toContain('"flannel.4096"');
    expect(problems[0].detail).toContain('"vxlan0"');
    expect(node.running.agent.isReady).toBe(false);
    const status = await node.running.agent.status();
    expect(status).toMatchObject({ ready: false, inSync: false, cni: { problems: [{ check: 'cni-network-name' }, { check: 'cni-subnet-file' }] } });
    // The NetworkUnavailable condition says so.
    await waitFor(
      () => {
        const c = cluster.api.getNode(WIN)?.status?.conditions?.find((x) => x.type === 'NetworkUnavailable');
        return c?.status === 'True' && c.reason === 'CNINetworkNameMismatch' ? c : undefined;
      },
      'NetworkUnavailable=True for the conflist',
      { timeoutMs: 20_000 },
    );
    expect(readFileSync(file, 'utf8')).toBe(before);
    // The operator writes the conflist cni-config renders now (it names vxlan0): ready again, the condition False.
    const fixed = renderCniConfig({
      netConf: parseNetConf(JSON.stringify(netConf)),
      networkName: agentNetworkName(parseNetConf(JSON.stringify(netConf)), node.running.subnetFile),
      ...WIN_PATHS,
      ...CNI_CONFIG,
      subnetFile: node.running.subnetFile,
    });
    writeFileSync(file, JSON.stringify(fixed, null, 2) + '\n');
    expect(node.running.agent.isReady).toBe(true);
    await waitFor(
      () => {
        const c = cluster.api.getNode(WIN)?.status?.conditions?.find((x) => x.type === 'NetworkUnavailable');
        return c?.status === 'False' && c.reason === 'FlannelIsUp' ? c : undefined;
      },
      'NetworkUnavailable=False once the conflist fits',
      { timeoutMs: 20_000 },
    );
  }, 60_000);
});

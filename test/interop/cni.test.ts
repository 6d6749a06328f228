// The interop tier: the agent's Windows build under Wine on the simulated node, and the REAL upstream
// CNI plugins (flannel.exe -> win-overlay.exe / win-bridge.exe + host-local.exe, from the folder named by
// FLANNEL_CNI_PLUGINS_DIR, hash-checked: ./plugins.ts) attaching pods to the network the agent made, run
// as containerd runs them (CNI_COMMAND ADD then DEL, CNI_CONTAINERID, CNI_NETNS = an HCN namespace GUID
// created beforehand, CNI_IFNAME, CNI_PATH, the config on stdin). The CNI config is what `flanneld
// cni-config` renders. Every HNS call of the plugins crosses the stand-in DLLs (loaded from the prefix's
// system32, as hcsshim's NewLazySystemDLL does) into the same SimulatedDataplane the agent programs.
// What it proves and what it cannot (no real HNS): docs/testing.md, "Test tiers" and "The interop tier".
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FakeKubeApiServer, bareNode, linuxFlannelNode, writeKubeconfig } from '../../src/demo/kube-fake/api-server.js';
import type { HcnEndpoint, HcnPolicy } from '../../src/hns/schema.js';
import { waitFor } from '../support/wait-for.js';
import { WindowsSimServer } from '../windows/sim-server.js';
import {
  CACHE,
  driveC,
  mustFailWhenSkipped,
  prepareHarness,
  resetPrefixRunDir,
  runUnderWine,
  startWindowsAgent,
  windowsHarness,
  winPath,
  type PreparedHarness,
  type WindowsAgent,
} from '../support/windows.js';
import { linkHostLocalDataDir, pluginsFolder, preparePlugins, unlinkHostLocalDataDir, runCni, type CniRun } from './plugins.js';
import { WIN_IP } from '../support/cluster.js';

const WIN = 'win-1';
const WIN_CIDR = '10.244.100.0/24';
const CLUSTER_CIDR = '10.244.0.0/16';
const SERVICE_CIDR = '10.96.0.0/12';
const DNS_SERVER = '10.96.0.10';
/** Wine start + Node start + the agent's first reconcile. */
const AGENT_WAIT_MS = 120_000;
/** The interop tier's own prefix: the plugins need the stand-ins in system32, which the Windows tier's prefix must not have. */
const PREFIX = join(CACHE, 'interop-prefix');

// Without FLANNEL_CNI_PLUGINS_DIR the tier skips with one line, under CI=true too: the binaries cannot be
// distributed, and the replay tier (test/integration/cni-replay.test.ts) covers their recorded calls in CI.
const folder = pluginsFolder();
const harness = folder.kind === 'unset' ? { run: false, reason: folder.reason } : windowsHarness();
const runs = harness.run && folder.kind !== 'unusable';

if (folder.kind === 'unset') {
  process.stderr.write(folder.reason + '\n');
} else if (!runs) {
  const reason = harness.reason ?? `Interop tier skipped: ${folder.kind === 'unusable' ? folder.reason : ''}`;
  if (mustFailWhenSkipped() || folder.kind === 'unusable') {
    describe('interop tier (upstream CNI plugins)', () => {
      it('requires wine, mingw-w64 and usable plugins once FLANNEL_CNI_PLUGINS_DIR is set', () => {
        throw new Error(`${reason} (FLANNEL_CNI_PLUGINS_DIR is set, so this is not skipped)`);
      });
    });
  } else {
    process.stderr.write(reason + '\n');
  }
}

interface Backend {
  name: 'vxlan' | 'host-gw';
  netConf: unknown;
  network: string;
  delegate: 'win-overlay' | 'win-bridge';
}

const BACKENDS: Backend[] = [
  { name: 'vxlan', netConf: { Network: CLUSTER_CIDR, Backend: { Type: 'vxlan', VNI: 4096, Port: 4789 } }, network: 'flannel.4096', delegate: 'win-overlay' },
  { name: 'host-gw', netConf: { Network: CLUSTER_CIDR, Backend: { Type: 'host-gw' } }, network: 'cbr0', delegate: 'win-bridge' },
];

/** A node and its agent, shared by one backend's scenarios. */
interface Node {
  api: FakeKubeApiServer;
  sim: WindowsSimServer;
  dir: string;
  kubeconfig: string;
  netConfPath: string;
  agent: WindowsAgent;
  /** The network config containerd hands flannel.exe: the conflist's plugin with the list's name and cniVersion. */
  config: string;
  conflist: Record<string, unknown>;
}

const policiesOf = (ep: HcnEndpoint, type: string) => (ep.Policies ?? []).filter((p: HcnPolicy) => p.Type === type).map((p) => p.Settings as Record<string, unknown>);

(runs ? describe.each(BACKENDS) : describe.skip.each(BACKENDS))('the upstream CNI plugins on the agent’s $name network (apiVersion 2)', (backend) => {
  let prepared: PreparedHarness;
  let binDir: string;
  let node: Node;
  let podSeq = 0;

  const ipamDir = () => driveC(`var/lib/cni/networks/${backend.network}`, PREFIX);
  const subnetEnv = () => driveC('run/flannel/subnet.env', PREFIX);

  function waitForAgent<T>(fn: () => T | undefined | false, what: string, agent = node.agent, timeoutMs = AGENT_WAIT_MS): Promise<T> {
    return waitFor(fn, what, {
      timeoutMs,
      intervalMs: 100,
      failIf: () =>
        agent.child.exitCode !== null || agent.child.signalCode !== null ? `the agent exited while waiting for ${what}; its log:\n${agent.log().slice(-6000)}` : undefined,
      detail: () => `agent log:\n${agent.log().slice(-4000)}\nsim transcript:\n${node.sim.transcript.slice(-30).join('\n')}`,
    });
  }

  function startAgent(n: Pick<Node, 'sim' | 'kubeconfig' | 'netConfPath' | 'dir'>): WindowsAgent {
    return startWindowsAgent({
      nodeExe: prepared.nodeExe,
      stage: prepared.stage,
      dllDir: prepared.build.dllDir,
      simPort: n.sim.port,
      nodeName: WIN,
      kubeconfig: n.kubeconfig,
      netConfPath: n.netConfPath,
      logDir: n.dir,
      prefix: PREFIX,
      extraArgs: ['--iface', WIN_IP],
    });
  }

  beforeAll(async () => {
    const t0 = Date.now();
    binDir = await preparePlugins(folder);
    prepared = await prepareHarness({ agent: true, prefix: PREFIX, system32Standins: true });
    // A fresh node: no subnet.env, no host-local store or flannel dataDir from an earlier run.
    resetPrefixRunDir(PREFIX);
    rmSync(driveC('var/lib/cni', PREFIX), { recursive: true, force: true });
    linkHostLocalDataDir(PREFIX);
    const runsDir = join(CACHE, 'runs');
    mkdirSync(runsDir, { recursive: true });
    const dir = mkdtempSync(join(runsDir, `interop-${backend.name}-`));
    const sim = new WindowsSimServer({ dataplane: { nodeIP: WIN_IP, statePath: join(dir, 'dataplane.json') } });
    await sim.start();
    const api = new FakeKubeApiServer();
    await api.start();
    const kubeconfig = join(dir, 'kubeconfig');
    await writeKubeconfig(kubeconfig, api.url);
    const netConfPath = join(dir, 'net-conf.json');
    writeFileSync(netConfPath, JSON.stringify(backend.netConf));
    api.addNode(bareNode({ name: WIN, podCIDR: WIN_CIDR, internalIP: WIN_IP }));
    api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: backend.name }));
    const partial = { api, sim, dir, kubeconfig, netConfPath };
    const agent = startAgent(partial);
    node = { ...partial, agent, config: '', conflist: {} };
    await waitForAgent(() => sim.dp.getNetworkByName(backend.network) && existsSync(subnetEnv()), `the ${backend.network} network and subnet.env`);

    // `flanneld cni-config`, the Windows build under Wine with the agent's own flags, as an installer runs it.
    const rendered = await runUnderWine(
      prepared.nodeExe,
      [
        winPath(join(prepared.stage, 'dist', 'main.js')),
        'cni-config',
        `--net-config-path=${winPath(netConfPath)}`,
        `--management-ip=${WIN_IP}`,
        `--management-subnet=10.0.0.0/24`,
        `--service-cidr=${SERVICE_CIDR}`,
        `--dns-server=${DNS_SERVER}`,
      ],
      { env: { WINEPREFIX: PREFIX } },
    );
    if (rendered.code !== 0) throw new Error(`flanneld cni-config exited ${rendered.code}: ${rendered.stderr}`);
    node.conflist = JSON.parse(rendered.stdout) as Record<string, unknown>;
    const plugin = (node.conflist.plugins as Record<string, unknown>[])[0];
    // The plugin reads the prefix's C:\ files, never the host's /run/flannel/subnet.env (a rooted path
    // under Wine is a Unix path): the rendered paths are the agent's Windows defaults, absolute.
    expect(plugin).toMatchObject({ subnetFile: 'C:\\run\\flannel\\subnet.env', dataDir: 'C:\\var\\lib\\cni\\flannel' });
    node.config = JSON.stringify({ ...plugin, name: node.conflist.name, cniVersion: node.conflist.cniVersion });
    console.log(`interop ${backend.name}: node ready in ${Date.now() - t0} ms (${JSON.stringify(prepared.timings)}); config ${node.config}`);
  }, 900_000);

  // A failed scenario must not fail the next one: its pods go (each scenario asserts its own DEL).
  afterEach(() => {
    if (!node) return;
    for (const ep of podEndpoints()) node.sim.dp.deleteEndpoint('test cleanup', ep.ID!);
    for (const ip of reservations()) if (reservedBy(ip).startsWith(backend.name.replace('-', '') + 'pod')) rmSync(join(ipamDir(), ip));
  });

  afterAll(async () => {
    unlinkHostLocalDataDir(PREFIX);
    if (!node) return;
    await node.agent.stop();
    writeFileSync(join(node.dir, 'sim-transcript.txt'), node.sim.transcript.join('\n') + '\n');
    await node.sim.stop();
    await node.api.stop();
  }, 60_000);

  /** A pod sandbox as containerd makes one: a new HCN namespace, a container ID. */
  function newPod(): { containerId: string; netns: string } {
    const ns = node.sim.dp.createNamespace('HcnCreateNamespace', { Type: 'Host', SchemaVersion: { Major: 2, Minor: 0 } });
    podSeq++;
    return { containerId: `${backend.name.replace('-', '')}pod${podSeq}`.padEnd(64, '0'), netns: ns.ID };
  }

  async function cni(command: 'ADD' | 'DEL', pod: { containerId: string; netns: string }): Promise<CniRun> {
    const r = await runCni({ command, ...pod, config: node.config, simPort: node.sim.port, prefix: PREFIX, binDir });
    return r;
  }

  function explain(r: CniRun): string {
    return `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr.slice(-3000)}\nsim:\n${node.sim.transcript.slice(-25).join('\n')}`;
  }

  const podEndpoints = () => node.sim.dp.listEndpoints().filter((e) => e.Name?.includes(backend.network) && e.Name !== `${backend.network}_sourcevip` && e.Name !== 'cbr0_ep');
  const reservations = () => (existsSync(ipamDir()) ? readdirSync(ipamDir()).filter((f) => /^\d+\.\d+\.\d+\.\d+$/.test(f)) : []);
  const reservedBy = (ip: string) => readFileSync(join(ipamDir(), ip), 'utf8').split(/\r?\n/)[0];

  /** The pod's gateway as each delegate takes it: win-overlay the network's gateway (.1), win-bridge `x.2`, the address of cbr0_ep (plugins pkg/hns, win-bridge_windows.go). */
  const gatewayOf = () => (backend.name === 'vxlan' ? '10.244.100.1' : '10.244.100.2');
  /** Addresses no pod may get: the agent's own endpoint (vxlan source VIP, host-gw cbr0_ep) and the gateway. */
  const agentAddresses = () =>
    node.sim.dp
      .listEndpoints()
      .filter((e) => e.Name === `${backend.network}_sourcevip` || e.Name === 'cbr0_ep')
      .map((e) => e.IpConfigurations![0].IpAddress);

  async function addPod(): Promise<{ pod: { containerId: string; netns: string }; ip: string; result: Record<string, unknown> }> {
    const pod = newPod();
    const add = await cni('ADD', pod);
    if (add.code !== 0 || !add.json) throw new Error(`ADD failed: ${explain(add)}`);
    const ips = add.json.ips as { address: string; gateway: string }[];
    return { pod, ip: ips[0].address.split('/')[0], result: add.json };
  }

  async function delPod(pod: { containerId: string; netns: string }): Promise<void> {
    const del = await cni('DEL', pod);
    if (del.code !== 0) throw new Error(`DEL failed: ${explain(del)}`);
  }

  const endpointOf = (ip: string) => podEndpoints().find((e) => e.IpConfigurations?.[0]?.IpAddress === ip);

  it('ADD gives the pod an address, gateway, routes and DNS on the agent’s network, with the configured policies; DEL leaves nothing behind', async () => {
    const { pod, ip, result } = await addPod();
    const gateway = gatewayOf();
    expect(result.ips).toEqual([{ version: '4', address: `${ip}/24`, gateway }]);
    expect(ip.startsWith('10.244.100.')).toBe(true);
    // Never the gateway, the agent's own endpoint (cbr0_ep / the source VIP) or the network address.
    expect([...agentAddresses(), gateway, '10.244.100.1', '10.244.100.0']).not.toContain(ip);
    expect(result.dns).toEqual({ nameservers: [DNS_SERVER], search: ['svc.cluster.local'] });

    const ep = endpointOf(ip)!;
    expect(podEndpoints()).toEqual([ep]);
    expect(result.interfaces).toEqual([{ name: ep.Name, mac: ep.MacAddress }]);
    expect(ep.HostComputeNetwork).toBe(node.sim.dp.getNetworkByName(backend.network)!.ID);
    expect((ep as { Routes?: unknown }).Routes).toEqual([{ NextHop: gateway, DestinationPrefix: '0.0.0.0/0' }]);
    expect((ep as { Dns?: unknown }).Dns).toEqual({ Search: ['svc.cluster.local'], ServerList: [DNS_SERVER] });
    // The conflist's policies, as the delegate hands them to HNS.
    const nat = policiesOf(ep, 'OutBoundNAT');
    const exceptions = backend.name === 'vxlan' ? [CLUSTER_CIDR, SERVICE_CIDR] : [CLUSTER_CIDR, SERVICE_CIDR, '10.0.0.0/24'];
    expect(nat).toContainEqual({ Exceptions: exceptions });
    expect(nat).toContainEqual({ Destinations: [ip] }); // loopbackDSR (plugins pkg/hns ApplyLoopbackDSRPolicy)
    expect(policiesOf(ep, 'SDNRoute')).toContainEqual({ DestinationPrefix: SERVICE_CIDR, NeedEncap: true });
    if (backend.name === 'vxlan') expect(policiesOf(ep, 'ProviderAddress')).toEqual([{ ProviderAddress: WIN_IP }]);
    else expect(policiesOf(ep, 'ProviderAddress')).toEqual([]);
    // The namespace containerd made holds the endpoint, and the endpoint names it.
    expect(ep.HostComputeNamespace).toBe(pod.netns);
    expect(node.sim.dp.getNamespace(pod.netns)!.Resources).toEqual([{ Type: 'Endpoint', Data: { ID: ep.ID } }]);
    expect(reservedBy(ip)).toBe(pod.containerId);

    await delPod(pod);
    expect(podEndpoints()).toEqual([]);
    expect(node.sim.dp.getNamespace(pod.netns)!.Resources).toEqual([]);
    expect(reservations().filter((r) => reservedBy(r) === pod.containerId)).toEqual([]);
    expect(node.sim.protocolErrors).toEqual([]);
  }, 300_000);

  it('a second and a third pod get distinct addresses; the agent’s resync and a restart leave pod endpoints alone', async () => {
    const pods = [await addPod(), await addPod(), await addPod()];
    const ips = pods.map((p) => p.ip);
    expect(new Set(ips).size).toBe(3);
    for (const ip of ips) expect([...agentAddresses(), gatewayOf()]).not.toContain(ip);
    const before = podEndpoints().sort((a, b) => a.ID!.localeCompare(b.ID!));
    expect(before).toHaveLength(3);

    // A resync: the agent's full read of the dataplane comes every 10 s; wait for two more of them.
    const reads = () => node.sim.count(backend.name === 'vxlan' ? 'HcnQueryNetworkProperties' : 'GetIpForwardTable2');
    const seen = reads();
    await waitForAgent(() => reads() >= seen + 2, 'two resync passes of the agent', node.agent, 60_000);
    expect(podEndpoints().sort((a, b) => a.ID!.localeCompare(b.ID!))).toEqual(before);

    // A restart: the network is reused and no pod endpoint is touched.
    const createdBefore = node.sim.dp.calls.get('HcnCreateNetwork') ?? 0;
    await node.agent.stop();
    const logBefore = node.sim.transcript.length;
    node.agent = startAgent(node);
    await waitForAgent(() => /first reconcile pass done/.test(node.agent.log()), 'the restarted agent’s first reconcile pass');
    expect(node.sim.dp.calls.get('HcnCreateNetwork') ?? 0).toBe(createdBefore);
    // Transcript lines: `HcnDeleteEndpoint {...} -> ...`, `HNSCall {"method":"DELETE",...} -> ...` (sim-server.ts).
    const touches = (l: string) => /^(HcnDeleteEndpoint|HcnModifyEndpoint|HNSCall \{"method":"DELETE")/.test(l);
    expect(node.sim.transcript.slice(logBefore).filter(touches)).toEqual([]);
    expect(podEndpoints().sort((a, b) => a.ID!.localeCompare(b.ID!))).toEqual(before);

    const beforeDel = node.sim.transcript.length;
    for (const p of pods) await delPod(p.pod);
    expect(podEndpoints()).toEqual([]);
    // The filter above sees an endpoint teardown: the plugins' DELs match it.
    expect(node.sim.transcript.slice(beforeDel).filter(touches).length).toBeGreaterThanOrEqual(3);
  }, 400_000);

  it('a pod created while the agent rebuilds a lost network fails cleanly, and succeeds once the network is back', async () => {
    const lost = node.sim.dp.getNetworkByName(backend.network)!;
    // The rebuild is held back: network creation fails (HNS busy) until ADD and DEL have run, however
    // long Wine takes to start flannel.exe; the agent keeps retrying with backoff.
    node.sim.dp.injections.failNext(/^(HcnCreateNetwork|HNSCall POST \/networks\/)$/, 0x80004005, Number.POSITIVE_INFINITY);
    node.sim.dp.deleteNetwork('test', lost.ID!);
    const pod = newPod();
    const add = await cni('ADD', pod);
    expect(add.code).not.toBe(0);
    expect(add.json).toMatchObject({ code: expect.any(Number), msg: expect.stringContaining(backend.network) });
    // containerd tears a failed sandbox down with DEL: nothing is left behind.
    await delPod(pod);
    expect(podEndpoints()).toEqual([]);
    expect(reservations().filter((r) => reservedBy(r) === pod.containerId)).toEqual([]);
    expect(node.sim.dp.getNetworkByName(backend.network)).toBeUndefined();

    node.sim.dp.injections.clear();
    await waitForAgent(() => node.sim.dp.getNetworkByName(backend.network), `the ${backend.network} network rebuilt`);
    await waitForAgent(() => backend.name !== 'vxlan' || agentAddresses().length > 0, 'the source VIP reserved again');
    const again = await addPod();
    expect(endpointOf(again.ip)!.HostComputeNetwork).toBe(node.sim.dp.getNetworkByName(backend.network)!.ID);
    expect([...agentAddresses(), gatewayOf()]).not.toContain(again.ip);
    await delPod(again.pod);
  }, 400_000);
});

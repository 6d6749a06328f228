// End to end under Wine: the built agent (dist/ + win32 node_modules) on the Windows Node 22 runtime,
// `--dataplane windows --win32-dll-dir <stand-ins>`, against a fake API server with Linux flannel nodes.
// Every HNS / route / interface call crosses the real DLL ABI (ffi-rs -> stand-in DLL -> loopback ->
// WindowsSimServer -> the one SimulatedDataplane). Scenarios run sequentially in one file.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { join } from 'node:path';
import { FakeKubeApiServer, bareNode, linuxFlannelNode, writeKubeconfig } from '../../src/demo/kube-fake/api-server.js';
import type { HcnPolicy } from '../../src/hns/schema.js';
import { waitFor } from '../support/wait-for.js';
import { editState } from '../support/sim-dataplane.js';
import { loadTrace, newBindings, replayScenario, type ReplayMismatch } from '../support/cni-replay.js';
import { WindowsSimServer } from './sim-server.js';
import {
  CACHE,
  driveC,
  mustFailWhenSkipped,
  prepareHarness,
  resetPrefixRunDir,
  runUnderWine,
  standinOverrides,
  startWindowsAgent,
  windowsHarness,
  winPath,
  type PreparedHarness,
  type WindowsAgent,
} from '../support/windows.js';
import { WIN_IP } from '../support/cluster.js';
import { expectHnsVersionRefusalLogged, PROFILES } from '../support/hns-profiles.js';
import { isFeatureSupported } from '../../src/hns/features.js';
import { renderCniConfig } from '../../src/cni/conflist.js';
import { parseNetConf } from '../../src/subnet/net-conf.js';
import { freePort } from '../support/free-port.js';

const WIN = 'win-1';
const WIN_CIDR = '10.244.100.0/24';
const VXLAN_NET_CONF = { Network: '10.244.0.0/16', Backend: { Type: 'vxlan', VNI: 4096, Port: 4789 } };
const HOSTGW_NET_CONF = { Network: '10.244.0.0/16', Backend: { Type: 'host-gw' } };
/** The dual-stack scenario's net-conf and the Node's podCIDRs (sdnbridge's recording's: test/fixtures/cni-traces). */
const DUAL_NET_CONF = { Network: '10.244.0.0/16', EnableIPv6: true, IPv6Network: 'fd00:10:244::/56', Backend: { Type: 'host-gw' } };
const DUAL_V4 = '10.244.3.0/24';
const DUAL_V6 = 'fd00:10:244:3::/64';
const WIN_IP6 = 'fd00:10::2';
/** Wine start + Node start + the agent's first reconcile. */
const AGENT_WAIT_MS = 90_000;

const harness = windowsHarness();

if (!harness.run && mustFailWhenSkipped()) {
  describe('Windows harness (agent)', () => {
    it('requires wine64 and mingw-w64 under CI', () => {
      throw new Error(`${harness.reason} (.ci/run installs them; CI=true does not allow skipping)`);
    });
  });
}

/** The agent's /status says inSync (read from Linux through node:http). */
function statusInSync(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = httpGet(`http://127.0.0.1:${port}/status`, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString('utf8')));
      res.on('end', () => {
        try {
          resolve((JSON.parse(body) as { inSync?: unknown }).inSync === true);
        } catch {
          resolve(false);
        }
      });
    });
    req.on('error', () => resolve(false));
  });
}

/** waitFor that fails at once when the agent has exited, quoting its log either way. */
function waitForAgent<T>(fn: () => T | undefined | false | Promise<T | undefined | false>, what: string, agent: WindowsAgent | undefined, timeoutMs = AGENT_WAIT_MS): Promise<T> {
  return waitFor(fn, what, {
    timeoutMs,
    intervalMs: 100,
    failIf: () =>
      agent && (agent.child.exitCode !== null || agent.child.signalCode !== null)
        ? `the agent exited (${agent.child.exitCode ?? agent.child.signalCode}) while waiting for ${what}; its log:\n${agent.log().slice(-6000)}`
        : undefined,
    detail: () => `agent log:\n${agent?.log().slice(-6000) ?? ''}`,
  });
}

/** The agent's exit, failing with its log when it is still running after AGENT_WAIT_MS. */
async function waitForAgentExit(agent: WindowsAgent): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  void agent.exited.then((e) => (exit = e));
  return waitFor(() => exit, 'the agent to exit', { timeoutMs: AGENT_WAIT_MS, intervalMs: 100, detail: () => `agent log:\n${agent.log().slice(-6000)}` });
}

function addLinux(api: FakeKubeApiServer, n: number, backendType: 'vxlan' | 'host-gw') {
  api.addNode(linuxFlannelNode({ name: `linux-${n}`, podCIDR: `10.244.${n}.0/24`, publicIP: `10.0.0.${10 + n}`, backendType }));
}

interface Scenario {
  api: FakeKubeApiServer;
  sim: WindowsSimServer;
  dir: string;
  kubeconfig: string;
  netConfPath: string;
  agents: WindowsAgent[];
}

(harness.run ? describe : describe.skip)('the Windows build under Wine programs HNS and routes through the DLL ABI', () => {
  let prepared: PreparedHarness;
  let sc: Scenario | undefined;

  beforeAll(async () => {
    const t0 = Date.now();
    prepared = await prepareHarness({ agent: true });
    console.log(`Windows harness ready in ${Date.now() - t0} ms (${JSON.stringify(prepared.timings)})`);
  }, 600_000);

  afterEach(async () => {
    if (!sc) return;
    for (const a of sc.agents) await a.stop();
    // keep the transcript and logs of the last scenario for post-mortems
    writeFileSync(join(sc.dir, 'sim-transcript.txt'), sc.sim.transcript.join('\n') + '\n');
    await sc.sim.stop();
    await sc.api.stop();
    sc = undefined;
  }, 30_000);

  afterAll(() => {
    resetPrefixRunDir();
  });

  /** A fresh node and cluster; `hns`: the HNS version the node reports (absent: the simulator's default, the newest). */
  async function scenario(netConf: unknown, podCIDRs: string[] = [WIN_CIDR], hns?: string): Promise<Scenario> {
    resetPrefixRunDir();
    const runs = join(CACHE, 'runs');
    mkdirSync(runs, { recursive: true });
    const dir = mkdtempSync(join(runs, 'agent-'));
    const sim = new WindowsSimServer({ dataplane: { nodeIP: WIN_IP, statePath: join(dir, 'dataplane.json') } });
    if (hns !== undefined) editState(sim.dp, (st) => void (st.hnsVersion = hns));
    await sim.start();
    const api = new FakeKubeApiServer();
    await api.start();
    const kubeconfig = join(dir, 'kubeconfig');
    await writeKubeconfig(kubeconfig, api.url);
    const netConfPath = join(dir, 'net-conf.json');
    writeFileSync(netConfPath, JSON.stringify(netConf));
    const win = bareNode({ name: WIN, podCIDR: podCIDRs[0], internalIP: WIN_IP });
    if (podCIDRs.length > 1) win.spec = { podCIDR: podCIDRs[0], podCIDRs };
    api.addNode(win);
    sc = { api, sim, dir, kubeconfig, netConfPath, agents: [] };
    return sc;
  }

  function start(s: Scenario, extraArgs: string[] = []): WindowsAgent {
    const agent = startWindowsAgent({
      nodeExe: prepared.nodeExe,
      stage: prepared.stage,
      dllDir: prepared.build.dllDir,
      simPort: s.sim.port,
      nodeName: WIN,
      kubeconfig: s.kubeconfig,
      netConfPath: s.netConfPath,
      logDir: s.dir,
      extraArgs: ['--iface', WIN_IP, ...extraArgs],
    });
    s.agents.push(agent);
    return agent;
  }

  function remoteSubnetRoutes(s: Scenario): string[] {
    const net = s.sim.dp.getNetworkByName('flannel.4096');
    return (net?.Policies ?? [])
      .filter((p: HcnPolicy) => p.Type === 'RemoteSubnetRoute')
      .map((p) => {
        const x = p.Settings as { DestinationPrefix: string; ProviderAddress: string; IsolationId: number };
        return `${x.DestinationPrefix} pa ${x.ProviderAddress} vsid ${x.IsolationId}`;
      })
      .sort();
  }

  function peerRoutes(s: Scenario): string[] {
    return s.sim.dp
      .listRoutes()
      .filter((r) => r.DestinationPrefix.startsWith('10.244.'))
      .map((r) => `${r.DestinationPrefix} via ${r.NextHop} if ${r.InterfaceIndex}`)
      .sort();
  }

  const subnetEnv = () => driveC('run/flannel/subnet.env');

  /**
   * `flanneld doctor` under Wine beside the agent, on its flags, env and DLLs (the win32 dataplane reads HNS, the
   * route table and the adapters through the stand-ins; the cluster rows through the fake API).
   */
  function doctor(s: Scenario, extraArgs: string[]) {
    const args = [winPath(join(prepared.stage, 'dist', 'main.js')), 'doctor', '--kube-subnet-mgr', '--dataplane', 'windows', '--win32-dll-dir', winPath(prepared.build.dllDir)];
    args.push(`--kubeconfig-file=${winPath(s.kubeconfig)}`, `--net-config-path=${winPath(s.netConfPath)}`, '--iface', WIN_IP, ...extraArgs);
    const env = { FLANNEL_SIM_PORT: String(s.sim.port), NODE_NAME: WIN, WINEDLLOVERRIDES: standinOverrides(prepared.build.dllDir) };
    return runUnderWine(prepared.nodeExe, args, { outDir: s.dir, env });
  }

  /** The node's adapter gets its IPv6 address (the dual-stack scenario's). */
  const withIPv6 = (s: Scenario) =>
    editState(s.sim.dp, (st) => st.adapters.filter((a) => a.IPAddress === WIN_IP).forEach((a) => Object.assign(a, { IPv6Address: WIN_IP6, IPv6PrefixLength: 64 })));

  // The scenarios whose HNS calls depend on the version run on each profile (../support/hns-profiles.ts: the state
  // file's hnsVersion, which the stand-in computenetwork.dll and vmcompute.dll answer with); where a profile lacks
  // a feature (dual-stack before 11.10, hcsshim hcn/hcnglobals.go IPv6DualStackVersion) the agent's refusal is
  // asserted. The scenarios after this block (the host NIC through iphlpapi.dll, HRESULT and ErrorRecord
  // decoding) do not depend on it and run on the newest profile, the simulator's default.
  describe.each(PROFILES)('on $os (HNS $hns)', ({ hns, version }) => {
    it('vxlan: the Overlay network, RemoteSubnetRoute policies per peer, subnet.env in C:\\run\\flannel; a peer deleted is removed', async () => {
      const s = await scenario(VXLAN_NET_CONF, [WIN_CIDR], hns);
      addLinux(s.api, 1, 'vxlan');
      addLinux(s.api, 2, 'vxlan');
      const healthzPort = await freePort();
      // containerd's CNI directories, the scenario's own (not the prefix's C:\etc, which other suites share):
      // the conflist the agent's own renderer writes, and the plugins it names (their files only: no pod starts
      // here). /status is in sync only once pods can start (src/health/status.ts).
      const cniConfDir = join(s.dir, 'net.d');
      const cniBinDir = join(s.dir, 'bin');
      mkdirSync(cniConfDir);
      mkdirSync(cniBinDir);
      const conflist = renderCniConfig({
        netConf: parseNetConf(JSON.stringify(VXLAN_NET_CONF)),
        // the agent's Windows defaults (cniPaths resolves on the platform it runs on: here Linux)
        subnetFile: 'C:\\run\\flannel\\subnet.env',
        dataDir: 'C:\\var\\lib\\cni\\flannel',
        serviceCidr: '10.96.0.0/12',
        managementIP: WIN_IP,
        dnsServers: ['10.96.0.10'],
        dnsSearch: ['svc.cluster.local'],
      });
      writeFileSync(join(cniConfDir, '10-flannel.conflist'), JSON.stringify(conflist, null, 2));
      for (const plugin of ['flannel.exe', 'win-overlay.exe', 'host-local.exe']) writeFileSync(join(cniBinDir, plugin), '');
      const cniArgs = [`--cni-conf-dir=${winPath(cniConfDir)}`, `--cni-bin-dir=${winPath(cniBinDir)}`];
      const agent = start(s, ['--healthz-ip=127.0.0.1', `--healthz-port=${healthzPort}`, ...cniArgs]);

      await waitForAgent(() => remoteSubnetRoutes(s).length === 2 && existsSync(subnetEnv()), 'two RemoteSubnetRoute policies and subnet.env', agent);
      expect(readFileSync(subnetEnv(), 'utf8')).toBe('FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.100.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n');
      expect(remoteSubnetRoutes(s)).toEqual(['10.244.1.0/24 pa 10.0.0.11 vsid 4096', '10.244.2.0/24 pa 10.0.0.12 vsid 4096']);

      const net = s.sim.dp.getNetworkByName('flannel.4096')!;
      expect(net).toMatchObject({ Type: 'Overlay' });
      expect(net.Policies!.map((p) => p.Type)).toEqual(expect.arrayContaining(['NetAdapterName', 'ProviderAddress', 'DrMacAddress']));
      // It all came through the DLLs: the simulator's own counters and the server's per-function counts.
      expect(s.sim.count('HcnCreateNetwork') + s.sim.count('HNSCall')).toBeGreaterThan(0);
      expect(s.sim.count('HcnModifyNetwork')).toBeGreaterThan(0);
      expect(s.sim.dp.calls.get('HcnModifyNetwork') ?? 0).toBeGreaterThan(0);
      expect(s.sim.protocolErrors).toEqual([]);

      // The vxlan annotation carries the DR MAC HNS chose.
      const drMac = (net.Policies!.find((p) => p.Type === 'DrMacAddress')!.Settings as { Address: string }).Address;
      await waitForAgent(() => s.api.getNode(WIN)!.metadata.annotations?.['flannel.alpha.coreos.com/backend-data'], 'backend-data annotation', agent);
      expect(s.api.getNode(WIN)!.metadata.annotations!['flannel.alpha.coreos.com/backend-data']).toBe(`{"VNI":4096,"VtepMAC":"${drMac.replace(/-/g, ':').toLowerCase()}"}`);

      // `flanneld status` on the Windows runtime, as an operator runs it beside the agent: Node 22's fetch
      // fails every connect under Wine (`connect UNKNOWN 127.0.0.1:PORT`), node:http answers.
      await waitForAgent(() => statusInSync(healthzPort), '/status in sync', agent);
      const status = await runUnderWine(prepared.nodeExe, [winPath(join(prepared.stage, 'dist', 'main.js')), 'status', '--healthz-ip=127.0.0.1', `--healthz-port=${healthzPort}`], {
        outDir: s.dir,
      });
      expect(status.stderr).toBe('');
      expect(status.stdout).toMatch(/^Dataplane +in sync$/m);
      expect(status.stdout).toMatch(/^Lease +10\.244\.100\.0\/24 \(public IP 10\.0\.0\.2\)$/m);
      expect(status.stdout).toMatch(/^Network +flannel\.4096 \(Overlay\)/m);
      expect(status.stdout).toMatch(/^Peers +2 desired, 2 programmed, 0 rejected, 0 refused$/m);
      expect(status.code).toBe(0);

      // `flanneld doctor` beside it, on the agent's health port and CNI directories.
      const doctorFlags = ['--healthz-ip=127.0.0.1', `--healthz-port=${healthzPort}`, ...cniArgs];
      const doctorJson = await doctor(s, [...doctorFlags, '--json']);
      expect(doctorJson.stderr).toBe('');
      const report = JSON.parse(doctorJson.stdout) as { node: string | null; ok: boolean; checks: { id: string; status: string; saw: string }[] };
      const row = (id: string) => report.checks.find((c) => c.id === id);
      const statusOf = Object.fromEntries(report.checks.map((c) => [c.id, c.status]));
      // Every row this node can judge, judged ok; the pins only skip (the plugins here were not installed by
      // install-cni). The cluster rows through the fake API server, the HNS, route and adapter rows through the DLLs.
      expect(statusOf).toEqual({
        agent: 'ok',
        'net-conf': 'ok',
        lease: 'ok',
        'hns-network': 'ok',
        'hns-network-type': 'ok',
        'hns-subnet': 'ok',
        'hns-adapter': 'ok',
        'vtep-mac': 'ok',
        'source-vip': 'ok',
        'source-vip-file': 'ok',
        peers: 'ok',
        'subnet-env': 'ok',
        'cni-conflist': 'ok',
        'cni-network-name': 'ok',
        'cni-subnet-file': 'ok',
        'cni-data-dir': 'ok',
        'cni-outbound-nat': 'ok',
        'cni-loopback-dsr': 'ok',
        'cni-plugins': 'ok',
        'cni-pins': 'skip',
        'adapter-ip': 'ok',
        mtu: 'ok',
        'ipam-leaks': 'ok',
        'ipam-gateway': 'ok',
        'node-condition': 'ok',
        'cluster-vni': 'ok',
        'kube-proxy': 'ok',
        // No containerd in the Wine prefix: no C:\Program Files\containerd\config.toml, doctor's default --containerd-config.
        'cni-containerd': 'skip',
        'hns-version': 'ok',
        // Through the stand-in computenetwork.dll's load-balancer family: no Service needs one here.
        'service-load-balancers': 'ok',
        'leaked-endpoints': 'ok',
        // The agent runs without --network-policy.
        'network-policy': 'skip',
      });
      expect(row('agent')!.saw).toMatch(/in sync \(2\/2 peers\)/);
      expect(row('hns-network')!.saw).toMatch(/^flannel\.4096, ID /);
      expect(row('hns-subnet')!.saw).toBe('10.244.100.0/24, VSID 4096 = the lease');
      expect(row('peers')!.saw).toBe('2 peer RemoteSubnetRoute policies, each as published');
      expect(row('subnet-env')!.saw).toMatch(/run\\flannel\\subnet\.env: FLANNEL_SUBNET=10\.244\.100\.1\/24, FLANNEL_MTU=1450$/);
      // The vSwitch moved the node IP to the host vNIC (as HNS does; src/simulator/host.ts).
      expect(row('adapter-ip')!.saw).toBe(`vEthernet (Ethernet) holds ${WIN_IP}`);
      expect(row('mtu')!.saw).toBe("FLANNEL_MTU 1450 = vEthernet (Ethernet)'s 1500 - 50 (VXLAN)");
      expect(row('source-vip')!.saw).toBe('flannel.4096_sourcevip at 10.244.100.2');
      expect(row('kube-proxy')!.saw).toMatch(/--network-name=flannel\.4096 --source-vip=10\.244\.100\.2/);
      expect(report.checks.filter((c) => c.status === 'fail' || c.status === 'warn')).toEqual([]);
      expect(report.node).toBe(WIN);
      expect(report.ok).toBe(true);
      expect(doctorJson.code).toBe(0);
      const doctorTable = await doctor(s, doctorFlags);
      expect(doctorTable.stderr).toBe('');
      expect(doctorTable.stdout).toMatch(/^ok +agent +flanneld .* is running and in sync \(2\/2 peers\)$/m);
      expect(doctorTable.stdout).toMatch(/^ok +peers +2 peer RemoteSubnetRoute policies, each as published$/m);
      expect(doctorTable.stdout).toMatch(/^all checks passed$/m);
      expect(doctorTable.code).toBe(0);

      // A peer deleted: its policy goes, through HcnModifyNetwork (RequestType Remove).
      s.api.deleteNode('linux-2');
      await waitForAgent(() => remoteSubnetRoutes(s).length === 1, 'the deleted peer policy removed', agent);
      expect(remoteSubnetRoutes(s)).toEqual(['10.244.1.0/24 pa 10.0.0.11 vsid 4096']);
      // handles: every HcnOpen/Create closed; the one kept open for policy writes by the next full pass (resync, 10 s)
      await waitForAgent(() => s.sim.openHandles === 0, 'all HCN handles closed', agent, 20_000);
      expect(s.sim.mibTablesOutstanding).toBe(0);
      expect(s.sim.badFrees).toBe(0);
    }, 180_000);

    it('host-gw: L2Bridge cbr0, cbr0_ep attached, forwarding on, one route per peer on the vNIC; a restart keeps the network', async () => {
      const s = await scenario(HOSTGW_NET_CONF, [WIN_CIDR], hns);
      addLinux(s.api, 1, 'host-gw');
      addLinux(s.api, 2, 'host-gw');
      const agent = start(s);

      await waitForAgent(() => peerRoutes(s).length === 2 && existsSync(subnetEnv()), 'two peer routes and subnet.env', agent);
      const vnic = s.sim.dp.listAdapters().find((a) => a.Name === 'vEthernet (Ethernet)')!;
      expect(vnic.IPAddress).toBe(WIN_IP);
      expect(peerRoutes(s)).toEqual([`10.244.1.0/24 via 10.0.0.11 if ${vnic.InterfaceIndex}`, `10.244.2.0/24 via 10.0.0.12 if ${vnic.InterfaceIndex}`]);
      expect(readFileSync(subnetEnv(), 'utf8')).toBe('FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.100.1/24\nFLANNEL_MTU=1500\nFLANNEL_IPMASQ=true\n');

      const net = s.sim.dp.getNetworkByName('cbr0')!;
      expect(net.Type).toBe('L2Bridge');
      const ep = s.sim.dp.listEndpoints().find((e) => e.Name === 'cbr0_ep')!;
      expect(ep.IpConfigurations![0].IpAddress).toBe('10.244.100.2');
      expect(s.sim.dp.isAttachedToHost(ep.ID!)).toBe(true);
      await waitForAgent(() => s.sim.dp.listAdapters().find((a) => a.Name === 'vEthernet (Ethernet)')!.Forwarding, 'forwarding on the vNIC', agent, 20_000);
      expect(s.sim.count('CreateIpForwardEntry2')).toBeGreaterThanOrEqual(2);
      expect(s.sim.dp.calls.get('CreateIpForwardEntry2')).toBeGreaterThanOrEqual(2);
      expect(s.sim.count('SetIpInterfaceEntry')).toBeGreaterThan(0);
      expect(s.sim.protocolErrors).toEqual([]);

      // A peer deleted: its route goes through DeleteIpForwardEntry2.
      s.api.deleteNode('linux-2');
      await waitForAgent(() => peerRoutes(s).length === 1, 'the deleted peer route removed', agent);
      expect(s.sim.count('DeleteIpForwardEntry2')).toBeGreaterThan(0);

      // Restart: the network (same ID) and the endpoint are kept.
      const networkId = net.ID;
      const created = s.sim.dp.calls.get('HcnCreateNetwork') ?? 0;
      const createdV1 = s.sim.dp.calls.get('HNSCall POST /networks/') ?? 0;
      // The doctor below judges the Node's NetworkUnavailable, which the agent's readiness loop writes on its
      // own schedule (src/agent/readiness.ts): stopping before it did would leave the Node without it.
      await waitForAgent(
        () => s.api.getNode(WIN)?.status?.conditions?.find((c) => c.type === 'NetworkUnavailable' && c.status === 'True'),
        'NetworkUnavailable=True on the Node (no CNI config)',
        agent,
      );
      await agent.stop();

      // `flanneld doctor` with no agent running: it says so and still judges the dataplane through the DLLs.
      // The broken hops it names: no CNI config (an empty conf dir), and so the Node's NetworkUnavailable the
      // agent set (it ran with the default C:\etc\cni\net.d, empty in this prefix).
      const emptyConfDir = join(s.dir, 'empty-net.d');
      mkdirSync(emptyConfDir);
      const ran = await doctor(s, ['--json', `--cni-conf-dir=${winPath(emptyConfDir)}`]);
      expect(ran.stderr).toBe('');
      const rows = Object.fromEntries((JSON.parse(ran.stdout) as { checks: { id: string; status: string }[] }).checks.map((c) => [c.id, c.status]));
      expect(rows).toMatchObject({
        agent: 'warn',
        lease: 'ok',
        'hns-network': 'ok',
        'hns-network-type': 'ok',
        'hns-subnet': 'ok',
        'host-endpoint': 'ok',
        peers: 'ok',
        'subnet-env': 'ok',
        'cni-conflist': 'fail',
        'adapter-ip': 'ok',
        mtu: 'ok',
        'node-condition': 'fail',
      });
      expect(Object.keys(rows).filter((id) => rows[id] === 'fail')).toEqual(['cni-conflist', 'node-condition']);
      expect(ran.code).toBe(1);

      const again = start(s);
      // Its first reconcile pass has read HNS and the route table and written what it would write.
      await waitForAgent(() => /first reconcile pass done/.test(again.log()) && s.sim.count('GetIpForwardTable2') > 0, 'the restarted agent’s first reconcile pass', again);
      expect(s.sim.dp.getNetworkByName('cbr0')!.ID).toBe(networkId);
      expect(s.sim.dp.calls.get('HcnCreateNetwork') ?? 0).toBe(created);
      expect(s.sim.dp.calls.get('HNSCall POST /networks/') ?? 0).toBe(createdV1);
      expect(peerRoutes(s)).toEqual([`10.244.1.0/24 via 10.0.0.11 if ${vnic.InterfaceIndex}`]);
    }, 240_000);

    // Dual-stack host-gw through the Windows build: the adapter's IPv6 address read with
    // GetUnicastIpAddressTable(AF_INET6), IPv6 forwarding set on the AF_INET6 interface row, IPv6 routes
    // written as MIB_IPFORWARD_ROW2 with AF_INET6 addresses, all through the stand-in iphlpapi.dll. The Node's
    // podCIDRs are those of sdnbridge's recording (test/fixtures/cni-traces/sdnbridge-dual-stack-*.json), whose
    // calls are then replayed against the network this build made (as test/integration/sdnbridge-replay.test.ts
    // does against the in-process agent's).
    if (!isFeatureSupported(version, 'IPv6DualStack')) {
      it('dual-stack host-gw: refused before anything is leased or created, FLANNEL_ERR_HNS_VERSION naming HNS 11.10', async () => {
        const s = await scenario(DUAL_NET_CONF, [DUAL_V4, DUAL_V6], hns);
        withIPv6(s);
        const agent = start(s, ['--log-format=json']);
        const exit = await waitForAgentExit(agent);
        expect(exit.code).not.toBe(0);
        expectHnsVersionRefusalLogged(agent.log(), 'IPv6DualStack', version);
        expect(s.sim.dp.snapshot().networks).toEqual([]);
        expect(s.sim.writes.map((w) => w.fn)).toEqual([]);
        expect(s.api.getNode(WIN)!.metadata.annotations?.['flannel.alpha.coreos.com/public-ipv6']).toBeUndefined();
      }, 180_000);
      return;
    }

    it('dual-stack host-gw: the IPv6 address, forwarding and routes through the DLL ABI; sdnbridge replayed on the network it built', async () => {
      const [V4, V6] = [DUAL_V4, DUAL_V6];
      const s = await scenario(DUAL_NET_CONF, [V4, V6], hns);
      withIPv6(s);
      for (const n of [1, 2]) {
        const node = linuxFlannelNode({ name: `linux-${n}`, podCIDR: `10.244.${n}.0/24`, publicIP: `10.0.0.${10 + n}`, backendType: 'host-gw' });
        node.spec = { podCIDR: `10.244.${n}.0/24`, podCIDRs: [`10.244.${n}.0/24`, `fd00:10:244:${n}::/64`] };
        // linux-2 has no public-ipv6: it keeps its IPv4 route only (docs/compatibility.md, dual-stack).
        if (n === 1) Object.assign(node.metadata.annotations!, { 'flannel.alpha.coreos.com/backend-v6-data': 'null', 'flannel.alpha.coreos.com/public-ipv6': 'fd00:10::11' });
        s.api.addNode(node);
      }
      const routes = () =>
        s.sim.dp
          .listRoutes()
          .filter((r) => r.DestinationPrefix.startsWith('10.244.') || r.DestinationPrefix.startsWith('fd00:10:244:'))
          .map((r) => `${r.DestinationPrefix} via ${r.NextHop}`)
          .sort();
      // host-local's store of this scenario's own (the prefix's C:\var\lib\cni is shared with the other scenarios,
      // whose doctor reads the bridge endpoint's reservation there).
      const agent = start(s, [`--cni-ipam-data-dir=${winPath(join(s.dir, 'ipam'))}`]);

      await waitForAgent(() => routes().length === 3 && existsSync(subnetEnv()), 'three peer routes (two IPv4, one IPv6) and subnet.env', agent);
      expect(routes()).toEqual(['10.244.1.0/24 via 10.0.0.11', '10.244.2.0/24 via 10.0.0.12', 'fd00:10:244:1::/64 via fd00:10::11']);
      expect(readFileSync(subnetEnv(), 'utf8')).toBe(
        'FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.3.1/24\nFLANNEL_IPV6_NETWORK=fd00:10:244::/56\nFLANNEL_IPV6_SUBNET=fd00:10:244:3::1/64\nFLANNEL_MTU=1500\nFLANNEL_IPMASQ=true\n',
      );
      // The IPv6 address came through GetUnicastIpAddressTable (no --public-ipv6 given) and was published.
      expect(s.sim.count('GetUnicastIpAddressTable')).toBeGreaterThan(0);
      await waitForAgent(() => s.api.getNode(WIN)!.metadata.annotations?.['flannel.alpha.coreos.com/public-ipv6'], 'public-ipv6 published', agent);
      expect(s.api.getNode(WIN)!.metadata.annotations!['flannel.alpha.coreos.com/public-ipv6']).toBe(WIN_IP6);
      expect(agent.log()).not.toMatch(/does not list the adapter's IPv6 addresses/);
      // One dual-stack L2Bridge and its host endpoint at .2 and ::2; forwarding on for both families on the vNIC.
      const net = s.sim.dp.getNetworkByName('cbr0')!;
      expect(net.Ipams?.flatMap((i) => i.Subnets ?? []).map((x) => x.IpAddressPrefix)).toEqual([V4, V6]);
      const ep = s.sim.dp.listEndpoints().find((e) => e.Name === 'cbr0_ep')!;
      expect(ep.IpConfigurations?.map((c) => c.IpAddress)).toEqual(['10.244.3.2', 'fd00:10:244:3::2']);
      const vnic = () => s.sim.dp.listAdapters().find((a) => a.Name === 'vEthernet (Ethernet)')!;
      await waitForAgent(() => s.sim.dp.getForwarding(vnic().InterfaceIndex, 'ipv6') && vnic().Forwarding, 'IPv4 and IPv6 forwarding on the vNIC', agent, 20_000);
      expect(s.sim.protocolErrors).toEqual([]);

      // A peer's IPv6 half deleted: its route goes through DeleteIpForwardEntry2 with AF_INET6.
      s.api.updateNode('linux-1', (n) => void delete n.metadata.annotations!['flannel.alpha.coreos.com/public-ipv6']);
      await waitForAgent(() => routes().length === 2, 'the IPv6 route removed', agent);
      expect(routes()).toEqual(['10.244.1.0/24 via 10.0.0.11', '10.244.2.0/24 via 10.0.0.12']);

      // sdnbridge's recorded calls on this network: every HRESULT as recorded, the pod endpoint with both families.
      const b = newBindings({ ids: { '<NETWORK_ID>': net.ID! } });
      const expected = (ms: ReplayMismatch[]) => ms.filter((m) => !/HcnQueryNetworkProperties out|HcnEnumerateNetworks out/.test(m.where) && !/PrefixLength/.test(m.where));
      const add = await replayScenario(loadTrace('sdnbridge-dual-stack-add'), s.sim.dp, b, { checkStateBefore: false, checkStateAfter: false });
      expect(add.mismatches.filter((m) => m.where.endsWith(' hr'))).toEqual([]);
      expect(expected(add.mismatches)).toEqual([]);
      const pod = s.sim.dp.listEndpoints().find((e) => e.Name?.startsWith('sdnbridgepod1'))!;
      expect(pod.IpConfigurations).toEqual([
        { IpAddress: '10.244.3.10', PrefixLength: 24 },
        { IpAddress: 'fd00:10:244:3::10', PrefixLength: 64 },
      ]);
      const del = await replayScenario(loadTrace('sdnbridge-dual-stack-del'), s.sim.dp, b, { checkStateBefore: false, checkStateAfter: false });
      expect(del.mismatches.filter((m) => m.where.endsWith(' hr'))).toEqual([]);
      expect(expected(del.mismatches)).toEqual([]);
      expect(s.sim.dp.listEndpoints().map((e) => e.Name)).toEqual(['cbr0_ep']);
      await waitForAgent(() => s.sim.mibTablesOutstanding === 0, 'every MIB table freed', agent, 20_000);
      expect(s.sim.badFrees).toBe(0);
      expect(existsSync(join(s.dir, 'ipam', 'cbr0', '10.244.3.2'))).toBe(true); // the bridge endpoint's address, reserved
    }, 240_000);
  });

  // The host NIC kept (src/host/nic-keeper.ts) through the Windows build: the simulated node's fault mode
  // "the vNIC keeps only DHCP settings" (docs/simulator.md) leaves vEthernet (Ethernet) on APIPA without its
  // gateway or DNS servers; the agent reads the NIC with GetUnicastIpAddressTable / GetIpForwardTable2
  // (AF_UNSPEC, the origins decoded from the rows the stand-in iphlpapi.dll fills) and GetInterfaceDnsSettings
  // (its DNS_INTERFACE_SETTINGS' NameServer, by the GUID ConvertInterfaceLuidToGuid gives, freed with
  // FreeInterfaceDnsSettings), and puts the address back with InitializeUnicastIpAddressEntry +
  // CreateUnicastIpAddressEntry, the routes with CreateIpForwardEntry2 and the DNS servers with
  // SetInterfaceDnsSettings(DNS_SETTING_NAMESERVER). A second NIC the agent did not choose is never written.
  it('host-gw on a NIC whose vNIC fell back to APIPA: the static address, gateway, persistent route and DNS servers restored through the DLL ABI, with the Event', async () => {
    const s = await scenario(HOSTGW_NET_CONF);
    addLinux(s.api, 1, 'host-gw');
    const dns = ['10.0.0.53', '10.0.0.54'];
    const other = { Name: 'Ethernet 2', InterfaceIndex: 9, IPAddress: '192.168.50.7', PrefixLength: 24, Mtu: 1500, Forwarding: false, DnsServers: ['192.168.50.1'] };
    editState(s.sim.dp, (st) => {
      st.vnicSettings = 'dhcp-only';
      st.routes.push({ DestinationPrefix: '192.168.200.0/22', NextHop: '10.0.0.254', InterfaceIndex: 4, Metric: 5 });
      st.adapters[0].DnsServers = [...dns];
      st.adapters.push({ ...other, DnsServers: [...other.DnsServers] });
    });
    const agent = start(s);
    await waitForAgent(() => /restored the settings HNS dropped from Ethernet/.test(agent.log()) && peerRoutes(s).length === 1, 'the NIC restored and the peer route', agent);
    const vnic = s.sim.dp.listAdapters().find((a) => a.Name === 'vEthernet (Ethernet)')!;
    expect(vnic).toMatchObject({ IPAddress: WIN_IP, PrefixLength: 24 });
    expect(vnic.Dhcp).toBeUndefined();
    const onVnic = s.sim.dp.listRoutes(vnic.InterfaceIndex).map((r) => `${r.DestinationPrefix} via ${r.NextHop} metric ${r.Metric}`);
    expect(onVnic).toEqual(expect.arrayContaining(['0.0.0.0/0 via 10.0.0.1 metric 0', '192.168.200.0/22 via 10.0.0.254 metric 5']));
    expect(s.sim.count('CreateUnicastIpAddressEntry')).toBe(1);
    expect(vnic.DnsServers).toEqual(dns);
    expect(s.sim.count('SetInterfaceDnsSettings')).toBe(1);
    expect(s.sim.dp.listAdapters().find((a) => a.Name === other.Name)).toEqual(other);
    const restored = await waitForAgent(
      () => s.api.events({ kind: 'Node', name: WIN }).find((e) => e['reason'] === 'FlannelHostNICRestored'),
      'the FlannelHostNICRestored Event',
      agent,
      20_000,
    );
    expect(restored['message']).toMatch(/restored address 10\.0\.0\.2\/24, .*DNS servers 10\.0\.0\.53,10\.0\.0\.54/);
    expect(s.sim.protocolErrors).toEqual([]);
    await waitForAgent(() => s.sim.mibTablesOutstanding === 0 && s.sim.dnsSettingsOutstanding === 0, 'every MIB table and DNS settings read freed', agent, 20_000);
    expect(s.sim.badDnsFrees).toBe(0);
  }, 180_000);

  it('an HNS error (0x803B0010 on network creation) surfaces as a coded error with a clear log line', async () => {
    const s = await scenario(HOSTGW_NET_CONF);
    addLinux(s.api, 1, 'host-gw');
    // Both the v2 and the v1 creation paths fail once with "network name already exists".
    s.sim.dp.injections.failNext('HcnCreateNetwork', 0x803b0010);
    s.sim.dp.injections.failNext('HNSCall POST /networks/', 0x803b0010);
    const agent = start(s);
    await waitForAgent(() => /0x803B0010/i.test(agent.log()), 'the HRESULT in the log', agent);
    const line = agent
      .log()
      .split('\n')
      .find((l) => /0x803B0010/i.test(l))!;
    expect(line).toMatch(/ERROR/);
    expect(line).toMatch(/FLANNEL_ERR_HNS_EXISTS/);
    expect(line).toMatch(/already exists/i);
    expect(line).toMatch(/network=cbr0/);
    // Network creation at start-up is fatal (as upstream flanneld): the agent exits non-zero and the
    // service manager restarts it; the restarted agent programs the network.
    let timer: NodeJS.Timeout | undefined;
    const exit = await Promise.race([agent.exited, new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), 30_000)))]);
    clearTimeout(timer);
    expect(exit?.code ?? 'still running').not.toBe(0);
    const again = start(s);
    await waitForAgent(() => s.sim.dp.getNetworkByName('cbr0') && peerRoutes(s).length === 1, 'recovery after a restart', again);
  }, 180_000);

  it('an ErrorRecord with S_OK still counts as a failure', async () => {
    const s = await scenario(VXLAN_NET_CONF);
    addLinux(s.api, 1, 'vxlan');
    s.sim.dp.injections.failNext('HcnModifyNetwork', 0x80070057);
    s.sim.errorRecordOnly('HcnModifyNetwork');
    const agent = start(s);
    await waitForAgent(() => /HcnModifyNetwork/.test(agent.log()) && /0x80070057|parameter is incorrect/i.test(agent.log()), 'the ErrorRecord failure in the log', agent);
    await waitForAgent(() => remoteSubnetRoutes(s).length === 1, 'the policy added on retry', agent);
  }, 180_000);
});

// The kube-proxy live tier (docs/testing.md "The kube-proxy live tier"): a real kube-proxy.exe (winkernel,
// `--proxy-mode=kernelspace`, the flags of the recorded runs in test/fixtures/kube-proxy-traces) under Wine
// against the network the agent's Windows build made, on both backends. The agent runs as the Windows tier
// runs it (flanneld.exe, the stand-in DLLs by --win32-dll-dir); kube-proxy loads vmcompute.dll and
// computenetwork.dll from the prefix's system32 (hcsshim's NewLazySystemDLL), as the CNI plugins do in
// ./cni.test.ts, and reads the host's interfaces through Wine's own iphlpapi. Each process talks to its own
// WindowsSimServer over the one state file, as two processes on a node share one HNS, so the agent's calls
// are told from kube-proxy's. The fake API server holds the recorded Nodes, Services and EndpointSlices
// (inputs.kubernetesObjects). It asserts what the replay tier asserts (test/support/kube-proxy-replay.ts
// checkServicePath, kubeProxyObjects, writesSince): remote endpoints with the peer's provider address (vxlan),
// load balancers with the agent's source VIP (vxlan), and no write of the agent while kube-proxy runs.
//
// The binary cannot be distributed with this project: FLANNEL_KUBE_PROXY_EXE names it, hash-checked
// (./kube-proxy-exe.ts); without it the tier skips with one line, under CI=true too. The hash check itself
// runs in CI (first describe below).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, closeSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import yaml from 'js-yaml';
import { FakeKubeApiServer, bareNode, linuxFlannelNode, writeKubeconfig } from '../../src/demo/kube-fake/api-server.js';
import type { FakeNamespacedObject } from '../../src/demo/kube-fake/services.js';
import type { HcnEndpoint } from '../../src/hns/schema.js';
import { SimulatedDataplane } from '../../src/simulator/model.js';
import { PASSES_ENDED, waitForIncrease } from '../support/agent-signals.js';
import { freePort } from '../support/free-port.js';
import { checkServicePath, kubeProxyHnsVersion, kubeProxyObjects, loadKubeProxyTrace, writesSince } from '../support/kube-proxy-replay.js';
import { waitFor } from '../support/wait-for.js';
import {
  CACHE,
  driveC,
  mustFailWhenSkipped,
  prepareHarness,
  resetPrefixRunDir,
  startWindowsAgent,
  windowsHarness,
  wineEnv,
  winPath,
  type PreparedHarness,
  type WindowsAgent,
} from '../support/windows.js';
import { WindowsSimServer } from '../windows/sim-server.js';
import { judgeKubeProxyExe, kubeProxyExe, KUBE_PROXY_EXE_VARIABLE, type KubeProxyPin } from './kube-proxy-exe.js';

const WIN = 'win-1';
const POD_CIDR = '10.244.100.0/24';
/** The recordings' peer (inputs.kubernetesObjects). */
const PEER = { name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', vtepMAC: 'aa:bb:cc:00:00:0b' };
const WAIT_MS = 180_000;
/** The tier's own prefix: kube-proxy needs the stand-ins in system32, which the Windows tier's prefix must not have. */
const PREFIX = join(CACHE, 'kube-proxy-prefix');

const sha256Hex = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

describe('the kube-proxy.exe hash check (no binary needed)', () => {
  const exe = Buffer.from('MZ a kube-proxy.exe stand-in');
  const other = Buffer.from('MZ another file');
  const pin: KubeProxyPin = { version: 'v1.0.0', sha256: sha256Hex(exe), source: 'https://dl.k8s.io/release/v1.0.0/bin/windows/amd64/kube-proxy.exe.sha256' };

  it.each<[string, Buffer, string | undefined, KubeProxyPin[], 'checked' | 'refused']>([
    ['a pinned file', exe, undefined, [pin], 'checked'],
    ['a file that matches the .sha256 beside it (bare hex, as dl.k8s.io serves it)', exe, `${sha256Hex(exe)}\n`, [], 'checked'],
    ['a file that matches a sha256sum line beside it', exe, `${sha256Hex(exe)}  kube-proxy.exe\n`, [], 'checked'],
    ['a wrong file: neither pinned nor with a .sha256', other, undefined, [pin], 'refused'],
    ['a wrong file beside the .sha256 of the right one', other, sha256Hex(exe), [pin], 'refused'],
    ['a .sha256 that holds no hash', exe, 'not a hash', [], 'refused'],
  ])('%s', (_name, bytes, sidecar, pins, want) => {
    expect(judgeKubeProxyExe('kube-proxy.exe', bytes, sidecar, pins).kind).toBe(want);
  });

  it('FLANNEL_KUBE_PROXY_EXE: unset skips; a missing file, or one that does not match its .sha256, is refused', () => {
    expect(kubeProxyExe({}).kind).toBe('unset');
    const dir = mkdtempSync(join(tmpdir(), 'kube-proxy-exe-'));
    try {
      const file = join(dir, 'kube-proxy.exe');
      expect(kubeProxyExe({ [KUBE_PROXY_EXE_VARIABLE]: file })).toMatchObject({ kind: 'refused', reason: expect.stringMatching(/no such file/) });
      writeFileSync(file, other);
      expect(kubeProxyExe({ [KUBE_PROXY_EXE_VARIABLE]: file })).toMatchObject({ kind: 'refused', reason: expect.stringMatching(/matches no pinned/) });
      writeFileSync(`${file}.sha256`, sha256Hex(exe));
      expect(kubeProxyExe({ [KUBE_PROXY_EXE_VARIABLE]: file })).toMatchObject({ kind: 'refused', reason: expect.stringMatching(/does not match/) });
      writeFileSync(file, exe);
      expect(kubeProxyExe({ [KUBE_PROXY_EXE_VARIABLE]: file })).toMatchObject({ kind: 'checked', sha256: sha256Hex(exe) });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// Without FLANNEL_KUBE_PROXY_EXE the live tier skips with one line, under CI=true too: the binary cannot be
// distributed, and the replay tier (test/integration/kube-proxy-replay.test.ts) covers its recorded calls in CI.
const supplied = kubeProxyExe();
const harness = supplied.kind === 'unset' ? { run: false, reason: supplied.reason } : windowsHarness();
const runs = harness.run && supplied.kind === 'checked';
if (supplied.kind === 'unset') {
  process.stderr.write(supplied.reason + '\n');
} else if (!runs) {
  const reason = supplied.kind === 'refused' ? supplied.reason : (harness.reason ?? '');
  if (mustFailWhenSkipped() || supplied.kind === 'refused') {
    describe('kube-proxy live tier', () => {
      it('requires wine, mingw-w64 and a kube-proxy.exe whose hash checks out once FLANNEL_KUBE_PROXY_EXE is set', () => {
        throw new Error(`${reason} (FLANNEL_KUBE_PROXY_EXE is set, so this is not skipped)`);
      });
    });
  } else {
    process.stderr.write(reason + '\n');
  }
}

/**
 * The node's IP: an IPv4 address of this host with a MAC. winkernel looks the host MAC up among the host's
 * interfaces by the Node's InternalIP (proxier.go NewProxier: "could not find host mac address"), and under
 * Wine those are the Linux host's, so the simulated node takes one of them as its own.
 */
function hostIPv4(): string {
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal && a.mac !== '00:00:00:00:00:00') return a.address;
  }
  throw new Error('the kube-proxy live tier needs an IPv4 address with a MAC on this host (winkernel looks the host MAC up by the node IP)');
}

/** The recording's Services and EndpointSlices (inputs.kubernetesObjects). */
function recordedServiceObjects(text: string): { services: FakeNamespacedObject[]; slices: FakeNamespacedObject[] } {
  const docs = yaml.loadAll(text) as { kind?: string }[];
  return {
    services: docs.filter((d) => d.kind === 'Service') as FakeNamespacedObject[],
    slices: docs.filter((d) => d.kind === 'EndpointSlice') as FakeNamespacedObject[],
  };
}

const BACKENDS = [
  { name: 'vxlan', trace: 'vxlan-load-balancers-stubbed' },
  { name: 'host-gw', trace: 'host-gw-load-balancers-stubbed' },
] as const;

(runs ? describe.each(BACKENDS) : describe.skip.each(BACKENDS))('the real kube-proxy (winkernel) on the agent’s $name network', ({ trace: traceName }) => {
  const trace = loadKubeProxyTrace(traceName);
  const version = kubeProxyHnsVersion(trace);
  let prepared: PreparedHarness;
  let dir: string;
  let api: FakeKubeApiServer;
  let sim: WindowsSimServer;
  let kpSim: WindowsSimServer;
  let agent: WindowsAgent;
  let kubeProxy: ChildProcess | undefined;
  let kubeProxyLog: string;
  let healthzPort: number;

  const detail = () => `agent log:\n${agent?.log().slice(-4000) ?? ''}\nkube-proxy log:\n${existsSync(kubeProxyLog) ? readFileSync(kubeProxyLog, 'utf8').slice(-6000) : ''}`;
  const waitLive = <T>(fn: () => T | undefined | false, what: string) =>
    waitFor(fn, what, {
      timeoutMs: WAIT_MS,
      intervalMs: 200,
      failIf: () =>
        agent.child.exitCode !== null
          ? `the agent exited while waiting for ${what}`
          : kubeProxy?.exitCode != null
            ? `kube-proxy exited (${kubeProxy.exitCode}) while waiting for ${what}`
            : undefined,
      detail,
    });

  beforeAll(async () => {
    prepared = await prepareHarness({ agent: true, prefix: PREFIX, system32Standins: true });
    resetPrefixRunDir(PREFIX);
    const nodeIP = hostIPv4();
    mkdirSync(join(CACHE, 'runs'), { recursive: true });
    dir = mkdtempSync(join(CACHE, 'runs', `kube-proxy-${trace.backend}-`));
    kubeProxyLog = join(dir, 'kube-proxy.log');
    const statePath = join(dir, 'dataplane.json');
    // One node, two processes: the agent's and kube-proxy's simulated HNS over one state file, at the recorded version.
    sim = new WindowsSimServer({ dataplane: { nodeIP, statePath }, hns: { version } });
    sim.dp.store.update((s) => void (s.hnsVersion = `${version.Major}.${version.Minor}`));
    kpSim = new WindowsSimServer({ dp: new SimulatedDataplane({ statePath }), hns: { version } });
    await sim.start();
    await kpSim.start();
    api = new FakeKubeApiServer();
    await api.start();
    const kubeconfig = join(dir, 'kubeconfig');
    await writeKubeconfig(kubeconfig, api.url);
    const netConfPath = join(dir, 'net-conf.json');
    writeFileSync(netConfPath, JSON.stringify(trace.agent.netConf));
    api.addNode(bareNode({ name: WIN, podCIDR: POD_CIDR, internalIP: nodeIP }));
    api.addNode(linuxFlannelNode({ ...PEER, backendType: trace.backend }));
    const { services, slices } = recordedServiceObjects((trace as unknown as { inputs: { kubernetesObjects: string } }).inputs.kubernetesObjects);
    for (const svc of services) api.addService(svc);
    for (const slice of slices) api.addEndpointSlice(slice);
    healthzPort = await freePort();
    agent = startWindowsAgent({
      nodeExe: prepared.nodeExe,
      stage: prepared.stage,
      dllDir: prepared.build.dllDir,
      simPort: sim.port,
      nodeName: WIN,
      kubeconfig,
      netConfPath,
      logDir: dir,
      prefix: PREFIX,
      extraArgs: ['--iface', nodeIP, '--healthz-ip=127.0.0.1', `--healthz-port=${healthzPort}`],
    });
    const agentEndpoint = trace.backend === 'vxlan' ? `${trace.network}_sourcevip` : 'cbr0_ep';
    await waitLive(() => sim.dp.listEndpoints().some((e) => e.Name === agentEndpoint), `the ${trace.network} network and ${agentEndpoint}`);
    // inputs.podEndpointMadeByHarness: the local pod endpoint, made as the replay tier makes it.
    const pod = (trace.stateBefore.endpoints as (HcnEndpoint & { ID: string })[]).find((e) => e.ID === '<POD_ENDPOINT_ID>')!;
    const { ID: _id, HostComputeNetwork: _net, ...settings } = pod;
    sim.dp.createEndpoint('HcnCreateEndpoint', sim.dp.getNetworkByName(trace.network)!.ID!, settings);
  }, 900_000);

  afterAll(async () => {
    if (kubeProxy && kubeProxy.exitCode === null) kubeProxy.kill('SIGKILL');
    await agent?.stop();
    await sim?.stop();
    await kpSim?.stop();
    await api?.stop();
  }, 60_000);

  it('kube-proxy programs the Services on the agent’s network: remote endpoints with the peer’s PA (vxlan), load balancers with the source VIP (vxlan); the agent writes nothing of kube-proxy’s', async () => {
    const vip = trace.backend === 'vxlan' ? (JSON.parse(readFileSync(driveC('run/flannel/sourcevip.json', PREFIX), 'utf8')) as { ip: string }).ip : undefined;
    const agentCalls = new Map(sim.dp.calls);
    // The recorded flags, with this run's kubeconfig, source VIP and ports.
    const args = trace.kubeProxy.args
      .filter((a) => !/^--(kubeconfig|source-vip|healthz-bind-address|metrics-bind-address)=/.test(a))
      .concat([`--kubeconfig=${winPath(join(dir, 'kubeconfig'))}`, `--healthz-bind-address=127.0.0.1:${await freePort()}`, `--metrics-bind-address=127.0.0.1:${await freePort()}`])
      .concat(vip ? [`--source-vip=${vip}`] : []);
    const log = openSync(kubeProxyLog, 'w');
    try {
      kubeProxy = spawn('wine', [supplied.kind === 'checked' ? supplied.exe : '', ...args], {
        env: wineEnv({ WINEPREFIX: PREFIX, FLANNEL_SIM_PORT: String(kpSim.port), WINEDLLOVERRIDES: 'mscoree,mshtml=;vmcompute,computenetwork=n' }),
        stdio: ['ignore', log, log],
      });
    } finally {
      closeSync(log);
    }
    await waitLive(() => (sim.dp.snapshot().loadBalancers ?? []).length === 3, 'kube-proxy’s three load balancers');
    const objects = kubeProxyObjects(sim.dp.snapshot());
    // The agent's resync runs over kube-proxy's objects (two more passes).
    await waitForIncrease(() => fetch(`http://127.0.0.1:${healthzPort}/metrics`).then((r) => r.text()), PASSES_ENDED, 2, 'two reconcile passes after kube-proxy programmed', {
      timeoutMs: WAIT_MS,
    });
    expect(kubeProxyObjects(sim.dp.snapshot())).toEqual(objects);
    expect(writesSince(sim.dp.calls, agentCalls)).toEqual({});
    checkServicePath(trace, sim.dp.snapshot(), PEER, vip);
    expect(sim.protocolErrors.concat(kpSim.protocolErrors)).toEqual([]);
  }, 600_000);
});

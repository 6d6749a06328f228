// `--restart-service-on-hns-restart` under Wine's service control manager: the agent (the Windows build,
// win32 dataplane on the stand-in DLLs) reads the hns service's process ID through advapi32's
// QueryServiceStatusEx, and when it changes (HNS restarted: AKS's task watches the same signal,
// Azure/AgentBaker#2085) re-applies the network and restarts the named service through ControlService
// SERVICE_CONTROL_STOP and StartServiceW. Both services are test/windows/standins/dummysvc.c registered
// with `sc create`; each records its starts with its PID. A prefix of its own with a persistent
// wineserver (services end with the last Wine process of a prefix), killed at the end.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { FakeKubeApiServer, bareNode, linuxFlannelNode, writeKubeconfig } from '../../src/demo/kube-fake/api-server.js';
import { WIN_IP } from '../support/cluster.js';
import { waitFor } from '../support/wait-for.js';
import {
  CACHE,
  ensureIsolatedPrefix,
  expectRun,
  explainRun,
  mustFailWhenSkipped,
  prepareHarness,
  resetPrefixRunDir,
  runUnderWine,
  SERVICES_PIPE_TIMEOUT_MS,
  servicesPipeTimeout,
  startWindowsAgent,
  startWineSession,
  windowsHarness,
  wineEnv,
  winPath,
  type PreparedHarness,
  type WineRun,
  type WindowsAgent,
} from '../support/windows.js';
import { WindowsSimServer } from './sim-server.js';

const run = promisify(execFile);
const harness = windowsHarness();
const WIN = 'win-1';

if (!harness.run && mustFailWhenSkipped()) {
  describe('Windows harness (HNS restart service)', () => {
    it('requires wine64 and mingw-w64 under CI', () => {
      throw new Error(`${harness.reason} (.ci/run installs them; CI=true does not allow skipping)`);
    });
  });
}

(harness.run ? describe : describe.skip)('--restart-service-on-hns-restart under Wine’s service control manager', () => {
  let prepared: PreparedHarness;
  let prefix: string;
  let dir: string;
  let env: Record<string, string>;
  let api: FakeKubeApiServer | undefined;
  let sim: WindowsSimServer | undefined;
  let agent: WindowsAgent | undefined;

  const sc = (args: string[]) => runUnderWine('sc', args, { env, timeoutMs: 30_000 });
  const starts = (svc: string) => {
    const f = join(dir, `${svc}.log`);
    return existsSync(f) ? [...readFileSync(f, 'utf8').matchAll(/^start (\d+)$/gm)].map((m) => m[1]) : [];
  };
  const sessionLog = () => join(dir, 'wine-session.log');
  const state = async (svc: string) => /STATE\s*:\s*\d+\s+(\w+)/.exec((await sc(['query', svc])).stdout)?.[1];
  /** Wait for `svc` to reach `want` after `sc <control> svc`, whose whole run the timeout message carries. */
  const waitState = (svc: string, want: string, control: WineRun) =>
    waitFor(async () => (await state(svc)) === want, `${svc} ${want}`, {
      timeoutMs: 30_000,
      intervalMs: 250,
      detail: () =>
        `sc ${control.code === 0 ? 'succeeded' : 'failed'}: ${explainRun(control)}\n--- ${svc}'s starts: ${starts(svc).join(', ') || 'none'}` +
        `\n--- the session's Wine errors (services.exe):\n${readFileSync(sessionLog(), 'utf8').slice(-4000)}`,
    });

  beforeAll(async () => {
    prefix = await ensureIsolatedPrefix('prefix-scm');
    // services.exe's 10 s default failed `sc start hns` under load (SERVICES_PIPE_TIMEOUT_MS)
    expect(servicesPipeTimeout(prefix)).toBe(SERVICES_PIPE_TIMEOUT_MS);
    prepared = await prepareHarness({ agent: true, prefix });
    env = { WINEPREFIX: prefix };
    mkdirSync(join(CACHE, 'runs'), { recursive: true });
    dir = mkdtempSync(join(CACHE, 'runs', 'scm-'));
    await startWineSession(prefix, sessionLog());
    for (const svc of ['hns', 'kubeproxy']) {
      await sc(['stop', svc]);
      await sc(['delete', svc]); // a leftover of a killed run
      const created = await sc(['create', svc, 'binPath=', `${winPath(prepared.build.dummyServiceExe)} ${winPath(join(dir, `${svc}.log`))}`]);
      expectRun(created, `sc create ${svc}`, { code: 0 });
      await waitState(svc, 'RUNNING', await sc(['start', svc]));
    }
  }, 600_000);

  afterAll(async () => {
    await agent?.stop();
    await sim?.stop();
    await api?.stop();
    if (prefix) {
      for (const svc of ['hns', 'kubeproxy']) {
        await sc(['stop', svc]).catch(() => undefined);
        await sc(['delete', svc]).catch(() => undefined);
      }
      await run('wineserver', ['-k'], { env: wineEnv(env), timeout: 30_000 }).catch(() => undefined);
      resetPrefixRunDir(prefix);
    }
  }, 90_000);

  it('the hns service restarted in a new process: the agent re-applies the network, then restarts kubeproxy', async () => {
    resetPrefixRunDir(prefix);
    sim = new WindowsSimServer({ dataplane: { nodeIP: WIN_IP, statePath: join(dir, 'dataplane.json') } });
    await sim.start();
    api = new FakeKubeApiServer();
    await api.start();
    const kubeconfig = join(dir, 'kubeconfig');
    await writeKubeconfig(kubeconfig, api.url);
    const netConfPath = join(dir, 'net-conf.json');
    writeFileSync(netConfPath, JSON.stringify({ Network: '10.244.0.0/16', Backend: { Type: 'host-gw' } }));
    api.addNode(bareNode({ name: WIN, podCIDR: '10.244.100.0/24', internalIP: WIN_IP }));
    api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'host-gw' }));
    expect(starts('kubeproxy')).toHaveLength(1);
    const hnsPid = starts('hns')[0];

    const a = (agent = startWindowsAgent({
      nodeExe: prepared.nodeExe,
      stage: prepared.stage,
      dllDir: prepared.build.dllDir,
      simPort: sim.port,
      nodeName: WIN,
      kubeconfig,
      netConfPath,
      logDir: dir,
      prefix,
      extraArgs: ['--iface', WIN_IP, '--restart-service-on-hns-restart=kubeproxy', '--cni-conf-dir=none'],
    }));
    const waitLog = (re: RegExp, what: string, timeoutMs = 90_000) =>
      waitFor(() => re.test(a.log()), what, {
        timeoutMs,
        intervalMs: 200,
        failIf: () => (a.child.exitCode !== null ? `the agent exited (${a.child.exitCode}); its log:\n${a.log().slice(-6000)}` : undefined),
        detail: () => `agent log:\n${a.log().slice(-6000)}`,
      });
    await waitLog(/first reconcile pass done/, 'the first reconcile pass');

    // HNS restarts: the service stops and starts in a new process; HNS lost the endpoints it had not persisted.
    await waitState('hns', 'STOPPED', await sc(['stop', 'hns']));
    sim.dp.restartHns();
    await waitState('hns', 'RUNNING', await sc(['start', 'hns']));
    const newHnsPid = starts('hns')[1];
    expect(newHnsPid).toBeDefined();

    // The agent saw the new PID through QueryServiceStatusEx (no sc.exe), re-applied, then restarted kubeproxy.
    await waitLog(/the HNS service restarted \(new process\)/, 'the HNS restart detected');
    const detected = a
      .log()
      .split('\n')
      .find((l) => /the HNS service restarted/.test(l))!;
    expect(detected).toContain(`previous=${hnsPid}`);
    expect(detected).toContain(`now=${newHnsPid}`);
    await waitLog(/restarted service after the HNS restart service=kubeproxy/, 'kubeproxy restarted', 90_000);
    expect(starts('kubeproxy')).toHaveLength(2);
    expect(await state('kubeproxy')).toBe('RUNNING');
    expect(a.log()).not.toMatch(/FLANNEL_ERR_SERVICE/);
    expect(sim.dp.listEndpoints().some((e) => e.Name === 'cbr0_ep')).toBe(true);
  }, 300_000);
});

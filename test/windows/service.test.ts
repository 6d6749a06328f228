// `flanneld service ...`: argument handling (any platform), and the packaged flanneld.exe +
// flanneld-service.exe under Wine's service control manager: install, start (the agent writes
// subnet.env against a fake API server on the simulated dataplane), stop within 10 s, uninstall.
// The Wine part uses a prefix of its own with a persistent wineserver (services end with the last
// Wine process of a prefix), killed at the end without touching the other suites' Wine processes.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { FakeKubeApiServer, bareNode, writeKubeconfig } from '../../src/demo/kube-fake/api-server.js';
import type { CommandIO } from '../../src/commands/command.js';
import { hostArgs, parseServiceArgs, runService, type ServiceDeps, type ServiceOptions } from '../../src/commands/service.js';
import {
  CACHE,
  buildWindowsArtifacts,
  ensureIsolatedPrefix,
  ensurePackage,
  ensurePrefix,
  ensureWindowsNode,
  mustFailWhenSkipped,
  runUnderWine,
  startWineSession,
  winPath,
  windowsHarness,
  wineEnv,
  type BuiltPackage,
} from '../support/windows.js';

const run = promisify(execFile);

function io(platform: NodeJS.Platform = 'win32') {
  const out: string[] = [];
  const err: string[] = [];
  const c: CommandIO = { stdout: (t) => void out.push(t), stderr: (t) => void err.push(t), env: {}, platform };
  return { io: c, out, err };
}

function fakeDeps(over: Partial<ServiceDeps> = {}): ServiceDeps & { calls: { host: string; args: string[] }[] } {
  const calls: { host: string; args: string[] }[] = [];
  return {
    calls,
    execPath: 'C:\\k\\flannel\\flanneld.exe',
    mainScript: 'C:\\k\\flannel\\flanneld.exe',
    isSea: () => Promise.resolve(true),
    exists: () => true,
    runHost: (host, args) => {
      calls.push({ host, args });
      return Promise.resolve(0);
    },
    ...over,
  };
}

describe('flanneld service: arguments', () => {
  it('install: defaults, options (both --flag value and --flag=value) and the agent flags after --', () => {
    const o = parseServiceArgs([
      'install',
      '--name=flannel2',
      '--log-dir',
      'D:\\logs',
      '--env',
      'NODE_NAME=win-1',
      '--log-keep=0',
      '--',
      '--kube-subnet-mgr',
      '--iface',
      '10.0.0.2',
    ]) as ServiceOptions;
    expect(o).toMatchObject({ verb: 'install', name: 'flannel2', logDir: 'D:\\logs', logMaxMb: 10, logKeep: 0, env: ['NODE_NAME=win-1'], timeout: 30 });
    expect(o.agentArgs).toEqual(['--kube-subnet-mgr', '--iface', '10.0.0.2']);
    expect(parseServiceArgs(['status'])).toMatchObject({ verb: 'status', name: 'flanneld', logDir: 'C:\\k\\logs\\flanneld' });
    expect(parseServiceArgs([])).toBe('help');
    expect(parseServiceArgs(['install', '--help'])).toBe('help');
  });

  it.each([
    [['frobnicate'], /unknown service command/],
    [['install', '--kube-subnet-mgr'], /not defined.*after --/],
    [['install', '--log-max-mb', '0'], /-log-max-mb/],
    [['install', '--env', 'novalue'], /NAME=VALUE/],
    [['install', '--name', 'a b'], /invalid service name/],
    [['stop', '--log-dir', 'x'], /only goes with install/],
    [['start', '--', '--iface', 'x'], /only go with install/],
    [['install', '--name'], /needs an argument/],
  ])('rejects %j', (args, re) => {
    expect(() => parseServiceArgs(args)).toThrow(re);
  });

  it('builds the host command line: the exe, log settings, env, then the agent flags', () => {
    const o = parseServiceArgs(['install', '--env', 'NODE_NAME=w', '--', '--kube-subnet-mgr']) as ServiceOptions;
    expect(hostArgs(o, { exe: 'C:\\k\\flanneld.exe', exeArgs: [] })).toEqual([
      'install',
      '--name',
      'flanneld',
      '--timeout',
      '30',
      '--exe',
      'C:\\k\\flanneld.exe',
      '--log-dir',
      'C:\\k\\logs\\flanneld',
      '--log-max-mb',
      '10',
      '--log-keep',
      '5',
      '--env',
      'NODE_NAME=w',
      '--',
      '--kube-subnet-mgr',
    ]);
    expect(hostArgs(parseServiceArgs(['stop', '--timeout', '15']) as ServiceOptions, { exe: 'x', exeArgs: [] })).toEqual(['stop', '--name', 'flanneld', '--timeout', '15']);
  });

  it('install checks the agent flags with the agent parser before touching the SCM', async () => {
    const t = io();
    const deps = fakeDeps();
    expect(await runService(['install', '--', '--kube-subnet-mgr', '--no-such-flag'], t.io, deps)).toBe(2);
    expect(t.err.join('')).toMatch(/no-such-flag/);
    expect(await runService(['install', '--', '--version'], t.io, deps)).toBe(2);
    expect(deps.calls).toEqual([]);
  });

  it('runs flanneld-service.exe beside the exe; outside the single executable the main script goes first', async () => {
    const sea = fakeDeps();
    const missingEnv = io();
    expect(await runService(['install', '--', '--kube-subnet-mgr'], missingEnv.io, sea)).toBe(2);
    expect(missingEnv.err.join('')).toMatch(/--env NAME=VALUE/);
    expect(await runService(['install', '--env', 'NODE_NAME=w', '--', '--kube-subnet-mgr'], io().io, sea)).toBe(0);
    expect(sea.calls[0].host).toBe('C:\\k\\flannel\\flanneld-service.exe');
    expect(sea.calls[0].args.slice(-2)).toEqual(['--', '--kube-subnet-mgr']);
    const plain = fakeDeps({ execPath: 'C:\\node\\node.exe', mainScript: 'C:\\app\\dist\\main.js', isSea: () => Promise.resolve(false) });
    expect(await runService(['install', '--service-host', 'C:\\k\\svc.exe', '--env', 'NODE_NAME=w', '--', '--kube-subnet-mgr'], io().io, plain)).toBe(0);
    expect(plain.calls[0].host).toBe('C:\\k\\svc.exe');
    expect(plain.calls[0].args).toContain('C:\\node\\node.exe');
    expect(plain.calls[0].args.slice(-3)).toEqual(['--', 'C:\\app\\dist\\main.js', '--kube-subnet-mgr']);
  });

  it('reports a missing host, a host exit code, and non-Windows platforms', async () => {
    const missing = io();
    expect(await runService(['status'], missing.io, fakeDeps({ exists: () => false }))).toBe(1);
    expect(missing.err.join('')).toMatch(/flanneld-service\.exe not found/);
    expect(await runService(['status'], io().io, fakeDeps({ runHost: () => Promise.resolve(3) }))).toBe(3);
    const linux = io('linux');
    expect(await runService(['status'], linux.io, fakeDeps())).toBe(1);
    expect(linux.err.join('')).toMatch(/need Windows/);
    const help = io('linux');
    expect(await runService(['--help'], help.io, fakeDeps())).toBe(0);
    expect(help.out.join('')).toMatch(/5 s, 10 s and 30 s/);
  });
});

// ---------------------------------------------------------------- under Wine's SCM

const harness = windowsHarness();

if (!harness.run && mustFailWhenSkipped()) {
  describe('Windows harness (service)', () => {
    it('requires wine64 and mingw-w64 under CI', () => {
      throw new Error(`${harness.reason} (.ci/run installs them; CI=true does not allow skipping)`);
    });
  });
}

const SVC = 'flanneld-test';
const NODE = 'win-1';

(harness.run ? describe : describe.skip)('flanneld.exe service under Wine’s service control manager', () => {
  let pkg: BuiltPackage;
  let prefix: string;
  let api: FakeKubeApiServer;
  let dir: string;
  let env: Record<string, string>;

  const exe = () => join(pkg.dir, 'flanneld.exe');
  const flanneld = (args: string[], timeoutMs = 60_000) => runUnderWine(exe(), args, { env, timeoutMs });
  const wineCmd = (args: string[], timeoutMs = 30_000) => runUnderWine(args[0], args.slice(1), { env, timeoutMs });
  const logFile = () => join(prefix, 'drive_c', 'k', 'logs', 'flanneld', `${SVC}.log`);
  const scState = async () => /STATE\s*:\s*\d+\s+(\w+)/.exec((await wineCmd(['sc', 'query', SVC])).stdout)?.[1];

  beforeAll(async () => {
    const t0 = Date.now();
    const build = await buildWindowsArtifacts();
    const [, nodeExe, p] = await Promise.all([ensurePrefix(build), ensureWindowsNode(), ensureIsolatedPrefix('prefix-service')]);
    prefix = p;
    pkg = await ensurePackage(nodeExe);
    env = { WINEPREFIX: prefix };
    rmSync(join(prefix, 'drive_c', 'k'), { recursive: true, force: true });
    mkdirSync(join(CACHE, 'runs'), { recursive: true });
    dir = mkdtempSync(join(CACHE, 'runs', 'service-'));
    // services end with the last Wine process of the prefix: keep the wineserver up while we inspect
    const t1 = Date.now();
    await startWineSession(prefix, join(dir, 'wine-session.log'));
    const t2 = Date.now();
    await flanneld(['service', 'uninstall', '--name', SVC]); // a leftover of a killed run
    console.log(`wine session ${t2 - t1} ms, first uninstall ${Date.now() - t2} ms`);
    api = new FakeKubeApiServer();
    await api.start();
    api.addNode(bareNode({ name: NODE, podCIDR: '10.244.100.0/24', internalIP: '10.0.0.2' }));
    await writeKubeconfig(join(dir, 'kubeconfig'), api.url);
    writeFileSync(join(dir, 'net-conf.json'), JSON.stringify({ Network: '10.244.0.0/16', Backend: { Type: 'host-gw' } }));
    console.log(`service harness ready in ${Date.now() - t0} ms`);
  }, 400_000);

  afterAll(async () => {
    await api?.stop();
    if (prefix) await run('wineserver', ['-k'], { env: wineEnv(env), timeout: 30_000 }).catch(() => undefined);
  }, 60_000);

  it('install registers an auto-start service with the agent flags; start runs the agent (subnet.env); stop ends it gracefully (Ctrl+C); uninstall removes it', async () => {
    const subnetEnv = join(dir, 'subnet.env');
    const agentFlags = [
      '--kube-subnet-mgr',
      '--dataplane',
      'simulated',
      `--kubeconfig-file=${winPath(join(dir, 'kubeconfig'))}`,
      `--net-config-path=${winPath(join(dir, 'net-conf.json'))}`,
      `--subnet-file=${winPath(subnetEnv)}`,
      '--iface',
      '10.0.0.2',
    ];
    // NODE_SKIP_PLATFORM_CHECK: Wine reports an old Windows to Node; the service environment is the SCM's
    const install = await flanneld(['service', 'install', '--name', SVC, '--env', `NODE_NAME=${NODE}`, '--env', 'NODE_SKIP_PLATFORM_CHECK=1', '--', ...agentFlags]);
    expect(install.stdout).toContain(`installed service ${SVC}`);
    // Wine's SCM lacks SERVICE_CONFIG_FAILURE_ACTIONS_FLAG (a warning, not an error); Windows has it
    expect(install.code).toBe(0);
    expect(await scState()).toBe('STOPPED');

    const status = await flanneld(['service', 'status', '--name', SVC]);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain('start-type: auto');
    expect(status.stdout).toContain('account: LocalSystem');
    expect(status.stdout).toMatch(
      /binary-path: .*flanneld-service\.exe.* run --name flanneld-test --exe .*flanneld\.exe --log-dir C:\\k\\logs\\flanneld .*-- --kube-subnet-mgr --dataplane simulated/,
    );

    const start = await flanneld(['service', 'start', '--name', SVC]);
    expect(start.code).toBe(0);
    expect(await scState()).toBe('RUNNING');
    const deadline = Date.now() + 60_000;
    while (!(existsSync(subnetEnv) && readFileSync(subnetEnv, 'utf8').includes('FLANNEL_SUBNET'))) {
      if (Date.now() > deadline) throw new Error(`no subnet.env; service log:\n${existsSync(logFile()) ? readFileSync(logFile(), 'utf8').slice(-4000) : '(none)'}`);
      if ((await scState()) !== 'RUNNING') throw new Error(`the service stopped; log:\n${readFileSync(logFile(), 'utf8').slice(-4000)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(readFileSync(subnetEnv, 'utf8')).toContain('FLANNEL_SUBNET=10.244.100.1/24');

    // Graceful, not the 15 s timeout: the log below says Ctrl+C was sent and nothing was terminated.
    const stop = await flanneld(['service', 'stop', '--name', SVC, '--timeout', '15']);
    expect(stop.code).toBe(0);
    expect(await scState()).toBe('STOPPED');
    const log = readFileSync(logFile(), 'utf8');
    expect(log).toContain('agent started');
    expect(log).toMatch(/flanneld-windows starting/); // the agent's own log, through the host's pipe
    expect(log).toContain('stop requested: sending Ctrl+C');
    expect(log).toMatch(/shutting down/); // graceful: the agent saw SIGINT
    expect(log).toContain('agent stopped (exit code 0)');
    expect(log).not.toContain('terminating it');

    // the SCM's own tools see the same service
    const net = await wineCmd(['net', 'start', SVC]);
    expect(net.stdout + net.stderr).toMatch(/started successfully/);
    // Wine's `net start` may return while the service is still START_PENDING (Windows' waits)
    const running = Date.now() + 20_000;
    let state = await scState();
    while (state === 'START_PENDING' && Date.now() < running) {
      await new Promise((r) => setTimeout(r, 250));
      state = await scState();
    }
    expect(state).toBe('RUNNING');

    const uninstall = await flanneld(['service', 'uninstall', '--name', SVC]);
    expect(uninstall.code).toBe(0);
    expect(uninstall.stdout).toContain(`uninstalled service ${SVC}`);
    const gone = await flanneld(['service', 'status', '--name', SVC]);
    expect(gone.code).toBe(3);
    expect(gone.stderr).toContain('is not installed');
  }, 180_000);
});

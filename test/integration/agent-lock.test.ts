// One agent per node (src/host/agent-lock.ts): the lock beside subnet.env, its stale cases, and the real
// thing: a second dist/main.js for the same node exits naming the first one's PID, `flanneld cleanup`
// refuses to run beside a live agent unless given --force, and a lock whose PID now runs another program
// blocks neither.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { FlannelError, HostError } from '../../src/basics/errors.js';
import { acquireAgentLock, agentLockPath, readLockHolder, tasklistImage, type LockFs } from '../../src/host/agent-lock.js';
import { systemBootTimeMs } from '../../src/host/boot.js';
import { FakeKubeApiServer, bareNode, writeKubeconfig } from '../../src/demo/kube-fake/api-server.js';
import { waitFor } from '../support/cluster.js';
import { MAIN, startFlanneld } from '../support/flanneld-process.js';

function memFs(files = new Map<string, string>()): LockFs & { files: Map<string, string> } {
  const enoent = () => Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
  return {
    files,
    readFileSync: (p) => {
      const v = files.get(p);
      if (v === undefined) throw enoent();
      return v;
    },
    writeFileSync: (p, d) => void files.set(p, d),
    linkSync: (from, to) => {
      if (files.has(to)) throw Object.assign(new Error('EEXIST'), { code: 'EEXIST' });
      const v = files.get(from);
      if (v === undefined) throw enoent();
      files.set(to, v);
    },
    unlinkSync: (p) => {
      if (!files.delete(p)) throw enoent();
    },
    mkdirSync: () => undefined,
  };
}

const LOCK = '/run/flannel/flanneld.lock';
const BOOT = 1_700_000_000_000;
const held = (pid: number, bootTimeMs = BOOT) => JSON.stringify({ pid, bootTimeMs, startedAt: '2026-01-01T00:00:00.000Z' });

describe('agent lock (pure, injected fs)', () => {
  const deps = (fs: LockFs, alive: number[] = []) => ({ fs, pid: 100, bootTimeMs: () => BOOT, isAlive: (p: number) => alive.includes(p), now: () => BOOT + 5 });

  it('lives beside subnet.env', () => {
    expect(agentLockPath('/run/flannel/subnet.env')).toBe(LOCK);
  });

  it('takes a free lock, holding the PID; release removes it; the temp file never stays', () => {
    const fs = memFs();
    const lock = acquireAgentLock(LOCK, deps(fs));
    expect(JSON.parse(fs.files.get(LOCK)!)).toMatchObject({ pid: 100, bootTimeMs: BOOT });
    expect([...fs.files.keys()]).toEqual([LOCK]);
    lock.release();
    expect(fs.files.size).toBe(0);
  });

  it('a live holder: FLANNEL_ERR_AGENT_LOCK naming its PID, lock untouched', () => {
    const fs = memFs(new Map([[LOCK, held(4242)]]));
    let err: unknown;
    try {
      acquireAgentLock(LOCK, deps(fs, [4242]));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(HostError);
    expect((err as FlannelError).code).toBe('FLANNEL_ERR_AGENT_LOCK');
    expect((err as FlannelError).context).toEqual({ path: LOCK, pid: 4242 });
    expect(fs.files.get(LOCK)).toBe(held(4242));
    expect(readLockHolder(LOCK, deps(fs, [4242]))?.pid).toBe(4242);
  });

  it.each([
    ['a dead PID', held(4242), []],
    ['a PID of an earlier boot (reused after a reboot)', held(4242, BOOT - 3_600_000), [4242]],
    ['our own PID (an earlier agent in this process)', held(100), [100]],
    ['an empty file', '', []],
    ['garbage', 'not a lock', []],
  ])('stale: %s is taken over', (_what, content, alive) => {
    const fs = memFs(new Map([[LOCK, content]]));
    expect(readLockHolder(LOCK, deps(fs, alive))).toBeUndefined();
    acquireAgentLock(LOCK, deps(fs, alive));
    expect(JSON.parse(fs.files.get(LOCK)!)).toMatchObject({ pid: 100 });
  });

  // Windows recycles PIDs fast: a crashed agent's PID held by another live program is no agent. The lock
  // records the holder's image name and process start time; a live PID whose image or start differs is stale.
  const me = (image: string, processStartMs: number) => JSON.stringify({ pid: 4242, bootTimeMs: BOOT, startedAt: '2026-01-01T00:00:00.000Z', image, processStartMs });
  it.each<[string, string, { image?: string; startMs?: number } | undefined, boolean]>([
    ['the PID now runs another program (svchost.exe)', me('flanneld.exe', BOOT + 1000), { image: 'svchost.exe', startMs: BOOT + 1000 }, false],
    ['the PID now runs another flanneld started later', me('flanneld.exe', BOOT + 1000), { image: 'FLANNELD.EXE', startMs: BOOT + 600_000 }, false],
    ['the same process (image case differs, start within the tolerance)', me('flanneld.exe', BOOT + 1000), { image: 'FLANNELD.EXE', startMs: BOOT + 1500 }, true],
    ['nothing known of the process: the PID is trusted', me('flanneld.exe', BOOT + 1000), undefined, true],
    // A lock of an older agent (or one holding no image) is checked against the images an agent runs as:
    // this process's own, flanneld.exe or node.exe (flanneld on Linux, under node).
    ['a lock of an older agent (no image recorded), the PID now runs svchost.exe', held(4242), { image: 'svchost.exe', startMs: BOOT }, false],
    ['a lock of an older agent (no image recorded), the PID runs flanneld.exe', held(4242), { image: 'FLANNELD.EXE', startMs: BOOT }, true],
    ['a lock of an older agent (no image recorded), the PID runs node.exe', held(4242), { image: 'node.exe' }, true],
    ['a lock of an older agent, nothing known of the PID: trusted', held(4242), undefined, true],
  ])('a live PID: %s', (_what, content, info, live) => {
    const fs = memFs(new Map([[LOCK, content]]));
    const d = { ...deps(fs, [4242]), processInfo: () => info };
    expect(readLockHolder(LOCK, d)?.pid).toBe(live ? 4242 : undefined);
    if (!live) {
      acquireAgentLock(LOCK, d);
      expect(JSON.parse(fs.files.get(LOCK)!)).toMatchObject({ pid: 100, image: expect.any(String), processStartMs: expect.any(Number) });
    }
  });

  it("reads the image name from tasklist's CSV row for the PID", () => {
    expect(tasklistImage('"flanneld.exe","4242","Services","0","61,220 K"\r\n', 4242)).toEqual({ image: 'flanneld.exe' });
    expect(tasklistImage('INFO: No tasks are running which match the specified criteria.\r\n', 4242)).toBeUndefined();
    expect(tasklistImage('"svchost.exe","42","Services","0","9,000 K"\r\n', 4242)).toBeUndefined();
  });

  it('release leaves a lock that is no longer ours', () => {
    const fs = memFs();
    const lock = acquireAgentLock(LOCK, deps(fs));
    fs.files.set(LOCK, held(7));
    lock.release();
    expect(fs.files.get(LOCK)).toBe(held(7));
  });
});

describe('one agent per node: real processes', () => {
  const api = new FakeKubeApiServer();
  let dir: string;
  let other: ChildProcess | undefined;
  const agentEnv = (state: string) => ({
    NODE_NAME: 'win-1',
    FLANNELD_KUBECONFIG_FILE: join(dir, 'kubeconfig'),
    FLANNELD_DATAPLANE_STATE: join(dir, state),
    FLANNELD_IFACE: '10.0.0.7',
  });
  beforeAll(async () => {
    await api.start();
    dir = mkdtempSync(join(tmpdir(), 'agent-lock-'));
    await writeKubeconfig(join(dir, 'kubeconfig'), api.url);
    writeFileSync(join(dir, 'net-conf.json'), '{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw"}}');
    api.addNode(bareNode({ name: 'win-1', podCIDR: '10.244.7.0/24' }));
  });
  afterAll(async () => {
    other?.kill();
    await api.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the second agent exits 1 naming the first one’s PID; cleanup refuses unless --force', async () => {
    const subnetFile = join(dir, 'run', 'subnet.env');
    const args = ['--kube-subnet-mgr', `--net-config-path=${join(dir, 'net-conf.json')}`, `--subnet-file=${subnetFile}`, '--dataplane=simulated'];
    const env = agentEnv('state.json');
    const first = startFlanneld(args, env);
    try {
      await waitFor(() => existsSync(subnetFile), 'the first agent wrote subnet.env', 20_000);
      expect(JSON.parse(readFileSync(join(dir, 'run', 'flanneld.lock'), 'utf8'))).toMatchObject({ pid: first.pid });

      const second = startFlanneld(args, { ...env, FLANNELD_DATAPLANE_STATE: join(dir, 'state2.json') });
      expect(await second.exited).toBe(1);
      expect(second.stderr()).toContain(`PID ${first.pid}`);
      expect(second.stderr()).toContain('code=FLANNEL_ERR_AGENT_LOCK');
      expect(existsSync(join(dir, 'state2.json'))).toBe(false);

      const cleanupArgs = [
        MAIN,
        'cleanup',
        `--net-config-path=${join(dir, 'net-conf.json')}`,
        `--subnet-file=${subnetFile}`,
        '--dataplane=simulated',
        `--dataplane-state=${join(dir, 'state.json')}`,
      ];
      const refused = spawnSync(process.execPath, cleanupArgs, { encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '' } });
      expect(refused.status).toBe(1);
      expect(refused.stderr).toContain(`PID ${first.pid}`);
      expect(refused.stderr).toContain('--force');
      expect(existsSync(subnetFile)).toBe(true);

      const forced = spawnSync(process.execPath, [...cleanupArgs, '--dry-run', '--force'], { encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '' } });
      expect(forced.status).toBe(0);
      expect(forced.stdout).toContain('would remove HNS network cbr0');
    } finally {
      expect(await first.stop()).toBe(0);
    }
    expect(existsSync(join(dir, 'run', 'flanneld.lock'))).toBe(false);
  }, 60_000);

  // A crashed older agent's lock (PID and boot time only) whose PID the OS has since given to another
  // program (here `sleep`, alive for the whole test): that program is no agent, so the lock is stale. It
  // blocked the agent (FLANNEL_ERR_AGENT_LOCK: a service restart loop) and cleanup for as long as it lived.
  it('the agent takes the lock over and runs; cleanup does not refuse', async () => {
    other = spawn('sleep', ['600'], { stdio: 'ignore' });
    const pid = other.pid!;
    const subnetFile = join(dir, 'reused-pid', 'subnet.env');
    const lockPath = agentLockPath(subnetFile);
    mkdirSync(dirname(lockPath), { recursive: true });
    writeFileSync(lockPath, JSON.stringify({ pid, bootTimeMs: systemBootTimeMs(), startedAt: '2026-01-01T00:00:00.000Z' }) + '\n');
    expect(readLockHolder(lockPath)).toBeUndefined();

    const env = agentEnv('reused-pid-state.json');
    const cleanup = spawnSync(
      process.execPath,
      [MAIN, 'cleanup', '--dry-run', `--net-config-path=${join(dir, 'net-conf.json')}`, `--subnet-file=${subnetFile}`, '--dataplane=simulated'],
      { encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '', ...env } },
    );
    expect(cleanup.stderr).toBe('');
    expect(cleanup.status).toBe(0);

    const agent = startFlanneld(['--kube-subnet-mgr', `--net-config-path=${join(dir, 'net-conf.json')}`, `--subnet-file=${subnetFile}`, '--dataplane=simulated'], env);
    try {
      await waitFor(() => existsSync(subnetFile), 'the agent wrote subnet.env', {
        timeoutMs: 20_000,
        failIf: () => (agent.stderr().includes('ERROR') ? agent.stderr() : undefined),
      });
      expect(JSON.parse(readFileSync(lockPath, 'utf8'))).toMatchObject({ pid: agent.pid });
    } finally {
      expect(await agent.stop()).toBe(0);
    }
    expect(other.exitCode).toBeNull(); // the other program was left alone
  }, 60_000);
});

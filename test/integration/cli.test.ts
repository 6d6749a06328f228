// The built `flanneld` binary (dist/main.js) as an operator runs it: exit codes, one-line flag errors,
// and a full start against the fake API server with health endpoints, stopped by SIGTERM.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeKubeApiServer, bareNode, linuxFlannelNode, writeKubeconfig } from '../../src/demo/kube-fake/api-server.js';
import { VERSION } from '../../src/basics/version.js';
import { freePort, waitFor } from '../support/cluster.js';
import { MAIN, runFlanneld as runAsync } from '../support/flanneld-process.js';

const run = (args: string[], env: Record<string, string> = {}) =>
  spawnSync(process.execPath, [MAIN, ...args], { encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '', ...env }, timeout: 20_000 });

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error('dist/main.js is missing: run `npm run build` first (npm test does)');
});

describe('flanneld command line', () => {
  it('--version prints the version and exits 0', () => {
    const r = run(['--version']);
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`${VERSION}\n`);
  });

  it('--help lists the flags and exits 0', () => {
    const r = run(['--help']);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('-kube-subnet-mgr');
    expect(r.stdout).toContain('-dataplane');
    expect(r.stdout).toMatch(/^ {2}cleanup +remove/m);
    expect(r.stdout).toMatch(/^ {2}service +install/m);
  });

  it.each([
    [['--no-such-flag'], 'no-such-flag'],
    [['--dataplane=simulated', '--healthz-port=abc'], 'healthz-port'],
    [['--kube-subnet-mgr'], 'dataplane'],
    [['--dataplane=simulated', '--iface-can-reach=1.2.3.4'], 'iface-can-reach'],
  ])('bad flags %j: one line naming the flag, exit 2', (args, flag) => {
    const r = run(args, { NODE_NAME: 'n1' });
    expect(r.status).toBe(2);
    expect(r.stderr.split('\n')[0]).toContain(flag);
    expect(r.stdout).toBe('');
  });
});

describe('a full start of the binary', () => {
  const api = new FakeKubeApiServer();
  let dir: string;
  beforeAll(async () => {
    await api.start();
    dir = mkdtempSync(join(tmpdir(), 'flanneld-cli-'));
    await writeKubeconfig(join(dir, 'kubeconfig'), api.url);
  });
  afterAll(async () => {
    await api.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves /healthz and /readyz, writes subnet.env, stops on SIGTERM with exit 0', async () => {
    api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'host-gw' }));
    api.addNode(bareNode({ name: 'win-1', podCIDR: '10.244.7.0/24' }));
    writeFileSync(join(dir, 'net-conf.json'), '{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw"}}');
    const port = await freePort();
    const subnetFile = join(dir, 'subnet.env');
    const child = spawn(
      process.execPath,
      [
        MAIN,
        '--kube-subnet-mgr',
        `--net-config-path=${join(dir, 'net-conf.json')}`,
        `--subnet-file=${subnetFile}`,
        '--healthz-ip=127.0.0.1',
        `--healthz-port=${port}`,
        '--log-format=json',
        `--log-file=${join(dir, 'flanneld.log')}`,
      ],
      {
        env: {
          PATH: process.env['PATH'] ?? '',
          NODE_NAME: 'win-1',
          FLANNELD_KUBECONFIG_FILE: join(dir, 'kubeconfig'),
          FLANNELD_DATAPLANE: 'simulated',
          FLANNELD_DATAPLANE_STATE: join(dir, 'state.json'),
          FLANNELD_IFACE: '10.0.0.7',
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const healthz = await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.text(), 'healthz', 15_000);
      expect(healthz).toBe('flanneld is running');
      const ready = await waitFor(
        async () => {
          const r = await fetch(`http://127.0.0.1:${port}/readyz`);
          return r.status === 200 ? r.text() : undefined;
        },
        'readyz',
        15_000,
      );
      expect(ready).toBe('flanneld is ready');
      expect(readFileSync(subnetFile, 'utf8')).toBe('FLANNEL_NETWORK=10.244.0.0/16\nFLANNEL_SUBNET=10.244.7.1/24\nFLANNEL_MTU=1500\nFLANNEL_IPMASQ=false\n');
      await waitFor(() => {
        const state = JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')) as { routes: { DestinationPrefix: string; NextHop: string }[] };
        return state.routes.some((r) => r.DestinationPrefix === '10.244.1.0/24' && r.NextHop === '10.0.0.11');
      }, 'peer route in the state file');
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics).toMatch(/^flannel_peers 1$/m);
      expect(metrics).toMatch(/^flannel_dataplane_calls_total\{op="routes.add"\} 1$/m);
      expect(metrics).toMatch(/^flannel_last_successful_apply_timestamp_seconds \d+/m);
      // prom-client: build info, histograms, process metrics, labelled series present at zero.
      expect(metrics).toContain(`flannel_build_info{version="${VERSION}"} 1`);
      expect(metrics).toMatch(/^# TYPE flannel_apply_pass_duration_seconds histogram$/m);
      expect(metrics).toMatch(/^flannel_apply_pass_duration_seconds_count\{result="ok"\} [1-9]/m);
      expect(metrics).toMatch(/^flannel_event_to_dataplane_seconds_count [1-9]/m);
      expect(metrics).toMatch(/^flannel_event_to_dataplane_seconds_bucket\{le="\+Inf"\} [1-9]/m);
      expect(metrics).toMatch(/^process_resident_memory_bytes \d+/m);
      expect(metrics).toMatch(/^nodejs_heap_size_used_bytes \d+/m);
      expect(metrics).toMatch(/^flannel_leases_rejected_total\{reason="vni-too-low"\} 0$/m);
      expect(metrics).toMatch(/^flannel_dataplane_errors_total\{op="hns.createNetwork"\} 0$/m);
      expect(metrics).toMatch(/^flannel_apply_passes_total\{result="error"\} 0$/m);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    const lines = stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { message: string; level: string });
    expect(lines.some((l) => l.message === 'wrote subnet.env')).toBe(true);
    expect(readFileSync(join(dir, 'flanneld.log'), 'utf8')).toContain('wrote subnet.env');
  });

  it('a node without podCIDR: bounded wait, then the upstream error and exit 1', async () => {
    api.addNode(bareNode({ name: 'win-nocidr' }));
    writeFileSync(join(dir, 'net-conf.json'), '{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw"}}');
    const r = await runAsync(
      [
        '--kube-subnet-mgr',
        `--kubeconfig-file=${join(dir, 'kubeconfig')}`,
        `--net-config-path=${join(dir, 'net-conf.json')}`,
        `--subnet-file=${join(dir, 'x.env')}`,
        '--dataplane=simulated',
      ],
      { NODE_NAME: 'win-nocidr', FLANNELD_NODE_WAIT_TIMEOUT: '1' },
    );
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('ERROR node "win-nocidr" pod cidr not assigned code=FLANNEL_ERR_NODE');
    expect(existsSync(join(dir, 'x.env'))).toBe(false);
  });
});

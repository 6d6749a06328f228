// Files named by flags, through the built CLI (docs/errors.md, FLANNEL_ERR_INPUT_FILE): --net-config-path,
// --flanneld-env-file, --kubeconfig-file, --etcd-password-file and --dataplane-state are read only when
// they are regular files, under a cap (src/basics/fs.ts), and so is `flanneld netconf set-vni --file`. A
// FIFO used to block the whole process in readFileSync (SIGTERM could not be handled until some writer
// appeared) and /dev/zero to fill the heap; now each exits at once with FLANNEL_ERR_INPUT_FILE. And SIGTERM
// stops the agent while start-up waits on the API server.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeKubeApiServer, writeKubeconfig } from '../../src/demo/kube-fake/api-server.js';
import { runFlanneld, startFlanneld } from '../support/flanneld-process.js';
import { waitFor } from '../support/wait-for.js';

let dir: string;
let api: FakeKubeApiServer;
let fifo: string;
let kubeconfig: string;
let netConf: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'flag-files-'));
  fifo = join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  api = new FakeKubeApiServer();
  await api.start();
  kubeconfig = join(dir, 'kubeconfig');
  await writeKubeconfig(kubeconfig, api.url);
  netConf = join(dir, 'net-conf.json');
  writeFileSync(netConf, '{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw"}}');
});
afterAll(async () => {
  await api.stop();
  rmSync(dir, { recursive: true, force: true });
});

function kubeArgs(overrides: Record<string, string>): string[] {
  const flags: Record<string, string> = {
    'kubeconfig-file': kubeconfig,
    'net-config-path': netConf,
    'subnet-file': join(dir, 'subnet.env'),
    dataplane: 'simulated',
    iface: '10.0.0.7',
    ...overrides,
  };
  return ['--kube-subnet-mgr', ...Object.entries(flags).map(([k, v]) => `--${k}=${v}`)];
}

describe('a FIFO or a device named by a flag: FLANNEL_ERR_INPUT_FILE, at once', () => {
  it.each([
    ['--net-config-path FIFO', () => kubeArgs({ 'net-config-path': fifo }), 1],
    ['--net-config-path /dev/zero', () => kubeArgs({ 'net-config-path': '/dev/zero' }), 1],
    ['--kubeconfig-file FIFO', () => kubeArgs({ 'kubeconfig-file': fifo }), 1],
    ['--dataplane-state FIFO', () => kubeArgs({ 'dataplane-state': fifo }), 1],
    ['--flanneld-env-file FIFO', () => kubeArgs({ 'flanneld-env-file': fifo }), 2],
    ['--etcd-password-file FIFO', () => ['--dataplane=simulated', `--etcd-password-file=${fifo}`], 2],
    ['--etcd-password-file /dev/zero', () => ['--dataplane=simulated', '--etcd-password-file=/dev/zero'], 2],
  ])(
    '%s',
    async (_name, args, status) => {
      const r = await runFlanneld(args(), { NODE_NAME: 'win-1' });
      expect(r.status).toBe(status);
      expect(r.stderr).toContain('FLANNEL_ERR_INPUT_FILE');
    },
    30_000,
  );
});

describe('flanneld netconf set-vni --file FIFO', () => {
  // It used to block in readFileSync until a writer came (the command never returned); now it is refused at once.
  it('is refused at once as not a regular file', async () => {
    const r = await runFlanneld(['netconf', 'set-vni', `--file=${fifo}`], {});
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('is a FIFO (named pipe), not a regular file');
  }, 30_000);
});

describe('SIGTERM during start-up', () => {
  it('stops the agent while it waits on an API server that never answers', async () => {
    api.hang('GET', /\/api\/v1\/nodes/);
    const agent = startFlanneld(kubeArgs({ 'healthz-port': '0' }), { NODE_NAME: 'win-1' });
    try {
      await waitFor(() => api.hangingRequests > 0, 'the agent blocked on the API server', 20_000);
    } finally {
      expect(await agent.stop()).toBe(0);
      api.unhang();
    }
    expect(agent.stderr()).toContain('shutting down');
  }, 40_000);
});

// `flanneld doctor` through the built CLI (node dist/main.js doctor), beside an agent process on the same
// simulated node: the healthy node passes (exit 0) with the agent's settings given as flags or as its env
// file (the service install's FLANNELD_* file), in JSON and as a table; a conflist naming another network
// and a deleted HNS network each fail their row alone (exit 1); bad usage exits 2.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderCniConfig } from '../../src/cni/conflist.js';
import type { CheckRow } from '../../src/commands/doctor-checks.js';
import { parseNetConf } from '../../src/subnet/net-conf.js';
import { TestCluster, VXLAN_NET_CONF, WIN_IP, waitFor } from '../support/cluster.js';
import { runFlanneld } from '../support/flanneld-process.js';
import type { SimAgent } from '../support/sim-node.js';

const NODE = 'win';
const NET = 'flannel.4096';

describe('flanneld doctor (built CLI)', () => {
  let cluster: TestCluster;
  let agent: SimAgent;
  let dir: string;
  let flags: string[];
  const confFile = () => join(dir, 'net.d', '10-flannel.conflist');

  function writeConflist(name: string): void {
    const conf = renderCniConfig({
      netConf: parseNetConf(JSON.stringify(VXLAN_NET_CONF)),
      subnetFile: join(dir, 'subnet.env'),
      dataDir: join(dir, 'flannel'),
      serviceCidr: '10.96.0.0/12',
      managementIP: WIN_IP,
      dnsServers: ['10.96.0.10'],
      dnsSearch: ['svc.cluster.local'],
    });
    writeFileSync(confFile(), JSON.stringify({ ...conf, name }));
  }

  const failedRows = (stdout: string) => (JSON.parse(stdout) as { checks: CheckRow[] }).checks.filter((r) => r.status === 'fail').map((r) => r.id);

  beforeAll(async () => {
    cluster = await new TestCluster().start();
    await cluster.withNodes({ name: NODE, internalIP: WIN_IP });
    dir = join(cluster.dir, NODE);
    mkdirSync(join(dir, 'net.d'), { recursive: true });
    mkdirSync(join(dir, 'bin'), { recursive: true });
    for (const f of ['flannel.exe', 'win-overlay.exe', 'host-local.exe']) writeFileSync(join(dir, 'bin', f), 'MZ');
    const own = [`--source-vip-file=${join(dir, 'sourcevip.json')}`, `--cni-ipam-data-dir=${join(dir, 'ipam')}`, `--iface=${WIN_IP}`];
    agent = await cluster.startProcess({ nodeName: NODE, netConf: VXLAN_NET_CONF, args: own });
    await agent.waitReady();
    await waitFor(async () => ((await (await fetch(`http://127.0.0.1:${agent.port}/status`)).json()) as { inSync: boolean }).inSync, 'the agent in sync');
    writeConflist(NET);
    flags = [
      `--kubeconfig-file=${join(cluster.dir, 'kubeconfig')}`,
      `--net-config-path=${join(dir, 'net-conf.json')}`,
      `--subnet-file=${join(dir, 'subnet.env')}`,
      '--dataplane=simulated',
      `--dataplane-state=${agent.state.path}`,
      '--healthz-ip=127.0.0.1',
      `--healthz-port=${agent.port}`,
      ...own,
      `--cni-conf-dir=${join(dir, 'net.d')}`,
      `--cni-bin-dir=${join(dir, 'bin')}`,
    ];
  }, 60_000);

  afterAll(() => cluster.stop());

  it('passes on the healthy node with the agent running, as a table and in JSON, from flags or the env file', async () => {
    const table = await runFlanneld(['doctor', ...flags], { NODE_NAME: NODE });
    expect(table.stderr).toBe('');
    expect(table.status).toBe(0);
    expect(table.stdout).toMatch(/^ok {4}agent +flanneld .* is running and in sync/m);
    expect(table.stdout).toContain('all checks passed');

    // The service install: the agent's settings in its env file (FLANNELD_*), doctor's own flags on the command line.
    const envFile = join(dir, 'flanneld.env');
    const agentFlags = flags.filter((f) => !f.startsWith('--cni-conf-dir') && !f.startsWith('--cni-bin-dir'));
    writeFileSync(
      envFile,
      agentFlags
        .map((f) => {
          const [k, v] = f.replace(/^--/, '').split('=');
          return `FLANNELD_${k.toUpperCase().replace(/-/g, '_')}=${v}`;
        })
        .join('\n') + '\nNODE_NAME=win\n',
    );
    const json = await runFlanneld(['doctor', `--flanneld-env-file=${envFile}`, `--cni-conf-dir=${join(dir, 'net.d')}`, `--cni-bin-dir=${join(dir, 'bin')}`, '--json']);
    expect(json.stderr).toBe('');
    expect(json.status).toBe(0);
    const doc = JSON.parse(json.stdout) as { ok: boolean; node: string; checks: CheckRow[] };
    expect(doc.ok).toBe(true);
    expect(doc.node).toBe(NODE);
    expect(doc.checks.find((r) => r.id === 'agent')?.status).toBe('ok');
    // The plugins here were not put there by install-cni: no record of their hashes to check.
    expect(doc.checks.filter((r) => r.status !== 'ok').map((r) => `${r.id} ${r.status}`)).toEqual(['cni-pins skip', 'network-policy skip']);
  });

  it('names a conflist naming another network, then a deleted HNS network (exit 1)', async () => {
    await agent.stop();
    writeConflist('cbr0');
    const wrongName = await runFlanneld(['doctor', ...flags, '--json'], { NODE_NAME: NODE });
    expect(wrongName.status).toBe(1);
    expect(failedRows(wrongName.stdout)).toEqual(['cni-network-name']);

    writeConflist(NET);
    expect(agent.state.deleteNetwork(NET)).toBe(true);
    const gone = await runFlanneld(['doctor', ...flags], { NODE_NAME: NODE });
    expect(gone.status).toBe(1);
    expect(gone.stdout).toMatch(new RegExp(`^FAIL {2}hns-network +no HNS network ${NET.replace('.', '\\.')}`, 'm'));
    expect(gone.stdout).toContain('1 check(s) failed: hns-network');
  }, 30_000);

  // src/cni/containerd-config.ts: doctor takes the agent's --containerd-config; a given --cni-bin-dir that is
  // not containerd's bin_dirs[0] is a warning row with both fixes (not a failure: the flag is honoured).
  it("cni-containerd: a --cni-bin-dir that is not containerd's is a warn row with its fix; the same directory is ok", async () => {
    const config = join(dir, 'config.toml');
    const toml = (bin: string) => `version = 3\n[plugins.'io.containerd.cri.v1.runtime'.cni]\nbin_dirs = ['${bin}']\nconf_dir = '${join(dir, 'net.d')}'\n`;
    writeFileSync(config, toml(join(dir, 'containerd-bin')));
    const off = await runFlanneld(['doctor', ...flags, `--containerd-config=${config}`, '--json'], { NODE_NAME: NODE });
    const row = (JSON.parse(off.stdout) as { checks: CheckRow[] }).checks.find((r) => r.id === 'cni-containerd');
    expect(row).toMatchObject({
      status: 'warn',
      saw: `--cni-bin-dir ${join(dir, 'bin')} is not where containerd runs CNI plugins from: ${join(dir, 'containerd-bin')} (bin_dirs[0] in ${config})`,
    });
    expect(row?.fix).toContain(`pass --cni-bin-dir ${join(dir, 'containerd-bin')}`);
    writeFileSync(config, toml(join(dir, 'bin')));
    const on = await runFlanneld(['doctor', ...flags, `--containerd-config=${config}`, '--json'], { NODE_NAME: NODE });
    expect((JSON.parse(on.stdout) as { checks: CheckRow[] }).checks.find((r) => r.id === 'cni-containerd')).toMatchObject({ status: 'ok' });
    writeFileSync(config, 'version = 3\n[plugins\n');
    const bad = await runFlanneld(['doctor', ...flags, `--containerd-config=${config}`, '--json'], { NODE_NAME: NODE });
    expect((JSON.parse(bad.stdout) as { checks: CheckRow[] }).checks.find((r) => r.id === 'cni-containerd')).toMatchObject({
      status: 'warn',
      saw: expect.stringContaining('FLANNEL_ERR_CONTAINERD_CONFIG') as unknown,
    });
  });

  it('exits 2 on bad usage', async () => {
    const bad = await runFlanneld(['doctor', '--service-cidr=nope', ...flags]);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('-service-cidr');
    expect((await runFlanneld(['doctor', '--help'])).status).toBe(0);
  });
});

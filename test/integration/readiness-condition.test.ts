// The probe and the scheduler see the same state (src/agent/readiness.ts): /readyz reads the CNI
// config at each call, and the NetworkUnavailable condition is written by the readiness loop. A read of
// /readyz that finds the state other than the Node was last told wakes the loop, which writes the
// condition at once, so it does not trail /readyz until the loop's next check. Here that check is an hour
// away: only the read's wake-up can move the condition, and the test waits on the condition itself.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderCniConfig } from '../../src/cni/conflist.js';
import { parseNetConf } from '../../src/subnet/net-conf.js';
import { TestCluster, VXLAN_NET_CONF, WIN_IP, freePort, waitFor } from '../support/cluster.js';
import { logSink } from '../support/log-sink.js';

const WIN = 'win';
let cluster: TestCluster;
beforeEach(async () => {
  cluster = await (await new TestCluster().start()).withNodes({ name: WIN, internalIP: WIN_IP });
});
afterEach(() => cluster.stop());

const condition = () => cluster.api.getNode(WIN)?.status?.conditions?.find((c) => c.type === 'NetworkUnavailable');

describe('/readyz and NetworkUnavailable agree', () => {
  it('the CNI config appears, then goes: the condition follows the /readyz read that saw it, not the next hourly check', async () => {
    const dir = join(cluster.dir, WIN);
    const [confDir, binDir] = [join(dir, 'net.d'), join(dir, 'bin')];
    mkdirSync(confDir, { recursive: true });
    mkdirSync(binDir, { recursive: true });
    for (const f of ['flannel.exe', 'win-overlay.exe', 'host-local.exe']) writeFileSync(join(binDir, f), 'MZ');
    const port = await freePort();
    const a = cluster.startAgent({
      nodeName: WIN,
      ip: WIN_IP,
      netConf: VXLAN_NET_CONF,
      extraArgs: [`--cni-conf-dir=${confDir}`, `--cni-bin-dir=${binDir}`, '--healthz-ip=127.0.0.1', `--healthz-port=${port}`],
      cniCheckIntervalMs: 3_600_000,
    });
    const readyz = async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status;
    await waitFor(() => condition()?.reason === 'CNIConfigMissing' && condition(), 'NetworkUnavailable=True CNIConfigMissing', 20_000);
    expect(await readyz()).toBe(503);

    const file = join(confDir, '10-flannel.conflist');
    const conf = renderCniConfig({
      netConf: parseNetConf(JSON.stringify(VXLAN_NET_CONF)),
      subnetFile: a.subnetFile,
      dataDir: join(dir, 'flannel'),
      serviceCidr: '10.96.0.0/12',
      managementIP: WIN_IP,
      dnsServers: ['10.96.0.10'],
      dnsSearch: ['svc.cluster.local'],
    });
    writeFileSync(file, JSON.stringify(conf));
    await waitFor(async () => (await readyz()) === 200, 'readyz 200');
    await waitFor(() => condition()?.status === 'False' && condition(), 'NetworkUnavailable=False after the read');
    expect(condition()).toMatchObject({ reason: 'FlannelIsUp' });

    rmSync(file);
    await waitFor(async () => (await readyz()) === 503, 'readyz 503');
    await waitFor(() => condition()?.status === 'True' && condition(), 'NetworkUnavailable=True after the read');
    expect(condition()).toMatchObject({ reason: 'CNIConfigMissing' });
  }, 60_000);

  // src/cni/containerd-config.ts: with --containerd-config and no --cni-conf-dir / --cni-bin-dir, the check
  // reads containerd's conf_dir and bin_dirs[0] (here no conflist in conf_dir: CNIConfigMissing, which the
  // check would not say at all without a conf dir); a given --cni-bin-dir elsewhere is kept and warned about.
  it("--containerd-config: the check reads containerd's conf_dir and bin_dirs[0]; a --cni-bin-dir elsewhere is logged with its fix", async () => {
    const dir = join(cluster.dir, WIN);
    const [confDir, binDir] = [join(dir, 'containerd', 'conf'), join(dir, 'containerd', 'bin')];
    mkdirSync(confDir, { recursive: true });
    mkdirSync(binDir, { recursive: true });
    const config = join(dir, 'config.toml');
    writeFileSync(config, `version = 3\n[plugins.'io.containerd.cri.v1.runtime'.cni]\nbin_dir = ''\nbin_dirs = ['${binDir}']\nconf_dir = '${confDir}'\n`);
    const sink = logSink('info');
    const other = join(dir, 'other-bin');
    const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: VXLAN_NET_CONF, log: sink.log, extraArgs: [`--containerd-config=${config}`, `--cni-bin-dir=${other}`] });
    await waitFor(() => condition()?.reason === 'CNIConfigMissing' && condition(), 'NetworkUnavailable=True CNIConfigMissing', 20_000);
    const status = await a.agent.status();
    expect(status.cni).toMatchObject({ confDir, binDir: other });
    const warning = sink.entries.find((e) => e['message'] === "the agent's CNI directory is not containerd's");
    expect(warning).toMatchObject({ level: 'warn', flag: '--cni-bin-dir', containerd: binDir });
    expect(String(warning?.['fix'])).toContain(`pass --cni-bin-dir ${binDir}`);
    expect(sink.entries.filter((e) => e['message'] === "the agent's CNI directory is not containerd's")).toHaveLength(1);
  }, 60_000);
});

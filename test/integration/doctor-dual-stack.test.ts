// `flanneld doctor` through the built CLI (node dist/main.js doctor) on a dual-stack host-gw node of the
// simulated dataplane (docs/compatibility.md "Dual-stack"; test/support/doctor-node.ts DoctorNode, dual-stack),
// set up by the agent and stopped: its rows cover the IPv6 half (lease, network, host endpoint, peers,
// subnet.env, reservations), a failed HNS read of the
// endpoints is "unknown" (--fix frees nothing it cannot prove leaked; the faults are the state file's
// `faults` rules, docs/simulator.md), and every file it reads is bounded (a FIFO, /dev/zero behind a
// symlink, a sparse 3 GB file: a clear row, never a hang or an abort; docs/bounds.md).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderCniConfig } from '../../src/cni/conflist.js';
import type { CheckRow } from '../../src/commands/doctor-checks.js';
import { INSTALL_RECORD } from '../../src/cni-plugins/install.js';
import { parseNetConf } from '../../src/subnet/net-conf.js';
import { WIN_IP, waitFor } from '../support/cluster.js';
import { DoctorNode, DUAL_STACK, NODE, SUBNET } from '../support/doctor-node.js';
import { runFlanneld } from '../support/flanneld-process.js';
import { SimNodeState } from '../support/sim-node.js';
import { HCN_SCHEMA_V2 } from '../../src/hns/schema.js';

const NET = 'cbr0';
const WIN_IP6 = DUAL_STACK.ip6;
const V6 = DUAL_STACK.subnet6;
const PEER6 = DUAL_STACK.peerSubnet6;

interface Doctor {
  status: number | null;
  rows: CheckRow[];
  freed: { ip: string }[];
  stdout: string;
}

describe('flanneld doctor on a dual-stack host-gw node (built CLI)', () => {
  let node: DoctorNode;
  let dir: string;
  let flags: string[];
  const ipam = () => join(dir, 'ipam', NET);
  const state = () => new SimNodeState(join(dir, 'dataplane.json'));
  const subnetFile = () => join(dir, 'run', 'flannel', 'subnet.env');
  const binDir = () => join(dir, 'cni', 'bin');

  async function doctor(extra: string[] = []): Promise<Doctor> {
    const r = await runFlanneld(['doctor', ...flags, '--json', ...extra], { NODE_NAME: NODE });
    const doc = r.stdout ? (JSON.parse(r.stdout) as { checks: CheckRow[]; freed: { ip: string }[] }) : { checks: [], freed: [] };
    if (r.status === null || r.stderr) console.log(r.stderr);
    return { status: r.status, rows: doc.checks, freed: doc.freed, stdout: r.stdout };
  }
  const row = (d: Doctor, id: string) => d.rows.find((r) => r.id === id);
  const failed = (d: Doctor) => d.rows.filter((r) => r.status === 'fail').map((r) => r.id);

  /** A reservation host-local wrote `ageSeconds` ago (plugins/ipam/host-local/backend/disk: `<id>\r\n<ifname>`). */
  function reserve(file: string, owner: string, ageSeconds: number): string {
    const path = join(ipam(), file);
    writeFileSync(path, `${owner}\r\neth0`);
    const t = (Date.now() - ageSeconds * 1000) / 1000;
    utimesSync(path, t, t);
    return path;
  }

  /** A dual-stack pod's endpoint as sdnbridge has HNS create it: both IpConfigurations, IPv4 first. */
  function podEndpoint(name: string, v4: string, v6: string): string {
    const model = state().model();
    const net = model.getNetworkByName(NET)!;
    return model.createEndpoint('HcnCreateEndpoint', net.ID!, {
      Name: name,
      HostComputeNetwork: net.ID!,
      IpConfigurations: [{ IpAddress: v4 }, { IpAddress: v6 }],
      SchemaVersion: HCN_SCHEMA_V2,
    }).ID!;
  }

  beforeAll(async () => {
    node = await DoctorNode.start('host-gw', { dualStack: true });
    dir = node.dir;
    const a = node.startAgent();
    await waitFor(
      () => a.agent.isReady && a.sim.snapshot().routes.some((r) => r.DestinationPrefix === PEER6) && existsSync(join(ipam(), '10.244.7.2')),
      'the dual-stack node set up',
      30_000,
    );
    await a.stop();
    const conf = node.paths.conf;
    mkdirSync(conf, { recursive: true });
    mkdirSync(binDir(), { recursive: true });
    const rendered = renderCniConfig({
      netConf: parseNetConf(JSON.stringify(DUAL_STACK.netConf)),
      subnetFile: subnetFile(),
      dataDir: join(dir, 'flannel'),
      serviceCidr: '10.96.0.0/12',
      managementSubnet: '10.0.0.0/24',
      managementIP: WIN_IP,
      dnsServers: ['10.96.0.10'],
      dnsSearch: ['svc.cluster.local'],
      // As cni-config renders it for this node: the adapter's IPv6 address and prefix (managementIPv6Of).
      dualStack: { subnet: SUBNET, ipv6Subnet: V6, managementIPv6: WIN_IP6, managementIPv6Subnet: 'fd00:10::/64' },
    });
    writeFileSync(join(conf, '10-flannel.conflist'), JSON.stringify(rendered));
    for (const f of ['sdnbridge.exe', 'host-local.exe']) writeFileSync(join(binDir(), f), 'MZ');
    flags = node.args;
    node.keep();
  }, 60_000);

  afterAll(() => node.stop());

  const restore = () => node.restore();

  it('passes, and its rows cover the IPv6 half: lease, network, host endpoint, peers, subnet.env', async () => {
    restore();
    const d = await doctor();
    // The dual-stack conflist is sdnbridge's: no flannel plugin's dataDir; its NAT exceptions and loopbackDSR are judged.
    expect(d.rows.filter((r) => r.status !== 'ok').map((r) => `${r.id} ${r.status}`)).toEqual(['agent warn', 'cni-data-dir skip', 'cni-pins skip', 'network-policy skip']);
    expect(d.status).toBe(0);
    expect(row(d, 'lease')?.saw).toContain(`IPv6 ${V6} at ${WIN_IP6}`);
    expect(row(d, 'hns-subnet')?.saw).toContain(`10.244.7.0/24, ${V6}`);
    expect(row(d, 'host-endpoint')?.saw).toBe(`${NET}_ep at 10.244.7.2, fd00:10:244:64::2`);
    expect(row(d, 'peers')?.saw).toMatch(/^2 peer routes/);
    expect(row(d, 'subnet-env')?.saw).toContain('FLANNEL_IPV6_SUBNET=fd00:10:244:64::1/64');
  });

  // sdnbridge's conflist has no flannel plugin: its OutBoundNAT exceptions (AdditionalArgs, one policy per
  // family) are judged against what cni-config renders for this node (src/cni/conflist.ts outboundNatExceptions),
  // the IPv6 Service CIDR included when doctor is given it; the fix line is applied and doctor runs again.
  it("judges sdnbridge's OutBoundNAT exceptions of both families against cni-config's, and its fix line works", async () => {
    restore();
    const conflist = join(dir, 'cni', 'net.d', '10-flannel.conflist');
    const v6 = ['--ipv6-service-cidr=fd00:10:96::/112'];
    const cniConfig = async () => {
      const r = await runFlanneld(['cni-config', ...flags, ...v6, `--management-ip=${WIN_IP}`, '-o', conflist], { NODE_NAME: NODE });
      expect(r.stderr).toContain('sdnbridge, dual-stack');
      expect(r.status).toBe(0);
    };
    await cniConfig();
    const good = await doctor(v6);
    expect(good.status).toBe(0);
    expect(failed(good)).toEqual([]);
    expect(row(good, 'cni-outbound-nat')?.status).toBe('ok');
    expect(row(good, 'cni-outbound-nat')?.saw).toMatch(/10\.244\.0\.0\/16, 10\.96\.0\.0\/12, .*fd00:10:244::\/56, fd00:10:96::\/112, fd00:10::\/64/);

    // Without the IPv6 policy (a conflist rendered for an IPv4-only node, or edited): IPv6 pod traffic to pods,
    // Services and the node leaves NATed.
    const doc = JSON.parse(readFileSync(conflist, 'utf8')) as { plugins: { AdditionalArgs: { Value: { Type: string; Settings: { Exceptions?: string[] } } }[] }[] };
    doc.plugins[0].AdditionalArgs = doc.plugins[0].AdditionalArgs.filter((a) => !(a.Value.Settings.Exceptions ?? []).some((x) => x.includes(':')));
    writeFileSync(conflist, JSON.stringify(doc));
    const bad = await doctor(v6);
    expect(failed(bad)).toEqual(['cni-outbound-nat']);
    expect(row(bad, 'cni-outbound-nat')?.saw).toContain('lack fd00:10:244::/56, fd00:10:96::/112, fd00:10::/64');
    expect(row(bad, 'cni-outbound-nat')?.fix).toContain('cni-config -o');

    // The fix line, applied: cni-config renders the conflist again; doctor passes.
    await cniConfig();
    expect(failed(await doctor(v6))).toEqual([]);
  });

  it("names a dual-stack peer's missing IPv6 route, and a wrong FLANNEL_IPV6_SUBNET", async () => {
    restore();
    state().edit((s) => void (s.routes = s.routes.filter((r) => r.DestinationPrefix !== PEER6)));
    writeFileSync(subnetFile(), readFileSync(subnetFile(), 'utf8').replace('FLANNEL_IPV6_SUBNET=fd00:10:244:64::1/64', 'FLANNEL_IPV6_SUBNET=fd00:10:244:65::1/64'));
    const d = await doctor();
    expect(failed(d)).toEqual(['peers', 'subnet-env']);
    expect(row(d, 'peers')?.saw).toContain(`missing for linux-1 ${PEER6}`);
    expect(row(d, 'subnet-env')?.saw).toContain(`FLANNEL_IPV6_SUBNET=fd00:10:244:65::1/64, the lease is ${V6}`);
  });

  it("--fix keeps a live dual-stack pod's two reservations and frees a dead one's two (IPv6 as host-local names it on Windows too)", async () => {
    restore();
    podEndpoint('pod-live', '10.244.7.5', 'fd00:10:244:64::5');
    const live = [reserve('10.244.7.5', 'live', 7200), reserve('fd00:10:244:64::5', 'live', 7200)];
    const dead = [reserve('10.244.7.9', 'dead', 7200), reserve('fd00_10_244_64__9', 'dead', 7200)];
    const before = await doctor();
    expect(failed(before)).toEqual(['ipam-leaks']);
    expect(row(before, 'ipam-leaks')?.saw).toContain('2 of 5 reservations');
    expect(row(before, 'ipam-leaks')?.saw).toContain('fd00:10:244:64::9 (dead, ');
    const d = await doctor(['--fix']);
    expect(d.freed.map((x) => x.ip).sort()).toEqual(['10.244.7.9', 'fd00:10:244:64::9']);
    for (const p of live) expect(existsSync(p)).toBe(true);
    for (const p of dead) expect(existsSync(p)).toBe(false);
    expect(d.status).toBe(0);
  });

  // One failed HNS read, as the state file's faults inject it: the endpoint list, or one endpoint's properties.
  it.each([
    ['the endpoint list', () => ({ op: 'HcnEnumerateEndpoints', hresult: '0x80070005', remaining: 1 })],
    ['one endpoint', (id: string) => ({ op: 'HcnQueryEndpointProperties', match: id, hresult: '0x80070005', remaining: 1 })],
  ])("--fix frees nothing when HNS fails to read %s: a live pod's address stays reserved", async (_what, rule) => {
    restore();
    const id = podEndpoint('pod-live', '10.244.7.5', 'fd00:10:244:64::5');
    const live = [reserve('10.244.7.5', 'live', 7200), reserve('fd00:10:244:64::5', 'live', 7200)];
    state().addFault(rule(id));
    const d = await doctor(['--fix']);
    expect(d.freed).toEqual([]);
    for (const p of live) expect(existsSync(p)).toBe(true);
    expect(row(d, 'host-endpoint')).toMatchObject({ status: 'fail' });
    expect(row(d, 'host-endpoint')?.saw).toContain(`could not read the endpoints on ${NET}`);
    expect(row(d, 'host-endpoint')?.saw).not.toContain('no endpoint');
    expect(row(d, 'ipam-leaks')?.status).toBe('skip');
    // The fix line: HNS answers again, doctor again: every row passes, nothing was lost.
    const again = await doctor();
    expect(failed(again)).toEqual([]);
    expect(readdirSync(ipam()).sort()).toContain('fd00:10:244:64::5');
  });

  // The files doctor reads, each as a FIFO, as /dev/zero behind a symlink and as a sparse 3 GB file.
  const FILES: [string, () => string, string][] = [
    ['subnet.env', subnetFile, 'subnet-env'],
    ['flanneld.lock', () => join(dir, 'run', 'flannel', 'flanneld.lock'), 'agent'],
    ['boot.json', () => join(dir, 'run', 'flannel', 'boot.json'), 'agent'],
    ["install-cni's record", () => join(binDir(), INSTALL_RECORD), 'cni-pins'],
  ];
  const KINDS: [string, (path: string) => void, RegExp][] = [
    ['a FIFO', (path) => execFileSync('mkfifo', [path]), /a FIFO \(named pipe\), not a regular file/],
    ['/dev/zero behind a symlink', (path) => symlinkSync('/dev/zero', path), /a character device, not a regular file/],
    ['a sparse 3 GB file', (path) => execFileSync('truncate', ['-s', '3G', path]), /is larger than \d+ bytes/],
  ];
  const CASES = FILES.flatMap(([file, path, id]) => KINDS.map(([kind, make, says]) => ({ file, path, id, kind, make, says })));

  it.each(CASES)(
    '$file as $kind: the $id row names it, doctor does not hang',
    async ({ path, id, make, says }) => {
      restore();
      rmSync(path(), { force: true });
      make(path());
      const d = await doctor();
      expect(d.status).not.toBeNull(); // not killed by the runner's timeout
      expect(row(d, id)?.saw).toMatch(says);
      expect(row(d, id)?.fix).not.toBe('');
    },
    30_000,
  );
});

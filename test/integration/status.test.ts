// `flanneld status` through the built CLI (dist/main.js) against a running agent on the simulated
// dataplane and the fake API server: the table and the JSON, exit 0 in sync and 1 when a peer cannot be
// programmed, the start kind across a restart, /status refused to other hosts, an unreachable agent.
import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import type { StatusReport } from '../../src/health/status.js';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { HOSTGW_NET_CONF, TestCluster, VXLAN_NET_CONF, freePort, waitFor, WIN_IP } from '../support/cluster.js';
import { MAIN, runFlanneld as cli } from '../support/flanneld-process.js';

const WIN = 'win-1';
const BOOT = Date.parse('2026-01-01T00:00:00Z');

let cluster: TestCluster | undefined;
let stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops) await s();
  stops = [];
  await cluster?.stop();
  cluster = undefined;
});

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error('dist/main.js is missing: run `npm run build` first (npm test does)');
});

/** An agent with a health port and an injected boot time (the simulated node keeps no boot record otherwise). */
async function startAgent(c: TestCluster, netConf: unknown, port: number, healthzIP = '127.0.0.1') {
  const dir = join(c.dir, WIN);
  const a = c.startAgent({
    nodeName: WIN,
    ip: WIN_IP,
    netConf,
    ipMasq: false,
    bootTimeMs: () => BOOT,
    extraArgs: [`--source-vip-file=${join(dir, 'run', 'flannel', 'sourcevip.json')}`, `--healthz-ip=${healthzIP}`, `--healthz-port=${port}`],
  });
  stops.push(a.stop);
  await waitFor(() => a.agent.isReady, 'agent ready');
  return { agent: a.agent, sim: a.sim, stop: a.stop };
}

describe('flanneld status', () => {
  it('vxlan: table and JSON from the running agent; exit 0 in sync, 1 while a peer cannot be programmed', async () => {
    cluster = await new TestCluster().start();
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'vxlan' }));
    // A Linux node still on flannel's default VNI 1: Windows rejects its lease.
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-vni1', podCIDR: '10.244.3.0/24', publicIP: '10.0.0.13', backendType: 'vxlan', vni: 1 }));
    cluster.addWindowsNode(WIN, '10.244.100.0/24', WIN_IP);
    const port = await freePort();
    const { agent, sim } = await startAgent(cluster, VXLAN_NET_CONF, port);
    await waitFor(async () => (await agent.status()).inSync, 'in sync');

    const table = await cli(['status', `--healthz-port=${port}`]);
    expect(table.stderr).toBe('');
    expect(table.status).toBe(0);
    const row = (name: string) =>
      table.stdout
        .split('\n')
        .find((l) => l.startsWith(name + ' '))
        ?.slice(name.length)
        .trim();
    expect(row('Dataplane')).toBe('in sync');
    expect(row('Lease')).toBe(`10.244.100.0/24 (public IP ${WIN_IP})`);
    expect(row('Network')).toMatch(/^flannel\.4096 \(Overlay\), ID [0-9A-F-]{36}, adapter Ethernet$/i);
    expect(row('MTU')).toBe('1450');
    expect(row('Peers')).toBe('1 desired, 1 programmed, 1 rejected, 0 refused');
    expect(table.stdout).toMatch(/^ {2}rejected +linux-vni1 10\.244\.3\.0\/24 via 10\.0\.0\.13: vni-too-low \(/m);
    expect(row('Last pass')).toMatch(/^\d{4}-\d\d-\d\dT.* ok$/);
    expect(row('Last error')).toBe('none');
    expect(row('Start')).toBe('first-start');
    expect(row('Source VIP')).toBe('10.244.100.2');
    // The version the agent read at start (the simulated default, Windows Server 2025's 15.4) and what it enables.
    expect(row('HNS')).toMatch(/^15\.4 \(V2Api, RemoteSubnet, HostRoute, .*VxlanPort.*ModifyLoadbalancer.*\)$/);

    const json = await cli(['status', `--healthz-port=${port}`, '--output', 'json']);
    expect(json.status).toBe(0);
    const report = JSON.parse(json.stdout) as StatusReport;
    expect(report).toMatchObject({
      inSync: true,
      ready: true,
      phase: 'running',
      startKind: 'first-start',
      lease: { subnet: '10.244.100.0/24', publicIP: WIN_IP },
      network: { name: 'flannel.4096', present: true, type: 'Overlay', adapter: 'Ethernet' },
      mtu: 1450,
      sourceVip: '10.244.100.2',
      peers: { desired: 1, programmed: 1, rejected: 1, rejections: [{ key: 'linux-vni1', reason: 'vni-too-low' }] },
      lastError: null,
      hns: { version: '15.4', features: expect.arrayContaining(['RemoteSubnet', 'VxlanPort', 'SetPolicy']) },
    });
    expect(report.network?.id).toBe(sim.getNetworkByName('flannel.4096')!.ID);

    // HNS refuses the next policy writes: a new peer stays unprogrammed, and status says so with exit 1.
    sim.injections.failNext(/ModifyNetwork/, 0x80070005, 1000);
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-2', podCIDR: '10.244.2.0/24', publicIP: '10.0.0.12', backendType: 'vxlan' }));
    await waitFor(async () => (await agent.status()).lastError !== null, 'a failed pass');
    const failing = await cli(['status', `--healthz-port=${port}`, '-o=json']);
    expect(failing.status).toBe(1);
    const bad = JSON.parse(failing.stdout) as StatusReport;
    expect(bad).toMatchObject({ inSync: false, peers: { desired: 2, programmed: 1 }, lastPass: { ok: false } });
    expect(bad.lastError?.message).toMatch(/0x80070005|access/i);
    const failingTable = await cli(['status', `--healthz-port=${port}`]);
    expect(failingTable.status).toBe(1);
    expect(failingTable.stdout).toMatch(/^Dataplane +NOT in sync/m);
    expect(failingTable.stdout).toMatch(/^Peers +2 desired, 1 programmed, 1 rejected, 0 refused$/m);
  }, 60_000);

  it('a peer HNS refuses (E_INVALIDARG) is listed by name with its HRESULT, and Last error is not none', async () => {
    cluster = await new TestCluster().start();
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'vxlan' }));
    cluster.addWindowsNode(WIN, '10.244.100.0/24', WIN_IP);
    const port = await freePort();
    const { agent, sim } = await startAgent(cluster, VXLAN_NET_CONF, port);
    await waitFor(async () => (await agent.status()).inSync, 'in sync');
    sim.injections.failNext(/ModifyNetwork/, 0x80070057, 1000);
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-2', podCIDR: '10.244.2.0/24', publicIP: '10.0.0.12', backendType: 'vxlan' }));
    await waitFor(async () => (await agent.status()).peers.refused === 1, 'a refused peer');
    const table = await cli(['status', `--healthz-port=${port}`]);
    expect(table.status).toBe(1);
    expect(table.stdout).toMatch(/^Peers +2 desired, 1 programmed, 0 rejected, 1 refused$/m);
    expect(table.stdout).toMatch(/^ {2}refused +linux-2 10\.244\.2\.0\/24: HRESULT 0x80070057 since \S+, \d+ tries \(HNS .*\)$/m);
    expect(table.stdout).toMatch(/^Last error +\S+ peer linux-2 10\.244\.2\.0\/24 refused with 0x80070057/m);
  }, 60_000);

  it('host-gw: a restart in the same boot says so; the L2Bridge network and its adapter are named', async () => {
    cluster = await new TestCluster().start();
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'host-gw' }));
    cluster.addWindowsNode(WIN, '10.244.100.0/24', WIN_IP);
    const port = await freePort();
    const first = await startAgent(cluster, HOSTGW_NET_CONF, port);
    await waitFor(async () => (await first.agent.status()).inSync, 'in sync');
    await first.stop();
    const second = await startAgent(cluster, HOSTGW_NET_CONF, port);
    await waitFor(async () => (await second.agent.status()).inSync, 'in sync again');
    const r = await cli(['status', `--url=http://127.0.0.1:${port}/status`, '--output=json']);
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ startKind: 'restart', network: { name: 'cbr0', type: 'L2Bridge', adapter: 'Ethernet' }, mtu: 1500, sourceVip: null });
  });

  it('a health port bound to the node IP (the DaemonSet) is found without --healthz-ip, and answers this host', async () => {
    const hostIP = Object.values(networkInterfaces())
      .flatMap((l) => l ?? [])
      .find((a) => a.family === 'IPv4' && !a.internal)?.address;
    if (!hostIP) return; // a host without a non-loopback IPv4 cannot show this
    cluster = await new TestCluster().start();
    cluster.addWindowsNode(WIN, '10.244.100.0/24', WIN_IP);
    const port = await freePort();
    const { agent } = await startAgent(cluster, HOSTGW_NET_CONF, port, hostIP);
    await waitFor(async () => (await agent.status()).inSync, 'in sync');
    const r = await cli(['status', `--healthz-port=${port}`, '--output=json']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ inSync: true, peers: { desired: 0, programmed: 0 } });
  });

  it('no agent listening: a clear error and exit 1; a bad --output is a flag error (exit 2)', async () => {
    const port = await freePort();
    const r = await cli(['status', `--healthz-port=${port}`]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`cannot reach the agent at http://127.0.0.1:${port}/status`);
    const bad = await cli(['status', '--output=yaml']);
    expect(bad.status).toBe(2);
    expect(bad.stderr.split('\n')[0]).toContain('output');
    const help = await cli(['status', '--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^Usage: flanneld status \[OPTION\]\.\.\./);
    expect(help.stdout).toContain('--output');
  });

  it('a hostile status port: what it says is printed escaped, and an answer without end is refused at the cap', async () => {
    const evil = '\u001b[2J\u001b]52;c;ZWNobyBwd25lZA==\u0007\rFAKE\u009b2J\u202e';
    const body = JSON.stringify({
      version: evil,
      phase: 'running',
      ready: true,
      inSync: true,
      startKind: evil,
      lease: { subnet: evil, publicIP: '10.0.0.1' },
      network: null,
      mtu: 1450,
      sourceVip: null,
      peers: { desired: 0, programmed: 0, rejected: 0, rejections: [] },
      lastPass: null,
      lastSuccess: null,
      lastError: { at: evil, message: evil },
    });
    const server = createServer((req, res) => {
      if (req.url === '/status') return void res.end(body);
      res.writeHead(200, { 'Content-Type': 'application/json' }); // /endless: chunked, never ends
      const chunk = Buffer.alloc(64 * 1024, ' ');
      const pump = () => {
        while (!res.destroyed) if (!res.write(chunk)) return void res.once('drain', pump);
      };
      pump();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    stops.push(async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    });
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    // eslint-disable-next-line no-control-regex -- finding raw control characters is the point
    const raw = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e]/;
    for (const output of ['table', 'json']) {
      const r = await cli(['status', `--url=${base}/status`, `--output=${output}`]);
      expect(r.status).toBe(0);
      expect(r.stdout).not.toMatch(raw);
      expect(r.stdout).toContain('\\u001b[2J');
    }
    const endless = await cli(['status', `--url=${base}/endless`]);
    expect(endless.status).toBe(1);
    expect(endless.stderr).toContain('[FLANNEL_ERR_STATUS_TOO_LARGE]');
  });
});

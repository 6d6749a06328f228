import { describe, it, expect } from '@jest/globals';
import { request, type IncomingMessage } from 'node:http';
import { buildStatusReport, isLocalRequest, type StatusInput } from '../../../src/health/status.js';
import type { NetworkStatus } from '../../../src/network-status.js';
import { agentStatusUrls, renderStatusTable, statusUrls } from '../../../src/commands/status.js';
import { listenError, startHealthServer, UNHEALTHY_BODY } from '../../../src/health/server.js';
import { HostError } from '../../../src/basics/errors.js';
import { expectCode } from '../../support/errors.js';
import { readFileSync } from 'node:fs';
import { DATAPLANE_OPS, Metrics, METRIC } from '../../../src/basics/metrics.js';
import { systemClock } from '../../../src/basics/clock.js';
import { silentLogger } from '../../../src/basics/log.js';
import { PeerProblems } from '../../../src/peers/problems.js';
import { NodeListWatch } from '../../../src/subnet/kube/node-list-watch.js';
import { annotationKeys } from '../../../src/subnet/kube/annotations.js';
import { DEFAULT_ANNOTATION_PREFIX } from '../../../src/config/annotation-prefix.js';
import { LEASE_REJECT_REASONS } from '../../../src/peers/reject-reasons.js';
import { VERSION } from '../../../src/basics/version.js';
import { readMetric, readMetricTotal } from '../../support/agent-signals.js';

function get(port: number, path: string, method = 'GET'): Promise<{ status: number; type: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('health server', () => {
  it('serves /healthz, /readyz, /metrics and 404s the rest', async () => {
    const metrics = new Metrics();
    metrics.set(METRIC.peers, 3);
    metrics.inc(METRIC.leasesRejected, { reason: 'vni-too-low' });
    let ready = false;
    const srv = await startHealthServer({ host: '127.0.0.1', port: 0, metrics, isReady: () => ready });
    try {
      expect(srv.port).toBeGreaterThan(0);
      expect(await get(srv.port, '/healthz')).toMatchObject({ status: 200, body: 'flanneld is running' });
      expect(await get(srv.port, '/readyz')).toMatchObject({ status: 503, body: 'flanneld is not ready yet' });
      ready = true;
      expect(await get(srv.port, '/readyz')).toMatchObject({ status: 200, body: 'flanneld is ready' });
      expect(await get(srv.port, '/healthz?x=1')).toMatchObject({ status: 200, body: 'flanneld is running' });

      const m = await get(srv.port, '/metrics');
      expect(m.status).toBe(200);
      expect(m.type).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(m.body).toContain('# TYPE flannel_peers gauge\nflannel_peers 3\n');
      expect(m.body).toContain('flannel_leases_rejected_total{reason="vni-too-low"} 1\n');

      expect((await get(srv.port, '/nope')).status).toBe(404);
      expect((await get(srv.port, '/healthz', 'POST')).status).toBe(404);
      expect(await get(srv.port, '/healthz', 'HEAD')).toMatchObject({ status: 200, body: '' });
    } finally {
      await srv.close();
    }
    await expect(get(srv.port, '/healthz')).rejects.toThrow();
  });

  it('/readyz says why pods cannot start (the CNI config check) and what to do, when the agent gives a reason', async () => {
    let reason: string | undefined = 'cni-network-name: C:\\etc\\cni\\net.d\\10-flannel.conflist names network "flannel.4096"; fix: rerun cni-config';
    const srv = await startHealthServer({ host: '127.0.0.1', port: 0, metrics: new Metrics(), isReady: () => false, notReadyReason: () => reason });
    try {
      const r = await get(srv.port, '/readyz');
      expect(r.status).toBe(503);
      expect(r.body).toBe(`flanneld is not ready\n${reason}`);
      reason = undefined;
      expect(await get(srv.port, '/readyz')).toMatchObject({ status: 503, body: 'flanneld is not ready yet' });
    } finally {
      await srv.close();
    }
  });

  it('/healthz answers 503 while the agent reports itself unhealthy (a wedged reconcile loop)', async () => {
    let healthy = true;
    const srv = await startHealthServer({ host: '127.0.0.1', port: 0, metrics: new Metrics(), isReady: () => true, isHealthy: () => healthy });
    try {
      expect(await get(srv.port, '/healthz')).toMatchObject({ status: 200, body: 'flanneld is running' });
      healthy = false;
      expect(await get(srv.port, '/healthz')).toMatchObject({ status: 503, body: UNHEALTHY_BODY });
      expect(await get(srv.port, '/healthz', 'HEAD')).toMatchObject({ status: 503, body: '' });
      expect((await get(srv.port, '/readyz')).status).toBe(200);
    } finally {
      await srv.close();
    }
  });

  it('a port in use is FLANNEL_ERR_HEALTHZ_LISTEN naming the flag (not a bare listen EADDRINUSE)', async () => {
    const metrics = new Metrics();
    const a = await startHealthServer({ host: '127.0.0.1', port: 0, metrics, isReady: () => true });
    try {
      const err = await expectCode(startHealthServer({ host: '127.0.0.1', port: a.port, metrics, isReady: () => true }), HostError, 'FLANNEL_ERR_HEALTHZ_LISTEN');
      expect(err.context).toEqual({ host: '127.0.0.1', port: a.port, errno: 'EADDRINUSE' });
      expect(err.message).toContain(`--healthz-port ${a.port}`);
    } finally {
      await a.close();
    }
  });

  it("an --healthz-ip that is not this host's is FLANNEL_ERR_HEALTHZ_LISTEN naming --healthz-ip", async () => {
    // 192.0.2.1 is TEST-NET-1 (RFC 5737): no host holds it, so bind(2) fails with EADDRNOTAVAIL.
    const err = await expectCode(startHealthServer({ host: '192.0.2.1', port: 0, metrics: new Metrics(), isReady: () => true }), HostError, 'FLANNEL_ERR_HEALTHZ_LISTEN');
    expect(err.context['errno']).toBe('EADDRNOTAVAIL');
    expect(err.message).toContain('as --healthz-ip');
  });

  it.each([
    ['EADDRINUSE', 'another --healthz-port'],
    ['EACCES', 'permission denied'],
    ['EMFILE', 'check --healthz-ip and --healthz-port'],
  ])('listenError(%s) says what to change', (errno, advice) => {
    const err = listenError(Object.assign(new Error(`listen ${errno}`), { code: errno }), '0.0.0.0', 10277);
    expect(err).toBeInstanceOf(HostError);
    expect(err.code).toBe('FLANNEL_ERR_HEALTHZ_LISTEN');
    expect(err.message).toContain('--healthz-ip 0.0.0.0 --healthz-port 10277');
    expect(err.message).toContain(advice);
  });
});

describe('/status', () => {
  const NETWORK: NetworkStatus = {
    networkMissing: false,
    listed: true,
    lastGoodAt: 0,
    passes: 1,
    consecutiveFailures: 0,
    refusedItems: [],
    inSync: true,
    peersDesired: 2,
    peersProgrammed: 2,
    lastPassAt: 0,
    lastPassOk: true,
    lastSuccessAt: 0,
    lastError: undefined,
    rejections: [],
  };
  const INPUT = {
    version: '0.1.0',
    phase: 'running',
    ready: true,
    startKind: 'reboot',
    lease: { subnet: '10.244.7.0/24', publicIP: '10.0.0.7' },
    networkName: 'cbr0',
    hnsNetwork: { id: 'ID-1', type: 'L2Bridge', adapter: 'Ethernet' },
    mtu: 1500,
    sourceVip: undefined,
    network: NETWORK,
  } satisfies StatusInput;
  const report = buildStatusReport(INPUT);

  it('lists refused peers by name with the HRESULT, and Last error is the refusal while it lasts', () => {
    const refusedAt = Date.parse('2026-01-01T00:10:00Z');
    const withRefusal = buildStatusReport({
      ...INPUT,
      network: {
        ...NETWORK,
        inSync: false,
        peersProgrammed: 1,
        lastError: { at: Date.parse('2026-01-01T00:05:00Z'), message: 'HNS was stopping' },
        refusedItems: [{ node: 'linux-3', prefix: '10.244.3.0/24', answer: '0x80070057', attempts: 4, since: refusedAt, error: 'HNS HcnModifyNetwork failed' }],
      },
    });
    expect(withRefusal.peers).toMatchObject({ refused: 1, refusals: [{ node: 'linux-3', prefix: '10.244.3.0/24', hresult: '0x80070057', attempts: 4 }] });
    expect(withRefusal.lastError).toEqual({ at: '2026-01-01T00:10:00.000Z', message: 'peer linux-3 10.244.3.0/24 refused with 0x80070057: HNS HcnModifyNetwork failed' });
    const table = renderStatusTable(withRefusal);
    expect(table).toMatch(/^Peers +2 desired, 1 programmed, 0 rejected, 1 refused$/m);
    expect(table).toMatch(/^ {2}refused +linux-3 10\.244\.3\.0\/24: HRESULT 0x80070057 since 2026-01-01T00:10:00\.000Z, 4 tries \(HNS HcnModifyNetwork failed\)$/m);
    expect(table).toMatch(/^Last error +2026-01-01T00:10:00\.000Z peer linux-3 /m);
    // No refusal: the failed pass's error, else none.
    expect(renderStatusTable(report)).toMatch(/^Last error +none$/m);
  });

  it('is served as JSON to this host; 503 without a source', async () => {
    const srv = await startHealthServer({ host: '127.0.0.1', port: 0, metrics: new Metrics(), isReady: () => true, status: async () => report });
    const none = await startHealthServer({ host: '127.0.0.1', port: 0, metrics: new Metrics(), isReady: () => true });
    try {
      const r = await get(srv.port, '/status');
      expect(r).toMatchObject({ status: 200, type: 'application/json' });
      expect(JSON.parse(r.body)).toEqual(report);
      expect((await get(none.port, '/status')).status).toBe(503);
    } finally {
      await srv.close();
      await none.close();
    }
  });

  it.each([
    ['127.0.0.1', '127.0.0.1', true],
    ['::1', '::1', true],
    ['::ffff:127.0.0.1', '::ffff:127.0.0.1', true],
    ['10.0.0.7', '10.0.0.7', true], // flanneld status on the node, port bound to the node IP
    ['10.0.0.8', '10.0.0.7', false], // another machine
  ])('a client at %s on a listener at %s is local: %s', (remoteAddress, localAddress, local) => {
    expect(isLocalRequest({ socket: { remoteAddress, localAddress } } as unknown as IncomingMessage)).toBe(local);
  });

  it('in sync needs the network present and every desired peer programmed', () => {
    expect(report.inSync).toBe(true);
    const input = {
      version: '0.1.0',
      phase: 'running',
      ready: true,
      startKind: undefined,
      lease: undefined,
      networkName: 'cbr0',
      mtu: undefined,
      sourceVip: undefined,
    };
    const net = NETWORK;
    expect(buildStatusReport({ ...input, hnsNetwork: undefined, network: net }).inSync).toBe(false);
    expect(buildStatusReport({ ...input, hnsNetwork: new Error('HNS down'), network: net }).network).toMatchObject({ present: false, error: 'HNS down' });
    expect(buildStatusReport({ ...input, hnsNetwork: { id: 'x', type: 'L2Bridge', adapter: undefined }, network: { ...net, peersProgrammed: 1 } }).inSync).toBe(false);
    expect(buildStatusReport({ ...input, hnsNetwork: { id: 'x', type: 'L2Bridge', adapter: undefined }, network: net }).inSync).toBe(true);
  });
});

describe('Metrics (prom-client)', () => {
  it('pre-registers every known labelled series at zero, plus build info', async () => {
    const metrics = new Metrics();
    // The lease reject reasons are declared by their owner, the peers' problems ledger.
    new PeerProblems({ log: silentLogger(), metrics, clock: systemClock });
    const text = await metrics.render();
    for (const reason of LEASE_REJECT_REASONS) expect(text).toContain(`flannel_leases_rejected_total{reason="${reason}"} 0\n`);
    for (const op of DATAPLANE_OPS) {
      expect(text).toContain(`flannel_dataplane_calls_total{op="${op}"} 0\n`);
      expect(text).toContain(`flannel_dataplane_errors_total{op="${op}"} 0\n`);
    }
    expect(text).toContain('flannel_apply_passes_total{result="ok"} 0\n');
    expect(text).toContain('flannel_apply_pass_duration_seconds_count{result="error"} 0\n');
    expect(text).toContain('flannel_network_rebuilds_total{result="ok"} 0\n'); // FlannelWindowsNetworkRebuilt (docs/metrics.md)
    expect(text).toContain('flannel_event_to_dataplane_seconds_count 0\n');
    expect(text).toContain(`flannel_build_info{version="${VERSION}"} 1\n`);
    expect(text).not.toContain('process_cpu_seconds_total'); // only with { process: true } (the daemon)
    expect(await new Metrics({ process: true }).render()).toMatch(/^process_cpu_seconds_total /m);
  });

  it('the skipped-object, reconnect and refusal series exist at zero once their owners are built', async () => {
    const metrics = new Metrics();
    const clock = systemClock;
    new NodeListWatch({
      list: async () => ({}),
      watch: async () => undefined,
      keys: annotationKeys(DEFAULT_ANNOTATION_PREFIX),
      log: silentLogger(),
      metrics,
      clock,
      random: Math.random,
      listPageSize: 250,
    });
    new PeerProblems({ driver: 'vxlan RemoteSubnetRoute policies', clock, log: silentLogger(), metrics });
    const text = await metrics.render();
    for (const where of ['list', 'watch']) expect(text).toContain(`flannel_kube_objects_skipped_total{resource="nodes",where="${where}"} 0\n`);
    expect(text).toContain('flannel_api_reconnects_total{resource="nodes"} 0\n');
    expect(text).toContain('flannel_dataplane_refusals_total{driver="vxlan RemoteSubnetRoute policies"} 0\n');
    expect(text).toContain('flannel_dataplane_refused_items{driver="vxlan RemoteSubnetRoute policies"} 0\n');
  });

  it('every operation HnsClient and the route table meter is pre-registered', () => {
    const ops = [
      ...[...readFileSync('src/hns/client.ts', 'utf8').matchAll(/this\.run\(\s*'([A-Za-z0-9]+)'/g)].map((m) => `hns.${m[1]}`),
      ...[...readFileSync('src/routes/metered.ts', 'utf8').matchAll(/metered\(this\.metrics, '([a-z.]+)'/g)].map((m) => m[1]),
    ];
    expect(ops.length).toBeGreaterThan(20);
    expect([...new Set(ops)].filter((op) => !DATAPLANE_OPS.includes(op))).toEqual([]);
  });

  it('histograms observe seconds, counters add, gauges are set; a family has the labels it is declared with', async () => {
    const m = new Metrics();
    m.observe(METRIC.passDuration, 0.03, { result: 'ok' });
    m.observe(METRIC.eventToDataplane, 2);
    m.inc(METRIC.simulatedCalls, { op: 'HNSCall' });
    m.inc(METRIC.simulatedCalls, { op: 'a "quoted" \\ op' }, 2);
    m.set(METRIC.peers, 4);
    expect(await readMetric(m, METRIC.simulatedCalls, { op: 'HNSCall' })).toBe(1);
    expect(await readMetric(m, METRIC.simulatedCalls, { op: 'a "quoted" \\ op' })).toBe(2);
    expect(await readMetricTotal(m, METRIC.simulatedCalls)).toBe(3);
    expect(await readMetric(m, METRIC.peers)).toBe(4);
    const text = await m.render();
    expect(text).toContain('flannel_apply_pass_duration_seconds_bucket{le="0.05",result="ok"} 1\n');
    expect(text).toContain('flannel_apply_pass_duration_seconds_bucket{le="0.025",result="ok"} 0\n');
    expect(text).toContain('flannel_event_to_dataplane_seconds_bucket{le="2.5"} 1\n');
    expect(text).toContain('flannel_event_to_dataplane_seconds_sum 2\n');
    expect(text).toContain('flannel_simulated_dataplane_calls_total{op="HNSCall"} 1\n');
    expect(text).toContain('flannel_peers 4\n');
    // Label names are fixed per family (FAMILIES); a counter is never set; every family is declared.
    expect(() => m.inc(METRIC.apiReconnects, { kind: 'relist' })).toThrow();
    expect(() => m.set(METRIC.applyPasses, 3, { result: 'ok' })).toThrow();
    expect(() => m.inc('flannel_undeclared_total')).toThrow();
    expect(await readMetric(m, METRIC.apiReconnects, { resource: 'nodes' })).toBe(0);
  });
});

describe("docs/metrics.md's NetworkPolicy section", () => {
  it('names every flannel_netpol_* family /metrics has, with its labels and their values', async () => {
    const text = await new Metrics().render();
    const families = [...text.matchAll(/^# TYPE (flannel_netpol_\w+) /gm)].map((m) => m[1]);
    expect(families.length).toBeGreaterThanOrEqual(6);
    const doc = readFileSync('docs/metrics.md', 'utf8');
    const start = doc.indexOf('\n## NetworkPolicy\n');
    expect(start).toBeGreaterThan(0);
    const section = doc.slice(start, doc.indexOf('\n## ', start + 1));
    for (const f of families) {
      const labels = [...new Set([...text.matchAll(new RegExp(`^${f}\\{([a-z]+)="`, 'gm'))].map((m) => m[1]))];
      expect([f, section.includes(labels.length ? `\`${f}{${labels.join(',')}}\`` : `\`${f}\``)]).toEqual([f, true]);
    }
    for (const op of ['add-rules', 'remove-rules', 'add-sets', 'update-sets', 'remove-sets']) {
      expect(text).toContain(`flannel_netpol_hns_writes_total{op="${op}"} 0`);
      expect(section).toContain(`\`${op}\``);
    }
  });
});

describe('flanneld status: where it looks for the agent', () => {
  const ifaces = {
    lo: [{ address: '127.0.0.1', netmask: '255.0.0.0', family: 'IPv4' as const, mac: '00:00:00:00:00:00', internal: true, cidr: '127.0.0.1/8' }],
    Ethernet: [{ address: '10.0.0.7', netmask: '255.255.255.0', family: 'IPv4' as const, mac: '00:15:5d:00:00:01', internal: false, cidr: '10.0.0.7/24' }],
  };
  it.each([
    ['', 0, ['http://127.0.0.1:10277/status', 'http://10.0.0.7:10277/status']],
    ['0.0.0.0', 9999, ['http://127.0.0.1:9999/status', 'http://10.0.0.7:9999/status']],
    ['10.0.0.7', 10277, ['http://10.0.0.7:10277/status']],
    ['127.0.0.1', 0, ['http://127.0.0.1:10277/status']],
  ])('--healthz-ip %j --healthz-port %j', (ip, port, urls) => {
    expect(statusUrls(ip, port, ifaces)).toEqual(urls);
  });
  it('a URL given (status --url, doctor --status-url) is the only one asked, else the health flags say where', () => {
    expect(agentStatusUrls('http://10.0.0.9:1/status', { healthzIP: '10.0.0.7', healthzPort: 9999 })).toEqual(['http://10.0.0.9:1/status']);
    expect(agentStatusUrls('', { healthzIP: '10.0.0.7', healthzPort: 0 })).toEqual(['http://10.0.0.7:10277/status']);
  });
});

// flannel_hns_call_duration_seconds{op} and flannel_hns_call_errors_total{op,hresult}: every HNS call (v1
// HNSCall, v2 Hcn*) is measured once at the seam that bounds it (src/hns/timed.ts), every iphlpapi route
// call at src/routes/metered.ts, under the Windows function's name as the simulated node counts it
// (flannel_simulated_dataplane_calls_total{op}). Times are the agent's clock: here a FakeClock, with the
// simulated node's modelled latency sleeping on it, so every duration is exact.
import { describe, expect, it } from '@jest/globals';
import { Metrics, METRIC } from '../../../src/basics/metrics.js';
import { HnsClient } from '../../../src/hns/client.js';
import { withCallTimeout } from '../../../src/hns/timed.js';
import { hnsCallOp, type HnsTransport } from '../../../src/hns/transport.js';
import { MeteredRouteTable } from '../../../src/routes/metered.js';
import { SimulatedHnsTransport } from '../../../src/simulator/hns.js';
import { SimulatedRouteTable } from '../../../src/simulator/host.js';
import { SimulatedDataplane } from '../../../src/simulator/model.js';
import type { DataplaneLatency } from '../../../src/simulator/model.js';
import { readMetric } from '../../support/agent-signals.js';
import { FakeClock } from '../../support/fake-clock.js';

const SCHEMA = { Major: 2, Minor: 0 };
const DURATION = METRIC.hnsCallDuration;
const ERRORS = METRIC.hnsCallErrors;

function node(latency: DataplaneLatency = {}, timeoutMs = 1000) {
  const clock = new FakeClock();
  const dp = new SimulatedDataplane({ clock, latency });
  const metrics = new Metrics();
  const transport = withCallTimeout(new SimulatedHnsTransport(dp), { timeoutMs, clock, metrics });
  const hns = new HnsClient(transport, { metrics, clock });
  const routes = new MeteredRouteTable(new SimulatedRouteTable(dp), metrics, clock);
  return { clock, dp, metrics, hns, routes };
}

/** `p`'s outcome, moving the fake clock on 1 ms at a time until it settles (the modelled latency sleeps on it). */
async function settle<T>(clock: FakeClock, p: Promise<T>): Promise<{ value?: T; error?: unknown }> {
  let out: { value?: T; error?: unknown } | undefined;
  p.then(
    (value) => (out = { value }),
    (error: unknown) => (out = { error }),
  );
  for (let i = 0; i < 100_000 && !out; i++) await clock.advance(1);
  if (!out) throw new Error('the call never settled');
  return out;
}

const count = (m: Metrics, op: string) => readMetric(m, `${DURATION}_count`, { op });
const sum = (m: Metrics, op: string) => readMetric(m, `${DURATION}_sum`, { op });
const bucket = (m: Metrics, op: string, le: string) => readMetric(m, `${DURATION}_bucket`, { op, le });

/** Every op the seam observed, with its count. */
async function observed(m: Metrics): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const line of (await m.render()).split('\n')) {
    const hit = /^flannel_hns_call_duration_seconds_count\{op="([^"]+)"\} (\d+)$/.exec(line);
    if (hit) out[hit[1]] = Number(hit[2]);
  }
  return out;
}

describe('flannel_hns_call_duration_seconds', () => {
  it('observes each HNS call once, under its Windows name, for as long as it took on the clock', async () => {
    const n = node({ hnsCallMs: 30 });
    const created = await settle(n.clock, n.hns.createNetwork({ Name: 'flannel.4096', Type: 'Overlay', SchemaVersion: SCHEMA }));
    expect(created.error).toBeUndefined();
    const id = created.value!.ID!;
    const policy = {
      Type: 'RemoteSubnetRoute',
      Settings: { DestinationPrefix: '10.244.1.0/24', IsolationId: 4096, ProviderAddress: '10.0.0.11', DistributedRouterMacAddress: '00-11-22-33-44-55' },
    };
    expect((await settle(n.clock, n.hns.addNetworkPolicies(id, [policy], { keepOpen: true }))).error).toBeUndefined();
    expect((await settle(n.clock, n.hns.getNetworkV1(id))).error).toBeUndefined();

    // One observation per call the simulated node received, under the name it counts it by.
    expect(await observed(n.metrics)).toEqual(Object.fromEntries(n.dp.calls));
    expect(Object.keys(await observed(n.metrics))).toEqual(expect.arrayContaining(['HcnCreateNetwork', 'HcnModifyNetwork', 'HNSCall GET /networks/{id}']));
    // 30 ms each (the modelled HNS latency on the fake clock): in the 0.05 bucket, not the 0.025 one.
    expect(await sum(n.metrics, 'HcnCreateNetwork')).toBeCloseTo(0.03, 9);
    expect(await bucket(n.metrics, 'HcnCreateNetwork', '0.025')).toBe(0);
    expect(await bucket(n.metrics, 'HcnCreateNetwork', '0.05')).toBe(1);
    expect(await readMetric(n.metrics, `${ERRORS}`, { op: 'HcnCreateNetwork', hresult: '0x00000000' })).toBe(0);
  });

  it('buckets run from 1 ms to 120 s (the default --hns-call-timeout)', async () => {
    const n = node();
    await settle(n.clock, n.hns.listNetworks());
    const text = await n.metrics.render();
    const les = [...text.matchAll(/^flannel_hns_call_duration_seconds_bucket\{le="([^"]+)",op="HcnEnumerateNetworks"\}/gm)].map((m) => m[1]);
    expect(les).toEqual(['0.001', '0.0025', '0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1', '2.5', '5', '10', '30', '60', '120', '+Inf']);
  });

  it('with --hns-call-timeout 0 (no timer) calls are still measured', async () => {
    const n = node({ hnsCallMs: 7 }, 0);
    expect((await settle(n.clock, n.hns.listNetworks())).error).toBeUndefined();
    expect(await count(n.metrics, 'HcnEnumerateNetworks')).toBe(1);
    expect(await sum(n.metrics, 'HcnEnumerateNetworks')).toBeCloseTo(0.007, 9);
  });

  it('a route call is observed under its iphlpapi name', async () => {
    const n = node({ routeCallMs: 2 });
    const route = { destinationPrefix: '10.244.1.0/24', nextHop: '10.0.0.11', interfaceIndex: n.dp.listAdapters()[0].InterfaceIndex, metric: 256 };
    expect((await settle(n.clock, n.routes.add(route))).error).toBeUndefined();
    expect((await settle(n.clock, n.routes.list())).error).toBeUndefined();
    expect((await settle(n.clock, n.routes.remove(route))).error).toBeUndefined();
    expect(await observed(n.metrics)).toEqual({ CreateIpForwardEntry2: 1, GetIpForwardTable2: 1, DeleteIpForwardEntry2: 1 });
    expect(await sum(n.metrics, 'CreateIpForwardEntry2')).toBeCloseTo(0.002, 9);
  });
});

describe('flannel_hns_call_errors_total', () => {
  it('counts a failed HNS call by its HRESULT, as 0x%08X', async () => {
    const n = node();
    const created = await settle(n.clock, n.hns.createNetwork({ Name: 'n', Type: 'Overlay', SchemaVersion: SCHEMA }));
    n.dp.injections.failNext('HcnOpenNetwork', 0x80070005);
    expect((await settle(n.clock, n.hns.getNetwork(created.value!.ID!))).error).toMatchObject({ code: 'FLANNEL_ERR_HNS_ACCESS_DENIED' });
    expect(await readMetric(n.metrics, ERRORS, { op: 'HcnOpenNetwork', hresult: '0x80070005' })).toBe(1);
    expect(await count(n.metrics, 'HcnOpenNetwork')).toBe(1); // a failed call is timed too
  });

  it('counts an HNS v1 failure envelope (Success:false) by the ErrorCode it carries', async () => {
    const n = node();
    // HNS answers a GET of a missing network with Success:false and ERROR_NOT_FOUND (./src/simulator/hns-v1.ts v1Answer).
    expect(await settle(n.clock, n.hns.getNetworkV1('0B6B4F0E-0000-4000-8000-000000000001'))).toEqual({ value: undefined });
    expect(await readMetric(n.metrics, ERRORS, { op: 'HNSCall GET /networks/{id}', hresult: '0x80070490' })).toBe(1);
    expect(await count(n.metrics, 'HNSCall GET /networks/{id}')).toBe(1);
  });

  it('counts a call that timed out as hresult="timeout", observed at the timeout; its late completion is not observed again', async () => {
    const clock = new FakeClock();
    const metrics = new Metrics();
    let answer!: (json: string) => void;
    const t = { enumerateNetworks: () => new Promise<string>((r) => (answer = r)) } as unknown as HnsTransport;
    const hns = new HnsClient(withCallTimeout(t, { timeoutMs: 40, clock, metrics }), { metrics, clock });
    expect((await settle(clock, hns.listNetworks())).error).toMatchObject({ code: 'FLANNEL_ERR_HNS_CALL' });
    answer('[]');
    await clock.advance(10);
    expect(await readMetric(metrics, ERRORS, { op: 'HcnEnumerateNetworks', hresult: 'timeout' })).toBe(1);
    expect(await count(metrics, 'HcnEnumerateNetworks')).toBe(1);
    expect(await sum(metrics, 'HcnEnumerateNetworks')).toBeCloseTo(0.04, 9);
  });

  it('counts a failed route call by HRESULT_FROM_WIN32 of its Win32 status', async () => {
    const n = node();
    const route = { destinationPrefix: '10.244.1.0/24', nextHop: '10.0.0.11', interfaceIndex: n.dp.listAdapters()[0].InterfaceIndex, metric: 256 };
    n.dp.injections.failNext('CreateIpForwardEntry2', 5); // ERROR_ACCESS_DENIED
    expect((await settle(n.clock, n.routes.add(route))).error).toMatchObject({ code: 'FLANNEL_ERR_ROUTE' });
    expect(await readMetric(n.metrics, ERRORS, { op: 'CreateIpForwardEntry2', hresult: '0x80070005' })).toBe(1);
  });

  it('keeps the hresult label bounded: an error without an HRESULT is "unknown", and past 32 distinct values they fold into "overflow"', async () => {
    const m = new Metrics();
    for (let i = 0; i < 40; i++) m.countCallError('HcnModifyNetwork', 0x803b0000 + i);
    m.countCallError('HcnModifyNetwork', 0x803b0000); // a value seen before keeps its label
    m.countCallError('HcnModifyNetwork', null);
    const text = await m.render();
    const labels = [...text.matchAll(/^flannel_hns_call_errors_total\{op="HcnModifyNetwork",hresult="([^"]+)"\} (\d+)$/gm)].map((x) => [x[1], Number(x[2])] as const);
    expect(labels).toHaveLength(34);
    expect(labels).toEqual(
      expect.arrayContaining([
        ['0x803B0000', 2],
        ['0x803B001F', 1],
        ['overflow', 8],
        ['unknown', 1],
      ]),
    );
  });
});

describe('the op label is a fixed set', () => {
  it.each([
    ['GET', '/globals/version', 'HNSCall GET /globals/version'],
    ['GET', '/networks/', 'HNSCall GET /networks/'],
    ['GET', '/networks', 'HNSCall GET /networks/'],
    ['POST', '/networks/', 'HNSCall POST /networks/'],
    ['GET', '/networks/0B6B4F0E-0000-4000-8000-000000000001', 'HNSCall GET /networks/{id}'],
    ['DELETE', '/endpoints/abc', 'HNSCall DELETE /endpoints/{id}'],
    ['POST', '/endpoints/abc/attach', 'HNSCall POST /endpoints/{id}/attach'],
    ['GET', '/Networks/ABC?x=1', 'HNSCall GET /networks/{id}'],
    ['GET', '/policylists/', 'HNSCall GET other'],
    ['GET', '/networks/a/b/c', 'HNSCall GET other'],
  ] as const)('HNSCall %s %s is %s', (method, path, op) => {
    expect(hnsCallOp(method, path)).toBe(op);
  });
});

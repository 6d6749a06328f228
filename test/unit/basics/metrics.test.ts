// /metrics passes `promtool check metrics` (prometheus/prometheus cmd/promtool: the exposition lint,
// github.com/prometheus/client_golang/prometheus/testutil/promlint): prom-client's default
// nodejs_active_{handles,requests,resources}_total are gauges with a counter's suffix, which it rejects.
// promtool comes from Debian's `prometheus` package (../support/promtool.ts); without it the promtool case
// is skipped locally and fails under CI=true. The suffix rule is also checked here without promtool. The
// /metrics of a running agent is checked too: test/integration/hns-call-metrics.test.ts.
import { describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Metrics, METRIC, NON_COUNTER_TOTALS } from '../../../src/basics/metrics.js';
import { checkMetrics, itWithPromtool, requirePromtool } from '../../support/promtool.js';

/** Every family with a sample, as a running agent has them. */
async function exposition(): Promise<string> {
  const m = new Metrics({ process: true });
  m.inc(METRIC.leasesRejected, { reason: 'vni-too-low' });
  m.inc(METRIC.leasesIPv6Rejected, { reason: 'public-ip-not-unicast' });
  m.inc(METRIC.dataplaneCalls, { op: 'hns.addNetworkPolicies' });
  m.inc(METRIC.refusals, { driver: 'vxlan' });
  m.set(METRIC.refusedItems, 1, { driver: 'vxlan' });
  m.set(METRIC.peers, 3);
  m.inc(METRIC.networkRebuilds, { result: 'ok' });
  m.inc(METRIC.hnsRestarts);
  m.inc(METRIC.driftRepairs, { kind: 'host-endpoint' });
  m.observe(METRIC.eventToDataplane, 0.02);
  m.observe(METRIC.passDuration, 0.01, { result: 'ok' });
  m.inc(METRIC.nodeEventsDropped, { reason: 'rate-limit' });
  m.set(METRIC.nodeEventCacheEntries, 3, { cache: 'dedup' });
  m.observeCall('HcnModifyNetwork', 0.012);
  m.observeCall('HNSCall GET /networks/{id}', 0.003, null);
  m.observeCall('CreateIpForwardEntry2', 0.001, 0x80070005);
  m.countCallError('HcnModifyNetwork', 0x803b002f);
  m.countCallError('HcnEnumerateNetworks', 'timeout');
  m.set(METRIC.ready, 1);
  m.set(METRIC.peersProgrammed, 3);
  m.set(METRIC.peersRejected, 1);
  return m.render();
}

describe('/metrics exposition', () => {
  it('has no gauge or histogram named like a counter (the _total suffix)', async () => {
    const text = await exposition();
    const types = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]] as const);
    expect(types.length).toBeGreaterThan(20);
    expect(types.filter(([name, type]) => name.endsWith('_total') && type !== 'counter')).toEqual([]);
    for (const name of NON_COUNTER_TOTALS) expect(text).not.toContain(`${name} `);
    expect(text).toMatch(/^nodejs_active_handles\{/m); // the per-type gauges they summed are kept
  });

  const run = itWithPromtool();
  run('passes promtool check metrics', async () => {
    const text = await exposition();
    expect(text).toMatch(/^flannel_hns_call_duration_seconds_bucket\{le="0.025",op="HcnModifyNetwork"\} 1$/m);
    expect(text).toMatch(/^flannel_hns_call_errors_total\{op="HcnEnumerateNetworks",hresult="timeout"\} 1$/m);
    expect(checkMetrics(text)).toEqual({ status: 0, out: '' });
  });

  // docs/metrics.md's alert rules. (Its scrape config uses kubernetes_sd_configs, which Debian's
  // prometheus build leaves out, so `promtool check config` cannot read it here.)
  run("docs/metrics.md's alert rules pass promtool check rules and name only metrics the agent exposes", async () => {
    const bin = requirePromtool();
    const doc = readFileSync('docs/metrics.md', 'utf8');
    const rules = [...doc.matchAll(/```yaml\n(# flannel-windows-alerts\.yml\n[\s\S]*?)```/g)].map((m) => m[1]);
    expect(rules).toHaveLength(1);
    const dir = mkdtempSync(join(tmpdir(), 'flanneld-rules-'));
    try {
      writeFileSync(join(dir, 'alerts.yml'), rules[0]);
      const r = spawnSync(bin, ['check', 'rules', join(dir, 'alerts.yml')], { encoding: 'utf8' });
      expect({ status: r.status, out: r.stdout.trim() }).toEqual({ status: 0, out: expect.stringContaining('SUCCESS: 12 rules found') });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const exposed = new Set([...(await exposition()).matchAll(/^# TYPE (\S+) (\S+)$/gm)].flatMap((m) => (m[2] === 'histogram' ? [m[1], `${m[1]}_bucket`] : [m[1]])));
    const used = [...rules[0].matchAll(/\b(flannel_[a-z0-9_]+)/g)].map((m) => m[1]);
    expect(used.length).toBeGreaterThan(5);
    expect(used.filter((n) => !exposed.has(n))).toEqual([]);
  });
});

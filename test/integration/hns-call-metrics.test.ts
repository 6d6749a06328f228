// The HNS call metrics of a running agent (the built CLI on the simulated node, against the fake API server):
// flannel_hns_call_duration_seconds{op} holds every HNS call the node received, under the name the node
// counts it by (flannel_simulated_dataplane_calls_total{op}); flannel_hns_call_errors_total{op,hresult}
// counts what a `faults` rule made HNS answer; the whole /metrics passes `promtool check metrics`.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { HOSTGW_NET_CONF, TestCluster, VXLAN_NET_CONF, WIN_IP, waitFor } from '../support/cluster.js';
import { readMetric } from '../support/agent-signals.js';
import { METRIC } from '../../src/basics/metrics.js';
import { checkMetrics, promtool } from '../support/promtool.js';

const WIN = 'win-1';
let cluster: TestCluster;
beforeEach(async () => {
  cluster = await new TestCluster().start();
});
afterEach(() => cluster.stop());

/** `name{op="..."} value` series of an exposition, by op. */
function byOp(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of text.matchAll(new RegExp(`^${name}\\{op="([^"]+)"\\} (\\S+)$`, 'gm'))) out.set(m[1], Number(m[2]));
  return out;
}

/** An HNS call as the simulated node names it (its host and route calls are others). */
const isHnsCall = (op: string) => op.startsWith('Hcn') || op.startsWith('HNSCall ');

describe('HNS call metrics of a running agent', () => {
  it('every HNS call the node received is timed under its name, a failing HRESULT is counted, and /metrics passes promtool', async () => {
    await cluster.withNodes({ name: WIN, internalIP: '10.0.0.7' });
    const state = cluster.stateOf(WIN);
    const agent = await cluster.startProcess({ nodeName: WIN, netConf: VXLAN_NET_CONF, args: ['--iface=10.0.0.7'] });
    await agent.waitReady();
    await state.waitFor(() => state.remoteSubnets('flannel.4096').join() === '10.244.1.0/24', 'the first peer');

    state.addFault({ op: 'HcnModifyNetwork', match: '10.244.3.0/24', hresult: '0x803B002F', remaining: 2 });
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-3', podCIDR: '10.244.3.0/24', publicIP: '10.0.0.13', backendType: 'vxlan' }));
    await state.waitFor(() => state.remoteSubnets('flannel.4096').join() === '10.244.1.0/24,10.244.3.0/24', 'the second peer after the faults', 30_000);

    // Each op the node counted has its timing series, never more observations than calls (a call is
    // counted as it enters the node and observed as it leaves the seam). Waited on: a call may be in flight.
    const text = await waitFor(
      async () => {
        const t = await agent.metrics();
        const calls = byOp(t, 'flannel_simulated_dataplane_calls_total');
        const timed = byOp(t, 'flannel_hns_call_duration_seconds_count');
        const hnsOps = [...calls.keys()].filter(isHnsCall);
        return hnsOps.length > 3 && hnsOps.every((op) => timed.has(op)) && [...timed].every(([op, n]) => n >= 1 && n <= (calls.get(op) ?? 0)) ? t : undefined;
      },
      'a timing series for every HNS call the node received',
      30_000,
    );
    expect([...byOp(text, 'flannel_hns_call_duration_seconds_count').keys()]).toEqual(
      expect.arrayContaining(['HNSCall GET /globals/version', 'HcnEnumerateNetworks', 'HcnCreateNetwork', 'HcnModifyNetwork']),
    );
    expect(text).toMatch(/^flannel_hns_call_errors_total\{op="HcnModifyNetwork",hresult="0x803B002F"\} 2$/m);
    // promtool: ../support/promtool.ts (required under CI=true, skipped without it elsewhere).
    if (promtool() || process.env['CI'] === 'true') expect(checkMetrics(text)).toEqual({ status: 0, out: '' });
  }, 60_000);

  it('host-gw: the route calls are timed under their iphlpapi names', async () => {
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'host-gw' }));
    cluster.addWindowsNode(WIN, '10.244.100.0/24', WIN_IP);
    const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf: HOSTGW_NET_CONF });
    await waitFor(
      async () => a.agent.isReady && (await readMetric(a.agent.metrics, `${METRIC.hnsCallDuration}_count`, { op: 'CreateIpForwardEntry2' })) >= 1,
      'a timed route add',
      30_000,
    );
    const timed = byOp(await a.agent.metrics.render(), 'flannel_hns_call_duration_seconds_count');
    expect(timed.get('GetIpForwardTable2')).toBeGreaterThanOrEqual(1);
    expect([...timed.keys()]).toEqual(expect.arrayContaining(['HNSCall POST /networks/', 'HNSCall POST /endpoints/{id}/attach']));
  });
});

// The API server killed and restarted mid-list and mid-watch: the agent relists, writes nothing before
// a complete list (neither peers nor, at its first start, its own annotations and subnet.env), and ends with the dataplane equal to the cluster's state.
import { afterEach, describe, expect, it } from '@jest/globals';
import { existsSync } from 'node:fs';
import { METRIC } from '../../src/basics/metrics.js';
import { expectConverged, FaultCluster, HOSTGW_NET_CONF, policies, routes, VXLAN_NET_CONF, waitFor, waitForPasses, WIN } from './harness.js';
import type { Logger } from '../../src/basics/log.js';
import { LIST_FAILED, readMetricTotal } from '../support/agent-signals.js';
import { logSink } from '../support/log-sink.js';

/** The Node list (not the watch, not a GET of one node). */
const LIST = /^\/api\/v1\/nodes\?(?!.*watch=)/;

let c: FaultCluster;
afterEach(async () => {
  await c?.stop();
});

/** host-gw peers 1-3, converged, with its watch open. */
async function watchingHostGwAgent(log?: Logger) {
  c = await new FaultCluster().start();
  for (const n of [1, 2, 3]) c.addLinux(n, 'host-gw');
  c.addWindowsNode();
  const a = c.startAgent({ netConf: HOSTGW_NET_CONF, log });
  await expectConverged(a, 'host-gw', [1, 2, 3]);
  await waitFor(() => c.api.activeWatches > 0, 'an open watch');
  return a;
}

describe('API server faults', () => {
  it('killed mid-list before the first sync: nothing is written until a complete list, then exactly the cluster', async () => {
    c = await new FaultCluster().start();
    for (const n of [1, 2, 3]) c.addLinux(n, 'vxlan');
    c.addWindowsNode();
    // The first list's connection dies mid-request; the server then goes away for a while.
    c.api.failNext('GET', LIST, 0, 1);
    const sink = logSink('info');
    const a = c.startAgent({ netConf: VXLAN_NET_CONF, log: sink.log });
    await waitFor(() => c.api.requests.some((r) => r.method === 'GET' && r.path === '/api/v1/nodes' && r.query['watch'] === undefined), 'the first list');
    await c.api.stop();
    c.api.deleteNode('linux-2');
    c.addLinux(4, 'vxlan');
    // The network is built while the list is retried, but what other programs read (the own Node's
    // annotations, subnet.env) waits for a complete list to say no older Node has the podCIDR
    // (docs/compatibility.md, "Who holds a contested subnet"): the agent retries the list, still registering.
    await waitFor(() => sink.entries.filter((e) => e['message'] === LIST_FAILED).length >= 2, 'the list retried while the server is down', 20_000);
    expect(a.agent.network).toBeDefined();
    expect(a.agent.phase).toBe('registering');
    expect(a.agent.isReady).toBe(false);
    expect(existsSync(a.subnetFile)).toBe(false);
    expect(Object.keys(c.api.getNode(WIN)?.metadata.annotations ?? {}).filter((k) => k.startsWith('flannel.alpha.coreos.com/'))).toEqual([]);
    expect(policies(a)).toEqual([]); // nothing written without a complete list
    await c.api.start();
    await expectConverged(a, 'vxlan', [1, 3, 4]);
    expect(a.agent.isReady).toBe(true);
    expect(existsSync(a.subnetFile)).toBe(true);
    expect(c.api.getNode(WIN)?.metadata.annotations?.['flannel.alpha.coreos.com/kube-subnet-manager']).toBe('true');
  });

  it('killed mid-watch: the outage hides a delete, an add and a change; the relist fails once more; then exact', async () => {
    const sink = logSink('info');
    const a = await watchingHostGwAgent(sink.log);

    await c.api.stop(); // the watch connection is cut
    c.api.deleteNode('linux-1');
    c.addLinux(5, 'host-gw');
    c.api.updateNode('linux-3', (n) => {
      n.metadata.annotations!['flannel.alpha.coreos.com/public-ip'] = '10.0.1.33';
    });
    c.api.compact(); // etcd compacted meanwhile; the restarted server's new watch cache answers a resume with 410 Gone
    c.api.failNext('GET', LIST, 0, 1); // and the first relist dies mid-request
    // The agent tried to relist and failed, then re-read and diffed the dataplane twice.
    await waitFor(() => sink.entries.some((e) => e['message'] === LIST_FAILED), 'a failed relist while the API server is away', 20_000);
    await waitForPasses(a, 2, 'two reconcile passes (full re-reads) after it');
    expect(routes(a)).toEqual(['10.244.1.0/24 via 10.0.1.1', '10.244.2.0/24 via 10.0.1.2', '10.244.3.0/24 via 10.0.1.3']); // left alone while away
    await c.api.start();
    await waitFor(() => routes(a).join() === '10.244.2.0/24 via 10.0.1.2,10.244.3.0/24 via 10.0.1.33,10.244.5.0/24 via 10.0.1.5', 'relisted', 20_000);
    expect(routes(a)).toEqual(['10.244.2.0/24 via 10.0.1.2', '10.244.3.0/24 via 10.0.1.33', '10.244.5.0/24 via 10.0.1.5']);
    expect(await readMetricTotal(a.agent.metrics, METRIC.apiReconnects)).toBeGreaterThanOrEqual(1);
    // Changes after the recovery flow through the new watch.
    c.api.deleteNode('linux-3');
    c.addLinux(6, 'host-gw');
    await expectConverged(a, 'host-gw', [2, 5, 6]);
  });

  it('hung (requests read, never answered): the dataplane is left as it is; when it answers again, exact', async () => {
    const a = await watchingHostGwAgent();
    c.api.hang('GET', /^\/api\/v1\/nodes/); // every list, watch and get
    c.api.closeWatches(); // the agent re-watches into the hang
    await waitFor(() => c.api.hangingRequests > 0, 'a hung request');
    c.api.deleteNode('linux-1');
    c.api.compact(); // nothing for watchers (the watch cache): the resume after the hang replays the events
    c.addLinux(4, 'host-gw');
    await waitForPasses(a, 2, 'two reconcile passes (full re-reads) while the API server hangs');
    expect(routes(a)).toEqual(['10.244.1.0/24 via 10.0.1.1', '10.244.2.0/24 via 10.0.1.2', '10.244.3.0/24 via 10.0.1.3']);
    c.api.unhang(); // the hung connections are cut: the agent relists
    await expectConverged(a, 'host-gw', [2, 3, 4]);
  });

  it('restarted repeatedly with 5xx answers and watches closed mid-stream: converges to the final state', async () => {
    c = await new FaultCluster().start();
    for (const n of [1, 2, 3, 4]) c.addLinux(n, 'vxlan');
    c.addWindowsNode();
    // Five failed rounds within 2 minutes: client-go's pauses would reach 13-26 s; a tenth of them here.
    const a = c.startAgent({ netConf: VXLAN_NET_CONF, subnetTimings: { relistBackoff: { initialMs: 80, capMs: 3000 } } });
    await expectConverged(a, 'vxlan', [1, 2, 3, 4]);
    for (let round = 0; round < 3; round++) {
      await waitFor(() => c.api.activeWatches > 0, 'an open watch', 20_000);
      c.api.deleteNode(`linux-${round + 1}`);
      c.addLinux(10 + round, 'vxlan');
      if (round === 1) c.api.closeWatches();
      else await c.api.restart();
      c.api.failNext('GET', LIST, 503, 1);
      c.addLinux(20 + round, 'vxlan');
    }
    await expectConverged(a, 'vxlan', [4, 10, 11, 12, 20, 21, 22], 25_000);
  });
});

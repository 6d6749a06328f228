// Kubernetes Events on the own Node: client-go's recorder rules (tools/record/events_cache.go: dedup by
// count + lastTimestamp patch, aggregation after 10 similar messages in 10 minutes, a per source+object
// token bucket of burst 25 refilled every 5 minutes), the real HTTP POST/PATCH to the API server, and
// `kubectl describe node` against the fake API server showing what the agent recorded.
import { afterEach, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { FakeKubeApiServer, linuxFlannelNode, writeKubeconfig } from '../../src/demo/kube-fake/api-server.js';
import { EventCorrelator, KubeEventRecorder } from '../../src/kube/event-recorder.js';
import { KubeHttp } from '../../src/kube/http.js';
import { buildKubeConfig } from '../../src/kube/client.js';
import { NODE_EVENT_REASON, type NodeEvent } from '../../src/node-events.js';
import { PeerProblems, peerRejectedEvent, peerRefusedEvent } from '../../src/peers/problems.js';
import { silentLogger } from '../../src/basics/log.js';
import { Metrics, METRIC } from '../../src/basics/metrics.js';
import { HRESULT, hnsError } from '../../src/hns/errors.js';
import { eventsSettled, readMetric } from '../support/agent-signals.js';
import { FakeClock } from '../support/fake-clock.js';
import { TestCluster, VXLAN_NET_CONF, waitFor } from '../support/cluster.js';

const NODE = 'win-1';
const warn = (message: string, reason = 'FlannelPeerRejected'): NodeEvent => ({ type: 'Warning', reason, message });

describe('EventCorrelator (client-go events_cache.go)', () => {
  it('creates an event once, then patches its count and lastTimestamp', () => {
    const clock = new FakeClock();
    const c = new EventCorrelator(NODE, () => clock.now());
    const first = c.correlate(warn('peer linux-3 rejected'));
    expect(first?.kind).toBe('create');
    expect(first?.event).toMatchObject({
      count: 1,
      involvedObject: { kind: 'Node', name: NODE, uid: NODE },
      metadata: { namespace: 'default' },
      source: { component: 'flanneld', host: NODE },
    });
    clock.t += 61_000;
    const again = c.correlate(warn('peer linux-3 rejected'));
    expect(again?.kind).toBe('patch');
    expect(again?.event.metadata.name).toBe(first?.event.metadata.name);
    expect(again?.kind === 'patch' && again.patch).toEqual({
      count: 2,
      lastTimestamp: new Date(clock.t).toISOString().replace(/\.\d{3}Z$/, 'Z'),
      message: 'peer linux-3 rejected',
    });
    expect(again?.event.firstTimestamp).toBe(first?.event.firstTimestamp);
  });

  it('combines the 10th distinct message of one reason within 10 minutes into one aggregated event', () => {
    const clock = new FakeClock();
    const c = new EventCorrelator(NODE, () => clock.now());
    const out = Array.from({ length: 12 }, (_, i) => c.correlate(warn(`peer linux-${i} rejected`)));
    expect(out.slice(0, 9).every((w) => w?.kind === 'create' && !w.event.message.startsWith('(combined'))).toBe(true);
    expect(out[9]).toMatchObject({ kind: 'create', event: { message: '(combined from similar events): peer linux-9 rejected', count: 1 } });
    expect(out[10]).toMatchObject({ kind: 'patch', patch: { count: 2, message: '(combined from similar events): peer linux-10 rejected' } });
    expect(out[11]?.event.metadata.name).toBe(out[9]?.event.metadata.name);
    // Another reason is aggregated on its own.
    expect(c.correlate(warn('x', 'FlannelNetworkRebuilt'))).toMatchObject({ kind: 'create', event: { message: 'x' } });
  });

  it('lets 25 events through at once, then one per 5 minutes (the source+object spam filter)', () => {
    const clock = new FakeClock();
    const c = new EventCorrelator(NODE, () => clock.now());
    const sent = Array.from({ length: 30 }, (_, i) => c.correlate({ type: 'Warning', reason: `R${i}`, message: 'm' }));
    expect(sent.filter((w) => w !== undefined)).toHaveLength(25);
    clock.t += 299_000;
    expect(c.correlate({ type: 'Warning', reason: 'R0', message: 'm' })).toBeUndefined();
    clock.t += 1_000;
    // A dropped event still counted: the one let through carries every occurrence (R0 seen 3 times).
    expect(c.correlate({ type: 'Warning', reason: 'R0', message: 'm' })).toMatchObject({ kind: 'patch', patch: { count: 3 } });
    expect(c.correlate({ type: 'Warning', reason: 'R1', message: 'm' })).toBeUndefined();
  });
});

describe('Events about a namespaced object (a NetworkPolicy the agent refuses)', () => {
  const policy = { kind: 'NetworkPolicy', apiVersion: 'networking.k8s.io/v1', namespace: 'x', name: 'deny-sctp', uid: 'uid-1' } as const;

  it("lives in the object's namespace and names it as involvedObject, named after it as client-go names events", () => {
    const clock = new FakeClock();
    const c = new EventCorrelator(NODE, () => clock.now());
    const w = c.correlate({ ...warn('refused', 'FlannelNetworkPolicyUnsupported'), regarding: policy });
    expect(w).toMatchObject({ kind: 'create', event: { metadata: { namespace: 'x' }, involvedObject: policy, source: { component: 'flanneld', host: NODE } } });
    expect(w?.event.metadata.name).toMatch(/^deny-sctp\.[0-9a-f]+$/);
    // The same event on the Node is another event (another object, another key).
    expect(c.correlate(warn('refused', 'FlannelNetworkPolicyUnsupported'))?.kind).toBe('create');
    expect(c.correlate({ ...warn('refused', 'FlannelNetworkPolicyUnsupported'), regarding: policy })).toMatchObject({ kind: 'patch', patch: { count: 2 } });
  });

  it('has a spam bucket per object: 25 on one policy leave the Node and another policy theirs', () => {
    const clock = new FakeClock();
    const c = new EventCorrelator(NODE, () => clock.now());
    const sent = Array.from({ length: 30 }, (_, i) => c.correlate({ type: 'Warning', reason: `R${i}`, message: 'm', regarding: policy }));
    expect(sent.filter((w) => w !== undefined)).toHaveLength(25);
    expect(c.correlate({ type: 'Warning', reason: 'R0', message: 'm' })).toBeDefined();
    expect(c.correlate({ type: 'Warning', reason: 'R0', message: 'm', regarding: { ...policy, name: 'other', uid: 'uid-2' } })).toBeDefined();
  });

  it("the fake API server refuses an Event outside its object's namespace, as the kube-apiserver's validation does", async () => {
    const api = new FakeKubeApiServer();
    await api.start();
    try {
      const post = (namespace: string, involved: Record<string, string>) =>
        fetch(`${api.url}/api/v1/namespaces/${namespace}/events`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ metadata: { name: `e-${namespace}-${involved.namespace ?? ''}` }, involvedObject: involved, reason: 'R', message: 'm', type: 'Warning' }),
        });
      expect((await post('default', policy)).status).toBe(422);
      expect((await post('y', { kind: 'Node', name: NODE })).status).toBe(422);
      expect((await post('x', policy)).status).toBe(201);
      expect((await post('default', { kind: 'Node', name: NODE })).status).toBe(201);
    } finally {
      await api.stop();
    }
  });
});

describe('the problems ledger reports a refused peer once per answer', () => {
  it('records an Event at the first refusal and at a change of HRESULT, not at every retry', () => {
    const clock = new FakeClock();
    const events: NodeEvent[] = [];
    const t = new PeerProblems({ driver: 'vxlan', clock, log: silentLogger(), owner: () => 'linux-3', events: { record: (e) => events.push(e) } });
    const refusal = (hr: number) => hnsError('HcnModifyNetwork', hr, undefined, {});
    for (const attempts of [1, 2, 3]) t.refused('10.244.3.0/24', refusal(HRESULT.E_INVALIDARG), { attempts, retryInMs: 250 * 2 ** (attempts - 1) });
    expect(events).toHaveLength(1);
    t.refused('10.244.3.0/24', refusal(HRESULT.HCN_E_INVALID_POLICY), { attempts: 4, retryInMs: 2000 });
    expect(events.map((e) => e.reason)).toEqual([NODE_EVENT_REASON.peerRefused, NODE_EVENT_REASON.peerRefused]);
    expect(events[0].message).toContain('peer linux-3 (10.244.3.0/24) with 0x80070057');
  });
});

describe('KubeEventRecorder over HTTP', () => {
  let api: FakeKubeApiServer | undefined;
  afterEach(async () => {
    await api?.stop();
  });

  const metrics = new Metrics();
  async function recorder(dir: string): Promise<KubeEventRecorder> {
    api = new FakeKubeApiServer();
    await api.start();
    const kubeconfig = join(dir, 'kubeconfig');
    await writeKubeconfig(kubeconfig, api.url);
    const clock = new FakeClock();
    const http = new KubeHttp(buildKubeConfig({ kubeconfigFile: kubeconfig, kubeApiUrl: '' }), clock);
    return new KubeEventRecorder({ http, nodeName: NODE, clock, log: silentLogger(), metrics });
  }

  it('POSTs one Event and PATCHes it on a repeat; a patch of an expired event creates it again', async () => {
    const dir = (await import('node:fs')).mkdtempSync(join((await import('node:os')).tmpdir(), 'flanneld-ev-'));
    const rec = await recorder(dir);
    const e = peerRefusedEvent('linux-3', '10.244.3.0/24', '2147942487', 'HNS refused it');
    rec.record(e);
    rec.record(e);
    rec.record(e);
    await eventsSettled(metrics, 3);
    const events = api!.events({ kind: 'Node', name: NODE });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ reason: NODE_EVENT_REASON.peerRefused, count: 3, type: 'Warning' });
    const methods = api!.requests.filter((r) => r.path.includes('/events')).map((r) => `${r.method} ${r.path.replace(/events\/.*/, 'events/NAME')}`);
    expect(methods).toEqual(['POST /api/v1/namespaces/default/events', 'PATCH /api/v1/namespaces/default/events/NAME', 'PATCH /api/v1/namespaces/default/events/NAME']);
    expect(api!.requests.at(-1)?.contentType).toBe('application/strategic-merge-patch+json');

    const name = (events[0].metadata as { name: string }).name;
    expect(api!.expireEvent('default', name)).toBe(true);
    rec.record(e);
    await eventsSettled(metrics, 4);
    expect(api!.events({ kind: 'Node', name: NODE })).toMatchObject([{ count: 4, metadata: { name } }]);
    expect(await readMetric(metrics, METRIC.nodeEventsWritten)).toBe(4);
  });
});

describe('the agent records Events on its own Node', () => {
  let cluster: TestCluster | undefined;
  afterEach(async () => {
    await cluster?.stop();
  });

  it('a rejected peer and a contested subnet become Warning events, and kubectl describe node shows them', async () => {
    cluster = await new TestCluster().start();
    // linux-1 and linux-4 claim one podCIDR and were created in the same second.
    const sameSecond = '2024-05-01T10:00:00Z';
    for (const [name, ip] of [
      ['linux-4', '10.0.0.14'],
      ['linux-1', '10.0.0.11'],
    ]) {
      const node = linuxFlannelNode({ name, podCIDR: '10.244.1.0/24', publicIP: ip, backendType: 'vxlan' });
      node.metadata.creationTimestamp = sameSecond;
      cluster.api.addNode(node);
    }
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-3', podCIDR: '10.244.3.0/24', publicIP: '10.0.0.13', backendType: 'vxlan', vni: 1 }));
    cluster.addWindowsNode(NODE, '10.244.100.0/24', '10.0.0.2');
    const a = cluster.startAgent({ nodeName: NODE, ip: '10.0.0.2', netConf: VXLAN_NET_CONF });
    const events = await waitFor(() => {
      const evs = cluster!.api.events({ kind: 'Node', name: NODE });
      return evs.length >= 2 && evs;
    }, 'two events on the Node');
    const messages = (reason: string) => events.filter((e) => e.reason === reason).map((e) => e.message as string);
    expect(messages(NODE_EVENT_REASON.peerRejected)).toEqual([expect.stringContaining('peer linux-3 rejected (vni-too-low)')]);
    // The same second: the name that sorts first, linux-1, keeps the podCIDR (docs/compatibility.md, "Who holds a contested subnet").
    expect(messages(NODE_EVENT_REASON.subnetContested)).toEqual([
      expect.stringMatching(/^peer linux-4 rejected \(subnet-overlaps-peer\): subnet 10\.244\.1\.0\/24 is already held by linux-1/),
    ]);
    expect(events.every((e) => e.count === 1 && e.type === 'Warning')).toBe(true);
    await a.stop();

    // kubectl, against the same fake API server, tells the story.
    const { stdout } = await promisify(execFile)('kubectl', ['--kubeconfig', join(cluster.dir, 'kubeconfig'), 'describe', 'node', NODE], { timeout: 30_000 });
    expect(stdout).toMatch(/Events:/);
    expect(stdout).toMatch(/Warning\s+FlannelPeerRejected\s+.*flanneld/);
    expect(stdout).toContain('peer linux-3 rejected (vni-too-low)');
  });

  it('builds the rejected-peer message naming the peer and the fix', () => {
    expect(peerRejectedEvent('linux-3', 'public-ip-own', "public IP 10.0.0.2 is this node's own address").message).toMatch(
      /^peer linux-3 rejected \(public-ip-own\): public IP 10.0.0.2 is this node's own address; .*; fix: .*public-ip/,
    );
  });
});

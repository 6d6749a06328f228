// The NetworkPolicy controller (src/policy/controller.ts) against the fake API server over real HTTP (its
// three list-watches, src/policy/sources.ts) and a simulated Windows node's HNS (src/simulator/), as the agent
// runs it: pods get their endpoints as a CNI ADD makes them (after the pod, or before), the controller finds
// each by the pod's IP and writes its rules; the simulated node's evaluator (src/simulator/acl.ts) judges
// packets over what HNS then holds. Semantics: the NetworkPolicy reference
// (kubernetes.io/docs/concepts/services-networking/network-policies); writes per change counted from the
// simulated HNS's own call counts (HcnModifyEndpoint, HcnModifyNetwork), which must be O(change).
import { afterEach, describe, expect, it } from '@jest/globals';
import { systemClock, systemRandom } from '../../../src/basics/clock.js';
import { METRIC, Metrics } from '../../../src/basics/metrics.js';
import { FakeKubeApiServer } from '../../../src/demo/kube-fake/api-server.js';
import { HnsClient } from '../../../src/hns/client.js';
import { buildKubeConfig } from '../../../src/kube/client.js';
import { KubeEventRecorder } from '../../../src/kube/event-recorder.js';
import { KubeHttp } from '../../../src/kube/http.js';
import { NetpolController } from '../../../src/policy/controller.js';
import { netpolSources } from '../../../src/policy/sources.js';
import { AclEvaluator } from '../../../src/simulator/acl.js';
import { SimulatedHnsTransport } from '../../../src/simulator/hns.js';
import { SimulatedDataplane } from '../../../src/simulator/model.js';
import { readMetric } from '../../support/agent-signals.js';
import { logSink } from '../../support/log-sink.js';
import { waitFor } from '../../support/wait-for.js';

const V2 = { Major: 2, Minor: 0 };
const NODE = 'win-1';
let stop: (() => Promise<void>) | undefined;

afterEach(async () => {
  await stop?.();
  stop = undefined;
});

const podJson = (ns: string, name: string, ip: string, node = NODE, labels: Record<string, string> = { pod: name }) => ({
  metadata: { namespace: ns, name, labels },
  spec: { nodeName: node, containers: [{ name: 'c', ports: [{ name: 'http', containerPort: 80 }] }] },
  status: { phase: 'Running', podIPs: [{ ip }] },
});

async function setup(hnsMajor = 13) {
  const api = new FakeKubeApiServer();
  await api.start();
  const http = new KubeHttp(buildKubeConfig({ kubeconfigFile: '', kubeApiUrl: api.url }), systemClock);
  const dp = new SimulatedDataplane();
  const hns = new HnsClient(new SimulatedHnsTransport(dp, { version: { Major: hnsMajor, Minor: 0 } }));
  const net = await hns.createNetwork({ Name: 'cbr0', Type: 'L2Bridge', SchemaVersion: V2, Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: '10.244.1.0/24' }] }] });
  const metrics = new Metrics();
  const { log, entries } = logSink('debug');
  const recorder = new KubeEventRecorder({ http, nodeName: NODE, clock: systemClock, log, metrics });
  const sources = netpolSources({
    http,
    timings: { requestTimeoutMs: 5000, relistBackoff: { initialMs: 50, capMs: 500 }, watchTimeoutSeconds: 30 },
    listPageSize: 50,
    log,
    metrics,
    clock: systemClock,
    random: systemRandom,
  });
  const ctl = new NetpolController({
    hns,
    nodeName: NODE,
    networkName: () => 'cbr0',
    nodeIPs: () => ['192.168.0.10'],
    sources,
    events: () => recorder,
    clock: systemClock,
    log,
    metrics,
    resyncMs: 300,
    endpointPollMs: 20,
  });
  const ac = new AbortController();
  const running = ctl.run(ac.signal);
  stop = async () => {
    ac.abort();
    await running.catch(() => undefined);
    await api.stop();
  };
  const cniAdd = (name: string, ip: string) => hns.createEndpoint(net.ID!, { Name: name, SchemaVersion: V2, IpConfigurations: [{ IpAddress: ip }] });
  const modifies = () => (dp.calls.get('HcnModifyEndpoint') ?? 0) + (dp.calls.get('HcnModifyNetwork') ?? 0);
  const allowed = (src: string, dst: string, port = 80) => new AclEvaluator(dp.snapshot()).send({ src, dst, protocol: 6, srcPort: 40000, dstPort: port }).allowed;
  return { api, hns, dp, net: net.ID!, ctl, metrics, entries, cniAdd, modifies, allowed };
}

describe('the NetworkPolicy controller on a simulated node', () => {
  it('writes each local pod its rules once its endpoint appears, judged by the evaluator, and a change writes only what it changes', async () => {
    const { api, ctl, metrics, cniAdd, modifies, allowed } = await setup();
    api.addObject('namespaces', { metadata: { name: 'x' } });
    api.addObject('pods', podJson('x', 'a', '10.244.1.2'));
    api.addObject('pods', podJson('x', 'b', '10.244.1.3'));
    api.addObject('pods', podJson('x', 'c', '10.244.2.2', 'win-2'));
    // Ingress to x/a only from pod=b, TCP 80; everything else into x/a blocked.
    api.addObject('networkpolicies', {
      metadata: { namespace: 'x', name: 'allow-b' },
      spec: { podSelector: { matchLabels: { pod: 'a' } }, ingress: [{ from: [{ podSelector: { matchLabels: { pod: 'b' } } }], ports: [{ port: 80 }] }] },
    });
    await waitFor(() => ctl.status().listed, 'the three lists');
    expect(ctl.status().endpointsWithoutRules).toEqual(['x/a']);

    // CNI ADD after the pod's event: the endpoint is found by the pod's IP and gets its rules.
    await cniAdd('a', '10.244.1.2');
    await cniAdd('b', '10.244.1.3');
    await waitFor(() => ctl.status().inSync, 'rules on x/a');
    expect(await readMetric(metrics, `${METRIC.netpolDelay}_count`)).toBe(1);
    expect(ctl.status().pods.find((p) => p.pod === 'x/a')).toMatchObject({ policies: ['x/allow-b'], programmed: true });
    expect(allowed('10.244.1.3', '10.244.1.2')).toBe(true);
    expect(allowed('10.244.1.3', '10.244.1.2', 81)).toBe(false);
    expect(allowed('10.244.2.2', '10.244.1.2')).toBe(false);
    expect(allowed('10.244.1.2', '10.244.1.3')).toBe(true); // x/b: no policy selects it
    expect(allowed('192.168.0.10', '10.244.1.2', 10250)).toBe(true); // the node: kubelet probes

    // A pod joining the peer (pod=b on another node): one IP set update, nothing else.
    let before = modifies();
    api.addObject('pods', podJson('x', 'd', '10.244.2.9', 'win-2', { pod: 'b' }));
    await waitFor(async () => (await readMetric(metrics, METRIC.netpolWrites, { op: 'update-sets' })) === 1 && ctl.status().inSync, 'the set update');
    expect(modifies() - before).toBe(1);
    expect(allowed('10.244.2.9', '10.244.1.2')).toBe(true);

    // A pod no policy names: no write at all (the next full read finds nothing to do either).
    before = modifies();
    const passes = await readMetric(metrics, METRIC.netpolWrites, { op: 'add-rules' });
    api.addObject('pods', podJson('x', 'e', '10.244.2.10', 'win-2', { pod: 'e' }));
    await waitFor(() => ctl.cluster.pods.items.has('x/e') && ctl.status().inSync, 'x/e seen');
    expect(modifies() - before).toBe(0);
    expect(await readMetric(metrics, METRIC.netpolWrites, { op: 'add-rules' })).toBe(passes);

    // The policy deleted: x/a's rules go (one HcnModifyEndpoint), then its set (one HcnModifyNetwork).
    before = modifies();
    api.deleteObject('networkpolicies', 'x/allow-b');
    await waitFor(async () => (await readMetric(metrics, METRIC.netpolWrites, { op: 'remove-sets' })) === 1 && ctl.status().inSync, 'the rules removed');
    expect(modifies() - before).toBe(2);
    expect(allowed('10.244.2.2', '10.244.1.2')).toBe(true);
  });

  // client-go's cache.WaitForCacheSync before a policy controller acts (kube-router, Calico): until every one of
  // the three resources is listed, the cluster is partial and a rule computed from it may deny what a policy
  // allows (here: ingress from namespace y, while the Namespaces are not listed yet). Nothing is written.
  it('writes no rule before all three resources are listed (a partial cluster decides nothing)', async () => {
    const { api, ctl, cniAdd, modifies, allowed } = await setup();
    api.hang('GET', /^\/api\/v1\/namespaces$/);
    api.addObject('namespaces', { metadata: { name: 'x' } });
    api.addObject('namespaces', { metadata: { name: 'y', labels: { team: 'y' } } });
    api.addObject('pods', podJson('x', 'a', '10.244.1.2'));
    api.addObject('pods', podJson('y', 'c', '10.244.2.2', 'win-2'));
    api.addObject('networkpolicies', {
      metadata: { namespace: 'x', name: 'from-y' },
      spec: { podSelector: {}, ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'y' } } }] }] },
    });
    // The HNS writes made before the Namespaces' list ended, counted when it ends.
    let writesBeforeNamespaces: number | undefined;
    ctl.cluster.onChange(() => {
      if (writesBeforeNamespaces === undefined && ctl.cluster.namespaces.synced) writesBeforeNamespaces = modifies();
    });
    await cniAdd('a', '10.244.1.2');
    await waitFor(() => ctl.cluster.pods.synced && ctl.cluster.policies.synced, 'pods and policies listed');
    expect(ctl.cluster.namespaces.synced).toBe(false);
    expect(allowed('10.244.2.2', '10.244.1.2')).toBe(true);

    api.unhang();
    await waitFor(() => ctl.status().inSync, 'the rules, once the Namespaces are listed');
    expect(writesBeforeNamespaces).toBe(0);
    expect(modifies()).toBeGreaterThan(0);
    expect(allowed('10.244.2.2', '10.244.1.2')).toBe(true); // from namespace y: the policy allows it
    expect(allowed('10.244.1.9', '10.244.1.2')).toBe(false); // from namespace x: not
  });

  it("sweeps the agent's own stale rules and sets and never touches others'", async () => {
    const { api, hns, net, ctl, cniAdd } = await setup();
    const ep = await cniAdd('a', '10.244.1.2');
    const foreign = { Id: 'calico-rule', Action: 'Allow', Direction: 'In', RuleType: 'Switch', Priority: 500 } as const;
    const stale = { Id: 'flannel-np-from-a-previous-run', Action: 'Block', Direction: 'In', RuleType: 'Switch', Priority: 65000 } as const;
    await hns.addEndpointAcls(ep.ID!, [foreign, stale]);
    await hns.addSetPolicies(net, [{ Id: 'flannel-np-set-old', Name: 'flannel-np-set-old', PolicyType: 'IPSET', Values: '10.0.0.1' }]);
    api.addObject('namespaces', { metadata: { name: 'x' } });
    api.addObject('pods', podJson('x', 'a', '10.244.1.2'));
    await waitFor(() => ctl.status().inSync, 'in sync');
    expect(((await hns.getEndpointAcls(ep.ID!)) ?? []).map((a) => a.Id)).toEqual(['calico-rule']);
    expect((await hns.getSetPolicies(net))?.map((s) => s.Id)).toEqual([]);
  });

  it('records a Warning Event on a refused NetworkPolicy, once per policy and reason: its count grows only when it is refused again', async () => {
    const { api, ctl } = await setup();
    api.addObject('namespaces', { metadata: { name: 'x' } });
    api.addObject('pods', podJson('x', 'a', '10.244.1.2'));
    const sctp = { metadata: { namespace: 'x', name: 'sctp' }, spec: { podSelector: {}, ingress: [{ ports: [{ protocol: 'SCTP', port: 9000 }] }] } };
    const created = api.addObject('networkpolicies', { metadata: { ...sctp.metadata, uid: 'np-uid-sctp' }, spec: sctp.spec });
    // The recorder writes in order in the background: a later Event seen means the earlier ones were written.
    const onPolicy = (name: string) => api.events({ kind: 'NetworkPolicy', name });
    await waitFor(() => onPolicy('sctp').length === 1, 'the Event on x/sctp');
    // kube-apiserver: a namespaced involvedObject's Event lives in its namespace (core/v1 validation, events.go).
    expect(onPolicy('sctp')[0]).toMatchObject({
      type: 'Warning',
      reason: 'FlannelNetworkPolicyUnsupported',
      count: 1,
      metadata: { namespace: 'x' },
      involvedObject: { kind: 'NetworkPolicy', apiVersion: 'networking.k8s.io/v1', namespace: 'x', name: 'sctp', uid: created.metadata.uid },
      message: expect.stringContaining('SCTP'),
    });
    // Another refusal, pods and a relist of the policies change nothing of x/sctp's Event.
    api.addObject('networkpolicies', { metadata: { namespace: 'x', name: 'sctp-2' }, spec: { podSelector: {}, egress: [{ ports: [{ protocol: 'SCTP' }] }] } });
    api.addObject('pods', podJson('x', 'b', '10.244.1.3'));
    await waitFor(() => onPolicy('sctp-2').length === 1 && ctl.cluster.pods.items.has('x/b'), 'the Event on x/sctp-2');
    expect(onPolicy('sctp')).toMatchObject([{ count: 1 }]);
    // Fixed, then refused again: the same Event, its count bumped.
    api.updateObject('networkpolicies', 'x/sctp', (p: typeof sctp) => ({ ...p, spec: { podSelector: {}, ingress: [{ ports: [{ protocol: 'TCP', port: 9000 }] }] } }));
    await waitFor(() => ctl.status().refused.length === 1, 'x/sctp no longer refused');
    api.updateObject('networkpolicies', 'x/sctp', (p: typeof sctp) => ({ ...p, spec: sctp.spec }));
    await waitFor(() => onPolicy('sctp')[0]?.count === 2, 'the count bumped');
    expect(onPolicy('sctp')).toHaveLength(1);
    expect(api.events({ kind: 'Node', name: NODE })).toEqual([]);
  });
});

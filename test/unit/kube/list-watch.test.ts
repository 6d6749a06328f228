// KubeListWatch (src/kube/list-watch.ts) serves any resource: a second resource is a second instance of it,
// as a second client-node ListWatch<T> (src/cache.ts) is, not a second module. Namespaces and Pods, served
// by the fake API server (src/demo/kube-fake/) under the rules it applies to Nodes
// (test/unit/demo/kube-fake/api-server.test.ts: one revision, continue tokens, 410s, bookmarks), run through
// the list-watch the Nodes run through, over real HTTP, projected by the projections the NetworkPolicy
// controller will use (src/netpol/types.ts): a paged list in etcd key order (name; namespace/name for Pods
// of every namespace), the watch from the list's resourceVersion, a resume answered 410 Gone and relisted,
// an unreadable object skipped and counted under its resource; NetworkPolicies at their API group's path,
// resumed from a bookmark's resourceVersion.
import { afterEach, describe, expect, it } from '@jest/globals';
import { systemClock } from '../../../src/basics/clock.js';
import { METRIC, Metrics } from '../../../src/basics/metrics.js';
import { FakeKubeApiServer, bareNode, type FakeObjectMeta } from '../../../src/demo/kube-fake/api-server.js';
import { buildKubeConfig } from '../../../src/kube/client.js';
import { KubeHttp, kubeListFn, kubeWatchFn } from '../../../src/kube/http.js';
import { KubeListWatch } from '../../../src/kube/list-watch.js';
import type { KubeListWatchOptions, ListWatchHandler, WatchEventType } from '../../../src/kube/list-watch.js';
import { projectNamespace, projectNetworkPolicy, projectPod, type Namespace, type NetworkPolicy, type Pod, type Projection } from '../../../src/netpol/types.js';
import { FakeClock } from '../../support/fake-clock.js';
import { readMetric } from '../../support/agent-signals.js';
import { logSink } from '../../support/log-sink.js';
import { waitFor } from '../../support/wait-for.js';

let api: FakeKubeApiServer | undefined;
const stops: AbortController[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) s.abort();
  await api?.stop();
  api = undefined;
});

/** What a handler was told: each complete list (its pages, in order) and each watch event. */
function recorder<T>(name: (item: T) => string) {
  const rec = { starts: 0, lists: [] as string[][][], events: [] as string[] };
  let pages: string[][] = [];
  const handler: ListWatchHandler<T> = {
    listStarted: () => {
      rec.starts++;
      pages = [];
    },
    listPage: (items) => pages.push(items.map(name)),
    listEnded: () => rec.lists.push(pages),
    watched: (type: WatchEventType, item) => rec.events.push(`${type} ${name(item)}`),
  };
  return { rec, handler };
}

/** The projection's value, or undefined when it refuses the object. */
const value = <T>(p: Projection<T>): T | undefined => (p.ok ? p.value : undefined);
const reason = <T>(p: Projection<T>): string => (p.ok ? '' : p.reason);

async function served(opts: ConstructorParameters<typeof FakeKubeApiServer>[0] = {}): Promise<{ a: FakeKubeApiServer; http: KubeHttp }> {
  api = new FakeKubeApiServer(opts);
  await api.start();
  return { a: api, http: new KubeHttp(buildKubeConfig({ kubeconfigFile: '', kubeApiUrl: api.url }), systemClock) };
}

/** A list-watch of `path` on the real client, with short pauses so a relist comes soon. */
function listWatch<T>(http: KubeHttp, path: string, o: Pick<KubeListWatchOptions<T>, 'resource' | 'kind' | 'project' | 'skipReason' | 'keyOf' | 'log' | 'metrics'>) {
  return new KubeListWatch<T>({
    ...o,
    list: kubeListFn(http, path, 10_000),
    watch: kubeWatchFn(http, path, { metrics: o.metrics }),
    maxObjects: 10_000,
    clock: systemClock,
    random: () => 0,
    backoff: { initialMs: 5, capMs: 20 },
    listPageSize: 2,
    watchTimeoutSeconds: 60,
  });
}

describe('KubeListWatch: a second resource is a second instance', () => {
  it('Namespaces: a paged list in name order, the watch from its resourceVersion, 410 Gone relisted, an unreadable one skipped under its resource', async () => {
    const { a, http } = await served({ historyLimit: 2 });
    for (const name of ['kube-system', 'default', 'team-b', 'team-a', 'team-c']) a.addObject('namespaces', { metadata: { name, labels: { team: name } } });
    const metrics = new Metrics();
    const { log, entries } = logSink();
    const { rec, handler } = recorder<Namespace>((ns) => `${ns.name}${ns.labels.team === 'x' ? '+x' : ''}`);
    const namespaces = listWatch<Namespace>(http, '/api/v1/namespaces', {
      resource: 'namespaces',
      kind: 'Namespace',
      project: (o) => value(projectNamespace(o)),
      skipReason: (o) => reason(projectNamespace(o)),
      keyOf: (ns) => ns.name,
      log,
      metrics,
    });
    const stop = new AbortController();
    stops.push(stop);
    const running = namespaces.run(handler, stop.signal);

    await waitFor(() => rec.lists.length === 1, 'the first complete list');
    expect(rec.lists[0]).toEqual([['default', 'kube-system'], ['team-a', 'team-b'], ['team-c']]);
    const lists = a.requests.filter((r) => r.path === '/api/v1/namespaces' && r.query.watch === undefined);
    expect(lists.map((r) => r.query.limit)).toEqual(['2', '2', '2']);
    expect(entries.find((e) => e['message'] === 'namespace list synced')).toMatchObject({ namespaces: 5, pages: 3, resourceVersion: a.resourceVersion });

    await waitFor(() => a.activeWatches === 1, 'the watch');
    const watchRequest = a.requests.find((r) => r.query.watch === 'true')!;
    expect(watchRequest).toMatchObject({ path: '/api/v1/namespaces', query: { resourceVersion: a.resourceVersion, allowWatchBookmarks: 'true', timeoutSeconds: '60' } });
    a.addObject('namespaces', { metadata: { name: 'team-d' } });
    a.updateObject('namespaces', 'team-a', (ns) => void (ns.metadata.labels = { team: 'x' }));
    a.deleteObject('namespaces', 'team-b');
    a.addObject('namespaces', { metadata: { name: 'bad', labels: { 'not a label key': 'v' } } });
    a.addObject('namespaces', { metadata: { name: 'team-e' } });
    await waitFor(() => rec.events.length === 4, 'the watch events');
    expect(rec.events).toEqual(['ADDED team-d', 'MODIFIED team-a+x', 'DELETED team-b', 'ADDED team-e']);
    expect(await readMetric(metrics, METRIC.kubeObjectsSkipped, { resource: 'namespaces', where: 'watch' })).toBe(1);
    expect(entries.find((e) => e['message'] === 'skipping a Namespace object that cannot be read')).toMatchObject({
      where: 'watch',
      name: 'bad',
      reason: expect.stringContaining('metadata.labels') as unknown,
    });

    // The API server ends the watch early and three writes land before it is resumed: the Namespaces'
    // watch cache window (2 events) no longer reaches back to where it resumes, so the resume is 410 Gone
    // and the list-watch relists, as it does for Nodes.
    a.closeWatches();
    a.deleteObject('namespaces', 'team-c');
    a.addObject('namespaces', { metadata: { name: 'team-f' } });
    a.deleteObject('namespaces', 'team-f');
    await waitFor(() => rec.lists.length === 2, 'the relist after 410 Gone', 30_000);
    expect(a.expiredWatches).toBe(1);
    expect(rec.starts).toBe(2);
    expect(rec.lists[1].flat()).toEqual(['default', 'kube-system', 'team-a+x', 'team-d', 'team-e']);
    expect(entries.some((e) => e['message'] === 'namespace watch resourceVersion expired (410 Gone), backing off before relisting')).toBe(true);
    expect(await readMetric(metrics, METRIC.apiReconnects, { resource: 'namespaces' })).toBeGreaterThanOrEqual(1);
    expect(await readMetric(metrics, METRIC.kubeObjectsSkipped, { resource: 'namespaces', where: 'list' })).toBe(1); // `bad`, listed again

    stop.abort();
    await expect(running).resolves.toBeUndefined();
  });

  it('Pods of every namespace: pages in namespace/name order (the etcd key), so the page guard passes where name order would not', async () => {
    const { a, http } = await served();
    for (const [namespace, name] of [
      ['ns-b', 'a'],
      ['ns-a', 'z'],
      ['ns-b', 'm'],
      ['ns-a', 'b'],
    ])
      a.addObject('pods', { metadata: { name, namespace, uid: `uid-${namespace}-${name}` }, spec: { nodeName: 'win' }, status: { podIP: '10.244.1.5' } });
    const metrics = new Metrics();
    const { log, entries } = logSink();
    const { rec, handler } = recorder<Pod>((p) => `${p.namespace}/${p.name}`);
    const pods = listWatch<Pod>(http, '/api/v1/pods', {
      resource: 'pods',
      kind: 'Pod',
      project: (o) => value(projectPod(o)),
      skipReason: (o) => reason(projectPod(o)),
      keyOf: (p) => `${p.namespace}/${p.name}`,
      log,
      metrics,
    });
    const stop = new AbortController();
    stops.push(stop);
    const running = pods.run(handler, stop.signal);
    await waitFor(() => rec.lists.length === 1, 'the first complete list');
    // Page 2 ends in `a` (ns-b/a), before page 1's `z` (ns-a/z) by name: the key is namespace/name.
    expect(rec.lists[0]).toEqual([
      ['ns-a/b', 'ns-a/z'],
      ['ns-b/a', 'ns-b/m'],
    ]);
    expect(entries.filter((e) => e['message'] === 'listing pods failed, backing off')).toEqual([]);
    await waitFor(() => a.activeWatches === 1, 'the watch');
    a.deleteObject('pods', 'ns-b/m');
    await waitFor(() => rec.events.length === 1, 'the DELETED event');
    expect(rec.events).toEqual(['DELETED ns-b/m']);
    stop.abort();
    await running;
  });

  it('NetworkPolicies at /apis/networking.k8s.io/v1: listed in namespace/name order, watched, and resumed from a bookmark without a relist', async () => {
    // The server's clock is a fake one, so the cacher's bookmark (2 s before the watch's 60 s timeout,
    // src/demo/kube-fake/watch.ts nextBookmark) and the timeout come when the test moves it.
    const clock = new FakeClock();
    const { a, http } = await served({ clock });
    const policy = (namespace: string, name: string): { metadata: FakeObjectMeta; spec: object } => ({
      metadata: { name, namespace },
      spec: { podSelector: {}, policyTypes: ['Ingress'] },
    });
    for (const [namespace, name] of [
      ['ns-b', 'allow-dns'],
      ['ns-a', 'web'],
      ['ns-a', 'deny-all'],
    ])
      a.addObject('networkpolicies', policy(namespace, name));
    const path = '/apis/networking.k8s.io/v1/networkpolicies';
    const { log, entries } = logSink();
    const { rec, handler } = recorder<NetworkPolicy>((np) => `${np.namespace}/${np.name}`);
    const policies = listWatch<NetworkPolicy>(http, path, {
      resource: 'networkpolicies',
      kind: 'NetworkPolicy',
      project: (o) => value(projectNetworkPolicy(o)),
      skipReason: (o) => reason(projectNetworkPolicy(o)),
      keyOf: (np) => `${np.namespace}/${np.name}`,
      log,
      metrics: new Metrics(),
    });
    const stop = new AbortController();
    stops.push(stop);
    const running = policies.run(handler, stop.signal);
    await waitFor(() => rec.lists.length === 1, 'the first complete list');
    expect(rec.lists[0]).toEqual([['ns-a/deny-all', 'ns-a/web'], ['ns-b/allow-dns']]);
    expect(entries.find((e) => e['message'] === 'networkpolicy list synced')).toMatchObject({ networkpolicies: 3, pages: 2 });

    await waitFor(() => a.activeWatches === 1, 'the watch');
    const added = a.addObject('networkpolicies', policy('ns-c', 'allow-web'));
    await waitFor(() => rec.events.length === 1, 'the ADDED event');
    expect(rec.events).toEqual(['ADDED ns-c/allow-web']);
    // Writes of another resource move etcd's revision; etcd's progress notification brings the
    // NetworkPolicies' cacher there, and its bookmark tells the watcher.
    a.addNode(bareNode({ name: 'win-1' }));
    a.progressNotify();
    const bookmarkRv = a.resourceVersion;
    expect(Number(bookmarkRv)).toBeGreaterThan(Number(added.metadata.resourceVersion));
    await clock.advance(58_000);
    await clock.advance(2_000); // the watch's timeout: the server ends it cleanly
    const watches = () => a.requests.filter((r) => r.path === path && r.query.watch === 'true');
    await waitFor(() => watches().length === 2, 'the resumed watch');
    expect(watches()[1].query.resourceVersion).toBe(bookmarkRv);
    expect(rec.starts).toBe(1); // resumed, not relisted
    stop.abort();
    await running;
  });
});

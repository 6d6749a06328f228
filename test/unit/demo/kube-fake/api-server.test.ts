// The fake API server behaves as kube-apiserver (1.25, over etcd 3.4) does, row by row: one revision for
// every kind; 410 on a watch only outside the watch cache's window (or below etcd's compaction with the
// cache off), in the wording of each; bookmarks as the cacher sends them; continue tokens that hold the
// list's revision and expire with compaction; a graceful shutdown that keeps open watches to their
// timeout; the 403s before RBAC synced; an immutable podCIDR; and Namespaces, Pods and NetworkPolicies
// listed and watched under the Nodes' rules, each resource in its own watch cache. The sources are cited
// in src/demo/kube-fake/store.ts, collection.ts, watch.ts, rbac-startup.ts and api-server.ts.
import http from 'node:http';
import { afterEach, describe, expect, it } from '@jest/globals';
import {
  CONTINUE_EXPIRED,
  FakeApiRefusal,
  FakeKubeApiServer,
  LIST_EXPIRED,
  PODCIDR_FORBIDDEN,
  RESOURCES,
  WATCH_EXPIRED_ETCD,
  bareNode,
  type FakeKubeApiServerOptions,
  type FakeObjectMeta,
  type ResourceName,
} from '../../../../src/demo/kube-fake/api-server.js';
import { FakeClock } from '../../../support/fake-clock.js';
import { waitFor } from '../../../support/wait-for.js';

/** A list or a Status, as far as these tests read them. */
interface Body {
  metadata: { resourceVersion?: string; continue?: string };
  items: { metadata: { name: string } }[];
  message?: string;
  [k: string]: unknown;
}

type Line = {
  type: string;
  object: { kind?: string; apiVersion?: string; message?: string; code?: number; metadata: { name?: string; namespace?: string; resourceVersion?: string; uid?: string } };
};

let api: FakeKubeApiServer | undefined;
afterEach(async () => api?.stop());

async function server(opts: FakeKubeApiServerOptions = {}): Promise<FakeKubeApiServer> {
  api = new FakeKubeApiServer(opts);
  await api.start();
  return api;
}

/** One request on its own connection (no keep-alive pool that outlives a server process). */
function request(a: FakeKubeApiServer, path: string, opts: { method?: string; contentType?: string; body?: string } = {}): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${a.url}${path}`, { method: opts.method ?? 'GET', agent: false, headers: opts.contentType ? { 'Content-Type': opts.contentType } : {} }, resolve);
    req.on('error', reject);
    req.end(opts.body);
  });
}

async function readAll(res: http.IncomingMessage): Promise<string> {
  let text = '';
  for await (const c of res) text += (c as Buffer).toString('utf8');
  return text;
}

/** A watch of the Nodes (or of the resource at `path`): its lines as they come, and a promise of its end. */
async function watch(a: FakeKubeApiServer, query: string, path = '/api/v1/nodes'): Promise<{ lines: Line[]; ended: Promise<void>; done: () => boolean }> {
  const before = a.activeWatches;
  const res = await request(a, `${path}?watch=true&${query}`);
  const lines: Line[] = [];
  let finished = false;
  const ended = (async () => {
    let buf = '';
    try {
      for await (const chunk of res) {
        buf += (chunk as Buffer).toString('utf8');
        const parts = buf.split('\n');
        buf = parts.pop()!;
        for (const l of parts) if (l !== '') lines.push(JSON.parse(l) as Line);
      }
    } catch {
      // cut
    }
    finished = true;
  })();
  await waitFor(() => finished || a.activeWatches > before, 'the watch open or answered');
  return { lines, ended, done: () => finished };
}

const types = (lines: Line[]) => lines.map((l) => l.type);
const getJson = async (a: FakeKubeApiServer, path: string, opts: { method?: string; contentType?: string; body?: string } = {}) => {
  const r = await request(a, path, opts);
  return { status: r.statusCode, body: JSON.parse(await readAll(r)) as Body };
};
const postEvent = async (a: FakeKubeApiServer, name: string) =>
  (
    await getJson(a, '/api/v1/namespaces/default/events', {
      method: 'POST',
      contentType: 'application/json',
      body: JSON.stringify({ metadata: { name }, involvedObject: { kind: 'Node', name: 'a' }, reason: 'Test' }),
    })
  ).body;

describe('resourceVersion: one etcd revision for every kind', () => {
  it('Events, Pods and Leases move it as Nodes do', async () => {
    const a = await server();
    const n = a.addNode(bareNode({ name: 'a', podCIDR: '10.244.1.0/24' }));
    const ev = await postEvent(a, 'e1');
    expect(Number(ev.metadata.resourceVersion)).toBe(Number(n.metadata.resourceVersion) + 1);
    const lease = a.renewNodeLease('a') as { metadata: { resourceVersion: string } };
    expect(Number(lease.metadata.resourceVersion)).toBe(Number(ev.metadata.resourceVersion) + 1);
    const list = await getJson(a, '/api/v1/nodes?limit=10');
    expect(list.body.metadata.resourceVersion).toBe(lease.metadata.resourceVersion);
    expect(a.resourceVersion).toBe(lease.metadata.resourceVersion);
    const m = a.updateNode('a', (x) => void (x.metadata.labels!.x = '1'));
    expect(Number(m.metadata.resourceVersion)).toBe(Number(lease.metadata.resourceVersion) + 1);
  });
});

describe('410 on a watch', () => {
  it('cache on: only below the window, never the newest; the cache wording', async () => {
    const a = await server({ historyLimit: 3 });
    const first = a.addNode(bareNode({ name: 'a' }));
    for (let i = 0; i < 5; i++) a.updateNode('a', (x) => void (x.metadata.labels!.n = String(i)));
    const newest = Number(a.resourceVersion);
    // The window holds the last 3 events: newest-2..newest; resuming from newest-3 still works.
    const ok = await watch(a, `resourceVersion=${newest - 3}&timeoutSeconds=60`);
    await waitFor(() => ok.lines.length === 3, 'the window replayed');
    expect(types(ok.lines)).toEqual(['MODIFIED', 'MODIFIED', 'MODIFIED']);
    const gone = await watch(a, `resourceVersion=${first.metadata.resourceVersion}&timeoutSeconds=60`);
    await gone.ended;
    expect(gone.lines).toHaveLength(1);
    expect(gone.lines[0].type).toBe('ERROR');
    expect(gone.lines[0].object).toMatchObject({ code: 410, reason: 'Expired', message: `too old resource version: ${first.metadata.resourceVersion} (${newest - 3})` });
    // Other kinds move the revision without a Node event: the newest revision still resumes.
    await postEvent(a, 'e1');
    a.renewNodeLease('a');
    const latest = await watch(a, `resourceVersion=${a.resourceVersion}&timeoutSeconds=60`);
    expect(latest.done()).toBe(false);
    expect(a.expiredWatches).toBe(1);
  });

  it('cache on: a compaction changes nothing for watchers, open or resumed', async () => {
    const a = await server();
    a.addNode(bareNode({ name: 'a' }));
    const rv = a.resourceVersion;
    const open = await watch(a, `resourceVersion=${rv}&timeoutSeconds=60`);
    a.addNode(bareNode({ name: 'b' }));
    const rvB = a.resourceVersion;
    a.compact();
    a.addNode(bareNode({ name: 'c' }));
    await waitFor(() => open.lines.length === 2, 'both events on the open watch');
    expect(open.done()).toBe(false);
    const resumed = await watch(a, `resourceVersion=${rv}&timeoutSeconds=60`);
    await waitFor(() => resumed.lines.length === 2, 'the replay');
    expect(resumed.lines.map((l) => l.object.metadata.name)).toEqual(['b', 'c']);
    expect(Number(rvB)).toBeGreaterThan(Number(rv));
    expect(a.expiredWatches).toBe(0);
  });

  it('cache on: a new process (restart) reaches back to its start only: an older resume is 410, the newest is not', async () => {
    const a = await server();
    a.addNode(bareNode({ name: 'a' }));
    const seen = a.resourceVersion;
    await a.restart();
    const same = await watch(a, `resourceVersion=${seen}&timeoutSeconds=60`);
    expect(same.done()).toBe(false);
    a.renewNodeLease('a'); // the kubelet's heartbeat moves the revision while nothing is watched
    await a.restart();
    const older = await watch(a, `resourceVersion=${seen}&timeoutSeconds=60`);
    await older.ended;
    expect(older.lines[0].object).toMatchObject({ code: 410, message: `too old resource version: ${seen} (${a.resourceVersion})` });
  });

  it('cache off: 410 only below the etcd compaction, with the etcd wording', async () => {
    const a = await server({ watchCache: false, historyLimit: 1 });
    a.addNode(bareNode({ name: 'a' }));
    const old = a.resourceVersion;
    for (let i = 0; i < 5; i++) a.updateNode('a', (x) => void (x.metadata.labels!.n = String(i)));
    const replay = await watch(a, `resourceVersion=${old}&timeoutSeconds=60`);
    await waitFor(() => replay.lines.length === 5, 'the whole etcd history, not a window');
    a.compact();
    const newest = await watch(a, `resourceVersion=${a.resourceVersion}&timeoutSeconds=60`);
    expect(newest.done()).toBe(false);
    const gone = await watch(a, `resourceVersion=${old}&timeoutSeconds=60`);
    await gone.ended;
    expect(gone.lines[0].object).toMatchObject({ code: 410, reason: 'Expired', message: WATCH_EXPIRED_ETCD });
  });

  it('list: an exact resourceVersion below the compaction is HTTP 410 with the list wording', async () => {
    const a = await server();
    a.addNode(bareNode({ name: 'a' }));
    const old = a.resourceVersion;
    a.addNode(bareNode({ name: 'b' }));
    const before = await getJson(a, `/api/v1/nodes?resourceVersion=${old}&resourceVersionMatch=Exact`);
    expect(before.body.items.map((n) => n.metadata.name)).toEqual(['a']);
    a.compact();
    a.addNode(bareNode({ name: 'c' }));
    const after = await getJson(a, `/api/v1/nodes?resourceVersion=${old}&resourceVersionMatch=Exact`);
    expect(after.status).toBe(410);
    expect(after.body).toMatchObject({ kind: 'Status', code: 410, reason: 'Expired', message: LIST_EXPIRED });
  });
});

describe('bookmarks (cacher)', () => {
  const bookmarkWatch = async (a: FakeKubeApiServer, rv: string, timeoutSeconds: number) =>
    watch(a, `resourceVersion=${rv}&allowWatchBookmarks=true&timeoutSeconds=${timeoutSeconds}`);

  it('none on a quiet watch, to its end', async () => {
    const clock = new FakeClock();
    const a = await server({ clock });
    a.addNode(bareNode({ name: 'a' }));
    const w = await bookmarkWatch(a, a.resourceVersion, 300);
    a.renewNodeLease('a'); // no Node event: nothing newer for the Node cacher
    await clock.advance(300_000);
    await w.ended;
    expect(types(w.lines)).toEqual([]);
  });

  it('a server that processed no event since it started drops the watch from its bookmark timers', async () => {
    const clock = new FakeClock();
    const a = await server({ clock });
    const w = await bookmarkWatch(a, a.resourceVersion, 300);
    await clock.advance(60_000); // due, but the cacher saw nothing: popped, never put back
    a.addNode(bareNode({ name: 'a' }));
    await clock.advance(240_000);
    await w.ended;
    expect(types(w.lines)).toEqual(['ADDED']);
  });

  it('after a Node event newer than the watcher: one a minute and one 2 s before the timeout, carrying the newest Node revision', async () => {
    const clock = new FakeClock();
    const a = await server({ clock });
    a.addNode(bareNode({ name: 'a' }));
    const w = await bookmarkWatch(a, a.resourceVersion, 150);
    await clock.advance(10_000);
    a.addNode(bareNode({ name: 'b' }));
    const rvB = a.resourceVersion;
    a.renewNodeLease('b'); // moves etcd, not the Node cacher's revision
    await clock.advance(49_999);
    expect(types(w.lines)).toEqual(['ADDED']);
    await clock.advance(1); // 60 s
    expect(types(w.lines)).toEqual(['ADDED', 'BOOKMARK']);
    expect(w.lines[1].object.metadata.resourceVersion).toBe(rvB);
    await clock.advance(60_000); // 120 s
    expect(types(w.lines)).toEqual(['ADDED', 'BOOKMARK', 'BOOKMARK']);
    await clock.advance(27_999);
    expect(types(w.lines)).toHaveLength(3);
    await clock.advance(1); // 148 s: 2 s before the deadline
    expect(types(w.lines)).toEqual(['ADDED', 'BOOKMARK', 'BOOKMARK', 'BOOKMARK']);
    await clock.advance(2_000);
    await w.ended;
    expect(types(w.lines)).toHaveLength(4);
  });

  it('etcd progress notifications move the bookmarked revision; the cache off sends none', async () => {
    const clock = new FakeClock();
    const a = await server({ clock });
    a.addNode(bareNode({ name: 'a' }));
    const w = await bookmarkWatch(a, a.resourceVersion, 30);
    a.renewNodeLease('a');
    a.progressNotify();
    await clock.advance(28_000);
    expect(types(w.lines)).toEqual(['BOOKMARK']);
    expect(w.lines[0].object.metadata.resourceVersion).toBe(a.resourceVersion);
    await a.stop();

    api = new FakeKubeApiServer({ clock, watchCache: false });
    await api.start();
    api.addNode(bareNode({ name: 'a' }));
    const off = await bookmarkWatch(api, '1', 30);
    api.addNode(bareNode({ name: 'b' }));
    await clock.advance(30_000);
    await off.ended;
    expect(types(off.lines)).toEqual(['ADDED', 'ADDED']);
  });
});

describe('continue tokens', () => {
  const names = (body: Body) => body.items.map((n) => n.metadata.name);

  it('opaque base64 JSON holding the list revision: later pages are read at it', async () => {
    const a = await server();
    for (const n of ['a', 'b', 'c', 'd']) a.addNode(bareNode({ name: n }));
    const p1 = await getJson(a, '/api/v1/nodes?limit=2');
    const token = p1.body.metadata.continue as string;
    expect(JSON.parse(Buffer.from(token, 'base64url').toString())).toEqual({ v: 'meta.k8s.io/v1', rv: Number(p1.body.metadata.resourceVersion), start: 'b\u0000' });
    a.deleteNode('c');
    a.addNode(bareNode({ name: 'e' }));
    const p2 = await getJson(a, `/api/v1/nodes?limit=2&continue=${token}`);
    expect(names(p2.body)).toEqual(['c', 'd']); // the snapshot, not the current state
    expect(p2.body.metadata.resourceVersion).toBe(p1.body.metadata.resourceVersion);
    expect(p2.body.metadata.continue).toBeUndefined();
    expect((await getJson(a, '/api/v1/nodes?limit=2&continue=bm90LWpzb24')).status).toBe(400);
  });

  it('after a compaction: 410 Expired with the real message and a new token ("rv":-1) that continues at the newest revision', async () => {
    const a = await server();
    for (const n of ['a', 'b', 'c', 'd']) a.addNode(bareNode({ name: n }));
    const p1 = await getJson(a, '/api/v1/nodes?limit=2');
    a.deleteNode('d');
    a.compact();
    const p2 = await getJson(a, `/api/v1/nodes?limit=2&continue=${p1.body.metadata.continue as string}`);
    expect(p2.status).toBe(410);
    expect(p2.body).toMatchObject({ kind: 'Status', code: 410, reason: 'Expired', message: CONTINUE_EXPIRED });
    expect(CONTINUE_EXPIRED).toMatch(/^The provided continue parameter is too old to display a consistent list result\./);
    const fresh = p2.body.metadata.continue as string;
    expect(JSON.parse(Buffer.from(fresh, 'base64url').toString())).toEqual({ v: 'meta.k8s.io/v1', rv: -1, start: 'b\u0000' });
    const p3 = await getJson(a, `/api/v1/nodes?limit=2&continue=${fresh}`);
    expect(names(p3.body)).toEqual(['c']);
    expect(p3.body.metadata.resourceVersion).toBe(a.resourceVersion);
  });
});

describe('shutdown (SIGTERM)', () => {
  it('closes the listener at once, serves open watches to their timeoutSeconds, then exits; a rolling restart resumes with a 410 on the new process', async () => {
    const clock = new FakeClock();
    const a = await server({ clock });
    a.addNode(bareNode({ name: 'a' }));
    const rv = a.resourceVersion;
    const w = await watch(a, `resourceVersion=${rv}&timeoutSeconds=30`);
    let exited = false;
    const exit = a.shutdown().then(() => (exited = true));
    await expect(request(a, '/api/v1/nodes')).rejects.toThrow(/ECONNREFUSED/); // the listener is gone
    a.addNode(bareNode({ name: 'b' })); // written through another apiserver: the open watch still gets it
    await waitFor(() => w.lines.length === 1, 'the event on the draining watch');
    expect(w.done()).toBe(false);
    expect(exited).toBe(false);
    a.renewNodeLease('b'); // the kubelet's heartbeat: the revision moves
    await a.start(); // the new process of a rolling restart: its cache starts at the newest revision
    await clock.advance(30_000);
    await w.ended;
    await exit;
    expect(types(w.lines)).toEqual(['ADDED']);
    // The clean end is resumed from the last event seen, on the new process: too old for its cache.
    const resumed = await watch(a, `resourceVersion=${w.lines[0].object.metadata.resourceVersion!}&timeoutSeconds=30`);
    await resumed.ended;
    expect(resumed.lines[0].object).toMatchObject({ code: 410, reason: 'Expired' });
    expect(resumed.lines[0].object.message).toBe(`too old resource version: ${w.lines[0].object.metadata.resourceVersion!} (${a.resourceVersion})`);
  });

  it('a watch without a timeout ends when the process exits; stop() kills a draining process too', async () => {
    const clock = new FakeClock();
    const a = await server({ clock });
    const endless = await watch(a, 'resourceVersion=0');
    const timed = await watch(a, 'timeoutSeconds=10');
    const exit = a.shutdown();
    await clock.advance(10_000);
    await exit;
    await endless.ended;
    await timed.ended;
    expect(a.activeWatches).toBe(0);

    await a.start();
    const draining = await watch(a, 'timeoutSeconds=600');
    const exit2 = a.shutdown();
    await a.stop();
    await exit2;
    await draining.ended;
    expect(a.activeWatches).toBe(0);
  });

  it('rollingRestart(): the new process listens while the old one drains', async () => {
    const clock = new FakeClock();
    const a = await server({ clock });
    const w = await watch(a, 'timeoutSeconds=10');
    const { exited } = await a.rollingRestart();
    expect((await getJson(a, '/api/v1/nodes')).status).toBe(200);
    expect(a.activeWatches).toBe(1);
    await clock.advance(10_000);
    await exited;
    await w.ended;
    expect(a.activeWatches).toBe(0);
  });
});

describe('start-up before RBAC synced (opt-in: rbacSyncDelayMs)', () => {
  it('403 with the RBAC reason for the window, then served', async () => {
    const clock = new FakeClock();
    const a = await server({ clock, rbacSyncDelayMs: 100 });
    a.addNode(bareNode({ name: 'win1', podCIDR: '10.244.1.0/24' }));
    const get = await getJson(a, '/api/v1/nodes/win1');
    expect(get.status).toBe(403);
    expect(get.body).toMatchObject({
      reason: 'Forbidden',
      code: 403,
      message:
        'nodes "win1" is forbidden: User "system:serviceaccount:kube-flannel:flannel-windows" cannot get resource "nodes" in API group "" at the cluster scope: ' +
        'RBAC: clusterrole.rbac.authorization.k8s.io "flannel-windows" not found',
      details: { name: 'win1', kind: 'nodes' },
    });
    const patch = await getJson(a, '/api/v1/nodes/win1/status', { method: 'PATCH', contentType: 'application/merge-patch+json', body: '{}' });
    expect((patch.body as { message: string }).message).toMatch(
      /^nodes "win1" is forbidden: User "[^"]+" cannot patch resource "nodes\/status" in API group "" at the cluster scope: RBAC: /,
    );
    expect(((await getJson(a, '/api/v1/nodes?limit=500')).body as { message: string }).message).toMatch(/^nodes is forbidden: .* cannot list resource "nodes"/);
    await clock.advance(100);
    expect((await getJson(a, '/api/v1/nodes/win1')).status).toBe(200);
    await a.restart(); // a restarted process syncs again
    expect((await getJson(a, '/api/v1/nodes/win1')).status).toBe(403);
  });

  it('off by default', async () => {
    const a = await server({ clock: new FakeClock() });
    a.addNode(bareNode({ name: 'win1' }));
    expect((await getJson(a, '/api/v1/nodes/win1')).status).toBe(200);
  });
});

// A ClusterRole applied after the agent (rbac.go Authorize: a reason only for a binding whose role is missing).
describe('RBAC applied late (opt-in: rbac)', () => {
  it('no binding: 403 without a reason; a binding before its ClusterRole: the not-found reason; granted: served; discovery always', async () => {
    const a = await server({ clock: new FakeClock(), rbac: 'unbound' });
    a.addNode(bareNode({ name: 'win1' }));
    const unbound = await getJson(a, '/api/v1/nodes/win1');
    expect(unbound.status).toBe(403);
    expect((unbound.body as { message: string }).message).toBe(
      'nodes "win1" is forbidden: User "system:serviceaccount:kube-flannel:flannel-windows" cannot get resource "nodes" in API group "" at the cluster scope',
    );
    expect((await getJson(a, '/api')).status).toBe(200);
    a.rbac = 'role-missing';
    expect(((await getJson(a, '/api/v1/nodes/win1')).body as { message: string }).message).toMatch(
      /at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io "flannel-windows" not found$/,
    );
    a.rbac = 'granted';
    expect((await getJson(a, '/api/v1/nodes/win1')).status).toBe(200);
  });
});

// A bound ClusterRole grants only its rules (evaluation_helpers.go RuleAllows; rbac.go Authorize: no reason).
describe("a ClusterRole's rules (opt-in: rbacRules)", () => {
  it('allows a request one rule matches by verb, group, resource/subresource and name; 403 without a reason otherwise', async () => {
    const a = await server({
      clock: new FakeClock(),
      rbacRules: [
        { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list'] },
        { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch'], resourceNames: ['win1'] },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['*'] },
      ],
    });
    a.addNode(bareNode({ name: 'win1' }));
    a.addNode(bareNode({ name: 'win2' }));
    const status = async (path: string, init?: Parameters<typeof getJson>[2]) => (await getJson(a, path, init)).status;
    const patch = { method: 'PATCH', contentType: 'application/merge-patch+json', body: '{}' };
    expect(await status('/api/v1/nodes/win1')).toBe(200);
    expect(await status('/api/v1/nodes')).toBe(200);
    expect(await status('/apis/discovery.k8s.io/v1/endpointslices')).toBe(200);
    expect(await status('/api/v1/nodes/win1/status', patch)).toBe(200);
    expect(await status('/api/v1/nodes/win2/status', patch)).toBe(403); // resourceNames
    expect(await status('/api/v1/nodes/win1', patch)).toBe(403); // nodes, not nodes/status
    expect(await status('/api/v1/services')).toBe(403);
    const denied = await getJson(a, '/api/v1/services');
    expect((denied.body as { message: string }).message).toBe(
      'services is forbidden: User "system:serviceaccount:kube-flannel:flannel-windows" cannot list resource "services" in API group "" at the cluster scope',
    );
    expect(await status('/api')).toBe(200); // discovery is every user's
    a.rbacRules = undefined;
    expect(await status('/api/v1/services')).toBe(200);
  });
});

// A Role bound by a RoleBinding grants its rules in its namespace only (rule.go VisitRulesFor visits the
// RoleBindings of the request's namespace, and none for a cluster-scoped request).
describe("a Role's rules (opt-in: rbacNamespacedRules, with rbacRules)", () => {
  it('allow a request in their namespace only, by name; a ConfigMap is read by name, 404 when there is none', async () => {
    const a = await server({
      clock: new FakeClock(),
      rbacRules: [{ apiGroups: [''], resources: ['nodes'], verbs: ['get'] }],
      rbacNamespacedRules: { 'kube-flannel': [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'], resourceNames: ['kube-flannel-cfg'] }] },
    });
    for (const namespace of ['kube-flannel', 'kube-system']) {
      a.applyConfigMap({ metadata: { name: 'kube-flannel-cfg', namespace }, data: { 'net-conf.json': '{}' } });
      a.applyConfigMap({ metadata: { name: 'other', namespace }, data: {} });
    }
    const status = async (path: string) => (await getJson(a, path)).status;
    const got = await getJson(a, '/api/v1/namespaces/kube-flannel/configmaps/kube-flannel-cfg');
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'kube-flannel-cfg', namespace: 'kube-flannel' }, data: { 'net-conf.json': '{}' } });
    expect(await status('/api/v1/namespaces/kube-flannel/configmaps/other')).toBe(403); // resourceNames
    expect(await status('/api/v1/namespaces/kube-system/configmaps/kube-flannel-cfg')).toBe(403); // another namespace
    expect(await status('/api/v1/namespaces/kube-flannel/configmaps')).toBe(403); // list, not get
    const denied = await getJson(a, '/api/v1/namespaces/kube-system/configmaps/kube-flannel-cfg');
    expect((denied.body as { message: string }).message).toBe(
      'configmaps "kube-flannel-cfg" is forbidden: User "system:serviceaccount:kube-flannel:flannel-windows" cannot get resource "configmaps" in API group "" in the namespace "kube-system"',
    );
    expect(await status('/api/v1/nodes/x')).toBe(404); // the ClusterRole's rules still apply
    expect(await status('/api/v1/namespaces/hasOwnProperty/configmaps/x')).toBe(403); // a namespace is never a prototype's key
    a.rbacNamespacedRules = { 'kube-system': [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }] };
    expect(await status('/api/v1/namespaces/kube-system/configmaps/other')).toBe(200);
    expect(await status('/api/v1/namespaces/kube-flannel/configmaps/kube-flannel-cfg')).toBe(403);
    a.rbacRules = undefined;
    expect(await status('/api/v1/namespaces/kube-flannel/configmaps/missing')).toBe(404);
  });
});

describe('podCIDR immutable once set', () => {
  it('a PATCH changing it is 422 Invalid; from "" to valid is allowed', async () => {
    const a = await server();
    a.addNode(bareNode({ name: 'n' }));
    const patch = (podCIDR: string) =>
      getJson(a, '/api/v1/nodes/n', { method: 'PATCH', contentType: 'application/strategic-merge-patch+json', body: JSON.stringify({ spec: { podCIDR, podCIDRs: [podCIDR] } }) });
    expect((await patch('10.244.1.0/24')).status).toBe(200);
    const refused = await patch('10.244.2.0/24');
    expect(refused.status).toBe(422);
    expect(refused.body).toMatchObject({
      reason: 'Invalid',
      code: 422,
      message: `Node "n" is invalid: spec.podCIDRs: Forbidden: ${PODCIDR_FORBIDDEN}`,
      details: { name: 'n', kind: 'Node', causes: [{ reason: 'FieldValueForbidden', field: 'spec.podCIDRs' }] },
    });
    expect(a.getNode('n')?.spec?.podCIDR).toBe('10.244.1.0/24');
  });

  it('updateNode refuses it too; a new podCIDR is a delete and a registration with a new uid', async () => {
    const a = await server();
    const before = a.addNode(bareNode({ name: 'n', podCIDR: '10.244.1.0/24' }));
    expect(() => a.updateNode('n', (x) => void (x.spec = { podCIDR: '10.244.2.0/24', podCIDRs: ['10.244.2.0/24'] }))).toThrow(FakeApiRefusal);
    const w = await watch(a, `resourceVersion=${a.resourceVersion}&timeoutSeconds=60`);
    const after = a.reregisterNode(bareNode({ name: 'n', podCIDR: '10.244.2.0/24' }));
    await waitFor(() => w.lines.length === 2, 'DELETED and ADDED');
    expect(types(w.lines)).toEqual(['DELETED', 'ADDED']);
    expect(after.metadata.uid).not.toBe(before.metadata.uid);
    expect(after.spec?.podCIDR).toBe('10.244.2.0/24');
  });
});

// kube-apiserver serves every resource through the same generic registry (k8s.io/apiserver
// pkg/registry/generic/registry/store.go over storage/etcd3/store.go) and one cacher per resource
// (storage/cacher): what holds for Nodes above holds for these, each in its own watch cache. Pods and
// NetworkPolicies are namespaced and listed across namespaces: their etcd keys, and so their list order
// and continue tokens, are `<namespace>/<name>`.
describe.each<[Exclude<ResourceName, 'nodes'>, (name: string, namespace: string) => { metadata: FakeObjectMeta }]>([
  ['namespaces', (name) => ({ metadata: { name } })],
  ['pods', (name, namespace) => ({ metadata: { name, namespace }, spec: { nodeName: 'win' }, status: { podIP: '10.244.1.5' } })],
  ['networkpolicies', (name, namespace) => ({ metadata: { name, namespace }, spec: { podSelector: {}, policyTypes: ['Ingress'] } })],
])('%s: listed and watched as Nodes are', (resource, make) => {
  const { path, kind, apiVersion, namespaced } = RESOURCES[resource];
  /** `a` .. `d` spread over two namespaces so that key order (namespace/name) and name order differ. */
  const four = [make('b', 'ns-1'), make('d', 'ns-1'), make('a', 'ns-2'), make('c', 'ns-2')];
  const keyOf = (o: { metadata: FakeObjectMeta }) => (namespaced ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name);
  const keys = (body: Body) => body.items.map((o) => keyOf(o));

  it('paged in etcd key order, continue tokens holding the revision and the key; later pages read at it; 410 after a compaction', async () => {
    const a = await server();
    for (const o of four) a.addObject(resource, o);
    const order = four.map(keyOf).sort();
    const p1 = await getJson(a, `${path}?limit=2`);
    expect(p1.body).toMatchObject({ kind: `${kind}List`, apiVersion });
    expect(keys(p1.body)).toEqual(order.slice(0, 2));
    const token = p1.body.metadata.continue as string;
    expect(JSON.parse(Buffer.from(token, 'base64url').toString())).toEqual({ v: 'meta.k8s.io/v1', rv: Number(p1.body.metadata.resourceVersion), start: `${order[1]}\u0000` });
    a.deleteObject(resource, order[3]);
    const p2 = await getJson(a, `${path}?limit=2&continue=${token}`);
    expect(keys(p2.body)).toEqual(order.slice(2)); // the snapshot, not the current state
    expect(p2.body.metadata.continue).toBeUndefined();
    a.compact();
    const expired = await getJson(a, `${path}?limit=2&continue=${token}`);
    expect(expired.status).toBe(410);
    expect(expired.body).toMatchObject({ code: 410, reason: 'Expired', message: CONTINUE_EXPIRED });
    const rest = await getJson(a, `${path}?limit=2&continue=${expired.body.metadata.continue as string}`);
    expect(keys(rest.body)).toEqual([order[2]]);
  });

  it('watched from a resourceVersion: ADDED, MODIFIED, DELETED in order; 410 below its own window, which other kinds do not fill', async () => {
    const a = await server({ historyLimit: 3 });
    const first = a.addObject(resource, four[0]);
    const from = first.metadata.resourceVersion!;
    const w = await watch(a, `resourceVersion=${from}&timeoutSeconds=60`, path);
    a.updateObject(resource, keyOf(first), (o) => void (o.metadata.labels = { x: '1' }));
    for (let i = 0; i < 5; i++) a.addNode(bareNode({ name: `n${i}` })); // the Nodes' cacher, not this one
    a.deleteObject(resource, keyOf(first));
    await waitFor(() => w.lines.length === 2, 'the events');
    expect(types(w.lines)).toEqual(['MODIFIED', 'DELETED']);
    expect(w.lines[1].object).toMatchObject({ kind, apiVersion, metadata: { name: 'b' } });
    const replay = await watch(a, `resourceVersion=${from}&timeoutSeconds=60`, path);
    await waitFor(() => replay.lines.length === 2, 'the window replayed');
    for (let i = 1; i < 4; i++) a.addObject(resource, four[i]);
    const gone = await watch(a, `resourceVersion=${from}&timeoutSeconds=60`, path);
    await gone.ended;
    expect(gone.lines[0]).toMatchObject({ type: 'ERROR', object: { code: 410, reason: 'Expired' } });
    expect(gone.lines[0].object.message).toMatch(/^too old resource version: /);
  });

  it("bookmarks name the resource and carry its cacher's newest revision, not the Nodes'", async () => {
    const clock = new FakeClock();
    const a = await server({ clock });
    a.addObject(resource, four[0]);
    const w = await watch(a, `resourceVersion=${a.resourceVersion}&allowWatchBookmarks=true&timeoutSeconds=30`, path);
    const added = a.addObject(resource, four[1]);
    a.addNode(bareNode({ name: 'n' }));
    await clock.advance(28_000);
    expect(types(w.lines)).toEqual(['ADDED', 'BOOKMARK']);
    expect(w.lines[1].object).toMatchObject({ kind, apiVersion, metadata: { resourceVersion: added.metadata.resourceVersion } });
  });
});

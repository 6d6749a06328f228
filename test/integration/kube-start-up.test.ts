// The kube subnet manager against an API server that is still starting, refuses Events, or asks to
// be called later, over real HTTP against FakeKubeApiServer (its failNext answers with the message
// and headers a real server sends). What a real kube-apiserver answers:
// - for about 100 ms after it starts, before its RBAC informers synced, every request is
//   `403 ... clusterrole.rbac.authorization.k8s.io "flannel-windows" not found` (k8s.io/apiserver
//   plugin/pkg/authorizer rbac; observed against Kubernetes 1.25 with the Node authorizer and RBAC);
// - the NodeRestriction admission plugin refuses a node's credentials on another Node with
//   `node "win2" is not allowed to modify node "win"` (plugin/pkg/admission/noderestriction/admission.go);
// - a ClusterRole without events (upstream's kube-flannel.yml) makes every Event POST/PATCH a 403;
// - API Priority and Fairness answers 429 with `Retry-After` (k8s.io/apiserver pkg/server/filters).
// client-go sends a User-Agent on every request (rest/config.go DefaultKubernetesUserAgent).
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeKubeApiServer, bareNode, linuxFlannelNode, podOnNode, writeKubeconfig } from '../../src/demo/kube-fake/api-server.js';
import { buildKubeConfig } from '../../src/kube/client.js';
import { KubeSubnetManager } from '../../src/subnet/kube/manager.js';
import type { KubeSubnetManagerOptions } from '../../src/subnet/kube/manager.js';
import { KubeHttp } from '../../src/kube/http.js';
import { readNodePublicIPs } from '../../src/subnet/kube/node-public-ip.js';
import { AGENT_RBAC_TEXT } from '../../src/kube/api-error.js';
import type { LeaseAttrs, LeaseUpdate } from '../../src/subnet/lease.js';
import { KubeApiError, KubeError } from '../../src/basics/errors.js';
import { systemClock } from '../../src/basics/clock.js';
import { userAgent } from '../../src/basics/version.js';
import { Metrics, METRIC } from '../../src/basics/metrics.js';
import { eventsSettled, readMetric } from '../support/agent-signals.js';
import { expectCode } from '../support/errors.js';
import { waitFor } from '../support/cluster.js';
import { FakeClock } from '../support/fake-clock.js';
import { logSink } from '../support/log-sink.js';

const P = 'flannel.alpha.coreos.com/';
const VXLAN: LeaseAttrs = { publicIP: '10.0.0.5', backendType: 'vxlan', backendData: { VNI: 4096, VtepMAC: '00:15:5d:b3:ac:db' } };
const NOT_SYNCED =
  'nodes "win" is forbidden: User "system:serviceaccount:kube-flannel:flannel-windows" cannot get resource "nodes" in API group "" at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io "flannel-windows" not found';
const NODE_RESTRICTION = 'nodes "win" is forbidden: node "win2" is not allowed to modify node "win"';

let api: FakeKubeApiServer;
let dir: string;
let kubeconfigPath: string;
const controllers: AbortController[] = [];

function signal(): AbortSignal {
  const c = new AbortController();
  controllers.push(c);
  return c.signal;
}

function manager(over: Partial<KubeSubnetManagerOptions> = {}): KubeSubnetManager {
  return new KubeSubnetManager({
    kubeConfig: buildKubeConfig({ kubeconfigFile: kubeconfigPath, kubeApiUrl: '' }),
    nodeName: 'win',
    network: '10.244.0.0/16',
    annotationPrefix: P,
    setNodeNetworkUnavailable: true,
    ...over,
    timings: { backoffBaseMs: 10, backoffCapMs: 50, nodePollIntervalMs: 20, nodeWaitTimeoutMs: 5000, apiRetryTimeoutMs: 5000, watchTimeoutSeconds: 60, ...over.timings },
  });
}

beforeEach(async () => {
  api = new FakeKubeApiServer();
  await api.start();
  dir = await mkdtemp(join(tmpdir(), 'kube-start-'));
  kubeconfigPath = join(dir, 'kubeconfig');
  await writeKubeconfig(kubeconfigPath, api.url);
  api.addNode(bareNode({ name: 'win', podCIDR: '10.244.5.0/24' }));
});

afterEach(async () => {
  for (const c of controllers.splice(0)) c.abort();
  await api.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('start-up against an API server that is still starting', () => {
  it('403s before the RBAC caches synced (GET own Node, PATCH nodes/status) are retried, and start-up completes', async () => {
    api.failNext('GET', /^\/api\/v1\/nodes\/win$/, 403, 3, { message: NOT_SYNCED });
    api.failNext('PATCH', /^\/api\/v1\/nodes\/win\/status$/, 403, 2, { message: NOT_SYNCED });
    const { log, entries } = logSink();
    const m = manager({ log });
    const lease = await m.acquireLease(async () => VXLAN, signal());
    expect(lease.subnet).toBe('10.244.5.0/24');
    api.failNext('PATCH', /^\/api\/v1\/nodes\/win\/status$/, 503, 1);
    await m.completeLease(lease, signal());
    expect(api.getNode('win')!.metadata.annotations![`${P}kube-subnet-manager`]).toBe('true');
    expect(api.getNode('win')!.status?.conditions?.find((c) => c.type === 'NetworkUnavailable')?.status).toBe('False');
    expect(api.requests.filter((r) => r.method === 'GET' && r.path === '/api/v1/nodes/win')).toHaveLength(4);
    expect(api.requests.filter((r) => r.method === 'PATCH')).toHaveLength(5);
    expect(entries.some((e) => String(e['message']).startsWith('the API server refuses the agent (RBAC)') && e['permission'] === 'nodes: get')).toBe(true);
  });

  it('the first read of the own Node (its public-IP annotations, before the interface is chosen) waits out the 403s too', async () => {
    api.updateNode('win', (n) => void (n.metadata.annotations = { [`${P}node-public-ip`]: '192.168.5.7' }));
    api.failNext('GET', /^\/api\/v1\/nodes\/win$/, 403, 2, { message: NOT_SYNCED });
    const { log } = logSink();
    const ips = await readNodePublicIPs({
      kubeConfig: buildKubeConfig({ kubeconfigFile: kubeconfigPath, kubeApiUrl: '' }),
      nodeName: 'win',
      annotationPrefix: P,
      log,
      timings: { backoffBaseMs: 10 },
    });
    expect(ips).toEqual({ nodePublicIP: '192.168.5.7' });
    expect(api.requests.filter((r) => r.path === '/api/v1/nodes/win')).toHaveLength(3);
  });

  it('a 403 that persists past the start-up window fails FLANNEL_ERR_KUBE naming every rule the agent needs, events included', async () => {
    api.failNext('PATCH', /^\/api\/v1\/nodes\/win\/status$/, 403, Infinity, { message: NOT_SYNCED });
    const err = await expectCode(
      manager({ timings: { startUpWindowMs: 150 } }).acquireLease(async () => VXLAN, signal()),
      KubeError,
      'FLANNEL_ERR_KUBE',
    );
    expect(err.context).toEqual({ status: 403 });
    expect(err.cause).toBeInstanceOf(KubeApiError);
    expect(err.message).toContain(AGENT_RBAC_TEXT);
    expect(AGENT_RBAC_TEXT).toBe('pods: get; nodes: get, list, watch; nodes/status: patch; events: create, patch');
    expect(api.requests.filter((r) => r.method === 'PATCH').length).toBeGreaterThan(1);
  });

  it('a GET of the own Node refused past the window fails naming the rules too', async () => {
    api.failNext('GET', /^\/api\/v1\/nodes\/win$/, 403, Infinity, { message: NOT_SYNCED });
    const err = await expectCode(
      manager({ timings: { startUpWindowMs: 150 } }).acquireLease(async () => VXLAN, signal()),
      KubeError,
      'FLANNEL_ERR_KUBE',
    );
    expect(err.message).toContain(AGENT_RBAC_TEXT);
    expect(api.requests.filter((r) => r.path === '/api/v1/nodes/win').length).toBeGreaterThan(1);
  });

  it('a NodeRestriction refusal is not retried and names the node identity, not the ClusterRole', async () => {
    api.failNext('PATCH', /^\/api\/v1\/nodes\/win\/status$/, 403, Infinity, { message: NODE_RESTRICTION });
    const err = await expectCode(
      manager().acquireLease(async () => VXLAN, signal()),
      KubeError,
      'FLANNEL_ERR_KUBE',
    );
    expect(err.message).toContain('NodeRestriction');
    expect(err.message).toContain('node "win2"');
    expect(err.message).toContain('NODE_NAME');
    expect(err.message).not.toContain('ClusterRole');
    expect(api.requests.filter((r) => r.method === 'PATCH')).toHaveLength(1);
  });
});

// The ClusterRole (or its binding) applied after the agent started: a real kube-apiserver answers 403
// until then (src/demo/kube-fake/rbac-startup.ts). Upstream's NewSubnetManager waits up to 10 minutes for
// its Node informer, whose reflector retries a forbidden list (flannel pkg/subnet/kube/kube.go
// nodeControllerSyncTimeout); this agent waits as long as --node-wait-timeout, in virtual time here.
describe('RBAC applied after the agent started (virtual time)', () => {
  const REFUSED = 'the API server refuses the agent (RBAC); retrying until its ClusterRole grants it';
  /** Production's backoff (1 s doubling to 30 s) and node wait (300 s) on a fake clock. */
  const slow = (clock: FakeClock) => ({ clock, timings: { backoffBaseMs: 1000, backoffCapMs: 30_000, nodeWaitTimeoutMs: 300_000, apiRetryTimeoutMs: 300_000 } });

  /** Answer each refusal by moving the clock to its retry, granting RBAC once the retry falls at or past `grantAtMs`. */
  async function refuseUntil(clock: FakeClock, entries: Record<string, unknown>[], grantAtMs: number, done: () => boolean): Promise<Record<string, unknown>[]> {
    const t0 = clock.now();
    const refusals = () => entries.filter((e) => e['message'] === REFUSED);
    for (let n = 1; !done(); n++) {
      const line = await waitFor(() => refusals()[n - 1] ?? (done() && {}), `refusal ${n}`);
      if (done()) break;
      const delayMs = Number(line['delayMs']);
      if (clock.now() + delayMs - t0 >= grantAtMs) api.rbac = 'granted';
      await clock.advance(delayMs);
    }
    return refusals();
  }

  it('the own Node refused for 20 s: each 403 logged as a refusal naming nodes: get and the fix, retried past the old 10 s window, then the lease', async () => {
    api.rbac = 'role-missing';
    const clock = new FakeClock();
    const { log, entries } = logSink();
    let settled = false;
    const leased = manager({ log, ...slow(clock) })
      .acquireLease(async () => VXLAN, signal())
      .finally(() => (settled = true));
    const refusals = await refuseUntil(clock, entries, 20_000, () => settled);
    expect((await leased).subnet).toBe('10.244.5.0/24');
    expect(refusals.length).toBeGreaterThanOrEqual(5); // 0, 1, 3, 7, 15 s: the fifth is past the old window
    expect(refusals[0]).toMatchObject({ level: 'warn', call: 'reading node "win"', permission: 'nodes: get', node: 'win', timeoutS: 300 });
    expect(String(refusals[0]['fix'])).toContain('kubectl apply -k deploy/overlays/');
    expect(String(refusals[0]['fix'])).toContain(AGENT_RBAC_TEXT);
    expect(entries.filter((e) => e['reason'] === 'API unreachable')).toEqual([]);
  });

  it('the POD_NAME lookup is as patient: pods: get refused, then granted', async () => {
    api.rbac = 'unbound';
    api.addPod(podOnNode({ name: 'kube-flannel-ds-abc', namespace: 'kube-flannel', nodeName: 'win' }));
    const clock = new FakeClock();
    const { log, entries } = logSink();
    let settled = false;
    const leased = manager({ log, nodeName: undefined, podName: 'kube-flannel-ds-abc', podNamespace: 'kube-flannel', ...slow(clock) })
      .acquireLease(async () => VXLAN, signal())
      .finally(() => (settled = true));
    const refusals = await refuseUntil(clock, entries, 20_000, () => settled);
    expect((await leased).key).toBe('win');
    expect(refusals[0]).toMatchObject({ call: "error retrieving pod spec for 'kube-flannel/kube-flannel-ds-abc'", permission: 'pods: get' });
  });

  it('a Node list refused (a ClusterRole without list) is retried by the relist loop, its line naming nodes: list and the fix', async () => {
    api.failNext('GET', /^\/api\/v1\/nodes$/, 403, 1, {
      message: 'nodes is forbidden: User "system:serviceaccount:kube-flannel:flannel-windows" cannot list resource "nodes" in API group "" at the cluster scope',
    });
    const { log, entries } = logSink();
    const updates: LeaseUpdate[] = [];
    void manager({ log }).watchLeases((u) => updates.push(u), signal());
    await waitFor(() => updates.some((u) => u.kind === 'listed'), 'the list after the refusal');
    expect(entries.find((e) => e['message'] === 'listing nodes failed, backing off')).toMatchObject({
      permission: 'nodes: list',
      fix: expect.stringContaining('kubectl apply -k'),
    });
  });

  it('never granted: FLANNEL_ERR_KUBE naming the fix once --node-wait-timeout is over, not before', async () => {
    api.rbac = 'role-missing';
    const clock = new FakeClock();
    const { log, entries } = logSink();
    let settled = false;
    const t0 = clock.now();
    const leased = manager({ log, clock, timings: { backoffBaseMs: 1000, backoffCapMs: 30_000, nodeWaitTimeoutMs: 120_000 } })
      .acquireLease(async () => VXLAN, signal())
      .finally(() => (settled = true));
    void leased.catch(() => undefined);
    await refuseUntil(clock, entries, Infinity, () => settled);
    const err = await expectCode(leased, KubeError, 'FLANNEL_ERR_KUBE');
    expect(clock.now() - t0).toBeGreaterThanOrEqual(120_000);
    expect(err.message).toContain('kubectl apply -k deploy/overlays/');
    expect(err.context).toEqual({ status: 403 });
  });
});

describe('Events refused (a ClusterRole without events)', () => {
  it('one WARN naming the missing rule, then quiet', async () => {
    api.failNext('POST', /\/events$/, 403, Infinity, { message: 'events is forbidden: User "system:serviceaccount:kube-flannel:flannel-windows" cannot create resource "events"' });
    api.failNext('PATCH', /\/events\//, 403, Infinity, { message: 'events is forbidden: cannot patch resource "events"' });
    const { log, entries } = logSink();
    const metrics = new Metrics();
    const m = manager({ log, metrics });
    const lease = await m.acquireLease(async () => VXLAN, signal());
    const events = m.nodeEvents(lease);
    for (let i = 0; i < 6; i++) events.record({ type: 'Warning', reason: 'PeerRejected', message: `peer p${i % 3} rejected` });
    await eventsSettled(metrics, 6);
    const warns = entries.filter((e) => e['level'] === 'warn');
    expect(warns).toHaveLength(1);
    expect(warns[0]).toMatchObject({ rule: 'events: create, patch', namespace: 'default' });
    expect(await readMetric(metrics, METRIC.nodeEventsDropped, { reason: 'write-failed' })).toBe(6);
    expect(api.requests.filter((r) => r.path.includes('/events')).length).toBe(6);
  });
});

describe('User-Agent', () => {
  it('the pure format: flanneld-windows/<version> (<os>/<arch>) <commit>, in Go names', () => {
    expect(userAgent('win32', 'x64', 'abc1234')).toBe('flanneld-windows/0.1.0 (windows/amd64) abc1234');
    expect(userAgent('linux', 'arm64', 'unknown')).toBe('flanneld-windows/0.1.0 (linux/arm64) unknown');
  });

  it('every request carries it: list, watch, get, patch, event create and patch', async () => {
    api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.1', backendType: 'vxlan' }));
    const metrics = new Metrics();
    const m = manager({ metrics });
    const lease = await m.acquireLease(async () => VXLAN, signal());
    await m.completeLease(lease, signal());
    const updates: LeaseUpdate[] = [];
    void m.watchLeases((u) => updates.push(u), signal());
    await waitFor(() => updates.some((u) => u.kind === 'listed') && api.activeWatches === 1, 'the list and the watch');
    const events = m.nodeEvents(lease);
    events.record({ type: 'Normal', reason: 'FlannelStarted', message: 'started' });
    events.record({ type: 'Normal', reason: 'FlannelStarted', message: 'started' });
    await eventsSettled(metrics, 2);
    const kinds = new Set(api.requests.map((r) => `${r.method} ${r.path.replace(/\/events\/win\..*$/, '/events/<name>')}${r.query['watch'] ? '?watch' : ''}`));
    expect([...kinds].sort()).toEqual(
      [
        'GET /api/v1/nodes',
        'GET /api/v1/nodes?watch',
        'GET /api/v1/nodes/win',
        'PATCH /api/v1/nodes/win/status',
        'POST /api/v1/namespaces/default/events',
        'PATCH /api/v1/namespaces/default/events/<name>',
      ].sort(),
    );
    expect(api.requests.map((r) => r.userAgent)).toEqual(api.requests.map(() => userAgent()));
    expect(userAgent()).toMatch(/^flanneld-windows\/\d+\.\d+\.\d+ \([a-z0-9]+\/[a-z0-9]+\) [0-9a-z]+$/);
  });
});

describe('Retry-After', () => {
  it('a 429 (and a 503) with Retry-After carries the wait on the error; other statuses and forms do not', async () => {
    const http = new KubeHttp(buildKubeConfig({ kubeconfigFile: kubeconfigPath, kubeApiUrl: '' }), systemClock);
    const get = () =>
      http.json({ method: 'GET', path: '/api/v1/nodes', timeoutMs: 5000, signal: signal() }).then(
        () => {
          throw new Error('expected the request to fail');
        },
        (e: unknown) => e as KubeApiError,
      );
    api.failNext('GET', /^\/api\/v1\/nodes$/, 429, 1, { message: 'Too many requests, please try again later.', headers: { 'Retry-After': '20' } });
    expect((await get()).retryAfterMs).toBe(20_000);
    api.failNext('GET', /^\/api\/v1\/nodes$/, 503, 1, { headers: { 'Retry-After': '3' } });
    expect((await get()).retryAfterMs).toBe(3000);
    api.failNext('GET', /^\/api\/v1\/nodes$/, 403, 1, { headers: { 'Retry-After': '3' } });
    expect((await get()).retryAfterMs).toBeUndefined();
    api.failNext('GET', /^\/api\/v1\/nodes$/, 429, 1, { headers: { 'Retry-After': 'Wed, 21 Oct 2015 07:28:00 GMT' } });
    expect((await get()).retryAfterMs).toBeUndefined();
  });

  it('the start-up GET of the own Node waits a 429 Retry-After before its own backoff', async () => {
    const clock = new FakeClock();
    api.failNext('GET', /^\/api\/v1\/nodes\/win$/, 429, 1, { headers: { 'Retry-After': '3' } });
    const acquiring = manager({ clock }).acquireLease(async () => VXLAN, signal());
    await waitFor(() => clock.sleeps.includes(3000) || undefined, 'a pause of the Retry-After');
    expect(clock.sleeps).not.toContain(10); // not the 10 ms backoff
    await clock.advance(3000);
    expect((await acquiring).subnet).toBe('10.244.5.0/24');
  });
});

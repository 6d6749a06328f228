// KubeSubnetManager over real HTTP, through @kubernetes/client-node, against FakeKubeApiServer.
import { describe, it, expect, beforeEach, afterEach } from '@jest/globals';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeKubeApiServer, bareNode, linuxFlannelNode, podOnNode, writeKubeconfig } from '../../src/demo/kube-fake/api-server.js';
import type { FakeNode } from '../../src/demo/kube-fake/api-server.js';
import { buildKubeConfig } from '../../src/kube/client.js';
import { KubeSubnetManager } from '../../src/subnet/kube/manager.js';
import type { KubeSubnetManagerOptions } from '../../src/subnet/kube/manager.js';
import type { Lease, LeaseAttrs, LeaseUpdate, PeerLease } from '../../src/subnet/lease.js';
import { METRIC, Metrics } from '../../src/basics/metrics.js';
import { BackendError, KubeApiError, KubeError } from '../../src/basics/errors.js';
import { expectCode } from '../support/errors.js';
import { systemClock } from '../../src/basics/clock.js';
import { issueCert, makeTestCa } from '../support/etcd.js';
import type { TestCa, TestCert } from '../support/etcd.js';
import { waitFor } from '../support/cluster.js';
import { logSink } from '../support/log-sink.js';
import { readMetric } from '../support/agent-signals.js';

const P = 'flannel.alpha.coreos.com/';
const SMP = 'application/strategic-merge-patch+json';
const VXLAN: LeaseAttrs = { publicIP: '10.0.0.5', backendType: 'vxlan', backendData: { VNI: 4096, VtepMAC: '00:15:5d:b3:ac:db' } };
const HOSTGW: LeaseAttrs = { publicIP: '10.0.0.5', backendType: 'host-gw', backendData: null };

let api: FakeKubeApiServer;
let dir: string;
let kubeconfigPath: string;
const controllers: AbortController[] = [];

function signal(): AbortSignal {
  const c = new AbortController();
  controllers.push(c);
  return c.signal;
}

/** The subnet manager's "..., backing off" lines: each is one failed list or watch, before its pause. */
const backingOff = (entries: Record<string, unknown>[]) => entries.filter((e) => String(e['message']).includes('backing off')).length;

function manager(over: Partial<KubeSubnetManagerOptions> = {}): KubeSubnetManager {
  return new KubeSubnetManager({
    kubeConfig: buildKubeConfig({ kubeconfigFile: kubeconfigPath, kubeApiUrl: '' }),
    nodeName: 'win',
    network: '10.244.0.0/16',
    annotationPrefix: P,
    setNodeNetworkUnavailable: true,
    ...over,
    timings: { backoffBaseMs: 10, backoffCapMs: 100, nodePollIntervalMs: 20, nodeWaitTimeoutMs: 2000, apiRetryTimeoutMs: 3000, watchTimeoutSeconds: 60, ...over.timings },
  });
}

const attrs = (a: LeaseAttrs) => async () => a;

const patches = () => api.requests.filter((r) => r.method === 'PATCH');

/** The API server again on the same port, with a watch cache window of `events` Node events. */
async function smallWatchCache(events: number): Promise<void> {
  const port = Number(new URL(api.url).port);
  await api.stop();
  api = new FakeKubeApiServer({ port, historyLimit: events });
  await api.start();
}

beforeEach(async () => {
  api = new FakeKubeApiServer();
  await api.start();
  dir = await mkdtemp(join(tmpdir(), 'kube-mgr-'));
  kubeconfigPath = join(dir, 'kubeconfig');
  await writeKubeconfig(kubeconfigPath, api.url);
});

afterEach(async () => {
  for (const c of controllers.splice(0)) c.abort();
  await api.stop();
  await rm(dir, { recursive: true, force: true });
});

describe('acquireLease', () => {
  it('vxlan: patches exactly the four annotations on /status as a strategic merge patch', async () => {
    api.addNode(bareNode({ name: 'win', podCIDR: '10.244.5.0/24' }));
    let askedFor = '';
    const lease = await manager().acquireLease(async (subnet) => {
      askedFor = subnet;
      return VXLAN;
    }, signal());
    expect(askedFor).toBe('10.244.5.0/24');
    expect(lease).toEqual({ key: 'win', subnet: '10.244.5.0/24', publicIP: '10.0.0.5', backendType: 'vxlan', backendData: VXLAN.backendData });
    const [p, ...rest] = patches();
    expect(rest).toHaveLength(0);
    expect(p.path).toBe('/api/v1/nodes/win/status');
    expect(p.contentType).toBe(SMP);
    expect(p.body).toEqual({
      metadata: {
        annotations: {
          [`${P}kube-subnet-manager`]: 'true',
          [`${P}backend-type`]: 'vxlan',
          [`${P}backend-data`]: '{"VNI":4096,"VtepMAC":"00:15:5d:b3:ac:db"}',
          [`${P}public-ip`]: '10.0.0.5',
        },
      },
    });
    expect(api.getNode('win')!.metadata.annotations![`${P}backend-data`]).toBe('{"VNI":4096,"VtepMAC":"00:15:5d:b3:ac:db"}');
  });

  it('host-gw: backend-data is the four characters null; podCIDRs picks IPv4', async () => {
    api.addNode({ ...bareNode({ name: 'win' }), spec: { podCIDR: 'fd00:1::/64', podCIDRs: ['fd00:1::/64', '10.244.7.0/24'] } });
    const lease = await manager().acquireLease(attrs(HOSTGW), signal());
    expect(lease.subnet).toBe('10.244.7.0/24');
    expect(patches()[0].body).toEqual({
      metadata: {
        annotations: {
          [`${P}kube-subnet-manager`]: 'true',
          [`${P}backend-type`]: 'host-gw',
          [`${P}backend-data`]: 'null',
          [`${P}public-ip`]: '10.0.0.5',
        },
      },
    });
  });

  it('second start patches nothing, and then only the changed key', async () => {
    api.addNode(bareNode({ name: 'win', podCIDR: '10.244.5.0/24' }));
    await manager().acquireLease(attrs(VXLAN), signal());
    expect(patches()).toHaveLength(1);
    await manager().acquireLease(attrs(VXLAN), signal());
    expect(patches()).toHaveLength(1);
    await manager().acquireLease(attrs({ ...VXLAN, publicIP: '10.0.0.6' }), signal());
    expect(patches()).toHaveLength(2);
    expect(patches()[1].body).toEqual({ metadata: { annotations: { [`${P}public-ip`]: '10.0.0.6' } } });
  });

  it('missing podCIDR: waits, then fails with the upstream text', async () => {
    api.addNode(bareNode({ name: 'win' }));
    const err = await expectCode(manager({ timings: { nodeWaitTimeoutMs: 200 } }).acquireLease(attrs(VXLAN), signal()), KubeError, 'FLANNEL_ERR_NODE');
    expect(err.message).toBe('node "win" pod cidr not assigned');
    expect(api.requests.filter((r) => r.path === '/api/v1/nodes/win').length).toBeGreaterThan(1);
    expect(patches()).toHaveLength(0);
  });

  it('waits for the node to appear and get a podCIDR', async () => {
    const p = manager().acquireLease(attrs(VXLAN), signal());
    // The node appears after the manager has asked for it, and gets its podCIDR after it asked again.
    const gets = () => api.requests.filter((r) => r.method === 'GET' && r.path === '/api/v1/nodes/win').length;
    await waitFor(() => gets() >= 1, 'a GET of the missing node');
    api.addNode(bareNode({ name: 'win' }));
    const seen = gets();
    await waitFor(() => gets() > seen, 'a GET of the node without a podCIDR');
    api.updateNode('win', (n) => void (n.spec = { podCIDR: '10.244.9.0/24', podCIDRs: ['10.244.9.0/24'] }));
    expect((await p).subnet).toBe('10.244.9.0/24');
  });

  it.each([
    ['podCIDR and podCIDRs IPv6', { podCIDR: 'fd00:1::/64', podCIDRs: ['fd00:1::/64'] }],
    ['only podCIDRs, IPv6', { podCIDRs: ['fd00:1::/64'] }],
  ])('no IPv4 pod cidr (%s): fails at once, without waiting out the node wait', async (_name, spec) => {
    api.addNode({ ...bareNode({ name: 'win' }), spec });
    const err = await expectCode(manager({ timings: { nodeWaitTimeoutMs: 60_000 } }).acquireLease(attrs(VXLAN), signal()), KubeError, 'FLANNEL_ERR_NODE');
    expect(err.context).toMatchObject({ node: 'win' });
    expect(api.requests.filter((r) => r.path === '/api/v1/nodes/win')).toHaveLength(1);
  });

  it('missing node: FLANNEL_ERR_NODE naming the node', async () => {
    const err = await expectCode(manager({ timings: { nodeWaitTimeoutMs: 150 } }).acquireLease(attrs(VXLAN), signal()), KubeError, 'FLANNEL_ERR_NODE');
    expect(err.context).toMatchObject({ node: 'win', reason: 'not found' });
  });

  it('podCIDR outside Network: exact upstream text, nothing patched', async () => {
    api.addNode(bareNode({ name: 'win', podCIDR: '10.99.1.0/24' }));
    const err = await expectCode(manager().acquireLease(attrs(VXLAN), signal()), KubeError, 'FLANNEL_ERR_NODE');
    expect(err.message).toBe(`subnet "10.244.0.0/16" specified in the flannel net config doesn't contain "10.99.1.0/24" PodCIDR of the "win" node`);
    expect(patches()).toHaveLength(0);
  });

  it('node-public-ip annotation overrides the public IP at start', async () => {
    const n = bareNode({ name: 'win', podCIDR: '10.244.5.0/24' });
    n.metadata.annotations = { [`${P}node-public-ip`]: '192.168.1.50' };
    api.addNode(n);
    const lease = await manager({ publicIPOverride: '10.0.0.5' }).acquireLease(attrs(VXLAN), signal());
    expect(lease.publicIP).toBe('192.168.1.50');
    expect((patches()[0].body as { metadata: { annotations: Record<string, string> } }).metadata.annotations[`${P}public-ip`]).toBe('192.168.1.50');
  });

  it('public-ip-overwrite is published as public-ip', async () => {
    const n = bareNode({ name: 'win', podCIDR: '10.244.5.0/24' });
    n.metadata.annotations = { [`${P}public-ip-overwrite`]: '172.16.0.9' };
    api.addNode(n);
    const lease = await manager().acquireLease(attrs(VXLAN), signal());
    expect(lease.publicIP).toBe('172.16.0.9');
    expect(api.getNode('win')!.metadata.annotations![`${P}public-ip`]).toBe('172.16.0.9');
  });

  it('refuses to publish vxlan data without a VtepMAC', async () => {
    api.addNode(bareNode({ name: 'win', podCIDR: '10.244.5.0/24' }));
    await expectCode(manager().acquireLease(attrs({ ...VXLAN, backendData: { VNI: 4096, VtepMAC: '' } }), signal()), BackendError, 'FLANNEL_ERR_BACKEND');
    expect(patches()).toHaveLength(0);
  });

  it('retries the patch through API blips (503, dropped connection)', async () => {
    api.addNode(bareNode({ name: 'win', podCIDR: '10.244.5.0/24' }));
    api.failNext('PATCH', /^\/api\/v1\/nodes\/win\/status$/, 503, 2);
    api.failNext('PATCH', /^\/api\/v1\/nodes\/win\/status$/, 0, 1);
    const lease = await manager().acquireLease(attrs(VXLAN), signal());
    expect(lease.subnet).toBe('10.244.5.0/24');
    expect(patches()).toHaveLength(4);
    expect(api.getNode('win')!.metadata.annotations![`${P}kube-subnet-manager`]).toBe('true');
  });

  // A 403 within the start-up window is retried (an API server whose RBAC caches have not synced yet,
  // test/integration/kube-start-up.test.ts); once the window is over it fails at once.
  it('403 past the start-up window is not retried: FLANNEL_ERR_KUBE naming the RBAC rule', async () => {
    api.addNode(bareNode({ name: 'win', podCIDR: '10.244.5.0/24' }));
    api.failNext('PATCH', /status$/, 403, 5);
    const err = await expectCode(manager({ timings: { startUpWindowMs: 0 } }).acquireLease(attrs(VXLAN), signal()), KubeError, 'FLANNEL_ERR_KUBE');
    expect(err.context).toEqual({ status: 403 });
    expect(err.cause).toBeInstanceOf(KubeApiError);
    expect(patches()).toHaveLength(1);
  });
});

describe('node name resolution', () => {
  it('POD_NAME/POD_NAMESPACE: takes spec.nodeName of the pod', async () => {
    api.addNode(bareNode({ name: 'win-7', podCIDR: '10.244.5.0/24' }));
    api.addPod(podOnNode({ name: 'kube-flannel-ds-abc', namespace: 'kube-flannel', nodeName: 'win-7' }));
    const m = manager({ nodeName: undefined, podName: 'kube-flannel-ds-abc', podNamespace: 'kube-flannel' });
    const lease = await m.acquireLease(attrs(VXLAN), signal());
    expect(lease.key).toBe('win-7');
    expect(api.requests[0].path).toBe('/api/v1/namespaces/kube-flannel/pods/kube-flannel-ds-abc');
    expect(patches()[0].path).toBe('/api/v1/nodes/win-7/status');
  });

  it('neither NODE_NAME nor POD_NAME/POD_NAMESPACE: upstream text', async () => {
    const err = await expectCode(manager({ nodeName: undefined }).acquireLease(attrs(VXLAN), signal()), KubeError, 'FLANNEL_ERR_NODE');
    expect(err.message).toBe('env variables POD_NAME and POD_NAMESPACE must be set');
  });

  it('pod without nodeName / missing pod', async () => {
    api.addPod(podOnNode({ name: 'p', namespace: 'ns' }));
    const e1 = await expectCode(manager({ nodeName: undefined, podName: 'p', podNamespace: 'ns' }).acquireLease(attrs(VXLAN), signal()), KubeError, 'FLANNEL_ERR_NODE');
    expect(e1.message).toBe(`node name not present in pod spec 'ns/p'`);
    const e2 = await expectCode(manager({ nodeName: undefined, podName: 'q', podNamespace: 'ns' }).acquireLease(attrs(VXLAN), signal()), KubeError, 'FLANNEL_ERR_KUBE');
    expect(e2.context).toEqual({ status: 404 });
    expect(e2.cause).toMatchObject({ code: 'FLANNEL_ERR_KUBE_API', statusCode: 404 });
  });
});

describe('kubeconfig', () => {
  it('missing file: FLANNEL_ERR_KUBE naming the file', () => {
    const f = join(dir, 'nope.yaml');
    const err = expectCode(() => buildKubeConfig({ kubeconfigFile: f, kubeApiUrl: '' }), KubeError, 'FLANNEL_ERR_KUBE');
    expect(err.context).toEqual({ file: f });
    expect(err.cause).toMatchObject({ code: 'ENOENT' });
  });

  it('garbage file: FLANNEL_ERR_KUBE naming the file', async () => {
    const f = join(dir, 'bad.yaml');
    await writeFile(f, ': : [not yaml\n\t-');
    expect(expectCode(() => buildKubeConfig({ kubeconfigFile: f, kubeApiUrl: '' }), KubeError, 'FLANNEL_ERR_KUBE').context).toEqual({ file: f });
    const g = join(dir, 'empty-ctx.yaml');
    await writeFile(g, 'apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n');
    expect(expectCode(() => buildKubeConfig({ kubeconfigFile: g, kubeApiUrl: '' }), KubeError, 'FLANNEL_ERR_KUBE').context).toEqual({ file: g });
  });

  it('no flags outside a cluster: FLANNEL_ERR_KUBE', () => {
    expect(() => buildKubeConfig({ kubeconfigFile: '', kubeApiUrl: '', env: {} })).toThrow(expect.objectContaining({ code: 'FLANNEL_ERR_KUBE' }));
  });

  it('in-cluster: https server, CA file and token file from the service account', async () => {
    const sa = join(dir, 'var/run/secrets/kubernetes.io/serviceaccount');
    await (await import('node:fs/promises')).mkdir(sa, { recursive: true });
    await writeFile(join(sa, 'token'), 'x');
    const kc = buildKubeConfig({
      kubeconfigFile: '',
      kubeApiUrl: '',
      env: { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443', CONTAINER_SANDBOX_MOUNT_POINT: dir },
    });
    expect(kc.getCurrentCluster()).toMatchObject({ server: 'https://10.96.0.1:443', skipTLSVerify: false, caFile: join(sa, 'ca.crt') });
  });

  it('TLS stays verified for https kubeconfigs', async () => {
    const f = join(dir, 'tls.yaml');
    await writeKubeconfig(f, 'https://10.1.2.3:6443');
    expect(buildKubeConfig({ kubeconfigFile: f, kubeApiUrl: '' }).getCurrentCluster()!.skipTLSVerify).toBe(false);
  });

  it('--kube-api-url alone', async () => {
    api.addNode(bareNode({ name: 'win', podCIDR: '10.244.5.0/24' }));
    const m = manager({ kubeConfig: buildKubeConfig({ kubeconfigFile: '', kubeApiUrl: api.url }) });
    expect((await m.acquireLease(attrs(HOSTGW), signal())).subnet).toBe('10.244.5.0/24');
  });

  describe('TLS and credentials', () => {
    let ca: TestCa;
    let serverCert: TestCert;
    beforeEach(async () => {
      ca = makeTestCa(dir, 'kube-ca');
      serverCert = issueCert(ca, dir, 'kube-apiserver', 'server');
      await api.stop();
      api = new FakeKubeApiServer({ bearerToken: 's3cret', tls: { cert: await readFile(serverCert.certFile), key: await readFile(serverCert.keyFile) } });
      await api.start();
      api.addNode(bareNode({ name: 'win', podCIDR: '10.244.5.0/24' }));
    });

    it('https with the CA: the token is sent and TLS verified', async () => {
      const f = join(dir, 'https.yaml');
      await writeKubeconfig(f, api.url, { token: 's3cret', caFile: ca.certFile });
      await manager({ kubeConfig: buildKubeConfig({ kubeconfigFile: f, kubeApiUrl: '' }) }).acquireLease(attrs(VXLAN), signal());
      expect(api.requests.length).toBeGreaterThan(0);
      expect(api.requests.every((r) => r.authorization === 'Bearer s3cret')).toBe(true);
    });

    it('https with an unknown CA fails (no request is made in clear), and --kube-api-url overrides the server', async () => {
      const f = join(dir, 'no-ca.yaml');
      await writeKubeconfig(f, 'https://127.0.0.1:1', { token: 's3cret' });
      await expectCode(
        manager({ kubeConfig: buildKubeConfig({ kubeconfigFile: f, kubeApiUrl: api.url }), timings: { nodeWaitTimeoutMs: 300 } }).acquireLease(attrs(VXLAN), signal()),
        KubeError,
        'FLANNEL_ERR_KUBE',
      );
      expect(api.requests).toHaveLength(0);
    });

    it('insecure-skip-tls-verify: works, and a warning says so', async () => {
      const f = join(dir, 'insecure.yaml');
      await writeKubeconfig(f, api.url, { token: 's3cret', insecure: true });
      const { log, entries: warnings } = logSink('info');
      const kc = buildKubeConfig({ kubeconfigFile: f, kubeApiUrl: '', log });
      expect(warnings).toEqual([expect.objectContaining({ level: 'warn', server: api.url })]);
      expect(JSON.stringify(warnings)).not.toContain('s3cret');
      await manager({ kubeConfig: kc }).acquireLease(attrs(VXLAN), signal());
    });

    it('wrong token: 401 is FLANNEL_ERR_KUBE, without the token in the message', async () => {
      await writeKubeconfig(kubeconfigPath, api.url, { token: 'wrong', caFile: ca.certFile });
      const err = await expectCode(manager().acquireLease(attrs(VXLAN), signal()), KubeError, 'FLANNEL_ERR_KUBE');
      expect(err.message).not.toContain('wrong');
    });

    it('credentials over plain http:// are refused, from the kubeconfig, with --kube-api-url, and in-cluster on port 8080', async () => {
      const f = join(dir, 'http-token.yaml');
      await writeKubeconfig(f, 'http://127.0.0.1:8080', { token: 's3cret' });
      for (const apiUrl of ['', 'http://127.0.0.1:8081']) {
        expect(() => buildKubeConfig({ kubeconfigFile: f, kubeApiUrl: apiUrl })).toThrow(expect.objectContaining({ code: 'FLANNEL_ERR_KUBE_INSECURE' }));
      }
      const httpsWithToken = join(dir, 'https-token.yaml');
      await writeKubeconfig(httpsWithToken, api.url, { token: 's3cret', caFile: ca.certFile });
      expect(() => buildKubeConfig({ kubeconfigFile: httpsWithToken, kubeApiUrl: 'http://127.0.0.1:8081' })).toThrow(
        expect.objectContaining({ code: 'FLANNEL_ERR_KUBE_INSECURE' }),
      );
      const sa = join(dir, 'var/run/secrets/kubernetes.io/serviceaccount');
      await mkdir(sa, { recursive: true });
      await writeFile(join(sa, 'token'), 'x');
      expect(() =>
        buildKubeConfig({ kubeconfigFile: '', kubeApiUrl: '', env: { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '8080', CONTAINER_SANDBOX_MOUNT_POINT: dir } }),
      ).toThrow(expect.objectContaining({ code: 'FLANNEL_ERR_KUBE_INSECURE' }));
      // http:// without credentials, given explicitly, stays allowed (the fake API server, kubectl proxy)
      expect(buildKubeConfig({ kubeconfigFile: '', kubeApiUrl: 'http://127.0.0.1:8001' }).getCurrentCluster()!.server).toBe('http://127.0.0.1:8001');
    });
  });
});

describe('completeLease', () => {
  const lease: Lease = { key: 'win', subnet: '10.244.5.0/24', publicIP: '10.0.0.5', backendType: 'vxlan', backendData: null };

  it('patches NetworkUnavailable=False on /status, keeping other conditions', async () => {
    api.addNode(bareNode({ name: 'win', podCIDR: '10.244.5.0/24' }));
    const t = Date.UTC(2025, 2, 19, 19, 57, 30, 123);
    await manager({ clock: { now: () => t, sleep: (ms, s) => systemClock.sleep(ms, s), after: (ms, fn) => systemClock.after(ms, fn) } }).completeLease(lease, signal());
    const [p] = patches();
    expect(p.path).toBe('/api/v1/nodes/win/status');
    expect(p.contentType).toBe(SMP);
    expect(p.body).toEqual({
      status: {
        conditions: [
          {
            type: 'NetworkUnavailable',
            status: 'False',
            lastHeartbeatTime: '2025-03-19T19:57:30Z',
            lastTransitionTime: '2025-03-19T19:57:30Z',
            reason: 'FlannelIsUp',
            message: 'Flannel is running on this node',
          },
        ],
      },
    });
    const conds = api.getNode('win')!.status!.conditions!;
    expect(conds.map((c) => c.type).sort()).toEqual(['NetworkUnavailable', 'Ready']);
  });

  // The own Node deleted between the lease and its condition (kubectl delete node right after the agent
  // started): the Node watch tells the agent (own-node-watch.ts), which keeps the dataplane and is not
  // ready, and writes the condition on the Node registered again when it leases from it. A 404 here is
  // no reason to stop the agent; before, it ended the run (FLANNEL_ERR_KUBE "nodes \"win\" not found").
  it('the own Node deleted before the condition is written: not fatal, logged, nothing patched', async () => {
    api.addNode(bareNode({ name: 'win', podCIDR: '10.244.5.0/24' }));
    const sink = logSink('warn');
    const m = manager({ log: sink.log });
    await m.acquireLease(attrs(VXLAN), signal());
    api.deleteNode('win');
    await m.completeLease(lease, signal());
    expect(api.getNode('win')).toBeUndefined();
    expect(sink.entries).toContainEqual(
      expect.objectContaining({ message: 'the own Node is not in the API server: NetworkUnavailable is written on it once it is registered again', node: 'win' }),
    );
  });

  it('retries, and does nothing when --set-node-network-unavailable=false', async () => {
    api.addNode(bareNode({ name: 'win', podCIDR: '10.244.5.0/24' }));
    await manager({ setNodeNetworkUnavailable: false }).completeLease(lease, signal());
    expect(patches()).toHaveLength(0);
    api.failNext('PATCH', /status$/, 500, 2);
    await manager().completeLease(lease, signal());
    expect(patches()).toHaveLength(3);
  });
});

describe('watchLeases', () => {
  const peersOf = (us: LeaseUpdate[]): PeerLease[] => us.flatMap((u) => (u.kind === 'peers' ? u.peers : []));
  function collect(m: KubeSubnetManager, metrics?: Metrics) {
    const updates: LeaseUpdate[] = [];
    const s = signal();
    const done = m.watchLeases((u) => updates.push(u), s);
    const firstListed = () => updates.findIndex((u) => u.kind === 'listed');
    /** The keys of each complete list, sorted. */
    const lists = () => updates.flatMap((u) => (u.kind === 'listed' ? [[...u.keys].sort()] : []));
    /** The peers the first list's pages delivered. */
    const listedPeers = () => (firstListed() < 0 ? [] : peersOf(updates.slice(0, firstListed())));
    /** The peers delivered after the first complete list (watch events, and the pages of any relist). */
    const events = () => (firstListed() < 0 ? [] : peersOf(updates.slice(firstListed() + 1)));
    return { updates, done, lists, listedPeers, events, metrics };
  }

  const peer = (i: number, backendType: 'vxlan' | 'host-gw' = 'vxlan', name = `linux-${i}`) =>
    linuxFlannelNode({ name, podCIDR: `10.244.${i}.0/24`, publicIP: `10.0.0.${10 + i}`, backendType });

  it('a list, then added / changed / status-only / unmanaged / deleted', async () => {
    api.addNode(peer(1));
    api.addNode(bareNode({ name: 'win', podCIDR: '10.244.5.0/24' }));
    const c = collect(manager());
    await waitFor(() => c.lists().length === 1, 'first complete list', 5000);
    const linux1 = {
      key: 'linux-1',
      subnet: '10.244.1.0/24',
      publicIP: '10.0.0.11',
      backendType: 'vxlan',
      backendData: { VNI: 4096, VtepMAC: '0e:2a:0a:00:00:0b' },
      created: Date.parse(api.getNode('linux-1')!.metadata.creationTimestamp!),
    };
    // Every Node listed is delivered; the unannotated one without a lease, and only leases are listed.
    expect(c.listedPeers()).toEqual([
      { key: 'linux-1', lease: linux1 },
      { key: 'win', lease: undefined },
    ]);
    expect(c.lists()).toEqual([['linux-1']]);
    await waitFor(() => api.activeWatches === 1, 'watch', 5000);

    api.addNode(peer(2, 'host-gw'));
    await waitFor(() => c.events().length === 1, 'added', 5000);
    expect(c.events()[0]).toEqual({
      key: 'linux-2',
      lease: { key: 'linux-2', subnet: '10.244.2.0/24', publicIP: '10.0.0.12', backendType: 'host-gw', backendData: null, created: expect.any(Number) },
    });

    // Heartbeat-only / unrelated changes: each is delivered with the node's unchanged lease (or none), for
    // the peer store to drop (src/peers/store.ts is the one change filter).
    api.updateNode('linux-1', (n) => void (n.status!.conditions![0].lastHeartbeatTime = '2030-01-01T00:00:00Z'));
    api.updateNode('linux-1', (n) => void (n.metadata.labels!.foo = 'bar'));
    api.updateNode('win', (n) => void (n.metadata.annotations!.x = 'y'));
    // Relevant change.
    api.updateNode('linux-1', (n) => void (n.metadata.annotations![`${P}public-ip`] = '10.0.0.99'));
    await waitFor(() => c.events().length === 5, 'changed', 5000);
    expect(c.events().slice(1, 4)).toEqual([
      { key: 'linux-1', lease: linux1 },
      { key: 'linux-1', lease: linux1 },
      { key: 'win', lease: undefined },
    ]);
    expect(c.events()[4]).toEqual({ key: 'linux-1', lease: { ...linux1, publicIP: '10.0.0.99' } });

    // Stops being managed by flannel: no lease any more.
    api.updateNode('linux-2', (n) => void delete n.metadata.annotations![`${P}kube-subnet-manager`]);
    await waitFor(() => c.events().length === 6, 'unmanaged', 5000);
    expect(c.events()[5]).toEqual({ key: 'linux-2', lease: undefined });

    api.deleteNode('linux-1');
    await waitFor(() => c.events().length === 7, 'deleted', 5000);
    expect(c.events()[6]).toEqual({ key: 'linux-1', lease: undefined });
    // A fence on the same watch: once its event is in, everything before it was read; nothing more came.
    api.addNode(peer(9));
    await waitFor(() => c.events().some((e) => e.key === 'linux-9'), 'the fence', 5000);
    expect(c.events()).toHaveLength(8);
    expect(c.events()[7]).toMatchObject({ key: 'linux-9', lease: { key: 'linux-9' } });
    expect(c.lists()).toHaveLength(1);
  });

  it('API server restart: relists, listing the keys without the peer deleted meanwhile', async () => {
    api.addNode(peer(1));
    api.addNode(peer(2));
    const metrics = new Metrics();
    const sink = logSink('info');
    const c = collect(manager({ metrics, log: sink.log }));
    await waitFor(() => c.lists().length === 1 && api.activeWatches === 1, 'condition', 5000);
    await api.stop();
    api.deleteNode('linux-2');
    api.addNode(peer(3));
    await waitFor(() => backingOff(sink.entries) >= 2, 'a few failed reconnects', 5000);
    await api.start();
    await waitFor(() => c.lists().length >= 2, 'relist', 5000);
    expect(c.lists().at(-1)).toEqual(['linux-1', 'linux-3']);
    expect(await readMetric(metrics, METRIC.apiReconnects, { resource: 'nodes' })).toBeGreaterThan(0);
    await waitFor(() => api.activeWatches === 1, 'rewatch', 5000);
    api.addNode(peer(4));
    await waitFor(() => c.events().some((e) => e.key === 'linux-4' && e.lease !== undefined), 'event after restart', 5000);
  });

  it('410 Gone when the resume is older than the watch cache window: relist', async () => {
    await smallWatchCache(2);
    api.addNode(peer(1));
    api.addNode(peer(2));
    const metrics = new Metrics();
    const c = collect(manager({ metrics }));
    await waitFor(() => c.lists().length === 1 && api.activeWatches === 1, 'condition', 5000);
    // The watch ends cleanly (its timeout) and, before the agent resumes, three Node writes push its
    // resourceVersion out of the cache's window of two (a busy cluster); a compaction alone would not.
    api.compact();
    api.closeWatches();
    for (const v of ['1', '2', '3']) api.updateNode('linux-1', (n) => void (n.metadata.labels!.v = v));
    await waitFor(() => api.expiredWatches === 1, '410', 5000);
    await waitFor(() => c.lists().length >= 2, 'relist after 410', 5000);
    expect(c.lists().at(-1)).toEqual(['linux-1', 'linux-2']);
    expect(await readMetric(metrics, METRIC.apiReconnects, { resource: 'nodes' })).toBeGreaterThan(0);
  });

  it('peer deleted while the watch is expired is gone from the relist', async () => {
    api.addNode(peer(1));
    api.addNode(peer(2));
    const c = collect(manager());
    await waitFor(() => c.lists().length === 1 && api.activeWatches === 1, 'condition', 5000);
    // Close the watch, delete while no watch is open, then a rolling restart of the API server: the new
    // process's watch cache starts at the newest revision, the resume gets 410, the delete is never seen.
    api.closeWatches();
    api.deleteNode('linux-2');
    api.renewNodeLease('linux-1');
    await api.rollingRestart();
    await waitFor(() => c.lists().length >= 2, 'relist', 5000);
    expect(c.lists().at(-1)).toEqual(['linux-1']);
    expect(api.expiredWatches).toBe(1);
    // No watch event: what came after the first list is the relist's page alone.
    expect(c.events().map((e) => e.key)).toEqual(['linux-1']);
  });

  it('a rolling restart of the API server: the open watch is served to its timeout, the resume on the new process is 410, a relist', async () => {
    api.addNode(peer(1));
    api.addNode(peer(2));
    const c = collect(manager({ timings: { watchTimeoutSeconds: 1 } }));
    await waitFor(() => c.lists().length === 1 && api.activeWatches === 1, 'condition', 5000);
    api.renewNodeLease('linux-1'); // the kubelets' heartbeats move the revision past what the watch saw
    const { exited } = await api.rollingRestart();
    api.updateNode('linux-2', (n) => void (n.metadata.labels!.x = '1')); // via another apiserver: the draining watch gets it
    await waitFor(() => c.events().length >= 1, 'the event on the draining watch', 5000);
    expect(c.lists()).toHaveLength(1);
    await exited; // the old watch ended cleanly at its timeout; the resume went to the new process
    // Its cache started after the lease's write: the resume from the MODIFIED's revision still works,
    // no 410, no relist; a later event arrives through the new watch.
    api.addNode(peer(3));
    await waitFor(() => c.events().some((e) => e.key === 'linux-3'), 'an event on the new process', 5000);
    expect(c.lists()).toHaveLength(1);
    expect(api.expiredWatches).toBe(0);

    // Without a Node event during the drain, the last resourceVersion the watch saw is older than the
    // new process's cache: 410 there, then a relist.
    api.renewNodeLease('linux-1');
    await api.rollingRestart();
    await waitFor(() => api.expiredWatches === 1, 'a 410 on the new process', 5000);
    await waitFor(() => c.lists().length === 2, 'the relist', 5000);
    expect(c.lists().at(-1)).toEqual(['linux-1', 'linux-2', 'linux-3']);
  });

  it('a clean watch close resumes from the last resourceVersion without a relist', async () => {
    api.addNode(peer(1));
    const c = collect(manager());
    await waitFor(() => c.lists().length === 1 && api.activeWatches === 1, 'condition', 5000);
    api.addNode(peer(2));
    await waitFor(() => c.events().length === 1, 'condition', 5000);
    api.closeWatches();
    await waitFor(() => api.activeWatches === 1, 'rewatch', 5000);
    api.addNode(peer(3));
    await waitFor(() => c.events().length === 2, 'condition', 5000);
    expect(c.lists()).toHaveLength(1);
    const watches = api.requests.filter((r) => r.query.watch === 'true');
    expect(Number(watches.at(-1)!.query.resourceVersion)).toBeGreaterThan(Number(watches[0].query.resourceVersion));
  });

  it('keeps retrying while the API is down at start, and resolves on abort', async () => {
    api.addNode(peer(1));
    await api.stop();
    const ctrl = new AbortController();
    const updates: LeaseUpdate[] = [];
    const sink = logSink('info');
    const done = manager({ log: sink.log }).watchLeases((u) => updates.push(u), ctrl.signal);
    await waitFor(() => backingOff(sink.entries) >= 2, 'two failed lists', 5000);
    expect(updates).toHaveLength(0);
    await api.start();
    await waitFor(() => updates.some((u) => u.kind === 'listed'), 'a complete list after the API came up', 5000);
    ctrl.abort();
    await expect(done).resolves.toBeUndefined();
  });

  it('list pages are followed (limit/continue)', async () => {
    for (let i = 1; i <= 7; i++) api.addNode(peer(i));
    const c = collect(manager({ listPageSize: 3 }));
    await waitFor(() => c.lists().length === 1, 'condition', 5000);
    expect(c.lists()[0]).toHaveLength(7);
    expect(api.requests.filter((r) => r.path === '/api/v1/nodes' && r.query.watch !== 'true')).toHaveLength(3);
    // Each page arrives as it comes, before the complete list's keys.
    expect(c.updates.map((u) => `${u.kind}:${u.kind === 'peers' ? u.peers.length : u.keys.size}`)).toEqual(['peers:3', 'peers:3', 'peers:1', 'listed:7']);
  });

  it('Nodes with wrong-typed fields flannel does not read still count; an object that cannot be read is skipped and counted', async () => {
    const odd = peer(3) as FakeNode & Record<string, unknown>;
    odd.status = { conditions: 'not-a-list', addresses: 7 } as never;
    odd.spec = { ...odd.spec, taints: 5 };
    (odd.metadata as Record<string, unknown>).finalizers = { a: 1 };
    (odd.metadata as Record<string, unknown>).labels = ['x'];
    api.addNode(odd);
    api.addNode(peer(1));
    api.addNode(peer(250, 'vxlan', 'l'.repeat(300)));
    const metrics = new Metrics();
    const c = collect(manager({ metrics }), metrics);
    await waitFor(() => c.lists().length === 1, 'first complete list', 5000);
    expect(c.lists()[0]).toEqual(['linux-1', 'linux-3']);
    expect(await readMetric(metrics, METRIC.kubeObjectsSkipped, { resource: 'nodes', where: 'list' })).toBe(1);
    await waitFor(() => api.activeWatches === 1, 'watch', 5000);
    api.addNode(peer(251, 'vxlan', 'm'.repeat(300)));
    api.updateNode('linux-3', (n) => void (n.metadata.annotations![`${P}public-ip`] = '10.0.0.33'));
    await waitFor(() => c.events().some((e) => e.key === 'linux-3'), 'event after a skipped one', 5000);
    expect(await readMetric(metrics, METRIC.kubeObjectsSkipped, { resource: 'nodes', where: 'watch' })).toBe(1);
    expect(c.lists()).toHaveLength(1);
  });

  it('hostile nodes never break the watch', async () => {
    const c = collect(manager());
    await waitFor(() => c.lists().length === 1 && api.activeWatches === 1, 'condition', 5000);
    const evil = peer(9);
    evil.metadata.annotations![`${P}backend-data`] = 'x'.repeat(100_000);
    evil.spec = { podCIDR: 42 as unknown as string, podCIDRs: [{} as unknown as string, '0.0.0.0/0'] };
    api.addNode(evil);
    api.addNode(peer(1));
    await waitFor(() => c.events().length === 2, 'condition', 5000);
    expect(c.events()[0].lease).toMatchObject({ key: 'linux-9', subnet: '0.0.0.0/0', backendData: undefined });
    expect(c.events()[1].lease).toMatchObject({ key: 'linux-1', subnet: '10.244.1.0/24' });
  });
});

describe('a hung API server: every request has a deadline', () => {
  const LIST = /^\/api\/v1\/nodes\?(?!.*watch=)/;
  const WATCH = /^\/api\/v1\/nodes\?.*watch=true/;
  const peer = (i: number) => linuxFlannelNode({ name: `linux-${i}`, podCIDR: `10.244.${i}.0/24`, publicIP: `10.0.0.${10 + i}`, backendType: 'vxlan' });

  it('own-Node GET that never answers: acquireLease gives up within --node-wait-timeout with a coded error', async () => {
    api.addNode(bareNode({ name: 'win', podCIDR: '10.244.5.0/24' }));
    api.hang('GET', /^\/api\/v1\/nodes\/win$/);
    await expectCode(manager({ timings: { nodeWaitTimeoutMs: 1500, requestTimeoutMs: 300 } }).acquireLease(attrs(VXLAN), signal()), KubeError, 'FLANNEL_ERR_KUBE');
    expect(api.requests.filter((r) => r.path === '/api/v1/nodes/win').length).toBeGreaterThan(1);
    await waitFor(() => api.hangingRequests === 0, 'hung requests abandoned by the client', 2000);
  });

  it('own-Node GET, pod lookup and status patch that hang once are retried', async () => {
    api.addNode(bareNode({ name: 'win', podCIDR: '10.244.5.0/24' }));
    api.addPod(podOnNode({ name: 'p', namespace: 'ns', nodeName: 'win' }));
    api.hang('GET', /pods\/p$/, 'no-answer', 1);
    api.hang('GET', /^\/api\/v1\/nodes\/win$/, 'headers-only', 1);
    api.hang('PATCH', /status$/, 'no-answer', 1);
    const m = manager({ nodeName: undefined, podName: 'p', podNamespace: 'ns', timings: { requestTimeoutMs: 200 } });
    expect((await m.acquireLease(attrs(VXLAN), signal())).subnet).toBe('10.244.5.0/24');
    expect(api.getNode('win')!.metadata.annotations![`${P}kube-subnet-manager`]).toBe('true');
    api.hang('PATCH', /status$/, 'headers-only', 1);
    await m.completeLease({ key: 'win', subnet: '10.244.5.0/24', publicIP: '10.0.0.5', backendType: 'vxlan', backendData: null }, signal());
    expect(patches()).toHaveLength(4);
    expect(api.getNode('win')!.status!.conditions!.map((c) => c.type)).toContain('NetworkUnavailable');
  });

  it('a list page that never answers (or stops after its headers) is abandoned and the list retried', async () => {
    for (let i = 1; i <= 4; i++) api.addNode(peer(i));
    api.hang('GET', LIST, 'no-answer', 1);
    api.hang('GET', LIST, 'headers-only', 1);
    const updates: LeaseUpdate[] = [];
    void manager({ listPageSize: 2, timings: { requestTimeoutMs: 200 } }).watchLeases((u) => updates.push(u), signal());
    await waitFor(() => updates.some((u) => u.kind === 'listed'), 'a complete list after the hung pages', 20_000);
    const listed = updates.find((u): u is Extract<LeaseUpdate, { kind: 'listed' }> => u.kind === 'listed')!;
    expect([...listed.keys].sort()).toEqual(['linux-1', 'linux-2', 'linux-3', 'linux-4']);
    expect(api.requests.filter((r) => LIST.test(`${r.path}?${new URLSearchParams(r.query).toString()}`)).length).toBeGreaterThanOrEqual(4);
  });

  it('a watch that sends headers and then nothing is caught by the silence watchdog and reopened', async () => {
    api.addNode(peer(1));
    api.hang('GET', WATCH, 'headers-only', 1);
    const updates: LeaseUpdate[] = [];
    const m = manager({ timings: { watchTimeoutSeconds: 1, watchSilenceMs: 400 } });
    void m.watchLeases((u) => updates.push(u), signal());
    await waitFor(() => updates.some((u) => u.kind === 'listed') && api.hangingRequests === 1, 'a silent watch', 5000);
    await waitFor(() => api.activeWatches === 1, 'a new watch after the silent one', 5000);
    expect(api.hangingRequests).toBe(0);
    const lists = updates.filter((u) => u.kind === 'listed').length;
    api.addNode(peer(2));
    const added = (u: LeaseUpdate) => u.kind === 'peers' && u.peers.some((p) => p.key === 'linux-2' && p.lease !== undefined);
    await waitFor(() => updates.some(added), 'event through the new watch', 5000);
    // Through the watch: no list completed since the new watch opened.
    expect(updates.filter((u) => u.kind === 'listed').length).toBe(lists);
    const watches = api.requests.filter((r) => r.query.watch === 'true');
    expect(watches[0].query).toMatchObject({ allowWatchBookmarks: 'true', timeoutSeconds: '1' });
  });

  it('while every Node request hangs, nothing is emitted (the dataplane is left as it is)', async () => {
    api.addNode(peer(1));
    const updates: LeaseUpdate[] = [];
    void manager({ timings: { requestTimeoutMs: 200, watchSilenceMs: 300 } }).watchLeases((u) => updates.push(u), signal());
    await waitFor(() => updates.length === 2 && api.activeWatches === 1, 'synced (the page, then the keys listed)', 5000);
    const before = api.requests.length;
    api.hang('GET', /^\/api\/v1\/nodes/);
    api.closeWatches();
    api.deleteNode('linux-1');
    // Wait on what the manager does (two Node requests made and left hanging past their deadline),
    // not on the clock; the backoff between rounds (client-go's reflector) paces them.
    await waitFor(() => api.requests.slice(before).filter((r) => r.method === 'GET' && r.path === '/api/v1/nodes').length >= 2, 'two hung Node requests', 10_000);
    expect(updates).toHaveLength(2);
    api.unhang();
    // After the hang the manager relists or resumes its watch: either way linux-1's deletion arrives.
    const removed = (u: LeaseUpdate) => (u.kind === 'listed' ? !u.keys.has('linux-1') : u.peers.some((p) => p.key === 'linux-1' && p.lease === undefined));
    await waitFor(() => updates.slice(2).some(removed), 'linux-1 removed after the hang', 10_000);
  });
});

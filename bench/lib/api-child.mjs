// The fake API server in its own process, driven over IPC by the benchmarks. It also generates the
// churn itself (timers here, so the agent's process does nothing but be the agent) and reports the
// wall-clock time of every change it made.
/* global performance, setImmediate */
import { FakeKubeApiServer, bareNode, linuxFlannelNode, writeKubeconfig } from '../../dist/demo/kube-fake/api-server.js';
import { peer } from './common.mjs';

const api = new FakeKubeApiServer();
const wallNow = () => performance.timeOrigin + performance.now();
let backend = 'vxlan';
let churnStop = false;

const IMAGES = Array.from({ length: 30 }, (_, k) => ({
  names: [`registry.k8s.io/example/image-${k}@sha256:${'0123456789abcdef'.repeat(4)}`, `registry.k8s.io/example/image-${k}:v1.${k}.0`],
  sizeBytes: 10_000_000 + k * 1_000_003,
}));

/**
 * A Node as big as a real one: labels, capacity/allocatable, nodeInfo, 5 conditions, 30 images and
 * managedFields (about 8 KB of JSON), on top of upstream flanneld's annotations.
 */
function realisticNode(p) {
  const n = linuxFlannelNode({ name: p.name, podCIDR: p.subnet, publicIP: p.publicIP, backendType: backend });
  const t = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  Object.assign(n.metadata.labels, {
    'beta.kubernetes.io/arch': 'amd64',
    'beta.kubernetes.io/os': 'linux',
    'kubernetes.io/arch': 'amd64',
    'node.kubernetes.io/instance-type': 'Standard_D4s_v5',
    'topology.kubernetes.io/region': 'westeurope',
    'topology.kubernetes.io/zone': `westeurope-${(p.name.length % 3) + 1}`,
    'node-role.kubernetes.io/worker': '',
  });
  n.metadata.annotations['node.alpha.kubernetes.io/ttl'] = '0';
  n.metadata.annotations['volumes.kubernetes.io/controller-managed-attach-detach'] = 'true';
  n.metadata.managedFields = ['kubelet', 'kube-controller-manager', 'flanneld'].map((manager) => ({
    manager,
    operation: 'Update',
    apiVersion: 'v1',
    time: t,
    fieldsType: 'FieldsV1',
    fieldsV1: {
      'f:metadata': {
        'f:annotations': { '.': {}, 'f:node.alpha.kubernetes.io/ttl': {} },
        'f:labels': { '.': {}, 'f:kubernetes.io/arch': {}, 'f:kubernetes.io/hostname': {}, 'f:kubernetes.io/os': {} },
      },
      'f:status': { 'f:conditions': { 'k:{"type":"Ready"}': { '.': {}, 'f:lastHeartbeatTime': {}, 'f:status': {} } } },
    },
  }));
  const res = { cpu: '4', 'ephemeral-storage': '129886128Ki', 'hugepages-1Gi': '0', 'hugepages-2Mi': '0', memory: '16393232Ki', pods: '110' };
  n.status.capacity = res;
  n.status.allocatable = { ...res, cpu: '3860m', memory: '12879888Ki' };
  n.status.conditions = [
    ...['MemoryPressure', 'DiskPressure', 'PIDPressure'].map((type) => ({
      type,
      status: 'False',
      lastHeartbeatTime: t,
      lastTransitionTime: t,
      reason: `KubeletHas${type === 'PIDPressure' ? 'SufficientPID' : 'No' + type}`,
      message: `kubelet has no ${type}`,
    })),
    ...n.status.conditions,
  ];
  n.status.addresses.push({ type: 'Hostname', address: p.name });
  n.status.daemonEndpoints = { kubeletEndpoint: { Port: 10250 } };
  n.status.nodeInfo = {
    machineID: 'f'.repeat(32),
    systemUUID: '00000000-0000-0000-0000-000000000000',
    bootID: '11111111-2222-3333-4444-555555555555',
    kernelVersion: '5.15.0-1064-azure',
    osImage: 'Ubuntu 22.04.4 LTS',
    containerRuntimeVersion: 'containerd://1.7.15',
    kubeletVersion: 'v1.30.3',
    kubeProxyVersion: 'v1.30.3',
    operatingSystem: 'linux',
    architecture: 'amd64',
  };
  n.status.images = IMAGES;
  return n;
}

function addPeer(i) {
  const p = peer(i);
  api.addNode(realisticNode(p));
  return p;
}

function heartbeat(name) {
  const t = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  api.updateNode(name, (n) => {
    const c = n.status?.conditions?.find((x) => x.type === 'Ready');
    if (c) c.lastHeartbeatTime = t;
    n.status.allocatable = { cpu: '4', memory: `${Math.floor(Math.random() * 1e6)}Ki` };
  });
}

/**
 * Churn for `durationMs`: `addDelPerSec` node changes per second alternating delete-oldest / add-new
 * (the set of peers stays the same size), plus `statusPerSec` status-only updates of random live peers.
 */
async function churn({ addDelPerSec, statusPerSec, durationMs, live }) {
  churnStop = false;
  const alive = [...live];
  let next = Math.max(...alive) + 1;
  const events = [];
  let statusUpdates = 0;
  const start = wallNow();
  let adNext = addDelPerSec > 0 ? start : Infinity;
  let stNext = statusPerSec > 0 ? start : Infinity;
  let flip = 0;
  const adGap = addDelPerSec > 0 ? 1000 / addDelPerSec : Infinity;
  const stGap = statusPerSec > 0 ? 1000 / statusPerSec : Infinity;
  while (!churnStop && wallNow() - start < durationMs) {
    const now = wallNow();
    while (adNext <= now) {
      if (flip++ % 2 === 0) {
        const i = alive.shift();
        const p = peer(i);
        api.deleteNode(p.name);
        events.push({ type: 'remove', prefix: p.subnet, t: wallNow() });
      } else {
        const i = next++;
        const p = addPeer(i);
        alive.push(i);
        events.push({ type: 'add', prefix: p.subnet, t: wallNow() });
      }
      adNext += adGap;
    }
    while (stNext <= now) {
      heartbeat(peer(alive[Math.floor(Math.random() * alive.length)]).name);
      statusUpdates++;
      stNext += stGap;
    }
    const wait = Math.max(0, Math.min(adNext, stNext) - wallNow());
    await new Promise((r) => setTimeout(r, Math.min(wait, 50)));
  }
  return { events, statusUpdates, alive, durationMs: wallNow() - start };
}

const handlers = {
  async start() {
    await api.start();
    return { url: api.url };
  },
  async stop() {
    await api.stop();
    return { t: wallNow() };
  },
  async kubeconfig({ path }) {
    await writeKubeconfig(path, api.url);
  },
  addOwn({ name, podCIDR, ip }) {
    api.addNode(bareNode({ name, podCIDR, internalIP: ip }));
  },
  populate({ from, count, backend: b }) {
    backend = b ?? backend;
    for (let i = from; i < from + count; i++) addPeer(i);
    return { nodes: count };
  },
  addPeers({ ids }) {
    for (const i of ids) addPeer(i);
    return { t: wallNow() };
  },
  deletePeers({ ids }) {
    for (const i of ids) api.deleteNode(peer(i).name);
    return { t: wallNow() };
  },
  heartbeat({ ids }) {
    for (const i of ids) heartbeat(peer(i).name);
    return { t: wallNow() };
  },
  compact({ closeWatches }) {
    api.compact({ closeWatches });
    return { t: wallNow(), expiredWatches: api.expiredWatches };
  },
  nodeBytes() {
    return { bytes: Buffer.byteLength(JSON.stringify(realisticNode(peer(1)))) };
  },
  stats() {
    return { expiredWatches: api.expiredWatches, activeWatches: api.activeWatches, requests: api.requests.length, running: api.running };
  },
  clearRequests() {
    api.clearRequests();
  },
  churn,
  async exit() {
    await api.stop();
    setImmediate(() => process.exit(0));
  },
};

// The request log grows without bound in long runs; keep it short.
setInterval(() => {
  if (api.requests.length > 10_000) api.clearRequests();
}, 1000).unref();

process.on('message', async (m) => {
  try {
    const result = await handlers[m.cmd](m.args ?? {});
    process.send({ id: m.id, ok: true, result });
  } catch (err) {
    process.send({ id: m.id, ok: false, error: err instanceof Error ? err.stack : String(err) });
  }
});
process.on('disconnect', () => process.exit(0));

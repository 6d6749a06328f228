// The fake API server in its own process, driven over IPC by the benchmarks. It also generates the
// churn itself (timers here, so the agent's process does nothing but be the agent) and reports the
// wall-clock time of every change it made.
/* global performance, setImmediate */
import { readFileSync } from 'node:fs';
import { FakeKubeApiServer, bareNode, writeKubeconfig } from '../../dist/demo/kube-fake/api-server.js';
import { peer } from './common.mjs';
import { apiTime, heartbeat as kubeletHeartbeat, realisticNode, rejectedNode } from './nodes.mjs';

/** Made by the first `start` (https with a bearer token when it names a certificate, key and token). */
let api;
let auth = {};
const wallNow = () => performance.timeOrigin + performance.now();
let backend = 'vxlan';
/** `vni1` or `hostile`: the peers are Nodes every Windows agent rejects (nodes.mjs rejectedNode). */
let rejected;
let churnStop = false;
/**
 * The peers churn changes, oldest first (those `populate` added, then churn's own adds), and the next
 * peer's number. Kept here, not sent with each `churn` call: the list is O(Nodes), and sending it to this
 * process and back cost the agent's process about 5 ms a phase at 20,000 Nodes (docs/performance.md, "The
 * idle rate at 20,000 and 50,000 Nodes (session 12)").
 */
const alive = [];
let next = 1;

function addPeer(i) {
  const p = peer(i);
  api.addNode(rejected ? rejectedNode(i, p, backend, rejected) : realisticNode(i, p, backend));
  return p;
}

/** A kubelet status heartbeat: only timestamps change (and the resourceVersion the store bumps). */
function heartbeat(name) {
  const t = apiTime(Date.now());
  api.updateNode(name, (n) => kubeletHeartbeat(n, t));
}

/**
 * Churn for `durationMs`: `addDelPerSec` node changes per second alternating delete-oldest / add-new
 * (the set of peers stays the same size), plus `statusPerSec` status-only updates of random live peers.
 */
async function churn({ addDelPerSec, statusPerSec, durationMs }) {
  churnStop = false;
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
  return { events, statusUpdates, durationMs: wallNow() - start };
}

const handlers = {
  /** `tls`: {certFile, keyFile, token} to serve https and require `Authorization: Bearer <token>`. */
  async start({ tls } = {}) {
    if (!api) {
      auth = tls ? { token: tls.token, caFile: tls.certFile } : {};
      api = new FakeKubeApiServer(tls ? { bearerToken: tls.token, tls: { cert: readFileSync(tls.certFile), key: readFileSync(tls.keyFile) } } : {});
    }
    await api.start();
    return { url: api.url };
  },
  async stop() {
    await api.stop();
    return { t: wallNow() };
  },
  async kubeconfig({ path }) {
    await writeKubeconfig(path, api.url, auth);
  },
  addOwn({ name, podCIDR, ip }) {
    api.addNode(bareNode({ name, podCIDR, internalIP: ip }));
  },
  populate({ from, count, backend: b, rejected: how }) {
    backend = b ?? backend;
    rejected = how;
    for (let i = from; i < from + count; i++) {
      addPeer(i);
      alive.push(i);
    }
    next = Math.max(next, from + count);
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
  /** Objects of a listed resource (the NetworkPolicy benchmark's namespaces, pods, networkpolicies): each an ADDED event. */
  addObjects({ resource, objects }) {
    for (const o of objects) api.addObject(resource, o);
    return { t: wallNow() };
  },
  /** Replace objects (`namespace/name` or `name` keys from their metadata): each a MODIFIED event. */
  putObjects({ resource, objects }) {
    for (const o of objects) api.updateObject(resource, o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : o.metadata.name, () => o);
    return { t: wallNow() };
  },
  nodeBytes() {
    return { bytes: Buffer.byteLength(JSON.stringify(realisticNode(1, peer(1), backend))) };
  },
  /** One peer Node as the API server holds it (the watch-decode benchmark's sample). */
  sampleNode({ i = 1 }) {
    return { node: api.getNode(peer(i).name) ?? realisticNode(i, peer(i), backend) };
  },
  stats() {
    return { expiredWatches: api.expiredWatches, activeWatches: api.activeWatches, requests: api.requests.length, running: api.running };
  },
  clearRequests() {
    api.clearRequests();
  },
  churn,
  /** The peers churn left (its list, not the store's: peers added or deleted by `addPeers`/`deletePeers` are not in it). */
  alive() {
    return { alive };
  },
  async exit() {
    await api?.stop();
    setImmediate(() => process.exit(0));
  },
};

// The request log grows without bound in long runs; keep it short.
setInterval(() => {
  if (api && api.requests.length > 10_000) api.clearRequests();
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

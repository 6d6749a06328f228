// The NetworkPolicy benchmark's measured process (bench/netpol.mjs), started with the runtime flags
// flanneld.exe ships with and --expose-gc, driven over IPC. Modes (argv[2]):
// - `controller`: the NetworkPolicy controller (dist/policy/controller.js) as --network-policy runs it: its
//   three list-watches over HTTP to the fake API server and a simulated node's HNS (in this process, as the
//   agent's simulated dataplane is) holding the network and one endpoint per local pod (CNI ADD ran before);
// - `watch`: the same three list-watches into the same cluster cache, nothing computed or written (what
//   the controller's CPU per event is compared with);
// - `informer`: client-node's informers on the same three resources (what its RSS is compared with).
// Every HNS write is counted by the entries it carries (ACL rules, IP sets), and beside it the entries a
// whole-list rewrite would write for the same change (felix's endpoint_mgr.go applies an endpoint's whole
// ACL list again on every change, IP sets flattened into it): every endpoint whose rules or whose named
// sets' members changed, its whole list.
/* global performance */
const [mode, kubeconfig, localArg] = process.argv.slice(2);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const { settledMemory } = await import('./settle.mjs');

let ctl;
let cache;
let informers;
const writes = { entries: 0, requests: 0, rewrite: 0 };
let snapshot = { lists: new Map(), sets: new Map() };

/**
 * endpoint -> its rules and the IP sets they name, and the sets' members, as a whole-list engine would write
 * them: an endpoint's list is rewritten when its rules change or a set it names changes its members. Sets are
 * compared by their members, not expanded into every rule naming them (the counting is the bench's, not the
 * controller's, yet it runs in the measured process: expanded, it was a large part of the CPU per event).
 */
function desiredLists() {
  const items = ctl.rules.desiredItems();
  const sets = new Map(items.filter((i) => i.kind === 'set').map((i) => [i.set.Id, i.set.Values]));
  const lists = new Map();
  for (const i of items) {
    if (i.kind !== 'acl') continue;
    const l = lists.get(i.endpoint) ?? { rules: [], named: [] };
    for (const a of [i.rule.LocalAddresses, i.rule.RemoteAddresses].flatMap((f) => (f ?? '').split(','))) if (sets.has(a)) l.named.push(a);
    l.rules.push(i.rule.Id);
    lists.set(i.endpoint, l);
  }
  for (const l of lists.values()) l.rules.sort();
  return { lists, sets };
}

function countRewrite() {
  const next = desiredLists();
  for (const [ep, l] of next.lists) {
    const before = snapshot.lists.get(ep);
    const same = before !== undefined && before.rules.join('\n') === l.rules.join('\n') && l.named.every((id) => snapshot.sets.get(id) === next.sets.get(id));
    if (!same) writes.rewrite += l.rules.length;
  }
  snapshot = next;
}

async function startController() {
  const { systemClock, systemRandom } = await import('../../dist/basics/clock.js');
  const { silentLogger } = await import('../../dist/basics/log.js');
  const { Metrics } = await import('../../dist/basics/metrics.js');
  const { HnsClient } = await import('../../dist/hns/client.js');
  const { buildKubeConfig } = await import('../../dist/kube/client.js');
  const { KubeHttp } = await import('../../dist/kube/http.js');
  const { NetpolController } = await import('../../dist/policy/controller.js');
  const { netpolSources } = await import('../../dist/policy/sources.js');
  const { SimulatedHnsTransport } = await import('../../dist/simulator/hns.js');
  const { SimulatedDataplane } = await import('../../dist/simulator/model.js');
  const local = Number(localArg);
  const dp = new SimulatedDataplane();
  const hns = new HnsClient(new SimulatedHnsTransport(dp));
  const V2 = { Major: 2, Minor: 0 };
  const net = await hns.createNetwork({ Name: 'cbr0', Type: 'L2Bridge', SchemaVersion: V2, Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: '10.128.0.0/24' }] }] });
  for (let i = 0; i < local; i++) await hns.createEndpoint(net.ID, { Name: `pod-${i}`, SchemaVersion: V2, IpConfigurations: [{ IpAddress: `10.128.0.${10 + i}` }] });
  for (const [op, field] of [
    ['addEndpointAcls', 1],
    ['removeEndpointAcls', 1],
    ['addSetPolicies', 1],
    ['updateSetPolicies', 1],
    ['removeSetPolicies', 1],
  ]) {
    const orig = hns[op].bind(hns);
    hns[op] = (id, list, ...rest) => {
      writes.requests++;
      writes.entries += list.length * field;
      return orig(id, list, ...rest);
    };
  }
  const http = new KubeHttp(buildKubeConfig({ kubeconfigFile: kubeconfig, kubeApiUrl: '' }), systemClock);
  const metrics = new Metrics();
  const log = silentLogger();
  const sources = netpolSources({
    http,
    timings: { requestTimeoutMs: 60_000, relistBackoff: { initialMs: 200, capMs: 5000 }, watchTimeoutSeconds: 300 },
    listPageSize: 500,
    log,
    metrics,
    clock: systemClock,
    random: systemRandom,
  });
  if (mode === 'watch') {
    const { ClusterCache } = await import('../../dist/policy/cluster.js');
    cache = new ClusterCache();
    const signal = new AbortController().signal;
    void sources.namespaces.run(cache.namespaces.handler(), signal);
    void sources.pods.run(cache.pods.handler(), signal);
    void sources.policies.run(cache.policies.handler(), signal);
    return;
  }
  ctl = new NetpolController({ hns, nodeName: 'win-bench-0', networkName: () => 'cbr0', nodeIPs: () => ['172.31.255.2'], sources, clock: systemClock, log, metrics });
  void ctl.run(new AbortController().signal);
}

async function startInformers() {
  const { CoreV1Api, NetworkingV1Api, KubeConfig, makeInformer } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const core = kc.makeApiClient(CoreV1Api);
  const net = kc.makeApiClient(NetworkingV1Api);
  informers = [
    makeInformer(kc, '/api/v1/namespaces', () => core.listNamespace()),
    makeInformer(kc, '/api/v1/pods', () => core.listPodForAllNamespaces()),
    makeInformer(kc, '/apis/networking.k8s.io/v1/networkpolicies', () => net.listNetworkPolicyForAllNamespaces()),
  ];
  for (const i of informers) {
    i.on('error', () => undefined);
    await i.start();
  }
}

/** Until the controller (or the cache, or the informers) holds `want` objects and, for the controller, wrote everything. */
async function synced({ pods, namespaces, policies, local }) {
  const t = performance.now();
  for (;;) {
    if (mode === 'informer') {
      const [n, p, np] = informers.map((i) => i.list().length);
      if (n >= namespaces && p >= pods && np >= policies) break;
    } else if (mode === 'watch') {
      if (cache.synced && cache.pods.items.size >= pods && cache.policies.items.size >= policies) break;
    } else {
      const s = ctl.status();
      if (s.inSync && ctl.cluster.pods.items.size >= pods && ctl.cluster.policies.items.size >= policies && s.pods.length >= local && s.endpointsWithoutRules.length === 0) break;
    }
    await sleep(5);
  }
  return { ms: performance.now() - t };
}

const version = () => (mode === 'watch' ? cache.version : ctl.cluster.version);

const handlers = {
  async start() {
    if (mode === 'informer') await startInformers();
    else await startController();
    return { cpu: process.cpuUsage() };
  },
  synced,
  version: () => ({ version: version() }),
  /** After the cluster cache saw `events` more events than at `from`: (controller) until in sync again. */
  async settled({ from, events }) {
    while (version() < from + events) await sleep(1);
    if (ctl) {
      while (!ctl.status().inSync) await sleep(1);
      countRewrite();
    }
    return { version: version() };
  },
  snapshot() {
    countRewrite();
    writes.rewrite = 0;
    writes.entries = 0;
    writes.requests = 0;
    return {};
  },
  writes: () => ({ ...writes, rules: ctl ? ctl.rules.size : undefined }),
  cpu: () => process.cpuUsage(),
  memory: () => settledMemory(),
  exit() {
    setTimeout(() => process.exit(0), 10);
    return {};
  },
};

process.on('message', async (m) => {
  try {
    process.send({ id: m.id, ok: true, result: await handlers[m.cmd](m.args ?? {}) });
  } catch (err) {
    process.send({ id: m.id, ok: false, error: err instanceof Error ? err.stack : String(err) });
  }
});
process.on('disconnect', () => process.exit(0));

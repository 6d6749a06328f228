// The same-run "least writer" of the churn benchmark: the bare client-node Watch of lib/watch-child.mjs
// plus only the work a node event needs on a Windows vxlan node, in its own process. flannel's vxlan
// backend on Windows (pkg/backend/vxlan/vxlan_network_windows.go, handleSubnetEvents) turns each lease
// added or removed into one RemoteSubnetRoute network policy (hcsshim hcn/hcnpolicy.go
// RemoteSubnetRoutePolicySetting: DestinationPrefix, IsolationId, ProviderAddress,
// DistributedRouterMacAddress) added to or removed from the Overlay network through HcnModifyNetwork. So
// per event this program keeps the least state that tells a lease change from a heartbeat (a Map of Node
// name -> podCIDR, public-ip, backend-data; flannel's kube subnet manager reads the same three), and on
// ADDED, DELETED, or a MODIFIED that changes one of them, builds the request the agent sends (the agent's
// own policy encoder, dist/backends/vxlan/policies.js, in the request HnsClient writes) and awaits it on
// the simulated HNS transport with the agent's latency model, through a network handle kept open as the
// agent keeps its own. Nothing else: no validation, no retries, no call timeout, no metrics, no logs. The
// simulated HNS's CPU is timed as the agent's is (lib/sim-hns-cpu.mjs) and answered with the process's.
// Arguments: kubeconfig, then JSON {nodeIP, nodePrefixLength, subnet, ownNode, vni, latency}. Over IPC it answers
// {probe: 'cpu'} with its process.cpuUsage(), the watch events it has handled (as lib/watch-child.mjs
// counts them, each once its write returned), its writes and the simulated HNS's CPU ms.
import { CoreV1Api, KubeConfig, Watch } from '@kubernetes/client-node';
import { overlayNetworkFor } from '../../dist/backends/vxlan/backend.js';
import { POLICY_BATCH, remoteSubnetRouteFor } from '../../dist/backends/vxlan/policies.js';
import { SimulatedHnsTransport } from '../../dist/simulator/hns.js';
import { SimulatedDataplane } from '../../dist/simulator/model.js';
import { DEFAULT_VXLAN_PORT } from '../../dist/subnet/net-conf-types.js';
import { timeSimulatedHns } from './sim-hns-cpu.mjs';

const [kubeconfig, optsJson] = process.argv.slice(2);
const opts = JSON.parse(optsJson);
const PREFIX = 'flannel.alpha.coreos.com/';
const sim = new SimulatedDataplane({ nodeIP: opts.nodeIP, nodePrefixLength: opts.nodePrefixLength, latency: opts.latency });
const hns = new SimulatedHnsTransport(sim);
const network = await hns.createNetwork('', JSON.stringify(overlayNetworkFor({ name: `flannel.${opts.vni}`, vni: opts.vni, port: DEFAULT_VXLAN_PORT }, opts.subnet, '')));

/** The fields of a Node that make its lease; undefined for a Node that holds none (no podCIDR or annotations). */
function leaseFields(node) {
  const a = node?.metadata?.annotations;
  const subnet = node?.spec?.podCIDR;
  if (!a || !subnet) return undefined;
  return { subnet, publicIP: a[`${PREFIX}public-ip`], backendData: a[`${PREFIX}backend-data`] };
}
const same = (x, y) => x.subnet === y.subnet && x.publicIP === y.publicIP && x.backendData === y.backendData;
/** The HcnModifyNetwork request HnsClient writes (src/hns/client.ts modifyPolicies) for these leases. */
function request(requestType, fields) {
  const policies = fields.map((f) => remoteSubnetRouteFor({ subnet: f.subnet, publicIP: f.publicIP, backendData: JSON.parse(f.backendData) }));
  return JSON.stringify({ ResourceType: 'Policy', RequestType: requestType, Settings: { Policies: policies } });
}

// The initial state: the Nodes listed in pages, their policies written in the agent's batches.
const leases = new Map();
const api = new KubeConfig();
api.loadFromFile(kubeconfig);
const core = api.makeApiClient(CoreV1Api);
let resourceVersion;
let cont;
do {
  const page = await core.listNode({ limit: 500, _continue: cont });
  resourceVersion ??= page.metadata?.resourceVersion;
  cont = page.metadata?._continue;
  for (const node of page.items) {
    const f = leaseFields(node);
    if (f && node.metadata.name !== opts.ownNode) leases.set(node.metadata.name, f);
  }
} while (cont);
const all = [...leases.values()];
for (let i = 0; i < all.length; i += POLICY_BATCH) await hns.modifyNetwork(network, request('Add', all.slice(i, i + POLICY_BATCH)));

const hnsCpu = timeSimulatedHns(sim);
let events = 0;
let writes = 0;
let failures = 0;
let chain = Promise.resolve();
/** One write awaited after the ones before it: lease events apply in order, as flannel's event channel does. */
function write(requestType, f) {
  writes++;
  chain = chain.then(() => hns.modifyNetwork(network, request(requestType, [f]))).catch(() => failures++);
  return chain;
}
function onEvent(type, obj) {
  resourceVersion = obj?.metadata?.resourceVersion ?? resourceVersion;
  if (type === 'BOOKMARK') return; // not counted, as lib/watch-child.mjs does not
  const name = obj?.metadata?.name;
  if (!name || name === opts.ownNode) {
    events++;
    return;
  }
  const had = leases.get(name);
  let done;
  if (type === 'DELETED') {
    if (had) {
      leases.delete(name);
      done = write('Remove', had);
    }
  } else {
    const f = leaseFields(obj);
    if (f && !(had && same(had, f))) {
      leases.set(name, f);
      if (had) write('Remove', had);
      done = write('Add', f);
    } else if (!f && had) {
      leases.delete(name);
      done = write('Remove', had);
    }
  }
  if (done) done.then(() => events++);
  else events++;
}

const watch = new Watch(api);
const start = () => watch.watch('/api/v1/nodes', { resourceVersion, allowWatchBookmarks: true }, onEvent, () => setTimeout(start, 100));
await start();
process.on('message', (m) => {
  if (m?.probe === 'cpu') process.send({ probe: 'cpu', ...process.cpuUsage(), events, writes, failures, simStoreMs: hnsCpu.storeMs(), simCallMs: hnsCpu.callMs() });
});
process.send({ ready: true, leases: leases.size });
process.on('disconnect', () => process.exit(0));

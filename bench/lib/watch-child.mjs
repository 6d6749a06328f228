// The same-run CPU baseline of the churn benchmark: a bare client-node Watch on /api/v1/nodes in its
// own process, from the current resourceVersion, that only counts the events it decodes. It is the floor
// of any agent that consumes the Node watch (HTTP + one JSON.parse per event). Over IPC it answers
// {probe: 'cpu'} with its process.cpuUsage() and event count.
// With `--keep-peers` it is the floor of an agent that keeps its peers: it lists every Node first (pages of
// 500, as client-go's pager) into the least a peer-keeping agent holds, a Map of name -> {podCIDR, public IP,
// VtepMAC}, and on each event reads those fields and replaces the entry only when one changed (a status-only
// update is read and dropped). Its heap holds the peers as the agent's does (docs/performance.md, session 13).
import { CoreV1Api, KubeConfig, Watch } from '@kubernetes/client-node';

const [kubeconfig, mode] = process.argv.slice(2);
const keepPeers = mode === '--keep-peers';
const kc = new KubeConfig();
kc.loadFromFile(kubeconfig);
const api = kc.makeApiClient(CoreV1Api);
/** The fields an agent routes by (flannel's kube subnet manager: spec.podCIDR and its two annotations). */
const peerOf = (node) => {
  const a = node?.metadata?.annotations ?? {};
  let vtepMAC = '';
  try {
    vtepMAC = JSON.parse(a['flannel.alpha.coreos.com/backend-data'] ?? '{}')?.VtepMAC ?? '';
  } catch {
    // an unreadable backend-data is no MAC
  }
  return { podCIDR: node?.spec?.podCIDR ?? '', publicIP: a['flannel.alpha.coreos.com/public-ip'] ?? '', vtepMAC };
};
const peers = new Map();
const keep = (type, node) => {
  const name = node?.metadata?.name;
  if (!name) return;
  if (type === 'DELETED') return void peers.delete(name);
  const p = peerOf(node);
  const had = peers.get(name);
  if (!had || had.podCIDR !== p.podCIDR || had.publicIP !== p.publicIP || had.vtepMAC !== p.vtepMAC) peers.set(name, p);
};
let list = await api.listNode({ limit: keepPeers ? 500 : 1 });
if (keepPeers) {
  for (;;) {
    for (const node of list.items) keep('ADDED', node);
    if (!list.metadata?._continue) break;
    list = await api.listNode({ limit: 500, _continue: list.metadata._continue });
  }
}
let events = 0;
let resourceVersion = list.metadata?.resourceVersion;
const watch = new Watch(kc);
const start = () =>
  watch.watch(
    '/api/v1/nodes',
    { resourceVersion, allowWatchBookmarks: true },
    (type, obj) => {
      events++;
      resourceVersion = obj?.metadata?.resourceVersion ?? resourceVersion;
      if (keepPeers && type !== 'BOOKMARK') keep(type, obj);
    },
    () => setTimeout(start, 100),
  );
await start();
process.on('message', (m) => {
  if (m?.probe === 'cpu') process.send({ probe: 'cpu', ...process.cpuUsage(), events, peers: peers.size });
});
process.send({ ready: true });
process.on('disconnect', () => process.exit(0));

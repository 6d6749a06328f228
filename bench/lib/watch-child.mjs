// The same-run CPU baseline of the churn benchmark: a bare client-node Watch on /api/v1/nodes in its
// own process, from the current resourceVersion, that only counts the Node events it decodes (not
// bookmarks). It is the floor of any agent that consumes the Node watch (HTTP + one JSON.parse per event).
// Over IPC it answers {probe: 'cpu'} with its process.cpuUsage() and event count.
import { CoreV1Api, KubeConfig, Watch } from '@kubernetes/client-node';

const [kubeconfig] = process.argv.slice(2);
const kc = new KubeConfig();
kc.loadFromFile(kubeconfig);
const list = await kc.makeApiClient(CoreV1Api).listNode({ limit: 1 });
let events = 0;
let resourceVersion = list.metadata?.resourceVersion;
const watch = new Watch(kc);
const start = () =>
  watch.watch(
    '/api/v1/nodes',
    { resourceVersion, allowWatchBookmarks: true },
    (type, obj) => {
      resourceVersion = obj?.metadata?.resourceVersion ?? resourceVersion;
      // A bookmark is no Node event, and comes to each watch on its own minute: counted, it set this count
      // apart from the least writer's, and the churn's drains waited for the other's (docs/performance.md,
      // "The churn benchmark at 50,000 Nodes: phases that wait (session 16)").
      if (type !== 'BOOKMARK') events++;
    },
    () => setTimeout(start, 100),
  );
await start();
process.on('message', (m) => {
  if (m?.probe === 'cpu') process.send({ probe: 'cpu', ...process.cpuUsage(), events });
});
process.send({ ready: true });
process.on('disconnect', () => process.exit(0));

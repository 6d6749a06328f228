// The informer baseline of the memory benchmark, in a fresh process (spawned with --expose-gc):
// client-node's informer on /api/v1/nodes until it holds every node, then full GCs, a pause, and
// process.memoryUsage() printed as one JSON line. (The agent side is the real CLI: lib/cli-agent.mjs.)
/* global performance */
const [mode, kubeconfig, expectArg] = process.argv.slice(2);
const expect = Number(expectArg);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const { settledMemory } = await import('./settle.mjs');
const { typedListNodes } = await import('./typed-list.mjs');

async function informerMode() {
  const { CoreV1Api, KubeConfig, makeInformer } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const api = kc.makeApiClient(CoreV1Api);
  const t = performance.now();
  const informer = makeInformer(kc, '/api/v1/nodes', () => typedListNodes(api, expect));
  informer.on('error', () => undefined);
  await informer.start();
  while (informer.list().length < expect + 1) await sleep(10);
  const syncMs = performance.now() - t;
  const mem = await settledMemory();
  const held = informer.list().length - 1;
  return { held, syncMs, ...mem };
}

try {
  if (mode !== 'informer') throw new Error(`unknown mode ${mode}`);
  const out = await informerMode();
  process.stdout.write(JSON.stringify(out) + '\n');
  process.exit(0);
} catch (err) {
  process.stderr.write(`mem-child ${mode}: ${err instanceof Error ? err.stack : err}\n`);
  process.exit(2);
}

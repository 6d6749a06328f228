// One Node list in a fresh process (so RSS figures do not mix): `raw` pages through KubeHttp, each
// Node's status and managedFields cut before the parse, and projects each Node to its lease record
// (what the agent does: src/subnet/kube/node-list-watch.ts nodeListFn); `typed` is client-node's
// CoreV1Api.listNode with the same page size (the typed model). Prints one JSON line.
/* global performance */
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { systemClock } from '../../dist/basics/clock.js';
import { KubeHttp } from '../../dist/kube/http.js';
import { DEFAULT_ANNOTATION_PREFIX, normalizeAnnotationPrefix } from '../../dist/config/annotation-prefix.js';
import { annotationKeys } from '../../dist/subnet/kube/annotations.js';
import { NODE_LIST_UNREAD, projectNode } from '../../dist/subnet/kube/node-list-watch.js';

const [kubeconfig, mode, limitText] = process.argv.slice(2);
const limit = Number(limitText);
const kc = new KubeConfig();
kc.loadFromFile(kubeconfig);
const keys = annotationKeys(normalizeAnnotationPrefix(DEFAULT_ANNOTATION_PREFIX));
let peak = process.memoryUsage().rss;
const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 2);
const rssBefore = process.memoryUsage().rss;
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const records = new Map();
let pages = 0;
if (mode === 'raw') {
  const http = new KubeHttp(kc, systemClock);
  const signal = new AbortController().signal;
  let cont;
  do {
    const page = await http.json({ method: 'GET', path: '/api/v1/nodes', query: { limit, continue: cont }, timeoutMs: 60_000, signal, unread: NODE_LIST_UNREAD });
    pages++;
    for (const item of page.items) {
      const rec = projectNode(item, keys);
      if (rec) records.set(rec.name, rec);
    }
    cont = page.metadata.continue || undefined;
  } while (cont);
} else {
  const api = kc.makeApiClient(CoreV1Api);
  let cont;
  do {
    const page = await api.listNode({ limit, _continue: cont });
    pages++;
    for (const item of page.items) {
      const rec = projectNode(item, keys);
      if (rec) records.set(rec.name, rec);
    }
    cont = page.metadata?._continue || undefined;
  } while (cont);
}
const ms = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
clearInterval(sampler);
peak = Math.max(peak, process.memoryUsage().rss);
globalThis.gc?.();
const rssAfter = process.memoryUsage().rss;
console.log(
  JSON.stringify({ mode, limit, pages, nodes: records.size, ms, cpuMs: (cpu.user + cpu.system) / 1000, peakRssDelta: peak - rssBefore, rssAfterDelta: rssAfter - rssBefore }),
);

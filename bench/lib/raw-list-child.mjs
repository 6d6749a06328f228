// The floor of a Node list: its bytes over a plain HTTPS GET, in a fresh process, read and thrown away
// (nothing decoded, nothing kept). The kubeconfig's server, CA and bearer token as the agent uses them
// (client-node's KubeConfig.applyToHTTPSOptions). Argument `limit`: 0 = one unpaged GET; else pages of
// `limit` Nodes, each page's `metadata.continue` read from its first bytes (the API server writes
// metadata before items). Prints one JSON line: wall ms, CPU ms, bytes, pages.
/* global performance */
import https from 'node:https';
import http from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';

const [kubeconfig, limitText] = process.argv.slice(2);
const limit = Number(limitText ?? 0);
const kc = new KubeConfig();
kc.loadFromFile(kubeconfig);
const server = kc.getCurrentCluster().server;
const opts = { headers: { Accept: 'application/json' } };
await kc.applyToHTTPSOptions(opts);
const mod = server.startsWith('https:') ? https : http;
const agent = new mod.Agent({ keepAlive: true, ...(opts.ca ? { ca: opts.ca } : {}) });

/** One GET: its byte count and the continue token, read from the head of the answer. */
function get(cont) {
  const url = new URL(`${server}/api/v1/nodes`);
  if (limit > 0) url.searchParams.set('limit', String(limit));
  if (cont) url.searchParams.set('continue', cont);
  return new Promise((resolve, reject) => {
    const req = mod.get(url, { ...opts, agent }, (res) => {
      let bytes = 0;
      let head = '';
      res.on('data', (c) => {
        bytes += c.length;
        if (head.length < 4096) head += c.toString('latin1', 0, Math.min(c.length, 4096));
      });
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`HTTP ${res.statusCode}: ${head.slice(0, 200)}`));
        const items = head.indexOf('"items"');
        const m = /"continue":"([^"]*)"/.exec(items < 0 ? head : head.slice(0, items));
        resolve({ bytes, cont: m?.[1] || undefined });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

const cpu0 = process.cpuUsage();
const t0 = performance.now();
let bytes = 0;
let pages = 0;
let cont;
do {
  const page = await get(cont);
  bytes += page.bytes;
  pages++;
  cont = page.cont;
} while (cont);
const ms = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
agent.destroy();
console.log(JSON.stringify({ limit, pages, bytes, ms, cpuMs: (cpu.user + cpu.system) / 1000 }));

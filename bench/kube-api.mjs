// Benchmark: the kube subnet manager's API path. (1) The Node list page size: for each `limit`, a fresh
// process lists N realistic (~11 KB, lib/nodes.mjs) Nodes through the raw path (KubeHttp + projection) and through
// client-node's typed CoreV1Api.listNode; wall time, CPU and peak RSS growth, median of `repeats`.
// (2) The watch decode: N watch lines of the same Nodes, fed in 16 KB chunks, split by readline (what
// client-node's Watch does) or by hand (src/kube/watch-lines.ts), JSON.parse either way, and
// by hand with each Node's status and managedFields cut from the bytes first (what KubeHttp.watch does).
/* global performance */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { WatchLineSplitter, withoutFields } from '../dist/kube/watch-lines.js';
import { NODE_EVENT_UNREAD } from '../dist/subnet/kube/node-list-watch.js';
import { ApiServerProcess, BENCH_DIR, log, makeTmpDir, mb, percentile, r1, table } from './lib/common.mjs';

function listOnce(kubeconfig, mode, limit) {
  const out = execFileSync(process.execPath, ['--expose-gc', join(BENCH_DIR, 'lib', 'kube-list-child.mjs'), kubeconfig, mode, String(limit)], { encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').pop());
}

function median(runs, key) {
  return percentile(
    runs.map((r) => r[key]),
    50,
  );
}

async function decodeReadline(chunks) {
  let n = 0;
  const lines = createInterface(Readable.from(chunks));
  for await (const line of lines) {
    const ev = JSON.parse(line);
    if (ev.type) n++;
  }
  return n;
}

/** What KubeHttp.watch does since 1 December: lines as bytes, status and managedFields cut before the parse. */
function decodeSplitCut(chunks) {
  let n = 0;
  const splitter = new WatchLineSplitter('bench');
  for (const chunk of chunks) {
    for (const line of splitter.pushBytes(chunk)) {
      const ev = JSON.parse(withoutFields(line, NODE_EVENT_UNREAD));
      if (ev.type) n++;
    }
  }
  return n;
}

function decodeSplit(chunks) {
  let n = 0;
  const splitter = new WatchLineSplitter('bench');
  for (const chunk of chunks) {
    for (const line of splitter.push(chunk)) {
      const ev = JSON.parse(line);
      if (ev.type) n++;
    }
  }
  return n;
}

export async function run({ quick }) {
  const n = quick ? 1000 : 5000;
  const repeats = quick ? 1 : 3;
  const limits = quick ? [100, 150, 250, 500] : [100, 150, 250, 500, 1000, 5000];
  const dir = makeTmpDir();
  const api = await new ApiServerProcess().setup(dir, { peers: n, backend: 'vxlan' });
  const list = [];
  let sample;
  try {
    for (const limit of limits) {
      for (const mode of ['raw', 'typed']) {
        const runs = [];
        for (let i = 0; i < repeats; i++) runs.push(listOnce(api.kubeconfig, mode, limit));
        list.push({
          mode,
          limit,
          pages: runs[0].pages,
          nodes: runs[0].nodes,
          ms: r1(median(runs, 'ms')),
          cpuMs: r1(median(runs, 'cpuMs')),
          peakRssMb: mb(median(runs, 'peakRssDelta')),
        });
        log(`list ${mode} limit=${limit}: ${r1(median(runs, 'ms'))} ms`);
      }
    }
    sample = (await api.call('sampleNode', { i: 1 })).node;
  } finally {
    await api.close();
  }
  table(`Node list of ${n} nodes by page size (median of ${repeats})`, list);

  // Watch decode: the same Node as MODIFIED events, in 16 KB chunks.
  const line = JSON.stringify({ type: 'MODIFIED', object: sample }) + '\n';
  const bytes = Buffer.from(line.repeat(n));
  const chunks = [];
  for (let i = 0; i < bytes.length; i += 16 * 1024) chunks.push(bytes.subarray(i, i + 16 * 1024));
  const decode = [];
  for (const [name, fn] of [
    ['readline (client-node Watch)', decodeReadline],
    ['split on \\n', async (c) => decodeSplit(c)],
    ['split on \\n, status and managedFields cut (KubeHttp.watch)', async (c) => decodeSplitCut(c)],
  ]) {
    const times = [];
    for (let i = 0; i < (quick ? 3 : 7); i++) {
      const t = performance.now();
      const got = await fn(chunks);
      times.push(performance.now() - t);
      if (got !== n) throw new Error(`${name}: decoded ${got} of ${n}`);
    }
    decode.push({ decoder: name, events: n, eventBytes: line.length, ms: r1(percentile(times, 50)), usPerEvent: r1((percentile(times, 50) * 1000) / n) });
  }
  table('Watch decode', decode);
  return { nodes: n, list, decode };
}

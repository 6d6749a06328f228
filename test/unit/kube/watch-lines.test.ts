// The watch stream's line splitter (src/kube/watch-lines.ts): lines across chunk boundaries and
// multi-byte characters cut in two, each byte scanned once however small the chunks (the splitter it
// replaced searched the whole unfinished line again for every chunk: quadratic in a long line; counted
// as /metrics shows it, flannel_watch_bytes_scanned_total, also through nodeWatchFn), and a
// line without end refused with a coded error, here and through KubeHttp.watch against a server that
// sends one 64 MB line: the watch round ends (rejects) long before the server has sent it all. And
// withoutFields: a Node's status and metadata.managedFields left out of the text before the parse, the
// rest parsed exactly as before, through nodeListFn/nodeWatchFn against a fake API server too.
import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';
import { systemClock } from '../../../src/basics/clock.js';
import { KubeWatchError } from '../../../src/basics/errors.js';
import { Metrics, METRIC } from '../../../src/basics/metrics.js';
import { KubeHttp } from '../../../src/kube/http.js';
import { MAX_WATCH_LINE_BYTES, WatchLineSplitter, withoutFields } from '../../../src/kube/watch-lines.js';
import { NODE_EVENT_UNREAD, NODE_LIST_UNREAD, nodeListFn, nodeWatchFn } from '../../../src/subnet/kube/node-list-watch.js';
import { FakeKubeApiServer, linuxFlannelNode, writeKubeconfig } from '../../../src/demo/kube-fake/api-server.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readMetric } from '../../support/agent-signals.js';
import { expectCode } from '../../support/errors.js';
import { waitFor } from '../../support/wait-for.js';
import { kubeConfigFor } from '../../support/kube-config.js';

const split = (chunks: (string | Buffer)[], max?: number) => {
  const s = new WatchLineSplitter('watch /api/v1/nodes', { maxLineBytes: max });
  return chunks.flatMap((c) => s.push(Buffer.isBuffer(c) ? c : Buffer.from(c)));
};

describe('WatchLineSplitter', () => {
  const euro = Buffer.from('{"n":"€"}\n'); // € is 3 bytes in UTF-8
  it.each<[string, (string | Buffer)[], string[]]>([
    ['one line per chunk', ['{"a":1}\n', '{"b":2}\n'], ['{"a":1}', '{"b":2}']],
    ['two lines in one chunk', ['{"a":1}\n{"b":2}\n'], ['{"a":1}', '{"b":2}']],
    ['a line across three chunks', ['{"a"', ':1', '}\n'], ['{"a":1}']],
    ['an unfinished last line is kept back', ['{"a":1}\n{"b"'], ['{"a":1}']],
    ['empty lines pass through (the caller skips them)', ['\n\n'], ['', '']],
    ['a multi-byte character cut between chunks', [euro.subarray(0, 8), euro.subarray(8)], ['{"n":"€"}']],
    [
      'lines across chunks one after another, short and longer than the buffer they are joined in',
      ['{"a":"', 'x"}\n{"b":"', `${'y'.repeat(20_000)}"}\n{"c"`, ':3}\n{"d":"', `${'z'.repeat(70_000)}"}\n`],
      ['{"a":"x"}', `{"b":"${'y'.repeat(20_000)}"}`, '{"c":3}', `{"d":"${'z'.repeat(70_000)}"}`],
    ],
  ])('%s', (_what, chunks, lines) => {
    expect(split(chunks)).toEqual(lines);
  });

  it('scans each byte once when a long line comes one byte at a time (linear work)', async () => {
    const line = Buffer.from(JSON.stringify({ type: 'MODIFIED', object: { metadata: { name: 'n', annotations: { big: 'x'.repeat(200_000) } } } }) + '\n');
    const metrics = new Metrics();
    const s = new WatchLineSplitter('watch', { metrics });
    const lines: string[] = [];
    for (let i = 0; i < line.length; i++) lines.push(...s.push(line.subarray(i, i + 1)));
    expect(lines).toEqual([line.subarray(0, line.length - 1).toString()]);
    expect(await readMetric(metrics, METRIC.watchBytesScanned)).toBe(line.length);
  });

  it('refuses a line longer than the bound with a coded error, keeping no more than the bound', () => {
    const s = new WatchLineSplitter('watch', { maxLineBytes: 1024 });
    s.push(Buffer.alloc(1000, 'x'));
    const err = expectCode(() => s.push(Buffer.alloc(100, 'x')), KubeWatchError, 'FLANNEL_ERR_KUBE_WATCH_LINE');
    expect(err.context).toMatchObject({ maxLineBytes: 1024, kept: 1000 });
    // A line of exactly the bound is fine.
    expect(split([Buffer.alloc(1024, 'y'), '\n'], 1024)).toEqual(['y'.repeat(1024)]);
  });
});

describe('KubeHttp.watch against a server sending one 64 MB line without a newline', () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    server = undefined;
  });

  it('ends the watch round with FLANNEL_ERR_KUBE_WATCH_LINE before the server has sent it all', async () => {
    const LINE = 64 * 1024 * 1024;
    const chunk = Buffer.alloc(1024 * 1024, 'x');
    let sent = 0;
    let closed = false;
    server = createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.on('close', () => (closed = true));
      const pump = () => {
        while (!closed && sent < LINE) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        if (!closed) res.end();
      };
      res.write('{"type":"ADDED","object":{"metadata":{"name":"');
      pump();
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
    const kc = kubeConfigFor(server);
    const events: unknown[] = [];
    const err = await expectCode(
      new KubeHttp(kc, systemClock).watch('/api/v1/nodes', {}, (type) => events.push(type), { silenceMs: 60_000, signal: new AbortController().signal }),
      KubeWatchError,
      'FLANNEL_ERR_KUBE_WATCH_LINE',
    );
    expect(err.context.maxLineBytes).toBe(MAX_WATCH_LINE_BYTES);
    expect(events).toEqual([]);
    await waitFor(() => closed, 'the server to see the watch connection closed');
    expect(sent).toBeLessThan(LINE);
  });
});

/** A Node shaped like a real one (bench/lib/nodes.mjs, smaller): managedFields, status with images. */
function heavyNode(name: string): Record<string, unknown> {
  return {
    kind: 'Node',
    apiVersion: 'v1',
    metadata: {
      // Never read (NODE_EVENT_UNREAD): as the first key, its trailing comma goes with it.
      labels: { 'kubernetes.io/os': 'windows', 'topology.kubernetes.io/zone': 'westeurope-1', status: '{' },
      name,
      uid: 'u-1',
      creationTimestamp: '2026-11-02T08:00:00Z',
      // Values holding what the scan must not take for structure (quotes, backslashes, brackets, the
      // keys) and multi-byte characters on both sides of a cut.
      annotations: { 'flannel.alpha.coreos.com/public-ip': '172.16.0.11', tricky: '\\"status\\":{"managedFields":[ } ] \\\\', 'x\\': '{', unicode: 'nöde € ✓' },
      managedFields: [{ manager: 'kubelet', fieldsV1: { 'f:status': { 'f:conditions': { 'k:{"type":"Ready"}': {} } } }, subresource: 'status' }],
      resourceVersion: '42',
    },
    spec: { podCIDR: '10.128.1.0/24', podCIDRs: ['10.128.1.0/24'], taints: [{ key: 'status', effect: 'NoSchedule' }] },
    status: {
      conditions: [{ type: 'Ready', status: 'True', lastHeartbeatTime: '2026-11-02T08:00:00Z' }],
      images: [{ names: ['registry.k8s.io/pause@sha256:0123', 'registry.k8s.io/pause:3.9'], sizeBytes: 1 }],
      nodeInfo: { kubeletVersion: 'v1.30.3', osImage: 'Windows Server 2022 Datacenter — 10.0.20348' },
    },
  };
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => v as Json;

/** `value` as JSON.parse of its text gives it, with the status object, metadata.managedFields and metadata.labels of `nodes(copy)` deleted. */
function expectedWithout(value: unknown, nodes: (copy: Json) => Json[]): unknown {
  const copy = obj(JSON.parse(JSON.stringify(value)));
  for (const n of nodes(copy)) {
    delete n.status;
    delete obj(n.metadata).managedFields;
    delete obj(n.metadata).labels;
  }
  return copy;
}

describe('withoutFields', () => {
  const event = { type: 'MODIFIED', object: heavyNode('node-1') };
  const list = { kind: 'NodeList', apiVersion: 'v1', metadata: { resourceVersion: '7', continue: '' }, items: [heavyNode('a'), heavyNode('b')] };
  const bigList = { ...list, items: Array.from({ length: 100 }, (_, i) => heavyNode(`node-${i}`)) };
  it.each<[string, string, readonly { depth: number; key: string; open: '{' | '[' }[], unknown]>([
    ['a watch line: the Node without status, managedFields and labels', JSON.stringify(event), NODE_EVENT_UNREAD, expectedWithout(event, (e) => [obj(e.object)])],
    ['a list page: every Node without them', JSON.stringify(list), NODE_LIST_UNREAD, expectedWithout(list, (l) => (l.items as unknown[]).map(obj))],
    [
      'a list page whose kept text is larger than the scratch buffer a watch line goes through',
      JSON.stringify(bigList),
      NODE_LIST_UNREAD,
      expectedWithout(bigList, (l) => (l.items as unknown[]).map(obj)),
    ],
    ['a pretty-printed list page (spaces, tabs, newlines)', JSON.stringify(list, null, '\t'), NODE_LIST_UNREAD, expectedWithout(list, (l) => (l.items as unknown[]).map(obj))],
    [
      'status as the first key (its trailing comma goes with it) and as the only one',
      '{"type":"ADDED","object":{ "status" : {"a":[1,{"b":"}"}]} , "metadata":{"managedFields":[],"name":"n"}}}',
      NODE_EVENT_UNREAD,
      { type: 'ADDED', object: { metadata: { name: 'n' } } },
    ],
    ['a lone status', '{"type":"ADDED","object":{"status":{}}}', NODE_EVENT_UNREAD, { type: 'ADDED', object: {} }],
  ])('%s', (_what, text, drop, parsed) => {
    const out = withoutFields(text, drop);
    expect(out.length).toBeLessThan(text.length);
    expect(JSON.parse(out)).toEqual(parsed);
  });

  it.each<[string, string]>([
    ["an ERROR event's metav1.Status (its status is a string)", '{"type":"ERROR","object":{"kind":"Status","status":"Failure","code":410}}'],
    ['a status object at another depth (spec.status)', '{"type":"ADDED","object":{"spec":{"status":{"a":1}}}}'],
    ['a key written with an escape', '{"type":"ADDED","object":{"st\\u0061tus":{"a":1}}}'],
    ['an unterminated string (the parse then fails as it would have)', '{"type":"ADDED","object":{"status":{"a":"}}}'],
    ['an unclosed status', '{"type":"ADDED","object":{"status":{"a":[1}'],
    ['a BOOKMARK', '{"type":"BOOKMARK","object":{"kind":"Node","apiVersion":"v1","metadata":{"resourceVersion":"9"}}}'],
  ])('leaves the text as it is: %s', (_what, text) => {
    expect(withoutFields(text, NODE_EVENT_UNREAD)).toBe(text);
  });
});

describe('nodeListFn and nodeWatchFn against the fake API server', () => {
  let api: FakeKubeApiServer | undefined;
  afterEach(async () => {
    await api?.stop();
    api = undefined;
  });

  it('hand over Nodes with metadata and spec as served, without status, managedFields and labels', async () => {
    api = new FakeKubeApiServer();
    await api.start();
    const served = linuxFlannelNode({ name: 'node-1', podCIDR: '10.128.1.0/24', publicIP: '172.16.0.11', backendType: 'vxlan' });
    served.metadata.managedFields = [{ manager: 'flanneld', operation: 'Update' }];
    api.addNode(served);
    const path = join(mkdtempSync(join(tmpdir(), 'watch-lines-')), 'kubeconfig');
    await writeKubeconfig(path, api.url);
    const kc = new KubeConfig();
    kc.loadFromFile(path);
    const http = new KubeHttp(kc, systemClock);
    const ctrl = new AbortController();
    const page = obj(await nodeListFn(http, 10_000)({ limit: 10 }, ctrl.signal));
    const held = api.getNode('node-1')!;
    const { managedFields: _mf, labels: _labels, ...metadata } = held.metadata;
    expect(page.items).toEqual([{ kind: held.kind, apiVersion: held.apiVersion, metadata, spec: held.spec }]);

    const events: [unknown, Json][] = [];
    const metrics = new Metrics();
    const watching = nodeWatchFn(http, metrics)(
      { resourceVersion: String(obj(page.metadata).resourceVersion), allowWatchBookmarks: false, timeoutSeconds: 60 },
      (type, o) => events.push([type, obj(o)]),
      { silenceMs: 60_000, signal: ctrl.signal },
    ).catch(() => undefined);
    api.updateNode('node-1', (n) => {
      n.status!.conditions![0].lastHeartbeatTime = '2026-12-01T00:00:00Z';
    });
    await waitFor(() => events.length > 0, 'the MODIFIED event');
    ctrl.abort();
    await watching;
    const [type, node] = events[0];
    expect(type).toBe('MODIFIED');
    expect(node.status).toBeUndefined();
    expect(obj(node.metadata).managedFields).toBeUndefined();
    expect(obj(node.metadata).labels).toBeUndefined();
    expect(obj(node.metadata).annotations).toEqual(held.metadata.annotations);
    expect(node.spec).toEqual(held.spec);
    // What the watch received was split into lines, each byte searched once: at least the MODIFIED line.
    expect(await readMetric(metrics, METRIC.watchBytesScanned)).toBeGreaterThan(JSON.stringify(held.metadata).length);
  });
});

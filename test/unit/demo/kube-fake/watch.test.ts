// The fake API server's watch timeout runs on its injected clock: at `timeoutSeconds` of virtual time the
// watch ends, and a watch with allowWatchBookmarks that saw a newer Node event gets the cacher's BOOKMARK
// 2 s before (k8s.io/apiserver cacher cache_watcher.go nextBookmarkTime), without the test waiting in
// real time. The other rows of the real server: api-server.test.ts.
import { afterEach, describe, expect, it } from '@jest/globals';
import { FakeKubeApiServer, bareNode } from '../../../../src/demo/kube-fake/api-server.js';
import { FakeClock } from '../../../support/fake-clock.js';

async function readLines(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) {
    buf += decoder.decode(chunk, { stream: true });
    const parts = buf.split('\n');
    buf = parts.pop()!;
    for (const l of parts) if (l !== '') onLine(l);
  }
}

describe('fake API server watch timeout', () => {
  let api: FakeKubeApiServer | undefined;
  afterEach(async () => api?.stop());

  it('ends the watch at timeoutSeconds of the injected clock, after a BOOKMARK 2 s before it', async () => {
    const clock = new FakeClock();
    api = new FakeKubeApiServer({ clock });
    await api.start();
    api.addNode(bareNode({ name: 'a', podCIDR: '10.244.1.0/24' }));
    const res = await fetch(`${api.url}/api/v1/nodes?watch=true&timeoutSeconds=30&allowWatchBookmarks=true`);
    const lines: { type: string; object: { metadata: { name?: string; resourceVersion: string } } }[] = [];
    const ended = readLines(res.body!, (l) => lines.push(JSON.parse(l) as (typeof lines)[number]));
    while (api.activeWatches === 0 || lines.length === 0) await new Promise((r) => setImmediate(r));
    expect(lines.map((l) => l.type)).toEqual(['ADDED']);
    expect(clock.pending()).toEqual([28_000, 30_000]);

    await clock.advance(27_999);
    api.addNode(bareNode({ name: 'b' }));
    await clock.advance(1);
    expect(lines.map((l) => l.type)).toEqual(['ADDED', 'ADDED', 'BOOKMARK']);
    expect(lines[2].object.metadata.resourceVersion).toBe(api.resourceVersion);
    await clock.advance(1_999);
    expect(api.activeWatches).toBe(1);
    await clock.advance(1);
    await ended;
    expect(lines).toHaveLength(3);
    expect(api.activeWatches).toBe(0);
  });

  it('a watch that ends early leaves no timer behind', async () => {
    const clock = new FakeClock();
    api = new FakeKubeApiServer({ clock });
    await api.start();
    const res = await fetch(`${api.url}/api/v1/nodes?watch=true&timeoutSeconds=30`);
    const ended = readLines(res.body!, () => undefined);
    while (api.activeWatches === 0) await new Promise((r) => setImmediate(r));
    api.closeWatches();
    await ended;
    await clock.advance(0);
    expect(clock.pending()).toEqual([]);
  });
});

// The watch stream's line splitter (src/subnet/kube/watch-lines.ts): lines across chunk boundaries and
// multi-byte characters cut in two, each byte scanned once however small the chunks (the splitter it
// replaced searched the whole unfinished line again for every chunk: quadratic in a long line), and a
// line without end refused with a coded error, here and through KubeHttp.watch against a server that
// sends one 64 MB line: the watch round ends (rejects) long before the server has sent it all.
import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';
import { systemClock } from '../../src/clock.js';
import { KubeWatchError } from '../../src/errors.js';
import { KubeHttp } from '../../src/subnet/kube/http.js';
import { MAX_WATCH_LINE_BYTES, WatchLineSplitter } from '../../src/subnet/kube/watch-lines.js';
import { expectCode } from '../support/errors.js';
import { waitFor } from '../support/wait-for.js';

const split = (chunks: (string | Buffer)[], max?: number) => {
  const s = new WatchLineSplitter('watch /api/v1/nodes', max);
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
  ])('%s', (_what, chunks, lines) => {
    expect(split(chunks)).toEqual(lines);
  });

  it('scans each byte once when a long line comes one byte at a time (linear work)', () => {
    const line = Buffer.from(JSON.stringify({ type: 'MODIFIED', object: { metadata: { name: 'n', annotations: { big: 'x'.repeat(200_000) } } } }) + '\n');
    const s = new WatchLineSplitter('watch');
    const lines: string[] = [];
    for (let i = 0; i < line.length; i++) lines.push(...s.push(line.subarray(i, i + 1)));
    expect(lines).toEqual([line.subarray(0, line.length - 1).toString()]);
    expect(s.scannedBytes).toBe(line.length);
  });

  it('refuses a line longer than the bound with a coded error, keeping no more than the bound', () => {
    const s = new WatchLineSplitter('watch', 1024);
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
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: `http://127.0.0.1:${(server.address() as { port: number }).port}`, skipTLSVerify: true }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
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

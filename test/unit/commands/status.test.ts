// `flanneld status` against a hostile status port (docs/bounds.md): an answer without end or declaring
// gigabytes is refused at the cap, one that never comes or trickles is refused at the deadline (on a
// FakeClock, advanced once the server has the request), and what it prints is escaped: ESC sequences
// (clear screen, OSC 52 clipboard, title), CR, LF, C1 CSI and bidi overrides come out as \uXXXX, in the
// table and in the JSON. Before: `await res.text()` read any size, and the values went to the terminal raw.
import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { MAX_STATUS_BYTES, STATUS_TIMEOUT_MS, readStatus, renderStatusTable } from '../../../src/commands/status.js';
import { terminalJson, terminalText } from '../../../src/basics/terminal-text.js';
import { StatusError } from '../../../src/basics/errors.js';
import type { StatusReport } from '../../../src/health/status.js';
import { expectCode } from '../../support/errors.js';
import { FakeClock } from '../../support/fake-clock.js';
import { waitFor } from '../../support/wait-for.js';

// eslint-disable-next-line no-control-regex -- finding raw control characters is the point
const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

const HOSTILE = [
  '\u001b[2J\u001b[H', // clear the screen, cursor home
  '\u001b]52;c;ZWNobyBwd25lZA==\u0007', // OSC 52: write the clipboard
  '\u001b]0;title\u0007', // window title
  'ok\rFAKE', // CR: overwrite what was printed
  'line\nDataplane     in sync', // LF: forge a row
  '\u009b2J', // C1 CSI
  'abc\u202edcba', // bidi override
];

function report(s: string): StatusReport {
  return {
    version: s,
    phase: s,
    ready: true,
    inSync: false,
    cni: { confDir: s, binDir: s, problems: [{ check: s, detail: s, fix: s }] },
    startKind: s as StatusReport['startKind'],
    lease: { subnet: s, publicIP: s },
    network: { name: s, present: false, type: s, id: s, adapter: s, error: s },
    mtu: null,
    sourceVip: s,
    peers: {
      desired: 1,
      programmed: 0,
      rejected: 1,
      rejections: [{ key: s, subnet: s, publicIP: s, reason: s, message: s, backendType: s }],
      refused: 1,
      refusals: [{ node: s, prefix: s, hresult: s, since: s, attempts: 1, error: s }],
    },
    lastPass: { at: s, ok: false },
    lastSuccess: s,
    lastError: { at: s, message: s },
  };
}

describe('what flanneld status prints is escaped for the terminal', () => {
  it.each(HOSTILE)('%j: the table holds no raw control character and no extra row', (s) => {
    const clean = renderStatusTable(report('x'));
    const table = renderStatusTable(report(s));
    expect(table).not.toMatch(RAW);
    expect(table.split('\n').length).toBe(clean.split('\n').length);
    expect(table).toContain(terminalText(s));
  });

  it.each(HOSTILE)('%j: the JSON holds none either and parses back to the same value', (s) => {
    const json = terminalJson(report(s));
    expect(json).not.toMatch(RAW);
    expect(JSON.parse(json)).toEqual(report(s));
  });

  it('a status whose rejections are not a list still prints (no crash)', () => {
    const r = { ...report('x'), peers: { desired: 0, programmed: 0, rejected: 0, rejections: 'nope' as never, refused: 0, refusals: 'nope' as never } };
    expect(renderStatusTable(r)).toMatch(/^Peers +0 desired/m);
  });
});

describe('readStatus against a hostile status port', () => {
  let server: Server | undefined;
  let requests = 0;
  const responses: ServerResponse[] = [];
  async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
    requests = 0;
    server = createServer((req, res) => {
      requests++;
      responses.push(res);
      handler(req, res);
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
    return `http://127.0.0.1:${(server.address() as { port: number }).port}/status`;
  }
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    server = undefined;
    responses.length = 0;
  });

  it('does not depend on fetch: with fetch failing as undici does under Wine, the status is still read', async () => {
    // Under Wine, Node 22's fetch fails each connect (`TypeError: fetch failed`, cause `connect UNKNOWN
    // 127.0.0.1:PORT`) while node:http to the same URL answers 200; the Windows tier runs `status` there.
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"inSync":true,"peers":{}}');
    });
    const real = globalThis.fetch;
    globalThis.fetch = () => Promise.reject(new TypeError('fetch failed', { cause: new Error(`connect UNKNOWN ${new URL(url).host}`) }));
    try {
      expect(await readStatus(url)).toEqual({ status: 200, text: '{"inSync":true,"peers":{}}' });
    } finally {
      globalThis.fetch = real;
    }
  });

  it('a redirect is an answer (not followed)', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(302, { Location: 'http://192.0.2.1/elsewhere' });
      res.end('moved');
    });
    expect(await readStatus(url)).toEqual({ status: 302, text: 'moved' });
  });

  it('a body without end is refused at the cap, with no more than the cap read', async () => {
    let sent = 0;
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, ' ');
      const pump = () => {
        while (!res.destroyed) {
          sent += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
      };
      res.write('{"inSync":true,"peers":{},"pad":"');
      pump();
    });
    const err = await expectCode(readStatus(url), StatusError, 'FLANNEL_ERR_STATUS_TOO_LARGE');
    expect(err.context.maxBytes).toBe(MAX_STATUS_BYTES);
    expect(err.context.received).toBeLessThanOrEqual(MAX_STATUS_BYTES);
    expect(sent).toBeGreaterThan(MAX_STATUS_BYTES);
  });

  it('a Content-Length over the cap is refused before the body is read', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Length': String(2 * 1024 ** 3) });
      res.write('{');
    });
    const err = await expectCode(readStatus(url), StatusError, 'FLANNEL_ERR_STATUS_TOO_LARGE');
    expect(err.context.received).toBe(0);
  });

  it('a port that accepts and never answers is given up at the deadline', async () => {
    const url = await serve(() => undefined);
    const clock = new FakeClock();
    const result = expectCode(readStatus(url, { clock }), StatusError, 'FLANNEL_ERR_STATUS_TIMEOUT');
    await waitFor(() => requests === 1, 'the request to arrive');
    await clock.advance(STATUS_TIMEOUT_MS);
    expect((await result).context).toMatchObject({ timeoutMs: 10_000, received: 0 });
  });

  it('an answer that trickles is given up at the same deadline (it covers the body)', async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{');
    });
    const clock = new FakeClock();
    let settled = false;
    const result = expectCode(readStatus(url, { clock }), StatusError, 'FLANNEL_ERR_STATUS_TIMEOUT').finally(() => (settled = true));
    await waitFor(() => requests === 1, 'the request to arrive');
    for (let i = 0; i < 20 && !settled; i++) {
      await clock.advance(1_000);
      if (!responses[0].destroyed) responses[0].write(' ');
    }
    const err = await result;
    expect(clock.now() - 1_000_000).toBe(STATUS_TIMEOUT_MS);
    expect(err.context.received).toBeGreaterThan(0);
  });
});

// What `status` prints when it cannot reach the agent carries the --url as given and the fetch error (which
// quotes an unparsable URL): both are escaped like the rest.
describe('status: the unreachable-agent line is escaped', () => {
  it('an --url with ESC and a bidi override prints them escaped', async () => {
    const { command } = await import('../../../src/commands/status.js');
    let stderr = '';
    const code = await command.run(['--url=x\u001b[2J\u202egnp'], { stdout: () => undefined, stderr: (s) => (stderr += s), env: {}, platform: 'linux' });
    expect(code).toBe(1);
    expect(stderr).toContain('cannot reach the agent at x\\u001b[2J\\u202egnp');
    expect(stderr.trimEnd()).not.toMatch(RAW);
  });
});

// Transport failures of src/kube/http.ts are coded errors (docs/errors.md): a 2xx answer that is
// not JSON (FLANNEL_ERR_KUBE_ANSWER), a watch whose connection is cut in the middle of the stream
// (FLANNEL_ERR_KUBE_WATCH_BROKEN), a kubeconfig without a current cluster (FLANNEL_ERR_KUBE). All three
// stay retryable as a network error is (client-go's rule, ./api-error.ts): none carries an HTTP status.
import { afterEach, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';
import { systemClock } from '../../../src/basics/clock.js';
import { KubeAnswerError, KubeError, KubeWatchError } from '../../../src/basics/errors.js';
import { retryable } from '../../../src/kube/api-error.js';
import { KubeHttp } from '../../../src/kube/http.js';
import { expectCode } from '../../support/errors.js';
import { kubeConfigFor } from '../../support/kube-config.js';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((r) => server?.close(r) ?? r(undefined));
  server = undefined;
});

async function serve(handler: Parameters<typeof createServer>[1]): Promise<KubeConfig> {
  server = createServer(handler);
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return kubeConfigFor(server);
}

const signal = () => new AbortController().signal;

describe('KubeHttp transport failures are coded', () => {
  it('a 2xx answer that is not JSON: FLANNEL_ERR_KUBE_ANSWER', async () => {
    const kc = await serve((_req, res) => res.end('<html>proxy login</html>'));
    const err = await expectCode(
      new KubeHttp(kc, systemClock).json({ method: 'GET', path: '/api/v1/nodes', timeoutMs: 60_000, signal: signal() }),
      KubeAnswerError,
      'FLANNEL_ERR_KUBE_ANSWER',
    );
    expect(retryable(err)).toBe(true);
  });

  it('a watch cut in the middle of the stream: FLANNEL_ERR_KUBE_WATCH_BROKEN', async () => {
    const kc = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n{"type":"MOD');
      setImmediate(() => res.socket?.destroy());
    });
    const events: unknown[] = [];
    const err = await expectCode(
      new KubeHttp(kc, systemClock).watch('/api/v1/nodes', {}, (type) => events.push(type), { silenceMs: 60_000, signal: signal() }),
      KubeWatchError,
      'FLANNEL_ERR_KUBE_WATCH_BROKEN',
    );
    expect(events).toEqual(['ADDED']);
    expect(retryable(err)).toBe(true);
  });

  it('a kubeconfig without a current cluster: FLANNEL_ERR_KUBE', async () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({ clusters: [], users: [{ name: 'u' }], contexts: [], currentContext: '' });
    await expectCode(new KubeHttp(kc, systemClock).json({ method: 'GET', path: '/api/v1/nodes', timeoutMs: 60_000, signal: signal() }), KubeError, 'FLANNEL_ERR_KUBE');
  });
});

describe("KubeHttp joins each answer's bytes in one kept buffer", () => {
  // Answers of 200 kB, 40 B, 3 MB (in 16 kB writes, as TLS records arrive), 40 B again and 9 MB (above the
  // kept buffer's cap): each decodes to exactly its own JSON, none carries bytes of the one before.
  it('answers smaller and larger than the one before, and one larger than the cap, each read whole', async () => {
    const sizes = [200_000, 40, 3_000_000, 40, 9_000_000];
    let n = 0;
    const kc = await serve((_req, res) => {
      const size = sizes[n];
      const body = Buffer.from(JSON.stringify({ n, pad: 'x'.repeat(size) }));
      n++;
      res.writeHead(200, { 'Content-Type': 'application/json' });
      for (let at = 0; at < body.length; at += 16_384) res.write(body.subarray(at, at + 16_384));
      res.end();
    });
    const http = new KubeHttp(kc, systemClock);
    for (const [i, size] of sizes.entries()) {
      const got = (await http.json({ method: 'GET', path: '/api/v1/nodes', timeoutMs: 60_000, signal: signal() })) as { n: number; pad: string };
      expect([got.n, got.pad.length, got.pad === 'x'.repeat(size)]).toEqual([i, size, true]);
    }
  });
});

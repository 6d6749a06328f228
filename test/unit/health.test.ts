import { describe, it, expect } from '@jest/globals';
import { request } from 'node:http';
import { startHealthServer, UNHEALTHY_BODY } from '../../src/health/server.js';
import { Metrics, METRIC } from '../../src/health/metrics.js';

function get(port: number, path: string, method = 'GET'): Promise<{ status: number; type: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('health server', () => {
  it('serves /healthz, /readyz, /metrics and 404s the rest', async () => {
    const metrics = new Metrics();
    metrics.set(METRIC.peers, 3);
    metrics.inc(METRIC.leasesRejected, { reason: 'vni-too-low' });
    let ready = false;
    const srv = await startHealthServer({ host: '127.0.0.1', port: 0, metrics, isReady: () => ready });
    try {
      expect(srv.port).toBeGreaterThan(0);
      expect(await get(srv.port, '/healthz')).toMatchObject({ status: 200, body: 'flanneld is running' });
      expect(await get(srv.port, '/readyz')).toMatchObject({ status: 503, body: 'flanneld is not ready yet' });
      ready = true;
      expect(await get(srv.port, '/readyz')).toMatchObject({ status: 200, body: 'flanneld is ready' });
      expect(await get(srv.port, '/healthz?x=1')).toMatchObject({ status: 200, body: 'flanneld is running' });

      const m = await get(srv.port, '/metrics');
      expect(m.status).toBe(200);
      expect(m.type).toMatch(/^text\/plain; version=0\.0\.4/);
      expect(m.body).toContain('# TYPE flannel_peers gauge\nflannel_peers 3\n');
      expect(m.body).toContain('flannel_leases_rejected_total{reason="vni-too-low"} 1\n');

      expect((await get(srv.port, '/nope')).status).toBe(404);
      expect((await get(srv.port, '/healthz', 'POST')).status).toBe(404);
      expect(await get(srv.port, '/healthz', 'HEAD')).toMatchObject({ status: 200, body: '' });
    } finally {
      await srv.close();
    }
    await expect(get(srv.port, '/healthz')).rejects.toThrow();
  });

  it('/healthz answers 503 while the agent reports itself unhealthy (a wedged reconcile loop)', async () => {
    let healthy = true;
    const srv = await startHealthServer({ host: '127.0.0.1', port: 0, metrics: new Metrics(), isReady: () => true, isHealthy: () => healthy });
    try {
      expect(await get(srv.port, '/healthz')).toMatchObject({ status: 200, body: 'flanneld is running' });
      healthy = false;
      expect(await get(srv.port, '/healthz')).toMatchObject({ status: 503, body: UNHEALTHY_BODY });
      expect(await get(srv.port, '/healthz', 'HEAD')).toMatchObject({ status: 503, body: '' });
      expect((await get(srv.port, '/readyz')).status).toBe(200);
    } finally {
      await srv.close();
    }
  });

  it('rejects when the port is taken', async () => {
    const metrics = new Metrics();
    const a = await startHealthServer({ host: '127.0.0.1', port: 0, metrics, isReady: () => true });
    try {
      await expect(startHealthServer({ host: '127.0.0.1', port: a.port, metrics, isReady: () => true })).rejects.toMatchObject({
        code: 'EADDRINUSE',
      });
    } finally {
      await a.close();
    }
  });
});

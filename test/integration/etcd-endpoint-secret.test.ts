// An etcd password holding `/` fails the endpoint pattern; the error (logged and printed on stderr) once
// named the endpoint with the password in clear, and must not. Needs `npm run build`.
import { afterAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runFlanneld } from '../support/flanneld-process.js';

const dir = mkdtempSync(join(tmpdir(), 'etcd-endpoint-secret-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('flanneld --etcd-endpoints with a password holding "/"', () => {
  it('exits with FLANNEL_ERR_CONFIG, and neither stdout nor stderr carries the password', async () => {
    const r = await runFlanneld(['--dataplane=simulated', '--etcd-endpoints=http://flannel:ab/cd@10.0.0.5:2379', `--subnet-file=${join(dir, 'subnet.env')}`]);
    expect(r.status).not.toBe(0);
    const out = r.stdout + r.stderr;
    expect(out).toContain('FLANNEL_ERR_CONFIG');
    expect(out).toContain('http://***@10.0.0.5:2379');
    for (const secret of ['ab/cd', 'ab%2Fcd', 'flannel:ab']) expect(out).not.toContain(secret);
  });
});

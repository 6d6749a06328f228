// Secrets stay off the command line and out of logs and /metrics:
// - `--etcd-password-file` (and FLANNELD_ETCD_PASSWORD, documented for the same purpose) keep the etcd
//   password out of the process list;
// - a kubeconfig bearer token never reaches the log (even at debug level) nor /metrics: the real binary
//   runs against a FakeKubeApiServer that demands the token, and its whole output is searched.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../src/config/parse.js';
import { ConfigError } from '../../src/basics/errors.js';
import { FakeKubeApiServer, bareNode, linuxFlannelNode, writeKubeconfig } from '../../src/demo/kube-fake/api-server.js';
import { waitFor } from '../support/cluster.js';
import { issueCert, makeTestCa } from '../support/etcd.js';
import { startFlanneld } from '../support/flanneld-process.js';
import { expectCode } from '../support/errors.js';
import { freePort } from '../support/free-port.js';

describe('--etcd-password-file', () => {
  const files: Record<string, string> = { '/etc/flannel/etcd-password': 's3cret-pw\n', '/etc/flannel/crlf': 'pw2\r\n' };
  const readFile = (p: string): string => {
    const t = files[p];
    if (t === undefined) throw Object.assign(new Error(`ENOENT: no such file or directory, open '${p}'`), { code: 'ENOENT' });
    return t;
  };
  const parse = (argv: string[], env: Record<string, string> = {}) => {
    const r = parseConfig(['--dataplane=simulated', ...argv], env, { platform: 'linux', readFile });
    if (r.kind !== 'run') throw new Error(r.kind);
    return r.config;
  };

  it('reads the password from the file (the trailing newline is not part of it)', () => {
    expect(parse(['--etcd-password-file=/etc/flannel/etcd-password']).etcdPassword).toBe('s3cret-pw');
    expect(parse(['--etcd-password-file', '/etc/flannel/crlf']).etcdPassword).toBe('pw2');
    expect(parse([], { FLANNELD_ETCD_PASSWORD_FILE: '/etc/flannel/etcd-password' }).etcdPassword).toBe('s3cret-pw');
  });

  it('FLANNELD_ETCD_PASSWORD keeps it off the command line too', () => {
    expect(parse([], { FLANNELD_ETCD_PASSWORD: 'from-env' }).etcdPassword).toBe('from-env');
  });

  it('a missing file: FLANNEL_ERR_CONFIG naming it; both given: a flag error', () => {
    expect(expectCode(() => parse(['--etcd-password-file=/etc/flannel/nope']), ConfigError, 'FLANNEL_ERR_CONFIG').context).toEqual({
      flag: 'etcd-password-file',
      path: '/etc/flannel/nope',
    });
    expect(() => parse(['--etcd-password-file=/etc/flannel/etcd-password', '--etcd-password=x'])).toThrow(expect.objectContaining({ code: 'FLANNEL_ERR_FLAG' }));
  });
});

describe('a kubeconfig token never reaches the log or /metrics', () => {
  const TOKEN = 'eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2Vu.dG9rZW4tc2lnbmF0dXJl';
  let api: FakeKubeApiServer;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'secrets-'));
    // https with a test CA: a token is never sent over plain http:// (FLANNEL_ERR_KUBE_INSECURE).
    const ca = makeTestCa(dir, 'kube-ca');
    const cert = issueCert(ca, dir, 'kube-apiserver', 'server');
    api = new FakeKubeApiServer({ bearerToken: TOKEN, tls: { cert: readFileSync(cert.certFile), key: readFileSync(cert.keyFile) } });
    await api.start();
    await writeKubeconfig(join(dir, 'kubeconfig'), api.url, { token: TOKEN, caFile: ca.certFile });
    writeFileSync(join(dir, 'net-conf.json'), '{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan"}}');
    api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'vxlan' }));
    api.addNode(bareNode({ name: 'win-1', podCIDR: '10.244.7.0/24' }));
  });
  afterAll(async () => {
    await api.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(['text', 'json'])(
    'debug level, %s format, failing requests along the way',
    async (format) => {
      const port = await freePort();
      // Failures are logged with whatever they carry (the request, the response).
      api.failNext('GET', /\/api\/v1\/nodes/, 500, 2);
      api.failNext('PATCH', /\/api\/v1\/nodes/, 500, 1);
      const logFile = join(dir, `flanneld-${format}.log`);
      const agent = startFlanneld(
        [
          '--kube-subnet-mgr',
          `--kubeconfig-file=${join(dir, 'kubeconfig')}`,
          `--net-config-path=${join(dir, 'net-conf.json')}`,
          `--subnet-file=${join(dir, format, 'subnet.env')}`,
          '--dataplane=simulated',
          '--iface=10.0.0.7',
          '--healthz-ip=127.0.0.1',
          `--healthz-port=${port}`,
          '--log-level=debug',
          `--log-format=${format}`,
          `--log-file=${logFile}`,
        ],
        { NODE_NAME: 'win-1' },
      );
      let metrics = '';
      try {
        await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200, 'readyz', 20_000);
        // Ready comes with subnet.env; the peer list follows: wait until the one peer is counted.
        await waitFor(async () => /^flannel_peers 1$/m.test((metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text())), 'flannel_peers 1', 20_000);
      } finally {
        expect(await agent.stop()).toBe(0);
      }
      const output = agent.stderr() + readFileSync(logFile, 'utf8');
      expect(output).toContain(format === 'json' ? '"level":"debug"' : ' DEBUG ');
      expect(metrics).toMatch(/^flannel_peers 1$/m);
      for (const part of [TOKEN, ...TOKEN.split('.')]) {
        expect(output).not.toContain(part);
        expect(metrics).not.toContain(part);
      }
      expect(api.requests.every((r) => r.authorization === `Bearer ${TOKEN}`)).toBe(true);
    },
    40_000,
  );
});

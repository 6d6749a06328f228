// Kubeconfig credentials as client-go handles them (docs/compatibility.md §3), against a FakeKubeApiServer
// over TLS that accepts exactly one bearer token (401 for any other), on an injected clock:
// - kubeconfig `tokenFile` (client-go's field, clientcmd/api/v1/types.go AuthInfo) and `token-file`
//   (client-node's) are both read, trimmed (a trailing newline was an illegal header for 300 s);
// - the file is a cached token source (client-go transport/token_source.go NewCachedFileTokenSource):
//   re-read once its token is 50 s old (period 1 min less 10 s leeway), and at once after a 401
//   (ResetTokenOlderThan), so a rotated token recovers on the next request;
// - the same for the in-cluster service account token, which kubelet rotates;
// - an exec credential plugin's stderr is bounded and its secrets never reach the log.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { PassThrough } from 'node:stream';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeError } from '../../src/basics/errors.js';
import { bareNode, FakeKubeApiServer, linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { buildKubeConfig } from '../../src/kube/client.js';
import { MAX_PLUGIN_STDERR_CHARS, stderrBoundedSpawn } from '../../src/kube/credentials.js';
import { KubeHttp } from '../../src/kube/http.js';
import { issueCert, makeTestCa } from '../support/etcd.js';
import { expectCode } from '../support/errors.js';
import { startFlanneld } from '../support/flanneld-process.js';
import { freePort } from '../support/free-port.js';
import { FakeClock } from '../support/fake-clock.js';
import { logSink } from '../support/log-sink.js';
import { waitFor } from '../support/wait-for.js';

let dir: string;
let caFile: string;
let api: FakeKubeApiServer;
let clock: FakeClock;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kube-credentials-'));
  const ca = makeTestCa(dir, 'kube-ca');
  caFile = ca.certFile;
  const cert = issueCert(ca, dir, 'kube-apiserver', 'server');
  api = new FakeKubeApiServer({ bearerToken: 'tok-1', tls: { cert: readFileSync(cert.certFile), key: readFileSync(cert.keyFile) } });
  await api.start();
});
afterAll(async () => {
  await api.stop();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  clock = new FakeClock();
  api.bearerToken = 'tok-1';
});

function kubeconfig(name: string, user: string): string {
  const path = join(dir, `${name}.kubeconfig`);
  writeFileSync(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: fake',
      `  cluster: {server: ${JSON.stringify(api.url)}, certificate-authority: ${JSON.stringify(caFile)}}`,
      'users:',
      '- name: u',
      `  user: ${user}`,
      'contexts:',
      '- name: fake',
      '  context: {cluster: fake, user: u}',
      'current-context: fake',
      '',
    ].join('\n'),
  );
  return path;
}

function client(opts: Parameters<typeof buildKubeConfig>[0]): KubeHttp {
  return new KubeHttp(buildKubeConfig({ ...opts, clock }), clock);
}

/** GET the Node list; the Authorization header of every request it made. */
async function list(http: KubeHttp): Promise<string[]> {
  const before = api.requests.length;
  await http.json({ method: 'GET', path: '/api/v1/nodes', timeoutMs: 10_000, signal: new AbortController().signal });
  return api.requests.slice(before).map((r) => r.authorization ?? '');
}

describe('kubeconfig token files', () => {
  it.each(['tokenFile', 'token-file'])('%s: read and trimmed (a trailing newline is not part of the token)', async (key) => {
    const tokenPath = join(dir, `${key}.token`);
    writeFileSync(tokenPath, 'tok-1\r\n');
    const http = client({ kubeconfigFile: kubeconfig(key, `{${key}: ${JSON.stringify(tokenPath)}}`), kubeApiUrl: '' });
    expect(await list(http)).toEqual(['Bearer tok-1']);
  });

  it('a relative tokenFile is relative to the kubeconfig; it wins over a token in the same user', async () => {
    writeFileSync(join(dir, 'relative.token'), 'tok-1\n');
    const http = client({ kubeconfigFile: kubeconfig('relative', '{tokenFile: relative.token, token: stale-token}'), kubeApiUrl: '' });
    expect(await list(http)).toEqual(['Bearer tok-1']);
  });

  it('a rotated token file: the 401 re-reads it and the request succeeds; later re-reads come a minute apart', async () => {
    const tokenPath = join(dir, 'rotated.token');
    writeFileSync(tokenPath, 'tok-1\n');
    const http = client({ kubeconfigFile: kubeconfig('rotated', `{tokenFile: ${JSON.stringify(tokenPath)}}`), kubeApiUrl: '' });
    expect(await list(http)).toEqual(['Bearer tok-1']);

    // kubelet (or an operator) rotates the token; the API server accepts only the new one.
    writeFileSync(tokenPath, 'tok-2\n');
    api.bearerToken = 'tok-2';
    expect(await list(http)).toEqual(['Bearer tok-1', 'Bearer tok-2']);

    // A new token in the file is picked up without a 401 once the cached one is 50 s old, not before.
    writeFileSync(tokenPath, 'tok-3\n');
    await clock.advance(30_000);
    expect(await list(http)).toEqual(['Bearer tok-2']);
    await clock.advance(21_000);
    api.bearerToken = 'tok-3';
    expect(await list(http)).toEqual(['Bearer tok-3']);
  });

  it('an emptied token file keeps the token read last (logged), as client-go does', async () => {
    const tokenPath = join(dir, 'emptied.token');
    writeFileSync(tokenPath, 'tok-1\n');
    const { log, entries } = logSink();
    const http = client({ kubeconfigFile: kubeconfig('emptied', `{tokenFile: ${JSON.stringify(tokenPath)}}`), kubeApiUrl: '', log });
    expect(await list(http)).toEqual(['Bearer tok-1']);
    writeFileSync(tokenPath, '\n');
    await clock.advance(61_000);
    expect(await list(http)).toEqual(['Bearer tok-1']);
    await waitFor(() => entries.some((e) => e['message'] === 'Unable to rotate the token from its file, keeping the one read last'), 'the rotation failure logged');
  });

  it('a missing token file: FLANNEL_ERR_KUBE_AUTH', async () => {
    const http = client({ kubeconfigFile: kubeconfig('missing', `{tokenFile: ${JSON.stringify(join(dir, 'nope.token'))}}`), kubeApiUrl: '' });
    await expectCode(list(http), KubeError, 'FLANNEL_ERR_KUBE_AUTH');
  });
});

describe('the in-cluster service account token', () => {
  it('kubelet rotates it: the 401 re-reads it and the request succeeds', async () => {
    const root = join(dir, 'sandbox');
    const sa = join(root, 'var/run/secrets/kubernetes.io/serviceaccount');
    mkdirSync(sa, { recursive: true });
    writeFileSync(join(sa, 'ca.crt'), readFileSync(caFile));
    writeFileSync(join(sa, 'token'), 'tok-1');
    const port = new URL(api.url).port;
    const http = client({
      kubeconfigFile: '',
      kubeApiUrl: '',
      env: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: port, CONTAINER_SANDBOX_MOUNT_POINT: root },
    });
    expect(await list(http)).toEqual(['Bearer tok-1']);
    writeFileSync(join(sa, 'token'), 'tok-2');
    api.bearerToken = 'tok-2';
    expect(await list(http)).toEqual(['Bearer tok-1', 'Bearer tok-2']);
  });
});

describe('an exec credential plugin', () => {
  // The bound itself (the error message is sliced later, so its length alone does not show it): what the
  // plugin runner's 'data' listener receives is the first maxChars characters and one truncation note.
  it('stderrBoundedSpawn hands on at most maxChars of stderr, then the note, then nothing', () => {
    const stderr = new PassThrough();
    const spawn = stderrBoundedSpawn(10, () => ({ stderr }));
    const got: string[] = [];
    spawn().stderr.on('data', (c: string) => got.push(c));
    for (const chunk of ['0123', '456789ab', 'cdef', 'more']) stderr.write(chunk);
    expect(got).toEqual(['0123', '456789\n[stderr truncated at 10 characters]']);
  });

  it('that fails: FLANNEL_ERR_KUBE_AUTH with a bounded stderr, and its secrets never reach the log', async () => {
    const script = join(dir, 'plugin.cjs');
    writeFileSync(script, "process.stderr.write('login failed: token=s3cr3t-plugin-token password: hunter22 ' + 'x'.repeat(200000)); process.exit(1);\n");
    const user = `{exec: {apiVersion: client.authentication.k8s.io/v1, command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(script)}], interactiveMode: Never}}`;
    const http = client({ kubeconfigFile: kubeconfig('exec', user), kubeApiUrl: '' });
    const err = await expectCode(list(http), KubeError, 'FLANNEL_ERR_KUBE_AUTH');
    expect(err.message.length).toBeLessThan(MAX_PLUGIN_STDERR_CHARS + 200);
    const { log, entries } = logSink();
    log.warn('kubernetes API call failed, retrying', { error: err.message });
    log.error(err.message);
    const text = await waitFor(() => entries.length === 2 && JSON.stringify(entries), 'two log lines');
    expect(text).toContain('login failed');
    for (const secret of ['s3cr3t-plugin-token', 'hunter22']) expect(text).not.toContain(secret);
  });

  it('that succeeds: its token is sent, and registered so that no log line carries it', async () => {
    const script = join(dir, 'plugin-ok.cjs');
    const cred = { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status: { token: 'exec-token-0123456789' } };
    writeFileSync(script, `process.stdout.write(${JSON.stringify(JSON.stringify(cred))});\n`);
    api.bearerToken = 'exec-token-0123456789';
    const user = `{exec: {apiVersion: client.authentication.k8s.io/v1, command: ${JSON.stringify(process.execPath)}, args: [${JSON.stringify(script)}], interactiveMode: Never}}`;
    const http = client({ kubeconfigFile: kubeconfig('exec-ok', user), kubeApiUrl: '' });
    expect(await list(http)).toEqual(['Bearer exec-token-0123456789']);
    const { log, entries } = logSink();
    log.info('a message quoting exec-token-0123456789 by mistake');
    expect(await waitFor(() => entries.length === 1 && JSON.stringify(entries), 'the log line')).not.toContain('exec-token-0123456789');
  });
});

describe('the agent (built CLI) with a rotated token file', () => {
  it('recovers: the watch answered 401 re-reads the file and the new Node is seen', async () => {
    const tokenPath = join(dir, 'agent.token');
    writeFileSync(tokenPath, 'tok-1\n');
    const netConf = join(dir, 'agent-net-conf.json');
    writeFileSync(netConf, '{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw"}}');
    api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'host-gw' }));
    api.addNode(bareNode({ name: 'win-1', podCIDR: '10.244.7.0/24' }));
    const port = await freePort();
    const agent = startFlanneld(
      [
        '--kube-subnet-mgr',
        `--kubeconfig-file=${kubeconfig('agent', `{tokenFile: ${JSON.stringify(tokenPath)}}`)}`,
        `--net-config-path=${netConf}`,
        `--subnet-file=${join(dir, 'agent', 'subnet.env')}`,
        '--dataplane=simulated',
        '--iface=10.0.0.7',
        '--healthz-ip=127.0.0.1',
        `--healthz-port=${port}`,
      ],
      { NODE_NAME: 'win-1' },
      60_000,
    );
    const peers = async () => /^flannel_peers (\d+)$/m.exec((await (await fetch(`http://127.0.0.1:${port}/metrics`).catch(() => undefined))?.text()) ?? '')?.[1];
    try {
      await waitFor(async () => (await peers()) === '1', 'one peer', 20_000);
      // kubelet rotates the token; the API server now refuses the old one, and ends the open watch.
      writeFileSync(tokenPath, 'tok-2\n');
      api.bearerToken = 'tok-2';
      const before = api.requests.length;
      api.closeWatches();
      api.addNode(linuxFlannelNode({ name: 'linux-2', podCIDR: '10.244.2.0/24', publicIP: '10.0.0.12', backendType: 'host-gw' }));
      await waitFor(async () => (await peers()) === '2', 'the second peer, seen with the new token', 30_000);
      const after = api.requests.slice(before).map((r) => r.authorization);
      expect(after).toContain('Bearer tok-2');
    } finally {
      expect(await agent.stop()).toBe(0);
    }
    for (const token of ['tok-1', 'tok-2']) expect(agent.stderr()).not.toContain(token);
  }, 70_000);
});

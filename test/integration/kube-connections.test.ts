// The agent's GETs to the API server keep their connection, as client-go's transport does (one HTTP/2
// connection per API server, reused by every request: k8s.io/client-go transport/cache.go): the pages of a
// list go over one TLS connection, not one handshake each (client-node makes a new agent, so a new
// connection, for every request; a 50,000-Node list is 334 pages: docs/performance.md, 50,000 Nodes). When
// the TLS material changes (a client certificate renewed on disk, read again for every request as
// client-go's cert rotation does: transport/cert_rotation.go), the next request opens a new connection.
// Against FakeKubeApiServer over TLS with a bearer token, counting the connections it accepts.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../../src/basics/clock.js';
import { bareNode, FakeKubeApiServer, linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { buildKubeConfig } from '../../src/kube/client.js';
import { KubeHttp, kubeListFn } from '../../src/kube/http.js';
import { issueCert, makeTestCa, type TestCa } from '../support/etcd.js';

const NODES = 1000;
const PAGE = 100;

let dir: string;
let ca: TestCa;
let api: FakeKubeApiServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kube-connections-'));
  ca = makeTestCa(dir, 'kube-ca');
  const cert = issueCert(ca, dir, 'kube-apiserver', 'server');
  api = new FakeKubeApiServer({ bearerToken: 'tok-1', tls: { cert: readFileSync(cert.certFile), key: readFileSync(cert.keyFile) } });
  await api.start();
  api.addNode(bareNode({ name: 'win', podCIDR: '10.0.0.0/24' }));
  for (let i = 1; i < NODES; i++) {
    api.addNode(linuxFlannelNode({ name: `l${String(i).padStart(4, '0')}`, podCIDR: `10.1.${i % 256}.0/24`, publicIP: '192.168.0.1', backendType: 'vxlan' }));
  }
});
afterAll(async () => {
  await api.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A kubeconfig naming the CA, the token and, when given, a client certificate and key. */
function kubeconfig(name: string, client?: { certFile: string; keyFile: string }): string {
  const path = join(dir, `${name}.kubeconfig`);
  const user = [`token: tok-1`, ...(client ? [`client-certificate: ${JSON.stringify(client.certFile)}`, `client-key: ${JSON.stringify(client.keyFile)}`] : [])];
  writeFileSync(
    path,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: fake',
      `  cluster: {server: ${JSON.stringify(api.url)}, certificate-authority: ${JSON.stringify(ca.certFile)}}`,
      'users:',
      '- name: u',
      `  user: {${user.join(', ')}}`,
      'contexts:',
      '- name: fake',
      '  context: {cluster: fake, user: u}',
      'current-context: fake',
      '',
    ].join('\n'),
  );
  return path;
}

/** Every page of the Node list, `PAGE` a page; the number of Nodes. */
async function listAll(http: KubeHttp): Promise<number> {
  const list = kubeListFn(http, '/api/v1/nodes', 10_000);
  let n = 0;
  let cont: string | undefined;
  do {
    const page = (await list({ limit: PAGE, continue: cont }, new AbortController().signal)) as { items: unknown[]; metadata: { continue?: string } };
    n += page.items.length;
    cont = page.metadata.continue || undefined;
  } while (cont);
  return n;
}

describe('connections to the API server', () => {
  it(`the ${NODES / PAGE} pages of a list go over one TLS connection`, async () => {
    const http = new KubeHttp(buildKubeConfig({ kubeconfigFile: kubeconfig('token', undefined), kubeApiUrl: '' }), systemClock);
    const before = api.connectionsAccepted;
    expect(await listAll(http)).toBe(NODES);
    expect(api.connectionsAccepted - before).toBe(1);
  });

  it('a client certificate renewed on disk gets a new connection, which the requests after it keep', async () => {
    const first = issueCert(ca, dir, 'flanneld-1', 'client');
    const second = issueCert(ca, dir, 'flanneld-2', 'client');
    const client = { certFile: join(dir, 'flanneld.crt'), keyFile: join(dir, 'flanneld.key') };
    copyFileSync(first.certFile, client.certFile);
    copyFileSync(first.keyFile, client.keyFile);
    const http = new KubeHttp(buildKubeConfig({ kubeconfigFile: kubeconfig('client-cert', client), kubeApiUrl: '' }), systemClock);
    const before = api.connectionsAccepted;
    expect(await listAll(http)).toBe(NODES);
    expect(api.connectionsAccepted - before).toBe(1);
    copyFileSync(second.certFile, client.certFile);
    copyFileSync(second.keyFile, client.keyFile);
    expect(await listAll(http)).toBe(NODES);
    expect(api.connectionsAccepted - before).toBe(2);
  });
});

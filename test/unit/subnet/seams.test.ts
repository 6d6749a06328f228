// The file system, the clock and the random source enter src/subnet as options (src/basics/fs.ts and
// src/basics/clock.ts hold the real defaults): the kubeconfig and service account token, the etcd TLS files, the
// gRPC deadlines and the subnet pick all come through what the caller injects. client-go reads the same
// files (clientcmd.BuildConfigFromFlags, rest.InClusterConfig: /var/run/secrets/kubernetes.io/serviceaccount/token);
// flannel pkg/subnet/etcd/registry.go newTlsConfig reads the three PEM files.
import { describe, it, expect } from '@jest/globals';
import { FakeClock } from '../../support/fake-clock.js';
import type { FileReader } from '../../../src/basics/fs.js';
import { allocateSubnet } from '../../../src/subnet/etcd/allocate.js';
import { etcdClientOptions } from '../../../src/subnet/etcd/client.js';
import { safeText } from '../../../src/basics/log-safe.js';
import { buildKubeConfig } from '../../../src/kube/client.js';

/** An in-memory FileReader; reading a path it does not hold fails as ENOENT would. */
function files(contents: Record<string, string>): FileReader & { reads: string[] } {
  const reads: string[] = [];
  const get = (p: string): string => {
    reads.push(p);
    const v = contents[p];
    if (v === undefined) throw Object.assign(new Error(`ENOENT: no such file or directory, open '${p}'`), { code: 'ENOENT' });
    return v;
  };
  return {
    reads,
    readText: get,
    readBytes: (p) => Buffer.from(get(p)),
    exists: (p) => {
      reads.push(p);
      return p in contents;
    },
  };
}

const KUBECONFIG = [
  'apiVersion: v1',
  'kind: Config',
  'clusters:',
  '- name: c',
  '  cluster: {server: "https://10.1.2.3:6443"}',
  'users:',
  '- name: u',
  '  user: {token: "t"}',
  'contexts:',
  '- name: c',
  '  context: {cluster: c, user: u}',
  'current-context: c',
  '',
].join('\n');

describe('buildKubeConfig reads through the injected FileReader', () => {
  it.each([
    ['a kubeconfig file', { kubeconfigFile: '/k/config', kubeApiUrl: '' }, { '/k/config': KUBECONFIG }, 'https://10.1.2.3:6443'],
    [
      'the in-cluster service account',
      { kubeconfigFile: '', kubeApiUrl: '', env: { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443', CONTAINER_SANDBOX_MOUNT_POINT: 'C:' } },
      { 'C:/var/run/secrets/kubernetes.io/serviceaccount/token': 'x' },
      'https://10.96.0.1:443',
    ],
  ])('%s', (_name, opts, contents, server) => {
    const kc = buildKubeConfig({ ...opts, files: files(contents) });
    expect(kc.getCurrentCluster()?.server).toBe(server);
  });

  it.each([
    ['a kubeconfig file it cannot read', { kubeconfigFile: '/k/missing', kubeApiUrl: '' }, '/k/missing'],
    [
      'no service account token',
      { kubeconfigFile: '', kubeApiUrl: '', env: { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443', CONTAINER_SANDBOX_MOUNT_POINT: 'C:' } },
      'C:/var/run/secrets/kubernetes.io/serviceaccount/token',
    ],
  ])('%s: FLANNEL_ERR_KUBE naming the file', (_name, opts, file) => {
    const f = files({});
    expect(() => buildKubeConfig({ ...opts, files: f })).toThrow(expect.objectContaining({ code: 'FLANNEL_ERR_KUBE', message: expect.stringContaining(file) }));
    expect(f.reads).toContain(file); // the injected reader was asked, not the real file system
  });
});

describe('etcdClientOptions', () => {
  const base = { endpoints: ['https://10.0.0.1:2379'], username: '', password: '' };

  it('reads the TLS files through the injected FileReader', () => {
    const f = files({ '/pki/ca.pem': 'CA', '/pki/cert.pem': 'CERT', '/pki/key.pem': 'KEY' });
    const o = etcdClientOptions({ ...base, cafile: '/pki/ca.pem', certfile: '/pki/cert.pem', keyfile: '/pki/key.pem', files: f });
    expect([o.credentials?.rootCertificate, o.credentials?.certChain, o.credentials?.privateKey].map(String)).toEqual(['CA', 'CERT', 'KEY']);
    expect(f.reads.sort()).toEqual(['/pki/ca.pem', '/pki/cert.pem', '/pki/key.pem']);
  });

  it('an unreadable TLS file: FLANNEL_ERR_CONFIG naming the flag', () => {
    const f = files({});
    expect(() => etcdClientOptions({ ...base, cafile: '/pki/ca.pem', certfile: '', keyfile: '', files: f })).toThrow(
      expect.objectContaining({ code: 'FLANNEL_ERR_CONFIG', message: expect.stringContaining('--etcd-cafile') }),
    );
    expect(f.reads).toEqual(['/pki/ca.pem']);
  });

  // A password holding `/` fails the endpoint pattern; neither the error nor any later line may carry it
  // (main.ts prints safeText(message) on stderr).
  it.each([
    ['http://flannel:ab/cd@10.0.0.5:2379', ['ab/cd']],
    ['https://flannel:p4ss/w?rd#x@etcd:2379', ['p4ss/w?rd#x', 'p4ss']],
    ['flannel:s3/cr%2Fet@10.0.0.5:2379', ['s3/cr%2Fet', 's3/cr/et']],
  ])('an endpoint whose password holds "/" (%s): FLANNEL_ERR_CONFIG, the password on no line', (endpoint, secrets) => {
    let message = '';
    try {
      etcdClientOptions({ ...base, endpoints: [endpoint], cafile: '', certfile: '', keyfile: '', files: files({}) });
    } catch (err) {
      expect(err).toMatchObject({ code: 'FLANNEL_ERR_CONFIG' });
      message = (err as Error).message;
    }
    expect(message).toContain('***@');
    const stderr = safeText(`flanneld: ${message}`);
    const later = safeText(`grpc: dns:${endpoint.replace(/^https?:\/\//, '')} and --etcd-endpoints=${endpoint}`);
    for (const s of secrets) for (const text of [message, stderr, later]) expect(text).not.toContain(s);
  });

  it('unary call deadlines come from the injected clock', () => {
    const clock = new FakeClock();
    const o = etcdClientOptions({ ...base, cafile: '', certfile: '', keyfile: '', requestTimeoutMs: 7000, clock, files: files({}) });
    const callOptions = o.defaultCallOptions as (ctx: { isStream: boolean }) => { deadline?: number };
    expect(callOptions({ isStream: false }).deadline).toBe(clock.now() + 7000);
    expect(callOptions({ isStream: true }).deadline).toBeUndefined();
  });
});

describe('allocateSubnet takes the random source', () => {
  const range = { subnetMin: '10.5.1.0', subnetMax: '10.5.4.0', subnetLen: 24 };
  it.each([
    [0, '10.5.1.0/24'],
    [0.5, '10.5.3.0/24'],
    [0.999, '10.5.4.0/24'],
  ])('random() = %d picks %s', (r, want) => {
    expect(allocateSubnet(range, [], () => r)).toBe(want);
  });
});

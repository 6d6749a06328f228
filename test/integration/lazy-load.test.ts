// What the built `flanneld` (dist/main.js) loads in each mode: an etcd node never loads the kube client
// and a kube node never loads etcd3; only the configured backend and dataplane are loaded; `--version`
// loads neither the agent nor winston. The modules a run resolved come from an import trace
// (test/support/import-trace.mjs, Node's module.register hooks) while the real binary runs against the
// fake API server or a real etcd. Why it matters: each package costs resident memory for the life of
// the process (the per-import table in docs/performance.md).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeKubeApiServer, bareNode, writeKubeconfig } from '../../src/demo/kube-fake/api-server.js';
import { describeEtcd, EtcdServer } from '../support/etcd.js';
import { MAIN } from '../support/flanneld-process.js';
// @ts-expect-error: a plain .mjs packaging script without type declarations
import { LAZY_PACKAGES } from '../../packaging/kubeconfig-bundle.mjs';

const TRACE_HOOK = join(process.cwd(), 'test', 'support', 'import-trace.mjs');

let dir: string;
let seq = 0;

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error('dist/main.js is missing: run `npm run build` first (npm test does)');
  dir = mkdtempSync(join(tmpdir(), 'flanneld-lazy-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What a trace names: packages by name, our own modules by their path under dist/, and every URL. */
function loaded(traceFile: string): { packages: Set<string>; own: Set<string>; urls: string[] } {
  const urls = existsSync(traceFile) ? readFileSync(traceFile, 'utf8').split('\n').filter(Boolean) : [];
  const packages = new Set<string>();
  const own = new Set<string>();
  const dist = `file://${join(process.cwd(), 'dist')}/`;
  for (const url of urls) {
    const pkg = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
    if (pkg) packages.add(pkg[1]);
    else if (url.startsWith(dist)) own.add(url.slice(dist.length));
  }
  return { packages, own, urls };
}

/** Run the binary with the import trace until `until` appears on stderr (then SIGTERM) or it exits. */
async function traced(args: string[], env: Record<string, string>, until?: string): Promise<{ packages: Set<string>; own: Set<string>; urls: string[]; stderr: string }> {
  const trace = join(dir, `trace-${++seq}.txt`);
  const child = spawn(process.execPath, ['--import', TRACE_HOOK, MAIN, ...args], {
    env: { PATH: process.env['PATH'] ?? '', FLANNEL_IMPORT_TRACE: trace, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 25_000);
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    if (until && stderr.includes(until)) child.kill('SIGTERM');
  });
  await exited;
  clearTimeout(timer);
  if (until && !stderr.includes(until)) throw new Error(`flanneld never logged "${until}":\n${stderr}`);
  return { ...loaded(trace), stderr };
}

describe('what the flanneld binary loads', () => {
  it('--version loads neither the agent, winston, nor a subnet manager client', () => {
    const r = spawnSync(process.execPath, ['--import', TRACE_HOOK, MAIN, '--version'], {
      env: { PATH: process.env['PATH'] ?? '', FLANNEL_IMPORT_TRACE: join(dir, 'version.txt') },
      encoding: 'utf8',
    });
    expect(r.status).toBe(0);
    const { packages, own } = loaded(join(dir, 'version.txt'));
    expect(own.has('main.js')).toBe(true);
    expect(own.has('agent.js')).toBe(false);
    for (const p of ['winston', '@kubernetes/client-node', 'etcd3', 'ffi-rs']) expect([p, packages.has(p)]).toEqual([p, false]);
  });

  describe('kube mode (host-gw, simulated dataplane)', () => {
    const api = new FakeKubeApiServer();
    beforeAll(async () => {
      await api.start();
      await writeKubeconfig(join(dir, 'kubeconfig'), api.url);
      api.addNode(bareNode({ name: 'win-lazy', podCIDR: '10.244.7.0/24' }));
      writeFileSync(join(dir, 'net-conf.json'), '{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw"}}');
    });
    afterAll(() => api.stop());

    it("loads client-node's KubeConfig and the host-gw backend, never etcd3, vxlan or the win32 dataplane", async () => {
      const { packages, own, urls } = await traced(
        [
          '--kube-subnet-mgr',
          `--kubeconfig-file=${join(dir, 'kubeconfig')}`,
          `--net-config-path=${join(dir, 'net-conf.json')}`,
          `--subnet-file=${join(dir, 'kube.env')}`,
          '--dataplane=simulated',
          '--iface=10.0.0.7',
        ],
        { NODE_NAME: 'win-lazy' },
        'first reconcile pass done',
      );
      // client-node's KubeConfig comes from the build's bundle of its config module (packaging/
      // kubeconfig-bundle.mjs), without the generated API and model classes (+43 MB RSS): neither the
      // package index nor anything under its dist/gen/ is loaded. Of its own dependencies, those only
      // some kubeconfigs use (LAZY_PACKAGES and theirs: -3 MB heap) wait for a token user's first use.
      expect(own.has('kube/kubeconfig.js')).toBe(true);
      expect(urls.filter((u) => u.includes('/@kubernetes/client-node/')).slice(0, 5)).toEqual([]);
      expect(packages.has('js-yaml')).toBe(true);
      for (const p of [...Object.keys(LAZY_PACKAGES as object), 'whatwg-url', 'tr46', 'socks', 'oauth4webapi', 'jose']) expect([p, packages.has(p)]).toEqual([p, false]);
      expect(packages.has('winston')).toBe(true);
      expect(packages.has('etcd3')).toBe(false);
      expect(packages.has('ffi-rs')).toBe(false);
      // The CNI check reads the conf dir and the plugins' names (src/cni/); install-cni's archive readers stay unloaded.
      for (const p of ['tar-stream', 'yauzl']) expect([p, packages.has(p)]).toEqual([p, false]);
      expect(own.has('cni/readiness.js')).toBe(true);
      expect(own.has('backends/hostgw/backend.js')).toBe(true);
      expect(own.has('simulator/node.js')).toBe(true);
      for (const m of [
        'backends/vxlan/backend.js',
        'backends/vxlan/source-vip.js',
        'subnet/etcd/factory.js',
        'dataplane/windows.js',
        'health/server.js',
        'demo/kube-fake/api-server.js',
        'demo/main.js',
        'cni-plugins/archive.js',
      ]) {
        expect([m, own.has(m)]).toEqual([m, false]);
      }
    });
  });
});

describeEtcd('what the flanneld binary loads in etcd mode (real etcd)', () => {
  const etcd = new EtcdServer();
  beforeAll(async () => {
    await etcd.start();
    const admin = etcd.client();
    await admin.put('/lazy/network/config').value(JSON.stringify({ Network: '10.246.0.0/16', Backend: { Type: 'vxlan', VNI: 4096 } }));
    admin.close();
  }, 30_000);
  afterAll(() => etcd.destroy(), 30_000);

  it('loads etcd3 and the vxlan backend, never @kubernetes/client-node or host-gw', async () => {
    const { packages, own } = await traced(
      [`--etcd-endpoints=${etcd.endpoint}`, '--etcd-prefix=/lazy/network', `--subnet-file=${join(dir, 'etcd.env')}`, '--dataplane=simulated', '--iface=10.0.0.8'],
      {},
      'first reconcile pass done',
    );
    expect(packages.has('etcd3')).toBe(true);
    expect(packages.has('@kubernetes/client-node')).toBe(false);
    expect(own.has('backends/vxlan/backend.js')).toBe(true);
    expect(own.has('subnet/etcd/factory.js')).toBe(true);
    for (const m of ['backends/hostgw/backend.js', 'subnet/kube/manager.js', 'kube/client.js', 'kube/kubeconfig.js', 'dataplane/windows.js']) {
      expect([m, own.has(m)]).toEqual([m, false]);
    }
  });
});

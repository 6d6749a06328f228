// deploy/ through the real kubectl: `kubectl apply -k deploy/overlays/example --dry-run=client` (client-side
// only; kubectl needs API discovery to map kinds, which a tiny in-test discovery server answers), then the
// key fields asserted on kubectl's own JSON rendering: deploy/ owns only Windows objects (never the
// kube-flannel Namespace or the shared kube-flannel-cfg, which the Linux manifest owns), exact RBAC rules,
// HostProcess as SYSTEM, NODE_NAME from the downward API, the image and API server from the overlay. The
// net-conf patch for the shared ConfigMap goes through `kubectl patch --local`, and the VNI-1 guard through
// the built binary.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAllYaml } from '@kubernetes/client-node';
import { parseNetConf } from '../../src/subnet/net-conf.js';
import { DEFAULT_VXLAN_PORT } from '../../src/subnet/net-conf-types.js';
import { FLAGS } from '../../src/config/flags.js';
import { CNI_CONFIG_FLAGS } from '../../src/commands/cni-config.js';
import { AGENT_RBAC_RULES, RBAC_FEATURE_TAG } from '../../src/kube/api-error.js';
import { MAIN } from '../support/flanneld-process.js';
import { KUBE_SYSTEM_CONFIGMAPS } from '../support/kube-system-configmaps.js';

const DEPLOY = join(process.cwd(), 'deploy');
const OVERLAY = join(DEPLOY, 'overlays', 'example');

// kubectl's and the YAML parser's output, read field by field by the expectations below: typing it would
// restate the Kubernetes schema that kubectl already validated.
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-return */
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Legacy (non-aggregated) discovery for the kinds deploy/ uses. */
function discoveryServer(): Server {
  const res = (group: string, version: string, resources: [string, string, boolean][]) => ({
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: group ? `${group}/${version}` : version,
    resources: resources.map(([name, kind, namespaced]) => ({ name, singularName: '', namespaced, kind, verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'] })),
  });
  const group = (name: string, version: string) => ({
    name,
    versions: [{ groupVersion: `${name}/${version}`, version }],
    preferredVersion: { groupVersion: `${name}/${version}`, version },
  });
  const docs: Record<string, unknown> = {
    '/api': { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1' }] },
    '/apis': { kind: 'APIGroupList', apiVersion: 'v1', groups: [group('apps', 'v1'), group('rbac.authorization.k8s.io', 'v1')] },
    '/api/v1': res('', 'v1', [
      ['namespaces', 'Namespace', false],
      ['serviceaccounts', 'ServiceAccount', true],
      ['configmaps', 'ConfigMap', true],
    ]),
    '/apis/apps/v1': res('apps', 'v1', [['daemonsets', 'DaemonSet', true]]),
    '/apis/rbac.authorization.k8s.io/v1': res('rbac.authorization.k8s.io', 'v1', [
      ['clusterroles', 'ClusterRole', false],
      ['clusterrolebindings', 'ClusterRoleBinding', false],
      ['roles', 'Role', true],
      ['rolebindings', 'RoleBinding', true],
    ]),
  };
  return createServer((req, response) => {
    const path = (req.url ?? '/').split('?')[0];
    const doc = docs[path];
    response.writeHead(doc ? 200 : 404, { 'Content-Type': 'application/json' });
    response.end(JSON.stringify(doc ?? { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 }));
  });
}

/** A program, asynchronously: spawnSync would block the discovery server living in this process. */
function exec(cmd: string, args: string[], env: Record<string, string>): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env: { PATH: process.env['PATH'] ?? '', ...env } });
    let so = '';
    let se = '';
    child.stdout.on('data', (b: Buffer) => (so += b.toString()));
    child.stderr.on('data', (b: Buffer) => (se += b.toString()));
    child.on('error', (err) => resolve({ status: -1, stdout: '', stderr: `${cmd} could not be run (kubectl is preinstalled on CI machines): ${err.message}` }));
    child.on('exit', (code) => resolve({ status: code, stdout: so, stderr: se }));
  });
}
const kubectl = (args: string[], env: Record<string, string>) => exec('kubectl', args, env);

/**
 * Whether a pod's tolerations tolerate a taint, as the scheduler and the taint manager decide it
 * (k8s.io/api core/v1 toleration.go ToleratesTaint): an empty effect matches every effect; `Exists` with an
 * empty key matches every key; `Equal` (the default operator) matches key and value.
 */
function tolerates(tolerations: Obj[], taint: { key: string; value?: string; effect: string }): boolean {
  return tolerations.some((t) => {
    if (t['effect'] && t['effect'] !== taint.effect) return false;
    if (t['key'] && t['key'] !== taint.key) return false;
    if (t['operator'] === 'Exists') return true;
    return (t['value'] ?? '') === (taint.value ?? '');
  });
}

/**
 * Taints a node agent must stay through. NoExecute ones evict a pod that does not tolerate them: an
 * operator's own (`dedicated=...:NoExecute`) and `node.kubernetes.io/out-of-service`, which the DaemonSet
 * controller adds no toleration for (it adds not-ready and unreachable only). flannel's Helm chart
 * tolerates both effects with `operator: Exists` (chart/kube-flannel/values.yaml `flannel.tolerations`;
 * Documentation/kube-flannel.yml tolerates NoSchedule only).
 */
const NODE_AGENT_TAINTS = [
  { key: 'dedicated', value: 'windows', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/os', value: 'windows', effect: 'NoSchedule' },
  { key: 'dedicated', value: 'windows', effect: 'NoExecute' },
  { key: 'node.kubernetes.io/out-of-service', value: 'nodeshutdown', effect: 'NoExecute' },
];

/** Every YAML file under deploy/ (recursively). */
function yamlFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f);
    return statSync(p).isDirectory() ? yamlFiles(p) : /\.ya?ml$/.test(f) ? [p] : [];
  });
}

const ownedByLinuxFlannel = (o: Obj) => o['kind'] === 'Namespace' || (o['kind'] === 'ConfigMap' && o['metadata']?.['name'] === 'kube-flannel-cfg');

describe('deploy/ (kubectl apply -k deploy/overlays/example --dry-run=client)', () => {
  let server: Server;
  let dir: string;
  let objects: Obj[] = [];
  let stderr = '';
  let status: number | null = null;
  let env: Record<string, string> = {};
  let overlay = '';

  beforeAll(async () => {
    server = discoveryServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    dir = mkdtempSync(join(tmpdir(), 'flanneld-deploy-'));
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{name: c, cluster: {server: "http://127.0.0.1:' + port + '"}}]',
        'users: [{name: u, user: {token: dummy}}]',
        'contexts: [{name: x, context: {cluster: c, user: u}}]',
        'current-context: x',
        '',
      ].join('\n'),
    );
    env = { HOME: dir, KUBECONFIG: kubeconfig };
    // The overlay as an admin fills it: a copy of deploy/, with cluster-config.yaml written by the built
    // `flanneld cluster-config` from the cluster's kubeadm-config and kube-proxy ConfigMaps.
    if (!existsSync(MAIN)) throw new Error('dist/main.js is missing: run `npm run build` first (npm test does)');
    cpSync(DEPLOY, join(dir, 'deploy'), { recursive: true });
    overlay = join(dir, 'deploy', 'overlays', 'example');
    const generated = spawnSync(process.execPath, [MAIN, 'cluster-config'], { encoding: 'utf8', input: KUBE_SYSTEM_CONFIGMAPS, env: { PATH: process.env['PATH'] ?? '' } });
    expect(generated.status).toBe(0);
    writeFileSync(join(overlay, 'cluster-config.yaml'), generated.stdout);
    const out = await kubectl(['apply', '-k', overlay, '--dry-run=client', '--validate=false', '-o', 'json'], env);
    status = out.status;
    stderr = out.stderr;
    const parsed = JSON.parse(out.stdout || '{}') as Obj;
    objects = parsed['kind'] === 'List' ? (parsed['items'] as Obj[]) : [parsed];
  }, 60_000);

  afterAll(async () => {
    await new Promise<void>((r) => server.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('the check is not vacuous: kubectl rejects a broken kustomization', async () => {
    const bad = join(dir, 'bad');
    mkdirSync(bad);
    writeFileSync(join(bad, 'kustomization.yaml'), 'resources:\n  - x.yml\n');
    writeFileSync(join(bad, 'x.yml'), 'apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: x\n spec: [\n');
    const out = await kubectl(['apply', '-k', bad, '--dry-run=client', '--validate=false', '-o', 'json'], env);
    expect(out.status).not.toBe(0);
  });

  const find = (kind: string, name: string): Obj => {
    const o = objects.find((x) => x['kind'] === kind && x['metadata']?.['name'] === name);
    if (!o) throw new Error(`no ${kind} ${name} in kubectl's output: ${objects.map((x) => `${x['kind']}/${x['metadata']?.['name']}`).join(', ')}`);
    return o;
  };

  it('kubectl accepts the overlay, which creates only the Windows objects', () => {
    expect(stderr).toBe('');
    expect(status).toBe(0);
    expect(objects.map((o) => `${o['kind']}/${o['metadata']['name']}`).sort()).toEqual(
      [
        'ClusterRole/flannel-windows',
        'ClusterRoleBinding/flannel-windows',
        'ConfigMap/flanneld-windows-config',
        'DaemonSet/kube-flannel-ds-windows',
        'Role/flannel-windows',
        'RoleBinding/flannel-windows',
        'ServiceAccount/flannel-windows',
      ].sort(),
    );
  });

  it('no object anywhere in deploy/ is a Namespace or the shared kube-flannel-cfg (so `kubectl delete -k` cannot take them)', async () => {
    const docs = yamlFiles(DEPLOY).flatMap((f) => (loadAllYaml(readFileSync(f, 'utf8')) as Obj[]).filter((d) => d && d['kind']).map((d) => ({ ...d, file: f })));
    expect(docs.length).toBeGreaterThanOrEqual(5);
    expect(docs.filter(ownedByLinuxFlannel)).toEqual([]);
    for (const [k, n] of [
      [join(DEPLOY, 'base'), 6],
      [overlay, 7],
    ] as const) {
      const out = await kubectl(['kustomize', k], env);
      expect(out.status).toBe(0);
      const rendered = loadAllYaml(out.stdout) as Obj[];
      expect(rendered.length).toBe(n);
      expect(rendered.filter(ownedByLinuxFlannel)).toEqual([]);
      expect(rendered.every((o) => o['metadata']['name'] !== 'flannel' || o['kind'] === 'ClusterRole')).toBe(true); // never the Linux ServiceAccount/binding
    }
    // The guard itself catches what the old deploy/ shipped.
    expect(
      [
        { kind: 'Namespace', metadata: { name: 'kube-flannel' } },
        { kind: 'ConfigMap', metadata: { name: 'kube-flannel-cfg' } },
      ].filter(ownedByLinuxFlannel),
    ).toHaveLength(2);
  });

  it("RBAC: exactly flannel's rules plus events create/patch (Events on the own Node), --network-policy's list/watch and doctor's get/list, bound to the Windows ServiceAccount", () => {
    const role = find('ClusterRole', 'flannel-windows');
    expect(role['rules']).toEqual([
      { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
      { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
      { apiGroups: [''], resources: ['pods'], verbs: ['list', 'watch'] },
      { apiGroups: [''], resources: ['namespaces'], verbs: ['list', 'watch'] },
      { apiGroups: ['networking.k8s.io'], resources: ['networkpolicies'], verbs: ['list', 'watch'] },
      { apiGroups: [''], resources: ['services'], verbs: ['get', 'list'] },
      { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['get', 'list'] },
    ]);
    // The agent's 403 hint names exactly these rules (src/kube/api-error.ts), each feature's with the feature on.
    expect(
      (role['rules'] as { apiGroups: string[]; resources: string[]; verbs: string[] }[]).map((r) => ({ group: r.apiGroups[0], resource: r.resources[0], verbs: r.verbs })),
    ).toEqual(AGENT_RBAC_RULES.map(({ group, resource, verbs }) => ({ group, resource, verbs })));
    // The manifest says which feature needs the rules that only a feature needs.
    const rbacText = readFileSync(join(DEPLOY, 'base', '10-rbac.yml'), 'utf8');
    for (const r of AGENT_RBAC_RULES) {
      if (r.feature === undefined) continue;
      expect(rbacText).toMatch(new RegExp(`# ${RBAC_FEATURE_TAG[r.feature]}[^\\n]*\\n\\s+- apiGroups: \\['${r.group}'\\]\\n\\s+resources: \\['${r.resource}'\\]`));
    }
    const binding = find('ClusterRoleBinding', 'flannel-windows');
    expect(binding['roleRef']).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'flannel-windows' });
    expect(binding['subjects']).toEqual([{ kind: 'ServiceAccount', name: 'flannel-windows', namespace: 'kube-flannel' }]);
    expect(find('ServiceAccount', 'flannel-windows')['metadata']['namespace']).toBe('kube-flannel');
    // flanneld doctor in the pod reads the Linux flannel ConfigMap (src/commands/doctor-gather.ts): get on that one
    // object, in its namespace only.
    const cmRole = find('Role', 'flannel-windows');
    expect(cmRole['metadata']['namespace']).toBe('kube-flannel');
    expect(cmRole['rules']).toEqual([{ apiGroups: [''], resources: ['configmaps'], resourceNames: ['kube-flannel-cfg'], verbs: ['get'] }]);
    const cmBinding = find('RoleBinding', 'flannel-windows');
    expect(cmBinding['metadata']['namespace']).toBe('kube-flannel');
    expect(cmBinding['roleRef']).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'flannel-windows' });
    expect(cmBinding['subjects']).toEqual([{ kind: 'ServiceAccount', name: 'flannel-windows', namespace: 'kube-flannel' }]);
  });

  it('DaemonSet: Windows only, HostProcess as SYSTEM, host network, tolerations, the shared net-conf', () => {
    const ds = find('DaemonSet', 'kube-flannel-ds-windows');
    const spec = ds['spec']['template']['spec'] as Obj;
    expect(ds['metadata']['namespace']).toBe('kube-flannel');
    expect(spec['nodeSelector']).toEqual({ 'kubernetes.io/os': 'windows' });
    expect(spec['hostNetwork']).toBe(true);
    expect(spec['securityContext']['windowsOptions']).toEqual({ hostProcess: true, runAsUserName: 'NT AUTHORITY\\system' });
    expect(spec['serviceAccountName']).toBe('flannel-windows');
    expect(spec['tolerations']).toEqual(expect.arrayContaining([{ operator: 'Exists', effect: 'NoSchedule' }]));
    // A node agent stays through every NoSchedule and NoExecute taint (evicted, the node loses its pod network).
    expect(NODE_AGENT_TAINTS.filter((t) => !tolerates(spec['tolerations'] as Obj[], t))).toEqual([]);
    expect(tolerates([{ operator: 'Exists', effect: 'NoSchedule' }], NODE_AGENT_TAINTS[2])).toBe(false); // the matcher tells
    expect(ds['spec']['selector']['matchLabels']).toEqual({ app: 'flannel-windows' });
    expect(ds['spec']['template']['metadata']['labels']).toMatchObject({ app: 'flannel-windows' });
    // It reads the Linux manifest's ConfigMap in the same namespace, without owning it.
    expect(spec['volumes']).toEqual([{ name: 'flannel-cfg', configMap: { name: 'kube-flannel-cfg' } }]);
  });

  it('the overlay names the image in every container and the API server address', () => {
    const ds = find('DaemonSet', 'kube-flannel-ds-windows');
    const spec = ds['spec']['template']['spec'] as Obj;
    const containers = [...(spec['initContainers'] as Obj[]), ...(spec['containers'] as Obj[])];
    expect(containers.map((c) => c['name'])).toEqual(['install-cni-plugins', 'install-cni-config', 'kube-flannel']);
    const overlay = loadAllYaml(readFileSync(join(OVERLAY, 'kustomization.yaml'), 'utf8'))[0] as Obj;
    const img = (overlay['images'] as Obj[]).find((i) => i['name'] === 'flanneld-windows')!;
    for (const c of containers) expect(c['image']).toBe(`${img['newName']}:${img['newTag']}`);
    const cfg = find('ConfigMap', 'flanneld-windows-config');
    // Read from the cluster (kube-proxy's kubeconfig.conf server, kubeadm-config's serviceSubnet), not typed.
    expect(cfg['data']).toEqual({
      KUBERNETES_SERVICE_HOST: '10.0.0.5',
      KUBERNETES_SERVICE_PORT: '6443',
      SERVICE_CIDR: '10.96.0.0/12',
      KUBE_DNS_SERVICE_IP: '10.96.0.10',
      CNI_BIN_DIR: 'C:\\opt\\cni\\bin',
    });
    expect(cfg['metadata']['namespace']).toBe('kube-flannel');
  });

  it('ships no plausible sample settings: without cluster-config.yaml kubectl refuses to render the overlay', async () => {
    for (const f of yamlFiles(DEPLOY)) expect([f, readFileSync(f, 'utf8').includes('192.168.1.10')]).toEqual([f, false]);
    expect(existsSync(join(OVERLAY, 'cluster-config.yaml'))).toBe(false);
    const out = await kubectl(['kustomize', OVERLAY], env);
    expect(out.status).not.toBe(0);
    expect(out.stderr).toContain('cluster-config.yaml');
  });

  it('DaemonSet: plugins installed (pinned, hashed), the CNI config written, then the agent with NODE_NAME from the downward API', () => {
    const ds = find('DaemonSet', 'kube-flannel-ds-windows');
    const [plugins, cniConfig] = ds['spec']['template']['spec']['initContainers'] as Obj[];
    expect((plugins['args'] as string[]).join(' ')).toMatch(
      /flanneld\.exe'\) install-cni --pinned --pinned-dir \(Join-Path \$root 'cni-plugins'\) --bin-dir \$env:CNI_BIN_DIR --net-config-path \(Join-Path \$root 'etc\\kube-flannel\\net-conf\.json'\)/,
    );
    expect(plugins['envFrom']).toEqual([{ configMapRef: { name: 'flanneld-windows-config' } }]);
    // Both read the shared net-conf: sdnbridge.exe and the dual-stack conflist when it enables IPv6; run in
    // order on a fresh dual-stack node in journey-daemonset.test.ts.
    expect(plugins['volumeMounts']).toEqual([{ name: 'flannel-cfg', mountPath: '/etc/kube-flannel/' }]);
    expect((cniConfig['args'] as string[]).join(' ')).toContain('cni-config --kube-subnet-mgr');
    expect(cniConfig['env']).toEqual(expect.arrayContaining([{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }]));
    const c = (ds['spec']['template']['spec']['containers'] as Obj[]).find((x) => x['name'] === 'kube-flannel')!;
    expect(c['env']).toEqual(expect.arrayContaining([{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }]));
    expect(c['envFrom']).toEqual([{ configMapRef: { name: 'flanneld-windows-config' } }]);
    const args = (c['args'] as string[]).join(' ');
    expect(args).toContain('--kube-subnet-mgr');
    expect(args).toContain('$env:CONTAINER_SANDBOX_MOUNT_POINT');
    expect(args).toContain("'etc\\kube-flannel\\net-conf.json'");
    expect(args).not.toContain('--log-file'); // logs go to stdout
    // Readiness checks the conflist the init container wrote, and the plugins the other one installed.
    expect(args).toContain("--cni-conf-dir 'C:\\etc\\cni\\net.d' --cni-bin-dir $env:CNI_BIN_DIR");
    expect(c['volumeMounts']).toEqual([{ name: 'flannel-cfg', mountPath: '/etc/kube-flannel/' }]);
    expect(c['readinessProbe']['httpGet']).toEqual({ path: '/readyz', port: 10277 });
  });

  it("deploy/README.md's doctor recipe is the kube-flannel container's own command with doctor added, on variables the container has, and the built CLI takes it", () => {
    const ds = find('DaemonSet', 'kube-flannel-ds-windows');
    const c = (ds['spec']['template']['spec']['containers'] as Obj[]).find((x) => x['name'] === 'kube-flannel')!;
    const readme = readFileSync(join(DEPLOY, 'README.md'), 'utf8');
    const block = /<!-- doctor-recipe[^\n]*\n+```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    expect(block).toContain('kubectl -n kube-flannel exec "$POD" -c kube-flannel -- powershell.exe');
    const command = /-Command '([^']*)'/.exec(block)?.[1] ?? '';
    // The container's PowerShell, quotes aside (the recipe needs none: it sits in a shell's single quotes).
    const agent = (c['args'] as string[]).join(' ').replace(/'/g, '').replace(/\s+/g, ' ').trim();
    expect(command.replace('flanneld.exe) doctor ', 'flanneld.exe) ').replace(' --service-cidr $env:SERVICE_CIDR', '')).toBe(agent);
    // Every variable it reads is the container's: its env, its ConfigMap's keys, or HostProcess's sandbox mount point.
    const cm = find('ConfigMap', c['envFrom'][0]['configMapRef']['name'] as string);
    const has = new Set([...(c['env'] as Obj[]).map((e) => e['name'] as string), ...Object.keys(cm['data'] as Record<string, string>), 'CONTAINER_SANDBOX_MOUNT_POINT']);
    expect([...command.matchAll(/\$env:(\w+)/g)].map((m) => m[1]).filter((v) => !has.has(v))).toEqual([]);
    // The built CLI takes its flags (PowerShell's values put in, the sandbox a temporary directory, the node's
    // address loopback): doctor runs and judges (exit 0 or 1), never a usage error (2).
    const root = mkdtempSync(join(tmpdir(), 'flanneld-sandbox-'));
    try {
      mkdirSync(join(root, 'etc', 'kube-flannel'), { recursive: true });
      writeFileSync(join(root, 'etc', 'kube-flannel', 'net-conf.json'), JSON.stringify({ Network: '10.244.0.0/16', Backend: { Type: 'vxlan', VNI: 4096, Port: 4789 } }));
      const values: Record<string, string> = { ...(cm['data'] as Record<string, string>), NODE_IP: '127.0.0.1' };
      const flags = /flanneld\.exe\) (doctor .*); exit \$LASTEXITCODE$/
        .exec(command)![1]
        .replace(/\(Join-Path \$root ([^)]+)\)/g, (_m, p: string) => join(root, ...p.split('\\')))
        .replace(/\$env:(\w+)/g, (_m, v: string) => values[v] ?? '')
        .split(' ');
      const run = spawnSync(
        process.execPath,
        [MAIN, ...flags, '--dataplane=simulated', `--dataplane-state=${join(root, 'dataplane.json')}`, '--no-cluster', '--status-url=http://127.0.0.1:9/status', '--json'],
        {
          encoding: 'utf8',
          env: { PATH: process.env['PATH'] ?? '', NODE_NAME: 'win' },
        },
      );
      expect(run.stderr).toBe('');
      expect([0, 1]).toContain(run.status);
      expect((JSON.parse(run.stdout) as { checks: unknown[] }).checks.length).toBeGreaterThan(10);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

// Uninstall: deploy/overlays/example/cleanup renders the cleanup DaemonSet (deploy/cleanup), which runs the
// image's own `flanneld.exe cleanup` on every Windows node; what that command does without net-conf.json
// is replayed on the simulated node in test/integration/cleanup.test.ts.
describe('deploy/overlays/example/cleanup (kubectl apply -k --dry-run=client): the uninstall DaemonSet', () => {
  let server: Server;
  let dir: string;
  let objects: Obj[] = [];
  let rendered = { status: null as number | null, stderr: '' };

  beforeAll(async () => {
    server = discoveryServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    dir = mkdtempSync(join(tmpdir(), 'flanneld-cleanup-'));
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "http://127.0.0.1:${port}"}}]\nusers: [{name: u, user: {token: dummy}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n`,
    );
    const out = await kubectl(['apply', '-k', join(OVERLAY, 'cleanup'), '--dry-run=client', '--validate=false', '-o', 'json'], { HOME: dir, KUBECONFIG: kubeconfig });
    rendered = { status: out.status, stderr: out.stderr };
    const parsed = JSON.parse(out.stdout || '{}') as Obj;
    objects = parsed['kind'] === 'List' ? (parsed['items'] as Obj[]) : [parsed];
  }, 60_000);
  afterAll(async () => {
    await new Promise<void>((r) => server.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('is one HostProcess DaemonSet on Windows nodes, separate from the install (kubectl apply -k of the overlay does not create it)', () => {
    expect(rendered.stderr).toBe('');
    expect(rendered.status).toBe(0);
    expect(objects.map((o) => `${o['kind']}/${o['metadata']['name']}`)).toEqual(['DaemonSet/kube-flannel-ds-windows-cleanup']);
    const spec = objects[0]['spec']['template']['spec'] as Obj;
    expect(objects[0]['metadata']['namespace']).toBe('kube-flannel');
    expect(spec['nodeSelector']).toEqual({ 'kubernetes.io/os': 'windows' });
    expect(spec['securityContext']['windowsOptions']).toEqual({ hostProcess: true, runAsUserName: 'NT AUTHORITY\\system' });
    expect(spec['hostNetwork']).toBe(true);
    expect(spec['automountServiceAccountToken']).toBe(false); // cleanup calls no API server
    expect(NODE_AGENT_TAINTS.filter((t) => !tolerates(spec['tolerations'] as Obj[], t))).toEqual([]);
    expect(readFileSync(join(DEPLOY, 'base', 'kustomization.yaml'), 'utf8')).not.toContain('cleanup');
  });

  it("runs the image's own flanneld.exe cleanup with the shared net-conf when it still exists, and without it otherwise", () => {
    const spec = objects[0]['spec']['template']['spec'] as Obj;
    const [init] = spec['initContainers'] as Obj[];
    const overlay = loadAllYaml(readFileSync(join(OVERLAY, 'kustomization.yaml'), 'utf8'))[0] as Obj;
    const img = (overlay['images'] as Obj[]).find((i) => i['name'] === 'flanneld-windows')!;
    for (const c of [...(spec['initContainers'] as Obj[]), ...(spec['containers'] as Obj[])]) expect(c['image']).toBe(`${img['newName']}:${img['newTag']}`);
    const args = (init['args'] as string[]).join(' ');
    expect(args).toMatch(
      /\(Join-Path \$root 'flanneld\\flanneld\.exe'\) cleanup --net-config-path \(Join-Path \$root 'etc\\kube-flannel\\net-conf\.json'\);\s*exit \$LASTEXITCODE/,
    );
    expect(args).not.toContain('--force'); // never while the agent still runs
    expect(spec['volumes']).toEqual([{ name: 'flannel-cfg', configMap: { name: 'kube-flannel-cfg', optional: true } }]);
    expect(init['volumeMounts']).toEqual([{ name: 'flannel-cfg', mountPath: '/etc/kube-flannel/' }]);
  });
});

// The shared ConfigMap as the Linux manifest ships it (flannel-io/flannel Documentation/kube-flannel.yml:
// vxlan with no VNI or Port, i.e. VNI 1 / port 8472 on Linux).
const UPSTREAM_KUBE_FLANNEL_CFG = `kind: ConfigMap
apiVersion: v1
metadata:
  name: kube-flannel-cfg
  namespace: kube-flannel
  labels:
    tier: node
    k8s-app: flannel
    app: flannel
data:
  cni-conf.json: |
    {
      "name": "cbr0",
      "cniVersion": "0.3.1",
      "plugins": [
        { "type": "flannel", "delegate": { "hairpinMode": true, "isDefaultGateway": true } },
        { "type": "portmap", "capabilities": { "portMappings": true } }
      ]
    }
  net-conf.json: |
    {
      "Network": "10.244.0.0/16",
      "EnableNFTables": false,
      "Backend": {
        "Type": "vxlan"
      }
    }
`;

describe('the shared net-conf: flanneld netconf set-vni, and a guard against VNI 1', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'flanneld-netconf-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // `flanneld netconf set-vni` through the built CLI, on the ConfigMap as kubectl prints it, and its
  // output through `kubectl apply --dry-run=client` (discovery answered by the in-test server).
  async function applyDryRun(file: string): Promise<{ status: number | null; stderr: string; obj: Obj }> {
    const server = discoveryServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const port = (server.address() as { port: number }).port;
      const kubeconfig = join(dir, 'kubeconfig-apply');
      writeFileSync(
        kubeconfig,
        `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "http://127.0.0.1:${port}"}}]\nusers: [{name: u, user: {token: dummy}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n`,
      );
      const out = await kubectl(['apply', '--dry-run=client', '--validate=false', '-f', file, '-o', 'json'], { HOME: dir, KUBECONFIG: kubeconfig });
      return { status: out.status, stderr: out.stderr, obj: JSON.parse(out.stdout || '{}') as Obj };
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  }

  const upstream = loadAllYaml(UPSTREAM_KUBE_FLANNEL_CFG)[0] as Obj;

  it('flanneld netconf set-vni (YAML, as kubectl get -o yaml prints it) sets VNI 4096 / Port 4789, keeps EnableNFTables and cni-conf.json, and kubectl applies it', async () => {
    const cm = join(dir, 'cm.yaml');
    writeFileSync(cm, UPSTREAM_KUBE_FLANNEL_CFG);
    const dry = await exec(process.execPath, [MAIN, 'netconf', 'set-vni', '-f', cm, '--dry-run'], {});
    expect(dry.status).toBe(0);
    expect(dry.stdout).toContain('+    "VNI": 4096,\n+    "Port": 4789\n');
    expect(dry.stderr).toContain('ConfigMap (YAML): Backend.VNI (unset) -> 4096, Backend.Port (unset) -> 4789');
    const out = join(dir, 'cm-4096.yaml');
    const set = await exec(process.execPath, [MAIN, 'netconf', 'set-vni', '--vni', '4096', '--port', '4789', '-f', cm, '-o', out], {});
    expect(set.status).toBe(0);
    const applied = await applyDryRun(out);
    expect(applied.stderr).toBe('');
    expect(applied.status).toBe(0);
    expect(applied.obj['metadata']).toMatchObject({ name: 'kube-flannel-cfg', namespace: 'kube-flannel' });
    const nc = parseNetConf(applied.obj['data']['net-conf.json'] as string);
    expect(nc.backend).toMatchObject({ type: 'vxlan', vni: 4096, port: 4789, name: 'flannel.4096' });
    expect(JSON.parse(applied.obj['data']['net-conf.json'] as string)).toEqual({
      Network: '10.244.0.0/16',
      EnableNFTables: false,
      Backend: { Type: 'vxlan', VNI: 4096, Port: 4789 },
    });
    expect(applied.obj['data']['cni-conf.json']).toBe(upstream['data']['cni-conf.json']);
  });

  it('from stdin, the JSON ConfigMap (kubectl get -o json) with IPv6 keys: only VNI and Port change, and kubectl applies it', async () => {
    const netConf =
      '{\n  "Network": "10.244.0.0/16",\n  "EnableNFTables": true,\n  "EnableIPv6": true,\n  "IPv6Network": "2001:cafe:42::/56",\n  "Backend": {\n    "Type": "vxlan"\n  }\n}\n';
    const cm = JSON.stringify({ ...upstream, data: { ...(upstream['data'] as Obj), 'net-conf.json': netConf } }, null, 4);
    const r = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [MAIN, 'netconf', 'set-vni'], { env: { PATH: process.env['PATH'] ?? '' } });
      let so = '';
      let se = '';
      child.stdout.on('data', (b: Buffer) => (so += b.toString()));
      child.stderr.on('data', (b: Buffer) => (se += b.toString()));
      child.on('exit', (code) => resolve({ status: code, stdout: so, stderr: se }));
      child.stdin.end(cm);
    });
    expect(r.status).toBe(0);
    const file = join(dir, 'cm-4096.json');
    writeFileSync(file, r.stdout);
    const applied = await applyDryRun(file);
    expect(applied.status).toBe(0);
    expect(JSON.parse(applied.obj['data']['net-conf.json'] as string)).toEqual({
      Network: '10.244.0.0/16',
      EnableNFTables: true,
      EnableIPv6: true,
      IPv6Network: '2001:cafe:42::/56',
      Backend: { Type: 'vxlan', VNI: 4096, Port: 4789 },
    });
  });

  it.each([
    ['VNI 1 (the Linux default, written out)', { Type: 'vxlan', VNI: 1 }, { vni: 1 }, 'VNI [1] must be greater than or equal to 4096'],
    // Port 8472 written out is no longer refused here: HNS 10.3 takes it as a VxlanPort policy, and below 10.3
    // the agent refuses it with FLANNEL_ERR_HNS_VERSION (test/integration/vxlan-port.test.ts).
  ])('the agent and the CNI-config init container refuse to start a Windows node on %s', async (_what, backend, context, text) => {
    const nc = join(dir, 'net-conf.json');
    writeFileSync(nc, JSON.stringify({ Network: '10.244.0.0/16', Backend: backend }));
    // An API server that is never reached: the net-conf is checked first.
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "http://127.0.0.1:9"}}]\nusers: [{name: u, user: {token: x}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n',
    );
    const agent = await exec(
      process.execPath,
      [MAIN, '--kube-subnet-mgr', `--kubeconfig-file=${kubeconfig}`, `--net-config-path=${nc}`, '--dataplane=simulated', '--log-format=json'],
      { NODE_NAME: 'win-1' },
    );
    expect(agent.status).toBe(1);
    const err = (agent.stdout + agent.stderr)
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Obj)
      .find((l) => l['level'] === 'error');
    expect(err).toMatchObject({ code: 'FLANNEL_ERR_NET_CONF', path: nc, ...context });
    expect(err!['message']).toContain('flanneld netconf set-vni'); // says what to do
    // What the init container's user sees on stderr.
    const init = await exec(
      process.execPath,
      [MAIN, 'cni-config', '--dataplane=simulated', `--net-config-path=${nc}`, '--management-ip=10.0.0.20', '--management-subnet=10.0.0.0/24'],
      {},
    );
    expect(init.status).toBe(2);
    expect(init.stderr).toContain(text);
  });
});

// scripts/start.ps1 through a real PowerShell grammar (tree-sitter-powershell's wasm build on
// web-tree-sitter; pwsh itself is not available here).
describe('scripts/start.ps1', () => {
  const SCRIPT = join(process.cwd(), 'scripts', 'start.ps1');

  async function parser() {
    const { Parser, Language } = await import('web-tree-sitter');
    await Parser.init();
    const lang = await Language.load(join(process.cwd(), 'node_modules', 'tree-sitter-powershell', 'tree-sitter-powershell.wasm'));
    const p = new Parser();
    p.setLanguage(lang);
    return p;
  }

  function errors(root: { hasError: boolean; descendantsOfType(t: string): ({ startPosition: { row: number; column: number }; text: string } | null)[] }): string[] {
    if (!root.hasError) return [];
    return root.descendantsOfType('ERROR').map((n) => `line ${n!.startPosition.row + 1}:${n!.startPosition.column + 1}: ${n!.text.slice(0, 60)}`);
  }

  it('parses without syntax errors (and the check catches a broken script)', async () => {
    const p = await parser();
    const tree = p.parse(readFileSync(SCRIPT, 'utf8'))!;
    expect(errors(tree.rootNode)).toEqual([]);
    expect(tree.rootNode.hasError).toBe(false);
    const broken = p.parse('param([string]$A)\nif ($A { Write-Host "x" }\nfunction f {\n')!;
    expect(broken.rootNode.hasError).toBe(true);
  });

  it('takes the familiar parameters and waits with a bound', async () => {
    const p = await parser();
    const tree = p.parse(readFileSync(SCRIPT, 'utf8'))!;
    // A script_parameter's own `variable` child is its name ($true in an attribute is nested deeper).
    const params = tree.rootNode.descendantsOfType('script_parameter').map((n) => n.children.find((c) => c?.type === 'variable')?.text.slice(1));
    expect(params).toEqual(
      expect.arrayContaining([
        'ManagementIP',
        'NetworkMode',
        'ClusterCIDR',
        'ServiceCIDR',
        'KubeDnsServiceIP',
        'InterfaceName',
        'LogDir',
        'KubeConfig',
        'FlanneldExe',
        'TimeoutSeconds',
        'CniBinDir',
        'CniPluginSource',
        'CniPluginSha256',
      ]),
    );
    const text = readFileSync(SCRIPT, 'utf8');
    expect(text).toContain("[ValidateSet('l2bridge', 'overlay')]");
    expect(text).toContain('/readyz');
    expect(text).toMatch(/if \(\[DateTime\]::UtcNow -ge \$deadline\) \{\s*throw/);
    // The backend the script writes for overlay is the mixed-cluster one, on -VxlanPort, whose default is
    // flanneld's (DEFAULT_VXLAN_PORT: one constant, which the script cannot import); it names the inbound port.
    expect(text).toContain("Type = 'vxlan'; VNI = 4096; Port = $VxlanPort");
    expect(text).toContain(`[ValidateRange(1, 65535)][int]$VxlanPort = ${DEFAULT_VXLAN_PORT},`);
    expect(text).toContain('every node must accept inbound UDP $VxlanPort');
    // The CNI plugins are installed (pinned upstream releases, or the operator's sources with hashes) before the CNI config.
    expect(text).toContain('$pluginArgs = @(\'install-cni\', "--bin-dir=$CniBinDir")');
    expect(text).toContain("$pluginArgs += '--pinned'");
    expect(text).toContain("$pluginArgs += @('--source', $CniPluginSource[$i], '--sha256', $CniPluginSha256[$i])");
    // Pods dual-stack: the conflist runs sdnbridge.exe, which install-cni installs only when asked.
    expect(text).toContain("if ($podsDualStack) { $pluginArgs += '--sdnbridge' }");
    expect(text.indexOf("if ($podsDualStack) { $pluginArgs += '--sdnbridge' }")).toBeLessThan(text.indexOf('Invoke-Flanneld $pluginArgs'));
    expect(text.indexOf('Invoke-Flanneld $pluginArgs')).toBeGreaterThan(0);
    expect(text.indexOf('Invoke-Flanneld $pluginArgs')).toBeLessThan(text.indexOf('Invoke-Flanneld $cniConfigArgs'));
    // The conflist names the agent's subnet.env: -SubnetFile reaches cni-config as it reaches the agent.
    expect(text).toContain(`$cniConfigArgs = @('cni-config', "--net-config-path=$NetConfPath", "--subnet-file=$SubnetFile"`);
  });

  it('writes the conflist again once the agent recorded the HNS network it runs (an adopted vxlan0), before waiting for /readyz', () => {
    const text = readFileSync(SCRIPT, 'utf8');
    const render = 'Invoke-Flanneld $cniConfigArgs';
    const start = text.indexOf("Invoke-Flanneld @('service', 'start', '--name', $ServiceName");
    const record = text.indexOf("$bootRecord = Join-Path (Split-Path -Parent $SubnetFile) 'boot.json'");
    const second = text.indexOf(render, text.indexOf(render) + 1);
    const readyz = text.indexOf('/readyz"');
    expect([start > 0, start < record, record < second, second < readyz]).toEqual([true, true, true, true]);
    // This start's record only (a stale one would name the network of an earlier start), bounded.
    expect(text).toContain('.LastWriteTimeUtc -ge $serviceStartedAt');
    expect(text).toContain("$recordNetwork.Value.PSObject.Properties['name']");
    expect(text).toContain('"--cni-conf-dir=$(Split-Path -Parent $CniConfFile)"');
    expect(text).toContain('"--cni-bin-dir=$CniBinDir"');
  });

  // pwsh is not available here, so these read the script's structure; the journeys they guard (the network
  // name kept, the agent restarted) are replayed on the simulated node in migrations.test.ts.
  it('keeps the Backend.Name of the net-conf.json already on the node (microsoft/SDN: vxlan0), strict-mode safe', async () => {
    const p = await parser();
    const text = readFileSync(SCRIPT, 'utf8');
    const tree = p.parse(text)!;
    const params = tree.rootNode.descendantsOfType('script_parameter').map((n) => n.children.find((c) => c?.type === 'variable')?.text);
    expect(params).toContain('$NetworkName');
    // Read before it is overwritten, through PSObject.Properties (Set-StrictMode -Version Latest throws on a
    // missing property), and put into the Backend written.
    const read = text.indexOf('$oldNetConf = [System.IO.File]::ReadAllText($NetConfPath)');
    const write = text.indexOf('[System.IO.File]::WriteAllText($NetConfPath, $netConf)');
    expect(read).toBeGreaterThan(0);
    expect(read).toBeLessThan(write);
    expect(text).toContain("$oldBackend = $old.PSObject.Properties['Backend']");
    expect(text).toContain("$oldBackend.Value.PSObject.Properties['Name']");
    // Only when the old Backend.Type is the one written now: a -NetworkMode change takes the new type's default.
    expect(text).toContain("$oldBackend.Value.PSObject.Properties['Name'] -and $oldType -ceq $backend['Type']");
    expect(text.indexOf("$backend['Name'] = $NetworkName")).toBeGreaterThan(read);
    expect(text.indexOf("$backend['Name'] = $NetworkName")).toBeLessThan(text.indexOf("$netConfFields['Backend'] = $backend"));
  });

  it('run again with the service running: restarts it when its flags or net-conf.json changed, and says so', async () => {
    const p = await parser();
    const text = readFileSync(SCRIPT, 'utf8');
    expect(p.parse(text)!.rootNode.hasError).toBe(false);
    const at = (needle: string) => {
      const i = text.indexOf(needle);
      expect([needle, i >= 0]).toEqual([needle, true]);
      return i;
    };
    const before = at('$before = Get-FlanneldService');
    const install = at("Invoke-Flanneld (@('service', 'install'");
    const after = at('$after = Get-FlanneldService');
    const stop = at("Invoke-Flanneld @('service', 'stop', '--name', $ServiceName");
    const start = at("Invoke-Flanneld @('service', 'start', '--name', $ServiceName");
    expect([before < install, install < after, after < stop, stop < start]).toEqual([true, true, true, true]);
    expect(text).toContain("if ($before -and $before['state'] -eq 'RUNNING')");
    // Case-sensitive comparisons (-cne): flanneld and HNS names are case-sensitive, PowerShell's -ne is not.
    expect(text).toContain("$flagsChanged = (-not $after) -or ($before['binary-path'] -cne $after['binary-path'])");
    expect(text).toContain('if ($flagsChanged -or $netConfChanged)');
    expect(text).toContain('$netConfChanged = $oldNetConf -cne $netConf');
    expect(text).toContain('Write-Host "Restarting service $ServiceName to apply the new');
    expect(text).toContain('not restarted"');
    // The script's field pattern reads what flanneld-service.exe status prints (packaging/service-host.c cmd_status).
    const pattern = /'\^\(\[a-z-\]\+\): \(\.\*\)\$'/.exec(text)![0].slice(1, -1);
    const status =
      'name: flanneld\nstate: RUNNING\npid: 4242\nexit-code: 0\nservice-exit-code: 0\nstart-type: auto\naccount: LocalSystem\nbinary-path: "C:\\k\\flannel\\flanneld-service.exe" run --name flanneld -- --iface=10.0.0.2\n';
    const fields = Object.fromEntries(
      status.split('\n').flatMap((l) => {
        const m = new RegExp(pattern).exec(l);
        return m ? [[m[1], m[2]]] : [];
      }),
    );
    expect(fields).toMatchObject({ state: 'RUNNING', 'binary-path': '"C:\\k\\flannel\\flanneld-service.exe" run --name flanneld -- --iface=10.0.0.2' });
    const c = readFileSync(join(process.cwd(), 'packaging', 'service-host.c'), 'utf8');
    expect(c).toContain('L"name: %ls\\nstate: %ls\\npid:');
    expect(c).toContain('binary-path: %ls\\n');
    expect(c).toContain('return L"RUNNING"');
  });

  // Dual-stack (docs/install.md "Dual-stack"): Kubernetes' "<v4>,<v6>" form of -ClusterCIDR / -ServiceCIDR.
  it('takes the dual-stack form of -ClusterCIDR and -ServiceCIDR, and -IPv4Only / -PublicIPv6', async () => {
    const p = await parser();
    const text = readFileSync(SCRIPT, 'utf8');
    const tree = p.parse(text)!;
    expect(tree.rootNode.hasError).toBe(false);
    // Name -> declared type of every parameter. Unquoted, PowerShell passes 10.244.0.0/16,fd00::/56 as an
    // array, which a [string] parameter would join with a space: the CIDRs must be [string[]].
    const params = Object.fromEntries(
      tree.rootNode
        .descendantsOfType('script_parameter')
        .map((n): [string, string] => [
          n.children.find((c) => c?.type === 'variable')?.text.slice(1) ?? '',
          /^\[[\w[\]]+\]/.exec(n.text.replace(/^\[Parameter\([^)]*\)\]/, ''))?.[0] ?? '',
        ]),
    );
    expect(params).toMatchObject({ ClusterCIDR: '[string[]]', ServiceCIDR: '[string[]]', IPv4Only: '[switch]', PublicIPv6: '[string]' });
    // Split on commas after joining (the quoted form is one string), one IPv4 and at most one IPv6.
    expect(text).toContain("$parts = @($Value | ForEach-Object { $_ -split ',' }");
    expect(text).toContain('if ($v4.Count -ne 1 -or $v6.Count -gt 1) {');
  });

  it("writes the dual-stack net-conf with flannel's own keys, which the agent reads as dual-stack", () => {
    const text = readFileSync(SCRIPT, 'utf8');
    // The keys the script sets, in its order, filled as it fills them: parseNetConf must read them as dual-stack.
    const keys = [...text.matchAll(/\$netConfFields(?: = \[ordered\]@\{ (\w+) =|\['(\w+)'\] =)/g)].map((m) => m[1] ?? m[2]);
    expect(keys).toEqual(['Network', 'EnableIPv6', 'IPv6Network', 'Backend']);
    const values: Record<string, unknown> = { Network: '10.244.0.0/16', EnableIPv6: true, IPv6Network: 'fd00:10:244::/56', Backend: { Type: 'host-gw' } };
    const nc = parseNetConf(JSON.stringify(Object.fromEntries(keys.map((k) => [k, values[k]]))));
    expect([nc.enableIPv6, nc.ipv6Network, nc.network]).toEqual([true, 'fd00:10:244::/56', '10.244.0.0/16']);
    expect(text).toContain('$netConfFields = [ordered]@{ Network = $clusterCidrs.IPv4 }');
    expect(text).toMatch(/if \(\$dualStack\) \{\s*\$netConfFields\['EnableIPv6'\] = \$true\s*\$netConfFields\['IPv6Network'\] = \$clusterCidrs\.IPv6/);
  });

  it('overlay with a dual-stack -ClusterCIDR needs -IPv4Only, refused before anything is written or run', () => {
    const text = readFileSync(SCRIPT, 'utf8');
    const refuse = text.indexOf("if ($dualStack -and $NetworkMode -eq 'overlay' -and -not $IPv4Only) {");
    expect(refuse).toBeGreaterThan(0);
    expect(text.slice(refuse, refuse + 400)).toMatch(/^[^\n]*\n\s*throw \("-NetworkMode overlay cannot carry IPv6 on Windows[^"]*pass -IPv4Only/);
    const firstEffect = Math.min(text.indexOf('WriteAllText'), text.indexOf('Invoke-Flanneld $pluginArgs'), text.indexOf("Invoke-Flanneld (@('service'"));
    expect(refuse).toBeLessThan(firstEffect);
  });

  it('passes the agent and cni-config only flags they have, the dual-stack ones included', () => {
    const text = readFileSync(SCRIPT, 'utf8');
    const block = (start: string) => {
      const i = text.indexOf(start);
      expect([start, i >= 0]).toEqual([start, true]);
      return text.slice(i, text.indexOf('\n\n', i));
    };
    const flagsIn = (src: string) => [...src.matchAll(/['"]--([a-z][a-z0-9-]*)/g)].map((m) => m[1]);
    const agentFlags = new Set(FLAGS.map((f) => f.name));
    const cniFlags = new Set([...CNI_CONFIG_FLAGS.map((f) => f.name), ...agentFlags]);
    const agentBlock = block('$agentArgs = @(').split('\n)\n')[0];
    const familyBlock = block('# The flags cni-config shares with the agent');
    const familyLines = familyBlock.split('\n').filter((l) => l.includes('$familyArgs +='));
    const cniLines = familyBlock.slice(familyBlock.indexOf('$cniConfigArgs = @('));
    // The agent's own, and the family flags (they go to both); cni-config's own with the agent flags it takes.
    expect(flagsIn(agentBlock + familyLines.join('\n')).filter((f) => !agentFlags.has(f))).toEqual([]);
    expect(flagsIn(cniLines).filter((f) => !cniFlags.has(f))).toEqual([]);
    expect(flagsIn(agentBlock)).toContain('kube-subnet-mgr'); // the blocks hold what they should
    // -IPv4Only and -PublicIPv6 reach both the agent and cni-config; the IPv6 Service CIDR reaches cni-config.
    expect(familyBlock).toContain("if ($IPv4Only) { $familyArgs += '--ipv4-only' }");
    expect(familyBlock).toContain('if ($PublicIPv6) { $familyArgs += "--public-ipv6=$PublicIPv6" }');
    expect(familyBlock).toContain('$agentArgs += $familyArgs');
    expect(familyBlock).toMatch(/"--service-cidr=\$\(\$serviceCidrs\.IPv4\)".*\+ \$familyArgs/s);
    expect(familyBlock).toContain('if ($podsDualStack -and $serviceCidrs.IPv6) { $cniConfigArgs += "--ipv6-service-cidr=$($serviceCidrs.IPv6)" }');
    expect(flagsIn(familyBlock)).toEqual(expect.arrayContaining(['ipv4-only', 'public-ipv6', 'ipv6-service-cidr']));
    // The dual-stack conflist names the subnets the agent writes to subnet.env: only rendered once it has.
    expect(text).toMatch(/if \(-not \$podsDualStack\) \{\s*Invoke-Flanneld \$cniConfigArgs\s*\}/);
    // The dual-stack block at the end now runs: subnet.env has FLANNEL_IPV6_SUBNET once EnableIPv6 is written.
    expect(text).toContain("Select-String -Quiet -Pattern '^FLANNEL_IPV6_SUBNET='");
  });

  // docs/install.md "NetworkPolicy": -NetworkPolicy passes the agent's --network-policy (not cni-config's).
  it('-NetworkPolicy is a switch that passes --network-policy to the agent only', async () => {
    const p = await parser();
    const text = readFileSync(SCRIPT, 'utf8');
    const tree = p.parse(text)!;
    const param = tree.rootNode.descendantsOfType('script_parameter').find((n) => n.children.find((c) => c?.type === 'variable')?.text === '$NetworkPolicy');
    expect(param?.text).toBe('[switch]$NetworkPolicy');
    expect(FLAGS.find((f) => f.name === 'network-policy')).toMatchObject({ kind: 'bool', default: false });
    const line = "if ($NetworkPolicy) { $agentArgs += '--network-policy' }";
    expect(text).toContain(line);
    // After the agent's arguments are built and before the service is installed with them.
    expect(text.indexOf(line)).toBeGreaterThan(text.indexOf('$agentArgs = @('));
    expect(text.indexOf(line)).toBeLessThan(text.indexOf("Invoke-Flanneld (@('service', 'install'"));
    const install = readFileSync(join(process.cwd(), 'docs', 'install.md'), 'utf8');
    expect(install).toContain('pass `-NetworkPolicy` to `start.ps1`');
    expect(install).toContain('flanneld cluster-config --network-policy');
  });

  it("docs/install.md's dual-stack examples use only the script's parameters", async () => {
    const p = await parser();
    const tree = p.parse(readFileSync(SCRIPT, 'utf8'))!;
    const params = new Set(tree.rootNode.descendantsOfType('script_parameter').map((n) => n.children.find((c) => c?.type === 'variable')?.text.slice(1)));
    const install = readFileSync(join(process.cwd(), 'docs', 'install.md'), 'utf8');
    const section = install.slice(install.indexOf('### Dual-stack'), install.indexOf('\n## ', install.indexOf('### Dual-stack')));
    const examples = [...section.matchAll(/```powershell\n([\s\S]*?)```/g)].map((m) => m[1]).filter((c) => c.includes('start.ps1'));
    expect(examples.length).toBeGreaterThanOrEqual(2);
    const used = examples.flatMap((c) => [...c.matchAll(/\s-([A-Z][A-Za-z0-9]*)/g)].map((m) => m[1]));
    expect(used).toEqual(expect.arrayContaining(['ClusterCIDR', 'ServiceCIDR', 'IPv4Only']));
    expect(used.filter((u) => !params.has(u))).toEqual([]);
  });

  it('serves health and /metrics on the node IP by default, as docs/metrics.md says and scrapes (-HealthzIP)', async () => {
    const p = await parser();
    const text = readFileSync(SCRIPT, 'utf8');
    const tree = p.parse(text)!;
    expect(tree.rootNode.hasError).toBe(false);
    const params = tree.rootNode.descendantsOfType('script_parameter').map((n) => n.children.find((c) => c?.type === 'variable')?.text);
    expect(params).toEqual(expect.arrayContaining(['$HealthzIP', '$HealthzPort', '$ManagementIP']));
    expect(text).not.toContain('--healthz-ip=127.0.0.1');
    const defaulted = text.indexOf("if ($HealthzIP -eq '') { $HealthzIP = $ManagementIP }");
    const passed = text.indexOf('"--healthz-ip=$HealthzIP"');
    expect([defaulted > 0, passed > defaulted]).toEqual([true, true]);
    // The readiness poll asks where the agent listens (127.0.0.1 only for 0.0.0.0, which also answers there).
    expect(text).toContain("$healthzHost = if ($HealthzIP -eq '0.0.0.0') { '127.0.0.1' } else { $HealthzIP }");
    expect(text).toContain('-Uri "http://${healthzHost}:$HealthzPort/readyz"');
    // The docs name the flag and the default the scrape config relies on.
    const metrics = readFileSync(join(process.cwd(), 'docs', 'metrics.md'), 'utf8');
    expect(metrics).toContain('`start.ps1` use port 10277 on the node IP');
    expect(metrics).toContain('`start.ps1`\ntakes `-HealthzIP`, default its `-ManagementIP`');
    expect(readFileSync(join(process.cwd(), 'docs', 'install.md'), 'utf8')).toContain('-HealthzIP 127.0.0.1');
  });
});

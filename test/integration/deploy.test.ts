// deploy/ manifests through the real kubectl: `kubectl apply --dry-run=client` (client-side only; kubectl
// needs API discovery to map kinds, which a tiny in-test discovery server answers), then the key fields
// asserted on kubectl's own JSON rendering: exact RBAC rules, HostProcess as SYSTEM, the mixed-cluster
// VNI/port, NODE_NAME from the downward API, the API server address from the admin's ConfigMap.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseNetConf } from '../../src/subnet/net-conf.js';

const DEPLOY = join(process.cwd(), 'deploy');

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Legacy (non-aggregated) discovery for the kinds deploy/ uses. */
function discoveryServer(): Server {
  const res = (group: string, version: string, resources: [string, string, boolean][]) => ({
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: group ? `${group}/${version}` : version,
    resources: resources.map(([name, kind, namespaced]) => ({ name, singularName: '', namespaced, kind, verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'] })),
  });
  const group = (name: string, version: string) => ({ name, versions: [{ groupVersion: `${name}/${version}`, version }], preferredVersion: { groupVersion: `${name}/${version}`, version } });
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
    ]),
  };
  return createServer((req, response) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const doc = docs[path];
    response.writeHead(doc ? 200 : 404, { 'Content-Type': 'application/json' });
    response.end(JSON.stringify(doc ?? { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotFound', code: 404 }));
  });
}

/** kubectl, asynchronously: spawnSync would block the discovery server living in this process. */
function kubectl(args: string[], env: Record<string, string>): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('kubectl', args, { env: { PATH: process.env['PATH'] ?? '', ...env } });
    let so = '';
    let se = '';
    child.stdout.on('data', (b: Buffer) => (so += b.toString()));
    child.stderr.on('data', (b: Buffer) => (se += b.toString()));
    child.on('error', (err) => resolve({ status: -1, stdout: '', stderr: `kubectl could not be run (it is preinstalled on CI machines): ${err.message}` }));
    child.on('exit', (code) => resolve({ status: code, stdout: so, stderr: se }));
  });
}

describe('deploy/ manifests (kubectl apply --dry-run=client)', () => {
  let server: Server;
  let dir: string;
  let objects: Obj[] = [];
  let stderr = '';
  let status: number | null = null;
  let env: Record<string, string> = {};

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
    const out = await kubectl(['apply', '--dry-run=client', '--validate=false', '-o', 'json', '-f', DEPLOY], env);
    status = out.status;
    stderr = out.stderr;
    const parsed = JSON.parse(out.stdout || '{}') as Obj;
    objects = parsed['kind'] === 'List' ? (parsed['items'] as Obj[]) : [parsed];
  }, 60_000);

  afterAll(async () => {
    await new Promise<void>((r) => server.close(() => r()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('the check is not vacuous: kubectl rejects a broken manifest', async () => {
    const bad = join(dir, 'bad');
    mkdirSync(bad);
    writeFileSync(join(bad, 'x.yml'), 'apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: x\n spec: [\n');
    const out = await kubectl(['apply', '--dry-run=client', '--validate=false', '-o', 'json', '-f', bad], env);
    expect(out.status).not.toBe(0);
  });

  const find = (kind: string, name: string): Obj => {
    const o = objects.find((x) => x['kind'] === kind && x['metadata']?.['name'] === name);
    if (!o) throw new Error(`no ${kind} ${name} in kubectl's output: ${objects.map((x) => `${x['kind']}/${x['metadata']?.['name']}`).join(', ')}`);
    return o;
  };

  it('kubectl accepts every manifest', () => {
    expect(stderr).toBe('');
    expect(status).toBe(0);
    const files = readdirSync(DEPLOY).filter((f) => /\.ya?ml$/.test(f));
    expect(files.length).toBeGreaterThanOrEqual(4);
    expect(objects.map((o) => `${o['kind']}/${o['metadata']['name']}`).sort()).toEqual(
      [
        'ClusterRole/flannel-windows',
        'ClusterRoleBinding/flannel-windows',
        'ConfigMap/flanneld-windows-config',
        'ConfigMap/kube-flannel-cfg',
        'DaemonSet/kube-flannel-ds-windows',
        'Namespace/kube-flannel',
        'ServiceAccount/flannel',
      ].sort(),
    );
  });

  it('RBAC: exactly flannel\'s rules, bound to the flannel ServiceAccount', () => {
    const role = find('ClusterRole', 'flannel-windows');
    expect(role['rules']).toEqual([
      { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
      { apiGroups: [''], resources: ['nodes'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch'] },
    ]);
    const binding = find('ClusterRoleBinding', 'flannel-windows');
    expect(binding['roleRef']).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'flannel-windows' });
    expect(binding['subjects']).toEqual([{ kind: 'ServiceAccount', name: 'flannel', namespace: 'kube-flannel' }]);
    expect(find('ServiceAccount', 'flannel')['metadata']['namespace']).toBe('kube-flannel');
    expect(find('Namespace', 'kube-flannel')['metadata']['labels']['pod-security.kubernetes.io/enforce']).toBe('privileged');
  });

  it('kube-flannel-cfg: a mixed-cluster vxlan net-conf (VNI 4096, Port 4789) this agent accepts', () => {
    const cm = find('ConfigMap', 'kube-flannel-cfg');
    expect(cm['metadata']['namespace']).toBe('kube-flannel');
    const raw = JSON.parse(cm['data']['net-conf.json'] as string) as Obj;
    expect(raw['Backend']).toEqual({ Type: 'vxlan', VNI: 4096, Port: 4789 });
    const nc = parseNetConf(cm['data']['net-conf.json'] as string);
    expect(nc.backend).toMatchObject({ type: 'vxlan', vni: 4096, port: 4789, name: 'flannel.4096' });
    // The Linux nodes' CNI config stays in the same ConfigMap.
    expect(JSON.parse(cm['data']['cni-conf.json'] as string)['plugins'][0]['type']).toBe('flannel');
  });

  it('DaemonSet: Windows only, HostProcess as SYSTEM, host network, tolerations', () => {
    const ds = find('DaemonSet', 'kube-flannel-ds-windows');
    const spec = ds['spec']['template']['spec'] as Obj;
    expect(ds['metadata']['namespace']).toBe('kube-flannel');
    expect(spec['nodeSelector']).toEqual({ 'kubernetes.io/os': 'windows' });
    expect(spec['hostNetwork']).toBe(true);
    expect(spec['securityContext']['windowsOptions']).toEqual({ hostProcess: true, runAsUserName: 'NT AUTHORITY\\system' });
    expect(spec['serviceAccountName']).toBe('flannel');
    expect(spec['tolerations']).toEqual(expect.arrayContaining([{ operator: 'Exists', effect: 'NoSchedule' }]));
    expect(ds['spec']['selector']['matchLabels']).toEqual({ app: 'flannel-windows' });
    expect(ds['spec']['template']['metadata']['labels']).toMatchObject({ app: 'flannel-windows' });
  });

  it('DaemonSet: NODE_NAME from the downward API, API server address from the admin ConfigMap, config via the sandbox mount', () => {
    const ds = find('DaemonSet', 'kube-flannel-ds-windows');
    const c = (ds['spec']['template']['spec']['containers'] as Obj[]).find((x) => x['name'] === 'kube-flannel')!;
    expect(c['env']).toEqual(expect.arrayContaining([{ name: 'NODE_NAME', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } }]));
    expect(c['envFrom']).toEqual([{ configMapRef: { name: 'flanneld-windows-config' } }]);
    const args = (c['args'] as string[]).join(' ');
    expect(args).toContain('--kube-subnet-mgr');
    expect(args).toContain('$env:CONTAINER_SANDBOX_MOUNT_POINT');
    expect(args).toContain("'etc\\kube-flannel\\net-conf.json'");
    expect(args).not.toContain('--log-file'); // logs go to stdout
    expect(c['volumeMounts']).toEqual([{ name: 'flannel-cfg', mountPath: '/etc/kube-flannel/' }]);
    expect(c['readinessProbe']['httpGet']).toEqual({ path: '/readyz', port: 10277 });
    const cfg = find('ConfigMap', 'flanneld-windows-config');
    expect(Object.keys(cfg['data'] as Obj)).toEqual(expect.arrayContaining(['KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT']));
    const init = (ds['spec']['template']['spec']['initContainers'] as Obj[])[0]!;
    expect((init['args'] as string[]).join(' ')).toContain('cni-config');
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
    const params = tree.rootNode.descendantsOfType('script_parameter').map((n) => n!.children.find((c) => c?.type === 'variable')?.text.slice(1));
    expect(params).toEqual(
      expect.arrayContaining(['ManagementIP', 'NetworkMode', 'ClusterCIDR', 'ServiceCIDR', 'KubeDnsServiceIP', 'InterfaceName', 'LogDir', 'KubeConfig', 'FlanneldExe', 'TimeoutSeconds']),
    );
    const text = readFileSync(SCRIPT, 'utf8');
    expect(text).toContain("[ValidateSet('l2bridge', 'overlay')]");
    expect(text).toContain('/readyz');
    expect(text).toMatch(/if \(\[DateTime\]::UtcNow -ge \$deadline\) \{\s*throw/);
    // The backend the script writes for overlay is the mixed-cluster one.
    expect(text).toContain("Type = 'vxlan'; VNI = 4096; Port = 4789");
  });
});

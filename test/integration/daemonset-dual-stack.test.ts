// The DaemonSet on a fresh dual-stack Windows node: the rendered manifest's own container command lines
// (`kubectl kustomize deploy/base`; PowerShell interpreted by test/support/powershell.ts) run in order
// against the simulated node and the fake API server, as the kubelet runs them: install-cni-plugins,
// then install-cni-config, then the agent. Nothing has run on the node before: no subnet.env, no boot
// record, no CNI config, no plugins. The node must end ready (/readyz 200: the network up and the CNI
// config fitting it, plugins included) with the dual-stack conflist in C:\etc\cni\net.d.
//
// What stands in for the node, and why:
//  * C:\ is a folder of the test (Windows paths in arguments and variables map to it);
//    $CONTAINER_SANDBOX_MOUNT_POINT holds what a HostProcess container sees of its image and volumes
//    (flanneld\flanneld.exe, etc\kube-flannel\net-conf.json from the ConfigMap volume, the service
//    account token and CA, and cni-plugins\ with the release files an image built with CNI_PLUGINS has);
//  * flanneld.exe is the built CLI (node dist/main.js) of a build that pins the test's stand-in releases
//    (test/support/pinned-build.ts: the real releases cannot be downloaded here);
//  * the dataplane is the simulated node (FLANNELD_DATAPLANE=simulated with its state file), and each
//    path flag's Windows default is given in FLANNELD_* as its C:\ mapping, as the Windows build defaults to it;
//  * the agent's health endpoints listen on 127.0.0.1 at a free port (appended flags: the manifest's
//    NODE_IP is the simulated node's address, which this host does not have), its log is JSON;
//  * the API server is the fake one over TLS with a bearer token, reached through the in-cluster config
//    the ConfigMap's KUBERNETES_SERVICE_HOST/_PORT name, as in a cluster.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAllYaml } from '@kubernetes/client-node';
import { FakeKubeApiServer, bareNode } from '../../src/demo/kube-fake/api-server.js';
import { SimulatedDataplane } from '../../src/simulator/model.js';
import { FLAGS, envVarName } from '../../src/config/flags.js';
import { freePort, WIN_IP } from '../support/cluster.js';
import { issueCert, makeTestCa } from '../support/etcd.js';
import { fakeReleases } from '../support/cni-releases.js';
import { pinnedBuild } from '../support/pinned-build.js';
import { runPowerShell } from '../support/powershell.js';
import { editState } from '../support/sim-dataplane.js';
import { SimAgent, SimNodeState } from '../support/sim-node.js';

// kubectl's rendering, read field by field below (kubectl validated the schema).
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-return */
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const WIN = 'win-1';
const WIN_IP6 = 'fd00:10::2';
const V4 = '10.244.5.0/24';
const V6 = 'fd00:10:244:5::/64';
const NET_CONF = { Network: '10.244.0.0/16', EnableIPv6: true, IPv6Network: 'fd00:10:244::/56', Backend: { Type: 'host-gw' } };
const SANDBOX = 'C:\\C\\flanneld-sandbox';
const TOKEN = 'daemonset-service-account-token';

let dir: string;
let driveC: string;
let api: FakeKubeApiServer;
let main: string;
let daemonSet: Obj;
let state: SimNodeState;
const started: SimAgent[] = [];

/** A Windows path (`C:\etc\cni\net.d`) as the test's folder for drive C; anything else unchanged. */
const onHost = (v: string): string => (/^[Cc]:\\/.test(v) ? join(driveC, ...v.slice(3).split('\\').filter(Boolean)) : v);

/** `kubectl kustomize deploy/base`: the DaemonSet as the cluster gets it. */
function renderedDaemonSet(): Promise<Obj> {
  return new Promise<Obj>((resolve, reject) => {
    const child = spawn('kubectl', ['kustomize', join(process.cwd(), 'deploy', 'base')], { env: { PATH: process.env['PATH'] ?? '', HOME: dir } });
    let out = '';
    let err = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (err += b.toString()));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`kubectl kustomize exited ${code}: ${err}`));
      const ds = (loadAllYaml(out) as Obj[]).find((o) => o['kind'] === 'DaemonSet');
      return ds ? resolve(ds) : reject(new Error('no DaemonSet in deploy/base'));
    });
  });
}

/** The container's environment, as the kubelet builds it from envFrom and env (the downward API's fields for this pod). */
function containerEnv(c: Obj, configMap: Record<string, string>): Record<string, string> {
  const fields: Record<string, string> = { 'spec.nodeName': WIN, 'status.hostIP': WIN_IP, 'metadata.name': 'kube-flannel-ds-windows-x1', 'metadata.namespace': 'kube-flannel' };
  const env: Record<string, string> = {};
  for (const from of (c['envFrom'] ?? []) as Obj[]) {
    if (from['configMapRef']?.['name'] !== 'flanneld-windows-config') throw new Error(`unexpected envFrom ${JSON.stringify(from)}`);
    Object.assign(env, configMap);
  }
  for (const e of (c['env'] ?? []) as Obj[]) {
    const path = e['valueFrom']?.['fieldRef']?.['fieldPath'] as string | undefined;
    if (path !== undefined && fields[path] === undefined) throw new Error(`no downward API value for ${path}`);
    env[e['name'] as string] = path !== undefined ? fields[path] : String(e['value']);
  }
  return env;
}

/** What every container of the pod has beside its own variables: the sandbox, and this node's stand-ins. */
function nodeEnv(): Record<string, string> {
  const env: Record<string, string> = {
    CONTAINER_SANDBOX_MOUNT_POINT: SANDBOX,
    FLANNELD_DATAPLANE: 'simulated',
    FLANNELD_DATAPLANE_STATE: state.path,
    FLANNELD_LOG_FORMAT: 'json',
  };
  for (const f of FLAGS) if (typeof f.windowsDefault === 'string' && f.name !== 'dataplane') env[envVarName(f.name)] = f.windowsDefault.split(',').map(onHost).join(',');
  return env;
}

/** Run a container's `powershell.exe ... -Command <script>`; `flanneld` runs the flanneld.exe it calls. */
async function runContainer(c: Obj, configMap: Record<string, string>, flanneld: (args: string[], env: Record<string, string>) => Promise<number>): Promise<number> {
  const command = c['command'] as string[];
  expect([command[0], command[command.length - 1]]).toEqual(['powershell.exe', '-Command']);
  const env = { ...nodeEnv(), ...containerEnv(c, configMap) };
  return runPowerShell((c['args'] as string[]).join(' '), {
    env,
    run: (program, args) => {
      if (!/\\flanneld\\flanneld\.exe$/i.test(program) || !program.toLowerCase().startsWith(SANDBOX.toLowerCase()))
        throw new Error(`${c['name']} runs ${program}, not the image's flanneld.exe`);
      return flanneld(args.map(onHost), Object.fromEntries(Object.entries(env).map(([k, v]) => [k, onHost(v)])));
    },
  });
}

/** A command that exits: its exit code, with its output kept for the failure message. */
function exited(name: string, args: string[], env: Record<string, string>, log: string[]): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [main, ...args], { env: { PATH: process.env['PATH'] ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    child.on('exit', (code) => {
      log.push(`--- ${name}: flanneld ${args.join(' ')} (exit ${code})\n${out}`);
      resolve(code ?? -1);
    });
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'flanneld-ds-dual-'));
  driveC = join(dir, 'c');
  const ca = makeTestCa(dir, 'ca');
  const cert = issueCert(ca, dir, 'kube-apiserver', 'server');
  api = new FakeKubeApiServer({ bearerToken: TOKEN, tls: { cert: readFileSync(cert.certFile), key: readFileSync(cert.keyFile) } });
  await api.start();
  const node = bareNode({ name: WIN, podCIDR: V4, internalIP: WIN_IP });
  node.spec = { podCIDR: V4, podCIDRs: [V4, V6] };
  api.addNode(node);

  const fakes = await fakeReleases();
  main = pinnedBuild(join(dir, 'build'), { releases: fakes.releases.map((r) => r.pin), dualStack: fakes.dualStack.map((r) => r.pin) });
  const sandbox = onHost(SANDBOX);
  const sa = join(sandbox, 'var', 'run', 'secrets', 'kubernetes.io', 'serviceaccount');
  mkdirSync(sa, { recursive: true });
  writeFileSync(join(sa, 'token'), TOKEN);
  writeFileSync(join(sa, 'ca.crt'), readFileSync(ca.certFile));
  mkdirSync(join(sandbox, 'etc', 'kube-flannel'), { recursive: true });
  writeFileSync(join(sandbox, 'etc', 'kube-flannel', 'net-conf.json'), JSON.stringify(NET_CONF));
  mkdirSync(join(sandbox, 'flanneld'), { recursive: true });
  writeFileSync(join(sandbox, 'flanneld', 'flanneld.exe'), 'the image holds the Windows build here; the test runs the built CLI');
  mkdirSync(join(sandbox, 'cni-plugins'), { recursive: true });
  for (const r of [...fakes.releases, ...fakes.dualStack]) writeFileSync(join(sandbox, 'cni-plugins', r.file), r.data);

  // A fresh Windows node: its adapter with both families, nothing else.
  state = new SimNodeState(join(dir, 'dataplane.json'));
  editState(new SimulatedDataplane({ statePath: state.path, nodeIP: WIN_IP }), (st) =>
    st.adapters.filter((a) => a.IPAddress === WIN_IP).forEach((a) => Object.assign(a, { IPv6Address: WIN_IP6, IPv6PrefixLength: 64 })),
  );
  daemonSet = await renderedDaemonSet();
}, 120_000);

afterAll(async () => {
  for (const a of started) await a.stop();
  await api?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('the DaemonSet on a fresh dual-stack node', () => {
  it('its init containers then the agent, as rendered: the node ends ready with the sdnbridge conflist and its plugins in place', async () => {
    const port = new URL(api.url).port;
    // flanneld-windows-config as `flanneld cluster-config` writes it for this cluster.
    const configMap = {
      KUBERNETES_SERVICE_HOST: '127.0.0.1',
      KUBERNETES_SERVICE_PORT: port,
      SERVICE_CIDR: '10.96.0.0/12',
      KUBE_DNS_SERVICE_IP: '10.96.0.10',
      CNI_BIN_DIR: 'C:\\opt\\cni\\bin',
    };
    const spec = daemonSet['spec']['template']['spec'] as Obj;
    const log: string[] = [];
    for (const c of spec['initContainers'] as Obj[]) {
      const code = await runContainer(c, configMap, (args, env) => exited(c['name'] as string, args, env, log));
      expect([c['name'], code, code === 0 ? '' : log.join('\n')]).toEqual([c['name'], 0, '']);
    }
    expect(existsSync(onHost('C:\\run\\flannel\\subnet.env'))).toBe(false); // rendered before the agent ever ran

    const healthz = await freePort();
    const agentContainer = (spec['containers'] as Obj[]).find((c) => c['name'] === 'kube-flannel')!;
    let agent: SimAgent | undefined;
    await runContainer(agentContainer, configMap, (args, env) => {
      const child = spawn(process.execPath, [main, ...args, '--healthz-ip=127.0.0.1', `--healthz-port=${healthz}`], {
        env: { PATH: process.env['PATH'] ?? '', ...env },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      agent = new SimAgent(child, healthz, state, onHost('C:\\run\\flannel'));
      started.push(agent);
      return Promise.resolve(0);
    });
    try {
      await agent!.waitReady(30_000);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${agent!.dump()}`);
    }

    const conflist = JSON.parse(readFileSync(onHost('C:\\etc\\cni\\net.d\\10-flannel.conflist'), 'utf8')) as Obj;
    expect(conflist['name']).toBe('cbr0');
    const plugin = conflist['plugins'][0] as Obj;
    expect(plugin['type']).toBe('sdnbridge');
    expect(plugin['ipam']['ranges']).toEqual([
      [{ subnet: V4, rangeStart: '10.244.5.3', gateway: '10.244.5.2' }],
      [{ subnet: V6, rangeStart: 'fd00:10:244:5::3', gateway: 'fd00:10:244:5::2' }],
    ]);
    expect(conflist['cniVersion']).toBe('0.2.0');
    // The node's addresses, from the simulated host's adapter as the agent reads it: IPv4 and IPv6 alike.
    const policies = (plugin['AdditionalArgs'] as Obj[]).map((a) => a['Value'] as Obj);
    expect(policies.filter((p) => p['Type'] === 'OutBoundNAT').map((p) => p['Settings']['Exceptions'])).toEqual([
      ['10.244.0.0/16', '10.96.0.0/12', '10.0.0.0/24'],
      ['fd00:10:244::/56', 'fd00:10::/64'],
    ]);
    expect(policies.filter((p) => p['Type'] === 'SDNRoute').map((p) => p['Settings']['DestinationPrefix'])).toEqual(['10.96.0.0/12', `${WIN_IP}/32`, `${WIN_IP6}/128`]);
    // The plugins the conflist runs, from the image's release files.
    const bin = onHost('C:\\opt\\cni\\bin');
    for (const p of ['sdnbridge.exe', 'host-local.exe']) expect([p, existsSync(join(bin, p))]).toEqual([p, true]);
    expect(readFileSync(join(bin, 'sdnbridge.exe')).toString('latin1')).toContain(' sdnbridge.exe test ');
    // subnet.env, written by the agent afterwards, names the same subnets the init container rendered.
    expect(readFileSync(onHost('C:\\run\\flannel\\subnet.env'), 'utf8')).toContain(`FLANNEL_IPV6_SUBNET=fd00:10:244:5::1/64`);
  }, 120_000);
});

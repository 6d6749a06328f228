// `npm run package:windows` (packaging/build.mjs) and the flanneld.exe it makes, under Wine: the zip's
// layout and notices, `flanneld.exe --version`, `install-cni` and the Windows defaults in --help, and one full start of the single executable against a
// fake API server, on the simulated dataplane and on the win32 dataplane (ffi-rs loaded from
// node_modules beside the exe, the stand-in DLLs behind it).
import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
// @ts-expect-error: a plain .mjs packaging script without type declarations
import { securityDirectory as peSecurityDirectory } from '../../packaging/pe-signature.mjs';
import { pipeline } from 'node:stream/promises';
import { FakeKubeApiServer, bareNode, linuxFlannelNode, writeKubeconfig } from '../../src/demo/kube-fake/api-server.js';
import { VERSION } from '../../src/basics/version.js';
import { peImage } from '../support/pe.js';
import { waitFor } from '../support/wait-for.js';
import { WindowsSimServer } from './sim-server.js';
import { editState } from '../support/sim-dataplane.js';
import type { HcnNetwork } from '../../src/hns/schema.js';
import {
  CACHE,
  buildWindowsArtifacts,
  ensurePackage,
  ensurePrefix,
  ensureWindowsNode,
  mustFailWhenSkipped,
  readZipEntries,
  runUnderWine,
  standinOverrides,
  winPath,
  windowsHarness,
  wineEnv,
  type BuiltPackage,
  type WindowsBuild,
} from '../support/windows.js';

const securityDirectory = peSecurityDirectory as (b: Buffer) => { offset: number; size: number };
const harness = windowsHarness();

if (!harness.run && mustFailWhenSkipped()) {
  describe('Windows harness (package)', () => {
    it('requires wine64 and mingw-w64 under CI', () => {
      throw new Error(`${harness.reason} (.ci/run installs them; CI=true does not allow skipping)`);
    });
  });
}

const NODE = 'win-1';
const NODE_IP = '10.0.0.2';
const POD_CIDR = '10.244.100.0/24';
const START_WAIT_MS = 60_000;

interface Started {
  log: () => string;
  exited: Promise<number | null>;
  stop: () => Promise<number | null>;
}

/** flanneld.exe under Wine, output in files (pipes make Node under Wine die). */
function startExe(exe: string, args: string[], env: Record<string, string>, dir: string): Started {
  const outFile = join(dir, 'flanneld.out');
  const errFile = join(dir, 'flanneld.err');
  const out = openSync(outFile, 'w');
  const err = openSync(errFile, 'w');
  const child = spawn('wine', [exe, ...args], { env: wineEnv(env), stdio: ['ignore', out, err] });
  closeSync(out);
  closeSync(err);
  const exited = new Promise<number | null>((res) => {
    child.on('exit', (code) => res(code));
    child.on('error', () => res(-1));
  });
  const log = () => readFileSync(outFile, 'utf8') + readFileSync(errFile, 'utf8');
  return {
    log,
    exited,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGINT');
        const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
        const code = await exited;
        clearTimeout(t);
        return code;
      }
      return child.exitCode;
    },
  };
}

function waitForFile(file: string, agent: Started): Promise<string> {
  let exited = false;
  void agent.exited.then(() => (exited = true));
  const written = () => {
    const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
    return text.includes('FLANNEL_SUBNET') && text;
  };
  return waitFor(written, file, {
    timeoutMs: START_WAIT_MS,
    intervalMs: 100,
    failIf: () => (exited ? `flanneld.exe exited before writing ${file}:\n${agent.log().slice(-4000)}` : undefined),
    detail: () => agent.log().slice(-4000),
  });
}

(harness.run ? describe : describe.skip)('flanneld-windows-amd64.zip (npm run package:windows) under Wine', () => {
  let pkg: BuiltPackage;
  let build: WindowsBuild;
  const cleanups: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    const t0 = Date.now();
    build = await buildWindowsArtifacts();
    const [, nodeExe] = await Promise.all([ensurePrefix(build), ensureWindowsNode()]);
    pkg = await ensurePackage(nodeExe);
    console.log(`package ready in ${Date.now() - t0} ms (packaging/build.mjs: ${pkg.buildMs ? `${pkg.buildMs} ms` : 'cached'})`);
  }, 400_000);

  afterEach(async () => {
    while (cleanups.length > 0) await cleanups.pop()!();
  }, 30_000);

  const exe = () => join(pkg.dir, 'flanneld.exe');

  it('holds the single executable, the service host, ffi-rs with its win32-x64 addon, the notices and the README', () => {
    const names = readZipEntries(readFileSync(pkg.zip)).map((e) => e.name);
    for (const n of [
      'flanneld.exe',
      'flanneld-service.exe',
      'node_modules/ffi-rs/package.json',
      'node_modules/ffi-rs/index.js',
      'node_modules/@yuuang/ffi-rs-win32-x64-msvc/ffi-rs.win32-x64-msvc.node',
      'node_modules/etcd3/proto/rpc.proto',
      'THIRD_PARTY_NOTICES.txt',
      'README.txt',
    ]) {
      expect(names).toContain(n);
    }
    // only the x64 addon, nothing from the Linux build
    expect(names.filter((n) => n.endsWith('.node'))).toEqual(['node_modules/@yuuang/ffi-rs-win32-x64-msvc/ffi-rs.win32-x64-msvc.node']);
    expect(names.some((n) => n.startsWith('dist/') || n.startsWith('src/') || n.startsWith('test/'))).toBe(false);
    const notices = readFileSync(join(pkg.dir, 'THIRD_PARTY_NOTICES.txt'), 'utf8');
    for (const p of ['Node.js', '@kubernetes/client-node@', 'ip-cidr@', 'winston@', 'ffi-rs@', '@yuuang/ffi-rs-win32-x64-msvc@', 'mingw-w64']) expect(notices).toContain(p);
    expect(readFileSync(join(pkg.dir, 'README.txt'), 'utf8')).toContain('flanneld.exe service install');
    // a PE image with the SEA blob injected
    const image = readFileSync(exe());
    expect(image.subarray(0, 2).toString()).toBe('MZ');
    expect(image.includes(Buffer.from('NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2:1'))).toBe(true);
    // node.exe's Authenticode signature is gone (it no longer matches after the injection): no security
    // directory, so Windows sees an unsigned file to sign, not a corrupted signature.
    expect(securityDirectory(image)).toEqual({ offset: 0, size: 0 });
    // SHA256SUMS beside the zip, in sha256sum's format.
    const sums = readFileSync(join(dirname(pkg.zip), 'SHA256SUMS'), 'utf8');
    expect(sums).toBe(`${createHash('sha256').update(readFileSync(pkg.zip)).digest('hex')}  flanneld-windows-amd64.zip\n`);
  });

  it('ships deploy/ and scripts/ as git tracks them (the cleanup DaemonSet in, nothing untracked)', () => {
    const names = readZipEntries(readFileSync(pkg.zip)).map((e) => e.name);
    const tracked = spawnSync('git', ['ls-files', 'deploy', 'scripts'], { encoding: 'utf8' })
      .stdout.split('\n')
      .filter((f) => f.startsWith('deploy/') || /^scripts\/.*\.(ps1|psm1|psd1|cmd|bat)$/i.test(f));
    expect(names.filter((n) => n.startsWith('deploy/') || n.startsWith('scripts/')).sort()).toEqual(tracked.sort());
    expect(names).toContain('deploy/cleanup/50-cleanup-windows.yml');
  });

  it('flanneld.exe netconf set-vni: the bundled jsonc-parser and js-yaml edit a ConfigMap', async () => {
    const dir = mkdtempSync(join(pkg.dir, 'netconf-'));
    const cm = join(dir, 'cm.yaml');
    writeFileSync(
      cm,
      'kind: ConfigMap\napiVersion: v1\nmetadata:\n  name: kube-flannel-cfg\ndata:\n  net-conf.json: |\n    {\n      "Network": "10.244.0.0/16",\n      "EnableNFTables": false,\n      "Backend": {\n        "Type": "vxlan"\n      }\n    }\n',
    );
    const r = await runUnderWine(exe(), ['netconf', 'set-vni', '-f', winPath(cm)], { timeoutMs: 60_000 });
    expect(r.stderr).toContain('Backend.VNI (unset) -> 4096');
    expect(r.code).toBe(0);
    expect(r.stdout.replace(/\r\n/g, '\n')).toContain('"EnableNFTables": false,\n      "Backend": {\n        "Type": "vxlan",\n        "VNI": 4096,\n        "Port": 4789\n');
  }, 90_000);

  it('flanneld.exe --version prints the version', async () => {
    const r = await runUnderWine(exe(), ['--version'], { timeoutMs: 60_000 });
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(VERSION);
    expect(r.stderr).not.toMatch(/Warning|DeprecationWarning/);
  }, 90_000);

  it('flanneld.exe install-cni: installs the four plugins from a zip path with Windows paths and renames; a rerun writes nothing; --help names C:\\opt\\cni\\bin', async () => {
    mkdirSync(join(CACHE, 'runs'), { recursive: true });
    const dir = mkdtempSync(join(CACHE, 'runs', 'cni-'));
    const plugins = ['flannel.exe', 'win-overlay.exe', 'win-bridge.exe', 'host-local.exe'];
    const yazl = createRequire(import.meta.url)('yazl') as { ZipFile: new () => { addBuffer(b: Buffer, n: string): void; end(): void; outputStream: NodeJS.ReadableStream } };
    const zip = new yazl.ZipFile();
    for (const p of plugins) zip.addBuffer(peImage(` ${p} ${'x'.repeat(1000)}`), `bin/${p}`);
    zip.end();
    const zipPath = join(dir, 'plugins.zip');
    await pipeline(zip.outputStream, createWriteStream(zipPath));
    const hash = createHash('sha256').update(readFileSync(zipPath)).digest('hex');
    const binDir = join(dir, 'opt', 'cni', 'bin');
    const args = ['install-cni', '--source', winPath(zipPath), '--sha256', hash, '--bin-dir', winPath(binDir)];
    const first = await runUnderWine(exe(), args, { timeoutMs: 60_000 });
    expect(first.stderr).not.toContain('install-cni:');
    expect(first.code).toBe(0);
    for (const p of plugins) expect(readFileSync(join(binDir, p))).toEqual(peImage(` ${p} ${'x'.repeat(1000)}`));
    const again = await runUnderWine(exe(), args, { timeoutMs: 60_000 });
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('nothing downloaded or written');
    const bad = await runUnderWine(exe(), ['install-cni', '--source', winPath(zipPath), '--sha256', '0'.repeat(64), '--bin-dir', winPath(join(dir, 'other'))], {
      timeoutMs: 60_000,
    });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('[FLANNEL_ERR_CNI_HASH]');
    expect(existsSync(join(dir, 'other'))).toBe(false);
    const help = await runUnderWine(exe(), ['install-cni', '--help'], { timeoutMs: 60_000 });
    expect(help.stdout).toContain('(default "C:\\opt\\cni\\bin")');
    const main = await runUnderWine(exe(), ['--help'], { timeoutMs: 60_000 });
    expect(main.stdout).toContain('(default "C:\\run\\flannel\\subnet.env")');
    expect(main.stdout).not.toContain('(default "/run/flannel/subnet.env")');
  }, 300_000);

  async function scenario(backendType: 'host-gw' | 'vxlan', port = 4789) {
    const dir = mkdtempSync(join(CACHE, 'runs', 'exe-'));
    const api = new FakeKubeApiServer();
    await api.start();
    cleanups.push(() => api.stop());
    api.addNode(bareNode({ name: NODE, podCIDR: POD_CIDR, internalIP: NODE_IP }));
    api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType }));
    const kubeconfig = join(dir, 'kubeconfig');
    await writeKubeconfig(kubeconfig, api.url);
    const netConf = join(dir, 'net-conf.json');
    const backend = backendType === 'vxlan' ? { Type: 'vxlan', VNI: 4096, Port: port } : { Type: 'host-gw' };
    writeFileSync(netConf, JSON.stringify({ Network: '10.244.0.0/16', Backend: backend }));
    const subnetEnv = join(dir, 'subnet.env');
    const args = [
      '--kube-subnet-mgr',
      `--kubeconfig-file=${winPath(kubeconfig)}`,
      `--net-config-path=${winPath(netConf)}`,
      `--subnet-file=${winPath(subnetEnv)}`,
      '--iface',
      NODE_IP,
    ];
    return { dir, api, args, subnetEnv };
  }

  it('flanneld.exe on the simulated dataplane against a fake API server: writes subnet.env, stops on Ctrl+C', async () => {
    mkdirSync(join(CACHE, 'runs'), { recursive: true });
    const s = await scenario('host-gw');
    const agent = startExe(exe(), [...s.args, '--dataplane', 'simulated'], { NODE_NAME: NODE }, s.dir);
    cleanups.push(() => agent.stop());
    const env = await waitForFile(s.subnetEnv, agent);
    expect(env).toContain(`FLANNEL_SUBNET=10.244.100.1/24`);
    expect(env).toContain('FLANNEL_NETWORK=10.244.0.0/16');
    expect(await agent.stop()).toBe(0);
    expect(agent.log()).toContain('stopped');
  }, 120_000);

  it('flanneld.exe on the win32 dataplane: ffi-rs loads from node_modules beside the exe and programs the stand-in DLLs', async () => {
    mkdirSync(join(CACHE, 'runs'), { recursive: true });
    const s = await scenario('vxlan');
    const sim = new WindowsSimServer({ dataplane: { nodeIP: NODE_IP, statePath: join(s.dir, 'dataplane.json') } });
    await sim.start();
    cleanups.push(() => sim.stop());
    const agent = startExe(
      exe(),
      [...s.args, '--dataplane', 'windows', '--win32-dll-dir', winPath(build.dllDir)],
      {
        NODE_NAME: NODE,
        FLANNEL_SIM_PORT: String(sim.port),
        WINEDLLOVERRIDES: standinOverrides(build.dllDir),
      },
      s.dir,
    );
    cleanups.push(() => agent.stop());
    const env = await waitForFile(s.subnetEnv, agent);
    expect(env).toContain('FLANNEL_SUBNET=10.244.100.1/24');
    expect(sim.dp.getNetworkByName('flannel.4096')).toBeDefined();
    expect(await agent.stop()).toBe(0);
  }, 120_000);

  /** flanneld.exe on the win32 dataplane, vxlan with net-conf Backend.Port `port`, on a node whose HNS reports `hnsVersion` (the state file's; absent: the newest, 15.4). */
  async function startVxlanOnPort(port: number, hnsVersion?: string) {
    mkdirSync(join(CACHE, 'runs'), { recursive: true });
    const s = await scenario('vxlan', port);
    const sim = new WindowsSimServer({ dataplane: { nodeIP: NODE_IP, statePath: join(s.dir, 'dataplane.json') } });
    if (hnsVersion !== undefined) editState(sim.dp, (st) => void (st.hnsVersion = hnsVersion));
    await sim.start();
    cleanups.push(() => sim.stop());
    const args = [...s.args, '--dataplane', 'windows', '--win32-dll-dir', winPath(build.dllDir)];
    const agent = startExe(exe(), args, { NODE_NAME: NODE, FLANNEL_SIM_PORT: String(sim.port), WINEDLLOVERRIDES: standinOverrides(build.dllDir) }, s.dir);
    cleanups.push(() => agent.stop());
    return { s, sim, agent };
  }

  // A VXLAN port other than 4789 (issue 36 part 2) through the built exe and the DLL ABI: net-conf Backend.Port
  // reaches HcnCreateNetwork as the VxlanPort network policy (hcsshim hcn/hcnpolicy.go VxlanPortPolicySetting,
  // as src/backends/vxlan/backend.ts overlayNetworkFor writes it) on an HNS that has it (hcsshim
  // hcn/hcnglobals.go VxlanPortVersion, 10.3; here the newest profile, 15.4).
  it('flanneld.exe with net-conf Port 8472: computenetwork.dll receives the Overlay network with {"Type":"VxlanPort","Settings":{"Port":8472}}, and HNS holds it', async () => {
    const { s, sim, agent } = await startVxlanOnPort(8472);
    await waitForFile(s.subnetEnv, agent);
    const created = sim.writes.filter((w) => w.fn === 'HcnCreateNetwork').map((w) => JSON.parse(String(w['settings'])) as HcnNetwork);
    expect(created.map((n) => [n.Name, n.Type])).toEqual([['flannel.4096', 'Overlay']]);
    expect(created[0].Policies?.filter((p) => p.Type === 'VxlanPort')).toEqual([{ Type: 'VxlanPort', Settings: { Port: 8472 } }]);
    expect(sim.dp.getNetworkByName('flannel.4096')!.Policies?.filter((p) => p.Type === 'VxlanPort')).toEqual([{ Type: 'VxlanPort', Settings: { Port: 8472 } }]);
    expect(sim.protocolErrors).toEqual([]);
    expect(await agent.stop()).toBe(0);
  }, 120_000);

  // The same on Windows Server 2019's HNS 9.3 (../support/hns-profiles.ts), below VxlanPortVersion: the exe reads
  // the version through vmcompute.dll (HNSCall GET /globals/version, as hcsshim's GetGlobals) and refuses before it
  // creates anything, with FLANNEL_ERR_HNS_VERSION naming 10.3.
  it('flanneld.exe with net-conf Port 8472 on HNS 9.3: refused with FLANNEL_ERR_HNS_VERSION naming 10.3; no network created', async () => {
    const { sim, agent } = await startVxlanOnPort(8472, '9.3');
    let code: number | null | undefined;
    void agent.exited.then((c) => (code = c));
    await waitFor(() => code !== undefined, 'flanneld.exe to exit', { timeoutMs: START_WAIT_MS, intervalMs: 100, detail: () => agent.log().slice(-4000) });
    expect(code).not.toBe(0);
    const refusal = agent
      .log()
      .split('\n')
      .find((l) => l.includes('FLANNEL_ERR_HNS_VERSION'));
    expect(refusal).toMatch(/needs HNS 10\.3 or newer \(its VxlanPort feature\); this node's HNS is 9\.3/);
    expect(sim.transcript.some((l) => l.startsWith('HNSCall') && l.includes('/globals/version'))).toBe(true);
    expect(sim.writes.map((w) => w.fn)).toEqual([]);
    expect(sim.dp.snapshot().networks).toEqual([]);
    expect(sim.protocolErrors).toEqual([]);
  }, 120_000);
});

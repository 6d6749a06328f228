// The CNI readiness check (src/cni/readiness.ts): the first CNI config containerd loads (go-cni
// loadFromConfDir) must name the agent's HNS network, point the flannel plugin at the agent's subnet.env
// and name only plugins present in the bin dir. The conflist of the table is what `flanneld cni-config`
// writes (the recorded inputs.conflist of test/fixtures/cni-traces/vxlan-add.json, shape for shape).
import { describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkCniReadiness, checkFirstCniConfig, loadFirstCniConfig, samePath, type CniReadinessCheck, type CniReadinessFs } from '../../../src/cni/readiness.js';
import { renderStatusTable } from '../../../src/commands/status.js';
import { buildStatusReport } from '../../../src/health/status.js';

const CONF_DIR = 'C:\\etc\\cni\\net.d';
const BIN_DIR = 'C:\\opt\\cni\\bin';
const SUBNET_FILE = 'C:\\run\\flannel\\subnet.env';
const ALL_PLUGINS = ['flannel.exe', 'win-overlay.exe', 'win-bridge.exe', 'host-local.exe'];

function conflist(over: { name?: string; subnetFile?: string | null; delegate?: Record<string, unknown> } = {}): string {
  const plugin: Record<string, unknown> = {
    type: 'flannel',
    ...(over.subnetFile === null ? {} : { subnetFile: over.subnetFile ?? SUBNET_FILE }),
    dataDir: 'C:\\var\\lib\\cni\\flannel',
    capabilities: { portMappings: true, dns: true },
    delegate: over.delegate ?? { type: 'win-overlay', apiVersion: 2, endpointMacPrefix: '0E-2A', loopbackDSR: true, policies: [] },
  };
  return JSON.stringify({ cniVersion: '0.3.0', name: over.name ?? 'flannel.4096', plugins: [plugin] });
}

/** A table file system: conf dir files (name -> text, or undefined for no dir) and the bin dir's names. */
function tableFs(conf: Record<string, string> | undefined, bin: string[] = ALL_PLUGINS): CniReadinessFs {
  return {
    readdir: (dir) => {
      if (dir === CONF_DIR && conf) return Object.keys(conf);
      throw Object.assign(new Error(`ENOENT: ${dir}`), { code: 'ENOENT' });
    },
    readFile: (path) => {
      const name = path.slice(CONF_DIR.length + 1);
      if (!path.startsWith(CONF_DIR + '\\') || !conf || conf[name] === undefined) throw new Error(`ENOENT: ${path}`);
      return conf[name];
    },
    exists: (path) => path.startsWith(BIN_DIR + '\\') && bin.includes(path.slice(BIN_DIR.length + 1)),
  };
}

const input = { cniConfDir: CONF_DIR, cniBinDir: BIN_DIR, networkName: 'flannel.4096', subnetFile: SUBNET_FILE };

describe('checkCniReadiness', () => {
  it.each<[string, Record<string, string> | undefined, string[], Partial<typeof input>, CniReadinessCheck[]]>([
    ['the rendered conflist, every plugin installed', { '10-flannel.conflist': conflist() }, ALL_PLUGINS, {}, []],
    ['no conf dir at all', undefined, ALL_PLUGINS, {}, ['cni-conf-missing']],
    ['a conf dir with no CNI config', { 'notes.txt': 'x', '10-flannel.conflist.bak': conflist() }, ALL_PLUGINS, {}, ['cni-conf-missing']],
    ['the conflist names flannel.4096 but the agent adopted vxlan0', { '10-flannel.conflist': conflist() }, ALL_PLUGINS, { networkName: 'vxlan0' }, ['cni-network-name']],
    [
      'network names compare exactly (the delegate filters by Name)',
      { '10-flannel.conflist': conflist({ name: 'VXLAN0' }) },
      ALL_PLUGINS,
      { networkName: 'vxlan0' },
      ['cni-network-name'],
    ],
    [
      "an earlier install's 10-flannel.conf sorts first and names vxlan0",
      { '10-flannel.conflist': conflist(), '10-flannel.conf': conflist({ name: 'vxlan0' }) },
      ALL_PLUGINS,
      {},
      ['cni-network-name'],
    ],
    [
      "containerd's default nat config sorts first: another CNI's, moved aside (no name or rename fits it)",
      {
        '10-containerd-net.conflist': JSON.stringify({ cniVersion: '0.3.0', name: 'nat', plugins: [{ type: 'nat', ipam: { type: 'host-local' } }] }),
        '10-flannel.conflist': conflist(),
      },
      ALL_PLUGINS,
      {},
      ['cni-conf-foreign'],
    ],
    ['a later config of another network is not loaded', { '10-flannel.conflist': conflist(), '20-other.conflist': conflist({ name: 'x' }) }, ALL_PLUGINS, {}, []],
    ['another subnet file', { '10-flannel.conflist': conflist({ subnetFile: 'D:\\flannel\\subnet.env' }) }, ALL_PLUGINS, {}, ['cni-subnet-file']],
    ['no subnetFile: the plugin reads /run/flannel/subnet.env', { '10-flannel.conflist': conflist({ subnetFile: null }) }, ALL_PLUGINS, {}, ['cni-subnet-file']],
    ['the subnet file in other case and slashes is the same file', { '10-flannel.conflist': conflist({ subnetFile: 'c:/RUN/flannel/subnet.env' }) }, ALL_PLUGINS, {}, []],
    ['win-overlay.exe missing', { '10-flannel.conflist': conflist() }, ['flannel.exe', 'host-local.exe'], {}, ['cni-plugin-missing']],
    ['host-local.exe missing (the delegate IPAM flannel adds)', { '10-flannel.conflist': conflist() }, ['flannel.exe', 'win-overlay.exe'], {}, ['cni-plugin-missing']],
    ['the plugin without .exe is found too (FindInPath)', { '10-flannel.conflist': conflist() }, ['flannel', 'win-overlay', 'host-local'], {}, []],
    ['not JSON', { '10-flannel.conflist': '{"name": ' }, ALL_PLUGINS, {}, ['cni-conf-invalid']],
    ['JSON but no plugins', { '10-flannel.conflist': '{"name":"flannel.4096"}' }, ALL_PLUGINS, {}, ['cni-conf-invalid']],
    [
      'a single-plugin .conf is wrapped as libcni does (its own name, its ipam)',
      { '10-bridge.conf': JSON.stringify({ cniVersion: '0.3.0', name: 'flannel.4096', type: 'win-bridge', ipam: { type: 'host-local' } }) },
      ['win-bridge.exe', 'host-local.exe'],
      {},
      [],
    ],
    [
      'wrong network, wrong subnet file and a missing plugin: all three',
      { '10-flannel.conflist': conflist({ subnetFile: 'C:\\other\\subnet.env' }) },
      ['flannel.exe'],
      { networkName: 'vxlan0' },
      ['cni-network-name', 'cni-subnet-file', 'cni-plugin-missing'],
    ],
  ])('%s', (_what, conf, bin, over, checks) => {
    const problems = checkCniReadiness({ ...input, ...over }, tableFs(conf, bin));
    expect(problems.map((p) => p.check)).toEqual(checks);
    for (const p of problems) {
      expect(p.detail).not.toBe('');
      expect(p.fix).not.toBe('');
    }
  });

  it("another CNI's config first: the fix moves it aside (the agent's /readyz and doctor give this one fix), never a rename to its network", () => {
    const nat = JSON.stringify({ cniVersion: '0.3.0', name: 'nat', plugins: [{ type: 'nat' }] });
    const [p] = checkCniReadiness(input, tableFs({ '10-containerd-net.conflist': nat, '10-flannel.conflist': conflist() }));
    expect(p.check).toBe('cni-conf-foreign');
    expect(p.fix).toMatch(/^move \S*10-containerd-net\.conflist out of /);
    expect(p.fix).not.toMatch(/Backend\.Name|cni-config -o \S+ \(replacing/);
  });

  it('names the file, the two network names and the missing plugins in its detail', () => {
    const [net] = checkCniReadiness({ ...input, networkName: 'vxlan0' }, tableFs({ '10-flannel.conflist': conflist() }));
    expect(net.detail).toContain('C:\\etc\\cni\\net.d\\10-flannel.conflist');
    expect(net.detail).toContain('"flannel.4096"');
    expect(net.detail).toContain('"vxlan0"');
    const [plugins] = checkCniReadiness(input, tableFs({ '10-flannel.conflist': conflist() }, ['flannel.exe']));
    expect(plugins.detail).toContain('win-overlay, host-local');
  });

  // The fix must be a step that works: `install-cni --pinned` alone installs the four flannel plugins, never
  // sdnbridge.exe, so for the dual-stack conflist it would be run again and again. The fix is applied for
  // real in test/integration/cni-readiness-fix.test.ts.
  it('a missing sdnbridge.exe (the dual-stack conflist) is fixed by install-cni --sdnbridge; a plugin install-cni has not, by the operator', () => {
    const dual = JSON.stringify({ cniVersion: '0.2.0', name: 'cbr0', plugins: [{ type: 'sdnbridge', ipam: { type: 'host-local' } }] });
    const [sdn] = checkCniReadiness({ ...input, networkName: 'cbr0' }, tableFs({ '10-flannel.conflist': dual }, ['host-local.exe']));
    expect(sdn.check).toBe('cni-plugin-missing');
    expect(sdn.fix).toContain(`\`flanneld install-cni --pinned --sdnbridge --bin-dir ${BIN_DIR}\``);
    const [flannel] = checkCniReadiness(input, tableFs({ '10-flannel.conflist': conflist() }, ['flannel.exe']));
    expect(flannel.fix).toContain(`\`flanneld install-cni --pinned --bin-dir ${BIN_DIR}\``);
    const calico = JSON.stringify({ cniVersion: '0.3.1', name: 'flannel.4096', plugins: [{ type: 'calico', ipam: { type: 'calico-ipam' } }] });
    const [other] = checkCniReadiness(input, tableFs({ '10-flannel.conflist': calico }, []));
    expect(other.fix).not.toContain('`flanneld install-cni');
    expect(other.fix).toContain('calico, calico-ipam');
  });

  it('checkFirstCniConfig judges a config already loaded without reading the conf dir again (doctor reads it once)', () => {
    const fs = tableFs({ '10-flannel.conflist': conflist() }, ['flannel.exe']);
    let confReads = 0;
    const counting: CniReadinessFs = {
      ...fs,
      readdir: (d) => {
        confReads++;
        return fs.readdir(d);
      },
      readFile: (p) => {
        confReads++;
        return fs.readFile(p);
      },
    };
    const first = loadFirstCniConfig(CONF_DIR, counting);
    expect(confReads).toBe(2);
    const problems = checkFirstCniConfig(first, { ...input, networkName: 'vxlan0' }, counting);
    expect(confReads).toBe(2);
    expect(problems).toEqual(checkCniReadiness({ ...input, networkName: 'vxlan0' }, fs));
    expect(problems.map((p) => p.check)).toEqual(['cni-network-name', 'cni-plugin-missing']);
    // A problem loading it is the one problem.
    const missing = loadFirstCniConfig(CONF_DIR, tableFs(undefined));
    expect(checkFirstCniConfig(missing, input, tableFs(undefined)).map((p) => p.check)).toEqual(['cni-conf-missing']);
  });

  it('reads a real directory through the default file system', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cni-ready-'));
    try {
      const conf = join(dir, 'net.d');
      const bin = join(dir, 'bin');
      mkdirSync(conf);
      mkdirSync(bin);
      writeFileSync(join(conf, '10-flannel.conflist'), conflist({ subnetFile: join(dir, 'subnet.env') }));
      for (const f of ALL_PLUGINS) writeFileSync(join(bin, f), 'MZ');
      const real = { cniConfDir: conf, cniBinDir: bin, networkName: 'flannel.4096', subnetFile: join(dir, 'subnet.env') };
      expect(checkCniReadiness(real)).toEqual([]);
      expect(checkCniReadiness({ ...real, networkName: 'vxlan0' }).map((p) => p.check)).toEqual(['cni-network-name']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('samePath', () => {
  it.each<[string, string, boolean]>([
    ['C:\\run\\flannel\\subnet.env', 'c:/run/flannel/subnet.env', true],
    ['C:\\run\\flannel\\subnet.env', 'C:\\run\\flannel\\subnet.env2', false],
    ['/run/flannel/subnet.env', '/run/flannel/subnet.env', true],
    ['/run/flannel/subnet.env', '/RUN/flannel/subnet.env', false],
  ])('%s vs %s', (a, b, same) => {
    expect(samePath(a, b)).toBe(same);
  });
});

describe('flanneld status shows the CNI check', () => {
  const base = {
    version: 'v',
    phase: 'running',
    ready: true,
    startKind: undefined,
    lease: { subnet: '10.244.100.0/24', publicIP: '10.0.0.2' },
    networkName: 'vxlan0',
    hnsNetwork: { id: 'ID', type: 'Overlay', adapter: 'Ethernet' },
    mtu: 1450,
    sourceVip: undefined,
    network: { inSync: true, listed: true, networkMissing: false, peersDesired: 0, peersProgrammed: 0, rejections: [], refusedItems: [] },
  } as unknown as Parameters<typeof buildStatusReport>[0];

  it('not ready and not in sync while a problem stands; each problem with its fix', () => {
    const problems = checkCniReadiness({ ...input, networkName: 'vxlan0' }, tableFs({ '10-flannel.conflist': conflist() }));
    const report = buildStatusReport({ ...base, cni: { confDir: CONF_DIR, binDir: BIN_DIR, problems } });
    expect(report).toMatchObject({ ready: false, inSync: false, cni: { confDir: CONF_DIR, problems: [{ check: 'cni-network-name' }] } });
    const table = renderStatusTable(report);
    expect(table).toMatch(/^Dataplane +NOT in sync \(phase running, pods cannot start: see CNI\)$/m);
    expect(table).toMatch(/^CNI +NOT ready: 1 problem in C:\\etc\\cni\\net\.d$/m);
    expect(table).toMatch(/^ {2}cni-network-name +.*names network "flannel\.4096", but this agent runs HNS network "vxlan0"/m);
    expect(table).toMatch(/^ {4}fix +write it with `flanneld cni-config -o /m);
  });

  it('ok when the check finds nothing; absent when it is off', () => {
    const ok = buildStatusReport({ ...base, cni: { confDir: CONF_DIR, binDir: BIN_DIR, problems: [] } });
    expect(ok.ready).toBe(true);
    expect(renderStatusTable(ok)).toMatch(/^CNI +ok \(C:\\etc\\cni\\net\.d\)$/m);
    const off = buildStatusReport(base);
    expect(off.cni).toBeNull();
    expect(renderStatusTable(off)).not.toMatch(/^CNI/m);
  });
});

// `flanneld cni-config` and ../../src/cni/conflist.ts: the conflist per backend, against golden JSON (the shape of
// containernetworking/plugins plugins/main/windows/win-*/sample-v2.conf behind the flannel meta-plugin),
// and against the CNI configs the install paths people use today write (microsoft/SDN, sig-windows-tools,
// rke2): their OutBoundNAT exceptions and policies are the golden data.
import { describe, expect, it } from '@jest/globals';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cniPaths, dualStackRanges, renderCniConfig, rerenderedOwnConflist, type CniConfigInput } from '../../../src/cni/conflist.js';
import { isOwnCniConfig } from '../../../src/cni/conf-dir.js';
import { parseCommandArgs, splitArgs } from '../../../src/commands/cni-flags.js';
import { CNI_CONFIG_FLAGS, command, managementIPv6Of, subnetOfIP } from '../../../src/commands/cni-config.js';
import { parseNetConf } from '../../../src/subnet/net-conf.js';
import { FlagError } from '../../../src/basics/errors.js';
import { expectCode } from '../../support/errors.js';

const VXLAN = parseNetConf('{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":4096,"Port":4789}}');
const VXLAN0 = parseNetConf('{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":4097,"Name":"vxlan0","MacPrefix":"0E-2B"}}');
const HOSTGW = parseNetConf('{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw"}}');

const WIN_PATHS = { subnetFile: 'C:\\run\\flannel\\subnet.env', dataDir: 'C:\\var\\lib\\cni\\flannel' };
const base = { ...WIN_PATHS, serviceCidr: '10.96.0.0/12', managementSubnet: '192.168.1.0/24', dnsServers: ['10.96.0.10'], dnsSearch: ['svc.cluster.local'] };

const GOLDEN_VXLAN = {
  cniVersion: '0.3.0',
  name: 'flannel.4096',
  plugins: [
    {
      type: 'flannel',
      ...WIN_PATHS,
      capabilities: { portMappings: true, dns: true },
      delegate: {
        type: 'win-overlay',
        apiVersion: 2,
        endpointMacPrefix: '0E-2A',
        loopbackDSR: true,
        dns: { nameservers: ['10.96.0.10'], search: ['svc.cluster.local'] },
        policies: [
          { name: 'EndpointPolicy', value: { Type: 'OutBoundNAT', Settings: { Exceptions: ['10.244.0.0/16', '10.96.0.0/12'] } } },
          { name: 'EndpointPolicy', value: { Type: 'SDNRoute', Settings: { DestinationPrefix: '10.96.0.0/12', NeedEncap: true } } },
          { name: 'EndpointPolicy', value: { Type: 'ProviderAddress', Settings: { ProviderAddress: '192.168.1.20' } } },
        ],
      },
    },
  ],
};

const GOLDEN_HOSTGW = {
  cniVersion: '0.3.0',
  name: 'cbr0',
  plugins: [
    {
      type: 'flannel',
      ...WIN_PATHS,
      capabilities: { portMappings: true, dns: true },
      delegate: {
        type: 'win-bridge',
        apiVersion: 2,
        loopbackDSR: true,
        dns: { nameservers: ['10.96.0.10'], search: ['svc.cluster.local'] },
        policies: [
          { name: 'EndpointPolicy', value: { Type: 'OutBoundNAT', Settings: { Exceptions: ['10.244.0.0/16', '10.96.0.0/12', '192.168.1.0/24'] } } },
          { name: 'EndpointPolicy', value: { Type: 'SDNRoute', Settings: { DestinationPrefix: '10.96.0.0/12', NeedEncap: true } } },
          { name: 'EndpointPolicy', value: { Type: 'SDNRoute', Settings: { DestinationPrefix: '192.168.1.20/32', NeedEncap: true } } },
        ],
      },
    },
  ],
};

describe('renderCniConfig', () => {
  it.each<[string, CniConfigInput, unknown]>([
    ['vxlan -> win-overlay with ProviderAddress', { ...base, netConf: VXLAN, managementIP: '192.168.1.20' }, GOLDEN_VXLAN],
    ['host-gw -> win-bridge with a host route', { ...base, netConf: HOSTGW, managementIP: '192.168.1.20' }, GOLDEN_HOSTGW],
    [
      'host-gw without a management IP: no host route',
      { ...base, netConf: HOSTGW },
      {
        ...GOLDEN_HOSTGW,
        plugins: [{ ...GOLDEN_HOSTGW.plugins[0], delegate: { ...GOLDEN_HOSTGW.plugins[0].delegate, policies: GOLDEN_HOSTGW.plugins[0].delegate.policies.slice(0, 2) } }],
      },
    ],
    [
      'vxlan with Name and MacPrefix: name = the HNS network, MAC prefix passed on',
      { ...base, netConf: VXLAN0, managementIP: '192.168.1.20', cniVersion: '0.2.0' },
      {
        ...GOLDEN_VXLAN,
        cniVersion: '0.2.0',
        name: 'vxlan0',
        plugins: [{ ...GOLDEN_VXLAN.plugins[0], delegate: { ...GOLDEN_VXLAN.plugins[0].delegate, endpointMacPrefix: '0E-2B' } }],
      },
    ],
    [
      'duplicate exceptions collapse (service CIDR inside the cluster CIDR list once)',
      { ...base, netConf: HOSTGW, managementSubnet: '10.244.0.0/16' },
      {
        ...GOLDEN_HOSTGW,
        plugins: [
          {
            ...GOLDEN_HOSTGW.plugins[0],
            delegate: {
              ...GOLDEN_HOSTGW.plugins[0].delegate,
              policies: [
                { name: 'EndpointPolicy', value: { Type: 'OutBoundNAT', Settings: { Exceptions: ['10.244.0.0/16', '10.96.0.0/12'] } } },
                GOLDEN_HOSTGW.plugins[0].delegate.policies[1],
              ],
            },
          },
        ],
      },
    ],
  ])('%s', (_name, input, golden) => {
    expect(JSON.parse(JSON.stringify(renderCniConfig(input)))).toEqual(golden);
    // Key order is part of the golden text too (operators diff these files).
    expect(JSON.stringify(renderCniConfig(input))).toBe(JSON.stringify(golden));
  });

  it('vxlan without a management IP is a flag error naming the flag', () => {
    expect(expectCode(() => renderCniConfig({ ...base, netConf: VXLAN }), FlagError, 'FLANNEL_ERR_FLAG').context).toEqual({ flag: 'management-ip' });
  });
});

/** Policies with lower-case name/value keys (the plugins decode JSON case-insensitively, as Go does). */
function normalizePolicies(policies: unknown[]): unknown[] {
  return policies.map((p) => {
    const o = p as Record<string, unknown>;
    return { name: o['name'] ?? o['Name'], value: o['value'] ?? o['Value'] };
  });
}

function delegateOf(conf: Record<string, unknown>): Record<string, unknown> {
  return (conf['plugins'] as { delegate: Record<string, unknown> }[])[0].delegate;
}

const exceptionsOf = (conf: Record<string, unknown>): string[] =>
  (delegateOf(conf)['policies'] as { value: { Type: string; Settings: { Exceptions: string[] } } }[]).find((p) => p.value.Type === 'OutBoundNAT')!.value.Settings.Exceptions;

describe('the CNI configs of the install paths in use today (golden data)', () => {
  it('vxlan: the policies rke2 writes (pkg/windows/flannel.go, flannelCniConflistTemplate at 0ff227c6)', () => {
    // rke2's template rendered with ClusterCIDR 10.42.0.0/16, ServiceCIDR 10.43.0.0/16, NodeIP 172.16.0.7.
    const rke2Policies = [
      { Name: 'EndpointPolicy', Value: { Type: 'OutBoundNAT', Settings: { Exceptions: ['10.42.0.0/16', '10.43.0.0/16'] } } },
      { Name: 'EndpointPolicy', Value: { Type: 'SDNRoute', Settings: { DestinationPrefix: '10.43.0.0/16', NeedEncap: true } } },
      { name: 'EndpointPolicy', value: { Type: 'ProviderAddress', Settings: { ProviderAddress: '172.16.0.7' } } },
    ];
    const conf = renderCniConfig({
      ...WIN_PATHS,
      netConf: parseNetConf('{"Network":"10.42.0.0/16","Backend":{"Type":"vxlan","VNI":4096,"Port":4789}}'),
      serviceCidr: '10.43.0.0/16',
      managementIP: '172.16.0.7',
      dnsServers: ['10.43.0.10'],
      dnsSearch: ['svc.cluster.local'],
    });
    expect(conf['name']).toBe('flannel.4096'); // rke2's "name":"flannel.4096"
    expect(delegateOf(conf)['type']).toBe('win-overlay');
    expect(delegateOf(conf)['apiVersion']).toBe(2);
    expect(JSON.stringify(normalizePolicies(delegateOf(conf)['policies'] as unknown[]))).toBe(JSON.stringify(normalizePolicies(rke2Policies)));
  });

  it.each([
    // sig-windows-tools hostprocess/flannel/flanneld/start.ps1: `Exceptions = $serviceSubnet, $podSubnet`.
    ['sig-windows-tools flanneld/start.ps1', '10.244.0.0/16', '10.96.0.0/12', ['10.96.0.0/12', '10.244.0.0/16']],
    // microsoft/SDN Kubernetes/flannel/overlay/cni/config/cni.conf: ExceptionList [cluster, service].
    ['microsoft/SDN overlay cni.conf', '192.168.0.0/16', '11.0.0.0/8', ['192.168.0.0/16', '11.0.0.0/8']],
  ])('vxlan: OutBoundNAT exceptions are the cluster and Service CIDRs only, as %s has them', (_src, cluster, service, theirs) => {
    const conf = renderCniConfig({
      ...WIN_PATHS,
      netConf: parseNetConf(`{"Network":"${cluster}","Backend":{"Type":"vxlan","VNI":4096,"Port":4789}}`),
      serviceCidr: service,
      managementIP: '192.168.1.20',
      managementSubnet: '192.168.1.0/24', // the node LAN: not an exception for vxlan
      dnsServers: [],
      dnsSearch: [],
    });
    expect([...exceptionsOf(conf)].sort()).toEqual([...theirs].sort());
  });

  it('host-gw keeps the node subnet, as microsoft/SDN Kubernetes/flannel/l2bridge/cni/config/cni.conf has it', () => {
    // Its ExceptionList: [cluster 10.244.0.0/16, service 10.96.0.0/12, node LAN 10.127.130.0/24], and ROUTE
    // policies to the Service CIDR and to the node's own IP /32.
    const conf = renderCniConfig({
      ...WIN_PATHS,
      netConf: HOSTGW,
      serviceCidr: '10.96.0.0/12',
      managementIP: '10.127.130.36',
      managementSubnet: '10.127.130.0/24',
      dnsServers: ['10.96.0.10'],
      dnsSearch: ['svc.cluster.local'],
    });
    expect(exceptionsOf(conf)).toEqual(['10.244.0.0/16', '10.96.0.0/12', '10.127.130.0/24']);
    const routes = (delegateOf(conf)['policies'] as { value: { Type: string; Settings: { DestinationPrefix?: string } } }[])
      .filter((p) => p.value.Type === 'SDNRoute')
      .map((p) => p.value.Settings.DestinationPrefix);
    expect(routes).toEqual(['10.96.0.0/12', '10.127.130.36/32']);
  });

  it('loopbackDSR is a top-level key of the delegate (containernetworking/plugins pkg/hns NetConf `json:"loopbackDSR"`); off on request', () => {
    const input = { ...base, netConf: VXLAN, managementIP: '192.168.1.20' };
    expect(delegateOf(renderCniConfig(input))['loopbackDSR']).toBe(true);
    expect(delegateOf(renderCniConfig({ ...input, loopbackDSR: false }))['loopbackDSR']).toBe(false);
  });
});

describe('the node addresses, from the host adapters (Host.interfaces)', () => {
  const ethernet = { name: 'Ethernet', index: 4, ipv4: '192.168.1.20', prefixLength: 24, mtu: 1500 };
  it('subnetOfIP: the CIDR of the adapter holding the IP', () => {
    expect(subnetOfIP('192.168.1.20', [ethernet])).toBe('192.168.1.0/24');
    expect(subnetOfIP('192.168.1.21', [ethernet])).toBeUndefined();
  });

  it("managementIPv6Of: the adapter's IPv6 address the agent takes (never a temporary one) and its prefix; --public-ipv6 names one", () => {
    const adapter = {
      ...ethernet,
      ipv6Addresses: [
        { address: 'fe80::1', prefixLength: 64 },
        { address: '2001:db8:1::9f3c', prefixLength: 64, temporary: true },
        { address: '2001:db8:1::20', prefixLength: 64 },
        { address: 'fd00:1::20', prefixLength: 48 },
      ],
    };
    expect(managementIPv6Of(adapter, { iface: [], publicIPv6: undefined })).toEqual({ managementIPv6: '2001:db8:1::20', managementIPv6Subnet: '2001:db8:1::/64' });
    expect(managementIPv6Of(adapter, { iface: [], publicIPv6: 'fd00:1::20' })).toEqual({ managementIPv6: 'fd00:1::20', managementIPv6Subnet: 'fd00:1::/48' });
  });

  // As the agent picks it (src/agent/external-interface.ts publicIPv6): without --iface / --iface-regex the
  // own Node's flannel annotations name the address, when the adapter holds it; --public-ipv6 goes first.
  it("managementIPv6Of: kube mode without --iface or --public-ipv6 takes the address the Node's flannel annotations name", () => {
    const adapter = {
      ...ethernet,
      ipv6Addresses: [
        { address: '2001:db8:1::20', prefixLength: 64 },
        { address: 'fd00:1::20', prefixLength: 48 },
      ],
    };
    const none = { iface: [], ifaceRegex: [], publicIPv6: undefined };
    expect(managementIPv6Of(adapter, none, ['fd00:1::20'])).toEqual({ managementIPv6: 'fd00:1::20', managementIPv6Subnet: 'fd00:1::/48' });
    expect(managementIPv6Of(adapter, none, ['fd00:9::1', 'fd00:1::20'])).toMatchObject({ managementIPv6: 'fd00:1::20' }); // one the adapter holds
    expect(managementIPv6Of(adapter, { ...none, publicIPv6: '2001:db8:1::20' }, ['fd00:1::20'])).toMatchObject({ managementIPv6: '2001:db8:1::20' });
    expect(managementIPv6Of(adapter, { ...none, iface: ['192.168.1.20'] }, ['fd00:1::20'])).toMatchObject({ managementIPv6: '2001:db8:1::20' });
  });
});

describe('splitArgs', () => {
  it('separates own flags (with values) from agent flags', () => {
    expect(splitArgs(['--service-cidr', '10.96.0.0/12', '--net-config-path', 'x.json', '--ip-masq', '-o=f', '--dataplane=simulated'], CNI_CONFIG_FLAGS)).toEqual({
      own: ['--service-cidr', '10.96.0.0/12', '-o=f'],
      agent: ['--net-config-path', 'x.json', '--ip-masq', '--dataplane=simulated'],
    });
  });
});

describe('parseCommandArgs', () => {
  const io = (env: Record<string, string>) => ({ stdout: () => undefined, stderr: () => undefined, env, platform: 'linux' as NodeJS.Platform });
  it("reads a command's own flags from FLANNELD_<NAME> as its usage says (the DaemonSet's envFrom); a flag wins, an empty variable is unset", () => {
    const env = { FLANNELD_IPV6_SERVICE_CIDR: 'fd00:10:96::/112', FLANNELD_DNS_SERVER: '', FLANNELD_NO_LOOPBACK_DSR: 'true' };
    const r = parseCommandArgs([], CNI_CONFIG_FLAGS, io(env), { usesDataplane: false });
    if (r.kind !== 'run') throw new Error('help');
    expect([r.own.get('ipv6-service-cidr'), r.own.get('no-loopback-dsr'), r.own.get('dns-server')]).toEqual([
      'fd00:10:96::/112',
      true,
      CNI_CONFIG_FLAGS.find((f) => f.name === 'dns-server')!.default,
    ]);
    const flag = parseCommandArgs(['--ipv6-service-cidr', 'fd00:20::/108'], CNI_CONFIG_FLAGS, io(env), { usesDataplane: false });
    expect(flag.kind === 'run' && flag.own.get('ipv6-service-cidr')).toBe('fd00:20::/108');
    expectCode(() => parseCommandArgs([], CNI_CONFIG_FLAGS, io({ FLANNELD_NO_LOOPBACK_DSR: 'maybe' }), { usesDataplane: false }), FlagError, 'FLANNEL_ERR_FLAG');
  });
});

/** The golden conflist with the paths the Linux build defaults to (--subnet-file /run/flannel/subnet.env, no IPAM dir). */
const onLinux = (golden: typeof GOLDEN_VXLAN) => ({
  ...golden,
  plugins: [{ ...golden.plugins[0], subnetFile: '/run/flannel/subnet.env', dataDir: '/var/lib/cni/flannel' }],
});

describe('the cni-config command', () => {
  const io = () => {
    const out = { stdout: '', stderr: '' };
    return { out, io: { stdout: (t: string) => (out.stdout += t), stderr: (t: string) => (out.stderr += t), env: {}, platform: 'linux' as NodeJS.Platform } };
  };

  it('renders to stdout and to a file, from the agent net-conf flag', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cni-config-'));
    try {
      writeFileSync(join(dir, 'net-conf.json'), '{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":4096,"Port":4789}}');
      const a = io();
      const args = ['--dataplane=simulated', `--net-config-path=${join(dir, 'net-conf.json')}`, '--management-ip=192.168.1.20', '--management-subnet=192.168.1.0/24'];
      expect(await command.run(args, a.io)).toBe(0);
      expect(JSON.parse(a.out.stdout)).toEqual(onLinux(GOLDEN_VXLAN));
      const b = io();
      expect(await command.run([...args, '-o', join(dir, 'out', '10-flannel.conflist')], b.io)).toBe(0);
      expect(readFileSync(join(dir, 'out', '10-flannel.conflist'), 'utf8')).toBe(a.out.stdout);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // src/cni/containerd-config.ts: containerd loads the conflist from its conf_dir only; -o elsewhere is
  // written as asked (the agent never edits containerd's config) and said, with the -o that fits.
  it("-o outside containerd's conf_dir (--containerd-config) is written and warned about; inside it, no warning; a malformed config is said", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cni-config-'));
    try {
      writeFileSync(join(dir, 'net-conf.json'), '{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":4096,"Port":4789}}');
      const confDir = join(dir, 'containerd', 'conf');
      const config = join(dir, 'config.toml');
      writeFileSync(config, `version = 3\n[plugins.'io.containerd.cri.v1.runtime'.cni]\nconf_dir = '${confDir}'\n`);
      const args = [`--net-config-path=${join(dir, 'net-conf.json')}`, '--management-ip=192.168.1.20', `--containerd-config=${config}`];
      const a = io();
      expect(await command.run([...args, '-o', join(dir, 'net.d', '10-flannel.conflist')], a.io)).toBe(0);
      expect(existsSync(join(dir, 'net.d', '10-flannel.conflist'))).toBe(true);
      expect(a.out.stderr).toContain(`warning: -o ${join(dir, 'net.d', '10-flannel.conflist')} is not in containerd's conf_dir ${confDir} (conf_dir in ${config})`);
      expect(a.out.stderr).toContain(`-o ${join(confDir, '10-flannel.conflist')}`);
      const b = io();
      expect(await command.run([...args, '-o', join(confDir, '10-flannel.conflist')], b.io)).toBe(0);
      expect(b.out.stderr).not.toContain('warning');
      writeFileSync(config, 'version = 3\n[plugins\n');
      const c = io();
      expect(await command.run([...args, '-o', join(confDir, '10-flannel.conflist')], c.io)).toBe(0);
      expect(c.out.stderr).toContain('FLANNEL_ERR_CONTAINERD_CONFIG');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // A full disk: /dev/full answers every write with ENOSPC (man 4 full), so a link to it where the conflist's
  // temporary file goes (`<out>.tmp-<pid>`, src/basics/fs.ts writeFileAtomicSync) makes that write fail as
  // a full disk does. containerd loads every file of its conf dir (containerd's CRI plugin sorts the
  // directory and takes the first .conf/.conflist/.json: libcni ConfFiles), so nothing may be left there.
  it('-o into a full disk: the write fails and its temporary file is removed; the conf dir is as it was', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cni-config-'));
    try {
      writeFileSync(join(dir, 'net-conf.json'), '{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":4096,"Port":4789}}');
      const confDir = join(dir, 'net.d');
      mkdirSync(confDir);
      const out = join(confDir, '10-flannel.conflist');
      symlinkSync('/dev/full', `${out}.tmp-${process.pid}`);
      const a = io();
      expect(await command.run([`--net-config-path=${join(dir, 'net-conf.json')}`, '--management-ip=192.168.1.20', '-o', out], a.io)).not.toBe(0);
      expect(a.out.stderr).toContain('ENOSPC');
      expect(readdirSync(confDir)).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs on Linux without --dataplane; vxlan needs no --management-subnet; --no-loopback-dsr turns loopbackDSR off', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cni-config-'));
    try {
      writeFileSync(join(dir, 'net-conf.json'), '{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":4096,"Port":4789}}');
      const a = io();
      expect(await command.run([`--net-config-path=${join(dir, 'net-conf.json')}`, '--management-ip=192.168.1.20'], a.io)).toBe(0);
      expect(a.out.stderr).toBe('');
      expect(JSON.parse(a.out.stdout)).toEqual(onLinux(GOLDEN_VXLAN));
      const b = io();
      expect(await command.run([`--net-config-path=${join(dir, 'net-conf.json')}`, '--management-ip=192.168.1.20', '--no-loopback-dsr'], b.io)).toBe(0);
      expect((JSON.parse(b.out.stdout) as { plugins: { delegate: { loopbackDSR: boolean } }[] }).plugins[0].delegate.loopbackDSR).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // Without subnetFile the flannel plugin reads its default /run/flannel/subnet.env (flannel-io/cni-plugin
  // flannel.go defaultSubnetFile), on Windows on whatever drive it runs from: --subnet-file would split
  // the agent and the pods. The interop tier (test/interop) shows the real plugin failing on exactly that.
  it('names the agent’s --subnet-file and a dataDir beside --cni-ipam-data-dir, both absolute', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cni-config-'));
    const cwd = process.cwd();
    try {
      writeFileSync(join(dir, 'net-conf.json'), '{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":4096,"Port":4789}}');
      process.chdir(dir);
      const a = io();
      const args = [`--net-config-path=${join(dir, 'net-conf.json')}`, '--management-ip=192.168.1.20', '--subnet-file=flannel/subnet.env', '--cni-ipam-data-dir=cni/networks'];
      expect(await command.run(args, a.io)).toBe(0);
      const plugin = (JSON.parse(a.out.stdout) as { plugins: Record<string, unknown>[] }).plugins[0];
      expect(plugin.subnetFile).toBe(join(dir, 'flannel', 'subnet.env'));
      expect(plugin.dataDir).toBe(join(dir, 'cni', 'flannel'));
    } finally {
      process.chdir(cwd);
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    [['--service-cidr=banana', '--management-subnet=192.168.1.0/24'], 'service-cidr'],
    [['--management-ip=192.168.1.20', '--management-subnet=10.0.0.0/24'], 'management-subnet'],
    [['--management-ip=1.2.3.4.5', '--management-subnet=10.0.0.0/24'], 'management-ip'],
    [[], 'management-subnet'],
  ])('bad flags %j exit 2 naming %s', async (extra, flag) => {
    const dir = mkdtempSync(join(tmpdir(), 'cni-config-'));
    try {
      writeFileSync(join(dir, 'net-conf.json'), '{"Network":"10.244.0.0/16","Backend":{"Type":"host-gw"}}');
      const a = io();
      expect(await command.run(['--dataplane=simulated', `--net-config-path=${join(dir, 'net-conf.json')}`, ...extra], a.io)).toBe(2);
      expect(a.out.stderr.split('\n')[0]).toContain(flag);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('cniPaths with --cni-ipam-data-dir=none', () => {
  // flannel's default dataDir (flannel-io/cni-plugin flannel.go defaultDataDir "/var/lib/cni/flannel"),
  // on Windows written as an absolute C:\ path: a rooted path would be taken on the current drive.
  it.each<[NodeJS.Platform, string]>([
    ['win32', 'C:\\var\\lib\\cni\\flannel'],
    ['linux', '/var/lib/cni/flannel'],
  ])('%s: %s', (platform, dataDir) => {
    expect(cniPaths({ subnetFile: '/run/flannel/subnet.env', cniIpamDataDir: '' }, platform).dataDir).toBe(dataDir);
  });
});

describe('the dual-stack conflist (sdnbridge)', () => {
  const dualNetConf = (ipv6Network: string) => parseNetConf(JSON.stringify({ Network: '10.244.0.0/16', EnableIPv6: true, IPv6Network: ipv6Network, Backend: { Type: 'host-gw' } }));
  const input = (ipv6Network: string, ipv6Subnet: string) => ({
    netConf: dualNetConf(ipv6Network),
    subnetFile: '/run/flannel/subnet.env',
    dataDir: '/var/lib/cni/flannel',
    serviceCidr: '10.96.0.0/12',
    managementSubnet: '10.0.0.0/24',
    managementIP: '10.0.0.2',
    dnsServers: ['10.96.0.10'],
    dnsSearch: ['svc.cluster.local'],
    dualStack: { subnet: '10.244.3.0/24', ipv6Subnet },
  });
  const args = (conf: Record<string, unknown>) =>
    ((conf['plugins'] as Record<string, unknown>[])[0]['AdditionalArgs'] as { Value: { Type: string; Settings: Record<string, unknown> } }[]).map((a) => a.Value);

  it('NATs IPv6 only when IPv6Network is not routable (unique-local)', () => {
    const ula = args(renderCniConfig(input('fd00:10:244::/56', 'fd00:10:244:3::/64')));
    expect(ula.filter((p) => p.Type === 'OutBoundNAT').map((p) => p.Settings['Exceptions'])).toEqual([['10.244.0.0/16', '10.96.0.0/12', '10.0.0.0/24'], ['fd00:10:244::/56']]);
    const global = args(renderCniConfig(input('2001:db8:244::/56', '2001:db8:244:3::/64')));
    expect(global.filter((p) => p.Type === 'OutBoundNAT')).toHaveLength(1);
    expect(global.map((p) => p.Settings['DestinationPrefix']).filter(Boolean)).toEqual(['10.96.0.0/12', '10.0.0.2/32']);
  });

  // What IPv4 has, IPv6 gets too: the node network excepted from NAT (else pod-to-node IPv6 leaves with
  // the node's address) and the node's own address routed through the host.
  it("the node's IPv6 prefix is excepted from NAT and its IPv6 address routed through the host, as IPv4's", () => {
    const base = input('fd00:10:244::/56', 'fd00:10:244:3::/64');
    const conf = renderCniConfig({
      ...base,
      dualStack: { ...base.dualStack, ipv6ServiceCidr: 'fd00:10:96::/112', managementIPv6: 'fd00:10::2', managementIPv6Subnet: 'fd00:10::/64' },
    });
    const policies = args(conf);
    expect(policies.filter((p) => p.Type === 'OutBoundNAT').map((p) => p.Settings['Exceptions'])).toEqual([
      ['10.244.0.0/16', '10.96.0.0/12', '10.0.0.0/24'],
      ['fd00:10:244::/56', 'fd00:10:96::/112', 'fd00:10::/64'],
    ]);
    expect(policies.filter((p) => p.Type === 'SDNRoute').map((p) => p.Settings['DestinationPrefix'])).toEqual([
      '10.96.0.0/12',
      'fd00:10:96::/112',
      '10.0.0.2/32',
      'fd00:10::2/128',
    ]);
    // Global pod addresses are not NATed at all, but the node's address is still reached through the host.
    const global = input('2001:db8:244::/56', '2001:db8:244:3::/64');
    const g = args(renderCniConfig({ ...global, dualStack: { ...global.dualStack, managementIPv6: '2001:db8:10::2', managementIPv6Subnet: '2001:db8:10::/64' } }));
    expect(g.filter((p) => p.Type === 'OutBoundNAT')).toHaveLength(1);
    expect(g.map((p) => p.Settings['DestinationPrefix']).filter(Boolean)).toEqual(['10.96.0.0/12', '10.0.0.2/32', '2001:db8:10::2/128']);
  });

  // sdnbridge (microsoft/windows-container-networking cni/cni.go GetCurrResult) reports the MAC as
  // `Mac: string(iFace.MacAddress)`: the six raw bytes of a net.HardwareAddr, not their text, in every
  // result of CNI 0.3.0 and later. A 0.2.0 result has no interfaces (the recording's result, and the
  // version of Microsoft's own examples), so nothing wrong is reported; containerd's go-cni puts the
  // IPs of an interface-less result on the default interface (result.go GetCNIResultFromResults).
  it('cniVersion 0.2.0 for sdnbridge unless asked otherwise, 0.3.0 for flannel; DNS through the `dns` capability', () => {
    const base = input('fd00:10:244::/56', 'fd00:10:244:3::/64');
    const dual = renderCniConfig(base) as { cniVersion: string; plugins: Record<string, unknown>[] };
    expect(dual.cniVersion).toBe('0.2.0');
    expect((renderCniConfig({ ...base, cniVersion: '1.0.0' }) as { cniVersion: string }).cniVersion).toBe('1.0.0');
    const { dualStack: _d, ...single } = base;
    expect((renderCniConfig({ ...single, netConf: HOSTGW }) as { cniVersion: string }).cniVersion).toBe('0.3.0');
    // sdnbridge reads the pod's DNS from runtimeConfig.dns (cni/cni.go RuntimeConfig `json:"dns"`); libcni
    // fills runtimeConfig only for the capabilities a plugin declares, and containerd passes DNS as `dns`.
    expect(dual.plugins[0]['capabilities']).toEqual({ portMappings: true, dns: true });
  });

  // sdnbridge reads `optionalFlags.loopbackDSR` (microsoft/windows-container-networking v0.3.1 cni/cni.go
  // OptionalFlags; common/core/network.go Add: network/policy.go GetLoopbackDSRPolicy, an OutBoundNAT with
  // the pod's IPv4 address as destination), as win-bridge reads its top-level `loopbackDSR`.
  it('loopbackDSR: on by default in optionalFlags, as the win-bridge and win-overlay conflists; off with --no-loopback-dsr', () => {
    const base = input('fd00:10:244::/56', 'fd00:10:244:3::/64');
    const flags = (conf: Record<string, unknown>) => (conf['plugins'] as Record<string, unknown>[])[0]['optionalFlags'];
    expect(flags(renderCniConfig(base))).toEqual({ localRoutedPortMapping: true, allowAclPortMapping: true, enableDualStack: true, loopbackDSR: true });
    expect(flags(renderCniConfig({ ...base, loopbackDSR: false }))).toMatchObject({ loopbackDSR: false });
    expect((renderCniConfig(base)['plugins'] as Record<string, unknown>[])[0]).not.toHaveProperty('loopbackDSR');
  });

  it('single-stack keeps win-bridge under flannel', () => {
    const { dualStack: _d, ...single } = input('fd00:10:244::/56', 'fd00:10:244:3::/64');
    expect((renderCniConfig({ ...single, netConf: HOSTGW }) as { plugins: { type: string }[] }).plugins[0].type).toBe('flannel');
  });

  it('the agent re-ranges its own dual-stack conflist after a lease change, and leaves others alone', () => {
    const text = JSON.stringify(renderCniConfig(input('fd00:10:244::/56', 'fd00:10:244:3::/64')), null, 2) + '\n';
    const target = (networkName: string, subnet: string, ipv6Subnet: string) => ({
      networkName,
      configuredName: networkName,
      subnetFile: '/run/flannel/subnet.env',
      dualStack: { subnet, ipv6Subnet },
    });
    const next = rerenderedOwnConflist(text, target('cbr0', '10.244.9.0/24', 'fd00:10:244:9::/64'))!;
    expect(next.reranged).toBe(true);
    expect((JSON.parse(next.text) as { plugins: { ipam: { ranges: unknown } }[] }).plugins[0].ipam.ranges).toEqual(dualStackRanges('10.244.9.0/24', 'fd00:10:244:9::/64'));
    expect(rerenderedOwnConflist(text, target('cbr0', '10.244.3.0/24', 'fd00:10:244:3::/64'))).toBeUndefined();
    expect(rerenderedOwnConflist(text, target('other', '10.244.9.0/24', 'fd00:10:244:9::/64'))).toBeUndefined();
    // A single-stack conflist gets no ranges.
    expect(
      rerenderedOwnConflist(
        JSON.stringify(renderCniConfig({ ...input('fd00:10:244::/56', 'x'), dualStack: undefined, netConf: HOSTGW })),
        target('cbr0', '10.244.9.0/24', 'fd00:10:244:9::/64'),
      ),
    ).toBeUndefined();
    expect(isOwnCniConfig(text, 'cbr0')).toBe(true);
  });
});

describe('the agent renames its own conflist to the network it adopted (rerenderedOwnConflist)', () => {
  // What the DaemonSet's install-cni-config renders before the agent has adopted microsoft/SDN's vxlan0.
  const stale = JSON.stringify(GOLDEN_VXLAN, null, 2) + '\n';
  const target = { networkName: 'vxlan0', configuredName: 'flannel.4096', subnetFile: 'c:/RUN/flannel/subnet.env' };
  const edit = (f: (c: typeof GOLDEN_VXLAN & Record<string, unknown>) => unknown) => {
    const c = JSON.parse(stale) as typeof GOLDEN_VXLAN & Record<string, unknown>;
    f(c);
    return JSON.stringify(c);
  };

  it('renames the one cni-config rendered for net-conf, keeping everything else', () => {
    const next = rerenderedOwnConflist(stale, target)!;
    expect(next).toMatchObject({ renamedFrom: 'flannel.4096', reranged: false });
    expect(JSON.parse(next.text)).toEqual({ ...GOLDEN_VXLAN, name: 'vxlan0' });
  });

  it.each<[string, string]>([
    ['already names the network the agent runs', edit((c) => (c.name = 'vxlan0'))],
    ['names a third network', edit((c) => (c.name = 'vxlan7'))],
    ['points the flannel plugin at another subnet.env', edit((c) => ((c.plugins[0] as Record<string, unknown>).subnetFile = 'C:\\other\\subnet.env'))],
    ['has no subnetFile (the plugin default)', edit((c) => delete (c.plugins[0] as Record<string, unknown>).subnetFile)],
    ['is another plugin (Calico)', JSON.stringify({ cniVersion: '0.3.1', name: 'flannel.4096', plugins: [{ type: 'calico' }] })],
    ['delegates to another plugin', edit((c) => ((c.plugins[0].delegate as Record<string, unknown>).type = 'sdnoverlay'))],
    ['is not JSON', '{"name":'],
  ])('leaves a conflist alone that %s', (_what, text) => {
    expect(rerenderedOwnConflist(text, target)).toBeUndefined();
  });
});

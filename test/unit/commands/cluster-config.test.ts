// `flanneld cluster-config` (src/commands/cluster-config.ts): the DaemonSet's settings from the cluster's
// kubeadm-config and kube-proxy ConfigMaps, as sig-windows-tools' HostProcess flannel read them
// (kubernetes-sigs/sig-windows-tools hostprocess/flannel/flanneld/flannel-overlay.yml and start.ps1), the
// kube-dns IP as kubeadm assigns it (cmd/kubeadm/app/constants/constants.go GetDNSIP: the 10th address).
import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import yaml from 'js-yaml';
import { clusterSettings, command, configMapsByName, splitEndpoint } from '../../../src/commands/cluster-config.js';
import { ConfigError, FlagError } from '../../../src/basics/errors.js';
import { expectCode } from '../../support/errors.js';
import { KUBE_SYSTEM_CONFIGMAPS } from '../../support/kube-system-configmaps.js';

interface ConfigMapFixture {
  data: Record<string, string>;
}
type Obj = Record<string, unknown>;

/** The fixture List, edited. */
function cms(edit: (items: { kubeadm: ConfigMapFixture; proxy: ConfigMapFixture }) => void = () => undefined): Map<string, Obj> {
  const list = yaml.load(KUBE_SYSTEM_CONFIGMAPS) as { items: ConfigMapFixture[] };
  const [kubeadm, proxy] = list.items;
  edit({ kubeadm, proxy });
  return configMapsByName(JSON.stringify(list));
}

const setServer = (proxy: ConfigMapFixture, server: string) => (proxy.data['kubeconfig.conf'] = proxy.data['kubeconfig.conf'].replace('https://10.0.0.5:6443', server));

describe('clusterSettings', () => {
  it("reads kube-proxy's API server, kubeadm's serviceSubnet and the 10th address for kube-dns", () => {
    expect(clusterSettings(cms())).toMatchObject({ host: '10.0.0.5', port: '6443', serviceCidr: '10.96.0.0/12', dnsIp: '10.96.0.10' });
  });

  it('without the kube-proxy ConfigMap: kubeadm-config controlPlaneEndpoint', () => {
    const m = cms();
    m.delete('kube-proxy');
    expect(clusterSettings(m)).toMatchObject({ host: 'cp.example.internal', port: '6443', sources: { apiServer: 'kube-system/kubeadm-config controlPlaneEndpoint' } });
  });

  it.each([
    ['cp.example.internal', { host: 'cp.example.internal', port: '6443' }],
    ['10.0.0.5:8443', { host: '10.0.0.5', port: '8443' }],
    ['https://lb.example:443', { host: 'lb.example', port: '443' }],
    ['https://10.0.0.5', { host: '10.0.0.5', port: '443' }],
    ['', undefined],
  ])('splitEndpoint(%j)', (text, want) => {
    expect(splitEndpoint(text)).toEqual(want);
  });

  it('a dual-stack serviceSubnet: the IPv4 entry, and the IPv6 one apart', () => {
    const m = cms(({ kubeadm }) => (kubeadm.data['ClusterConfiguration'] = kubeadm.data['ClusterConfiguration'].replace('10.96.0.0/12', 'fd00:10:96::/112,10.96.0.0/16')));
    expect(clusterSettings(m)).toMatchObject({ serviceCidr: '10.96.0.0/16', dnsIp: '10.96.0.10', ipv6ServiceCidr: 'fd00:10:96::/112' });
    expect(clusterSettings(cms())).not.toHaveProperty('ipv6ServiceCidr');
    expect(clusterSettings(m, { ipv6ServiceCidr: 'fd00:20::/108' })).toMatchObject({ ipv6ServiceCidr: 'fd00:20::/108', sources: { ipv6ServiceCidr: '--ipv6-service-cidr' } });
    expectCode(() => clusterSettings(m, { ipv6ServiceCidr: '10.0.0.0/8' }), FlagError, 'FLANNEL_ERR_FLAG');
  });

  it('flags give or override each value', () => {
    expect(clusterSettings(new Map(), { apiServer: '10.1.1.1:6443', serviceCidr: '172.20.0.0/16', kubeDnsIp: '172.20.0.53' })).toMatchObject({
      host: '10.1.1.1',
      port: '6443',
      serviceCidr: '172.20.0.0/16',
      dnsIp: '172.20.0.53',
      sources: { apiServer: '--api-server', serviceCidr: '--service-cidr', dnsIp: '--kube-dns-ip' },
    });
  });

  it.each<[string, () => Map<string, Obj>, Record<string, string>]>([
    ['no ConfigMaps and no flags', () => new Map(), {}],
    ['no Service CIDR anywhere', () => cms(({ kubeadm }) => (kubeadm.data = {})), { apiServer: '10.0.0.5:6443' }],
    ["kube-proxy's server is the kubernetes Service ClusterIP (inside the Service CIDR)", () => cms(({ proxy }) => setServer(proxy, 'https://10.96.0.1:443')), {}],
  ])('refuses: %s (FLANNEL_ERR_CLUSTER_CONFIG)', (_what, maps, flags) => {
    expectCode(() => clusterSettings(maps(), flags), ConfigError, 'FLANNEL_ERR_CLUSTER_CONFIG');
  });
});

describe('flanneld cluster-config', () => {
  const io = () => {
    const out = { stdout: '', stderr: '' };
    return { out, io: { stdout: (t: string) => (out.stdout += t), stderr: (t: string) => (out.stderr += t), env: {}, platform: 'linux' as NodeJS.Platform } };
  };

  it('prints the flanneld-windows-config ConfigMap, saying where each value came from', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'cluster-config-')), 'cms.yaml');
    writeFileSync(file, KUBE_SYSTEM_CONFIGMAPS);
    const r = io();
    expect(await command.run(['-f', file, '--cni-bin-dir', 'C:\\Program Files\\containerd\\cni\\bin'], r.io)).toBe(0);
    const cm = yaml.load(r.out.stdout) as Obj;
    expect(cm).toEqual({
      kind: 'ConfigMap',
      apiVersion: 'v1',
      metadata: { name: 'flanneld-windows-config', namespace: 'kube-flannel', labels: { 'k8s-app': 'flannel' } },
      data: {
        KUBERNETES_SERVICE_HOST: '10.0.0.5',
        KUBERNETES_SERVICE_PORT: '6443',
        SERVICE_CIDR: '10.96.0.0/12',
        KUBE_DNS_SERVICE_IP: '10.96.0.10',
        CNI_BIN_DIR: 'C:\\Program Files\\containerd\\cni\\bin',
      },
    });
    expect(r.out.stdout).toMatch(/^# API server: kube-system\/kube-proxy kubeconfig\.conf\.$/m);
    expect(r.out.stderr).toContain('API server 10.0.0.5:6443');

    // A dual-stack cluster: the IPv6 Service range for cni-config (envFrom); --ipv4-only instead says the
    // Windows nodes run IPv4 only, and then names no IPv6 range.
    const dual = join(dirname(file), 'dual.yaml');
    writeFileSync(dual, KUBE_SYSTEM_CONFIGMAPS.replace('serviceSubnet: 10.96.0.0/12', 'serviceSubnet: 10.96.0.0/12,fd00:10:96::/112'));
    const d = io();
    expect(await command.run(['-f', dual], d.io)).toBe(0);
    expect((yaml.load(d.out.stdout) as Obj)['data']).toMatchObject({ SERVICE_CIDR: '10.96.0.0/12', FLANNELD_IPV6_SERVICE_CIDR: 'fd00:10:96::/112' });
    const v4 = io();
    expect(await command.run(['-f', dual, '--ipv4-only'], v4.io)).toBe(0);
    const v4data = (yaml.load(v4.out.stdout) as Obj)['data'] as Obj;
    expect(v4data).toMatchObject({ FLANNELD_IPV4_ONLY: 'true' });
    expect(v4data).not.toHaveProperty('FLANNELD_IPV6_SERVICE_CIDR');

    // --network-policy: the agent (envFrom the ConfigMap) enforces NetworkPolicy (docs/network-policy.md); off unless given.
    const np = io();
    expect(await command.run(['-f', file, '--network-policy'], np.io)).toBe(0);
    expect((yaml.load(np.out.stdout) as Obj)['data']).toMatchObject({ FLANNELD_NETWORK_POLICY: 'true' });
    expect(np.out.stdout).toMatch(/^# NetworkPolicy: --network-policy\.$/m);

    const refused = io();
    expect(await command.run(['-f', file, '--api-server', 'https://10.96.0.1'], refused.io)).toBe(1);
    expect(refused.out.stdout).toBe('');
    expect(refused.out.stderr).toContain('[FLANNEL_ERR_CLUSTER_CONFIG]');
  });
});

// Own-node checks (src/subnet/own-lease.ts) as the kube subnet manager applies them, over real HTTP
// against FakeKubeApiServer: a podCIDR as large as Network, a /31 or /32, and a node-public-ip or
// public-ip-overwrite annotation that peers cannot reach all stop the agent with FLANNEL_ERR_NODE
// naming the node, and a dual-stack lease the backend gives no public IPv6 with FLANNEL_ERR_BACKEND,
// before anything is patched.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FlannelError } from '../../src/basics/errors.js';
import { FakeKubeApiServer, bareNode, writeKubeconfig } from '../../src/demo/kube-fake/api-server.js';
import { buildKubeConfig } from '../../src/kube/client.js';
import { KubeSubnetManager } from '../../src/subnet/kube/manager.js';
import type { LeaseAttrs } from '../../src/subnet/lease.js';
import { checkDualStackPublicIPv6, checkOwnPublicIPs, checkOwnSubnet, unusablePublicIP } from '../../src/subnet/own-lease.js';

const P = 'flannel.alpha.coreos.com/';
const VXLAN: LeaseAttrs = { publicIP: '10.0.0.5', backendType: 'vxlan', backendData: { VNI: 4096, VtepMAC: '00:15:5d:b3:ac:db' } };
const HOSTGW: LeaseAttrs = { publicIP: '10.0.0.5', backendType: 'host-gw', backendData: null };

function codeOf(fn: () => void): { code: string; context: Record<string, unknown> } | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof FlannelError) return { code: err.code, context: err.context };
    throw err;
  }
  return undefined;
}

describe('own-lease checks (pure)', () => {
  it.each([
    ['10.244.0.0/16', '10.244.0.0/16', 'equal to Network'],
    ['10.244.0.0/16', '10.244.0.0/15', 'larger than Network'],
    ['10.244.0.0/16', '10.0.0.0/8', 'much larger'],
    ['10.244.0.0/16', '0.0.0.0/0', 'everything'],
    ['10.244.0.0/16', '10.244.3.0/31', 'a /31'],
    ['10.244.0.0/16', '10.244.3.7/32', 'a /32'],
    ['10.244.0.0/16', '10.99.1.0/24', 'outside Network'],
  ])('Network %s, podCIDR %s (%s): FLANNEL_ERR_NODE naming the node', (network, podCIDR) => {
    expect(codeOf(() => checkOwnSubnet('win-1', network, podCIDR))).toEqual({ code: 'FLANNEL_ERR_NODE', context: { node: 'win-1', podCIDR, network } });
  });

  it.each([['10.244.3.0/24'], ['10.244.3.0/30'], ['10.244.0.0/17']])('podCIDR %s is fine', (podCIDR) => {
    expect(codeOf(() => checkOwnSubnet('win-1', '10.244.0.0/16', podCIDR))).toBeUndefined();
  });

  it.each([
    ['0.0.0.0', 'unspecified'],
    // The rest of 0/8, 240/4 and the limited broadcast: peers reject these as not unicast
    // (validate.ts public-ip-not-unicast), so the own node must not publish them either.
    ['0.1.2.3', 'unspecified'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['169.254.10.1', 'link-local'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['10.0.0.5', undefined],
    ['192.168.1.10', undefined],
    ['not-an-ip', undefined],
  ])('public IP %s: %s', (ip, why) => {
    expect(unusablePublicIP(ip)).toBe(why);
    const err = codeOf(() => checkOwnPublicIPs('win-1', { [`${P}node-public-ip`]: ip }));
    expect(err?.code).toBe(why === undefined ? undefined : 'FLANNEL_ERR_NODE');
    if (err) expect(err.context).toMatchObject({ node: 'win-1', annotation: `${P}node-public-ip`, publicIP: ip });
  });

  // The guard both subnet managers apply to a dual-stack lease (kube: the node, etcd: the subnet in the context).
  it.each<[string | undefined, boolean]>([
    [undefined, false],
    ['', false],
    ['10.0.0.5', false],
    ['fd00:10::5%eth0', false],
    ['[fd00:10::5]', false],
    ['fd00:10::5', true],
    ['FD00:10::5', true],
    ['::ffff:10.0.0.5', true],
  ])('dual-stack public IPv6 %p: published %p', (publicIPv6, ok) => {
    const attrs = { ...HOSTGW, ...(publicIPv6 !== undefined ? { publicIPv6 } : {}) };
    for (const context of [{ node: 'win-1' }, { subnet: '10.244.7.0/24' }]) {
      if (ok) expect(checkDualStackPublicIPv6(attrs, context)).toBe(publicIPv6);
      else expect(codeOf(() => checkDualStackPublicIPv6(attrs, context))).toEqual({ code: 'FLANNEL_ERR_BACKEND', context });
    }
  });
});

describe('KubeSubnetManager refuses an unusable own node', () => {
  let api: FakeKubeApiServer;
  let dir: string;
  let kubeconfig: string;
  const controller = new AbortController();
  beforeEach(async () => {
    api = new FakeKubeApiServer();
    await api.start();
    dir = await mkdtemp(join(tmpdir(), 'own-node-'));
    kubeconfig = join(dir, 'kubeconfig');
    await writeKubeconfig(kubeconfig, api.url);
  });
  afterEach(async () => {
    await api.stop();
    await rm(dir, { recursive: true, force: true });
  });

  async function acquire(podCIDR: string, annotations: Record<string, string>, attrs: LeaseAttrs, ipv6PodCIDR?: string): Promise<FlannelError> {
    const node = bareNode({ name: 'win-1', podCIDR });
    node.metadata.annotations = { ...node.metadata.annotations, ...annotations };
    if (ipv6PodCIDR !== undefined) node.spec = { ...node.spec, podCIDRs: [podCIDR, ipv6PodCIDR] };
    api.addNode(node);
    const mgr = new KubeSubnetManager({
      kubeConfig: buildKubeConfig({ kubeconfigFile: kubeconfig, kubeApiUrl: '' }),
      nodeName: 'win-1',
      network: '10.244.0.0/16',
      ...(ipv6PodCIDR !== undefined ? { ipv6Network: 'fd00:10:244::/56' } : {}),
      annotationPrefix: P,
      setNodeNetworkUnavailable: true,
      timings: { nodeWaitTimeoutMs: 2000, apiRetryTimeoutMs: 2000 },
    });
    try {
      await mgr.acquireLease(async () => attrs, controller.signal);
    } catch (err) {
      expect(err).toBeInstanceOf(FlannelError);
      return err as FlannelError;
    }
    throw new Error('expected acquireLease to fail');
  }

  it.each([
    ['10.244.0.0/16', VXLAN],
    ['10.244.0.0/16', HOSTGW],
    ['10.244.7.0/31', VXLAN],
    ['10.244.7.0/31', HOSTGW],
    ['10.244.7.9/32', VXLAN],
    ['10.244.7.9/32', HOSTGW],
  ])('podCIDR %s (%o)', async (podCIDR, attrs) => {
    const err = await acquire(podCIDR, {}, attrs);
    expect(err.code).toBe('FLANNEL_ERR_NODE');
    expect(err.context['node']).toBe('win-1');
    expect(api.requests.filter((r) => r.method === 'PATCH')).toHaveLength(0);
  });

  it.each([
    ['node-public-ip', '127.0.0.1'],
    ['node-public-ip', '0.0.0.0'],
    ['public-ip-overwrite', '169.254.3.4'],
    ['public-ip-overwrite', '224.0.0.251'],
  ])('annotation %s=%s', async (name, ip) => {
    const err = await acquire('10.244.7.0/24', { [P + name]: ip }, VXLAN);
    expect(err.code).toBe('FLANNEL_ERR_NODE');
    expect(err.context).toMatchObject({ node: 'win-1', annotation: P + name, publicIP: ip });
    expect(api.requests.filter((r) => r.method === 'PATCH')).toHaveLength(0);
  });

  it('a dual-stack lease without a public IPv6 from the backend: FLANNEL_ERR_BACKEND naming the node', async () => {
    const err = await acquire('10.244.7.0/24', {}, HOSTGW, 'fd00:10:244:7::/64');
    expect(err.code).toBe('FLANNEL_ERR_BACKEND');
    expect(err.context).toEqual({ node: 'win-1' });
    expect(api.requests.filter((r) => r.method === 'PATCH')).toHaveLength(0);
  });
});

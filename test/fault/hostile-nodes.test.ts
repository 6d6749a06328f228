// Malformed and hostile Node objects, in the first list and through the watch: the agent never
// crashes, and none of them reaches the dataplane (which ends equal to the valid peers exactly).
import { afterEach, expect, it } from '@jest/globals';
import { bareNode, linuxFlannelNode, type FakeNode } from '../../src/demo/kube-fake/api-server.js';
import { METRIC } from '../../src/basics/metrics.js';
import { expectConverged, FaultCluster, HOSTGW_NET_CONF, routes, VXLAN_NET_CONF, waitFor } from './harness.js';
import { readMetric, readMetricTotal } from '../support/agent-signals.js';

const P = 'flannel.alpha.coreos.com/';

let c: FaultCluster;
afterEach(async () => {
  await c?.stop();
});

/** A well-formed vxlan node `name` (10.244.n.0/24 at 10.0.2.n), then `mutate` makes it hostile. */
function node(name: string, n: number, backendType: 'vxlan' | 'host-gw', mutate: (x: FakeNode & Record<string, unknown>) => void = () => undefined): FakeNode {
  const x = linuxFlannelNode({ name, podCIDR: `10.244.${n}.0/24`, publicIP: `10.0.2.${n}`, backendType }) as FakeNode & Record<string, unknown>;
  mutate(x);
  return x;
}

const ann = (x: FakeNode) => x.metadata.annotations as Record<string, unknown>;

/** Nodes no agent may program, each numbered so its subnet would be distinct. */
function hostileNodes(backendType: 'vxlan' | 'host-gw', base: number): FakeNode[] {
  let i = base;
  const h = (name: string, f: (x: FakeNode & Record<string, unknown>) => void) => node(`${name}-${base}`, i++, backendType, f);
  const list: FakeNode[] = [
    // host-gw ignores backend-data: there an oversized one alone does not make a node hostile.
    h('huge-backend-data', (x) => {
      ann(x)[`${P}backend-data`] = `{"VNI":4096,"VtepMAC":"0e:2a:00:00:00:01","pad":"${'x'.repeat(2_000_000)}"}`;
      if (backendType === 'host-gw') ann(x)[`${P}public-ip`] = `${'9'.repeat(2000)}`;
    }),
    h('huge-public-ip', (x) => (ann(x)[`${P}public-ip`] = '1'.repeat(100_000))),
    h('huge-unrelated-annotation', (x) => {
      ann(x)['example.com/blob'] = 'y'.repeat(1_000_000);
      x.spec!.podCIDR = '0.0.0.0/0';
      x.spec!.podCIDRs = ['0.0.0.0/0'];
    }),
    h('default-route', (x) => {
      x.spec!.podCIDR = '0.0.0.0/0';
      x.spec!.podCIDRs = ['0.0.0.0/0'];
    }),
    h('whole-network', (x) => {
      x.spec!.podCIDR = '10.244.0.0/16';
      x.spec!.podCIDRs = ['10.244.0.0/16'];
    }),
    // Younger than the Windows node: an older Node with its podCIDR would keep it, and the agent would refuse
    // to start (docs/compatibility.md, "Who holds a contested subnet"; test/integration/own-subnet-first-start.test.ts).
    h('own-subnet', (x) => {
      x.metadata.creationTimestamp = new Date(Date.now() + 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z');
      x.spec!.podCIDR = '10.244.100.0/24';
      x.spec!.podCIDRs = ['10.244.100.0/24'];
    }),
    h('ipv6-only', (x) => {
      x.spec!.podCIDR = 'fd00:1::/64';
      x.spec!.podCIDRs = ['fd00:1::/64'];
    }),
    h('podcidr-number', (x) => {
      (x.spec as Record<string, unknown>).podCIDR = 167_772_160;
      delete x.spec!.podCIDRs;
    }),
    h('podcidrs-string', (x) => ((x.spec as Record<string, unknown>).podCIDRs = '10.244.77.0/24')),
    h('podcidrs-objects', (x) => ((x.spec as Record<string, unknown>).podCIDRs = [{ cidr: '10.244.78.0/24' }, 42, null])),
    h('spec-array', (x) => ((x as Record<string, unknown>).spec = ['10.244.79.0/24'])),
    h('annotations-array', (x) => ((x.metadata as Record<string, unknown>).annotations = [`${P}kube-subnet-manager`, 'true'])),
    h('annotation-values-wrong-types', (x) => {
      const a = ann(x);
      a[`${P}kube-subnet-manager`] = true;
      a[`${P}backend-data`] = { VNI: 4096, VtepMAC: '0e:2a:00:00:00:01' };
      a[`${P}public-ip`] = ['10.0.2.99'];
    }),
    h('subnet-manager-True', (x) => (ann(x)[`${P}kube-subnet-manager`] = 'True')),
    h('public-ip-in-network', (x) => (ann(x)[`${P}public-ip`] = '10.244.200.5')),
    h('public-ip-broadcast', (x) => (ann(x)[`${P}public-ip`] = '255.255.255.255')),
    h('public-ip-zero', (x) => (ann(x)[`${P}public-ip`] = '0.0.0.0')),
    h('public-ip-loopback', (x) => (ann(x)[`${P}public-ip`] = '127.0.0.1')),
    h('public-ip-padded', (x) => (ann(x)[`${P}public-ip`] = ' 10.0.2.50\n')),
    h('public-ip-octal', (x) => (ann(x)[`${P}public-ip`] = '010.0.2.50')),
    h('backend-type-other', (x) => (ann(x)[`${P}backend-type`] = backendType === 'vxlan' ? 'host-gw' : 'vxlan')),
    h('status-garbage', (x) => {
      x.status = 'broken' as never;
      ann(x)[`${P}public-ip`] = '224.0.0.1';
    }),
  ];
  if (backendType === 'vxlan') {
    list.push(
      h('vni-1', (x) => (ann(x)[`${P}backend-data`] = '{"VNI":1,"VtepMAC":"0e:2a:00:00:00:01"}')),
      h('vni-string', (x) => (ann(x)[`${P}backend-data`] = '{"VNI":"4096","VtepMAC":"0e:2a:00:00:00:01"}')),
      h('vni-huge', (x) => (ann(x)[`${P}backend-data`] = '{"VNI":1e300,"VtepMAC":"0e:2a:00:00:00:01"}')),
      h('mac-broadcast', (x) => (ann(x)[`${P}backend-data`] = '{"VNI":4096,"VtepMAC":"ff:ff:ff:ff:ff:ff"}')),
      h('mac-multicast', (x) => (ann(x)[`${P}backend-data`] = '{"VNI":4096,"VtepMAC":"01:00:5e:00:00:01"}')),
      h('mac-injection', (x) => (ann(x)[`${P}backend-data`] = '{"VNI":4096,"VtepMAC":"0e:2a:00:00:00:01\\",\\"Type\\":\\"x"}')),
      h('backend-data-array', (x) => (ann(x)[`${P}backend-data`] = '[4096,"0e:2a:00:00:00:01"]')),
      h('backend-data-null', (x) => (ann(x)[`${P}backend-data`] = 'null')),
      h('backend-data-proto', (x) => (ann(x)[`${P}backend-data`] = '{"__proto__":{"VNI":4096,"VtepMAC":"0e:2a:00:00:00:01"}}')),
      h('backend-data-deep', (x) => (ann(x)[`${P}backend-data`] = '['.repeat(500) + ']'.repeat(500))),
      h('backend-data-not-json', (x) => (ann(x)[`${P}backend-data`] = '{VNI: 4096}')),
    );
  }
  return list;
}

/** A node with an over-long name (253 is the Kubernetes limit) and a bare node without annotations. */
function oddNodes(): FakeNode[] {
  const long = node('l'.repeat(300), 250, 'vxlan');
  return [long, bareNode({ name: 'bare', podCIDR: '10.244.251.0/24', internalIP: '10.0.2.251' })];
}

for (const backend of ['vxlan', 'host-gw'] as const) {
  it(`${backend}: hostile nodes in the first list and through the watch never crash the agent nor reach the dataplane`, async () => {
    c = await new FaultCluster().start();
    c.addLinux(1, backend);
    c.addLinux(2, backend);
    for (const n of hostileNodes(backend, 10)) c.api.addNode(n);
    for (const n of oddNodes()) c.api.addNode(n);
    c.addWindowsNode();
    const a = c.startAgent({ netConf: backend === 'vxlan' ? VXLAN_NET_CONF : HOSTGW_NET_CONF });
    await expectConverged(a, backend, [1, 2], 20_000);
    const rejectedAtStart = await readMetricTotal(a.agent.metrics, METRIC.leasesRejected);
    expect(rejectedAtStart).toBeGreaterThanOrEqual(10);

    // The same again through the watch, plus a peer that turns hostile and a hostile one that is fixed.
    for (const n of hostileNodes(backend, 100)) c.api.addNode(n);
    c.addLinux(3, backend);
    // A set podCIDR never changes in place (the apiserver refuses it): a node with a new one is deleted
    // and registered again.
    const reregister = (name: string, edit: (x: FakeNode) => void) => {
      const x = c.api.getNode(name)!;
      edit(x);
      c.api.reregisterNode(x);
    };
    reregister('linux-1', (x) => {
      x.spec = { podCIDR: '0.0.0.0/0', podCIDRs: ['0.0.0.0/0'] };
    });
    if (backend === 'vxlan')
      reregister('vni-1-10', (x) => {
        x.metadata.annotations![`${P}backend-data`] = '{"VNI":4096,"VtepMAC":"0e:2a:0a:00:01:0a"}';
        x.metadata.annotations![`${P}public-ip`] = '10.0.1.10';
        x.spec = { podCIDR: '10.244.10.0/24', podCIDRs: ['10.244.10.0/24'] };
      });
    reregister('backend-type-other-10', (x) => {
      x.metadata.annotations![`${P}backend-type`] = backend;
      x.metadata.annotations![`${P}public-ip`] = '10.0.1.30';
      x.metadata.annotations![`${P}backend-data`] = backend === 'vxlan' ? '{"VNI":4096,"VtepMAC":"0e:2a:0a:00:01:1e"}' : 'null';
      x.spec = { podCIDR: '10.244.30.0/24', podCIDRs: ['10.244.30.0/24'] };
    });
    await waitFor(async () => (await readMetricTotal(a.agent.metrics, METRIC.leasesRejected)) > rejectedAtStart + 10, 'watch rejections');
    // vni-1-10 is a vxlan-only node; in host-gw the fixed peer is only backend-type-other-10.
    await expectConverged(a, backend, backend === 'vxlan' ? [2, 3, 10, 30] : [2, 3, 30], 20_000);
    expect(a.agent.isReady).toBe(true);
  });
}

it('silent drops get reasons: a podCIDR equal to ours, one that is not a CIDR, an IPv6-only one', async () => {
  c = await new FaultCluster().start();
  c.addLinux(1, 'host-gw');
  for (const n of hostileNodes('host-gw', 10)) c.api.addNode(n);
  c.addWindowsNode();
  const a = c.startAgent({ netConf: HOSTGW_NET_CONF });
  await expectConverged(a, 'host-gw', [1]);
  const m = a.agent.metrics;
  for (const reason of ['subnet-equals-own', 'subnet-ipv6-only', 'subnet-invalid']) {
    await waitFor(async () => (await readMetric(m, METRIC.leasesRejected, { reason })) > 0, `a rejection counted as ${reason}`);
  }
  // own-subnet, ipv6-only, podcidr-number, podcidrs-string, podcidrs-objects, spec-array
  expect(await readMetric(m, METRIC.leasesRejected, { reason: 'subnet-equals-own' })).toBe(1);
  expect(await readMetric(m, METRIC.leasesRejected, { reason: 'subnet-ipv6-only' })).toBe(1);
  expect(await readMetric(m, METRIC.leasesRejected, { reason: 'subnet-invalid' })).toBe(4);
});

it('a duplicate podCIDR never hijacks a subnet: the holder keeps it through a flicker; it changes hands only when the holder goes', async () => {
  c = await new FaultCluster().start();
  c.addLinux(1, 'host-gw');
  c.addLinux(2, 'host-gw');
  c.addWindowsNode();
  const a = c.startAgent({ netConf: HOSTGW_NET_CONF });
  await expectConverged(a, 'host-gw', [1, 2]);
  // "a-hijacker" sorts before linux-1 and claims its podCIDR.
  const hijacker = linuxFlannelNode({ name: 'a-hijacker', podCIDR: '10.244.1.0/24', publicIP: '10.0.9.9', backendType: 'host-gw' });
  c.api.addNode(hijacker);
  await waitFor(async () => (await readMetric(a.agent.metrics, METRIC.subnetConflicts)) === 1, 'the conflict counted');
  // The holder flickers (public IP changes and changes back): it keeps its subnet throughout.
  c.api.updateNode('linux-1', (x) => void (x.metadata.annotations![`${P}public-ip`] = '10.0.1.101'));
  await waitFor(() => routes(a).includes('10.244.1.0/24 via 10.0.1.101'), 'the holder moved');
  c.api.updateNode('linux-1', (x) => void (x.metadata.annotations![`${P}public-ip`] = '10.0.1.1'));
  await expectConverged(a, 'host-gw', [1, 2]);
  expect(await readMetric(a.agent.metrics, METRIC.subnetConflicts)).toBe(1);
  // The holder is deleted: only now does the subnet change hands.
  c.api.deleteNode('linux-1');
  await waitFor(() => routes(a).join() === '10.244.1.0/24 via 10.0.9.9,10.244.2.0/24 via 10.0.1.2', 'handed over');
});

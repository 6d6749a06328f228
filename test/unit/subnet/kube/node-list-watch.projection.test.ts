import { describe, it, expect } from '@jest/globals';
import { annotationKeys } from '../../../../src/subnet/kube/annotations.js';
import { normalizeAnnotationPrefix } from '../../../../src/config/annotation-prefix.js';
import { MAX_ANNOTATION_LENGTH, projectNode, toLease } from '../../../../src/subnet/kube/node-list-watch.js';
import type { NodeLease } from '../../../../src/subnet/kube/node-list-watch.js';

const keys = annotationKeys(normalizeAnnotationPrefix('flannel.alpha.coreos.com'));
const P = 'flannel.alpha.coreos.com/';

function node(over: { annotations?: Record<string, unknown>; spec?: unknown; name?: unknown; status?: unknown; rv?: string }): unknown {
  return {
    metadata: { name: over.name ?? 'n1', resourceVersion: over.rv ?? '1', annotations: over.annotations },
    spec: over.spec,
    status: over.status,
  };
}

const flannelAnn = {
  [`${P}kube-subnet-manager`]: 'true',
  [`${P}backend-type`]: 'vxlan',
  [`${P}backend-data`]: '{"VNI":4096,"VtepMAC":"0e:2a:0a:00:00:0b"}',
  [`${P}public-ip`]: '10.0.0.11',
};

describe('projectNode', () => {
  const cases: Array<{ name: string; input: unknown; want: NodeLease | undefined }> = [
    { name: 'null', input: null, want: undefined },
    { name: 'string', input: 'node', want: undefined },
    { name: 'array', input: [1, 2], want: undefined },
    { name: 'no metadata', input: { spec: {} }, want: undefined },
    { name: 'name not a string', input: node({ name: 42 }), want: undefined },
    { name: 'empty name', input: node({ name: '' }), want: undefined },
    { name: 'bare node, no spec', input: node({}), want: { name: 'n1' } },
    { name: 'podCIDR only', input: node({ spec: { podCIDR: '10.244.1.0/24' } }), want: { name: 'n1', podCIDR: '10.244.1.0/24' } },
    { name: 'podCIDR host bits masked', input: node({ spec: { podCIDR: '10.244.1.7/24' } }), want: { name: 'n1', podCIDR: '10.244.1.0/24' } },
    {
      name: 'dual stack picks IPv4 (v6 first)',
      input: node({ spec: { podCIDR: 'fd00:10:244:1::/64', podCIDRs: ['fd00:10:244:1::/64', '10.244.1.0/24'] } }),
      want: { name: 'n1', podCIDR: '10.244.1.0/24' },
    },
    { name: 'IPv6 only', input: node({ spec: { podCIDR: 'fd00::/64', podCIDRs: ['fd00::/64'] } }), want: { name: 'n1', badPodCIDR: 'fd00::/64' } },
    { name: 'podCIDRs wins over podCIDR', input: node({ spec: { podCIDR: '10.244.9.0/24', podCIDRs: ['10.244.1.0/24'] } }), want: { name: 'n1', podCIDR: '10.244.1.0/24' } },
    { name: 'garbage podCIDR', input: node({ spec: { podCIDR: 'banana' } }), want: { name: 'n1', badPodCIDR: 'banana' } },
    { name: 'podCIDR wrong type', input: node({ spec: { podCIDR: 7, podCIDRs: 'x' } }), want: { name: 'n1', badPodCIDR: '"x"' } },
    { name: 'podCIDRs a string (not a list): never taken as a CIDR', input: node({ spec: { podCIDRs: '10.244.77.0/24' } }), want: { name: 'n1', badPodCIDR: '"10.244.77.0/24"' } },
    {
      name: 'an over-long podCIDR stays invalid when cut',
      input: node({ spec: { podCIDR: `10.244.1.0/24${' '.repeat(100)}` } }),
      want: { name: 'n1', badPodCIDR: `10.244.1.0/24${' '.repeat(30)}…` },
    },
    { name: 'podCIDRs wrong element types', input: node({ spec: { podCIDRs: [null, 5, {}, '10.244.2.0/24'] } }), want: { name: 'n1', podCIDR: '10.244.2.0/24' } },
    { name: 'octet > 255', input: node({ spec: { podCIDR: '10.256.0.0/24' } }), want: { name: 'n1', badPodCIDR: '10.256.0.0/24' } },
    { name: 'prefix > 32', input: node({ spec: { podCIDR: '10.244.0.0/33' } }), want: { name: 'n1', badPodCIDR: '10.244.0.0/33' } },
    { name: 'leading zero octet', input: node({ spec: { podCIDR: '010.244.0.0/24' } }), want: { name: 'n1', badPodCIDR: '010.244.0.0/24' } },
    { name: 'spec not an object: a podCIDR that is not a CIDR', input: node({ spec: ['10.244.1.0/24'] }), want: { name: 'n1', badPodCIDR: '' } },
    {
      name: 'creationTimestamp kept (decides a contested subnet)',
      input: { metadata: { name: 'n1', creationTimestamp: '2024-05-01T10:00:00Z' } },
      want: { name: 'n1', created: Date.UTC(2024, 4, 1, 10) },
    },
    { name: 'creationTimestamp unparsable: unknown', input: { metadata: { name: 'n1', creationTimestamp: 'yesterday' } }, want: { name: 'n1' } },
    { name: 'hostile 0.0.0.0/0 passes projection (watcher rejects)', input: node({ spec: { podCIDR: '0.0.0.0/0' } }), want: { name: 'n1', podCIDR: '0.0.0.0/0' } },
    {
      name: 'flannel annotations',
      input: node({ spec: { podCIDR: '10.244.1.0/24' }, annotations: { ...flannelAnn, other: 'x' } }),
      want: {
        name: 'n1',
        podCIDR: '10.244.1.0/24',
        subnetManager: 'true',
        backendType: 'vxlan',
        backendData: '{"VNI":4096,"VtepMAC":"0e:2a:0a:00:00:0b"}',
        publicIP: '10.0.0.11',
      },
    },
    {
      name: 'overwrite and node-public-ip',
      input: node({ annotations: { [`${P}public-ip-overwrite`]: '1.2.3.4', [`${P}node-public-ip`]: '5.6.7.8' } }),
      want: { name: 'n1', publicIPOverwrite: '1.2.3.4', nodePublicIP: '5.6.7.8' },
    },
    { name: 'annotations wrong type', input: node({ annotations: ['a'] as unknown as Record<string, unknown> }), want: { name: 'n1' } },
    { name: 'annotation values wrong type', input: node({ annotations: { [`${P}kube-subnet-manager`]: true, [`${P}public-ip`]: 1 } }), want: { name: 'n1' } },
    {
      name: 'huge backend-data dropped and flagged',
      input: node({ annotations: { [`${P}backend-data`]: 'x'.repeat(MAX_ANNOTATION_LENGTH + 1) } }),
      want: { name: 'n1', oversized: ['backendData'] },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(projectNode(c.input, keys)).toEqual(c.want);
    });
  }

  it('a 10 MB annotation and prototype keys do not throw', () => {
    const ann = Object.create(null) as Record<string, unknown>;
    ann['__proto__'] = 'x';
    ann[`${P}public-ip`] = 'y'.repeat(10 * 1024 * 1024);
    const rec = projectNode({ metadata: { name: 'n', annotations: ann } }, keys);
    expect(rec).toEqual({ name: 'n', oversized: ['publicIP'] });
  });

  it('honours a custom prefix', () => {
    const k = annotationKeys(normalizeAnnotationPrefix('example.com/net'));
    const rec = projectNode(node({ spec: { podCIDR: '10.1.0.0/24' }, annotations: { 'example.com/net-kube-subnet-manager': 'true', 'example.com/net-public-ip': '1.1.1.1' } }), k);
    expect(rec).toMatchObject({ subnetManager: 'true', publicIP: '1.1.1.1' });
  });
});

describe('toLease', () => {
  const base: NodeLease = {
    name: 'n1',
    podCIDR: '10.244.1.0/24',
    subnetManager: 'true',
    backendType: 'vxlan',
    backendData: '{"VNI":4096,"VtepMAC":"0e:2a:0a:00:00:0b"}',
    publicIP: '10.0.0.11',
  };
  const cases: Array<{ name: string; rec: NodeLease; want: unknown }> = [
    {
      name: 'vxlan',
      rec: base,
      want: { key: 'n1', subnet: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'vxlan', backendData: { VNI: 4096, VtepMAC: '0e:2a:0a:00:00:0b' } },
    },
    {
      name: 'host-gw null',
      rec: { ...base, backendType: 'host-gw', backendData: 'null' },
      want: { key: 'n1', subnet: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: 'host-gw', backendData: null },
    },
    { name: 'not managed', rec: { ...base, subnetManager: 'false' }, want: undefined },
    { name: 'flag missing', rec: { ...base, subnetManager: undefined }, want: undefined },
    { name: 'no podCIDR', rec: { ...base, podCIDR: undefined }, want: undefined },
    {
      name: 'a podCIDR that is no IPv4 CIDR is passed on (the watcher rejects it with a reason)',
      rec: { ...base, podCIDR: undefined, badPodCIDR: 'fd00::/64' },
      want: expect.objectContaining({ subnet: 'fd00::/64' }),
    },
    { name: 'creation time passed on', rec: { ...base, created: 5 }, want: expect.objectContaining({ created: 5 }) },
    { name: 'malformed backend-data', rec: { ...base, backendData: '{nope' }, want: expect.objectContaining({ backendData: undefined }) },
    { name: 'oversized backend-data', rec: { ...base, backendData: undefined, oversized: ['backendData'] }, want: expect.objectContaining({ backendData: undefined }) },
    { name: 'missing public-ip', rec: { ...base, publicIP: undefined }, want: expect.objectContaining({ publicIP: '' }) },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(toLease(c.rec)).toEqual(c.want);
    });
  }
});

// Which Node changes change the lease a peer gets (the peer store compares leases, src/peers/store.ts).
describe('toLease across Node changes', () => {
  const mk = (rv: string, ann: Record<string, unknown> = flannelAnn, spec: unknown = { podCIDR: '10.244.1.0/24' }, status: unknown = {}) =>
    toLease(projectNode(node({ rv, annotations: ann, spec, status }), keys)!);
  const a = mk('1');
  const cases: Array<{ name: string; b: ReturnType<typeof toLease>; changed: boolean }> = [
    {
      name: 'heartbeat / resourceVersion only',
      b: mk(
        '99',
        { ...flannelAnn, 'node.alpha.kubernetes.io/ttl': '0' },
        { podCIDR: '10.244.1.0/24', unschedulable: true },
        { conditions: [{ type: 'Ready', lastHeartbeatTime: 'now' }] },
      ),
      changed: false,
    },
    { name: 'unrelated annotation', b: mk('2', { ...flannelAnn, [`${P}node-public-ip`]: '9.9.9.9', foo: 'bar' }), changed: false },
    { name: 'public-ip-overwrite alone (the owner copies it)', b: mk('2', { ...flannelAnn, [`${P}public-ip-overwrite`]: '9.9.9.9' }), changed: false },
    { name: 'public-ip', b: mk('2', { ...flannelAnn, [`${P}public-ip`]: '10.0.0.99' }), changed: true },
    { name: 'backend-type', b: mk('2', { ...flannelAnn, [`${P}backend-type`]: 'host-gw' }), changed: true },
    { name: 'backend-data', b: mk('2', { ...flannelAnn, [`${P}backend-data`]: '{"VNI":4097,"VtepMAC":"0e:2a:0a:00:00:0b"}' }), changed: true },
    { name: 'subnet-manager flag', b: mk('2', { ...flannelAnn, [`${P}kube-subnet-manager`]: 'false' }), changed: true },
    { name: 'podCIDR', b: mk('2', flannelAnn, { podCIDR: '10.244.2.0/24' }), changed: true },
    { name: 'backend-data becomes oversized', b: mk('2', { ...flannelAnn, [`${P}backend-data`]: 'z'.repeat(MAX_ANNOTATION_LENGTH + 5) }), changed: true },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(a).toBeDefined();
      if (c.changed) expect(c.b).not.toEqual(a);
      else expect(c.b).toEqual(a);
    });
  }
});

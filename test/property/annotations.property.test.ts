// Property-based tests of flannel's Node annotations and the Node -> lease projection.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { FlannelError } from '../../src/basics/errors.js';
import { annotationKeys, decodeBackendData, encodeBackendData } from '../../src/subnet/kube/annotations.js';
import { normalizeAnnotationPrefix } from '../../src/config/annotation-prefix.js';
import { MAX_ANNOTATION_LENGTH, projectNode, toLease } from '../../src/subnet/kube/node-list-watch.js';
import { isNetworkCidr } from '../../src/basics/ip4.js';
import { validateLease } from '../../src/peers/validate.js';

const KEYS = annotationKeys('flannel.alpha.coreos.com/');

const label = fc.stringMatching(/^[a-z0-9_-]{1,8}$/);
/** Prefix-like strings: DNS-ish names, optional `/name`, plus stray characters, slashes and dashes. */
const prefixLike = fc.oneof(
  fc
    .tuple(fc.array(label, { minLength: 1, maxLength: 4 }), fc.option(fc.stringMatching(/^[a-z0-9_-]{0,8}$/), { nil: undefined }), fc.constantFrom('', '/', '-', '//'))
    .map(([labels, name, tail]) => labels.join('.') + (name === undefined ? '' : `/${name}`) + tail),
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 30 }),
);

describe('normalizeAnnotationPrefix', () => {
  it('throws only FLANNEL_ERR_ANNOTATION_PREFIX, and is idempotent on its output', () => {
    let ok = 0;
    fc.assert(
      fc.property(prefixLike, (p) => {
        let n: string;
        try {
          n = normalizeAnnotationPrefix(p);
        } catch (err) {
          expect(err).toBeInstanceOf(FlannelError);
          expect((err as FlannelError).code).toBe('FLANNEL_ERR_ANNOTATION_PREFIX');
          return;
        }
        ok++;
        expect(n.endsWith('/') || n.endsWith('-')).toBe(true);
        expect(n.startsWith(p.replace(/[/-]$/, ''))).toBe(true);
        expect(normalizeAnnotationPrefix(n)).toBe(n);
        // Keys built from it are valid Kubernetes annotation keys: one `/`, name part <= 63 chars is not ours to check.
        expect(annotationKeys(n).backendData.split('/').length).toBe(2);
      }),
      { numRuns: 1000 },
    );
    // The generator reaches the success path, so the property is not vacuous. It did so 100 times in 1,000
    // runs when a bound of more than 100 failed a clean-clone CI run; more than 25 keeps the check.
    expect(ok).toBeGreaterThan(25);
  });
});

const hexByte = fc.integer({ min: 0, max: 255 }).map((b) => b.toString(16).padStart(2, '0'));
const mac = fc.array(hexByte, { minLength: 6, maxLength: 6 }).map((b) => b.join(':'));

describe('backend-data', () => {
  it('encode -> decode round-trips vxlan data, in upstream key order', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffff }), mac, (VNI, VtepMAC) => {
        const text = encodeBackendData({ VNI, VtepMAC });
        expect(text).toBe(`{"VNI":${VNI},"VtepMAC":"${VtepMAC}"}`);
        expect(decodeBackendData(text)).toEqual({ VNI, VtepMAC });
      }),
      { numRuns: 300 },
    );
    expect(encodeBackendData(null)).toBe('null');
    expect(decodeBackendData('null')).toBeNull();
  });

  it('decode never throws: malformed text is undefined, valid JSON is its value', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: 'binary', maxLength: 100 }),
          fc.jsonValue().map((v) => JSON.stringify(v)),
        ),
        (s) => {
          const d = decodeBackendData(s);
          let parsed: unknown;
          try {
            parsed = JSON.parse(s);
          } catch {
            expect(d).toBe(s === '' ? null : undefined);
            return;
          }
          expect(d).toEqual(parsed);
        },
      ),
      { numRuns: 500 },
    );
  });
});

/** A Node-shaped object whose every field may have the wrong type or an absurd size. */
const anyValue = fc.anything({ maxDepth: 2, withNullPrototype: true, withBoxedValues: true, withSparseArray: true });
const cidrish = fc.oneof(
  fc.constantFrom('10.244.3.0/24', '10.244.3.7/24', '0.0.0.0/0', '10.244.0.0/16', 'fd00::/64', '10.244.3.0/33', '', '10.244.3.0', ' 10.244.3.0/24'),
  fc.tuple(fc.nat(255), fc.nat(255), fc.integer({ min: -1, max: 40 })).map(([a, b, p]) => `10.${a}.${b}.0/${p}`),
  anyValue,
  fc.string({ minLength: 40, maxLength: 200 }),
);
const annValue = fc.oneof(
  fc.constantFrom('true', 'false', 'vxlan', 'host-gw', 'null', '{"VNI":4096,"VtepMAC":"0e:2a:00:00:00:01"}', '10.0.0.5', ''),
  fc.string({ maxLength: 20 }),
  anyValue,
  fc.integer({ min: MAX_ANNOTATION_LENGTH - 2, max: MAX_ANNOTATION_LENGTH + 2 }).map((n) => 'x'.repeat(n)),
);
const hostileNode = fc.oneof(
  anyValue,
  fc.record(
    {
      metadata: fc.oneof(
        anyValue,
        fc.record(
          {
            name: fc.oneof(
              fc.string({ maxLength: 10 }),
              anyValue,
              fc.integer({ min: 250, max: 256 }).map((n) => 'n'.repeat(n)),
            ),
            annotations: fc.oneof(anyValue, fc.dictionary(fc.constantFrom(...(Object.values(KEYS) as string[]), 'other'), annValue, { maxKeys: 8 })),
          },
          { requiredKeys: [] },
        ),
      ),
      spec: fc.oneof(anyValue, fc.record({ podCIDR: cidrish, podCIDRs: fc.oneof(anyValue, fc.array(cidrish, { maxLength: 12 })) }, { requiredKeys: [] })),
      status: anyValue,
    },
    { requiredKeys: [] },
  ),
);

/** A valid flannel node with one field of the wrong type or shape. */
const nearlyValidNode = fc
  .record({
    path: fc.constantFrom(
      'spec.podCIDRs',
      'spec.podCIDR',
      'spec',
      'metadata.annotations',
      'metadata.name',
      `metadata.annotations.${KEYS.publicIP}`,
      `metadata.annotations.${KEYS.kubeSubnetManager}`,
    ),
    value: fc.oneof(fc.constantFrom('10.244.9.0/24', '', 'true', 42, true, null, [], ['10.244.9.0/24'], { a: '10.244.9.0/24' }, [1, '10.244.9.0/24']), anyValue),
  })
  .map(({ path, value }) => {
    const node: Record<string, unknown> = {
      metadata: {
        name: 'n1',
        annotations: {
          [KEYS.kubeSubnetManager]: 'true',
          [KEYS.backendType]: 'vxlan',
          [KEYS.backendData]: '{"VNI":4096,"VtepMAC":"0e:2a:00:00:00:01"}',
          [KEYS.publicIP]: '192.168.0.1',
        },
      },
      spec: { podCIDR: '10.244.1.0/24', podCIDRs: ['10.244.1.0/24'] },
    };
    const parts = path.startsWith('metadata.annotations.') ? ['metadata', 'annotations', path.slice('metadata.annotations.'.length)] : path.split('.');
    let o = node;
    for (const k of parts.slice(0, -1)) o = o[k] as Record<string, unknown>;
    o[parts[parts.length - 1]] = value;
    return node;
  });

describe('projectNode / toLease', () => {
  it('never throw on arbitrary objects, and keep only bounded, well-typed fields', () => {
    fc.assert(
      fc.property(hostileNode, (node) => {
        const rec = projectNode(node, KEYS);
        if (rec === undefined) return;
        expect(typeof rec.name).toBe('string');
        expect(rec.name.length).toBeGreaterThan(0);
        expect(rec.name.length).toBeLessThanOrEqual(253);
        if (rec.podCIDR !== undefined) expect(isNetworkCidr(rec.podCIDR)).toBe(true);
        for (const f of ['subnetManager', 'backendType', 'backendData', 'publicIP', 'publicIPOverwrite', 'nodePublicIP'] as const) {
          const v = rec[f];
          if (v !== undefined) {
            expect(typeof v).toBe('string');
            expect(v.length).toBeLessThanOrEqual(MAX_ANNOTATION_LENGTH);
          }
        }
        const lease = toLease(rec);
        if (lease !== undefined) {
          expect(lease.key).toBe(rec.name);
          expect(lease.subnet).toBe(rec.podCIDR ?? rec.badPodCIDR);
          expect(typeof lease.publicIP).toBe('string');
          expect(typeof lease.backendType).toBe('string');
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('a well-formed flannel node projects to exactly its published lease', () => {
    fc.assert(
      fc.property(fc.nat(255), fc.nat(255), fc.integer({ min: 4096, max: 0xffffff }), mac, (o3, o4, VNI, VtepMAC) => {
        const data = encodeBackendData({ VNI, VtepMAC });
        const node = {
          metadata: {
            name: `n-${o3}`,
            annotations: { [KEYS.kubeSubnetManager]: 'true', [KEYS.backendType]: 'vxlan', [KEYS.backendData]: data, [KEYS.publicIP]: `192.168.${o3}.${o4}` },
          },
          spec: { podCIDR: `10.244.${o3}.${o4}/24`, podCIDRs: [`fd00::/64`, `10.244.${o3}.0/24`] },
        };
        expect(toLease(projectNode(node, KEYS)!)).toEqual({
          key: `n-${o3}`,
          subnet: `10.244.${o3}.0/24`,
          publicIP: `192.168.${o3}.${o4}`,
          backendType: 'vxlan',
          backendData: { VNI, VtepMAC },
        });
      }),
      { numRuns: 200 },
    );
  });

  it('a Node without an IPv4 podCIDR never yields a lease that passes validation (it is rejected with a reason)', () => {
    const ctx = { network: '10.244.0.0/16', subnetLen: 24, backendType: 'vxlan' as const };
    fc.assert(
      fc.property(fc.oneof(hostileNode, nearlyValidNode), (node) => {
        const raw = JSON.parse(JSON.stringify(node ?? null)) as unknown;
        const rec = projectNode(raw, KEYS);
        if (rec === undefined || rec.podCIDR !== undefined) return;
        const lease = toLease(rec);
        if (lease === undefined) return;
        expect(lease.subnet).toBe(rec.badPodCIDR);
        const v = validateLease(lease, ctx);
        expect(v.ok).toBe(false);
        if (!v.ok) expect(['subnet-invalid', 'subnet-ipv6-only']).toContain(v.reason);
      }),
      { numRuns: 2000 },
    );
  });
});

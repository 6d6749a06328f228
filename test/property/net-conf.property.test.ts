// Property-based tests of net-conf.json parsing (src/subnet/net-conf.ts).
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { FlannelError } from '../../src/basics/errors.js';
import { MIN_NETWORK_PREFIX, parseNetConf } from '../../src/subnet/net-conf.js';
import type { NetworkConfig } from '../../src/subnet/net-conf-types.js';

const RUNS = { numRuns: 300 };

/** parseNetConf either returns or throws a FlannelError FLANNEL_ERR_NET_CONF: nothing else escapes. */
function outcome(text: string): NetworkConfig | FlannelError {
  try {
    return parseNetConf(text);
  } catch (err) {
    if (!(err instanceof FlannelError)) throw new Error(`non-FlannelError escaped for ${text.slice(0, 200)}: ${String(err)}`);
    expect(err.code).toBe('FLANNEL_ERR_NET_CONF');
    expect(err.message.length).toBeGreaterThan(0);
    return err;
  }
}

const ip4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((o) => o.join('.'));
const int = (n: number) => [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');

/** Values of every JSON type plus near-misses of the real ones. */
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom('10.244.0.0/16', '10.244.0.0/33', '::/0', 'fd00::/64', '0.0.0.0/0', '10.244.0.0', '', ' ', 'vxlan', 'host-gw', 'udp', '0E-2A', 'zz-zz'),
  ip4,
  ip4.chain((a) => fc.integer({ min: -1, max: 40 }).map((p) => `${a}/${p}`)),
  fc.constantFrom(4096, 4095, 1, 0, -1, 0xffffff, 0x1000000, 4789, 8472, 1.5, 1e300, Number.MAX_SAFE_INTEGER, true, false, null),
);

const KEYS = ['Network', 'SubnetLen', 'SubnetMin', 'SubnetMax', 'EnableIPv4', 'EnableIPv6', 'IPv6Network', 'IPv6SubnetLen', 'Backend'];
const BACKEND_KEYS = ['Type', 'VNI', 'Port', 'GBP', 'DirectRouting', 'MacPrefix', 'Name', 'DNSServerList', 'LegacyRemoteEndpoints'];

const hostileBackend = fc.oneof(
  hostileValue,
  fc.dictionary(fc.mixedCase(fc.constantFrom(...BACKEND_KEYS)), hostileValue, { maxKeys: 6 }),
  fc
    .record({ Type: fc.constantFrom('vxlan', 'host-gw', 'VXLAN', 'Host-GW') })
    .chain((b) => fc.dictionary(fc.mixedCase(fc.constantFrom(...BACKEND_KEYS)), hostileValue, { maxKeys: 5 }).map((d) => ({ ...b, ...d }))),
);

const hostileDoc = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.dictionary(fc.mixedCase(fc.constantFrom(...KEYS)), hostileValue, { maxKeys: 8 }).chain((d) => hostileBackend.map((b) => ({ ...d, Backend: b }))),
  fc.dictionary(fc.mixedCase(fc.constantFrom(...KEYS)), fc.oneof(hostileValue, hostileBackend), { maxKeys: 9 }),
);

describe('parseNetConf: total on hostile input', () => {
  it('arbitrary text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 200 }), (s) => void outcome(s)),
      RUNS,
    );
  });

  it('arbitrary JSON values', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => void outcome(JSON.stringify(v))),
      RUNS,
    );
  });

  it('objects with the real keys (any casing) and values of every type', () => {
    fc.assert(
      fc.property(hostileDoc, (d) => void outcome(JSON.stringify(d))),
      { numRuns: 1500 },
    );
  });
});

interface ValidConf {
  base: number;
  prefix: number;
  subnetLen: number | undefined;
  minOff: number | undefined;
  maxOff: number | undefined;
  backend:
    { type: 'vxlan'; vni: number | undefined; macPrefix: string | undefined; name: string | undefined } | { type: 'host-gw'; name: string | undefined; dns: string | undefined };
  hostBits: number;
}

/** Built once: fc.stringMatching is costly to construct (never inside chain). */
const macPrefixArb = fc.tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }), fc.boolean()).map(([a, b, up]) => {
  const t = `${a.toString(16).padStart(2, '0')}-${b.toString(16).padStart(2, '0')}`;
  return up ? t.toUpperCase() : t;
});

/**
 * One plain Windows path element: what Backend.Name must be (it names the host-local IPAM directory).
 * Microsoft Learn, "Naming Files, Paths, and Namespaces": no separator, `..` or control character, none
 * of `< > : " | ? *`, no reserved device name (with or without an extension), not `.`, no trailing dot or space.
 */
const plainName = (n: string) =>
  !/[/\\]/.test(n) &&
  !n.includes('..') &&
  ![...n].some((c) => c < ' ' || c === '\u007f') &&
  !/[<>:"|?*]/.test(n) &&
  !/^(CON|PRN|AUX|NUL|COM[0-9\u00b9\u00b2\u00b3]|LPT[0-9\u00b9\u00b2\u00b3])(\..*)?$/i.test(n) &&
  n !== '.' &&
  !/[. ]$/.test(n);
const hnsNameArb = fc.string({ minLength: 1, maxLength: 20 }).filter(plainName);

// At least MIN_NETWORK_PREFIX (/8): a wider Network is refused (too-wide), as the unit table checks.
const validConf: fc.Arbitrary<ValidConf> = fc.integer({ min: MIN_NETWORK_PREFIX, max: 28 }).chain((prefix) =>
  fc.record({
    prefix: fc.constant(prefix),
    base: fc.nat(2 ** prefix - 1).map((n) => n * 2 ** (32 - prefix)),
    hostBits: fc.nat(2 ** (32 - prefix) - 1),
    subnetLen: fc.option(fc.integer({ min: prefix + 2, max: 30 }), { nil: undefined }),
    minOff: fc.option(fc.nat(1000), { nil: undefined }),
    maxOff: fc.option(fc.nat(1000), { nil: undefined }),
    backend: fc.oneof(
      fc.record({
        type: fc.constant('vxlan' as const),
        vni: fc.option(fc.integer({ min: 4096, max: 65535 }), { nil: undefined }),
        macPrefix: fc.option(macPrefixArb, { nil: undefined }),
        name: fc.option(hnsNameArb, { nil: undefined }),
      }),
      fc.record({
        type: fc.constant('host-gw' as const),
        name: fc.option(hnsNameArb, { nil: undefined }),
        dns: fc.option(fc.string({ maxLength: 30 }), { nil: undefined }),
      }),
    ),
  }),
);

/** The effective subnet length and min/max the config implies (flannel's CheckNetworkConfig). */
function expected(c: ValidConf) {
  const subnetLen = c.subnetLen ?? (c.prefix <= 22 ? 24 : c.prefix + 2);
  const size = 2 ** (32 - subnetLen);
  const count = 2 ** (subnetLen - c.prefix);
  const min = c.minOff === undefined ? c.base + size : c.base + (c.minOff % count) * size;
  const max = c.maxOff === undefined ? c.base + (count - 1) * size : c.base + (c.maxOff % count) * size;
  return { subnetLen, min, max };
}

function doc(c: ValidConf): Record<string, unknown> {
  const e = expected(c);
  const d: Record<string, unknown> = { Network: `${int(c.base + c.hostBits)}/${c.prefix}` };
  if (c.subnetLen !== undefined) d.SubnetLen = c.subnetLen;
  if (c.minOff !== undefined) d.SubnetMin = int(e.min);
  if (c.maxOff !== undefined) d.SubnetMax = int(e.max);
  const b: Record<string, unknown> = { Type: c.backend.type };
  if (c.backend.type === 'vxlan') {
    if (c.backend.vni !== undefined) b.VNI = c.backend.vni;
    if (c.backend.macPrefix !== undefined) b.MacPrefix = c.backend.macPrefix;
    if (c.backend.name !== undefined) b.Name = c.backend.name;
  } else {
    if (c.backend.name !== undefined) b.Name = c.backend.name;
    if (c.backend.dns !== undefined) b.DNSServerList = c.backend.dns;
  }
  d.Backend = b;
  return d;
}

/** Random casing of every key, recursively. */
function recase(v: unknown, flips: { nextBoolean(): boolean }): unknown {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
  return Object.fromEntries(
    Object.entries(v as Record<string, unknown>).map(([k, x]) => [[...k].map((ch) => (flips.nextBoolean() ? ch.toUpperCase() : ch.toLowerCase())).join(''), recase(x, flips)]),
  );
}

describe('parseNetConf: valid generated configs', () => {
  it('round-trip their values (defaults applied, host bits masked)', () => {
    fc.assert(
      fc.property(validConf, (c) => {
        const r = parseNetConf(JSON.stringify(doc(c)));
        const e = expected(c);
        // SubnetMin 0.0.0.0 means "unset" upstream: the default applies then.
        const min = e.min === 0 ? c.base + 2 ** (32 - e.subnetLen) : e.min;
        const vni = c.backend.type === 'vxlan' ? (c.backend.vni ?? 4096) : 0;
        const backend =
          c.backend.type === 'vxlan'
            ? { type: 'vxlan', vni, port: 4789, macPrefix: c.backend.macPrefix ?? '0E-2A', name: c.backend.name ?? `flannel.${vni}`, legacyRemoteEndpoints: false }
            : { type: 'host-gw', name: c.backend.name ?? 'cbr0', dnsServerList: c.backend.dns ?? '' };
        const maxDefault = c.base + (2 ** (e.subnetLen - c.prefix) - 1) * 2 ** (32 - e.subnetLen);
        const { rawBackend: _raw, ...got } = r;
        const want = {
          enableIPv4: true,
          enableIPv6: false,
          network: `${int(c.base)}/${c.prefix}`,
          subnetLen: e.subnetLen,
          subnetMin: int(min),
          subnetMax: int(e.max === 0 ? maxDefault : e.max),
          ipv6Network: '',
          ipv6SubnetLen: 0,
          backend,
        };
        if (JSON.stringify(got) !== JSON.stringify(want)) expect(got).toEqual(want);
      }),
      { numRuns: 500 },
    );
  });

  it('keys are case-insensitive: any casing parses to the same config', () => {
    fc.assert(
      fc.property(validConf, fc.integer(), (c, seed) => {
        const canonical = parseNetConf(JSON.stringify(doc(c)));
        let x = seed | 0;
        const flips = { nextBoolean: () => ((x = (Math.imul(x, 1103515245) + 12345) | 0) & 0x10000) !== 0 };
        const mixed = recase(doc(c), flips) as Record<string, unknown>;
        const r = parseNetConf(JSON.stringify(mixed));
        const { rawBackend: _a, ...rest } = r;
        const { rawBackend: _b, ...want } = canonical;
        if (JSON.stringify(rest) !== JSON.stringify(want)) expect(rest).toEqual(want);
      }),
      { numRuns: 300 },
    );
  });

  it('the last of several differently-cased keys wins, as Go encoding/json does', () => {
    fc.assert(
      fc.property(fc.integer({ min: 4096, max: 65535 }), fc.integer({ min: 4096, max: 65535 }), (v1, v2) => {
        const text = `{"Network":"10.244.0.0/16","Backend":{"Type":"vxlan","VNI":${v1},"vni":${v2}}}`;
        const r = parseNetConf(text);
        expect(r.backend.type === 'vxlan' && r.backend.vni).toBe(v2);
      }),
      RUNS,
    );
  });
});

describe('parseNetConf: Backend.Name', () => {
  it('a name that is not a plain Windows path element is refused, any other is kept', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 20, unit: 'binary-ascii' }), fc.constantFrom('vxlan', 'host-gw'), (name, type) => {
        const text = JSON.stringify({ Network: '10.244.0.0/16', Backend: { Type: type, Name: name } });
        if (plainName(name)) expect(parseNetConf(text).backend.name).toBe(name);
        else expect(() => parseNetConf(text)).toThrow(expect.objectContaining({ code: 'FLANNEL_ERR_NET_CONF' }));
      }),
    );
  });
});

// Property-based tests of subnet.env encoding and parsing (src/subnet/subnet-env.ts).
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { FlannelError } from '../../src/basics/errors.js';
import {
  checkSubnetEnvSyntax,
  encodeSubnetEnv,
  parseSubnetEnv,
  previousIPv6SubnetFromEnv,
  previousSubnetFromEnv,
  readSubnetEnv,
  type SubnetEnvValues,
} from '../../src/subnet/subnet-env.js';
import type { SubnetEnvFs } from '../../src/basics/fs.js';
import { formatIp4, isNetworkCidr } from '../../src/basics/ip4.js';
import { formatCidr6, network6, nthAddress6, parseCidr6 } from '../../src/basics/ip6.js';

const u32 = fc.integer({ min: 0, max: 0xffffffff });
const mask = (ip: number, p: number) => (p === 0 ? 0 : (ip & ((0xffffffff << (32 - p)) >>> 0)) >>> 0);
const cidr4 = (maxPrefix: number) => fc.tuple(u32, fc.integer({ min: 0, max: maxPrefix })).map(([ip, p]) => ({ ip, p, text: `${formatIp4(ip)}/${p}` }));
const u128 = fc.bigInt({ min: 0n, max: (1n << 128n) - 1n });

/** The canonical (RFC 5952) text of a 128-bit address, from the WHATWG URL serializer. */
function ip6Text(v: bigint): string {
  const groups = Array.from({ length: 8 }, (_, i) => ((v >> BigInt((7 - i) * 16)) & 0xffffn).toString(16));
  return new URL(`http://[${groups.join(':')}]/`).hostname.slice(1, -1);
}
function ip6Value(text: string): bigint {
  const full = new URL(`http://[${text}]/`).hostname.slice(1, -1);
  const [head, tail] = full.includes('::') ? full.split('::') : [full, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n);
}
const mask6 = (v: bigint, p: number) => (p === 0 ? 0n : v & (((1n << BigInt(p)) - 1n) << BigInt(128 - p)));

const values = fc.record({
  net: cidr4(31),
  sub: cidr4(31),
  mtu: fc.integer({ min: 1, max: 0x7fffffff }),
  ipMasq: fc.boolean(),
  v6: fc.option(fc.record({ net: u128, np: fc.integer({ min: 0, max: 128 }), sub: u128, sp: fc.integer({ min: 0, max: 128 }) }), { nil: undefined }),
});

describe('encodeSubnetEnv -> parseSubnetEnv', () => {
  it('round-trips generated valid values; LF only, upstream key order', () => {
    fc.assert(
      fc.property(values, (v) => {
        const input: SubnetEnvValues = { network: v.net.text, subnet: v.sub.text, mtu: v.mtu, ipMasq: v.ipMasq };
        if (v.v6) {
          input.ipv6Network = `${ip6Text(v.v6.net)}/${v.v6.np}`;
          input.ipv6Subnet = `${ip6Text(v.v6.sub)}/${v.v6.sp}`;
        }
        if (v.v6?.sp === 128) {
          // A /128 has no address after the subnet's own: it cannot be written (as IPv4 /32).
          expect(() => encodeSubnetEnv(input)).toThrow(expect.objectContaining({ code: 'FLANNEL_ERR_SUBNET_ENV' }));
          return;
        }
        const text = encodeSubnetEnv(input);
        expect(text).not.toMatch(/\r/);
        expect(text.endsWith('\n')).toBe(true);
        const lines = text.slice(0, -1).split('\n');
        const order = v.v6
          ? ['FLANNEL_NETWORK', 'FLANNEL_SUBNET', 'FLANNEL_IPV6_NETWORK', 'FLANNEL_IPV6_SUBNET', 'FLANNEL_MTU', 'FLANNEL_IPMASQ']
          : ['FLANNEL_NETWORK', 'FLANNEL_SUBNET', 'FLANNEL_MTU', 'FLANNEL_IPMASQ'];
        expect(lines.map((l) => l.split('=')[0])).toEqual(order);
        const env = parseSubnetEnv(text);
        expect(Object.keys(env)).toEqual(order);
        const subnetNet = mask(v.sub.ip, v.sub.p);
        const want: Record<string, string> = {
          FLANNEL_NETWORK: `${formatIp4(mask(v.net.ip, v.net.p))}/${v.net.p}`,
          FLANNEL_SUBNET: `${formatIp4(subnetNet + 1)}/${v.sub.p}`,
          FLANNEL_MTU: String(v.mtu),
          FLANNEL_IPMASQ: String(v.ipMasq),
        };
        if (v.v6) {
          const s6 = mask6(v.v6.sub, v.v6.sp);
          want.FLANNEL_IPV6_NETWORK = `${ip6Text(mask6(v.v6.net, v.v6.np))}/${v.v6.np}`;
          want.FLANNEL_IPV6_SUBNET = `${ip6Text(s6 + 1n)}/${v.v6.sp}`;
          // The written address is the subnet's first host, inside the subnet.
          expect(mask6(ip6Value(env.FLANNEL_IPV6_SUBNET.split('/')[0]), v.v6.sp)).toBe(s6);
        }
        expect(env).toEqual(want);
        // The CNI side reads the own subnet back as the network CIDR.
        expect(previousSubnetFromEnv(text)).toBe(`${formatIp4(subnetNet)}/${v.sub.p}`);
        // CRLF (an editor on Windows) parses to the same values.
        expect(parseSubnetEnv(text.replace(/\n/g, '\r\n'))).toEqual(want);
        checkSubnetEnvSyntax(text);
      }),
      { numRuns: 500 },
    );
  });

  // subnet-env.ts keeps its own IPv6 CIDR parser: it refuses zone IDs and dotted IPv4 tails, which
  // nothing the agent writes has. Every hex spelling is written as basics/ip6 reads it, and
  // previousIPv6SubnetFromEnv (basics/ip6) reads FLANNEL_IPV6_SUBNET back as the subnet written.
  it('IPv6 CIDRs in any hex spelling are written and read back as basics/ip6 parses them', () => {
    const groups = (v: bigint) => Array.from({ length: 8 }, (_, i) => Number((v >> BigInt((7 - i) * 16)) & 0xffffn));
    const spellings = [
      (v: bigint) => ip6Text(v),
      (v: bigint) => ip6Text(v).toUpperCase(),
      (v: bigint) =>
        groups(v)
          .map((g) => g.toString(16))
          .join(':'),
      (v: bigint) =>
        groups(v)
          .map((g) => g.toString(16).padStart(4, '0'))
          .join(':'),
    ];
    const cidr6 = (maxPrefix: number) =>
      fc.tuple(u128, fc.integer({ min: 0, max: maxPrefix }), fc.integer({ min: 0, max: spellings.length - 1 }), fc.boolean()).map(([v, p, k, small]) => {
        const ip = small ? v >> 96n : v; // leading zero groups, `::` first
        return `${spellings[k](ip)}/${p}`;
      });
    fc.assert(
      fc.property(cidr6(128), cidr6(127), (net6, sub6) => {
        const text = encodeSubnetEnv({ network: '10.244.0.0/16', subnet: '10.244.3.0/24', mtu: 1450, ipMasq: true, ipv6Network: net6, ipv6Subnet: sub6 });
        const env = parseSubnetEnv(text);
        const n = network6(parseCidr6(net6)!);
        const s = network6(parseCidr6(sub6)!);
        expect(env.FLANNEL_IPV6_NETWORK).toBe(formatCidr6(n));
        expect(env.FLANNEL_IPV6_SUBNET).toBe(`${nthAddress6(s, 1)}/${s.prefix}`);
        expect(previousIPv6SubnetFromEnv(text)).toBe(formatCidr6(s));
      }),
      { numRuns: 2000 },
    );
  });

  it('rejects what it cannot write with FLANNEL_ERR_SUBNET_ENV only', () => {
    const str = fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom('10.244.0.0/16', '10.244.1.0/32', 'fd00::/64', 'fd00::1/128', '::/0', '1.2.3.4/-1', '1.2.3.4'));
    fc.assert(
      fc.property(
        fc.record(
          {
            network: str,
            subnet: str,
            mtu: fc.oneof(fc.integer(), fc.double()),
            ipMasq: fc.boolean(),
            ipv6Network: fc.option(str, { nil: undefined }),
            ipv6Subnet: fc.option(str, { nil: undefined }),
          },
          { requiredKeys: ['network', 'subnet', 'mtu', 'ipMasq'] },
        ),
        (v) => {
          try {
            const text = encodeSubnetEnv(v);
            expect(text.split('\n').length).toBeGreaterThanOrEqual(5);
          } catch (err) {
            expect(err).toBeInstanceOf(FlannelError);
            expect((err as FlannelError).code).toBe('FLANNEL_ERR_SUBNET_ENV');
          }
        },
      ),
      { numRuns: 1000 },
    );
  });
});

describe('parsing hostile subnet.env text', () => {
  const text = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 300 }),
    fc
      .array(
        fc.oneof(
          fc.constantFrom('FLANNEL_SUBNET=10.244.3.1/24', 'FLANNEL_SUBNET=garbage', 'FLANNEL_SUBNET=', '# c', 'export FLANNEL_MTU=1450', '=x', 'A B=1', '\0'),
          fc.string({ maxLength: 20 }),
        ),
        { maxLength: 8 },
      )
      .map((l) => l.join(fc.sample(fc.constantFrom('\n', '\r\n', '\r'), 1)[0])),
  );

  it('parse and previousSubnetFromEnv never throw', () => {
    fc.assert(
      fc.property(text, (t) => {
        const env = parseSubnetEnv(t);
        expect(typeof env).toBe('object');
        const prev = previousSubnetFromEnv(t);
        if (prev !== undefined) expect(isNetworkCidr(prev)).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  it('readSubnetEnv returns the text or throws FLANNEL_ERR_SUBNET_ENV, nothing else', async () => {
    await fc.assert(
      fc.asyncProperty(text, async (t) => {
        const fs = { readFile: async () => t } as unknown as SubnetEnvFs;
        try {
          expect(await readSubnetEnv('/run/flannel/subnet.env', fs)).toBe(t);
        } catch (err) {
          expect(err).toBeInstanceOf(FlannelError);
          expect((err as FlannelError).code).toBe('FLANNEL_ERR_SUBNET_ENV');
        }
      }),
      { numRuns: 500 },
    );
  });
});

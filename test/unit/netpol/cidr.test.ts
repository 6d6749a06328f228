// CIDR arithmetic for ipBlock.except (src/netpol/cidr.ts): the CIDRs that remain of a block, both families,
// checked against hand-worked tables and, by property, address by address.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { canonicalCidr, formatNet, netHas, parseNet, subtract } from '../../../src/netpol/cidr.js';
import { formatIp4 } from '../../../src/basics/ip4.js';

const sub = (cidr: string, except: string[]) =>
  subtract(
    parseNet(cidr)!,
    except.map((e) => parseNet(e)!),
  ).map(formatNet);

describe('canonicalCidr', () => {
  it.each([
    ['10.1.2.3/8', { cidr: '10.0.0.0/8', v6: false }],
    ['0.0.0.0/0', { cidr: '0.0.0.0/0', v6: false }],
    ['2001:DB8::1/32', { cidr: '2001:db8::/32', v6: true }],
    ['::/0', { cidr: '::/0', v6: true }],
    ['10.0.0.0/33', undefined],
    ['10.0.0.0', undefined],
    ['fe80::1%eth0/64', undefined],
  ])('%s', (text, expected) => {
    expect(canonicalCidr(text)).toEqual(expected);
  });
});

describe('subtract', () => {
  it.each([
    ['nothing to take', '10.0.0.0/8', [], ['10.0.0.0/8']],
    [
      'the docs example: 172.17.0.0/16 except 172.17.1.0/24',
      '172.17.0.0/16',
      ['172.17.1.0/24'],
      ['172.17.0.0/24', '172.17.2.0/23', '172.17.4.0/22', '172.17.8.0/21', '172.17.16.0/20', '172.17.32.0/19', '172.17.64.0/18', '172.17.128.0/17'],
    ],
    ['one address out of a /30', '10.0.0.0/30', ['10.0.0.1/32'], ['10.0.0.0/32', '10.0.0.2/31']],
    ['two excepts', '10.0.0.0/29', ['10.0.0.0/31', '10.0.0.6/32'], ['10.0.0.2/31', '10.0.0.4/31', '10.0.0.7/32']],
    ['nested excepts', '10.0.0.0/24', ['10.0.0.0/25', '10.0.0.0/26'], ['10.0.0.128/25']],
    ['an except covering everything', '10.0.0.0/24', ['10.0.0.0/23'], []],
    ['an except elsewhere', '10.0.0.0/24', ['10.0.1.0/24'], ['10.0.0.0/24']],
    ['an except of the other family is ignored', '10.0.0.0/24', ['::/0'], ['10.0.0.0/24']],
    [
      'all of IPv4 but one address',
      '0.0.0.0/0',
      ['255.255.255.255/32'],
      Array.from({ length: 32 }, (_, i) => `${formatIp4(i === 0 ? 0 : (0xffffffff << (32 - i)) >>> 0)}/${i + 1}`),
    ],
    ['IPv6', '2001:db8::/32', ['2001:db8::/34'], ['2001:db8:4000::/34', '2001:db8:8000::/33']],
    ['all of IPv6 but ::1', '::/0', ['::1/128'], null],
  ])('%s', (_what, cidr, except, expected) => {
    const got = sub(cidr, except);
    if (expected !== null) expect(got).toEqual(expected);
    else expect(got).toHaveLength(128);
  });

  it('an address is in the result exactly when it is in the block and in no except (IPv4, by property)', () => {
    const octet = fc.integer({ min: 0, max: 255 });
    const cidr = fc.tuple(octet, octet, fc.integer({ min: 16, max: 30 })).map(([a, b, p]) => `10.${a}.${b}.0/${p}`);
    fc.assert(
      fc.property(cidr, fc.array(cidr, { maxLength: 4 }), fc.array(fc.tuple(octet, octet), { minLength: 20, maxLength: 20 }), (block, except, probes) => {
        const base = parseNet(block)!;
        const nets = except.map((e) => parseNet(e)!);
        const rest = subtract(base, nets);
        for (const [c, d] of [...probes, [0, 0]] as const) {
          const ip = `10.${formatIp4(Number(base.ip) >>> 0).split('.')[1]}.${c}.${d}`;
          const expected = netHas(base, ip) && !nets.some((n) => netHas(n, ip));
          expect(rest.some((n) => netHas(n, ip))).toBe(expected);
        }
        // The result is disjoint.
        for (const [i, a] of rest.entries()) for (const b of rest.slice(i + 1)) expect(netHas(a, formatIp4(Number(b.ip))) || netHas(b, formatIp4(Number(a.ip)))).toBe(false);
      }),
      { numRuns: 300 },
    );
  });
});

import { describe, it, expect } from '@jest/globals';
import fc from 'fast-check';
import { isIPv4 } from 'node:net';
import {
  cidrContains,
  contains,
  formatIp4,
  hostAddresses,
  isApipa,
  isIp4,
  isNetworkCidr,
  isUnicast,
  normalizeCidr,
  nthAddress,
  octets,
  overlaps,
  parseCidr,
  parseIp4,
} from '../../../src/basics/ip4.js';

describe('ip4 parse/format', () => {
  it.each([
    ['10.244.3.1', 0x0af40301],
    ['0.0.0.0', 0],
    ['255.255.255.255', 0xffffffff],
    ['192.168.0.10', 0xc0a8000a],
  ])('parses %s', (text, n) => {
    expect(parseIp4(text)).toBe(n);
    expect(formatIp4(n)).toBe(text);
  });

  it.each(['010.1.1.1', '1.1.1.01', '256.1.1.1', '1.1.1', '1.1.1.1.1', ' 1.1.1.1', '1.1.1.1 ', '', 'a.b.c.d', '::1', '1.1.1.-1'])('rejects %j', (text) => {
    expect(isIp4(text)).toBe(false);
    expect(parseIp4(text)).toBeUndefined();
  });

  it.each([
    ['10.244.0.0/16', { ip: 0x0af40000, prefix: 16 }],
    ['0.0.0.0/0', { ip: 0, prefix: 0 }],
    ['10.1.2.3/32', { ip: 0x0a010203, prefix: 32 }],
  ])('parses CIDR %s', (text, net) => {
    expect(parseCidr(text)).toEqual(net);
  });

  it.each(['10.0.0.0', '10.0.0.0/33', '10.0.0.0/08', '10.0.0.0/', '10.0.0.0/1/2', '10.0.0.0/-1', '010.0.0.0/8', '10.0.0.0/ 8'])('rejects CIDR %j', (text) =>
    expect(parseCidr(text)).toBeUndefined(),
  );

  it.each([
    ['10.0.0.11', [10, 0, 0, 11]],
    [0xc0a8000a, [192, 168, 0, 10]],
    ['255.255.255.255', [255, 255, 255, 255]],
    [0, [0, 0, 0, 0]],
    ['10.0.0.256', undefined],
    ['10.0.0', undefined],
  ])('octets of %j', (ip, want) => {
    expect(octets(ip)).toEqual(want);
  });

  it('normalizes and checks network form', () => {
    expect(normalizeCidr('10.244.3.7/24')).toBe('10.244.3.0/24');
    expect(isNetworkCidr('10.244.3.0/24')).toBe(true);
    expect(isNetworkCidr('10.244.3.7/24')).toBe(false);
    expect(normalizeCidr('nope')).toBeUndefined();
  });
});

describe('ip4 containment', () => {
  it.each([
    ['10.244.0.0/16', '10.244.3.1', true],
    ['10.244.0.0/16', '10.245.0.0', false],
    ['0.0.0.0/0', '1.2.3.4', true],
    ['10.1.2.3/32', '10.1.2.3', true],
    ['10.1.2.3/32', '10.1.2.4', false],
    ['bad', '10.1.2.3', false],
  ])('contains(%s, %s) = %s', (c, ip, want) => expect(contains(c, ip)).toBe(want));

  it.each([
    ['10.244.0.0/16', '10.244.3.0/24', true],
    ['10.244.0.0/16', '10.244.0.0/16', true],
    ['10.244.0.0/16', '10.0.0.0/8', false],
    ['10.244.0.0/16', '0.0.0.0/0', false],
    ['10.244.0.0/16', '10.245.0.0/24', false],
  ])('cidrContains(%s, %s) = %s', (o, i, want) => expect(cidrContains(o, i)).toBe(want));

  it.each([
    ['10.244.3.0/24', '10.244.3.0/24', true],
    ['10.244.3.0/24', '10.244.0.0/16', true],
    ['10.244.0.0/16', '10.244.3.128/25', true],
    ['10.244.3.0/24', '10.244.4.0/24', false],
    ['0.0.0.0/0', '10.244.4.0/24', true],
  ])('overlaps(%s, %s) = %s', (a, b, want) => {
    expect(overlaps(a, b)).toBe(want);
    expect(overlaps(b, a)).toBe(want);
  });
});

describe('ip4 classes', () => {
  it.each([
    ['192.168.1.10', true],
    ['10.0.0.2', true],
    ['0.0.0.0', false],
    ['0.1.2.3', false],
    ['127.0.0.1', false],
    ['224.0.0.1', false],
    ['239.255.255.255', false],
    ['240.0.0.1', false],
    ['255.255.255.255', false],
    ['169.254.1.1', true],
    ['nope', false],
  ])('isUnicast(%s) = %s', (ip, want) => expect(isUnicast(ip)).toBe(want));

  it.each([
    ['169.254.10.20', true],
    ['169.253.10.20', false],
    ['10.0.0.1', false],
  ])('isApipa(%s) = %s', (ip, want) => expect(isApipa(ip)).toBe(want));

  it('nth address', () => {
    expect(nthAddress('10.244.3.0/24', 0)).toBe('10.244.3.0');
    expect(nthAddress('10.244.3.0/24', 1)).toBe('10.244.3.1');
    expect(nthAddress('10.244.3.0/24', 2)).toBe('10.244.3.2');
    expect(nthAddress('10.244.3.9/24', 1)).toBe('10.244.3.1');
    expect(nthAddress('10.244.3.0/24', 255)).toBe('10.244.3.255');
    expect(() => nthAddress('10.244.3.0/24', 256)).toThrow(RangeError);
    expect(() => nthAddress('bad', 1)).toThrow(RangeError);
  });

  it('host addresses', () => {
    const h = hostAddresses('10.244.3.0/24');
    expect(h).toHaveLength(254);
    expect(h[0]).toBe('10.244.3.1');
    expect(h[253]).toBe('10.244.3.254');
    expect(hostAddresses('10.244.3.4/30')).toEqual(['10.244.3.5', '10.244.3.6']);
    expect(hostAddresses('10.244.3.4/31')).toEqual(['10.244.3.4', '10.244.3.5']);
    expect(hostAddresses('10.244.3.4/32')).toEqual(['10.244.3.4']);
    expect(() => hostAddresses('10.0.0.0/8')).toThrow(RangeError);
    expect(() => hostAddresses('bad')).toThrow(RangeError);
  });
});

describe('ip4 parse against its definition', () => {
  // The definition the scanners implement: node:net's isIPv4 less octets with a leading zero; a CIDR is
  // such an address, one slash, and a prefix 0..32 without a leading zero.
  const isIp4Oracle = (t: string) => isIPv4(t) && !/(^|\.)0\d/.test(t);
  const cidrOracle = (t: string) => {
    const [a, p, ...rest] = t.split('/');
    return rest.length === 0 && p !== undefined && isIp4Oracle(a) && /^(0|[1-9]\d?)$/.test(p) && Number(p) <= 32;
  };
  const text = fc.oneof(
    fc.string({ unit: fc.constantFrom('0', '1', '2', '5', '9', '.', '/', ' ', 'a', ':', '-'), maxLength: 20 }),
    fc
      .tuple(fc.array(fc.oneof(fc.nat(300), fc.constantFrom('00', '01', '007')), { minLength: 3, maxLength: 5 }), fc.option(fc.oneof(fc.nat(40), fc.constantFrom('00', '08', ''))))
      .map(([o, p]) => o.join('.') + (p === null ? '' : `/${p}`)),
  );

  it('parseIp4 and parseCidr accept exactly what the definition accepts', () => {
    fc.assert(
      fc.property(text, (t) => {
        expect(parseIp4(t) !== undefined).toBe(isIp4Oracle(t));
        expect(parseCidr(t) !== undefined).toBe(cidrOracle(t));
        if (isIp4Oracle(t)) expect(formatIp4(parseIp4(t)!)).toBe(t);
      }),
      { numRuns: 5000 },
    );
  });
});

// src/basics/ip6.ts against what Go's net package prints and decides (net.IP.String, net.ParseCIDR, IsGlobalUnicast).
import { describe, expect, it } from '@jest/globals';
import { encodeSubnetEnv } from '../../../src/subnet/subnet-env.js';
import { cidrContains6, contains6, formatIp6, isGlobalUnicast6, isLinkLocal6, normalizeCidr6, nthAddress6, overlaps6, parseCidr6, parseIp6 } from '../../../src/basics/ip6.js';

describe('ip6', () => {
  it.each([
    ['2001:cafe:42::', '2001:cafe:42::'],
    ['2001:CAFE:0042:0000:0000:0000:0000:0001', '2001:cafe:42::1'],
    ['fc00:0:0:1::', 'fc00:0:0:1::'],
    ['::', '::'],
    ['::1', '::1'],
    ['1:0:0:1:0:0:0:1', '1:0:0:1::1'],
    ['1:0:1:0:1:0:1:0', '1:0:1:0:1:0:1:0'],
  ])('%s prints as %s', (text, want) => {
    expect(formatIp6(parseIp6(text)!)).toBe(want);
  });

  it.each(['', '10.0.0.1', 'fe80::1%eth0', '[::1]', '1::2::3', 'g::1', '1:2:3:4:5:6:7:8:9'])('%j is not an IPv6 address', (text) => {
    expect(parseIp6(text)).toBeUndefined();
  });

  it('CIDRs', () => {
    expect(normalizeCidr6('2001:cafe:42::5/56')).toBe('2001:cafe:42::/56');
    for (const bad of ['2001::/129', '2001::/064', '2001::', '10.0.0.0/8', '2001::/1/2']) expect(parseCidr6(bad)).toBeUndefined();
    expect(contains6('2001:cafe:42::/56', '2001:cafe:42:ff::1')).toBe(true);
    expect(contains6('2001:cafe:42::/56', '2001:cafe:43::1')).toBe(false);
    expect(cidrContains6('2001:cafe:42::/56', '2001:cafe:42:3::/64')).toBe(true);
    expect(cidrContains6('2001:cafe:42:3::/64', '2001:cafe:42::/56')).toBe(false);
    expect(overlaps6('2001:cafe:42:3::/64', '2001:cafe:42::/56')).toBe(true);
    expect(overlaps6('2001:cafe:42:3::/64', '2001:cafe:42:4::/64')).toBe(false);
    expect(nthAddress6('2001:cafe:42:3::/64', 2)).toBe('2001:cafe:42:3::2');
    expect(() => nthAddress6('2001:cafe:42:3::/127', 2)).toThrow(RangeError);
  });

  it.each([
    ['2001:db8::1', true],
    ['fd00::1', true],
    ['fe80::1', false],
    ['febf::1', false],
    ['::1', false],
    ['::', false],
    ['ff02::1', false],
    ['::ffff:10.0.0.1', false],
  ])('%s global unicast: %s', (ip, want) => {
    expect(isGlobalUnicast6(ip)).toBe(want);
    if (ip.startsWith('fe')) expect(isLinkLocal6(ip)).toBe(true);
  });
});

describe('subnet.env with IPv6 (flannel pkg/subnet/subnet.go WriteSubnetFile)', () => {
  it('writes FLANNEL_IPV6_NETWORK and FLANNEL_IPV6_SUBNET (subnet IP + 1) after the IPv4 pair', () => {
    const text = encodeSubnetEnv({ network: '10.42.0.0/16', subnet: '10.42.3.0/24', mtu: 1500, ipMasq: true, ipv6Network: '2001:cafe:42::/56', ipv6Subnet: '2001:cafe:42::/64' });
    expect(text).toBe(
      'FLANNEL_NETWORK=10.42.0.0/16\nFLANNEL_SUBNET=10.42.3.1/24\nFLANNEL_IPV6_NETWORK=2001:cafe:42::/56\nFLANNEL_IPV6_SUBNET=2001:cafe:42::1/64\nFLANNEL_MTU=1500\nFLANNEL_IPMASQ=true\n',
    );
  });
});

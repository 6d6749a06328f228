// The etcd lease value and key of a dual-stack lease, as upstream writes them (flannel pkg/lease/lease.go
// LeaseAttrs: PublicIPv6 *ip.IP6, BackendV6Data omitempty; pkg/subnet/subnet.go MakeSubnetKey).
import { describe, expect, it } from '@jest/globals';
import { decodeLeaseAttrs, encodeLeaseAttrs } from '../../../../src/subnet/etcd/lease-json.js';
import { makeSubnetKey, parseSubnetKey } from '../../../../src/subnet/etcd/subnet-key.js';

describe('etcd lease JSON with PublicIPv6', () => {
  it('writes PublicIPv6 as text for a dual-stack host-gw lease, null otherwise (IPv4 bytes unchanged)', () => {
    expect(encodeLeaseAttrs({ publicIP: '192.168.64.3', backendType: 'host-gw', backendData: null, publicIPv6: 'FD00:0:0:0::3' })).toBe(
      '{"PublicIP":"192.168.64.3","PublicIPv6":"fd00::3","BackendType":"host-gw"}',
    );
    expect(encodeLeaseAttrs({ publicIP: '192.168.64.3', backendType: 'host-gw', backendData: null })).toBe('{"PublicIP":"192.168.64.3","PublicIPv6":null,"BackendType":"host-gw"}');
  });

  it('reads a dual-stack lease value as Linux flanneld writes it', () => {
    expect(decodeLeaseAttrs('{"PublicIP":"192.168.64.3","PublicIPv6":"fd00::3","BackendType":"host-gw"}')).toEqual({
      publicIP: '192.168.64.3',
      publicIPv6: 'fd00::3',
      backendType: 'host-gw',
      backendData: null,
    });
    expect(decodeLeaseAttrs('{"PublicIP":"192.168.64.3","PublicIPv6":null,"BackendType":"host-gw"}')).not.toHaveProperty('publicIPv6');
  });

  // Upstream's ip.IP6 UnmarshalJSON fails the whole value on a bad PublicIPv6, so the peer loses its IPv4
  // route too; docs/compatibility.md (Dual-stack) promises that a bad IPv6 half is rejected alone: the
  // value is read, and the peer validator (src/peers/validate.ts) names the IPv6 half's fault.
  it.each<[string, string]>([
    ['"10.0.0.1"', '10.0.0.1'],
    ['"fe80::1%eth0"', 'fe80::1%eth0'],
    ['"fd00::3%3"', 'fd00::3%3'],
    ['42', '(a number)'],
    ['{"a":1}', '(an object)'],
    [JSON.stringify('f'.repeat(100)), '(100 characters)'],
  ])('a PublicIPv6 of %s that is no IPv6 address keeps the value, the IPv4 half with it', (v6, kept) => {
    expect(decodeLeaseAttrs(`{"PublicIP":"192.168.64.3","PublicIPv6":${v6},"BackendType":"host-gw"}`)).toEqual({
      publicIP: '192.168.64.3',
      publicIPv6: kept,
      backendType: 'host-gw',
      backendData: null,
    });
  });

  it('a dual-stack subnet key, both ways', () => {
    expect(makeSubnetKey('10.5.52.0/24', 'fd00:12:13::/56')).toBe('10.5.52.0-24&fd00:12:13::-56');
    expect(makeSubnetKey('10.5.52.0/24')).toBe('10.5.52.0-24');
    expect(parseSubnetKey('10.5.52.0-24&fd00:12:13::-56')).toEqual({ subnet: '10.5.52.0/24', ipv6Subnet: 'fd00:12:13::/56' });
  });
});

import { describe, it, expect } from '@jest/globals';
import { FlannelError, HostError } from '../../../src/basics/errors.js';
import { expectCode } from '../../support/errors.js';
import type { HostInterface } from '../../../src/host/host.js';
import { findInterfaceByIP, selectExternalInterface } from '../../../src/host/select.js';

const ifaces: HostInterface[] = [
  { name: 'Ethernet', index: 4, ipv4: '10.0.0.2', prefixLength: 24, mtu: 1500 },
  { name: 'vEthernet (nat)', index: 12, ipv4: '172.20.0.1', prefixLength: 20, mtu: 1500 },
  { name: 'Ethernet 2', index: 7, ipv4: '169.254.10.3', prefixLength: 16, mtu: 1500 },
  { name: 'Storage NIC', index: 9, ipv4: '192.168.50.4', prefixLength: 24, mtu: 9000 },
];

describe('selectExternalInterface', () => {
  it.each<[string, number | undefined, string[], string[], string]>([
    ['default route, no flags', 4, [], [], 'Ethernet'],
    ['--iface IP', 4, ['192.168.50.4'], [], 'Storage NIC'],
    ['--iface name with spaces', 4, ['Storage NIC'], [], 'Storage NIC'],
    ['--iface name case-insensitive', 4, ['storage nic'], [], 'Storage NIC'],
    ['--iface first match wins', 4, ['nope', 'vEthernet (nat)', 'Ethernet'], [], 'vEthernet (nat)'],
    ['--iface APIPA skipped', 4, ['169.254.10.3', 'Ethernet'], [], 'Ethernet'],
    ['--iface before --iface-regex', 4, ['Ethernet'], ['^192\\.'], 'Ethernet'],
    ['--iface-regex on IPs before names', 4, [], ['^192\\.168\\.'], 'Storage NIC'],
    ['--iface-regex matches an IP before another iface name', 4, [], ['1'], 'Ethernet'],
    ['--iface-regex on names', 4, [], ['^vEthernet'], 'vEthernet (nat)'],
    ['--iface-regex never APIPA', 4, [], ['^169\\.254', 'Storage'], 'Storage NIC'],
    ['--iface unmatched then regex', 4, ['10.9.9.9'], ['nat'], 'vEthernet (nat)'],
  ])('%s', (_name, def, iface, ifaceRegex, want) => {
    expect(selectExternalInterface(ifaces, def, { iface, ifaceRegex }).name).toBe(want);
  });

  // flannel main.go: with no --iface, LookupExtIface(publicIP) picks the interface holding the public IP.
  it.each<[string, string[], string]>([
    ['--public-ip held by a NIC', ['192.168.50.4'], 'Storage NIC'],
    ['first held IP wins (a NAT overwrite is skipped)', ['203.0.113.9', '192.168.50.4'], 'Storage NIC'],
    ['no NIC holds it: the default route', ['203.0.113.9'], 'Ethernet'],
    ['an APIPA public IP is never used', ['169.254.10.3'], 'Ethernet'],
  ])('public IPs, no --iface: %s', (_name, publicIPs, want) => {
    expect(selectExternalInterface(ifaces, 4, { iface: [], ifaceRegex: [], publicIPs }).name).toBe(want);
  });

  it('--iface wins over the public IPs', () => {
    expect(selectExternalInterface(ifaces, 4, { iface: ['Ethernet'], ifaceRegex: [], publicIPs: ['192.168.50.4'] }).name).toBe('Ethernet');
  });

  it.each<[string, HostInterface[], number | undefined, string[], string[], string]>([
    ['no default route', ifaces, undefined, [], [], 'FLANNEL_ERR_HOST'],
    ['default route on APIPA', ifaces, 7, [], [], 'FLANNEL_ERR_HOST'],
    ['nothing matches --iface', ifaces, 4, ['10.9.9.9'], [], 'FLANNEL_ERR_HOST'],
    ['only APIPA matches', ifaces, 4, [], ['^169'], 'FLANNEL_ERR_HOST'],
    ['no adapters', [], 4, [], [], 'FLANNEL_ERR_HOST'],
    ['bad regex', ifaces, 4, [], ['('], 'FLANNEL_ERR_FLAG'],
  ])('%s -> %s', (_name, list, def, iface, ifaceRegex, code) => {
    let err: unknown;
    try {
      selectExternalInterface(list, def, { iface, ifaceRegex });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(FlannelError);
    expect((err as FlannelError).code).toBe(code);
  });

  it('the error lists the adapters seen and names the flag', () => {
    const err = expectCode(() => selectExternalInterface(ifaces, undefined, { iface: [], ifaceRegex: [] }), HostError, 'FLANNEL_ERR_HOST');
    expect(err.context).toEqual({ defaultRouteIndex: undefined, adapters: 'Ethernet, vEthernet (nat), Ethernet 2, Storage NIC' });
  });
});

describe('findInterfaceByIP', () => {
  it('finds by exact address', () => {
    expect(findInterfaceByIP(ifaces, '172.20.0.1')?.index).toBe(12);
    expect(findInterfaceByIP(ifaces, '172.20.0.2')).toBeUndefined();
  });
});

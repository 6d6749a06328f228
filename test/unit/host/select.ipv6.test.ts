// The external interface's IPv6 address for dual-stack (selectIPv6Address): global or unique-local
// unicast, never link-local, never a temporary (privacy) address (flannel#2081), never a deprecated one;
// --iface and --public-ipv6 (or the Node's annotations) pick one the interface holds.
import { describe, expect, it } from '@jest/globals';
import { selectExternalInterface, selectIPv6Address, selectionNeedsIPv6 } from '../../../src/host/select.js';
import type { HostInterface } from '../../../src/host/host.js';
import { HostError } from '../../../src/basics/errors.js';
import { expectCode } from '../../support/errors.js';

const eth: HostInterface = {
  name: 'Ethernet',
  index: 4,
  ipv4: '192.168.10.10',
  prefixLength: 24,
  mtu: 1500,
  ipv6Addresses: [
    { address: 'fe80::215:5dff:fe00:4', prefixLength: 64 },
    { address: '2001:db8:10::8d2c:11ab', prefixLength: 64, temporary: true },
    { address: '2001:db8:10::5', prefixLength: 64, deprecated: true },
    { address: '2001:db8:10::10', prefixLength: 64 },
    { address: 'fd00:10::10', prefixLength: 64 },
  ],
};

describe('selectIPv6Address', () => {
  it('takes the first stable global or ULA address: not link-local, temporary or deprecated', () => {
    expect(selectIPv6Address(eth)).toEqual({ address: '2001:db8:10::10', prefixLength: 64 });
    expect(selectIPv6Address({ ...eth, ipv6Addresses: [eth.ipv6Addresses![0], eth.ipv6Addresses![4]] })).toEqual({ address: 'fd00:10::10', prefixLength: 64 });
  });

  it('--iface or --public-ipv6 names one the interface holds (in any spelling)', () => {
    expect(selectIPv6Address(eth, { iface: ['FD00:10:0::10'] }).address).toBe('fd00:10::10');
    expect(selectIPv6Address(eth, { publicIPv6s: ['fd00:10::10'] }).address).toBe('fd00:10::10');
    // A public IPv6 the interface does not hold (an annotation for another NIC) falls back to the first stable one.
    expect(selectIPv6Address(eth, { publicIPv6s: ['2001:db8:99::1'] }).address).toBe('2001:db8:10::10');
  });

  it('refuses an --iface IPv6 address the interface does not hold, and an interface with no usable IPv6', () => {
    expectCode(() => selectIPv6Address(eth, { iface: ['2001:db8:99::1'] }), HostError, 'FLANNEL_ERR_HOST');
    const onlyLinkLocal = { ...eth, ipv6Addresses: [eth.ipv6Addresses![0], eth.ipv6Addresses![1]] };
    const err = expectCode(() => selectIPv6Address(onlyLinkLocal), HostError, 'FLANNEL_ERR_HOST');
    expect(err.context).toMatchObject({ reason: 'no-ipv6-address' });
    expectCode(() => selectIPv6Address({ ...eth, ipv6Addresses: undefined }), HostError, 'FLANNEL_ERR_HOST');
  });

  it('a host that lists no IPv6 addresses takes --public-ipv6 as the address (a /64); never a link-local one', () => {
    expect(selectIPv6Address({ ...eth, ipv6Addresses: undefined }, { assumed: '2001:db8:10::10' })).toEqual({ address: '2001:db8:10::10', prefixLength: 64 });
    expectCode(() => selectIPv6Address({ ...eth, ipv6Addresses: undefined }, { assumed: 'fe80::1' }), HostError, 'FLANNEL_ERR_HOST');
    expectCode(() => selectIPv6Address({ ...eth, ipv6Addresses: [] }, { assumed: '2001:db8:10::10' }), HostError, 'FLANNEL_ERR_HOST');
  });

  it('--iface with an IPv6 address picks the interface holding it', () => {
    const other: HostInterface = { name: 'Ethernet 2', index: 5, ipv4: '10.0.0.5', prefixLength: 24, mtu: 1500 };
    expect(selectExternalInterface([other, eth], 5, { iface: ['fd00:10::10'], ifaceRegex: [] }).name).toBe('Ethernet');
  });

  it('the adapters are read with their IPv6 addresses for dual-stack or an IPv6 --iface only', () => {
    expect(selectionNeedsIPv6([], false)).toBe(false);
    expect(selectionNeedsIPv6(['192.168.10.10', 'Ethernet'], false)).toBe(false);
    expect(selectionNeedsIPv6(['Ethernet', 'fd00:10::10'], false)).toBe(true);
    expect(selectionNeedsIPv6([], true)).toBe(true);
  });
});

// net-conf.json's IPv6 keys, with upstream's own examples (flannel pkg/subnet/config_test.go:
// TestIPv6ConfigDefaults, TestIPv6ConfigOverrides) and CheckNetworkConfig's IPv6 messages, plus the
// Windows family rules (checkWindowsIpFamilies).
import { describe, expect, it } from '@jest/globals';
import { checkWindowsIpFamilies, parseNetConf, windowsNetConf } from '../../../src/subnet/net-conf.js';
import { FlannelError, NetConfError, UnsupportedError } from '../../../src/basics/errors.js';
import { expectCode } from '../../support/errors.js';

const HG = { Type: 'host-gw' };
const conf = (o: Record<string, unknown>): string => JSON.stringify(o);

function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof FlannelError) return err.message;
    throw err;
  }
  throw new Error('expected an error');
}

describe('net-conf IPv6 (upstream config_test.go)', () => {
  it.each([
    // TestIPv6ConfigDefaults: `{ "enableIPv6": true, "ipv6Network": "fc00::/48", "enableIPv4": false }`.
    [
      { enableIPv6: true, ipv6Network: 'fc00::/48', enableIPv4: false },
      { ipv6Network: 'fc00::/48', ipv6SubnetLen: 64, ipv6SubnetMin: 'fc00:0:0:1::', ipv6SubnetMax: 'fc00:0:0:ffff::' },
    ],
    // TestIPv6ConfigOverrides.
    [
      { EnableIPv6: true, IPv6Network: 'fc00::/48', IPv6SubnetMin: 'fc00:0:0:1::', IPv6SubnetMax: 'fc00:0:0:f::', IPv6SubnetLen: 124, enableIPv4: false },
      { ipv6Network: 'fc00::/48', ipv6SubnetLen: 124, ipv6SubnetMin: 'fc00:0:0:1::', ipv6SubnetMax: 'fc00:0:0:f::' },
    ],
    // The dual-stack example of flannel Documentation/configuration.md, with host bits masked as Go's ParseCIDR does.
    [
      { Network: '10.42.0.0/16', EnableIPv6: true, IPv6Network: '2001:cafe:42:0::5/56' },
      { enableIPv4: true, network: '10.42.0.0/16', ipv6Network: '2001:cafe:42::/56', ipv6SubnetLen: 64, ipv6SubnetMin: '2001:cafe:42:1::', ipv6SubnetMax: '2001:cafe:42:ff::' },
    ],
    // A /120 network is split in four (+2), as IPv4's /28 is.
    [
      { Network: '10.42.0.0/16', EnableIPv6: true, IPv6Network: 'fd00::/120' },
      { ipv6SubnetLen: 122, ipv6SubnetMin: 'fd00::40', ipv6SubnetMax: 'fd00::c0' },
    ],
  ])('%j', (input, want) => {
    expect(parseNetConf(conf({ ...input, Backend: HG }))).toMatchObject(want);
  });

  it('leaves the IPv6 range out when IPv6 is off (the v4-only result is unchanged)', () => {
    const nc = parseNetConf(conf({ Network: '10.42.0.0/16', IPv6Network: 'fd00::/48', Backend: HG }));
    expect(nc).not.toHaveProperty('ipv6SubnetMin');
    expect(nc).not.toHaveProperty('ipv6SubnetMax');
    expect(nc).toMatchObject({ enableIPv6: false, ipv6Network: '', ipv6SubnetLen: 0 });
  });

  it.each([
    [{ IPv6Network: 'fc00::/48', IPv6SubnetMin: 'fc01::' }, 'IPv6SubnetMin is not in the range of the IPv6Network'],
    [{ IPv6Network: 'fc00::/48', IPv6SubnetMax: 'fc01::' }, 'IPv6SubnetMax is not in the range of the IPv6Network'],
    [{ IPv6Network: 'fc00::/48', IPv6SubnetMin: 'fc00:0:0:1::1' }, 'IPv6SubnetMin is not on a SubnetLen boundary: fc00:0:0:1::1'],
    [{ IPv6Network: 'fc00::/48', IPv6SubnetMax: 'fc00:0:0:f:8000::' }, 'IPv6SubnetMax is not on a SubnetLen boundary: fc00:0:0:f:8000::'],
    [{ IPv6Network: 'fc00::/48', IPv6SubnetLen: 49 }, 'network must be able to accommodate at least four subnets'],
    [{ IPv6Network: 'fc00::/48', IPv6SubnetLen: 127 }, 'SubnetLen must be less than /127'],
    [{ IPv6Network: 'fc00::/125' }, 'IPv6Network is too small. Minimum useful network prefix is /124'],
    [{ IPv6Network: '10.0.0.0/8' }, 'please define a correct IPv6Network parameter in the flannel config'],
    [{}, 'please define a correct IPv6Network parameter in the flannel config'],
  ])('%j -> %s', (input, message) => {
    expect(messageOf(() => parseNetConf(conf({ Network: '10.42.0.0/16', EnableIPv6: true, ...input, Backend: HG })))).toBe(message);
  });

  it('an IPv6SubnetMin that is not an address names its key', () => {
    const err = expectCode(
      () => parseNetConf(conf({ Network: '10.42.0.0/16', EnableIPv6: true, IPv6Network: 'fc00::/48', IPv6SubnetMin: '10.0.0.1', Backend: HG })),
      NetConfError,
      'FLANNEL_ERR_NET_CONF',
    );
    expect(err.context).toEqual({ key: 'IPv6SubnetMin' });
  });
});

describe('checkWindowsIpFamilies', () => {
  it('takes IPv4-only and dual-stack host-gw', () => {
    expect(() => checkWindowsIpFamilies(parseNetConf(conf({ Network: '10.42.0.0/16', Backend: HG })))).not.toThrow();
    expect(() => checkWindowsIpFamilies(parseNetConf(conf({ Network: '10.42.0.0/16', Backend: { Type: 'vxlan' } })))).not.toThrow();
    expect(() => checkWindowsIpFamilies(parseNetConf(conf({ Network: '10.42.0.0/16', EnableIPv6: true, IPv6Network: 'fc00::/48', Backend: HG })))).not.toThrow();
  });

  it.each([
    ['ipv6-only', { EnableIPv4: false, EnableIPv6: true, IPv6Network: 'fc00::/48', Backend: HG }],
    ['vxlan-ipv6', { Network: '10.42.0.0/16', EnableIPv6: true, IPv6Network: 'fc00::/48', Backend: { Type: 'vxlan' } }],
  ])('refuses %s', (reason, input) => {
    const err = expectCode(() => checkWindowsIpFamilies(parseNetConf(conf(input)), { path: 'net-conf.json' }), UnsupportedError, 'FLANNEL_ERR_UNSUPPORTED');
    expect(err.context).toEqual({ path: 'net-conf.json', reason });
  });
});

describe('windowsNetConf (--ipv4-only)', () => {
  const dualVxlan = parseNetConf(conf({ Network: '10.42.0.0/16', EnableIPv6: true, IPv6Network: 'fc00::/48', Backend: { Type: 'vxlan' } }));

  it("runs a dual-stack net-conf's IPv4 half only when asked, as an IPv4-only net-conf would parse", () => {
    const v4 = parseNetConf(conf({ Network: '10.42.0.0/16', Backend: { Type: 'vxlan' } }));
    expect(windowsNetConf(dualVxlan, true)).toEqual(v4);
    expect(dualVxlan.enableIPv6).toBe(true); // the cluster's config is left as it was
  });

  it('changes nothing without the flag or on an IPv4-only net-conf, and still refuses what it cannot run', () => {
    const dualHostGw = parseNetConf(conf({ Network: '10.42.0.0/16', EnableIPv6: true, IPv6Network: 'fc00::/48', Backend: HG }));
    expect(windowsNetConf(dualHostGw, false)).toBe(dualHostGw);
    const v4 = parseNetConf(conf({ Network: '10.42.0.0/16', Backend: HG }));
    expect(windowsNetConf(v4, true)).toBe(v4);
    expect(expectCode(() => windowsNetConf(dualVxlan, false, { path: 'p' }), UnsupportedError, 'FLANNEL_ERR_UNSUPPORTED').context).toEqual({ path: 'p', reason: 'vxlan-ipv6' });
    const v6only = parseNetConf(conf({ EnableIPv4: false, EnableIPv6: true, IPv6Network: 'fc00::/48', Backend: HG }));
    expect(expectCode(() => windowsNetConf(v6only, true), UnsupportedError, 'FLANNEL_ERR_UNSUPPORTED').context).toMatchObject({ reason: 'ipv6-only' });
  });
});

import { describe, it, expect } from '@jest/globals';
import type { Lease } from '../../../src/subnet/lease.js';
import { isValidVtepMac } from '../../../src/basics/mac.js';
import { validateLease } from '../../../src/peers/validate.js';
import type { LeaseValidationContext } from '../../../src/peers/validate.js';

const vx: LeaseValidationContext = { network: '10.244.0.0/16', subnetLen: 24, ownSubnet: '10.244.1.0/24', backendType: 'vxlan' };
const hg: LeaseValidationContext = { ...vx, backendType: 'host-gw' };

function lease(over: Partial<Lease> = {}): Lease {
  return {
    key: 'node-b',
    subnet: '10.244.3.0/24',
    publicIP: '192.168.1.12',
    backendType: 'vxlan',
    backendData: { VNI: 4096, VtepMAC: '00:15:5d:b3:ac:db' },
    ...over,
  };
}

describe('validateLease', () => {
  const cases: [string, Lease, LeaseValidationContext, string | undefined][] = [
    ['valid vxlan peer', lease(), vx, undefined],
    ['valid vxlan peer, upper-case MAC', lease({ backendData: { VNI: 4097, VtepMAC: '0E:2A:0A:F4:03:01' } }), vx, undefined],
    ['valid host-gw peer', lease({ backendType: 'host-gw', backendData: null }), hg, undefined],
    ['node claiming 0.0.0.0/0', lease({ subnet: '0.0.0.0/0' }), vx, 'subnet-outside-network'],
    ['subnet outside network', lease({ subnet: '10.245.3.0/24' }), vx, 'subnet-outside-network'],
    ['subnet equal to the whole network', lease({ subnet: '10.244.0.0/16' }), vx, 'subnet-length'],
    ['malformed subnet', lease({ subnet: '10.244.3.0' }), vx, 'subnet-invalid'],
    ['subnet with host bits', lease({ subnet: '10.244.3.7/24' }), vx, 'subnet-not-network-address'],
    ['wrong subnet length', lease({ subnet: '10.244.3.0/25' }), vx, 'subnet-length'],
    ['equal to the own subnet', lease({ subnet: '10.244.1.0/24' }), vx, 'subnet-equals-own'],
    ['IPv6-only podCIDR', lease({ subnet: 'fd00:1::/64' }), vx, 'subnet-ipv6-only'],
    ['podCIDR that is not a CIDR', lease({ subnet: 'banana' }), vx, 'subnet-invalid'],
    ['overlapping own (own is larger)', lease({ subnet: '10.244.1.0/25' }), { ...vx, subnetLen: 25, ownSubnet: '10.244.1.0/24' }, 'subnet-overlaps-own'],
    ['public IP inside the cluster network', lease({ publicIP: '10.244.9.9' }), vx, 'public-ip-inside-network'],
    ['loopback public IP', lease({ publicIP: '127.0.0.1' }), vx, 'public-ip-not-unicast'],
    ['0.0.0.0 public IP', lease({ publicIP: '0.0.0.0' }), vx, 'public-ip-not-unicast'],
    ['multicast public IP', lease({ publicIP: '224.0.0.5' }), vx, 'public-ip-not-unicast'],
    ['broadcast public IP', lease({ publicIP: '255.255.255.255' }), vx, 'public-ip-not-unicast'],
    ['empty public IP', lease({ publicIP: '' }), vx, 'public-ip-invalid'],
    ['IPv6 public IP', lease({ publicIP: 'fd00::1' }), vx, 'public-ip-invalid'],
    ['host-gw peer in a vxlan cluster', lease({ backendType: 'host-gw', backendData: null }), vx, 'backend-type-mismatch'],
    ['case differs (Linux compares case-sensitively)', lease({ backendType: 'VXLAN' }), vx, 'backend-type-mismatch'],
    [
      'vxlan peer on another network in a host-gw cluster (the mismatch, not off link)',
      lease({ publicIP: '192.168.2.12' }),
      { ...hg, nodeNetwork: '192.168.1.10/24' },
      'backend-type-mismatch',
    ],
    ['Linux peer left at VNI 1', lease({ backendData: { VNI: 1, VtepMAC: '00:15:5d:b3:ac:db' } }), vx, 'vni-too-low'],
    ['VNI as a string', lease({ backendData: { VNI: '4096', VtepMAC: '00:15:5d:b3:ac:db' } }), vx, 'vni-invalid'],
    ['VNI fractional', lease({ backendData: { VNI: 4096.5, VtepMAC: '00:15:5d:b3:ac:db' } }), vx, 'vni-invalid'],
    ['VNI above 24 bits', lease({ backendData: { VNI: 0x1000000, VtepMAC: '00:15:5d:b3:ac:db' } }), vx, 'vni-invalid'],
    ['VNI differs from ours', lease({ backendData: { VNI: 4097, VtepMAC: '00:15:5d:b3:ac:db' } }), { ...vx, vni: 4096 }, 'vni-mismatch'],
    ['VNI equal to ours', lease(), { ...vx, vni: 4096 }, undefined],
    ['host-gw ignores the VNI', lease({ backendType: 'host-gw', backendData: null }), { ...hg, vni: 4096 }, undefined],
    ['link-local public IP', lease({ publicIP: '169.254.3.4' }), vx, 'public-ip-link-local'],
    ['our own public IP', lease({ publicIP: '192.168.1.12' }), { ...vx, ownIPs: ['192.168.1.10', '192.168.1.12'] }, 'public-ip-own'],
    ['empty VtepMAC', lease({ backendData: { VNI: 4096, VtepMAC: '' } }), vx, 'vtep-mac-invalid'],
    ['missing VtepMAC', lease({ backendData: { VNI: 4096 } }), vx, 'vtep-mac-invalid'],
    ['multicast VtepMAC', lease({ backendData: { VNI: 4096, VtepMAC: '01:00:5e:00:00:01' } }), vx, 'vtep-mac-invalid'],
    ['broadcast VtepMAC', lease({ backendData: { VNI: 4096, VtepMAC: 'ff:ff:ff:ff:ff:ff' } }), vx, 'vtep-mac-invalid'],
    ['all-zero VtepMAC', lease({ backendData: { VNI: 4096, VtepMAC: '00:00:00:00:00:00' } }), vx, 'vtep-mac-invalid'],
    ['dash-separated VtepMAC', lease({ backendData: { VNI: 4096, VtepMAC: '00-15-5d-b3-ac-db' } }), vx, 'vtep-mac-invalid'],
    ['backend-data undefined', lease({ backendData: undefined }), vx, 'backend-data-invalid'],
    ['backend-data null', lease({ backendData: null }), vx, 'backend-data-invalid'],
    ['backend-data a string', lease({ backendData: '{"VNI":4096}' }), vx, 'backend-data-invalid'],
    ['backend-data an array', lease({ backendData: [4096] }), vx, 'backend-data-invalid'],
    // host-gw: the peer's public IP is the next hop of its route, so it must be a host on the node's network.
    ['host-gw peer on the node network', lease({ backendType: 'host-gw', backendData: null }), { ...hg, nodeNetwork: '192.168.1.10/24' }, undefined],
    ['host-gw peer off link', lease({ backendType: 'host-gw', backendData: null, publicIP: '192.168.2.12' }), { ...hg, nodeNetwork: '192.168.1.10/24' }, 'public-ip-off-link'],
    [
      'host-gw peer at the broadcast address',
      lease({ backendType: 'host-gw', backendData: null, publicIP: '192.168.1.255' }),
      { ...hg, nodeNetwork: '192.168.1.10/24' },
      'public-ip-broadcast',
    ],
    [
      'host-gw peer at .255 of a /16 (a host)',
      lease({ backendType: 'host-gw', backendData: null, publicIP: '192.168.1.255' }),
      { ...hg, nodeNetwork: '192.168.1.10/16' },
      undefined,
    ],
    [
      'host-gw peer at the broadcast of a /16',
      lease({ backendType: 'host-gw', backendData: null, publicIP: '192.168.255.255' }),
      { ...hg, nodeNetwork: '192.168.1.10/16' },
      'public-ip-broadcast',
    ],
    [
      'host-gw /31 link: both addresses are hosts (RFC 3021)',
      lease({ backendType: 'host-gw', backendData: null, publicIP: '192.168.1.11' }),
      { ...hg, nodeNetwork: '192.168.1.10/31' },
      undefined,
    ],
    ['vxlan peer off link is fine (encapsulated)', lease({ publicIP: '192.168.2.12' }), { ...vx, nodeNetwork: '192.168.1.10/24' }, undefined],
  ];

  it.each(cases)('%s', (_name, l, ctx, reason) => {
    const r = validateLease(l, ctx);
    if (reason === undefined) {
      expect(r).toEqual({ ok: true });
    } else {
      expect(r.ok).toBe(false);
      if (!r.ok) {
        expect(r.reason).toBe(reason);
        expect(r.message.length).toBeGreaterThan(0);
      }
    }
  });

  it('tells the admin to set VNI 4096 for a VNI 1 peer', () => {
    const r = validateLease(lease({ backendData: { VNI: 1, VtepMAC: '00:15:5d:b3:ac:db' } }), vx);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toMatch(/VNI"?:? ?4096/);
  });

  it('a peer at another VNI is told to use the same VNI as this node', () => {
    const r = validateLease(lease({ backendData: { VNI: 4097, VtepMAC: '00:15:5d:b3:ac:db' } }), { ...vx, vni: 4096 });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toMatch(/4097.*4096.*same "VNI"/);
  });

  it('works without an own subnet', () => {
    expect(validateLease(lease({ subnet: '10.244.1.0/24' }), { ...vx, ownSubnet: undefined })).toEqual({ ok: true });
  });
});

describe('isValidVtepMac', () => {
  it.each([
    ['00:15:5d:b3:ac:db', true],
    ['0e:2a:0a:f4:03:01', true],
    ['02:00:00:00:00:00', true],
    ['03:00:00:00:00:00', false],
    ['00:15:5d:b3:ac', false],
    ['00:15:5d:b3:ac:db:01', false],
    ['0:15:5d:b3:ac:db', false],
    [42, false],
  ])('%j -> %s', (mac, want) => expect(isValidVtepMac(mac)).toBe(want));
});

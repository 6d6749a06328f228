// The physical adapter a new L2Bridge/Overlay network is built on, when the agent's interface is the
// vSwitch's host vNIC (hcsshim: NetworkAdapterName must name a physical adapter).
import { describe, expect, it } from '@jest/globals';
import { FlannelError, HostError } from '../../../src/basics/errors.js';
import type { HnsNetworkV1 } from '../../../src/hns/schema.js';
import type { Host, HostInterface } from '../../../src/host/host.js';
import { isHostVNic, knownPhysicalAdapter, resolvePhysicalAdapter } from '../../../src/host/physical-adapter.js';
import { nodePublicIPsOf } from '../../../src/subnet/kube/node-public-ip.js';
import { FakeClock } from '../../support/fake-clock.js';

const vnic: HostInterface = { name: 'vEthernet (Ethernet)', index: 9, ipv4: '10.0.0.7', prefixLength: 24, mtu: 1500 };
const overlay = (adapter: string | undefined, mgmt: string): HnsNetworkV1 => ({
  Name: 'flannel.4096',
  Type: 'Overlay',
  ManagementIP: mgmt,
  ...(adapter ? { NetworkAdapterName: adapter } : {}),
});

/** A clock whose sleeps return at once but advance its time. */
const fakeClock = () => new FakeClock({ instant: true, start: 0 });

function host(listings: HostInterface[][]): Host & { calls: number } {
  const h = {
    calls: 0,
    async interfaces() {
      return listings[Math.min(h.calls++, listings.length - 1)];
    },
    defaultRouteInterfaceIndex: async () => undefined,
    setForwarding: async () => undefined,
    getForwarding: async () => false,
    macAddress: async () => undefined,
  };
  return h;
}

describe('the physical adapter behind the external interface', () => {
  it.each<[string, HostInterface, HnsNetworkV1[], string | undefined]>([
    ['a physical interface is its own adapter', { ...vnic, name: 'Ethernet 2' }, [], 'Ethernet 2'],
    ['the network holding the IP names it', vnic, [overlay('Ethernet', '10.0.0.7')], 'Ethernet'],
    ["another network's IP does not count", vnic, [overlay('Ethernet 3', '192.168.1.4')], undefined],
    ['a vNIC never counts as an adapter', vnic, [overlay('vEthernet (Ethernet)', '10.0.0.7')], undefined],
    ['no networks', vnic, [], undefined],
  ])('%s', (_what, iface, networks, want) => {
    expect(knownPhysicalAdapter(iface, networks)).toBe(want);
  });

  it('else the adapter table: the IP moves back to the physical NIC once the old network is gone', async () => {
    const h = host([[vnic], [vnic], [{ ...vnic, name: 'Ethernet', index: 4 }]]);
    expect(await resolvePhysicalAdapter({ host: h, iface: vnic, networks: [], clock: fakeClock() })).toBe('Ethernet');
    expect(h.calls).toBe(3);
  });

  it('nothing to go on: FLANNEL_ERR_HOST telling to pass --iface', async () => {
    const err = await resolvePhysicalAdapter({ host: host([[vnic]]), iface: vnic, networks: [], clock: fakeClock(), timeoutMs: 2000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HostError);
    expect((err as FlannelError).code).toBe('FLANNEL_ERR_HOST');
    expect((err as FlannelError).context).toEqual({ interface: vnic.name, ip: vnic.ipv4 });
  });

  it('isHostVNic', () => {
    expect(['vEthernet (Ethernet)', 'vethernet (cbr0_ep)'].map(isHostVNic)).toEqual([true, true]);
    expect(['Ethernet', 'Ethernet (2)', 'vEthernet'].map(isHostVNic)).toEqual([false, false, false]);
  });
});

describe("the own Node's public-IP annotations", () => {
  it.each<[string, Record<string, string> | undefined, string, object]>([
    [
      'both',
      { 'flannel.alpha.coreos.com/public-ip-overwrite': '203.0.113.9', 'flannel.alpha.coreos.com/node-public-ip': '192.168.5.7' },
      'flannel.alpha.coreos.com',
      { publicIPOverwrite: '203.0.113.9', nodePublicIP: '192.168.5.7' },
    ],
    ['custom prefix', { 'example.com/node-public-ip': '192.168.5.7' }, 'example.com', { nodePublicIP: '192.168.5.7' }],
    [
      'invalid values dropped',
      { 'flannel.alpha.coreos.com/node-public-ip': 'fe80::1', 'flannel.alpha.coreos.com/public-ip-overwrite': '10.0.0.256' },
      'flannel.alpha.coreos.com',
      {},
    ],
    ['no annotations', undefined, 'flannel.alpha.coreos.com', {}],
  ])('%s', (_what, annotations, prefix, want) => {
    expect(nodePublicIPsOf({ metadata: { name: 'win-1', annotations } }, prefix)).toEqual(want);
  });
});

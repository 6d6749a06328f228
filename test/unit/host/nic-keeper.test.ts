// The compare of src/host/nic-keeper.ts: what the chosen NIC had before HNS replaced it with a vNIC, what
// the vNIC has now, and what is restored. Only what the operator set by hand (origin manual) comes back;
// DHCP settings come back by DHCP on the vNIC (sig-windows-tools#162, microsoft/SDN#498: "If we enable
// DHCP, then it will pick up a DHCP address and work"), and an unreadable side restores nothing.
import { describe, expect, it } from '@jest/globals';
import type { NicConfiguration, NicRoute } from '../../../src/host/host.js';
import { planNicRestore, describeNicRestore } from '../../../src/host/nic-keeper.js';

const STATIC_IP = { address: '10.0.0.7', prefixLength: 24, origin: 'manual' } as const;
const APIPA = { address: '169.254.237.12', prefixLength: 16, origin: 'other' } as const;
const LINK_LOCAL6 = { address: 'fe80::c71:f557:2367:787', prefixLength: 64, origin: 'other' } as const;
const STATIC_IP6 = { address: 'fd00:10::7', prefixLength: 64, origin: 'manual' } as const;
const GATEWAY: NicRoute = { destinationPrefix: '0.0.0.0/0', nextHop: '10.0.0.1', metric: 0, origin: 'manual' };
const PERSISTENT: NicRoute = { destinationPrefix: '192.168.200.0/22', nextHop: '10.0.0.254', metric: 5, origin: 'manual' };
const DHCP_GATEWAY: NicRoute = { ...GATEWAY, origin: 'dhcp' };
const ON_LINK: NicRoute = { destinationPrefix: '10.0.0.0/24', nextHop: '0.0.0.0', metric: 256, origin: 'other' };

const nic = (c: Partial<NicConfiguration>): NicConfiguration => ({ addresses: [], routes: [], dnsServers: [], ...c });

describe('planNicRestore', () => {
  it.each<[string, NicConfiguration, NicConfiguration, ReturnType<typeof planNicRestore>]>([
    [
      'nothing lost: nothing to do',
      nic({ addresses: [STATIC_IP], routes: [GATEWAY, ON_LINK], dnsServers: ['10.0.0.2'] }),
      nic({ addresses: [STATIC_IP], routes: [GATEWAY, ON_LINK], dnsServers: ['10.0.0.2'] }),
      { addresses: [], routes: [] },
    ],
    [
      'the vNIC fell back to APIPA: the static address, gateway, persistent route and DNS servers come back',
      nic({ addresses: [STATIC_IP, LINK_LOCAL6], routes: [GATEWAY, PERSISTENT, ON_LINK], dnsServers: ['10.0.0.2', '10.0.0.3'] }),
      nic({ addresses: [APIPA, LINK_LOCAL6], routes: [], dnsServers: [] }),
      { addresses: [{ address: '10.0.0.7', prefixLength: 24 }], routes: [GATEWAY, PERSISTENT], dnsServers: ['10.0.0.2', '10.0.0.3'] },
    ],
    [
      'only the persistent route was lost (the address moved): the route alone',
      nic({ addresses: [STATIC_IP], routes: [GATEWAY, PERSISTENT] }),
      nic({ addresses: [STATIC_IP], routes: [GATEWAY] }),
      { addresses: [], routes: [PERSISTENT] },
    ],
    [
      'a static IPv6 address is restored too',
      nic({ addresses: [STATIC_IP, STATIC_IP6] }),
      nic({ addresses: [STATIC_IP] }),
      { addresses: [{ address: 'fd00:10::7', prefixLength: 64 }], routes: [] },
    ],
    [
      'DHCP settings are never restored (the vNIC asks DHCP itself), nor link-local addresses or on-link routes',
      nic({ addresses: [{ ...STATIC_IP, origin: 'dhcp' }, LINK_LOCAL6], routes: [DHCP_GATEWAY, ON_LINK], dnsServers: [] }),
      nic({ addresses: [APIPA], routes: [], dnsServers: [] }),
      { addresses: [], routes: [] },
    ],
    ['a route still there under another metric is left as it is', nic({ routes: [PERSISTENT] }), nic({ routes: [{ ...PERSISTENT, metric: 25 }] }), { addresses: [], routes: [] }],
    [
      'DNS servers in another order are set again in the snapshot order',
      nic({ dnsServers: ['10.0.0.2', '10.0.0.3'] }),
      nic({ dnsServers: ['10.0.0.3', '10.0.0.2'] }),
      { addresses: [], routes: [], dnsServers: ['10.0.0.2', '10.0.0.3'] },
    ],
    ['DNS servers unknown before: left alone', nic({ dnsServers: undefined }), nic({ dnsServers: [] }), { addresses: [], routes: [] }],
    ['DNS servers unknown after: left alone', nic({ dnsServers: ['10.0.0.2'] }), nic({ dnsServers: undefined }), { addresses: [], routes: [] }],
    ['DNS servers the vNIC has beside the old ones: left alone', nic({ dnsServers: ['10.0.0.2'] }), nic({ dnsServers: ['10.0.0.2', '10.0.0.9'] }), { addresses: [], routes: [] }],
  ])('%s', (_name, before, after, want) => {
    expect(planNicRestore(before, after)).toEqual(want);
  });

  it("routes into the cluster's pod network are the agent's (host-gw peers): never restored", () => {
    const peer: NicRoute = { destinationPrefix: '10.244.1.0/24', nextHop: '10.0.0.11', metric: 256, origin: 'manual' };
    const peer6: NicRoute = { destinationPrefix: 'fd00:10:244:1::/64', nextHop: 'fd00:10::11', metric: 256, origin: 'manual' };
    const plan = planNicRestore(nic({ routes: [peer, peer6, PERSISTENT, GATEWAY] }), nic({}), ['10.244.0.0/16', 'fd00:10:244::/56']);
    expect(plan).toEqual({ addresses: [], routes: [PERSISTENT, GATEWAY] });
  });
});

describe('describeNicRestore', () => {
  it('names each restored setting', () => {
    expect(describeNicRestore({ addresses: [{ address: '10.0.0.7', prefixLength: 24 }], routes: [GATEWAY, PERSISTENT], dnsServers: ['10.0.0.2'] })).toBe(
      'address 10.0.0.7/24, route 0.0.0.0/0 via 10.0.0.1, route 192.168.200.0/22 via 10.0.0.254, DNS servers 10.0.0.2',
    );
  });
});

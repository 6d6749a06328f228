// The simulated node's "HNS restarted" fault (src/simulator/objects.ts restartHns): what HNS keeps over a
// restart (persisted networks, with their ID and creation policies) and what it drops (non-persistent
// networks, every endpoint and its host vNIC, the policies added later), and the new service instance
// the host reports; plus the PID a real node's `sc.exe queryex hns` reports (src/host/win32.ts).
import { describe, expect, it } from '@jest/globals';
import { HnsClient } from '../../src/hns/client.js';
import { hnsPidOf } from '../../src/host/win32.js';
import { SimulatedHnsTransport } from '../../src/simulator/hns.js';
import { SimulatedHost } from '../../src/simulator/host.js';
import { SimulatedDataplane } from '../../src/simulator/model.js';
import { parseDataplaneState } from '../../src/simulator/state-file.js';
import { DataplaneStateError } from '../../src/errors.js';

describe('the HNS restarted fault', () => {
  it('keeps a persisted L2Bridge network (same ID, creation policies), drops endpoints, vNICs, added policies and the non-persistent Overlay network', async () => {
    const dp = new SimulatedDataplane();
    const hns = new HnsClient(new SimulatedHnsTransport(dp));
    const host = new SimulatedHost(dp);
    const l2 = await hns.createNetworkV1({ Name: 'cbr0', Type: 'L2Bridge', Subnets: [{ AddressPrefix: '10.244.2.0/24', GatewayAddress: '10.244.2.1' }] });
    const ep = await hns.createEndpointV1({ Name: 'cbr0_ep', IPAddress: '10.244.2.2', VirtualNetwork: l2.ID! });
    await hns.attachEndpointToHost(ep.ID!);
    await hns.addNetworkPolicies(l2.ID!, [
      {
        Type: 'RemoteSubnetRoute',
        Settings: { DestinationPrefix: '10.244.9.0/24', IsolationId: 4096, ProviderAddress: '10.0.0.9', DistributedRouterMacAddress: '00-11-22-33-44-55' },
      },
    ]);
    await hns.createNetwork({
      Name: 'flannel.4096',
      Type: 'Overlay',
      Flags: 8,
      SchemaVersion: { Major: 2, Minor: 0 },
      Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: '10.244.3.0/24', Routes: [{ NextHop: '10.244.3.1', DestinationPrefix: '0.0.0.0/0' }] }] }],
    });
    expect(await host.hnsInstance()).toBe('1');
    const beforePolicies = dp.getNetwork(l2.ID!)!.Policies!.filter((p) => p.Type !== 'RemoteSubnetRoute');

    const effects = dp.restartHns();

    expect(effects).toEqual({ networksDropped: ['flannel.4096'], endpointsDropped: 1, policiesDropped: 1 });
    expect(dp.listNetworks().map((n) => [n.Name, n.ID])).toEqual([['cbr0', l2.ID]]);
    expect(dp.getNetwork(l2.ID!)!.Policies).toEqual(beforePolicies);
    expect(dp.listEndpoints()).toEqual([]);
    expect(dp.listAdapters().map((a) => a.Name)).not.toContain('vEthernet (cbr0_ep)');
    expect(dp.listAdapters().map((a) => a.Name)).toContain('vEthernet (Ethernet)'); // the vSwitch stays with the L2Bridge network
    expect(await host.hnsInstance()).toBe('2');
  });

  it('the state file takes hnsInstance as a whole number >= 1', () => {
    const base = { networks: [], endpoints: [], routes: [], adapters: [] };
    expect(parseDataplaneState(JSON.stringify({ ...base, hnsInstance: 3 }), 'f').hnsInstance).toBe(3);
    expect(() => parseDataplaneState(JSON.stringify({ ...base, hnsInstance: 'x' }), 'f')).toThrow(DataplaneStateError);
  });
});

describe('hnsPidOf (sc.exe queryex hns)', () => {
  it.each([
    [
      'SERVICE_NAME: hns\r\n        TYPE               : 20  WIN32_SHARE_PROCESS\r\n        STATE              : 4  RUNNING\r\n        PID                : 2140\r\n        FLAGS              :\r\n',
      '2140',
    ],
    ['SERVICE_NAME: hns\r\n        STATE              : 1  STOPPED\r\n        PID                : 0\r\n', undefined],
    ['[SC] EnumQueryServicesStatus:OpenService FAILED 1060:\r\n', undefined],
  ])('%j -> %s', (out, pid) => {
    expect(hnsPidOf(out)).toBe(pid);
  });
});

// The simulated node's "HNS restarted" fault (src/simulator/objects.ts restartHns): what HNS keeps over a
// restart (persisted networks, with their ID and creation policies) and what it drops (non-persistent
// networks, every endpoint and its host vNIC, the policies added later), and the new service instance
// the host reports (a real node's PID through QueryServiceStatusEx: test/unit/win32/services.test.ts).
import { describe, expect, it } from '@jest/globals';
import { HnsClient } from '../../../src/hns/client.js';
import { SimulatedHnsTransport } from '../../../src/simulator/hns.js';
import { SimulatedHost } from '../../../src/simulator/host.js';
import { SimulatedDataplane } from '../../../src/simulator/model.js';
import { parseDataplaneState } from '../../../src/simulator/state-file.js';
import { DataplaneStateError, HostError } from '../../../src/basics/errors.js';
import { expectCode } from '../../support/errors.js';

describe('a service restart on the simulated node', () => {
  it('counts each restart per service in the state document', async () => {
    const dp = new SimulatedDataplane();
    const host = new SimulatedHost(dp);
    expect(dp.serviceRestarts('kubeproxy')).toBe(0);
    await host.restartService('kubeproxy');
    await host.restartService('kubeproxy');
    expect(dp.serviceRestarts('kubeproxy')).toBe(2);
    expect(dp.calls.get('ControlService')).toBe(2);
  });

  // docs/errors.md: an SCM call that fails is FLANNEL_ERR_SERVICE with op, service and the Win32 status, as
  // src/win32/services.ts throws it on a real node (ControlService: 5 ERROR_ACCESS_DENIED, winerror.h).
  it('a refused ControlService fails as the real SCM call does: FLANNEL_ERR_SERVICE naming op, service and status; nothing counted', async () => {
    const dp = new SimulatedDataplane();
    const host = new SimulatedHost(dp);
    dp.injections.failNext('ControlService', 5);
    const err = await expectCode(host.restartService('kubeproxy'), HostError, 'FLANNEL_ERR_SERVICE');
    expect(err.context).toMatchObject({ op: 'ControlService', service: 'kubeproxy', status: 5 });
    expect(dp.serviceRestarts('kubeproxy')).toBe(0);
  });
});

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

    expect(effects).toEqual({ networksDropped: ['flannel.4096'], endpointsDropped: 1, policiesDropped: 1, loadBalancersRehydrating: 0 });
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
    expect(parseDataplaneState(JSON.stringify({ ...base, serviceRestarts: { kubeproxy: 2 } }), 'f').serviceRestarts).toEqual({ kubeproxy: 2 });
    expect(() => parseDataplaneState(JSON.stringify({ ...base, serviceRestarts: { kubeproxy: -1 } }), 'f')).toThrow(DataplaneStateError);
    expect(() => parseDataplaneState(JSON.stringify({ ...base, serviceRestarts: [] }), 'f')).toThrow(DataplaneStateError);
  });
});

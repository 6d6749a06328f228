import { describe, it, expect } from '@jest/globals';
import { FakeClock } from '../../support/fake-clock.js';
import { RouteError } from '../../../src/basics/errors.js';
import { SimulatedDataplane } from '../../../src/simulator/model.js';
import { SimulatedRouteTable } from '../../../src/simulator/host.js';
import { SimulatedHost } from '../../../src/simulator/host.js';
import { HnsClient } from '../../../src/hns/client.js';
import { SimulatedHnsTransport } from '../../../src/simulator/hns.js';
import { editState, removeRoute } from '../../support/sim-dataplane.js';

const r = (dest: string, idx = 4, nextHop = '10.0.0.3') => ({ destinationPrefix: dest, nextHop, interfaceIndex: idx, metric: 100 });

describe('SimulatedRouteTable', () => {
  it('lists the default route; add/remove are idempotent', async () => {
    const dp = new SimulatedDataplane();
    const rt = new SimulatedRouteTable(dp);
    expect(await rt.list()).toEqual([{ destinationPrefix: '0.0.0.0/0', nextHop: '10.0.0.1', interfaceIndex: 4, metric: 0 }]);
    await rt.add(r('10.244.3.0/24'));
    await rt.add(r('10.244.3.0/24')); // 5010 -> success
    await rt.add(r('10.244.3.0/24', 4, '10.0.0.4')); // different next hop: another route
    expect((await rt.list(4)).filter((x) => x.destinationPrefix === '10.244.3.0/24')).toHaveLength(2);
    await rt.remove(r('10.244.3.0/24'));
    await rt.remove(r('10.244.3.0/24')); // 1168 -> success
    await rt.remove(r('10.244.3.0/24', 99)); // unknown interface, nothing to remove
    expect((await rt.list()).map((x) => x.nextHop)).toEqual(['10.0.0.1', '10.0.0.4']);
    expect(await rt.list(5)).toEqual([]);
  });

  it.each([
    ['duplicate', () => ({ route: { DestinationPrefix: '0.0.0.0/0', NextHop: '10.0.0.1', InterfaceIndex: 4, Metric: 5 } }), 5010],
    ['unknown interface', () => ({ route: { DestinationPrefix: '10.1.0.0/16', NextHop: '10.0.0.1', InterfaceIndex: 42, Metric: 5 } }), 1168],
  ])('the store raises RouteError %s (%#)', (_name, make, status) => {
    const dp = new SimulatedDataplane();
    let err: unknown;
    try {
      dp.createRoute(make().route);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(RouteError);
    expect((err as RouteError).status).toBe(status);
  });

  it('add on a nonexistent interface throws RouteError 1168', async () => {
    const rt = new SimulatedRouteTable(new SimulatedDataplane());
    await expect(rt.add(r('10.244.3.0/24', 42))).rejects.toMatchObject({ code: 'FLANNEL_ERR_ROUTE', status: 1168 });
  });

  it('injected failures and latency', async () => {
    const clock = new FakeClock({ instant: true, start: 0 });
    const sleeps = clock.sleeps;
    const dp = new SimulatedDataplane({ clock, latency: { routeCallMs: 3 } });
    const rt = new SimulatedRouteTable(dp);
    dp.injections.failNext('CreateIpForwardEntry2', 5);
    await expect(rt.add(r('10.244.3.0/24'))).rejects.toMatchObject({ code: 'FLANNEL_ERR_ROUTE', status: 5 });
    await rt.add(r('10.244.3.0/24'));
    expect(sleeps).toEqual([3, 3]);
    expect(dp.calls.get('CreateIpForwardEntry2')).toBe(2);
  });

  it("removeRoute behind the agent's back", async () => {
    const dp = new SimulatedDataplane();
    const rt = new SimulatedRouteTable(dp);
    await rt.add(r('10.244.3.0/24'));
    expect(removeRoute(dp, '10.244.3.0/24')).toBe(1);
    expect((await rt.list()).some((x) => x.destinationPrefix === '10.244.3.0/24')).toBe(false);
  });
});

describe('SimulatedHost', () => {
  it("lists an adapter's IPv6 address only when asked for, as the Windows host reads it", async () => {
    const dp = new SimulatedDataplane({ nodeIP: '10.0.0.5' });
    editState(dp, (s) => s.adapters.forEach((a) => Object.assign(a, { IPv6Address: 'fd00:10::5', IPv6PrefixLength: 64 })));
    const host = new SimulatedHost(dp);
    expect(await host.interfaces()).toEqual([{ name: 'Ethernet', index: 4, ipv4: '10.0.0.5', prefixLength: 24, mtu: 1500 }]);
    expect((await host.interfaces({ ipv6: true }))[0]?.ipv6Addresses).toEqual([{ address: 'fd00:10::5', prefixLength: 64 }]);
  });

  it('follows the vNIC move; forwarding per interface', async () => {
    const dp = new SimulatedDataplane({ nodeIP: '10.0.0.5' });
    const host = new SimulatedHost(dp);
    expect(await host.interfaces()).toEqual([{ name: 'Ethernet', index: 4, ipv4: '10.0.0.5', prefixLength: 24, mtu: 1500 }]);
    expect(await host.defaultRouteInterfaceIndex()).toBe(4);
    const hns = new HnsClient(new SimulatedHnsTransport(dp));
    await hns.createNetworkV1({ Name: 'cbr0', Type: 'L2Bridge', Subnets: [{ AddressPrefix: '10.244.1.0/24', GatewayAddress: '10.244.1.1' }] });
    const after = await host.interfaces();
    expect(after.map((i) => i.name)).toEqual(['vEthernet (Ethernet)']);
    const idx = after[0].index;
    expect(idx).not.toBe(4);
    expect(await host.defaultRouteInterfaceIndex()).toBe(idx);
    expect(await host.getForwarding(idx)).toBe(false);
    await host.setForwarding(idx, true);
    expect(await host.getForwarding(idx)).toBe(true);
    await expect(host.setForwarding(4242, true)).rejects.toMatchObject({ code: 'FLANNEL_ERR_HOST' });
  });
});

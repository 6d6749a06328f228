// The host's route to the cloud metadata server (169.254.169.254) on the simulated node. Building the
// vSwitch moves the node's address to `vEthernet (Ethernet)` and drops the physical NIC's other routes, as
// Windows does (sig-windows-tools hostprocess/flannel/flanneld/start.ps1 re-adds the route after flanneld
// built the network, sig-windows-tools#36); the agent notes the route before and re-adds it through the
// RouteTable on the vEthernet interface afterwards.
import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { SimulatedDataplane, type SimRoute } from '../../src/simulator/model.js';
import { PHYSICAL_ADAPTER_INDEX } from '../../src/simulator/state.js';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { METADATA_PREFIX, noteMetadataRoute, restoreMetadataRoute } from '../../src/host/metadata-route.js';
import { SimulatedRouteTable, SimulatedHost } from '../../src/simulator/host.js';
import { HOSTGW_NET_CONF, TestCluster, VXLAN_NET_CONF, waitFor, WIN_IP } from '../support/cluster.js';
import { addRoute } from '../support/sim-dataplane.js';

const WIN = 'win-1';
/** A cloud image's metadata route: via the subnet gateway on the physical NIC. */
const METADATA: SimRoute = { DestinationPrefix: METADATA_PREFIX, NextHop: '10.0.0.1', InterfaceIndex: PHYSICAL_ADAPTER_INDEX, Metric: 10 };

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

const metadataRoutes = (sim: SimulatedDataplane) => sim.listRoutes().filter((r) => r.DestinationPrefix === METADATA_PREFIX);

describe('the simulated node models the loss', () => {
  it.each([
    ['L2Bridge', 'host-gw'],
    ['Overlay', 'vxlan'],
  ])('creating the first %s network (%s) drops the metadata route with the move to vEthernet', (type) => {
    const sim = new SimulatedDataplane({ nodeIP: WIN_IP });
    addRoute(sim, METADATA);
    sim.createNetwork('test', {
      Name: 'n',
      Type: type,
      Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: '10.244.100.0/24' }] }],
      SchemaVersion: { Major: 2, Minor: 0 },
    });
    expect(sim.listAdapters().find((a) => a.IPAddress === WIN_IP)?.Name).toBe('vEthernet (Ethernet)');
    expect(metadataRoutes(sim)).toEqual([]);
  });
});

describe('the agent keeps the metadata route', () => {
  it.each([
    ['host-gw', HOSTGW_NET_CONF],
    ['vxlan', VXLAN_NET_CONF],
  ])('%s: re-added on vEthernet (Ethernet) with the same next hop and metric', async (backend, netConf) => {
    cluster = await new TestCluster().start();
    cluster.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: backend as 'host-gw' | 'vxlan' }));
    cluster.addWindowsNode(WIN, '10.244.100.0/24', WIN_IP);
    // The node as the cloud hands it over: its state file holds the metadata route on the NIC.
    mkdirSync(join(cluster.dir, WIN), { recursive: true });
    addRoute(new SimulatedDataplane({ statePath: join(cluster.dir, WIN, 'dataplane.json'), nodeIP: WIN_IP }), METADATA);

    const a = cluster.startAgent({ nodeName: WIN, ip: WIN_IP, netConf });
    await waitFor(() => a.agent.isReady, 'agent ready');
    const sim = a.sim;
    const vnic = sim.listAdapters().find((x) => x.Name === 'vEthernet (Ethernet)')!;
    expect(vnic.IPAddress).toBe(WIN_IP);
    expect(metadataRoutes(sim)).toEqual([{ ...METADATA, InterfaceIndex: vnic.InterfaceIndex }]);
  });

  it('a route still there is left alone; a host without one gets none', async () => {
    const sim = new SimulatedDataplane({ nodeIP: WIN_IP });
    const routes = new SimulatedRouteTable(sim);
    const host = new SimulatedHost(sim);
    expect(await noteMetadataRoute(routes, host)).toBeUndefined();
    addRoute(sim, METADATA);
    const note = (await noteMetadataRoute(routes, host))!;
    expect(note.interfaceIP).toBe(WIN_IP);
    expect(await restoreMetadataRoute(note, routes, host)).toBe('present');
    expect(metadataRoutes(sim)).toEqual([METADATA]);
  });
});

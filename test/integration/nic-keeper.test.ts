// The host NIC's hand-set settings across the vSwitch, on the simulated node through the built CLI.
// Creating the first L2Bridge/Overlay network replaces the NIC with `vEthernet (Ethernet)`; with the state
// file's fault mode `"vnicSettings": "dhcp-only"` that vNIC keeps only what DHCP gives: a static address
// falls back to APIPA, the static gateway and DNS servers are gone (sig-windows-tools#162, microsoft/SDN#498,
// ovn-kubernetes#2530), and persistent routes never move (sig-windows-tools#36). The agent snapshots the NIC
// it chose and restores what was lost (src/host/nic-keeper.ts), with a log line and a Node Event.
import { afterEach, describe, expect, it } from '@jest/globals';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { SimulatedDataplane } from '../../src/simulator/model.js';
import { PHYSICAL_ADAPTER_INDEX, type DataplaneState, type SimRoute } from '../../src/simulator/state.js';
import { HOSTGW_NET_CONF, TestCluster, VXLAN_NET_CONF, waitFor, WIN_IP } from '../support/cluster.js';
import { keepNic, snapshotNic } from '../../src/host/nic-keeper.js';
import type { NodeEvent } from '../../src/node-events.js';
import { SimulatedHost, SimulatedRouteTable } from '../../src/simulator/host.js';
import { logSink } from '../support/log-sink.js';
import { editState } from '../support/sim-dataplane.js';
import type { SimAgent } from '../support/sim-node.js';

const WIN = 'win-1';
const DNS = ['10.0.0.53', '10.0.0.54'];
/** A route the operator added with `route -p add` on the NIC. */
const PERSISTENT: SimRoute = { DestinationPrefix: '192.168.200.0/22', NextHop: '10.0.0.254', InterfaceIndex: PHYSICAL_ADAPTER_INDEX, Metric: 5 };
const VNIC = 'vEthernet (Ethernet)';

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

async function node(backend: 'host-gw' | 'vxlan', edit: (st: DataplaneState) => void): Promise<{ agent: SimAgent; c: TestCluster }> {
  const c = await new TestCluster().start();
  cluster = c;
  c.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: backend }));
  c.addWindowsNode(WIN, '10.244.100.0/24', WIN_IP);
  c.stateOf(WIN).edit((st) => {
    st.routes.push({ ...PERSISTENT });
    edit(st);
  });
  const agent = await c.startProcess({ nodeName: WIN, netConf: backend === 'vxlan' ? VXLAN_NET_CONF : HOSTGW_NET_CONF, args: [`--iface=${WIN_IP}`] });
  await agent.waitReady(30_000).catch((err: unknown) => {
    throw new Error(`${String(err)}\n${agent.dump()}`);
  });
  return { agent, c };
}

const restoredEvents = (c: TestCluster) => c.api.events({ kind: 'Node', name: WIN }).filter((e) => e['reason'] === 'FlannelHostNICRestored');

describe('the simulated node: "the vNIC keeps only DHCP settings"', () => {
  const overlay = (name: string, subnet: string) => ({
    Name: name,
    Type: 'Overlay',
    Policies: [{ Type: 'NetAdapterName', Settings: { NetworkAdapterName: 'Ethernet' } }],
    Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: subnet }] }],
    SchemaVersion: { Major: 2, Minor: 0 },
  });

  it('the first network on the NIC leaves the vNIC on APIPA without gateway, DNS servers or persistent routes; a second network changes nothing', () => {
    const sim = new SimulatedDataplane({ nodeIP: WIN_IP });
    editState(sim, (st) => {
      st.vnicSettings = 'dhcp-only';
      st.adapters[0].DnsServers = [...DNS];
      st.routes.push({ ...PERSISTENT });
    });
    sim.createNetwork('test', overlay('a', '10.244.100.0/24'));
    const vnic = sim.listAdapters().find((a) => a.Name === VNIC)!;
    expect(vnic.IPAddress).toMatch(/^169\.254\./);
    expect(vnic.PrefixLength).toBe(16);
    expect(vnic.DnsServers).toBeUndefined();
    expect(sim.listRoutes(vnic.InterfaceIndex)).toEqual([]);
    expect(sim.listRoutes().filter((r) => r.DestinationPrefix === PERSISTENT.DestinationPrefix)).toEqual([]);
    // HNS binds a vSwitch once per adapter: the next network shares it and leaves the vNIC alone.
    editState(sim, (st) => (st.adapters.find((a) => a.Name === VNIC)!.IPAddress = WIN_IP));
    sim.createNetwork('test', overlay('b', '10.244.101.0/24'));
    expect(sim.listAdapters().find((a) => a.Name === VNIC)).toMatchObject({ IPAddress: WIN_IP, InterfaceIndex: vnic.InterfaceIndex });
  });

  it('a NIC DHCP configured keeps its address and gateway on the vNIC', () => {
    const sim = new SimulatedDataplane({ nodeIP: WIN_IP });
    editState(sim, (st) => {
      st.vnicSettings = 'dhcp-only';
      st.adapters[0].Dhcp = true;
    });
    sim.createNetwork('test', overlay('a', '10.244.100.0/24'));
    const vnic = sim.listAdapters().find((a) => a.Name === VNIC)!;
    expect(vnic).toMatchObject({ IPAddress: WIN_IP, Dhcp: true });
    expect(sim.listRoutes(vnic.InterfaceIndex).map((r) => r.DestinationPrefix)).toEqual(['0.0.0.0/0']);
  });
});

describe('the agent keeps the NIC it chose', () => {
  it.each([['host-gw' as const], ['vxlan' as const]])(
    '%s: a static NIC whose vNIC fell back to APIPA gets its address, gateway, persistent route and DNS servers back, told in the log and an Event',
    async (backend) => {
      const { agent, c } = await node(backend, (st) => {
        st.vnicSettings = 'dhcp-only';
        st.adapters[0].DnsServers = [...DNS];
      });
      const st = agent.state.read();
      const vnic = st.adapters.find((a) => a.Name === VNIC)!;
      expect(vnic).toMatchObject({ IPAddress: WIN_IP, PrefixLength: 24, DnsServers: DNS });
      const onVnic = st.routes.filter((r) => r.InterfaceIndex === vnic.InterfaceIndex);
      expect(onVnic).toEqual(
        expect.arrayContaining([
          { DestinationPrefix: '0.0.0.0/0', NextHop: '10.0.0.1', InterfaceIndex: vnic.InterfaceIndex, Metric: 0 },
          { ...PERSISTENT, InterfaceIndex: vnic.InterfaceIndex },
        ]),
      );
      const line = agent.lines.find((l) => String(l.message).startsWith('restored the settings HNS dropped from Ethernet'));
      expect({ line, log: line ? '' : agent.dump() }).toMatchObject({
        line: {
          level: 'warn',
          nic: 'Ethernet',
          vnic: VNIC,
          restored: `address ${WIN_IP}/24, route 0.0.0.0/0 via 10.0.0.1, route 192.168.200.0/22 via 10.0.0.254, DNS servers ${DNS.join(',')}`,
        },
      });
      const event = await waitFor(() => restoredEvents(c)[0], 'the FlannelHostNICRestored Event');
      expect(event['type']).toBe('Warning');
      expect(String(event['message'])).toContain(`restored address ${WIN_IP}/24`);
    },
  );

  it('without the fault only the persistent route was lost: it alone comes back', async () => {
    const { agent, c } = await node('host-gw', () => undefined);
    const st = agent.state.read();
    const vnic = st.adapters.find((a) => a.Name === VNIC)!;
    expect(st.routes).toContainEqual({ ...PERSISTENT, InterfaceIndex: vnic.InterfaceIndex });
    expect(agent.lines.find((l) => String(l.message).startsWith('restored the settings'))).toMatchObject({ restored: 'route 192.168.200.0/22 via 10.0.0.254' });
    await waitFor(() => restoredEvents(c)[0], 'the FlannelHostNICRestored Event');
  });

  it('a DHCP NIC is left to DHCP: nothing restored, no Event', async () => {
    const { agent, c } = await node('vxlan', (st) => {
      st.vnicSettings = 'dhcp-only';
      st.adapters[0].Dhcp = true;
      st.routes = st.routes.filter((r) => r.DestinationPrefix !== PERSISTENT.DestinationPrefix);
    });
    expect(agent.state.read().adapters.find((a) => a.Name === VNIC)).toMatchObject({ IPAddress: WIN_IP, Dhcp: true });
    expect(agent.lines.filter((l) => String(l.message).includes('settings HNS dropped'))).toEqual([]);
    expect(restoredEvents(c)).toEqual([]);
  });
});

describe('keepNic on the simulated node, in process', () => {
  const overlay = {
    Name: 'a',
    Type: 'Overlay',
    Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: '10.244.100.0/24' }] }],
    SchemaVersion: { Major: 2, Minor: 0 },
  };

  async function faultyNode() {
    const sim = new SimulatedDataplane({ nodeIP: WIN_IP });
    editState(sim, (st) => {
      st.vnicSettings = 'dhcp-only';
      st.adapters[0].DnsServers = [...DNS];
    });
    const host = new SimulatedHost(sim);
    const routes = new SimulatedRouteTable(sim);
    const { log, entries } = logSink('info');
    const snapshot = await snapshotNic(host, (await host.interfaces())[0], ['10.244.0.0/16'], log);
    sim.createNetwork('test', overlay);
    const events: NodeEvent[] = [];
    return { sim, host, routes, log, entries, snapshot, events, deps: { host, routes, log, events: { record: (e: NodeEvent) => void events.push(e) } } };
  }

  it('a write refused: the rest is restored, the log (error) and the Event name what to set by hand', async () => {
    const n = await faultyNode();
    n.sim.injections.failNext('CreateUnicastIpAddressEntry', 5);
    expect(await keepNic(n.snapshot, n.deps)).toBe('partly-restored');
    const line = n.entries.find((e) => e['level'] === 'error');
    expect(line).toMatchObject({ nic: 'Ethernet', vnic: VNIC, restored: `route 0.0.0.0/0 via 10.0.0.1, DNS servers ${DNS.join(',')}` });
    expect(String(line!['failed'])).toMatch(/^address 10\.0\.0\.2\/24 \(CreateUnicastIpAddressEntry failed with status 5/);
    expect(n.events).toHaveLength(1);
    expect(n.events[0].message).toContain(`could not restore address ${WIN_IP}/24`);
    // The next settle (a rebuild) tries what is still missing, and only that.
    expect(await keepNic(n.snapshot, n.deps)).toBe('restored');
    expect(n.events[1].message).toContain(`flanneld restored address ${WIN_IP}/24.`);
    expect(await keepNic(n.snapshot, n.deps)).toBe('kept');
  });

  it('a failed read is unknown: before the network nothing is snapshotted, after it nothing is compared', async () => {
    const sim = new SimulatedDataplane({ nodeIP: WIN_IP });
    const host = new SimulatedHost(sim);
    const { log, entries } = logSink('info');
    sim.injections.failNext('GetUnicastIpAddressTable', 5);
    expect(await snapshotNic(host, (await host.interfaces())[0], [], log)).toBeUndefined();
    expect(entries.map((e) => e['message'])).toEqual([expect.stringContaining('could not read the settings of the chosen NIC')]);

    const n = await faultyNode();
    n.sim.injections.failNext('GetIpForwardTable2', 5);
    expect(await keepNic(n.snapshot, n.deps)).toBe('unknown');
    expect(n.sim.listAdapters().find((a) => a.Name === VNIC)!.IPAddress).toMatch(/^169\.254\./);
    expect(n.events).toEqual([]);
  });

  it('DNS servers that could not be read after the network are left alone', async () => {
    const n = await faultyNode();
    n.sim.injections.failNext('GetInterfaceDnsSettings', 5);
    expect(await keepNic(n.snapshot, n.deps)).toBe('restored');
    expect(n.sim.listAdapters().find((a) => a.Name === VNIC)!.DnsServers).toBeUndefined();
  });
});

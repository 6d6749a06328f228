// The simulated node's state file as shared truth: several processes (the agent, `flanneld cleanup`, a
// test script) read and write one file, as every process on a Windows node talks to the one HNS service.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DataplaneStateError, FlannelError, HnsError, RouteError } from '../../../src/basics/errors.js';
import { SimulatedDataplane, type DataplaneState } from '../../../src/simulator/model.js';
import { findFault, parseFaultRules, parseHresult } from '../../../src/simulator/faults.js';
import { HnsClient } from '../../../src/hns/client.js';
import { HRESULT } from '../../../src/hns/errors.js';
import { waitFor } from '../../support/wait-for.js';
import type { HcnNetwork } from '../../../src/hns/schema.js';
import { SimulatedHnsTransport } from '../../../src/simulator/hns.js';
import { SimulatedRouteTable } from '../../../src/simulator/host.js';
import { editState, removeNetwork } from '../../support/sim-dataplane.js';

function overlay(subnet = '10.244.7.0/24'): HcnNetwork {
  return {
    Name: 'flannel.4096',
    Type: 'Overlay',
    SchemaVersion: { Major: 2, Minor: 0 },
    Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: subnet, Policies: [{ Type: 'VSID', Settings: { IsolationId: 4096 } }] }] }],
  };
}

const rsr = (prefix: string, pa: string) => ({
  Type: 'RemoteSubnetRoute',
  Settings: { DestinationPrefix: prefix, IsolationId: 4096, ProviderAddress: pa, DistributedRouterMacAddress: '00-11-22-33-44-55' },
});

let dir: string;
let file: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sim-shared-'));
  file = path.join(dir, 'state.json');
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const readState = () => JSON.parse(fs.readFileSync(file, 'utf8')) as DataplaneState;
const writeState = (s: DataplaneState) => fs.writeFileSync(file, JSON.stringify(s, null, 2));
const client = (dp: SimulatedDataplane) => new HnsClient(new SimulatedHnsTransport(dp));

describe('one state file, several processes', () => {
  it("a second model's delete is seen by the first before its next call", async () => {
    const agent = new SimulatedDataplane({ statePath: file });
    const hns = client(agent);
    const net = await hns.createNetwork(overlay());
    const admin = new SimulatedDataplane({ statePath: file });
    expect(removeNetwork(admin, 'flannel.4096')).toBe(true);
    expect(await hns.getNetworkByName('flannel.4096')).toBeUndefined();
    await expect(hns.addNetworkPolicies(net.ID!, [rsr('10.244.1.0/24', '10.0.0.11')])).rejects.toMatchObject({ code: 'FLANNEL_ERR_HNS_NOT_FOUND' });
    // the vSwitch is gone too: the node IP is back on the physical adapter
    expect(agent.listAdapters().find((a) => a.Name === 'Ethernet')?.IPAddress).toBe('10.0.0.2');
  });

  it('an edit by hand (a new adapter) is picked up without a restart', () => {
    const dp = new SimulatedDataplane({ statePath: file });
    const s = readState();
    s.adapters.push({ Name: 'Ethernet 2', InterfaceIndex: 9, IPAddress: '192.168.5.4', PrefixLength: 24, Mtu: 9000, Forwarding: false });
    writeState(s);
    expect(dp.listAdapters().map((a) => a.Name)).toEqual(['Ethernet', 'Ethernet 2']);
  });

  it('interleaved writers: no update is lost', async () => {
    const a = new SimulatedDataplane({ statePath: file });
    const b = new SimulatedDataplane({ statePath: file });
    const ra = new SimulatedRouteTable(a);
    const rb = new SimulatedRouteTable(b);
    for (let i = 0; i < 10; i++) {
      await ra.add({ destinationPrefix: `10.1.${i}.0/24`, nextHop: '10.0.0.9', interfaceIndex: 4, metric: 256 });
      await rb.add({ destinationPrefix: `10.2.${i}.0/24`, nextHop: '10.0.0.9', interfaceIndex: 4, metric: 256 });
    }
    expect(readState().routes).toHaveLength(21);
  });

  it('four processes adding routes at once through the lock: all 4 x 25 land', async () => {
    new SimulatedDataplane({ statePath: file });
    const script = (tag: number) => `
      import { SimulatedDataplane } from ${JSON.stringify(path.join(process.cwd(), 'dist', 'simulator', 'model.js'))};
      const dp = new SimulatedDataplane({ statePath: ${JSON.stringify(file)} });
      for (let i = 0; i < 25; i++) dp.createRoute({ DestinationPrefix: '10.${tag}.' + i + '.0/24', NextHop: '10.0.0.9', InterfaceIndex: 4, Metric: 256 });`;
    const codes = await Promise.all(
      [1, 2, 3, 4].map(
        (tag) =>
          new Promise<number | null>((resolve) => {
            const child = spawn(process.execPath, ['--input-type=module', '-e', script(tag)], { stdio: 'inherit' });
            child.on('exit', resolve);
          }),
      ),
    );
    expect(codes).toEqual([0, 0, 0, 0]);
    expect(readState().routes).toHaveLength(1 + 100);
    expect(fs.existsSync(`${file}.lock`)).toBe(false);
  });

  it('a lock left by a process that is gone is broken; a live one makes the writer wait', async () => {
    const dp = new SimulatedDataplane({ statePath: file });
    const dead = spawnSync(process.execPath, ['-e', 'process.pid']).pid;
    fs.writeFileSync(`${file}.lock`, JSON.stringify({ pid: dead, at: Date.now() }));
    dp.createRoute({ DestinationPrefix: '10.9.0.0/24', NextHop: '10.0.0.9', InterfaceIndex: 4, Metric: 256 });
    expect(readState().routes).toHaveLength(2);

    // a live holder (this test process) keeps the writer out until it lets go; the writer's clock says
    // "spinning" once it has been read 50 times (a writer that ignored the lock would read it twice)
    fs.writeFileSync(`${file}.lock`, JSON.stringify({ pid: process.pid, at: Date.now() }));
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { SimulatedDataplane } from ${JSON.stringify(path.join(process.cwd(), 'dist', 'simulator', 'model.js'))};
        import { systemClock } from ${JSON.stringify(path.join(process.cwd(), 'dist', 'basics', 'clock.js'))};
        let reads = 0;
        const clock = { now: () => (++reads === 50 && process.stdout.write('spinning\\n'), Date.now()), sleep: systemClock.sleep, after: systemClock.after };
        new SimulatedDataplane({ statePath: ${JSON.stringify(file)}, clock }).createRoute({ DestinationPrefix: '10.8.0.0/24', NextHop: '10.0.0.9', InterfaceIndex: 4, Metric: 256 });`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    await waitFor(() => out.includes('spinning'), 'the writer spinning on the lock');
    expect(readState().routes).toHaveLength(2);
    fs.unlinkSync(`${file}.lock`);
    expect(await exited).toBe(0);
    expect(readState().routes).toHaveLength(3);
  });
});

describe('faults in the state file', () => {
  it('a rule fails the matching call only, counts down, and is written back', async () => {
    const dp = new SimulatedDataplane({ statePath: file });
    const hns = client(dp);
    const net = await hns.createNetwork(overlay());
    const s = readState();
    s.faults = [{ op: 'HcnModifyNetwork', match: '10.244.9.0/24', hresult: '0x803B002F', remaining: 2 }];
    writeState(s);

    await hns.addNetworkPolicies(net.ID!, [rsr('10.244.1.0/24', '10.0.0.11')]);
    const err = await hns.addNetworkPolicies(net.ID!, [rsr('10.244.9.0/24', '10.0.0.19')]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HnsError);
    expect((err as HnsError).hresult).toBe(0x803b002f);
    expect((err as HnsError).context.fault).toBe(true);
    expect(readState().faults).toEqual([{ op: 'HcnModifyNetwork', match: '10.244.9.0/24', hresult: '0x803B002F', remaining: 1 }]);
    await expect(hns.addNetworkPolicies(net.ID!, [rsr('10.244.9.0/24', '10.0.0.19')])).rejects.toBeInstanceOf(HnsError);
    expect(readState().faults![0].remaining).toBe(0);
    await hns.addNetworkPolicies(net.ID!, [rsr('10.244.9.0/24', '10.0.0.19')]);
  });

  it('remaining -1 fires always and stays -1; a v1 rule matches the HNSCall path; route rules return NETIO statuses', async () => {
    const dp = new SimulatedDataplane({ statePath: file });
    const s = readState();
    s.faults = [
      { op: 'HNSCall POST', hresult: '0x80070005', remaining: -1 },
      { op: 'CreateIpForwardEntry2', match: '"10.244.3.0/24"', hresult: 1168, remaining: -1 },
    ];
    writeState(s);
    const hns = client(dp);
    for (let i = 0; i < 3; i++) {
      await expect(hns.createNetworkV1({ Name: 'cbr0', Type: 'L2Bridge', Subnets: [{ AddressPrefix: '10.244.7.0/24' }] })).rejects.toMatchObject({
        code: 'FLANNEL_ERR_HNS_ACCESS_DENIED',
      });
    }
    expect(await hns.listNetworksV1()).toEqual([]);
    const routes = new SimulatedRouteTable(dp);
    await routes.add({ destinationPrefix: '10.244.2.0/24', nextHop: '10.0.0.9', interfaceIndex: 4, metric: 256 });
    const err = await routes.add({ destinationPrefix: '10.244.3.0/24', nextHop: '10.0.0.9', interfaceIndex: 4, metric: 256 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RouteError);
    expect((err as RouteError).status).toBe(1168);
    expect(readState().faults!.map((f) => f.remaining)).toEqual([-1, -1]);
  });

  it.each([
    [[{ hresult: '0x1', remaining: 1 }], '$.faults[0].op'],
    [[{ op: 'HcnModifyNetwork', hresult: 'bad' }], '$.faults[0].hresult'],
    [[{ op: 'HcnModifyNetwork', hresult: 1, remaining: -2 }], '$.faults[0].remaining'],
    [{ op: 'x' }, '$.faults'],
  ])('malformed faults %j -> FLANNEL_ERR_DATAPLANE_STATE naming the rule', (faults, entry) => {
    fs.writeFileSync(file, JSON.stringify({ networks: [], endpoints: [], routes: [], adapters: [], faults }));
    let err: unknown;
    try {
      new SimulatedDataplane({ statePath: file });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DataplaneStateError);
    expect((err as FlannelError).code).toBe('FLANNEL_ERR_DATAPLANE_STATE');
    expect((err as FlannelError).context).toEqual({ file, entry });
  });

  it('pure parts: HRESULT text, op prefixes, match, spent rules', () => {
    expect(parseHresult('0x803B002F')).toBe(0x803b002f);
    expect(parseHresult(-2147024891)).toBe(0x80070005);
    expect(parseHresult('1168')).toBe(1168);
    expect(parseHresult('0x1FFFFFFFF')).toBeUndefined();
    const rules = parseFaultRules([
      { op: 'HNSCall', hresult: 1, remaining: 0 },
      { op: 'HNSCall GET', match: '/networks/', hresult: 2 },
    ]);
    expect(Array.isArray(rules)).toBe(true);
    const r = Array.isArray(rules) ? rules : [];
    expect(r[1].remaining).toBe(-1);
    expect(findFault(r, 'HNSCall GET /networks/{id}', '/networks/ABC ')?.hresult).toBe(2);
    expect(findFault(r, 'HNSCall GET /endpoints/', '/endpoints/ ')).toBeUndefined();
    expect(findFault(r, 'HNSCallX', '/networks/')).toBeUndefined();
  });

  it('HNS error text: a fault with a known HRESULT reads like Windows', async () => {
    const dp = new SimulatedDataplane({ statePath: file });
    const s = readState();
    s.faults = [{ op: 'HcnCreateNetwork', hresult: HRESULT.HCN_E_NETWORK_ALREADY_EXISTS, remaining: 1 }];
    writeState(s);
    await expect(client(dp).createNetwork(overlay())).rejects.toMatchObject({ code: 'FLANNEL_ERR_HNS_EXISTS' });
    await client(dp).createNetwork(overlay());
  });
});

describe('several adapters: the vSwitch binds one physical NIC', () => {
  function twoNics(): SimulatedDataplane {
    const dp = new SimulatedDataplane({ nodeIP: '10.0.0.7' });
    editState(dp, (st) => {
      st.adapters.push({ Name: 'Ethernet 2', InterfaceIndex: 9, IPAddress: '192.168.5.7', PrefixLength: 24, Mtu: 9000, Forwarding: false });
      st.routes.push({ DestinationPrefix: '0.0.0.0/0', NextHop: '192.168.5.1', InterfaceIndex: 9, Metric: 25 });
    });
    return dp;
  }

  it('without NetAdapterName HNS takes the default route of lowest metric; the IP moves to vEthernet and back', async () => {
    const dp = twoNics();
    const hns = client(dp);
    const net = await hns.createNetwork(overlay());
    expect(net.Policies).toContainEqual({ Type: 'NetAdapterName', Settings: { NetworkAdapterName: 'Ethernet' } });
    expect(dp.listAdapters().map((a) => [a.Name, a.IPAddress])).toEqual([
      ['Ethernet', ''],
      ['Ethernet 2', '192.168.5.7'],
      ['vEthernet (Ethernet)', '10.0.0.7'],
    ]);
    await hns.deleteNetwork(net.ID!);
    expect(dp.listAdapters().map((a) => [a.Name, a.IPAddress])).toEqual([
      ['Ethernet', '10.0.0.7'],
      ['Ethernet 2', '192.168.5.7'],
    ]);
  });

  it('NetAdapterName picks the NIC; a vEthernet vNIC is refused with 0x803B0006 naming it (HNS binds physical adapters only)', async () => {
    const dp = twoNics();
    const hns = client(dp);
    const onSecond = { ...overlay(), Policies: [{ Type: 'NetAdapterName', Settings: { NetworkAdapterName: 'Ethernet 2' } }] };
    const net = await hns.createNetwork(onSecond);
    expect(net.Policies).toContainEqual({ Type: 'ProviderAddress', Settings: { ProviderAddress: '192.168.5.7' } });
    const bad = { ...overlay('10.244.8.0/24'), Name: 'other', Policies: [{ Type: 'NetAdapterName', Settings: { NetworkAdapterName: 'vEthernet (Ethernet 2)' } }] };
    const err = await hns.createNetwork(bad).catch((e: unknown) => e);
    // HCN_E_ADAPTER_NOT_FOUND, as New-HnsNetwork reports on a node without that adapter (microsoft/SDN#269)
    expect(err).toBeInstanceOf(HnsError);
    expect((err as HnsError).hresult).toBe(HRESULT.HCN_E_ADAPTER_NOT_FOUND);
    expect((err as HnsError).message).toContain('[adapter "vEthernet (Ethernet 2)"]');
  });
});

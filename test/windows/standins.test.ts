// The stand-in DLLs + sim server, without the agent: a mingw-built client (standins/smoke.c) calls
// HNSCall, the Hcn* functions and the iphlpapi functions through the stand-ins under Wine; every call
// must reach the one SimulatedDataplane and come back with Windows' HRESULTs / NETIO statuses.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { WindowsSimServer, luidOf } from './sim-server.js';
import { CACHE, mustFailWhenSkipped, prepareHarness, runUnderWine, standinOverrides, stepsOf, winPath, windowsHarness, type PreparedHarness } from '../support/windows.js';

const harness = windowsHarness();

if (!harness.run && mustFailWhenSkipped()) {
  describe('Windows harness (stand-ins)', () => {
    it('requires wine64 and mingw-w64 under CI', () => {
      throw new Error(`${harness.reason} (.ci/run installs them; CI=true does not allow skipping)`);
    });
  });
}

type Step = Record<string, unknown> & { step: string };

(harness.run ? describe : describe.skip)('stand-in DLLs forward to the simulator', () => {
  let prepared: PreparedHarness;
  let server: WindowsSimServer;
  let steps: Map<string, Step>;
  let raw: { stdout: string; stderr: string; code: number | null };

  beforeAll(async () => {
    prepared = await prepareHarness({ agent: false });
    server = new WindowsSimServer({ dataplane: { nodeIP: '10.0.0.2' } });
    await server.start();
    raw = await runUnderWine(prepared.build.smokeExe, [winPath(prepared.build.dllDir)], {
      env: { FLANNEL_SIM_PORT: String(server.port), WINEDLLOVERRIDES: standinOverrides(prepared.build.dllDir) },
      timeoutMs: 120_000,
    });
    steps = stepsOf<Step>(raw.stdout);
  }, 300_000);

  afterAll(async () => {
    if (server) {
      mkdirSync(join(CACHE, 'runs'), { recursive: true });
      writeFileSync(join(CACHE, 'runs', 'standins-transcript.txt'), server.transcript.join('\n') + '\n');
    }
    await server?.stop();
  });

  it('the client ran to the end', () => {
    expect({ code: raw.code, stderr: raw.stderr, last: [...steps.keys()].pop() }).toEqual({ code: 0, stderr: '', last: 'addrs' });
    expect(server.protocolErrors).toEqual([]);
  });

  it('HNSCall GET /globals/version returns the envelope (CoTaskMemAlloc, freed by the real CoTaskMemFree)', () => {
    expect(steps.get('version')).toMatchObject({ hr: 0 });
    expect(JSON.parse(steps.get('version')!.out as string)).toEqual({ Success: true, Output: { Major: 15, Minor: 4 } });
    expect(server.dp.calls.get('HNSCall GET /globals/version')).toBe(1);
  });

  it('HcnCreateNetwork with the zero GUID: the simulator picks the ID; a non-ASCII name survives UTF-16 <-> UTF-8', () => {
    const name = 'smöke-猫-😀';
    expect(steps.get('create')).toMatchObject({ hr: 0, err: null });
    expect(steps.get('create')!.handle).toBeGreaterThan(0);
    const q = steps.get('query')!;
    expect(q).toMatchObject({ hr: 0, err: null });
    const net = JSON.parse(q.out as string) as { Name: string; ID: string; Type: string };
    expect(net.Name).toBe(name);
    expect(net.ID).toMatch(/^[0-9A-F]{8}-/);
    expect(server.dp.getNetworkByName(name)?.ID).toBe(net.ID);
    expect(steps.get('close')).toEqual({ step: 'close', hr: 0 });
    expect(server.openHandles).toBe(0);
    expect(server.dp.openHandles).toBe(0);
  });

  it('a duplicate name fails with 0x803B0010 and an ErrorRecord', () => {
    const d = steps.get('duplicate')!;
    expect((d.hr as number) >>> 0).toBe(0x803b0010);
    expect(d.handle).toBe(0);
    expect(JSON.parse(d.err as string)).toEqual({ Success: false, Error: 'A network with this name already exists.', ErrorCode: 0x803b0010 });
  });

  it('HcnEnumerateNetworks honours the Filter (JSON inside JSON)', () => {
    const e = steps.get('enumerate')!;
    expect(e.hr).toBe(0);
    expect(JSON.parse(e.out as string)).toEqual([server.dp.getNetworkByName('smöke-猫-😀')!.ID]);
  });

  it('closing an unknown handle is E_HANDLE', () => {
    expect((steps.get('badclose')!.hr as number) >>> 0).toBe(0x80070006);
  });

  // The load-balancer family kube-proxy calls (hcsshim hcn/hcnloadbalancer.go), forwarded to the simulated
  // HNS (src/simulator/load-balancers.ts): the prototypes are the SDK's (computenetwork.h), or it would not compile.
  it('the HCN load-balancer calls reach the simulator: create, query, modify, close, enumerate; a missing one 0x80070490; a held frontend 0xb7', () => {
    expect(steps.get('lbCreate')).toMatchObject({ hr: 0, err: null });
    const lb = JSON.parse(steps.get('lbQuery')!.out as string) as { ID: string; FrontendVIPs: string[] };
    expect(lb).toMatchObject({ FrontendVIPs: ['10.96.0.10'], SourceVIP: '10.244.100.2', PortMappings: [{ Protocol: 17, InternalPort: 53, ExternalPort: 53 }] });
    expect(steps.get('lbModify')).toMatchObject({ hr: 0, err: null });
    expect(server.dp.getLoadBalancer(lb.ID)?.HostComputeEndpoints).toHaveLength(2);
    expect(steps.get('lbClose')).toEqual({ step: 'lbClose', hr: 0 });
    expect(JSON.parse(steps.get('lbEnumerate')!.out as string)).toEqual([lb.ID]);
    expect((steps.get('lbOpenMissing')!.hr as number) >>> 0).toBe(0x80070490);
    expect(steps.get('lbOpenMissing')!.handle).toBe(0);
    expect((steps.get('lbDeleteMissing')!.hr as number) >>> 0).toBe(0x80070490);
    expect((steps.get('lbDuplicate')!.hr as number) >>> 0).toBe(0x800700b7);
    expect(JSON.parse(steps.get('lbDuplicate')!.err as string)).toMatchObject({ Success: false, ErrorCode: 0x800700b7 });
    const family = [
      'HcnEnumerateLoadBalancers',
      'HcnCreateLoadBalancer',
      'HcnOpenLoadBalancer',
      'HcnModifyLoadBalancer',
      'HcnQueryLoadBalancerProperties',
      'HcnDeleteLoadBalancer',
      'HcnCloseLoadBalancer',
    ];
    expect(family.filter((fn) => server.count(fn) === 0)).toEqual([]);
  });

  it('alias -> LUID -> index -> alias finds the vNIC the L2Bridge network created', () => {
    const vnic = server.dp.listAdapters().find((a) => a.Name === 'vEthernet (Ethernet)')!;
    expect(steps.get('vnic')).toEqual({ step: 'vnic', st: 0, index: vnic.InterfaceIndex, luid: luidOf(vnic.InterfaceIndex), aliasSt: 0, alias: 'vEthernet (Ethernet)' });
  });

  it('CreateIpForwardEntry2: 87 with the fields InitializeIpForwardEntry leaves invalid, then 0, then 5010', () => {
    expect(steps.get('routeAdd')).toEqual({ step: 'routeAdd', uninit: 87, first: 0, again: 5010 });
    expect(server.dp.calls.get('CreateIpForwardEntry2')).toBe(2);
  });

  it('GetIpForwardTable2 returns the simulated table; FreeMibTable frees it', () => {
    const vnic = server.dp.listAdapters().find((a) => a.Name === 'vEthernet (Ethernet)')!.InterfaceIndex;
    expect(steps.get('table')!.rows).toEqual([`0.0.0.0/0 via 10.0.0.1 if ${vnic}`, `10.244.1.0/24 via 10.0.0.11 if ${vnic}`]);
    expect(server.mibTablesOutstanding).toBe(0);
    expect(server.badFrees).toBe(0);
  });

  it('DeleteIpForwardEntry2: 0, then 1168', () => {
    expect(steps.get('routeDelete')).toEqual({ step: 'routeDelete', first: 0, again: 1168 });
    expect(server.dp.listRoutes().map((r) => r.DestinationPrefix)).toEqual(['0.0.0.0/0']);
  });

  it('Get/SetIpInterfaceEntry: SitePrefixLength must be cleared for IPv4, then forwarding is on', () => {
    expect(steps.get('forwarding')).toEqual({ step: 'forwarding', get: 0, mtu: 1500, sitePrefixLength: 64, setUncleared: 87, set: 0 });
    expect(server.dp.listAdapters().find((a) => a.Name === 'vEthernet (Ethernet)')!.Forwarding).toBe(true);
  });

  it('GetIpAddrTable: size query (122) then the IPv4 rows with their masks', () => {
    const vnic = server.dp.listAdapters().find((a) => a.Name === 'vEthernet (Ethernet)')!.InterfaceIndex;
    expect(steps.get('addrs')).toEqual({ step: 'addrs', first: 122, second: 0, rows: [`10.0.0.2/255.255.255.0 if ${vnic}`] });
  });
});

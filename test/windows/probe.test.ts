// The hand-written iphlpapi struct layouts of src/win32/encoding.ts against the real SDK headers: a probe
// compiled with mingw-w64 (test/windows/probe.c) prints sizeof/offsetof under Wine.
import { beforeAll, describe, expect, it } from '@jest/globals';
import * as encoding from '../../src/win32/encoding.js';
import {
  decodeIpForwardRow2,
  decodeIpInterfaceRow,
  decodeUnicastIpAddressTable,
  encodeIpForwardRow2,
  encodeIpInterfaceKey,
  setIpInterfaceForwarding,
} from '../../src/win32/iphlpapi.js';
import { OFFSETS } from '../support/win32-layout.js';
import { mustFailWhenSkipped, prepareHarness, runUnderWine, windowsHarness, type PreparedHarness } from '../support/windows.js';

type Probe = Record<string, { size: number; offsets?: Record<string, number> }> & { constants: Record<string, number> };

const harness = windowsHarness();

if (!harness.run && mustFailWhenSkipped()) {
  describe('Windows harness (probe)', () => {
    it('requires wine64 and mingw-w64 under CI', () => {
      throw new Error(`${harness.reason} (.ci/run installs them; CI=true does not allow skipping)`);
    });
  });
}

(harness.run ? describe : describe.skip)('iphlpapi struct layouts: encoders vs the mingw-w64 SDK headers', () => {
  let probe: Probe;
  let prepared: PreparedHarness;

  beforeAll(async () => {
    prepared = await prepareHarness({ agent: false });
    const r = await runUnderWine(prepared.build.probeExe, [], { timeoutMs: 120_000 });
    expect(r.code).toBe(0);
    probe = JSON.parse(r.stdout) as Probe;
  }, 300_000);

  it('the probe reports the documented x64 layout of MIB_IPFORWARD_ROW2 (netioapi.h)', () => {
    expect(probe.MIB_IPFORWARD_ROW2.size).toBe(104);
    expect(probe.MIB_IPFORWARD_ROW2.offsets).toMatchObject({ InterfaceIndex: 8, 'DestinationPrefix.PrefixLength': 40, 'NextHop.Ipv4.sin_addr': 48, Metric: 84, Protocol: 88 });
  });

  it('every SIZES entry equals sizeof() from the header', () => {
    const mismatches = Object.entries(encoding.SIZES)
      .filter(([name, size]) => probe[name]?.size !== size)
      .map(([name, size]) => `${name}: encoder ${size}, header ${probe[name]?.size ?? '(not probed: add it to test/windows/probe.c)'}`);
    expect(mismatches).toEqual([]);
  });

  it('every OFFSETS entry equals offsetof() from the header', () => {
    const flat: Record<string, number> = {};
    for (const [struct, v] of Object.entries(probe)) {
      if (struct === 'constants') continue;
      for (const [field, off] of Object.entries((v as { offsets?: Record<string, number> }).offsets ?? {})) flat[`${struct}.${field}`] = off;
    }
    const mismatches = Object.entries(OFFSETS)
      .filter(([key, off]) => flat[key] !== off)
      .map(([key, off]) => `${key}: encoder ${off}, header ${flat[key] ?? '(not probed: add it to test/windows/probe.c)'}`);
    expect(mismatches).toEqual([]);
    expect(Object.keys(OFFSETS).length).toBeGreaterThan(40);
  });

  it('the probe reports the documented x64 layout of MIB_UNICASTIPADDRESS_ROW (netioapi.h) and the nldef.h values', () => {
    // Microsoft Learn, MIB_UNICASTIPADDRESS_ROW: SOCKADDR_INET Address first, then InterfaceLuid at the 8-byte boundary.
    expect(probe.MIB_UNICASTIPADDRESS_ROW.size).toBe(80);
    expect(probe.MIB_UNICASTIPADDRESS_ROW.offsets).toMatchObject({ 'Address.Ipv6.sin6_addr': 8, InterfaceLuid: 32, SuffixOrigin: 48, OnLinkPrefixLength: 60, DadState: 64 });
    expect({
      IpPrefixOriginRouterAdvertisement: probe.constants.IpPrefixOriginRouterAdvertisement,
      IpSuffixOriginLinkLayerAddress: probe.constants.IpSuffixOriginLinkLayerAddress,
      IpSuffixOriginRandom: probe.constants.IpSuffixOriginRandom,
      IpDadStateInvalid: probe.constants.IpDadStateInvalid,
      IpDadStateDuplicate: probe.constants.IpDadStateDuplicate,
      IpDadStateDeprecated: probe.constants.IpDadStateDeprecated,
      IpDadStatePreferred: probe.constants.IpDadStatePreferred,
      IpPrefixOriginManual: probe.constants.IpPrefixOriginManual,
      IpPrefixOriginDhcp: probe.constants.IpPrefixOriginDhcp,
      NlroManual: probe.constants.NlroManual,
      NlroDHCP: probe.constants.NlroDHCP,
    }).toEqual(encoding.NL);
  });

  it("Wine's real GetUnicastIpAddressTable(AF_INET6) answers, and the decoder reads its table as the header does", async () => {
    const r = await runUnderWine(prepared.build.probeExe, ['unicast'], { timeoutMs: 120_000 });
    expect(r.code).toBe(0);
    type Row = { family: number; interfaceIndex: number; onLinkPrefixLength: number; prefixOrigin: number; suffixOrigin: number; dadState: number };
    const out = JSON.parse(r.stdout) as { status: number; hex?: string; rows?: Row[] };
    // NO_ERROR with a table, or ERROR_NOT_FOUND when the host has no IPv6 address (GetUnicastIpAddressTable, Microsoft Learn).
    expect([encoding.WIN32_ERROR.NO_ERROR, encoding.WIN32_ERROR.ERROR_NOT_FOUND]).toContain(out.status);
    if (out.status !== encoding.WIN32_ERROR.NO_ERROR) return;
    const rows = decodeUnicastIpAddressTable(Buffer.from(out.hex ?? '', 'hex'));
    expect(
      rows.map((x) => ({
        family: x.family,
        interfaceIndex: x.interfaceIndex,
        onLinkPrefixLength: x.onLinkPrefixLength,
        prefixOrigin: x.prefixOrigin,
        suffixOrigin: x.suffixOrigin,
        dadState: x.dadState,
      })),
    ).toEqual(out.rows);
  }, 180_000);

  // The IPv6 rows as bytes, both ways: `probe.exe rows6` fills them through the header's fields and prints
  // hex for the decoders; `probe.exe read6` reads the encoders' hex through the same fields.
  type CRoute = Omit<ReturnType<typeof decodeIpForwardRow2>, 'interfaceLuid'> & { interfaceLuid: string; nextHopFamily: number };
  type CInterface = Omit<ReturnType<typeof decodeIpInterfaceRow>, 'interfaceLuid'> & { interfaceLuid: string };
  const luidHex = (v: bigint): string => v.toString(16).padStart(16, '0');

  it('the decoders read an AF_INET6 MIB_IPFORWARD_ROW2 and MIB_IPINTERFACE_ROW that C filled as the header does', async () => {
    const r = await runUnderWine(prepared.build.probeExe, ['rows6'], { timeoutMs: 120_000 });
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { routeHex: string; route: CRoute; interfaceHex: string; interface: CInterface };
    // The values probe.c set, so a probe that printed nothing useful cannot pass.
    expect(out.route).toMatchObject({ family: encoding.AF_INET6, nextHopFamily: encoding.AF_INET6, destination: 'fd00:10:244:1::', prefixLength: 64 });
    expect(out.route).toMatchObject({ nextHop: 'fd00::11', interfaceIndex: 7, metric: 256, protocol: encoding.MIB_IPPROTO_NETMGMT });
    expect(out.interface).toMatchObject({ family: encoding.AF_INET6, interfaceIndex: 7, forwardingEnabled: true, nlMtu: 1450, connected: true });

    const routeBytes = Buffer.from(out.routeHex, 'hex');
    expect(routeBytes.length).toBe(encoding.SIZES.MIB_IPFORWARD_ROW2);
    const route = decodeIpForwardRow2(routeBytes);
    const { nextHopFamily, ...cRoute } = out.route;
    expect(routeBytes.readUInt16LE(encoding.MIB_IPFORWARD_ROW2_OFFSETS.NextHop_si_family)).toBe(nextHopFamily);
    expect({ ...route, interfaceLuid: luidHex(route.interfaceLuid) }).toEqual(cRoute);

    const ifBytes = Buffer.from(out.interfaceHex, 'hex');
    expect(ifBytes.length).toBe(encoding.SIZES.MIB_IPINTERFACE_ROW);
    const row = decodeIpInterfaceRow(ifBytes);
    expect({ ...row, interfaceLuid: luidHex(row.interfaceLuid) }).toEqual(out.interface);
  }, 180_000);

  it('C reads the AF_INET6 route and interface row the encoders wrote as the agent means them', async () => {
    const routeBytes = encodeIpForwardRow2({ destinationPrefix: 'fd00:10:244:1::/64', nextHop: 'fd00::11', interfaceIndex: 7, metric: 256 });
    // The agent's SetIpInterfaceEntry row: the key GetIpInterfaceEntry is asked with, then forwarding on.
    const ifBytes = setIpInterfaceForwarding(encodeIpInterfaceKey(7, undefined, encoding.AF_INET6), true);
    const r = await runUnderWine(prepared.build.probeExe, ['read6', routeBytes.toString('hex'), ifBytes.toString('hex')], { timeoutMs: 120_000 });
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { route: CRoute; interface: CInterface };
    expect(out.route).toEqual({
      interfaceLuid: luidHex(0n),
      interfaceIndex: 7,
      family: encoding.AF_INET6,
      destination: 'fd00:10:244:1::',
      prefixLength: 64,
      nextHopFamily: encoding.AF_INET6,
      nextHop: 'fd00::11',
      sitePrefixLength: 0,
      validLifetime: encoding.INFINITE_LIFETIME,
      preferredLifetime: encoding.INFINITE_LIFETIME,
      metric: 256,
      protocol: encoding.MIB_IPPROTO_NETMGMT,
      loopback: false,
      autoconfigureAddress: false,
      publish: false,
      immortal: false,
      age: 0,
      origin: 0,
    });
    expect(out.interface).toEqual({
      family: encoding.AF_INET6,
      interfaceLuid: luidHex(0n),
      interfaceIndex: 7,
      forwardingEnabled: true,
      sitePrefixLength: 0,
      metric: 0,
      nlMtu: 0,
      connected: false,
    });
  }, 180_000);

  it('constants match the headers', () => {
    expect({
      AF_INET: encoding.AF_INET,
      AF_INET6: encoding.AF_INET6,
      MIB_IPPROTO_NETMGMT: encoding.MIB_IPPROTO_NETMGMT,
      IF_MAX_STRING_SIZE: encoding.IF_MAX_STRING_SIZE,
      ERROR_OBJECT_ALREADY_EXISTS: encoding.WIN32_ERROR.ERROR_OBJECT_ALREADY_EXISTS,
      ERROR_NOT_FOUND: encoding.WIN32_ERROR.ERROR_NOT_FOUND,
      ERROR_INSUFFICIENT_BUFFER: encoding.WIN32_ERROR.ERROR_INSUFFICIENT_BUFFER,
      ERROR_INVALID_PARAMETER: encoding.WIN32_ERROR.ERROR_INVALID_PARAMETER,
    }).toEqual({
      AF_INET: probe.constants.AF_INET,
      AF_INET6: probe.constants.AF_INET6,
      MIB_IPPROTO_NETMGMT: probe.constants.MIB_IPPROTO_NETMGMT,
      IF_MAX_STRING_SIZE: probe.constants.IF_MAX_STRING_SIZE,
      ERROR_OBJECT_ALREADY_EXISTS: probe.constants.ERROR_OBJECT_ALREADY_EXISTS,
      ERROR_NOT_FOUND: probe.constants.ERROR_NOT_FOUND,
      ERROR_INSUFFICIENT_BUFFER: probe.constants.ERROR_INSUFFICIENT_BUFFER,
      ERROR_INVALID_PARAMETER: probe.constants.ERROR_INVALID_PARAMETER,
    });
  });
});

// The hand-written iphlpapi struct layouts of src/win32/encoding.ts against the real SDK headers: a probe
// compiled with mingw-w64 (test/windows/probe.c) prints sizeof/offsetof under Wine.
import { beforeAll, describe, expect, it } from '@jest/globals';
import * as encoding from '../../src/win32/encoding.js';
import { decodeUnicastIpAddressTable } from '../../src/win32/iphlpapi.js';
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
    const mismatches = Object.entries(encoding.OFFSETS)
      .filter(([key, off]) => flat[key] !== off)
      .map(([key, off]) => `${key}: encoder ${off}, header ${flat[key] ?? '(not probed: add it to test/windows/probe.c)'}`);
    expect(mismatches).toEqual([]);
    expect(Object.keys(encoding.OFFSETS).length).toBeGreaterThan(40);
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

// The hand-written iphlpapi struct layouts of src/win32/encoding.ts against the real SDK headers: a probe
// compiled with mingw-w64 (test/windows/probe.c) prints sizeof/offsetof under Wine.
import { beforeAll, describe, expect, it } from '@jest/globals';
import * as encoding from '../../src/win32/encoding.js';
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

// The HNS feature gates of src/hns/features.ts against hcsshim hcn/hcnglobals.go's version ranges (each
// case names the variable it checks there), the OS profiles the simulated node runs, and the gate the
// agent asks before it uses a feature (HnsClient.requireFeature, a coded refusal naming the version).
import { describe, expect, it } from '@jest/globals';
import { HnsError } from '../../../src/basics/errors.js';
import { HnsClient } from '../../../src/hns/client.js';
import { HNS_FEATURES, HNS_PROFILES, featureNeeds, isFeatureSupported, supportedFeatures, type HnsFeatureName } from '../../../src/hns/features.js';
import { SimulatedDataplane } from '../../../src/simulator/model.js';
import { SimulatedHnsTransport } from '../../../src/simulator/hns.js';
import { NEWEST_HNS_VERSION } from '../../../src/simulator/state.js';

const v = (Major: number, Minor: number) => ({ Major, Minor });

describe('hcsshim hcnglobals.go version ranges', () => {
  it.each<[HnsFeatureName, [number, number], boolean]>([
    ['RemoteSubnet', [9, 1], false], // RemoteSubnetVersion 9.2+
    ['RemoteSubnet', [9, 2], true],
    ['HostRoute', [9, 2], true], // HostRouteVersion 9.2+
    ['DSR', [9, 3], true], // DSRVersion: 9.3 through 9.x, and 10.2+
    ['DSR', [10, 0], false],
    ['DSR', [10, 2], true],
    ['Slash32EndpointPrefixes', [9, 9], true], // 9.3 through 9.x, and 10.4+
    ['Slash32EndpointPrefixes', [10, 3], false],
    ['Slash32EndpointPrefixes', [10, 4], true],
    ['AclSupportForProtocol252', [10, 9], false], // 11.0+
    ['AclSupportForProtocol252', [11, 0], true],
    ['SessionAffinity', [12, 0], true], // 12.0+
    ['IPv6DualStack', [11, 9], false], // 11.10+
    ['IPv6DualStack', [11, 10], true],
    ['SetPolicy', [12, 9], false], // 13.0+
    ['SetPolicy', [13, 0], true],
    ['VxlanPort', [10, 2], false], // VxlanPortVersion 10.3+
    ['VxlanPort', [10, 3], true],
    ['NestedIpSet', [15, 0], true], // 15.0+
    ['ModifyLoadbalancer', [15, 3], false], // 15.4+
    ['ModifyLoadbalancer', [15, 4], true],
  ])('%s on HNS %j: %s', (name, [major, minor], want) => {
    expect(isFeatureSupported(v(major, minor), name)).toBe(want);
  });

  it('names the version a feature needs, as the refusal says it', () => {
    expect(featureNeeds('VxlanPort')).toBe('10.3');
    expect(featureNeeds('IPv6DualStack')).toBe('11.10');
    expect(featureNeeds('DSR')).toBe('9.3 to 9.x, or 10.2');
  });

  it("lists hcsshim's SupportedFeatures names, each once", () => {
    const names = HNS_FEATURES.map((f) => f.name);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(expect.arrayContaining(['V2Api', 'RemoteSubnet', 'HostRoute', 'VxlanPort', 'SetPolicy', 'IPv6DualStack', 'ModifyLoadbalancer']));
  });
});

describe('the OS profiles (HNS version per Windows Server release)', () => {
  it('2019, 2022 and 2025, the newest the simulated default', () => {
    expect(HNS_PROFILES.map((p) => p.os)).toEqual(['Windows Server 2019', 'Windows Server 2022', 'Windows Server 2025']);
    expect(HNS_PROFILES.at(-1)!.version).toEqual(NEWEST_HNS_VERSION);
  });

  it('what each enables: 2019 no VXLAN port, dual-stack or IP sets; 2022 those; 2025 ModifyLoadbalancer', () => {
    const [s2019, s2022, s2025] = HNS_PROFILES.map((p) => supportedFeatures(p.version));
    expect(s2019).toEqual(expect.arrayContaining(['V2Api', 'RemoteSubnet', 'HostRoute']));
    expect(s2019).not.toEqual(expect.arrayContaining(['VxlanPort']));
    expect(s2019).not.toContain('IPv6DualStack');
    expect(s2019).not.toContain('SetPolicy');
    expect(s2022).toEqual(expect.arrayContaining(['VxlanPort', 'IPv6DualStack', 'SetPolicy']));
    expect(s2022).not.toContain('ModifyLoadbalancer');
    expect(s2025).toEqual(expect.arrayContaining(['VxlanPort', 'NestedIpSet', 'ModifyLoadbalancer']));
  });
});

describe('HnsClient.requireFeature (hcsshim hcn.go VxlanPortSupported and its siblings)', () => {
  const client = (version: { Major: number; Minor: number }) => new HnsClient(new SimulatedHnsTransport(new SimulatedDataplane(), { version }));

  it('answers the version when the host has the feature', async () => {
    await expect(client(v(10, 3)).requireFeature('VxlanPort', 'a VXLAN port other than 4789', 'use Port 4789')).resolves.toEqual(v(10, 3));
  });

  it('refuses with FLANNEL_ERR_HNS_VERSION naming the version it needs and the host has', async () => {
    const err = await client(v(9, 3))
      .requireFeature('VxlanPort', 'a VXLAN port other than 4789', 'use Port 4789')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HnsError);
    expect((err as HnsError).code).toBe('FLANNEL_ERR_HNS_VERSION');
    expect((err as HnsError).context).toMatchObject({ feature: 'VxlanPort', needs: '10.3', major: 9, minor: 3 });
    expect((err as HnsError).message).toContain('HNS 10.3');
  });
});

// The HNS profiles every backend's tests run on, one table for all of them: src/hns/features.ts HNS_PROFILES
// (Windows Server 2019: HNS 9.3, 2022: 13.2, 2025: 15.4), each row with its version as the state file and the
// test titles write it. Where a profile lacks a feature a test needs, the test asserts the agent's refusal
// (expectHnsVersionRefusal; from a process's log, expectHnsVersionRefusalLogged) instead of skipping: the gates
// are hcsshim hcn/hcnglobals.go's version ranges.
import { expect } from '@jest/globals';
import { isFlannelError } from '../../src/basics/errors.js';
import { HNS_PROFILES, featureNeeds, formatHnsVersion, type HnsFeatureName } from '../../src/hns/features.js';
import type { HnsVersion } from '../../src/hns/schema.js';

export interface HnsProfile {
  os: string;
  version: HnsVersion;
  /** `"<major>.<minor>"`: the state file's `hnsVersion` (docs/simulator.md) and the tests' titles. */
  hns: string;
}

/** For describe.each: `describe.each(PROFILES)('... on $os (HNS $hns)', ({ version }) => ...)`. */
export const PROFILES: readonly HnsProfile[] = HNS_PROFILES.map((p) => ({ ...p, hns: formatHnsVersion(p.version) }));

/** The newest profile: the one a slow suite runs in full (the simulator's default when the state file names none). */
export const NEWEST_PROFILE: HnsProfile = PROFILES[PROFILES.length - 1];

export const sameVersion = (a: HnsVersion, b: HnsVersion): boolean => a.Major === b.Major && a.Minor === b.Minor;

/** The context a refusal of `feature` on an HNS of `version` carries (src/hns/client.ts requireFeature). */
const refusalContext = (feature: HnsFeatureName, version: HnsVersion) => ({ feature, needs: featureNeeds(feature), major: version.Major, minor: version.Minor });

/** The agent refused `feature` on an HNS of `version`: FLANNEL_ERR_HNS_VERSION naming the versions that have it (src/hns/client.ts requireFeature). */
export function expectHnsVersionRefusal(err: unknown, feature: HnsFeatureName, version: HnsVersion): void {
  expect(isFlannelError(err, 'FLANNEL_ERR_HNS_VERSION')).toBe(true);
  expect((err as { context: Record<string, unknown> }).context).toMatchObject(refusalContext(feature, version));
}

/**
 * The same refusal from a flanneld process run with `--log-format=json`: its last error line, as src/main.ts
 * logs the error that stopped the agent (its code and context as fields).
 */
export function expectHnsVersionRefusalLogged(jsonLog: string, feature: HnsFeatureName, version: HnsVersion): void {
  const errors = jsonLog
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l['level'] === 'error');
  expect(errors.at(-1)).toMatchObject({ code: 'FLANNEL_ERR_HNS_VERSION', ...refusalContext(feature, version) });
}

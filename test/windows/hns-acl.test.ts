// Endpoint ACL rules and SetPolicy IP sets through the real DLL ABI: the Windows build's HnsClient
// (the staged dist/, on the Windows Node under Wine, test/windows/hns-acl-calls.mjs) calls
// HcnModifyNetwork, HcnModifyEndpoint and the queries through ffi-rs and the stand-in computenetwork.dll,
// which forwards each to the sim server and the one SimulatedDataplane (src/simulator/acl-objects.ts).
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HRESULT } from '../../src/hns/errors.js';
import { WindowsSimServer } from './sim-server.js';
import { CACHE, WINDOWS_DIR, mustFailWhenSkipped, prepareHarness, runUnderWine, standinOverrides, stepsOf, winPath, windowsHarness, type WineRun } from '../support/windows.js';

const harness = windowsHarness();

if (!harness.run && mustFailWhenSkipped()) {
  describe('Windows harness (HNS ACL rules)', () => {
    it('requires wine64 and mingw-w64 under CI', () => {
      throw new Error(`${harness.reason} (.ci/run installs them; CI=true does not allow skipping)`);
    });
  });
}

type Step = { step: string; ok: boolean; out?: unknown; code?: string; hresult?: number; message?: string };

const V2 = { Major: 2, Minor: 0 };
const SET = { Id: 'azure-npm-web', Name: 'web', PolicyType: 'IPSET', Values: '10.244.1.11,10.244.2.0/24' };
const ACL = { Id: 'allow-web', Protocols: '6', Action: 'Allow', Direction: 'In', RemoteAddresses: 'azure-npm-web', LocalPorts: '80', RuleType: 'Switch', Priority: 100 };

(harness.run ? describe : describe.skip)('HNS ACL rules and IP sets through the DLL ABI under Wine', () => {
  let server: WindowsSimServer;
  let raw: WineRun;
  let steps: Map<string, Step>;
  let endpointId: string;
  let dir: string;

  beforeAll(async () => {
    const prepared = await prepareHarness({ agent: true });
    mkdirSync(join(CACHE, 'runs'), { recursive: true });
    dir = mkdtempSync(join(CACHE, 'runs', 'hns-acl-'));
    server = new WindowsSimServer({ dataplane: { nodeIP: '10.0.0.2' } });
    await server.start();
    const net = server.dp.createNetwork('HcnCreateNetwork', {
      Name: 'cbr0',
      Type: 'L2Bridge',
      SchemaVersion: V2,
      Ipams: [{ Type: 'Static', Subnets: [{ IpAddressPrefix: '10.244.1.0/24' }] }],
    });
    endpointId = server.dp.createEndpoint('HcnCreateEndpoint', net.ID!, { Name: 'pod-a', SchemaVersion: V2, IpConfigurations: [{ IpAddress: '10.244.1.10' }] }).ID!;
    const dllDir = prepared.build.dllDir;
    raw = await runUnderWine(prepared.nodeExe, [winPath(join(WINDOWS_DIR, 'hns-acl-calls.mjs')), winPath(join(prepared.stage, 'dist')), winPath(dllDir), net.ID!, endpointId], {
      env: { FLANNEL_SIM_PORT: String(server.port), WINEDLLOVERRIDES: standinOverrides(dllDir) },
      timeoutMs: 120_000,
      outDir: dir,
    });
    steps = stepsOf<Step>(raw.stdout);
  }, 600_000);

  afterAll(async () => {
    if (server) writeFileSync(join(dir, 'sim-transcript.txt'), server.transcript.join('\n') + '\n');
    await server?.stop();
  });

  it('the script ran to the end without a protocol error', () => {
    expect({ code: raw.code, stderr: raw.stderr, last: [...steps.keys()].pop() }).toEqual({ code: 0, stderr: '', last: 'readAfter' });
    expect(server.protocolErrors).toEqual([]);
  });

  it('a set, then a rule naming it, land in the simulated HNS and read back through HcnQuery*Properties', () => {
    expect(steps.get('addSet')).toEqual({ step: 'addSet', ok: true });
    expect(steps.get('addAcl')).toEqual({ step: 'addAcl', ok: true });
    expect(steps.get('readAcls')).toEqual({ step: 'readAcls', ok: true, out: [ACL] });
    expect(steps.get('readSets')).toEqual({ step: 'readSets', ok: true, out: [SET] });
  });

  it('the set named by the rule cannot go first: HCN_E_ENTITY_HAS_REFERENCES crosses the ABI as HRESULT and ErrorRecord', () => {
    expect(steps.get('removeSetInUse')).toMatchObject({ step: 'removeSetInUse', ok: false, code: 'FLANNEL_ERR_HNS_CALL', hresult: HRESULT.HCN_E_ENTITY_HAS_REFERENCES });
    expect(server.transcript.some((l) => l.startsWith('HcnModifyNetwork') && /"hr":2151350316/.test(l) && /cannot be removed while it still has references/.test(l))).toBe(true);
  });

  it('the rule, then the set, are removed; one HcnModify* request per call, every handle closed', () => {
    expect(steps.get('removeAcl')).toEqual({ step: 'removeAcl', ok: true });
    expect(steps.get('removeSet')).toEqual({ step: 'removeSet', ok: true });
    expect(steps.get('readAfter')).toEqual({ step: 'readAfter', ok: true, out: { acls: [], sets: [] } });
    expect(server.dp.getEndpoint(endpointId)!.Policies).toEqual([]);
    expect(server.count('HcnModifyEndpoint')).toBe(2);
    expect(server.count('HcnModifyNetwork')).toBe(3);
    expect(server.dp.calls.get('HcnModifyEndpoint')).toBe(2);
    expect(server.openHandles).toBe(0);
    expect(server.dp.openHandles).toBe(0);
  });
});

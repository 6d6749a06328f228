// The simulated dataplane's state file under hostile edits (src/simulator/state-file.ts), and the vxlan
// driver sweeping a RemoteSubnetRoute policy that has no Settings (HCN allows a policy without Settings:
// hcsshim hcn/hcnpolicy.go NetworkPolicy has `Settings json.RawMessage` with omitempty).
import { describe, it, expect } from '@jest/globals';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { planReconcile } from '../../../src/reconcile/plan.js';
import { remoteSubnetRouteDriver } from '../../../src/backends/vxlan/policies.js';
import { parseDataplaneState, parseHnsVersion } from '../../../src/simulator/state-file.js';
import { SimulatedDataplane } from '../../../src/simulator/model.js';
import type { DataplaneState } from '../../../src/simulator/model.js';
import { DataplaneStateError, FlannelError } from '../../../src/basics/errors.js';
import { HnsClient } from '../../../src/hns/client.js';
import { SimulatedHnsTransport } from '../../../src/simulator/hns.js';
import { expectCode } from '../../support/errors.js';

const adapter = { Name: 'Ethernet', InterfaceIndex: 4, IPAddress: '10.0.0.2', PrefixLength: 24, Mtu: 1500, Forwarding: false };
const route = { DestinationPrefix: '0.0.0.0/0', NextHop: '10.0.0.1', InterfaceIndex: 4, Metric: 0 };
const network = { Name: 'flannel.4096', ID: 'A1B2C3D4-0000-0000-0000-000000000001', Type: 'Overlay', SchemaVersion: { Major: 2, Minor: 0 }, Policies: [] as unknown[] };
const doc = (o: Partial<Record<keyof DataplaneState, unknown[]>>) => JSON.stringify({ networks: [], endpoints: [], routes: [route], adapters: [adapter], ...o });

/** `fn` on a file holding `text`, removed once `fn` is done (after its promise settles, when it returns one). */
function withFile<T>(text: string, fn: (file: string) => T): T {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'state-file-'));
  const remove = () => fs.rmSync(dir, { recursive: true, force: true });
  let out: T;
  try {
    const file = path.join(dir, 'dataplane.json');
    fs.writeFileSync(file, text);
    out = fn(file);
  } catch (err) {
    remove();
    throw err;
  }
  if (out instanceof Promise) return out.finally(remove) as T;
  remove();
  return out;
}

function loadError(text: string): { err: FlannelError; file: string } {
  return withFile(text, (file) => {
    try {
      new SimulatedDataplane({ statePath: file });
    } catch (err) {
      if (err instanceof FlannelError) return { err, file };
      throw err;
    }
    throw new Error('expected the state file to be refused');
  });
}

describe('simulated dataplane state file', () => {
  const deep = '['.repeat(100_000) + ']'.repeat(100_000);
  it.each([
    ['100,000 nested [', deep],
    [
      'deep nesting inside a network',
      doc({ networks: [{ ...network, Policies: [{ Type: 'X', Settings: { x: JSON.parse('[[[[[[[[[[1]]]]]]]]]]') as unknown } }] }] }).replace('[[[[[[[[[[1]]]]]]]]]]', deep),
    ],
    ['a null network', doc({ networks: [null] })],
    ['a null endpoint', doc({ endpoints: [null] })],
    ['a null route', doc({ routes: [null] })],
    ['a null adapter', doc({ adapters: [null] })],
    ['a null policy', doc({ networks: [{ ...network, Policies: [null] }] })],
    ['a network without Name', doc({ networks: [{ ...network, Name: null }] })],
    ['Policies not an array', doc({ networks: [{ ...network, Policies: 'x' }] })],
    ['a policy with Settings null', doc({ networks: [{ ...network, Policies: [{ Type: 'RemoteSubnetRoute', Settings: null }] }] })],
    ['an Ipam subnet null', doc({ networks: [{ ...network, Ipams: [{ Type: 'Static', Subnets: [null] }] }] })],
    ['an endpoint IpConfiguration null', doc({ endpoints: [{ Name: 'e', IpConfigurations: [null] }] })],
    ['a route without NextHop', doc({ routes: [{ ...route, NextHop: undefined }] })],
    ['an adapter with a string index', doc({ adapters: [{ ...adapter, InterfaceIndex: '4' }] })],
    ['an adapter with a fractional index', doc({ adapters: [{ ...adapter, InterfaceIndex: 4.5 }] })],
    ['an adapter whose IPAddress is not IPv4', doc({ adapters: [{ ...adapter, IPAddress: '10.0.0' }] })],
    ['two adapters with one name', doc({ adapters: [adapter, { ...adapter, Name: 'ETHERNET', InterfaceIndex: 7 }] })],
    ['a faults rule without op', JSON.stringify({ ...JSON.parse(doc({})), faults: [{ hresult: '0x803B002F' }] })],
    ['an hnsVersion without a minor', JSON.stringify({ ...JSON.parse(doc({})), hnsVersion: '15' })],
    ['an hnsVersion as a number', JSON.stringify({ ...JSON.parse(doc({})), hnsVersion: 15.4 })],
    ['an hnsVersion with a build', JSON.stringify({ ...JSON.parse(doc({})), hnsVersion: '15.4.1' })],
    ['an hnsVersion with a prefix', JSON.stringify({ ...JSON.parse(doc({})), hnsVersion: 'v15.4' })],
    ['a vnicSettings mode not modelled', JSON.stringify({ ...JSON.parse(doc({})), vnicSettings: 'static' })],
    ['an adapter whose Dhcp is not a boolean', doc({ adapters: [{ ...adapter, Dhcp: 'yes' }] })],
    ['an adapter whose DnsServers are not addresses', doc({ adapters: [{ ...adapter, DnsServers: ['dns.example'] }] })],
  ])('%s: FLANNEL_ERR_DATAPLANE_STATE naming the file, never a TypeError or a stack overflow', (_what, text) => {
    const { err, file } = loadError(text);
    expect(err.code).toBe('FLANNEL_ERR_DATAPLANE_STATE');
    expect(err.context['file']).toBe(file);
  });

  it('names the bad entry', () => {
    const err = expectCode(
      () => parseDataplaneState(doc({ networks: [{ ...network, Policies: [{ Type: 'A' }, null] }] }), '/s.json'),
      DataplaneStateError,
      'FLANNEL_ERR_DATAPLANE_STATE',
    );
    expect(err.context).toEqual({ file: '/s.json', entry: '$.networks[0].Policies[1]' });
  });

  it('names a bad hnsVersion, and reads a good one as HNS reports it', () => {
    const err = expectCode(
      () => parseDataplaneState(JSON.stringify({ ...JSON.parse(doc({})), hnsVersion: '2025' }), '/s.json'),
      DataplaneStateError,
      'FLANNEL_ERR_DATAPLANE_STATE',
    );
    expect(err.context).toEqual({ file: '/s.json', entry: '$.hnsVersion' });
    expect(parseDataplaneState(JSON.stringify({ ...JSON.parse(doc({})), hnsVersion: '9.5' }), '/s.json').hnsVersion).toBe('9.5');
    expect(parseHnsVersion('13.2')).toEqual({ Major: 13, Minor: 2 });
  });

  it('fills in what an operator may leave out of a hand-added adapter', () => {
    const state = parseDataplaneState(doc({ adapters: [adapter, { Name: 'Ethernet 2', InterfaceIndex: 9, IPAddress: '192.168.5.2' }] }), '/s.json');
    expect(state.adapters[1]).toEqual({ Name: 'Ethernet 2', InterfaceIndex: 9, IPAddress: '192.168.5.2', PrefixLength: 24, Mtu: 1500, Forwarding: false });
  });

  it('accepts what the dataplane writes, and a policy without Settings', () => {
    const text = doc({ networks: [{ ...network, Policies: [{ Type: 'RemoteSubnetRoute' }] }] });
    expect(parseDataplaneState(text, '/s.json').networks[0].Policies).toEqual([{ Type: 'RemoteSubnetRoute' }]);
    const dp = new SimulatedDataplane();
    expect(parseDataplaneState(JSON.stringify(dp.snapshot()), '/s.json')).toEqual(dp.snapshot());
  });
});

describe('vxlan driver: a RemoteSubnetRoute without Settings', () => {
  it('is read as actual state and swept', async () => {
    const text = doc({
      networks: [{ ...network, Policies: [{ Type: 'RemoteSubnetRoute' }, { Type: 'ProviderAddress', Settings: { ProviderAddress: '10.0.0.2' } }] }],
    });
    await withFile(text, async (file) => {
      const dp = new SimulatedDataplane({ statePath: file });
      const driver = remoteSubnetRouteDriver(new HnsClient(new SimulatedHnsTransport(dp)), network.ID);
      const plan = planReconcile(await driver.readActual(), [], driver);
      expect(plan.remove).toEqual([{ Type: 'RemoteSubnetRoute' }]);
      await driver.remove(plan.remove);
      expect(dp.getNetworkByName('flannel.4096')?.Policies).toEqual([{ Type: 'ProviderAddress', Settings: { ProviderAddress: '10.0.0.2' } }]);
    });
  });
});

// Property: whatever HNS does with an HcnModifyNetwork carrying several policies, the agent ends with the
// same dataplane. Nobody has published whether HNS applies such a call atomically (upstream flannel's
// vxlan_network_windows.go sends one policy per call), so the simulated node models three answers (state
// file `policyBatches`, src/simulator/refusals.ts): `atomic` (all or none), `partial` (the policies
// before the refused one land, then the call fails) and `single` (more than one policy per call is
// refused). The real vxlan driver, HnsClient and simulated HNS run the same peer changes, in any batch
// size, with peers HNS refuses (an IsolationId above uint16, a malformed MAC: HCN_E_INVALID_POLICY) mixed
// in; after the resyncs every mode holds exactly the valid peers' RemoteSubnetRoute policies.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { Reconciler } from '../../src/reconcile/reconciler.js';
import { MapSink } from '../support/refusal-sink.js';
import { overlayNetworkFor } from '../../src/backends/vxlan/backend.js';
import { remoteSubnetRouteDriver, remoteSubnetRouteFor, type RemoteSubnetRoutePolicy } from '../../src/backends/vxlan/policies.js';
import type { PolicyBatches } from '../../src/simulator/refusals.js';
import { SimulatedDataplane } from '../../src/simulator/model.js';
import { HnsClient } from '../../src/hns/client.js';
import { SimulatedHnsTransport } from '../../src/simulator/hns.js';
import type { Lease } from '../../src/subnet/lease.js';
import { FakeClock, flush } from '../support/fake-clock.js';
import { ItemSet } from '../support/desired-set.js';

/** How a peer's backend data is: fine, or content HNS refuses. */
type Kind = 'ok' | 'ok2' | 'vni' | 'mac';

function lease(n: number, kind: Kind): Lease {
  const mac = kind === 'mac' ? '0e:2a:0a:00' : `0e:2a:0a:00:0${kind === 'ok2' ? 1 : 0}:${n.toString(16).padStart(2, '0')}`;
  return {
    key: `linux-${n}`,
    subnet: `10.244.${n}.0/24`,
    publicIP: `10.0.1.${n}`,
    backendType: 'vxlan',
    backendData: { VNI: kind === 'vni' ? 70000 : 4096, VtepMAC: mac },
  };
}

type Op = { kind: 'set'; n: number; data: Kind } | { kind: 'del'; n: number } | { kind: 'tick'; ms: number };

const peerArb = fc.integer({ min: 1, max: 8 });
const kindArb = fc.constantFrom<Kind>('ok', 'ok', 'ok2', 'vni', 'mac');
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('set' as const), n: peerArb, data: kindArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('del' as const), n: peerArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 2000 }) }) },
);

const policyLines = (dp: SimulatedDataplane, id: string) =>
  (dp.getNetwork(id)?.Policies ?? [])
    .filter((p) => p.Type === 'RemoteSubnetRoute')
    .map((p) => JSON.stringify(p.Settings))
    .sort();

/** Run the ops against a simulated node answering in `mode`; the RemoteSubnetRoute policies it ends with. */
async function run(mode: PolicyBatches, batch: number, initial: Op[], ops: Op[]): Promise<{ lines: string[]; modifies: number }> {
  const dp = new SimulatedDataplane();
  dp.store.state.policyBatches = mode;
  const hns = new HnsClient(new SimulatedHnsTransport(dp));
  const net = await hns.createNetwork(
    overlayNetworkFor({ type: 'vxlan', name: 'flannel.4096', vni: 4096, port: 4789, macPrefix: '0E-2A', legacyRemoteEndpoints: false }, '10.244.100.0/24', ''),
  );
  const clock = new FakeClock();
  const driver = remoteSubnetRouteDriver(hns, net.ID!, batch, 'flannel.4096');
  const items = new ItemSet<RemoteSubnetRoutePolicy>((d) => driver.desiredKey(d));

  const r = new Reconciler<RemoteSubnetRoutePolicy, RemoteSubnetRoutePolicy>({
    sink: new MapSink(),
    desired: items.store,
    driver,
    clock,
    resyncMs: 10_000,
    backoffBaseMs: 100,
    backoffCapMs: 1000,
  });
  const apply = async (op: Op) => {
    const key = `10.244.${'n' in op ? op.n : 0}.0/24`;
    if (op.kind === 'set') items.updatePeers([[key, [remoteSubnetRouteFor(lease(op.n, op.data))]]]);
    else if (op.kind === 'del') items.updatePeers([[key, undefined]]);
    else await clock.advance(op.ms);
    await flush();
  };
  // The first pass writes the initial peers in batches (where the modes differ most).
  for (const op of initial) if (op.kind === 'set') items.updatePeers([[`10.244.${op.n}.0/24`, [remoteSubnetRouteFor(lease(op.n, op.data))]]]);
  items.markListed();
  const ac = new AbortController();
  const done = r.run(ac.signal);
  await flush();
  for (const op of ops) await apply(op);
  for (let i = 0; i < 4; i++) await clock.advance(10_000);
  ac.abort();
  await done;
  return { lines: policyLines(dp, net.ID!), modifies: dp.calls.get('HcnModifyNetwork') ?? 0 };
}

/** The policies the valid peers call for, after `initial` then `ops`. */
function expected(initial: Op[], ops: Op[]): string[] {
  const want = new Map<number, Kind>();
  for (const op of [...initial, ...ops]) {
    if (op.kind === 'set') want.set(op.n, op.data);
    else if (op.kind === 'del') want.delete(op.n);
  }
  return [...want]
    .filter(([, k]) => k === 'ok' || k === 'ok2')
    .map(([n, k]) => JSON.stringify(remoteSubnetRouteFor(lease(n, k)).Settings))
    .sort();
}

describe('HcnModifyNetwork batch semantics', () => {
  it('atomic, partial and single: the agent converges to the same dataplane, the valid peers exactly', async () => {
    const setArb = fc.record({ kind: fc.constant('set' as const), n: peerArb, data: kindArb });
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 5 }), fc.array(setArb, { maxLength: 8 }), fc.array(opArb, { maxLength: 15 }), async (batch, initial, ops) => {
        const want = expected(initial, ops);
        const results = [];
        for (const mode of ['atomic', 'partial', 'single'] as const) results.push({ mode, ...(await run(mode, batch, initial, ops)) });
        for (const res of results) expect({ mode: res.mode, lines: res.lines }).toEqual({ mode: res.mode, lines: want });
      }),
      { numRuns: 30 },
    );
  }, 120_000);

  it('with one policy per call (--hns-policy-batch-size 1) the modes cannot differ: same calls, same result', async () => {
    const initial: Op[] = [1, 2, 3, 4, 5].map((n) => ({ kind: 'set', n, data: n === 3 ? 'vni' : 'ok' }));
    const runs = await Promise.all((['atomic', 'partial', 'single'] as const).map((mode) => run(mode, 1, initial, [])));
    expect(new Set(runs.map((x) => JSON.stringify(x))).size).toBe(1);
    expect(runs[0].lines).toEqual(expected(initial, []));
  });
});

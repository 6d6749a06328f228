// HnsClient's per-call timeout (--hns-call-timeout): a hung HNS call fails the operation with
// FLANNEL_ERR_HNS_CALL instead of hanging the agent; what the call returns later is released.
import { describe, expect, it } from '@jest/globals';
import { HnsError } from '../../src/errors.js';
import { Metrics, METRIC } from '../../src/health/metrics.js';
import { DEFAULT_HNS_CALL_TIMEOUT_MS, HnsClient } from '../../src/hns/client.js';
import { SimulatedHnsTransport } from '../../src/hns/simulated.js';
import type { HcnHandle, HnsTransport } from '../../src/hns/transport.js';
import { SimulatedDataplane } from '../../src/dataplane/simulated.js';
import { createDataplane } from '../../src/dataplane/factory.js';
import { parseConfig } from '../../src/config/parse.js';
import { systemClock } from '../../src/clock.js';
import { silentLogger } from '../../src/log.js';

const SCHEMA = { Major: 2, Minor: 0 };

/** The simulated transport with one method gated: it runs only when the test opens the gate. */
function gated(dp: SimulatedDataplane, method: keyof HnsTransport) {
  const inner = new SimulatedHnsTransport(dp);
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  const t = new Proxy(inner, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== method || typeof v !== 'function') return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      return async (...args: unknown[]) => {
        await gate;
        return (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
      };
    },
  });
  return { t: t as HnsTransport, open: () => open() };
}

async function rejection(p: Promise<unknown>): Promise<HnsError> {
  try {
    await p;
  } catch (err) {
    return err as HnsError;
  }
  throw new Error('expected a rejection');
}

const never = <T>() => new Promise<T>(() => undefined);

describe('HnsClient per-call timeout', () => {
  it('defaults to 120 s', () => {
    expect(DEFAULT_HNS_CALL_TIMEOUT_MS).toBe(120_000);
  });

  it('a call that never returns rejects with FLANNEL_ERR_HNS_CALL naming the call and what to check, counted as an error', async () => {
    const dp = new SimulatedDataplane();
    const inner = new SimulatedHnsTransport(dp);
    const t: HnsTransport = Object.assign(Object.create(inner) as HnsTransport, { enumerateNetworks: () => never<string>() });
    const metrics = new Metrics();
    const c = new HnsClient(t, { callTimeoutMs: 40, metrics });
    const t0 = Date.now();
    const err = await rejection(c.getNetworkByName('flannel.4096'));
    expect(Date.now() - t0).toBeGreaterThanOrEqual(35);
    expect(err).toBeInstanceOf(HnsError);
    expect(err.code).toBe('FLANNEL_ERR_HNS_CALL');
    expect(err.message).toContain('HcnEnumerateNetworks timed out after 40 ms');
    expect(err.message).toMatch(/hns and vmcompute services/);
    expect(err.message).toContain('--hns-call-timeout');
    expect(err.context).toMatchObject({ op: 'HcnEnumerateNetworks', network: 'flannel.4096', timeoutMs: 40 });
    expect(metrics.get(METRIC.dataplaneCalls, { op: 'hns.getNetworkByName' })).toBe(1);
    expect(metrics.get(METRIC.dataplaneErrors, { op: 'hns.getNetworkByName' })).toBe(1);
  });

  it('whole seconds are named in seconds', async () => {
    const t = { hnsCall: () => never<string>() } as unknown as HnsTransport;
    const err = await rejection(new HnsClient(t, { callTimeoutMs: 1000 }).version());
    expect(err.message).toMatch(/^HNSCall GET \/globals\/version timed out after 1 s /);
  });

  it('0 waits forever: a slow call completes', async () => {
    const dp = new SimulatedDataplane();
    const { t, open } = gated(dp, 'enumerateNetworks');
    const c = new HnsClient(t, { callTimeoutMs: 0 });
    const p = c.listNetworks();
    await new Promise((r) => setTimeout(r, 60));
    open();
    await expect(p).resolves.toEqual([]);
  });

  it('a call within the timeout is untouched, and a failure keeps its own code', async () => {
    const dp = new SimulatedDataplane();
    const c = new HnsClient(new SimulatedHnsTransport(dp), { callTimeoutMs: 1000 });
    const net = await c.createNetwork({ Name: 'n', Type: 'Overlay', SchemaVersion: SCHEMA });
    expect((await c.getNetwork(net.ID!))?.Name).toBe('n');
    dp.failNext('HcnOpenNetwork', 0x80070005);
    expect((await rejection(c.getNetwork(net.ID!))).code).toBe('FLANNEL_ERR_HNS_ACCESS_DENIED');
    expect(dp.openHandles).toBe(0);
  });

  it('a create that lands after the timeout: its handle is closed, and the object is found on the next read (no second create)', async () => {
    const dp = new SimulatedDataplane();
    const { t, open } = gated(dp, 'createNetwork');
    const c = new HnsClient(t, { callTimeoutMs: 30 });
    expect((await rejection(c.createNetwork({ Name: 'n', Type: 'Overlay', SchemaVersion: SCHEMA }))).code).toBe('FLANNEL_ERR_HNS_CALL');
    expect(await c.getNetworkByName('n')).toBeUndefined();
    open();
    await new Promise((r) => setTimeout(r, 10));
    expect(dp.openHandles).toBe(0);
    expect((await c.getNetworkByName('n'))?.Type).toBe('Overlay');
    expect(dp.calls.get('HcnCreateNetwork')).toBe(1);
  });

  it('a late failure is only logged (no unhandled rejection)', async () => {
    let fail!: (e: Error) => void;
    const t = { deleteNetwork: () => new Promise<void>((_, rej) => (fail = rej)) } as unknown as HnsTransport;
    const warnings: string[] = [];
    const log = silentLogger();
    log.warn = ((msg: string) => {
      warnings.push(msg);
      return log;
    }) as typeof log.warn;
    const c = new HnsClient(t, { callTimeoutMs: 20, log });
    expect((await rejection(c.deleteNetwork('X'))).code).toBe('FLANNEL_ERR_HNS_CALL');
    fail(new Error('late'));
    await new Promise((r) => setTimeout(r, 5));
    expect(warnings).toContain('an HNS call failed after its timeout');
  });

  it('a late endpoint handle is closed with HcnCloseEndpoint', async () => {
    let give!: (h: HcnHandle) => void;
    const closed: string[] = [];
    const t = {
      openEndpoint: () => new Promise<HcnHandle>((r) => (give = r)),
      closeEndpoint: async (h: HcnHandle) => void closed.push(`${h.kind} ${h.id}`),
    } as unknown as HnsTransport;
    const c = new HnsClient(t, { callTimeoutMs: 20 });
    expect((await rejection(c.getEndpoint('E1'))).code).toBe('FLANNEL_ERR_HNS_CALL');
    give({ kind: 'endpoint', id: 'E1' });
    await new Promise((r) => setTimeout(r, 5));
    expect(closed).toEqual(['endpoint E1']);
  });
});

describe('--hns-call-timeout', () => {
  const base = ['--kube-subnet-mgr', '--dataplane=simulated'];
  const env = { NODE_NAME: 'n' };
  const cfg = (argv: string[], e: Record<string, string> = {}) => {
    const r = parseConfig([...base, ...argv], { ...env, ...e }, { platform: 'linux' });
    if (r.kind !== 'run') throw new Error('expected run');
    return r.config;
  };

  it('seconds: default 120, the flag, FLANNELD_HNS_CALL_TIMEOUT, 0 = no timeout; negative is a FlagError', () => {
    expect(cfg([]).hnsCallTimeoutSeconds).toBe(120);
    expect(cfg(['--hns-call-timeout', '5']).hnsCallTimeoutSeconds).toBe(5);
    expect(cfg([], { FLANNELD_HNS_CALL_TIMEOUT: '7' }).hnsCallTimeoutSeconds).toBe(7);
    expect(cfg(['--hns-call-timeout=9'], { FLANNELD_HNS_CALL_TIMEOUT: '7' }).hnsCallTimeoutSeconds).toBe(9);
    expect(cfg(['--hns-call-timeout=0']).hnsCallTimeoutSeconds).toBe(0);
    expect(() => cfg(['--hns-call-timeout=-1'])).toThrow(/-hns-call-timeout.*0\.\.86400/);
    expect(() => cfg(['--hns-call-timeout=soon'])).toThrow(/hns-call-timeout/);
  });

  it('reaches the HnsClient of the dataplane the factory builds', async () => {
    const config = cfg(['--hns-call-timeout=1']);
    const dp = await createDataplane(config, { log: silentLogger(), metrics: new Metrics(), clock: systemClock });
    dp.simulated!.stall('HcnEnumerateNetworks', 1500);
    const t0 = Date.now();
    const err = await rejection(dp.hns.listNetworks());
    expect(err.message).toMatch(/^HcnEnumerateNetworks timed out after 1 s/);
    expect(Date.now() - t0).toBeLessThan(1400);
    await new Promise((r) => setTimeout(r, 600)); // let the stalled call end
  });
});

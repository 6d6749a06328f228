// The per-call timeout (--hns-call-timeout, src/hns/timed.ts) under HnsClient: a hung HNS call fails
// the operation with FLANNEL_ERR_HNS_CALL instead of hanging the agent; what the call returns later is
// released. Timers run on virtual time (FakeClock).
import { describe, expect, it } from '@jest/globals';
import { FlagError, HnsError } from '../../../src/basics/errors.js';
import { expectCode } from '../../support/errors.js';
import { Metrics, METRIC } from '../../../src/basics/metrics.js';
import { HnsClient } from '../../../src/hns/client.js';
import { DEFAULT_HNS_CALL_TIMEOUT_MS, withCallTimeout } from '../../../src/hns/timed.js';
import { SimulatedHnsTransport } from '../../../src/simulator/hns.js';
import type { HcnHandle, HnsTransport } from '../../../src/hns/transport.js';
import { SimulatedDataplane } from '../../../src/simulator/model.js';
import { createSimulatedNode } from '../../../src/simulator/node.js';
import { parseConfig } from '../../../src/config/parse.js';
import { silentLogger } from '../../../src/basics/log.js';
import type { Logger } from '../../../src/basics/log.js';
import { FakeClock, flush } from '../../support/fake-clock.js';
import { readMetric } from '../../support/agent-signals.js';

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

/** An HnsClient over `t` bounded by `timeoutMs` on `clock`. */
function timedClient(t: HnsTransport, timeoutMs: number, clock: FakeClock, opts: { metrics?: Metrics; log?: Logger } = {}): HnsClient {
  return new HnsClient(withCallTimeout(t, { timeoutMs, clock, log: opts.log }), opts);
}

/** `p`, plus whether it has settled yet. */
function watch<T>(p: Promise<T>): { p: Promise<T>; settled: () => boolean } {
  let settled = false;
  const q = p.finally(() => (settled = true));
  return { p: q, settled: () => settled };
}

describe('HnsClient per-call timeout', () => {
  it('defaults to 120 s', () => {
    expect(DEFAULT_HNS_CALL_TIMEOUT_MS).toBe(120_000);
  });

  it('a call that never returns rejects with FLANNEL_ERR_HNS_CALL naming the call and what to check, counted as an error', async () => {
    const dp = new SimulatedDataplane();
    const inner = new SimulatedHnsTransport(dp);
    const t: HnsTransport = Object.assign(Object.create(inner) as HnsTransport, { enumerateNetworks: () => never<string>() });
    const metrics = new Metrics();
    const clock = new FakeClock();
    const c = timedClient(t, 40, clock, { metrics });
    const call = watch(rejection(c.getNetworkByName('flannel.4096')));
    await clock.advance(39);
    expect(call.settled()).toBe(false);
    await clock.advance(1);
    const err = await call.p;
    expect(err).toBeInstanceOf(HnsError);
    expect(err.code).toBe('FLANNEL_ERR_HNS_CALL');
    expect(err.context).toMatchObject({ op: 'HcnEnumerateNetworks', network: 'flannel.4096', timeoutMs: 40 });
    expect(await readMetric(metrics, METRIC.dataplaneCalls, { op: 'hns.getNetworkByName' })).toBe(1);
    expect(await readMetric(metrics, METRIC.dataplaneErrors, { op: 'hns.getNetworkByName' })).toBe(1);
  });

  it('whole seconds are named in seconds', async () => {
    const t = { hnsCall: () => never<string>() } as unknown as HnsTransport;
    const clock = new FakeClock();
    const call = rejection(timedClient(t, 1000, clock).version());
    await clock.advance(1000);
    const err = await call;
    expect(err.message).toMatch(/^HNSCall GET \/globals\/version timed out after 1 s /);
  });

  it('0 waits forever: a slow call completes', async () => {
    const dp = new SimulatedDataplane();
    const { t, open } = gated(dp, 'enumerateNetworks');
    const clock = new FakeClock();
    const c = timedClient(t, 0, clock);
    const p = c.listNetworks();
    await clock.advance(DEFAULT_HNS_CALL_TIMEOUT_MS * 10);
    expect(clock.pending()).toEqual([]);
    open();
    await expect(p).resolves.toEqual([]);
  });

  it('a call within the timeout is untouched, and a failure keeps its own code', async () => {
    const dp = new SimulatedDataplane();
    const clock = new FakeClock();
    const c = timedClient(new SimulatedHnsTransport(dp), 1000, clock);
    const net = await c.createNetwork({ Name: 'n', Type: 'Overlay', SchemaVersion: SCHEMA });
    expect((await c.getNetwork(net.ID!))?.Name).toBe('n');
    dp.injections.failNext('HcnOpenNetwork', 0x80070005);
    expect((await rejection(c.getNetwork(net.ID!))).code).toBe('FLANNEL_ERR_HNS_ACCESS_DENIED');
    expect(dp.openHandles).toBe(0);
    expect(clock.pending()).toEqual([]); // each call's timer stops when the call settles
  });

  it('a create that lands after the timeout: its handle is closed, and the object is found on the next read (no second create)', async () => {
    const dp = new SimulatedDataplane();
    const { t, open } = gated(dp, 'createNetwork');
    const clock = new FakeClock();
    const c = timedClient(t, 30, clock);
    const create = rejection(c.createNetwork({ Name: 'n', Type: 'Overlay', SchemaVersion: SCHEMA }));
    await clock.advance(30);
    expect((await create).code).toBe('FLANNEL_ERR_HNS_CALL');
    expect(await c.getNetworkByName('n')).toBeUndefined();
    open();
    await flush();
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
    const clock = new FakeClock();
    const c = timedClient(t, 20, clock, { log });
    const del = rejection(c.deleteNetwork('X'));
    await clock.advance(20);
    expect((await del).code).toBe('FLANNEL_ERR_HNS_CALL');
    fail(new Error('late'));
    await flush();
    expect(warnings).toContain('an HNS call failed after its timeout');
  });

  it('a late endpoint handle is closed with HcnCloseEndpoint', async () => {
    let give!: (h: HcnHandle) => void;
    const closed: string[] = [];
    const t = {
      openEndpoint: () => new Promise<HcnHandle>((r) => (give = r)),
      closeEndpoint: async (h: HcnHandle) => void closed.push(`${h.kind} ${h.id}`),
    } as unknown as HnsTransport;
    const clock = new FakeClock();
    const c = timedClient(t, 20, clock);
    const get = rejection(c.getEndpoint('E1'));
    await clock.advance(20);
    expect((await get).code).toBe('FLANNEL_ERR_HNS_CALL');
    give({ kind: 'endpoint', id: 'E1' });
    await flush();
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
    expect(expectCode(() => cfg(['--hns-call-timeout=-1']), FlagError, 'FLANNEL_ERR_FLAG').context).toEqual({ flag: 'hns-call-timeout', value: -1 });
    expect(expectCode(() => cfg(['--hns-call-timeout=86401']), FlagError, 'FLANNEL_ERR_FLAG').context).toEqual({ flag: 'hns-call-timeout', value: 86401 });
    expect(expectCode(() => cfg(['--hns-call-timeout=soon']), FlagError, 'FLANNEL_ERR_FLAG').context).toEqual({
      flag: 'hns-call-timeout',
      value: 'soon',
      source: 'flag -hns-call-timeout',
    });
  });

  it('reaches the HnsClient of the simulated node --dataplane simulated builds', async () => {
    const config = cfg(['--hns-call-timeout=1']);
    const clock = new FakeClock();
    const { dataplane: dp, model } = createSimulatedNode(config, { log: silentLogger(), metrics: new Metrics(), clock });
    model.injections.stall('HcnEnumerateNetworks', 1500);
    const call = watch(rejection(dp.hns.listNetworks()));
    await clock.advance(999);
    expect(call.settled()).toBe(false);
    await clock.advance(1);
    const err = await call.p;
    expect(err).toBeInstanceOf(HnsError);
    expect(err).toMatchObject({ code: 'FLANNEL_ERR_HNS_CALL', context: { op: 'HcnEnumerateNetworks', timeoutMs: 1000 } });
    await clock.advance(500); // let the stalled call end
  });
});

// The simulated node's state-file lock (src/simulator/store.ts, docs/simulator.md) as the agent meets it: a
// lock held by another live process is waited for without blocking the event loop (/healthz took 7-9 s
// while the old synchronous spin waited), and a lock stamped in the future is still broken after
// LOCK_STALE_MS.
import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock } from '../../../src/basics/clock.js';
import { LOCK_STALE_MS, LOCK_WAIT_MS } from '../../../src/simulator/store.js';
import { SimulatedDataplane } from '../../../src/simulator/model.js';
import { SimulatedRouteTable } from '../../../src/simulator/host.js';
import { FakeClock } from '../../support/fake-clock.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sim-lock-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const route = { destinationPrefix: '10.244.9.0/24', nextHop: '10.0.0.9', interfaceIndex: 4, metric: 0 };
/** A lock as another live process holds it: our parent (alive, not us). */
const holdLock = (statePath: string, at: number) => writeFileSync(`${statePath}.lock`, JSON.stringify({ pid: process.ppid, at }));

describe('the simulated node lock', () => {
  it('a lock held by a live process is waited for while the event loop keeps turning', async () => {
    const statePath = join(dir, 'dataplane.json');
    const sim = new SimulatedDataplane({ statePath, clock: systemClock });
    holdLock(statePath, Date.now());
    let settled = false;
    const add = new SimulatedRouteTable(sim).add(route).finally(() => (settled = true));
    add.catch(() => undefined);
    // A timer set after the call completes while the call still waits (the synchronous spin held the
    // thread for LOCK_WAIT_MS, so the timer could only fire after the call had failed).
    await new Promise((r) => setTimeout(r, 0));
    expect(settled).toBe(false);
    rmSync(`${statePath}.lock`);
    await add;
    expect(sim.listRoutes(4).map((r) => r.DestinationPrefix)).toContain('10.244.9.0/24');
  });

  it('a wait for a live process’s lock ends when the agent stops (its signal aborts), and the lock is left alone', async () => {
    const statePath = join(dir, 'dataplane.json');
    const stop = new AbortController();
    const sim = new SimulatedDataplane({ statePath, clock: systemClock, signal: stop.signal });
    holdLock(statePath, Date.now());
    const held = readFileSync(`${statePath}.lock`, 'utf8');
    const add = new SimulatedRouteTable(sim).add(route);
    add.catch(() => undefined);
    stop.abort(new Error('received SIGTERM'));
    await expect(add).rejects.toThrow('received SIGTERM');
    expect(readFileSync(`${statePath}.lock`, 'utf8')).toBe(held);
  });

  it('a fresh node whose lock another process holds: the model is built without waiting; the first change creates the file', async () => {
    const statePath = join(dir, 'dataplane.json');
    holdLock(statePath, Date.now());
    const sim = new SimulatedDataplane({ statePath, clock: systemClock });
    expect(existsSync(statePath)).toBe(false);
    const add = new SimulatedRouteTable(sim).add({ ...route, interfaceIndex: sim.listAdapters()[0].InterfaceIndex });
    rmSync(`${statePath}.lock`);
    await add;
    expect(existsSync(statePath)).toBe(true);
  });

  it('a lock stamped in the future by a live process is broken once seen for LOCK_STALE_MS', async () => {
    const statePath = join(dir, 'dataplane.json');
    const clock = new FakeClock({ instant: true });
    const sim = new SimulatedDataplane({ statePath, clock });
    holdLock(statePath, clock.now() + 3_600_000);
    const start = clock.now();
    const routes = new SimulatedRouteTable(sim);
    // The call waits past LOCK_WAIT_MS for the lock to have been seen for LOCK_STALE_MS, breaks it and
    // succeeds: no call fails first (before: two failed, each after LOCK_WAIT_MS; earlier: never broken).
    await routes.add(route);
    expect(LOCK_WAIT_MS).toBeLessThan(LOCK_STALE_MS);
    expect(clock.now() - start).toBeGreaterThan(LOCK_STALE_MS);
    expect(existsSync(`${statePath}.lock`)).toBe(false);
    expect(sim.listRoutes(4).map((r) => r.DestinationPrefix)).toContain('10.244.9.0/24');
  });
});

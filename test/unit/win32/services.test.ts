// src/win32/services.ts over a fake service control manager (test/support/fake-scm.ts, each rule from
// winsvc.h's documentation): the hns service's process ID as Win32Host.hnsInstance reads it (no sc.exe),
// and a restart: stop, wait until stopped, start, wait until running, every handle closed.
import { describe, expect, it } from '@jest/globals';
import { Win32Host } from '../../../src/host/win32-host.js';
import { HostError } from '../../../src/basics/errors.js';
import { decodeServiceStatusProcess, queryService, restartService, serviceProcessId, SERVICE_STATE } from '../../../src/win32/services.js';
import type { Win32IpHelperNative } from '../../../src/win32/native.js';
import { FakeClock } from '../../support/fake-clock.js';
import { FakeScm } from '../../support/fake-scm.js';

const noIpHelper = {} as Win32IpHelperNative;

describe('the service control manager seam', () => {
  it('decodes SERVICE_STATUS_PROCESS: dwCurrentState at 4, dwProcessId at 28', () => {
    const b = Buffer.alloc(36);
    b.writeUInt32LE(4, 4);
    b.writeUInt32LE(2140, 28);
    expect(decodeServiceStatusProcess(b)).toEqual({ state: 4, processId: 2140 });
  });

  it("reads the hns service's process ID through QueryServiceStatusEx; undefined when stopped or not installed", async () => {
    const scm = new FakeScm();
    const host = new Win32Host(noIpHelper, () => ({}), scm);
    expect(await host.hnsInstance()).toBeUndefined(); // OpenServiceW: 1060
    scm.add('hns', 'stopped');
    expect(await host.hnsInstance()).toBeUndefined();
    scm.add('hns');
    expect(await host.hnsInstance()).toBe(String(scm.pidOf('hns')));
    expect(serviceProcessId(scm, 'hns')).toBe(String(scm.pidOf('hns')));
    expect(scm.openHandles).toBe(0);
    expect(await new Win32Host(noIpHelper).hnsInstance()).toBeUndefined();
  });

  it('restarts a running service: stop, wait for STOPPED, start, wait for RUNNING in a new process', async () => {
    const scm = new FakeScm(3);
    scm.add('kubeproxy');
    const before = scm.pidOf('kubeproxy');
    const pid = await restartService(scm, 'kubeproxy', new FakeClock({ instant: true }));
    expect(pid).not.toBe(before);
    expect(pid).toBe(scm.pidOf('kubeproxy'));
    expect(queryService(scm, 'kubeproxy').state).toBe(SERVICE_STATE.RUNNING);
    expect(scm.calls.filter((c) => !c.startsWith('Open'))).toEqual(['ControlService 1', 'StartServiceW']);
    expect(scm.openHandles).toBe(0);
  });

  it('a service still starting is waited for until it runs, then stopped and started (SCM refuses a stop while it starts)', async () => {
    const scm = new FakeScm(3);
    scm.add('kubeproxy', 'start-pending');
    const pid = await restartService(scm, 'kubeproxy', new FakeClock({ instant: true }));
    expect(scm.calls.filter((c) => !c.startsWith('Open'))).toEqual(['ControlService 1', 'StartServiceW']);
    expect(queryService(scm, 'kubeproxy')).toEqual({ state: SERVICE_STATE.RUNNING, processId: pid });
    expect(scm.openHandles).toBe(0);
  });

  it('starts a stopped service without stopping it', async () => {
    const scm = new FakeScm();
    scm.add('kubeproxy', 'stopped');
    await restartService(scm, 'kubeproxy', new FakeClock({ instant: true }));
    expect(scm.calls.filter((c) => !c.startsWith('Open'))).toEqual(['StartServiceW']);
    expect(queryService(scm, 'kubeproxy').state).toBe(SERVICE_STATE.RUNNING);
  });

  it('a missing service is FLANNEL_ERR_SERVICE with the Win32 status; a service that never stops times out', async () => {
    const scm = new FakeScm();
    const err = await restartService(scm, 'nope', new FakeClock({ instant: true })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HostError);
    expect(err).toMatchObject({ code: 'FLANNEL_ERR_SERVICE', context: { op: 'OpenServiceW', service: 'nope', status: 1060 } });
    const stuck = new FakeScm(Number.MAX_SAFE_INTEGER);
    stuck.add('kubeproxy');
    const late = await restartService(stuck, 'kubeproxy', new FakeClock({ instant: true }), { waitMs: 5_000 }).catch((e: unknown) => e);
    expect(late).toMatchObject({ code: 'FLANNEL_ERR_SERVICE', context: { service: 'kubeproxy', state: SERVICE_STATE.STOP_PENDING } });
    expect(stuck.openHandles).toBe(0);
  });
});

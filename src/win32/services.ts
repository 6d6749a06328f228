// Windows services through the service control manager (advapi32, winsvc.h), over the native seam
// (./native.ts): a service's state and process ID (QueryServiceStatusEx, SC_STATUS_PROCESS_INFO), and
// a restart (ControlService SERVICE_CONTROL_STOP, wait for SERVICE_STOPPED, StartServiceW, wait for
// SERVICE_RUNNING), as `Restart-Service` and AKS's HNS-restart task do (Azure/AgentBaker#2085 restarts
// kube-proxy when the hns service's process changes). Struct layouts and constants: winsvc.h
// (SERVICE_STATUS_PROCESS is 9 DWORDs, dwProcessId at byte 28; SERVICE_STATUS is the first 7) and
// winerror.h. Pure but for the native calls and the clock, so it is tested on Linux with a fake SCM.
import type { Clock } from '../basics/clock.js';
import { HostError } from '../basics/errors.js';
import { utf16z } from './encoding.js';
import type { NativePtr, Win32ServiceNative } from './native.js';

export const SC_MANAGER_CONNECT = 0x0001;
export const SERVICE_QUERY_STATUS = 0x0004;
export const SERVICE_START = 0x0010;
export const SERVICE_STOP = 0x0020;
export const SERVICE_CONTROL_STOP = 0x00000001;

export const SERVICE_STATE = { STOPPED: 1, START_PENDING: 2, STOP_PENDING: 3, RUNNING: 4, CONTINUE_PENDING: 5, PAUSE_PENDING: 6, PAUSED: 7 } as const;

/** winerror.h codes the restart treats as what they mean, not as failures. */
export const SERVICE_ERROR = {
  ACCESS_DENIED: 5,
  SERVICE_ALREADY_RUNNING: 1056,
  SERVICE_DOES_NOT_EXIST: 1060,
  SERVICE_CANNOT_ACCEPT_CTRL: 1061,
  SERVICE_NOT_ACTIVE: 1062,
} as const;

export const SERVICE_STATUS_PROCESS_SIZE = 36;
export const SERVICE_STATUS_SIZE = 28;

/** How long a stop or a start may take before the restart gives up (Restart-Service waits as long). */
export const SERVICE_WAIT_MS = 30_000;
const POLL_MS = 250;

export interface ServiceStatus {
  state: number;
  /** 0 when the service is not running. */
  processId: number;
}

export function decodeServiceStatusProcess(buf: Buffer): ServiceStatus {
  return { state: buf.readUInt32LE(4), processId: buf.readUInt32LE(28) };
}

function advice(error: number): string {
  if (error === SERVICE_ERROR.ACCESS_DENIED) return 'run flanneld as LocalSystem or an Administrator';
  if (error === SERVICE_ERROR.SERVICE_DOES_NOT_EXIST) return 'check the service name (Get-Service)';
  return 'see the System event log for the service';
}

function serviceError(op: string, service: string, error: number, what: string): HostError {
  return new HostError('FLANNEL_ERR_SERVICE', `${op} failed ${what} for service ${service} (error ${error}): ${advice(error)}`, { op, service, status: error });
}

/** Run `body` with the service opened for `access`; both SC_HANDLEs are always closed. */
function withService<T>(native: Win32ServiceNative, name: string, access: number, body: (svc: NativePtr) => T): T {
  const scm = native.openSCManager(SC_MANAGER_CONNECT);
  if (!scm.handle) throw serviceError('OpenSCManagerW', name, scm.error, 'connecting to the service control manager');
  try {
    const svc = native.openService(scm.handle, utf16z(name), access);
    if (!svc.handle) throw serviceError('OpenServiceW', name, svc.error, 'opening the service');
    try {
      return body(svc.handle);
    } finally {
      native.closeServiceHandle(svc.handle);
    }
  } finally {
    native.closeServiceHandle(scm.handle);
  }
}

function query(native: Win32ServiceNative, svc: NativePtr, name: string): ServiceStatus {
  const buf = Buffer.alloc(SERVICE_STATUS_PROCESS_SIZE);
  const r = native.queryServiceStatusEx(svc, buf);
  if (!r.ok) throw serviceError('QueryServiceStatusEx', name, r.error, 'reading the status');
  return decodeServiceStatusProcess(buf);
}

/** The service's state and process ID (QueryServiceStatusEx). */
export function queryService(native: Win32ServiceNative, name: string): ServiceStatus {
  return withService(native, name, SERVICE_QUERY_STATUS, (svc) => query(native, svc, name));
}

/** The running service's process ID; undefined when it is stopped or cannot be read. */
export function serviceProcessId(native: Win32ServiceNative, name: string): string | undefined {
  try {
    const s = queryService(native, name);
    return s.state === SERVICE_STATE.RUNNING && s.processId !== 0 ? String(s.processId) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Stop the service (when it runs), wait until it is stopped, start it and wait until it runs. A service
 * already stopping is waited for until it stops; one starting, until it runs (then it is restarted).
 * Throws HostError FLANNEL_ERR_SERVICE (context: op, service, status) when a call fails or a wait exceeds
 * `waitMs`. Returns the new process ID.
 */
export async function restartService(native: Win32ServiceNative, name: string, clock: Clock, opts: { waitMs?: number; signal?: AbortSignal } = {}): Promise<number> {
  const { waitMs = SERVICE_WAIT_MS, signal } = opts;
  const until = async (want: number, op: string): Promise<ServiceStatus> => {
    const deadline = clock.now() + waitMs;
    for (;;) {
      const s = queryService(native, name);
      if (s.state === want) return s;
      if (clock.now() >= deadline)
        throw new HostError('FLANNEL_ERR_SERVICE', `service ${name} did not reach state ${want} within ${waitMs / 1000} s after ${op} (state ${s.state})`, {
          op,
          service: name,
          state: s.state,
        });
      await clock.sleep(POLL_MS, signal);
    }
  };
  let before = queryService(native, name);
  // SCM refuses a stop while the service starts (ControlService: 1061 ERROR_SERVICE_CANNOT_ACCEPT_CTRL in
  // START_PENDING): let the start finish, then restart it (kube-proxy may be starting after an HNS restart).
  if (before.state === SERVICE_STATE.START_PENDING) before = await until(SERVICE_STATE.RUNNING, 'a start already in progress');
  if (before.state !== SERVICE_STATE.STOPPED) {
    if (before.state !== SERVICE_STATE.STOP_PENDING) {
      withService(native, name, SERVICE_STOP, (svc) => {
        const r = native.controlService(svc, SERVICE_CONTROL_STOP, Buffer.alloc(SERVICE_STATUS_SIZE));
        // Stopped meanwhile: nothing to stop.
        if (!r.ok && r.error !== SERVICE_ERROR.SERVICE_NOT_ACTIVE) throw serviceError('ControlService', name, r.error, 'stopping');
      });
    }
    await until(SERVICE_STATE.STOPPED, 'ControlService(SERVICE_CONTROL_STOP)');
  }
  withService(native, name, SERVICE_START, (svc) => {
    const r = native.startService(svc);
    // Started meanwhile (by its recovery actions or an operator): it runs, which is what was asked.
    if (!r.ok && r.error !== SERVICE_ERROR.SERVICE_ALREADY_RUNNING) throw serviceError('StartServiceW', name, r.error, 'starting');
  });
  return (await until(SERVICE_STATE.RUNNING, 'StartServiceW')).processId;
}

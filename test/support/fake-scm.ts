// A fake service control manager behind the advapi32 seam (src/win32/native.ts Win32ServiceNative), as
// the real one behaves (learn.microsoft.com winsvc.h: OpenServiceW, ControlService, StartServiceW,
// QueryServiceStatusEx):
//  * OpenServiceW of an unknown name fails with 1060 ERROR_SERVICE_DOES_NOT_EXIST;
//  * ControlService(SERVICE_CONTROL_STOP) on a stopped service fails with 1062 ERROR_SERVICE_NOT_ACTIVE;
//    on one START_PENDING or STOP_PENDING with 1061 ERROR_SERVICE_CANNOT_ACCEPT_CTRL (ControlService,
//    "Return value"); on a running one it answers at once and the service is STOP_PENDING until stopped;
//  * StartServiceW on a running service fails with 1056 ERROR_SERVICE_ALREADY_RUNNING; otherwise the
//    service is START_PENDING, then RUNNING in a new process (a new dwProcessId);
//  * SERVICE_STATUS_PROCESS: dwCurrentState at byte 4, dwProcessId at byte 28 (0 when not running).
// A pending state lasts `pendingQueries` status queries. Handles are counted so a test sees each closed.
import type { NativePtr, Win32BoolResult, Win32ServiceNative } from '../../src/win32/native.js';
import { SERVICE_STATE } from '../../src/win32/services.js';

interface FakeService {
  state: number;
  pid: number;
  pendingLeft: number;
}

export class FakeScm implements Win32ServiceNative {
  readonly services = new Map<string, FakeService>();
  readonly calls: string[] = [];
  openHandles = 0;
  private nextPid = 1000;
  private readonly handles = new Map<object, string | null>();

  constructor(private readonly pendingQueries = 2) {}

  /** A service as the test finds it: running, stopped, or starting (RUNNING after `pendingQueries` queries). */
  add(name: string, state: 'running' | 'stopped' | 'start-pending' = 'running'): void {
    if (state === 'start-pending') this.services.set(name, { state: SERVICE_STATE.START_PENDING, pid: 0, pendingLeft: this.pendingQueries });
    else this.services.set(name, { state: state === 'running' ? SERVICE_STATE.RUNNING : SERVICE_STATE.STOPPED, pid: state === 'running' ? this.nextPid++ : 0, pendingLeft: 0 });
  }

  pidOf(name: string): number {
    return this.services.get(name)?.pid ?? 0;
  }

  private handle(name: string | null): NativePtr {
    const h = {};
    this.handles.set(h, name);
    this.openHandles++;
    return h;
  }

  private service(h: NativePtr): FakeService {
    const name = this.handles.get(h);
    if (!name) throw new Error('not a service handle');
    return this.services.get(name)!;
  }

  openSCManager(): { handle: NativePtr | null; error: number } {
    this.calls.push('OpenSCManagerW');
    return { handle: this.handle(null), error: 0 };
  }

  openService(_scm: NativePtr, name: Buffer): { handle: NativePtr | null; error: number } {
    const n = name.toString('utf16le').replace(/\0+$/, '');
    this.calls.push(`OpenServiceW ${n}`);
    return this.services.has(n) ? { handle: this.handle(n), error: 0 } : { handle: null, error: 1060 };
  }

  queryServiceStatusEx(h: NativePtr, status: Buffer): Win32BoolResult {
    const s = this.service(h);
    if (s.pendingLeft > 0 && --s.pendingLeft === 0) {
      if (s.state === SERVICE_STATE.STOP_PENDING) {
        s.state = SERVICE_STATE.STOPPED;
        s.pid = 0;
      } else if (s.state === SERVICE_STATE.START_PENDING) {
        s.state = SERVICE_STATE.RUNNING;
        s.pid = this.nextPid++;
      }
    }
    status.fill(0);
    status.writeUInt32LE(0x10, 0); // SERVICE_WIN32_OWN_PROCESS
    status.writeUInt32LE(s.state, 4);
    status.writeUInt32LE(s.pid, 28);
    return { ok: true, error: 0 };
  }

  controlService(h: NativePtr, control: number): Win32BoolResult {
    const s = this.service(h);
    this.calls.push(`ControlService ${control}`);
    if (s.state === SERVICE_STATE.STOPPED) return { ok: false, error: 1062 };
    if (s.state === SERVICE_STATE.START_PENDING || s.state === SERVICE_STATE.STOP_PENDING) return { ok: false, error: 1061 };
    s.state = SERVICE_STATE.STOP_PENDING;
    s.pendingLeft = this.pendingQueries;
    return { ok: true, error: 0 };
  }

  startService(h: NativePtr): Win32BoolResult {
    const s = this.service(h);
    this.calls.push('StartServiceW');
    if (s.state !== SERVICE_STATE.STOPPED) return { ok: false, error: 1056 };
    s.state = SERVICE_STATE.START_PENDING;
    s.pendingLeft = this.pendingQueries;
    return { ok: true, error: 0 };
  }

  closeServiceHandle(h: NativePtr): boolean {
    if (!this.handles.delete(h)) return false;
    this.openHandles--;
    return true;
  }
}

// The HNS transport on the real DLLs: v1 `vmcompute.dll!HNSCall` and v2 `computenetwork.dll!Hcn*`,
// through the native seam (../win32/native.ts; ffi-rs in ../win32/ffi.ts). Mirrors hcsshim
// internal/hns (hnsCall) and hcn (checkForErrors): strings are UTF-16LE, GUIDs 16-byte structs, every
// returned string and ErrorRecord is freed with CoTaskMemFree (also when reading or the call failed),
// and a v2 call failed when the HRESULT is negative OR a non-empty ErrorRecord came back. Every failure
// is thrown through hnsError(), so codes match the simulated transport exactly.
// The native HNS calls may complete later, on another thread (../win32/ffi.ts runs them there so a
// hung HNS cannot block the event loop; ../hns/timed.ts gives up on them after --hns-call-timeout). Their
// strings are still read and freed whenever they return, and HcnClose* of a handle waits until the
// calls using that handle have returned (closing it under a running call would be a use-after-free).
import { hresultText, hnsError, HRESULT, parseErrorRecord } from './errors.js';
import type { HcnHandle, HnsTransport } from './transport.js';
import type { ErrorContext } from '../basics/errors.js';
import { guidToBuffer, hrFailed, utf16z } from '../win32/encoding.js';
import type { HcnHandleResult, HcnResult, HcnStringResult, MaybePromise, NativePtr, Win32HnsNative } from '../win32/native.js';

type Kind = HcnHandle['kind'];

/** The HcnHandle given out: the native pointer is kept in `native` (a WeakMap), never exposed. */
class Win32HcnHandle implements HcnHandle {
  /** Native calls running with this handle's pointer. */
  inUse = 0;
  /** HcnClose* requested while `inUse` > 0: runs when the last of those calls returns. */
  closeWhenIdle: (() => void) | undefined;

  constructor(
    readonly kind: Kind,
    readonly id: string,
  ) {}
}

export class Win32HnsTransport implements HnsTransport {
  private readonly native = new WeakMap<HcnHandle, NativePtr>();
  private openCount = 0;

  constructor(private readonly dll: Win32HnsNative) {}

  /** Native handles not closed yet, a close deferred behind a running call included (leak checks). */
  get openHandles(): number {
    return this.openCount;
  }

  // ================================================================ helpers

  /** Read a returned PWSTR (if any) and always free it. */
  private takeString(p: NativePtr | null): string | undefined {
    if (p === null) return undefined;
    try {
      return this.dll.readWString(p);
    } finally {
      this.dll.coTaskMemFree(p);
    }
  }

  /** Read and free both out-strings of a v2 call, whatever happens while reading either. */
  private takeBoth(result: NativePtr | null, errorRecord: NativePtr | null): { result?: string; errorRecord?: string } {
    let out: string | undefined;
    let rec: string | undefined;
    try {
      out = this.takeString(result);
    } finally {
      rec = this.takeString(errorRecord);
    }
    return { result: out, errorRecord: rec };
  }

  /** hcsshim checkForErrors: a negative HRESULT or a non-empty ErrorRecord is a failure. */
  private check(op: string, hr: number, errorRecord: string | undefined, context: ErrorContext): void {
    const rec = parseErrorRecord(errorRecord);
    if (!hrFailed(hr) && rec === undefined) return;
    const hresult = hrFailed(hr) ? hr >>> 0 : (rec?.hresult ?? HRESULT.E_FAIL);
    // hnsError falls back to Windows' text for the HRESULT when the record has none.
    throw hnsError(op, hresult, rec?.error?.trim() || undefined, context);
  }

  private guid(op: string, id: string, context: ErrorContext): Buffer {
    try {
      return guidToBuffer(id);
    } catch (err) {
      throw hnsError(op, HRESULT.E_INVALIDARG, `The parameter is incorrect. (${(err as Error).message})`, context);
    }
  }

  private wstr(op: string, s: string, context: ErrorContext): Buffer {
    try {
      return utf16z(s);
    } catch (err) {
      throw hnsError(op, HRESULT.E_INVALIDARG, `The parameter is incorrect. (${(err as Error).message})`, context);
    }
  }

  private nativeOf(op: string, h: HcnHandle, kind: Kind): NativePtr {
    const p = this.native.get(h);
    if (p === undefined || h.kind !== kind) throw hnsError(op, HRESULT.E_HANDLE, hresultText(HRESULT.E_HANDLE), { [`${kind}Id`]: h.id });
    return p;
  }

  /** Run a native call with `h`'s pointer; an HcnClose* of `h` meanwhile waits until it has returned. */
  private async using<T>(op: string, h: HcnHandle, kind: Kind, call: (p: NativePtr) => MaybePromise<T>): Promise<T> {
    const p = this.nativeOf(op, h, kind);
    const wh = h as Win32HcnHandle;
    wh.inUse++;
    try {
      return await call(p);
    } finally {
      wh.inUse--;
      const close = wh.inUse === 0 ? wh.closeWhenIdle : undefined;
      if (close) {
        wh.closeWhenIdle = undefined;
        close();
      }
    }
  }

  /** A v2 call returning a string (enumerate / query). */
  private async stringCall(op: string, context: ErrorContext, call: () => MaybePromise<HcnStringResult>): Promise<string> {
    const r = await call();
    const { result, errorRecord } = this.takeBoth(r.result, r.errorRecord);
    this.check(op, r.hr, errorRecord, context);
    return result ?? '';
  }

  /** A v2 call returning only an ErrorRecord (modify / delete). */
  private async plainCall(op: string, context: ErrorContext, call: () => MaybePromise<HcnResult>): Promise<void> {
    const r = await call();
    const { errorRecord } = this.takeBoth(null, r.errorRecord);
    this.check(op, r.hr, errorRecord, context);
  }

  /** A v2 call returning a handle (create / open); a handle that came with a failure is closed. */
  private async handleCall(op: string, kind: Kind, id: string, context: ErrorContext, call: () => MaybePromise<HcnHandleResult>): Promise<HcnHandle> {
    const r = await call();
    const close = (p: NativePtr): void => {
      try {
        this.closeNative(kind, p);
      } catch {
        // the original failure is what matters
      }
    };
    let errorRecord: string | undefined;
    try {
      errorRecord = this.takeBoth(null, r.errorRecord).errorRecord;
      this.check(op, r.hr, errorRecord, context);
    } catch (err) {
      if (r.handle !== null) close(r.handle);
      throw err;
    }
    if (r.handle === null) throw hnsError(op, HRESULT.E_HANDLE, `${op} succeeded but returned no handle`, context);
    const h = new Win32HcnHandle(kind, id.toUpperCase());
    this.native.set(h, r.handle);
    this.openCount++;
    return h;
  }

  /** HcnClose* of a pointer of `kind`. */
  private closeNative(kind: Kind, p: NativePtr): number {
    if (kind === 'network') return this.dll.hcnCloseNetwork(p);
    if (kind === 'endpoint') return this.dll.hcnCloseEndpoint(p);
    return this.dll.hcnCloseLoadBalancer(p);
  }

  private closeCall(op: string, h: HcnHandle, kind: Kind): void {
    const p = this.nativeOf(op, h, kind);
    // Forget the pointer first: whatever HcnClose* answers, it must never be closed twice (and no new
    // call can start on it).
    this.native.delete(h);
    const close = (): number => {
      this.openCount--;
      return this.closeNative(kind, p);
    };
    const wh = h as Win32HcnHandle;
    if (wh.inUse > 0) {
      // A call still runs with this pointer (it timed out above us): close it when that call returns.
      // Nobody waits for that close, so its HRESULT goes nowhere.
      wh.closeWhenIdle = () => {
        try {
          close();
        } catch {
          // nothing to report to
        }
      };
      return;
    }
    const hr = close();
    if (hrFailed(hr)) throw hnsError(op, hr, hresultText(hr >>> 0), { [`${kind}Id`]: h.id });
  }

  // ================================================================ v1

  async hnsCall(method: 'GET' | 'POST' | 'DELETE', path: string, request: string): Promise<string> {
    const op = `HNSCall ${method} ${path}`;
    const context = { path };
    const r = await this.dll.hnsCall(this.wstr(op, method, context), this.wstr(op, path, context), this.wstr(op, request, context));
    const response = this.takeString(r.response);
    if (hrFailed(r.hr)) {
      // A failed HNSCall may still carry an envelope with HNS's own text.
      let text: string | undefined;
      try {
        const env = JSON.parse(response ?? '') as { Error?: unknown };
        if (typeof env.Error === 'string' && env.Error !== '') text = env.Error;
      } catch {
        text = response?.trim() || undefined;
      }
      throw hnsError(op, r.hr, text, context);
    }
    if (response === undefined) throw hnsError(op, HRESULT.E_FAIL, 'HNSCall succeeded but returned no response', context);
    return response;
  }

  // ================================================================ v2 networks

  async enumerateNetworks(query: string): Promise<string> {
    const op = 'HcnEnumerateNetworks';
    return this.stringCall(op, {}, () => this.dll.hcnEnumerateNetworks(this.wstr(op, query, {})));
  }

  async createNetwork(id: string, settings: string): Promise<HcnHandle> {
    const op = 'HcnCreateNetwork';
    const ctx = { networkId: id };
    return this.handleCall(op, 'network', id, ctx, () => this.dll.hcnCreateNetwork(this.guid(op, id, ctx), this.wstr(op, settings, ctx)));
  }

  async openNetwork(id: string): Promise<HcnHandle> {
    const op = 'HcnOpenNetwork';
    const ctx = { networkId: id };
    return this.handleCall(op, 'network', id, ctx, () => this.dll.hcnOpenNetwork(this.guid(op, id, ctx)));
  }

  async modifyNetwork(network: HcnHandle, settings: string): Promise<void> {
    const op = 'HcnModifyNetwork';
    const ctx = { networkId: network.id };
    return this.plainCall(op, ctx, () => this.using(op, network, 'network', (p) => this.dll.hcnModifyNetwork(p, this.wstr(op, settings, ctx))));
  }

  async queryNetworkProperties(network: HcnHandle, query: string): Promise<string> {
    const op = 'HcnQueryNetworkProperties';
    const ctx = { networkId: network.id };
    return this.stringCall(op, ctx, () => this.using(op, network, 'network', (p) => this.dll.hcnQueryNetworkProperties(p, this.wstr(op, query, ctx))));
  }

  async deleteNetwork(id: string): Promise<void> {
    const op = 'HcnDeleteNetwork';
    const ctx = { networkId: id };
    return this.plainCall(op, ctx, () => this.dll.hcnDeleteNetwork(this.guid(op, id, ctx)));
  }

  closeNetwork(network: HcnHandle): Promise<void> {
    return new Promise<void>((resolve) => {
      this.closeCall('HcnCloseNetwork', network, 'network');
      resolve();
    });
  }

  // ================================================================ v2 endpoints

  async enumerateEndpoints(query: string): Promise<string> {
    const op = 'HcnEnumerateEndpoints';
    return this.stringCall(op, {}, () => this.dll.hcnEnumerateEndpoints(this.wstr(op, query, {})));
  }

  async createEndpoint(network: HcnHandle, id: string, settings: string): Promise<HcnHandle> {
    const op = 'HcnCreateEndpoint';
    const ctx = { networkId: network.id, endpointId: id };
    return this.handleCall(op, 'endpoint', id, ctx, () =>
      this.using(op, network, 'network', (p) => this.dll.hcnCreateEndpoint(p, this.guid(op, id, ctx), this.wstr(op, settings, ctx))),
    );
  }

  async openEndpoint(id: string): Promise<HcnHandle> {
    const op = 'HcnOpenEndpoint';
    const ctx = { endpointId: id };
    return this.handleCall(op, 'endpoint', id, ctx, () => this.dll.hcnOpenEndpoint(this.guid(op, id, ctx)));
  }

  async modifyEndpoint(endpoint: HcnHandle, settings: string): Promise<void> {
    const op = 'HcnModifyEndpoint';
    const ctx = { endpointId: endpoint.id };
    return this.plainCall(op, ctx, () => this.using(op, endpoint, 'endpoint', (p) => this.dll.hcnModifyEndpoint(p, this.wstr(op, settings, ctx))));
  }

  async queryEndpointProperties(endpoint: HcnHandle, query: string): Promise<string> {
    const op = 'HcnQueryEndpointProperties';
    const ctx = { endpointId: endpoint.id };
    return this.stringCall(op, ctx, () => this.using(op, endpoint, 'endpoint', (p) => this.dll.hcnQueryEndpointProperties(p, this.wstr(op, query, ctx))));
  }

  async deleteEndpoint(id: string): Promise<void> {
    const op = 'HcnDeleteEndpoint';
    const ctx = { endpointId: id };
    return this.plainCall(op, ctx, () => this.dll.hcnDeleteEndpoint(this.guid(op, id, ctx)));
  }

  closeEndpoint(endpoint: HcnHandle): Promise<void> {
    return new Promise<void>((resolve) => {
      this.closeCall('HcnCloseEndpoint', endpoint, 'endpoint');
      resolve();
    });
  }

  // ================================================================ v2 load balancers (read only)

  async enumerateLoadBalancers(query: string): Promise<string> {
    const op = 'HcnEnumerateLoadBalancers';
    return this.stringCall(op, {}, () => this.dll.hcnEnumerateLoadBalancers(this.wstr(op, query, {})));
  }

  async openLoadBalancer(id: string): Promise<HcnHandle> {
    const op = 'HcnOpenLoadBalancer';
    const ctx = { loadBalancerId: id };
    return this.handleCall(op, 'loadBalancer', id, ctx, () => this.dll.hcnOpenLoadBalancer(this.guid(op, id, ctx)));
  }

  async queryLoadBalancerProperties(loadBalancer: HcnHandle, query: string): Promise<string> {
    const op = 'HcnQueryLoadBalancerProperties';
    const ctx = { loadBalancerId: loadBalancer.id };
    return this.stringCall(op, ctx, () => this.using(op, loadBalancer, 'loadBalancer', (p) => this.dll.hcnQueryLoadBalancerProperties(p, this.wstr(op, query, ctx))));
  }

  closeLoadBalancer(loadBalancer: HcnHandle): Promise<void> {
    return new Promise<void>((resolve) => {
      this.closeCall('HcnCloseLoadBalancer', loadBalancer, 'loadBalancer');
      resolve();
    });
  }
}

// The one module that touches ffi-rs: it implements the native seam (./native.ts) on the real DLLs.
// Loaded lazily (the win32 dataplane is imported on demand), so nothing native loads elsewhere.
//
// Rules this file keeps (ffi-rs 1.3.7's pitfalls, found under Wine):
// - a library is `open()`ed before any `load()` from it, once per process;
// - every string/struct argument is a Buffer (DataType.U8Array, zero-copy): UTF-16LE built by
//   ./encoding.ts, never DataType.String/WString (WString is UTF-32 on Linux);
// - out-params (`PWSTR *`, `HCN_NETWORK *`, `PMIB_IPFORWARD_TABLE2 *`) are 8-byte cells made by
//   `createPointer`, read back with `unwrapPointer`, and freed with `freePointer`; a NULL result is
//   detected on the cell's bytes and `isNullPointer`, never by a String return type;
// - returned PWSTRs are read page by page (never past the page holding the NUL) and are freed by the
//   caller (the transports) with CoTaskMemFree, which always comes from the system's ole32.dll;
// - the HNS calls (HNSCall, Hcn* but HcnClose*) run with `runInNewThread: true` (a libuv worker
//   thread; load() returns a Promise), so a hung HNS leaves the event loop free. ffi-rs passes a
//   U8Array as the Buffer's own memory and an External as its address, and holds no reference to
//   either: the argument Buffers and the out-param cells are kept (and the cells freed) only once the
//   Promise has settled.
import { createRequire } from 'node:module';
import path from 'node:path';
import type * as FfiRs from 'ffi-rs';
import { errorMessage, UnsupportedError } from '../basics/errors.js';
import { findUtf16Nul } from './encoding.js';
import type { HcnHandleResult, HcnResult, HcnStringResult, NativePtr, Win32BoolResult, Win32DnsNative, Win32Native, Win32ServiceNative } from './native.js';

export type Ffi = typeof FfiRs;
type JsExternal = FfiRs.JsExternal;

/**
 * Load ffi-rs: a normal `import()`, else (flanneld.exe built as a Node single executable, where the
 * addon ships beside the exe) `require` relative to the executable.
 */
async function loadFfi(): Promise<Ffi> {
  let first: unknown;
  try {
    const mod = (await import('ffi-rs')) as unknown as Ffi & { default?: Ffi };
    return mod.default ?? mod;
  } catch (err) {
    first = err;
  }
  try {
    return createRequire(process.execPath)('ffi-rs') as Ffi;
  } catch {
    throw new UnsupportedError(
      'FLANNEL_ERR_UNSUPPORTED',
      `cannot load the ffi-rs native addon (${errorMessage(first)}); install ffi-rs and its win32-x64 addon (@yuuang/ffi-rs-win32-x64-msvc) beside flanneld`,
    );
  }
}

/** The DLLs the win32 dataplane calls. ole32 (CoTaskMemFree), advapi32 (the SCM) and kernel32 are always the system's. */
export type DllName = 'vmcompute' | 'computenetwork' | 'iphlpapi' | 'ole32' | 'advapi32' | 'kernel32';

const SYSTEM_ONLY: ReadonlySet<DllName> = new Set(['ole32', 'advapi32', 'kernel32']);

/** Where a DLL is loaded from: `<dir>\<name>.dll` when `dllDir` is set (the system-only DLLs excepted), else the bare name. */
export function dllPath(name: DllName, dllDir: string): string {
  return dllDir && !SYSTEM_ONLY.has(name) ? path.win32.join(dllDir, `${name}.dll`) : `${name}.dll`;
}

/** A native pointer: the ffi-rs External plus its numeric address (read from the out-param cell). */
class FfiPtr {
  constructor(
    readonly ext: JsExternal,
    readonly addr: bigint,
  ) {}
}

function ext(p: NativePtr): JsExternal {
  if (!(p instanceof FfiPtr)) throw new TypeError('not a native pointer from this process');
  return p.ext;
}

/** Hold a reference until here (the native code on a worker thread reads what `_values` points at). */
function keepAlive(_values: unknown): void {
  // nothing: being called with the values is the point
}

const PAGE = 4096;
/** Refuse to walk a "string" longer than this (64 MiB): a missing NUL is a bug, not data. */
const MAX_WSTRING_BYTES = 64 * 1024 * 1024;

/** Libraries opened in this process (ffi-rs keys are global): key -> path. */
const opened = new Map<string, string>();

export interface FfiNativeOptions {
  /** `--win32-dll-dir`; '' = the system's DLLs by bare name. */
  dllDir: string;
  /** Override how a DLL name becomes a path (local smoke tests against non-Windows stand-ins). */
  pathOf?: (name: DllName) => string;
}

export class FfiWin32Native implements Win32Native, Win32DnsNative, Win32ServiceNative {
  private readonly D: typeof FfiRs.DataType;
  private readonly pathOf: (name: DllName) => string;

  constructor(
    private readonly ffi: Ffi,
    opts: FfiNativeOptions,
  ) {
    this.D = ffi.DataType;
    this.pathOf = opts.pathOf ?? ((name) => dllPath(name, opts.dllDir));
  }

  /** Open the DLL once (before any load from it); returns the ffi-rs library key. */
  private lib(name: DllName): string {
    const file = this.pathOf(name);
    const key = `flanneld:${file}`;
    if (!opened.has(key)) {
      try {
        this.ffi.open({ library: key, path: file });
      } catch (err) {
        const hint = name === 'vmcompute' || name === 'computenetwork' ? 'HNS needs the Windows Containers feature (Windows Server 2019 or later)' : 'check --win32-dll-dir';
        throw new UnsupportedError('FLANNEL_ERR_UNSUPPORTED', `cannot load ${file} (${errorMessage(err)}); ${hint}`, { dll: file });
      }
      opened.set(key, file);
    }
    return key;
  }

  private call<T>(dll: DllName, funcName: string, retType: FfiRs.DataType, paramsType: FfiRs.DataType[], paramsValue: unknown[]): T {
    return this.ffi.load({ library: this.lib(dll), funcName, retType, paramsType, paramsValue }) as T;
  }

  /**
   * The same call on a worker thread (`runInNewThread`). `paramsValue` (the Buffers the native code
   * reads) stays referenced until the call has returned, whenever that is.
   */
  private async callInThread<T>(dll: DllName, funcName: string, retType: FfiRs.DataType, paramsType: FfiRs.DataType[], paramsValue: unknown[]): Promise<T> {
    const pending = this.ffi.load({ library: this.lib(dll), funcName, retType, paramsType, paramsValue, runInNewThread: true }) as Promise<T>;
    try {
      return await pending;
    } finally {
      keepAlive(paramsValue);
    }
  }

  /** `withCells` for a call that completes later: the cells are freed once `body` has settled. */
  private async withCellsAsync<T>(n: number, body: (cells: JsExternal[][]) => Promise<T>): Promise<T> {
    const cells: JsExternal[][] = [];
    try {
      for (let i = 0; i < n; i++) cells.push(this.ffi.createPointer({ paramsType: [this.D.I64], paramsValue: [0] }));
      return await body(cells);
    } finally {
      for (const c of cells) this.ffi.freePointer({ paramsType: [this.D.I64], paramsValue: c, pointerType: this.ffi.PointerType.RsPointer });
    }
  }

  /** Run `body` with `n` zeroed 8-byte out-param cells; the cells are always freed. */
  private withCells<T>(n: number, body: (cells: JsExternal[][]) => T): T {
    const cells: JsExternal[][] = [];
    try {
      for (let i = 0; i < n; i++) cells.push(this.ffi.createPointer({ paramsType: [this.D.I64], paramsValue: [0] }));
      return body(cells);
    } finally {
      for (const c of cells) this.ffi.freePointer({ paramsType: [this.D.I64], paramsValue: c, pointerType: this.ffi.PointerType.RsPointer });
    }
  }

  /** The pointer the callee stored in an out-param cell, or null for NULL. */
  private take(cell: JsExternal[]): FfiPtr | null {
    const addr = this.ffi.createExternalBuffer(cell[0], 8).readBigUInt64LE(0);
    if (addr === 0n) return null;
    const inner = this.ffi.unwrapPointer(cell)[0];
    return this.ffi.isNullPointer(inner) ? null : new FfiPtr(inner, addr);
  }

  // ================================================================ vmcompute.dll

  hnsCall(method: Buffer, pathArg: Buffer, request: Buffer): Promise<{ hr: number; response: NativePtr | null }> {
    const D = this.D;
    return this.withCellsAsync(1, async ([resp]) => {
      const hr = await this.callInThread<number>('vmcompute', 'HNSCall', D.I32, [D.U8Array, D.U8Array, D.U8Array, D.External], [method, pathArg, request, resp[0]]);
      return { hr, response: this.take(resp) };
    });
  }

  // ================================================================ computenetwork.dll

  /** `HRESULT f(...args, PWSTR *Result, PWSTR *ErrorRecord)`. */
  private hcnString(funcName: string, types: FfiRs.DataType[], values: unknown[]): Promise<HcnStringResult> {
    const D = this.D;
    return this.withCellsAsync(2, async ([res, err]) => {
      const hr = await this.callInThread<number>('computenetwork', funcName, D.I32, [...types, D.External, D.External], [...values, res[0], err[0]]);
      return { hr, result: this.take(res), errorRecord: this.take(err) };
    });
  }

  /** `HRESULT f(...args, HCN_X *Handle, PWSTR *ErrorRecord)`. */
  private hcnHandle(funcName: string, types: FfiRs.DataType[], values: unknown[]): Promise<HcnHandleResult> {
    const D = this.D;
    return this.withCellsAsync(2, async ([h, err]) => {
      const hr = await this.callInThread<number>('computenetwork', funcName, D.I32, [...types, D.External, D.External], [...values, h[0], err[0]]);
      return { hr, handle: this.take(h), errorRecord: this.take(err) };
    });
  }

  /** `HRESULT f(...args, PWSTR *ErrorRecord)`. */
  private hcnPlain(funcName: string, types: FfiRs.DataType[], values: unknown[]): Promise<HcnResult> {
    const D = this.D;
    return this.withCellsAsync(1, async ([err]) => {
      const hr = await this.callInThread<number>('computenetwork', funcName, D.I32, [...types, D.External], [...values, err[0]]);
      return { hr, errorRecord: this.take(err) };
    });
  }

  hcnEnumerateNetworks(query: Buffer): Promise<HcnStringResult> {
    return this.hcnString('HcnEnumerateNetworks', [this.D.U8Array], [query]);
  }
  hcnCreateNetwork(id: Buffer, settings: Buffer): Promise<HcnHandleResult> {
    return this.hcnHandle('HcnCreateNetwork', [this.D.U8Array, this.D.U8Array], [id, settings]);
  }
  hcnOpenNetwork(id: Buffer): Promise<HcnHandleResult> {
    return this.hcnHandle('HcnOpenNetwork', [this.D.U8Array], [id]);
  }
  hcnModifyNetwork(network: NativePtr, settings: Buffer): Promise<HcnResult> {
    return this.hcnPlain('HcnModifyNetwork', [this.D.External, this.D.U8Array], [ext(network), settings]);
  }
  hcnQueryNetworkProperties(network: NativePtr, query: Buffer): Promise<HcnStringResult> {
    return this.hcnString('HcnQueryNetworkProperties', [this.D.External, this.D.U8Array], [ext(network), query]);
  }
  hcnDeleteNetwork(id: Buffer): Promise<HcnResult> {
    return this.hcnPlain('HcnDeleteNetwork', [this.D.U8Array], [id]);
  }
  hcnCloseNetwork(network: NativePtr): number {
    return this.call<number>('computenetwork', 'HcnCloseNetwork', this.D.I32, [this.D.External], [ext(network)]);
  }

  hcnEnumerateEndpoints(query: Buffer): Promise<HcnStringResult> {
    return this.hcnString('HcnEnumerateEndpoints', [this.D.U8Array], [query]);
  }
  hcnCreateEndpoint(network: NativePtr, id: Buffer, settings: Buffer): Promise<HcnHandleResult> {
    return this.hcnHandle('HcnCreateEndpoint', [this.D.External, this.D.U8Array, this.D.U8Array], [ext(network), id, settings]);
  }
  hcnOpenEndpoint(id: Buffer): Promise<HcnHandleResult> {
    return this.hcnHandle('HcnOpenEndpoint', [this.D.U8Array], [id]);
  }
  hcnModifyEndpoint(endpoint: NativePtr, settings: Buffer): Promise<HcnResult> {
    return this.hcnPlain('HcnModifyEndpoint', [this.D.External, this.D.U8Array], [ext(endpoint), settings]);
  }
  hcnQueryEndpointProperties(endpoint: NativePtr, query: Buffer): Promise<HcnStringResult> {
    return this.hcnString('HcnQueryEndpointProperties', [this.D.External, this.D.U8Array], [ext(endpoint), query]);
  }
  hcnDeleteEndpoint(id: Buffer): Promise<HcnResult> {
    return this.hcnPlain('HcnDeleteEndpoint', [this.D.U8Array], [id]);
  }
  hcnCloseEndpoint(endpoint: NativePtr): number {
    return this.call<number>('computenetwork', 'HcnCloseEndpoint', this.D.I32, [this.D.External], [ext(endpoint)]);
  }

  hcnEnumerateLoadBalancers(query: Buffer): Promise<HcnStringResult> {
    return this.hcnString('HcnEnumerateLoadBalancers', [this.D.U8Array], [query]);
  }
  hcnOpenLoadBalancer(id: Buffer): Promise<HcnHandleResult> {
    return this.hcnHandle('HcnOpenLoadBalancer', [this.D.U8Array], [id]);
  }
  hcnQueryLoadBalancerProperties(loadBalancer: NativePtr, query: Buffer): Promise<HcnStringResult> {
    return this.hcnString('HcnQueryLoadBalancerProperties', [this.D.External, this.D.U8Array], [ext(loadBalancer), query]);
  }
  hcnCloseLoadBalancer(loadBalancer: NativePtr): number {
    return this.call<number>('computenetwork', 'HcnCloseLoadBalancer', this.D.I32, [this.D.External], [ext(loadBalancer)]);
  }

  // ================================================================ strings and memory

  /**
   * Read a NUL-terminated UTF-16LE string. Memory is readable page-wise, so the view grows to the end
   * of the page being scanned and never past the page holding the terminator.
   */
  readWString(p: NativePtr): string {
    const ptr = p as FfiPtr;
    if (!(ptr instanceof FfiPtr)) throw new TypeError('not a native pointer from this process');
    let len = PAGE - Number(ptr.addr % BigInt(PAGE));
    let from = 0;
    for (;;) {
      const view = this.ffi.createExternalBuffer(ptr.ext, len);
      const nul = findUtf16Nul(view, from);
      if (nul >= 0) return view.toString('utf16le', 0, nul);
      from = len - (len % 2);
      len += PAGE;
      if (len > MAX_WSTRING_BYTES) throw new RangeError('a string returned by a Windows DLL has no NUL terminator within 64 MiB');
    }
  }

  coTaskMemFree(p: NativePtr): void {
    this.call<undefined>('ole32', 'CoTaskMemFree', this.D.Void, [this.D.External], [ext(p)]);
  }

  readBytes(p: NativePtr, length: number): Buffer {
    return Buffer.from(this.ffi.createExternalBuffer(ext(p), length));
  }

  // ================================================================ iphlpapi.dll

  private netio(funcName: string, types: FfiRs.DataType[], values: unknown[]): number {
    return this.call<number>('iphlpapi', funcName, this.D.U32, types, values) >>> 0;
  }

  getIpForwardTable2(family: number): { status: number; table: NativePtr | null } {
    const D = this.D;
    return this.withCells(1, ([t]) => {
      const status = this.netio('GetIpForwardTable2', [D.I16, D.External], [family, t[0]]);
      return { status, table: this.take(t) };
    });
  }
  getUnicastIpAddressTable(family: number): { status: number; table: NativePtr | null } {
    const D = this.D;
    return this.withCells(1, ([t]) => {
      const status = this.netio('GetUnicastIpAddressTable', [D.I16, D.External], [family, t[0]]);
      return { status, table: this.take(t) };
    });
  }
  freeMibTable(table: NativePtr): void {
    this.call<undefined>('iphlpapi', 'FreeMibTable', this.D.Void, [this.D.External], [ext(table)]);
  }
  initializeIpForwardEntry(row: Buffer): void {
    this.call<undefined>('iphlpapi', 'InitializeIpForwardEntry', this.D.Void, [this.D.U8Array], [row]);
  }
  createIpForwardEntry2(row: Buffer): number {
    return this.netio('CreateIpForwardEntry2', [this.D.U8Array], [row]);
  }
  deleteIpForwardEntry2(row: Buffer): number {
    return this.netio('DeleteIpForwardEntry2', [this.D.U8Array], [row]);
  }
  initializeUnicastIpAddressEntry(row: Buffer): void {
    this.call<undefined>('iphlpapi', 'InitializeUnicastIpAddressEntry', this.D.Void, [this.D.U8Array], [row]);
  }
  createUnicastIpAddressEntry(row: Buffer): number {
    return this.netio('CreateUnicastIpAddressEntry', [this.D.U8Array], [row]);
  }
  getIpAddrTable(table: Buffer, size: Buffer, order: boolean): number {
    return this.netio('GetIpAddrTable', [this.D.U8Array, this.D.U8Array, this.D.I32], [table, size, order ? 1 : 0]);
  }
  convertInterfaceIndexToLuid(index: number, luid: Buffer): number {
    return this.netio('ConvertInterfaceIndexToLuid', [this.D.U32, this.D.U8Array], [index >>> 0, luid]);
  }
  convertInterfaceLuidToAlias(luid: Buffer, alias: Buffer, lengthChars: number): number {
    return this.netio('ConvertInterfaceLuidToAlias', [this.D.U8Array, this.D.U8Array, this.D.I64], [luid, alias, lengthChars]);
  }
  initializeIpInterfaceEntry(row: Buffer): void {
    this.call<undefined>('iphlpapi', 'InitializeIpInterfaceEntry', this.D.Void, [this.D.U8Array], [row]);
  }
  getIpInterfaceEntry(row: Buffer): number {
    return this.netio('GetIpInterfaceEntry', [this.D.U8Array], [row]);
  }
  setIpInterfaceEntry(row: Buffer): number {
    return this.netio('SetIpInterfaceEntry', [this.D.U8Array], [row]);
  }

  // ================================================================ iphlpapi.dll: DNS settings (DNS_INTERFACE_SETTINGS, ./dns-settings.ts)

  convertInterfaceLuidToGuid(luid: Buffer, guid: Buffer): number {
    return this.netio('ConvertInterfaceLuidToGuid', [this.D.U8Array, this.D.U8Array], [luid, guid]);
  }
  /** The GUID by value is the address of its copy on x64 (./native.ts): a U8Array, as every struct pointer here. */
  getInterfaceDnsSettings(guid: Buffer, settings: Buffer): number {
    return this.netio('GetInterfaceDnsSettings', [this.D.U8Array, this.D.U8Array], [guid, settings]);
  }
  freeInterfaceDnsSettings(settings: Buffer): void {
    this.call<undefined>('iphlpapi', 'FreeInterfaceDnsSettings', this.D.Void, [this.D.U8Array], [settings]);
  }
  setInterfaceDnsSettings(guid: Buffer, settings: Buffer): number {
    return this.netio('SetInterfaceDnsSettings', [this.D.U8Array, this.D.U8Array], [guid, settings]);
  }

  /** The pointer at a numeric address, made the way an out-param is read: the address written into a cell, then `take`n. */
  private pointerAt<T>(address: bigint, body: (p: FfiPtr) => T): T {
    if (address === 0n) throw new RangeError('a NULL pointer where a struct member should name memory');
    return this.withCells(1, ([cell]) => {
      this.ffi.createExternalBuffer(cell[0], 8).writeBigUInt64LE(address, 0);
      const p = this.take(cell);
      if (!p) throw new RangeError('a NULL pointer where a struct member should name memory');
      return body(p);
    });
  }

  readWStringAt(address: bigint): string {
    return this.pointerAt(address, (p) => this.readWString(p));
  }

  /** `LPVOID CoTaskMemAlloc(SIZE_T)` (ole32, returned as its address), then the bytes copied in through a view of that memory. */
  copyToNative(bytes: Buffer): bigint {
    const address = BigInt(this.call<bigint>('ole32', 'CoTaskMemAlloc', this.D.BigInt, [this.D.I64], [bytes.length]));
    if (address === 0n) throw new RangeError(`CoTaskMemAlloc could not allocate ${bytes.length} bytes`);
    this.pointerAt(address, (p) => bytes.copy(this.ffi.createExternalBuffer(p.ext, bytes.length)));
    return address;
  }

  freeNative(address: bigint): void {
    this.call<undefined>('ole32', 'CoTaskMemFree', this.D.Void, [this.D.BigInt], [address]);
  }

  // ================================================================ advapi32.dll (the service control manager)

  /** GetLastError() of this thread, read right after the failed call (nothing else runs in between). */
  private lastError(): number {
    return this.call<number>('kernel32', 'GetLastError', this.D.U32, [], []) >>> 0;
  }

  /** A returned SC_HANDLE: null for NULL (with GetLastError), never a String return type. */
  private scHandle(h: JsExternal): { handle: NativePtr | null; error: number } {
    if (this.ffi.isNullPointer(h)) return { handle: null, error: this.lastError() };
    return { handle: new FfiPtr(h, 0n), error: 0 };
  }

  private bool(funcName: string, types: FfiRs.DataType[], values: unknown[]): Win32BoolResult {
    const r = this.call<number>('advapi32', funcName, this.D.I32, types, values);
    return r !== 0 ? { ok: true, error: 0 } : { ok: false, error: this.lastError() };
  }

  openSCManager(access: number): { handle: NativePtr | null; error: number } {
    const D = this.D;
    // NULL machine and database names: I64 0, as NULL pointer arguments are passed here.
    return this.scHandle(this.call<JsExternal>('advapi32', 'OpenSCManagerW', D.External, [D.I64, D.I64, D.U32], [0, 0, access >>> 0]));
  }
  openService(scm: NativePtr, name: Buffer, access: number): { handle: NativePtr | null; error: number } {
    const D = this.D;
    return this.scHandle(this.call<JsExternal>('advapi32', 'OpenServiceW', D.External, [D.External, D.U8Array, D.U32], [ext(scm), name, access >>> 0]));
  }
  queryServiceStatusEx(service: NativePtr, status: Buffer): Win32BoolResult {
    const D = this.D;
    const needed = Buffer.alloc(4);
    return this.bool('QueryServiceStatusEx', [D.External, D.I32, D.U8Array, D.U32, D.U8Array], [ext(service), 0, status, status.length, needed]);
  }
  controlService(service: NativePtr, control: number, status: Buffer): Win32BoolResult {
    const D = this.D;
    return this.bool('ControlService', [D.External, D.U32, D.U8Array], [ext(service), control >>> 0, status]);
  }
  startService(service: NativePtr): Win32BoolResult {
    const D = this.D;
    return this.bool('StartServiceW', [D.External, D.U32, D.I64], [ext(service), 0, 0]);
  }
  closeServiceHandle(handle: NativePtr): boolean {
    return this.call<number>('advapi32', 'CloseServiceHandle', this.D.I32, [this.D.External], [ext(handle)]) !== 0;
  }
}

/** The real native layer: ffi-rs loaded lazily, DLLs from `dllDir` ('' = the system's). */
export async function loadWin32Native(dllDir: string): Promise<Win32Native & Win32DnsNative & Win32ServiceNative> {
  return new FfiWin32Native(await loadFfi(), { dllDir });
}

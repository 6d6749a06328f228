// The thin native seam under the win32 transports: one method per DLL entry point, Buffers in, raw
// statuses and opaque pointers out. The signatures are those hcsshim declares (internal/hns/hns.go,
// hcn/hcn.go) and the SDK's netioapi.h / iphlpapi.h. ./ffi.ts implements it with ffi-rs on Windows
// (and under Wine with stand-in DLLs); unit tests implement it with fakes. Everything that decides
// what a result means (freeing, closing, error mapping, struct layout) lives above this seam, in the
// transports, so it is tested on Linux. Types only: importing this file loads nothing native.

/** An opaque native pointer (an ffi-rs External on Windows, anything in a fake). NULL is `null`. */
export type NativePtr = object;

/** A v2 call's HRESULT and its `PWSTR *ErrorRecord` out-param (to read and free). */
export interface HcnResult {
  hr: number;
  errorRecord: NativePtr | null;
}

/** ... plus a `PWSTR *` result (Networks / Endpoints / Properties). */
export interface HcnStringResult extends HcnResult {
  result: NativePtr | null;
}

/** ... plus an `HCN_NETWORK *` / `HCN_ENDPOINT *` out-param. */
export interface HcnHandleResult extends HcnResult {
  handle: NativePtr | null;
}

/** A result now (fakes, quick calls) or later (a call running on another thread). */
export type MaybePromise<T> = T | Promise<T>;

/**
 * vmcompute.dll, computenetwork.dll and ole32.dll. String arguments are NUL-terminated UTF-16LE
 * Buffers (PCWSTR), GUIDs are 16-byte Buffers (REFGUID). Returned strings are owned by the caller:
 * read them with `readWString` and free them with `coTaskMemFree`.
 *
 * The HNS calls (`hnsCall`, `hcn*` except `hcnClose*`) may return a Promise: ./ffi.ts runs them on a
 * worker thread so a hung HNS cannot block the event loop. Until that Promise settles the native
 * code still uses the arguments: the implementation keeps the Buffers alive, and the caller must not
 * close a handle passed in (the transport defers HcnClose* until the calls using it are done).
 */
export interface Win32HnsNative {
  /** `HRESULT HNSCall(PCWSTR method, PCWSTR path, PCWSTR request, PWSTR *response)` (vmcompute.dll). */
  hnsCall(method: Buffer, path: Buffer, request: Buffer): MaybePromise<{ hr: number; response: NativePtr | null }>;

  hcnEnumerateNetworks(query: Buffer): MaybePromise<HcnStringResult>;
  hcnCreateNetwork(id: Buffer, settings: Buffer): MaybePromise<HcnHandleResult>;
  hcnOpenNetwork(id: Buffer): MaybePromise<HcnHandleResult>;
  hcnModifyNetwork(network: NativePtr, settings: Buffer): MaybePromise<HcnResult>;
  hcnQueryNetworkProperties(network: NativePtr, query: Buffer): MaybePromise<HcnStringResult>;
  hcnDeleteNetwork(id: Buffer): MaybePromise<HcnResult>;
  /** `HRESULT HcnCloseNetwork(HCN_NETWORK)`. */
  hcnCloseNetwork(network: NativePtr): number;

  hcnEnumerateEndpoints(query: Buffer): MaybePromise<HcnStringResult>;
  hcnCreateEndpoint(network: NativePtr, id: Buffer, settings: Buffer): MaybePromise<HcnHandleResult>;
  hcnOpenEndpoint(id: Buffer): MaybePromise<HcnHandleResult>;
  hcnModifyEndpoint(endpoint: NativePtr, settings: Buffer): MaybePromise<HcnResult>;
  hcnQueryEndpointProperties(endpoint: NativePtr, query: Buffer): MaybePromise<HcnStringResult>;
  hcnDeleteEndpoint(id: Buffer): MaybePromise<HcnResult>;
  hcnCloseEndpoint(endpoint: NativePtr): number;

  /** The load-balancer reads (computenetwork.h HcnEnumerateLoadBalancers ... HcnCloseLoadBalancer); the agent writes none. */
  hcnEnumerateLoadBalancers(query: Buffer): MaybePromise<HcnStringResult>;
  hcnOpenLoadBalancer(id: Buffer): MaybePromise<HcnHandleResult>;
  hcnQueryLoadBalancerProperties(loadBalancer: NativePtr, query: Buffer): MaybePromise<HcnStringResult>;
  hcnCloseLoadBalancer(loadBalancer: NativePtr): number;

  /** Read a NUL-terminated UTF-16LE string the DLL returned (does not free it). */
  readWString(p: NativePtr): string;
  /** `void CoTaskMemFree(LPVOID)` (ole32.dll, always the system's). */
  coTaskMemFree(p: NativePtr): void;
}

/** iphlpapi.dll (netioapi.h / iphlpapi.h). Statuses are NETIO_STATUS / DWORD Win32 error codes. */
export interface Win32IpHelperNative {
  /** `GetIpForwardTable2(ADDRESS_FAMILY, PMIB_IPFORWARD_TABLE2 *)`; free the table with `freeMibTable`. */
  getIpForwardTable2(family: number): { status: number; table: NativePtr | null };
  /** `GetUnicastIpAddressTable(ADDRESS_FAMILY, PMIB_UNICASTIPADDRESS_TABLE *)`; free the table with `freeMibTable`. */
  getUnicastIpAddressTable(family: number): { status: number; table: NativePtr | null };
  /** `VOID FreeMibTable(PVOID)`. */
  freeMibTable(table: NativePtr): void;
  /** Copy `length` bytes of native memory at `p` into a new Buffer. */
  readBytes(p: NativePtr, length: number): Buffer;

  /** `VOID InitializeIpForwardEntry(PMIB_IPFORWARD_ROW2)`: fills defaults into the 104-byte row. */
  initializeIpForwardEntry(row: Buffer): void;
  createIpForwardEntry2(row: Buffer): number;
  deleteIpForwardEntry2(row: Buffer): number;

  /** `DWORD GetIpAddrTable(PMIB_IPADDRTABLE, PULONG pdwSize, BOOL bOrder)`; `size` is a 4-byte in/out Buffer. */
  getIpAddrTable(table: Buffer, size: Buffer, order: boolean): number;
  /** `ConvertInterfaceIndexToLuid(NET_IFINDEX, PNET_LUID)`; `luid` is an 8-byte out Buffer. */
  convertInterfaceIndexToLuid(index: number, luid: Buffer): number;
  /** `ConvertInterfaceLuidToAlias(const NET_LUID *, PWSTR, SIZE_T Length)`; `lengthChars` in WCHARs. */
  convertInterfaceLuidToAlias(luid: Buffer, alias: Buffer, lengthChars: number): number;

  /** `VOID InitializeUnicastIpAddressEntry(PMIB_UNICASTIPADDRESS_ROW)`: fills defaults into the 80-byte row. */
  initializeUnicastIpAddressEntry(row: Buffer): void;
  /** `NETIO_STATUS CreateUnicastIpAddressEntry(const MIB_UNICASTIPADDRESS_ROW *)`. */
  createUnicastIpAddressEntry(row: Buffer): number;

  /** `VOID InitializeIpInterfaceEntry(PMIB_IPINTERFACE_ROW)` on the 168-byte row. */
  initializeIpInterfaceEntry(row: Buffer): void;
  getIpInterfaceEntry(row: Buffer): number;
  setIpInterfaceEntry(row: Buffer): number;
}

/**
 * The iphlpapi DNS settings calls (netioapi.h; Windows 10 build 19041 and later, so an iphlpapi.dll without
 * the exports, such as Windows Server 2019's, throws on the first call) and the native memory their
 * DNS_INTERFACE_SETTINGS pointer members need. The struct is a Buffer (../win32/dns-settings.ts).
 */
export interface Win32DnsNative {
  /** `NETIO_STATUS ConvertInterfaceLuidToGuid(const NET_LUID *, GUID *)`; `guid` is a 16-byte out Buffer. */
  convertInterfaceLuidToGuid(luid: Buffer, guid: Buffer): number;
  /**
   * `NETIOAPI_API GetInterfaceDnsSettings(GUID Interface, DNS_INTERFACE_SETTINGS *Settings)`. The GUID is
   * passed by value, which the x64 calling convention passes as the address of a copy (a 16-byte argument:
   * Microsoft Learn, "x64 calling convention", Parameter passing): the Buffer is that copy. What the call
   * stores in the struct's PWSTRs is freed with `freeInterfaceDnsSettings`.
   */
  getInterfaceDnsSettings(guid: Buffer, settings: Buffer): number;
  /** `VOID FreeInterfaceDnsSettings(DNS_INTERFACE_SETTINGS *)`: frees the strings GetInterfaceDnsSettings stored. */
  freeInterfaceDnsSettings(settings: Buffer): void;
  /** `NETIOAPI_API SetInterfaceDnsSettings(GUID Interface, const DNS_INTERFACE_SETTINGS *Settings)`. */
  setInterfaceDnsSettings(guid: Buffer, settings: Buffer): number;
  /** The NUL-terminated UTF-16LE string at a native address a struct member holds (not freed here). */
  readWStringAt(address: bigint): string;
  /** Copy `bytes` into native memory (CoTaskMemAlloc) a struct's pointer member can name; its address. Free with `freeNative`. */
  copyToNative(bytes: Buffer): bigint;
  /** `CoTaskMemFree` of what `copyToNative` returned. */
  freeNative(address: bigint): void;
}

/** A BOOL-returning advapi32 call: nonzero = success; `error` is GetLastError() right after a failure (else 0). */
export interface Win32BoolResult {
  ok: boolean;
  error: number;
}

/**
 * advapi32.dll's service control manager calls (winsvc.h), always the system's DLL. Names are
 * NUL-terminated UTF-16LE Buffers; SC_HANDLEs are opaque pointers, closed with `closeServiceHandle`.
 */
export interface Win32ServiceNative {
  /** `SC_HANDLE OpenSCManagerW(NULL, NULL, DWORD dwDesiredAccess)` on the local machine's active database. */
  openSCManager(access: number): { handle: NativePtr | null; error: number };
  /** `SC_HANDLE OpenServiceW(SC_HANDLE hSCManager, LPCWSTR lpServiceName, DWORD dwDesiredAccess)`. */
  openService(scm: NativePtr, name: Buffer, access: number): { handle: NativePtr | null; error: number };
  /** `BOOL QueryServiceStatusEx(SC_HANDLE, SC_STATUS_PROCESS_INFO, LPBYTE, DWORD cbBufSize, LPDWORD)` into a 36-byte SERVICE_STATUS_PROCESS. */
  queryServiceStatusEx(service: NativePtr, status: Buffer): Win32BoolResult;
  /** `BOOL ControlService(SC_HANDLE, DWORD dwControl, LPSERVICE_STATUS)`; `status` is a 28-byte SERVICE_STATUS out-param. */
  controlService(service: NativePtr, control: number, status: Buffer): Win32BoolResult;
  /** `BOOL StartServiceW(SC_HANDLE, 0, NULL)`. */
  startService(service: NativePtr): Win32BoolResult;
  /** `BOOL CloseServiceHandle(SC_HANDLE)`. */
  closeServiceHandle(handle: NativePtr): boolean;
}

export type Win32Native = Win32HnsNative & Win32IpHelperNative;

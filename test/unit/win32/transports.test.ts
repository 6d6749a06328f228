// The win32 transports' error handling on a fake native layer (no DLLs): HRESULTs, ErrorRecords,
// CoTaskMemFree on every returned string (also on failure), handles closed, route/host statuses.
import { describe, it, expect, beforeEach } from '@jest/globals';
import { HnsError, HostError, RouteError, FlannelError } from '../../../src/basics/errors.js';
import { HnsClient } from '../../../src/hns/client.js';
import { withCallTimeout } from '../../../src/hns/timed.js';
import { FakeClock, flush } from '../../support/fake-clock.js';
import { Win32HnsTransport } from '../../../src/hns/win32-transport.js';
import { Win32Host } from '../../../src/host/win32-host.js';
import { selectIPv6Address } from '../../../src/host/select.js';
import { Win32RouteTable, win32StatusAdvice } from '../../../src/routes/iphlpapi-routes.js';
import { MIB_IPINTERFACE_ROW_OFFSETS, fromUtf16z } from '../../../src/win32/encoding.js';
import { guidFromBuffer } from '../../support/win32-layout.js';
import { ipAddrTableLength, decodeIpForwardRow2, decodeUnicastIpAddressRow, routeOriginSetting } from '../../../src/win32/iphlpapi.js';
import { expectCode } from '../../support/errors.js';
import { encodeIpAddrTable, encodeIpForwardTable2, encodeUnicastIpAddressTable, type UnicastAddressSpec } from '../../support/iphlpapi-tables.js';
import type { HcnHandleResult, HcnResult, HcnStringResult, MaybePromise, NativePtr, Win32Native } from '../../../src/win32/native.js';
import { Metrics, METRIC } from '../../../src/basics/metrics.js';
import { readMetric, readMetricTotal } from '../../support/agent-signals.js';

type Str = { s: string; freed: boolean };
type Handle = { id: string; closed: boolean };

const NET = '7E1B4F2A-0C3D-4E5F-8A9B-112233445566';
const ERROR_RECORD = '{"Success":false,"Error":"The parameter is incorrect. ","ErrorCode":2147942487}';

/** A scriptable fake of the DLLs: every string it returns must come back through coTaskMemFree. */
class FakeNative implements Win32Native {
  strings: Str[] = [];
  handles: Handle[] = [];
  frees = 0;
  calls: string[] = [];
  next: Partial<{ hr: number; result: string | null; errorRecord: string | null; handle: boolean }> = {};
  hnsResponse: { hr: number; response: string | null } = { hr: 0, response: '{"Success":true,"Output":{"Major":13,"Minor":2}}' };
  readFails = false;
  closes = 0;
  /** A native call that ran with a handle already closed (a use-after-free on Windows). */
  usedAfterClose: string[] = [];
  /** The next call whose name starts with `name` answers later (a call on a worker thread), with `next`. */
  private holdRule: { name: string; next: FakeNative['next'] } | undefined;
  held: { name: string; release: () => void }[] = [];

  hold(name: string, next: FakeNative['next'] = {}): void {
    this.holdRule = { name, next };
  }
  /** Let every held call return. */
  releaseAll(): void {
    for (const h of this.held.splice(0)) h.release();
  }
  private later<T>(name: string, make: (n: FakeNative['next']) => T, n: FakeNative['next'], uses?: NativePtr): MaybePromise<T> {
    const rule = this.holdRule;
    const check = () => {
      if (uses && (uses as Handle).closed) this.usedAfterClose.push(name);
    };
    if (!rule || !name.startsWith(rule.name)) {
      check();
      return make(n);
    }
    this.holdRule = undefined;
    return new Promise<T>((resolve) =>
      this.held.push({
        name,
        release: () => {
          check();
          resolve(make(rule.next));
        },
      }),
    );
  }

  // iphlpapi state
  routes = [{ destinationPrefix: '0.0.0.0/0', nextHop: '10.0.0.1', interfaceIndex: 4, metric: 25 }];
  tableStatus = 0;
  /** What GetUnicastIpAddressTable answers: the rows, a failing status, or a throw (an iphlpapi.dll without the export). */
  unicast: UnicastAddressSpec[] | number | Error = 50;
  unicastReads = 0;
  tablesFreed = 0;
  tablesGiven = 0;
  createStatus = 0;
  deleteStatus = 0;
  lastRow: Buffer | undefined;
  forwarding = new Map<number, boolean>([[4, false]]);
  setStatus = 0;

  private str(s: string | null | undefined): NativePtr | null {
    if (s === null || s === undefined) return null;
    const p: Str = { s, freed: false };
    this.strings.push(p);
    return p;
  }
  /** One v2 call: `kind` says which out-params the real function has. */
  private v2(name: string, kind: 'string' | 'handle' | 'plain', uses?: NativePtr): MaybePromise<HcnStringResult & HcnHandleResult> {
    this.calls.push(name);
    const next = this.next;
    this.next = {};
    return this.later(
      name,
      (n) => {
        const handle = kind !== 'handle' || n.handle === false ? null : ({ id: name, closed: false } as Handle);
        if (handle) this.handles.push(handle);
        const result = kind === 'string' ? this.str(n.result === undefined ? '[]' : n.result) : null;
        return { hr: n.hr ?? 0, result, errorRecord: this.str(n.errorRecord), handle };
      },
      next,
      uses,
    );
  }
  get leaked(): Str[] {
    return this.strings.filter((s) => !s.freed);
  }
  get openHandles(): Handle[] {
    return this.handles.filter((h) => !h.closed);
  }

  hnsCall(method: Buffer, path: Buffer, request: Buffer): MaybePromise<{ hr: number; response: NativePtr | null }> {
    const name = `HNSCall ${fromUtf16z(method)} ${fromUtf16z(path)} ${fromUtf16z(request)}`;
    this.calls.push(name);
    const r = this.hnsResponse;
    return this.later(name, () => ({ hr: r.hr, response: this.str(r.response) }), {});
  }
  hcnEnumerateNetworks(_q: Buffer): MaybePromise<HcnStringResult> {
    return this.v2('HcnEnumerateNetworks', 'string');
  }
  hcnCreateNetwork(id: Buffer, _s: Buffer): MaybePromise<HcnHandleResult> {
    return this.v2(`HcnCreateNetwork ${guidFromBuffer(id)}`, 'handle');
  }
  hcnOpenNetwork(id: Buffer): MaybePromise<HcnHandleResult> {
    return this.v2(`HcnOpenNetwork ${guidFromBuffer(id)}`, 'handle');
  }
  hcnModifyNetwork(n: NativePtr, _s: Buffer): MaybePromise<HcnResult> {
    return this.v2('HcnModifyNetwork', 'plain', n);
  }
  hcnQueryNetworkProperties(n: NativePtr, _q: Buffer): MaybePromise<HcnStringResult> {
    return this.v2('HcnQueryNetworkProperties', 'string', n);
  }
  hcnDeleteNetwork(_id: Buffer): MaybePromise<HcnResult> {
    return this.v2('HcnDeleteNetwork', 'plain');
  }
  hcnCloseNetwork(n: NativePtr): number {
    if ((n as Handle).closed) throw new Error('double close');
    (n as Handle).closed = true;
    this.closes++;
    return 0;
  }
  hcnEnumerateEndpoints(_q: Buffer): MaybePromise<HcnStringResult> {
    return this.v2('HcnEnumerateEndpoints', 'string');
  }
  hcnCreateEndpoint(n: NativePtr, _id: Buffer, _s: Buffer): MaybePromise<HcnHandleResult> {
    return this.v2('HcnCreateEndpoint', 'handle', n);
  }
  hcnOpenEndpoint(_id: Buffer): MaybePromise<HcnHandleResult> {
    return this.v2('HcnOpenEndpoint', 'handle');
  }
  hcnModifyEndpoint(e: NativePtr, _s: Buffer): MaybePromise<HcnResult> {
    return this.v2('HcnModifyEndpoint', 'plain', e);
  }
  hcnQueryEndpointProperties(e: NativePtr, _q: Buffer): MaybePromise<HcnStringResult> {
    return this.v2('HcnQueryEndpointProperties', 'string', e);
  }
  hcnDeleteEndpoint(_id: Buffer): MaybePromise<HcnResult> {
    return this.v2('HcnDeleteEndpoint', 'plain');
  }
  hcnCloseEndpoint(e: NativePtr): number {
    if ((e as Handle).closed) throw new Error('double close');
    (e as Handle).closed = true;
    this.closes++;
    return 0;
  }
  hcnEnumerateLoadBalancers(_q: Buffer): MaybePromise<HcnStringResult> {
    return this.v2('HcnEnumerateLoadBalancers', 'string');
  }
  hcnOpenLoadBalancer(id: Buffer): MaybePromise<HcnHandleResult> {
    return this.v2(`HcnOpenLoadBalancer ${guidFromBuffer(id)}`, 'handle');
  }
  hcnQueryLoadBalancerProperties(l: NativePtr, _q: Buffer): MaybePromise<HcnStringResult> {
    return this.v2('HcnQueryLoadBalancerProperties', 'string', l);
  }
  hcnCloseLoadBalancer(l: NativePtr): number {
    return this.hcnCloseEndpoint(l);
  }
  readWString(p: NativePtr): string {
    if (this.readFails) throw new RangeError('boom');
    const s = p as Str;
    if (s.freed) throw new Error('use after free');
    return s.s;
  }
  coTaskMemFree(p: NativePtr): void {
    const s = p as Str;
    if (s.freed) throw new Error('double free');
    s.freed = true;
    this.frees++;
  }

  getIpForwardTable2(_family: number): { status: number; table: NativePtr | null } {
    if (this.tableStatus !== 0) return { status: this.tableStatus, table: null };
    this.tablesGiven++;
    return { status: 0, table: { bytes: encodeIpForwardTable2(this.routes) } };
  }
  getUnicastIpAddressTable(family: number): { status: number; table: NativePtr | null } {
    this.unicastReads++;
    if (this.unicast instanceof Error) throw this.unicast;
    if (typeof this.unicast === 'number') return { status: this.unicast, table: null };
    expect([0, 23]).toContain(family);
    this.tablesGiven++;
    return { status: 0, table: { bytes: encodeUnicastIpAddressTable(this.unicast.filter((r) => family === 0 || !r.address.includes('.'))) } };
  }
  unicastCreateStatus = 0;
  initializeUnicastIpAddressEntry(row: Buffer): void {
    row.fill(0);
    row.writeUInt8(0xff, 60); // OnLinkPrefixLength left invalid, as Windows leaves it
  }
  createUnicastIpAddressEntry(row: Buffer): number {
    this.lastRow = Buffer.from(row);
    return this.unicastCreateStatus;
  }
  freeMibTable(_t: NativePtr): void {
    this.tablesFreed++;
  }
  readBytes(p: NativePtr, length: number): Buffer {
    return Buffer.from((p as { bytes: Buffer }).bytes.subarray(0, length));
  }
  initializeIpForwardEntry(row: Buffer): void {
    row.fill(0);
    row.writeUInt32LE(0xdead, 84); // "invalid" metric the encoder must overwrite
  }
  createIpForwardEntry2(row: Buffer): number {
    this.lastRow = Buffer.from(row);
    return this.createStatus;
  }
  deleteIpForwardEntry2(row: Buffer): number {
    this.lastRow = Buffer.from(row);
    return this.deleteStatus;
  }
  getIpAddrTable(table: Buffer, size: Buffer, _order: boolean): number {
    const data = encodeIpAddrTable([
      { address: '127.0.0.1', interfaceIndex: 1, prefixLength: 8 },
      { address: '10.0.0.2', interfaceIndex: 4, prefixLength: 24 },
      { address: '0.0.0.0', interfaceIndex: 5, prefixLength: 0 },
      ...Array.from({ length: 20 }, (_, i) => ({ address: `192.168.${i}.1`, interfaceIndex: 100 + i, prefixLength: 24 })),
    ]);
    if (size.readUInt32LE(0) < data.length) {
      size.writeUInt32LE(data.length, 0);
      return 122;
    }
    data.copy(table);
    return 0;
  }
  convertInterfaceIndexToLuid(index: number, luid: Buffer): number {
    if (index >= 100 && index % 2 === 1) return 1168; // vanished
    luid.writeBigUInt64LE(BigInt(index) + 0x60000n, 0);
    return 0;
  }
  convertInterfaceLuidToAlias(luid: Buffer, alias: Buffer, lengthChars: number): number {
    expect(lengthChars).toBe(257);
    const idx = Number(luid.readBigUInt64LE(0) - 0x60000n);
    alias.write(idx === 4 ? 'vEthernet (Ethernet 2)\0' : `Ethernet ${idx}\0`, 'utf16le');
    return 0;
  }
  initializeIpInterfaceEntry(row: Buffer): void {
    row.fill(0);
    row.writeUInt32LE(0xffffffff, MIB_IPINTERFACE_ROW_OFFSETS.SitePrefixLength);
  }
  getIpInterfaceEntry(row: Buffer): number {
    const idx = row.readUInt32LE(16);
    if (row.readUInt16LE(0) !== 2) return 87;
    if (idx !== 4 && idx < 100) return 1168;
    row.writeUInt32LE(idx === 4 ? 1450 : 1500, MIB_IPINTERFACE_ROW_OFFSETS.NlMtu);
    row.writeUInt32LE(64, MIB_IPINTERFACE_ROW_OFFSETS.SitePrefixLength);
    row[MIB_IPINTERFACE_ROW_OFFSETS.ForwardingEnabled] = this.forwarding.get(idx) ? 1 : 0;
    return 0;
  }
  setIpInterfaceEntry(row: Buffer): number {
    if (this.setStatus) return this.setStatus;
    if (row.readUInt32LE(MIB_IPINTERFACE_ROW_OFFSETS.SitePrefixLength) !== 0) return 87;
    this.forwarding.set(row.readUInt32LE(16), row[MIB_IPINTERFACE_ROW_OFFSETS.ForwardingEnabled] === 1);
    return 0;
  }
}

async function rejection(p: Promise<unknown>): Promise<HnsError> {
  try {
    await p;
  } catch (err) {
    return err as HnsError;
  }
  throw new Error('expected a rejection');
}

describe('Win32HnsTransport v1 (HNSCall)', () => {
  let dll: FakeNative;
  let t: Win32HnsTransport;
  beforeEach(() => {
    dll = new FakeNative();
    t = new Win32HnsTransport(dll);
  });

  it('passes UTF-16 method/path/body and returns the envelope unparsed, freeing it', async () => {
    const out = await t.hnsCall('POST', '/endpoints/X/attach', '{"SystemType":"Host","CompartmentId":1}');
    expect(out).toBe(dll.hnsResponse.response);
    expect(dll.calls).toEqual(['HNSCall POST /endpoints/X/attach {"SystemType":"Host","CompartmentId":1}']);
    expect(dll.frees).toBe(1);
    expect(dll.leaked).toEqual([]);
  });

  it('a Success:false envelope is returned as is (HnsClient maps it)', async () => {
    dll.hnsResponse = { hr: 0, response: '{"Success":false,"Error":"Network not found"}' };
    const c = new HnsClient(t);
    expect(await c.getNetworkV1('ABC')).toBeUndefined();
    expect(dll.leaked).toEqual([]);
  });

  it('a negative HRESULT is an HnsError with its code, the response still freed', async () => {
    dll.hnsResponse = { hr: 0x80070005 | 0, response: '{"Success":false,"Error":"Access is denied."}' };
    const err = await rejection(t.hnsCall('GET', '/networks/', ''));
    expect(err).toBeInstanceOf(HnsError);
    expect(err.code).toBe('FLANNEL_ERR_HNS_ACCESS_DENIED');
    expect(err.hresult).toBe(0x80070005);
    expect(err.context).toMatchObject({ op: 'HNSCall GET /networks/', hnsError: 'Access is denied.' });
    expect(dll.leaked).toEqual([]);
  });

  it('a negative HRESULT with no response', async () => {
    dll.hnsResponse = { hr: 0x803b0001 | 0, response: null };
    expect((await rejection(t.hnsCall('GET', '/networks/X', ''))).code).toBe('FLANNEL_ERR_HNS_NOT_FOUND');
  });

  it('frees the response even when reading it fails', async () => {
    dll.readFails = true;
    await expect(t.hnsCall('GET', '/globals/version', '')).rejects.toThrow('boom');
    expect(dll.frees).toBe(1);
  });
});

describe('Win32HnsTransport v2 (Hcn*)', () => {
  let dll: FakeNative;
  let t: Win32HnsTransport;
  beforeEach(() => {
    dll = new FakeNative();
    t = new Win32HnsTransport(dll);
  });

  it('enumerate returns the string and frees it', async () => {
    dll.next = { result: `["${NET}"]` };
    expect(await t.enumerateNetworks('{}')).toBe(`["${NET}"]`);
    expect(dll.frees).toBe(1);
  });

  it.each([
    [0x803b0001, 'FLANNEL_ERR_HNS_NOT_FOUND'],
    [0x803b0002, 'FLANNEL_ERR_HNS_NOT_FOUND'],
    [0x80070490, 'FLANNEL_ERR_HNS_NOT_FOUND'],
    [0x803b0010, 'FLANNEL_ERR_HNS_EXISTS'],
    [0x803b0014, 'FLANNEL_ERR_HNS_ATTACHED'],
    [0x80070005, 'FLANNEL_ERR_HNS_ACCESS_DENIED'],
    [0x80070057, 'FLANNEL_ERR_HNS_CALL'],
  ])('negative HRESULT %s -> %s', async (hr, code) => {
    dll.next = { hr: hr | 0, result: null, handle: false };
    const err = await rejection(t.openNetwork(NET));
    expect(err.code).toBe(code);
    expect(err.hresult).toBe(hr);
  });

  it('an ErrorRecord with HRESULT 0 still fails, with the record text and code; all strings freed', async () => {
    const h = await t.openNetwork(NET);
    dll.next = { hr: 0, result: '{"ID":"x"}', errorRecord: ERROR_RECORD };
    const err = await rejection(t.queryNetworkProperties(h, '{}'));
    expect(err.code).toBe('FLANNEL_ERR_HNS_CALL');
    expect(err.hresult).toBe(0x80070057);
    expect(err.context.hnsError).toBe('The parameter is incorrect.');
    expect(dll.leaked).toEqual([]);
    await t.closeNetwork(h);
  });

  it('an ErrorRecord that is not JSON is its own text', async () => {
    dll.next = { hr: 0x803b0010 | 0, errorRecord: 'A network with this name already exists.', handle: false };
    const err = await rejection(t.createNetwork('00000000-0000-0000-0000-000000000000', '{}'));
    expect(err.code).toBe('FLANNEL_ERR_HNS_EXISTS');
    expect(err.context.hnsError).toBe('A network with this name already exists.');
    expect(dll.leaked).toEqual([]);
  });

  it('a handle that came back with a failure is closed', async () => {
    dll.next = { hr: 0, errorRecord: ERROR_RECORD };
    await expect(t.createNetwork(NET, '{}')).rejects.toBeInstanceOf(HnsError);
    expect(dll.handles).toHaveLength(1);
    expect(dll.openHandles).toEqual([]);
    expect(t.openHandles).toBe(0);
  });

  it('passes GUIDs as 16-byte structs and rejects a bad one as E_INVALIDARG', async () => {
    const h = await t.openNetwork(NET.toLowerCase());
    expect(dll.calls).toContain(`HcnOpenNetwork ${NET}`);
    expect(h).toMatchObject({ kind: 'network', id: NET });
    await t.closeNetwork(h);
    const err = await rejection(t.openNetwork('cbr0'));
    expect(err.code).toBe('FLANNEL_ERR_HNS_CALL');
    expect(err.hresult).toBe(0x80070057);
  });

  it('handles: closed once, unknown or wrong-kind handles are E_HANDLE', async () => {
    const h = await t.openNetwork(NET);
    expect(t.openHandles).toBe(1);
    await t.closeNetwork(h);
    expect(dll.openHandles).toEqual([]);
    expect(t.openHandles).toBe(0);
    expect((await rejection(t.closeNetwork(h))).hresult).toBe(0x80070006);
    expect((await rejection(t.queryNetworkProperties({ kind: 'network', id: NET }, '{}'))).hresult).toBe(0x80070006);
    const e = await t.openEndpoint(NET);
    expect((await rejection(t.closeNetwork(e))).hresult).toBe(0x80070006);
    await t.closeEndpoint(e);
  });

  it('endpoint create on a network handle; delete failure; every string freed', async () => {
    const n = await t.openNetwork(NET);
    dll.next = { result: null };
    const e = await t.createEndpoint(n, '00000000-0000-0000-0000-000000000000', '{"Name":"cbr0_ep"}');
    dll.next = { result: '{"ID":"E"}' };
    expect(await t.queryEndpointProperties(e, '{}')).toBe('{"ID":"E"}');
    await t.closeEndpoint(e);
    await t.closeNetwork(n);
    dll.next = { hr: 0x803b0002 | 0, errorRecord: '{"Success":false,"Error":"The endpoint was not found.","ErrorCode":2151350274}' };
    expect((await rejection(t.deleteEndpoint(NET))).code).toBe('FLANNEL_ERR_HNS_NOT_FOUND');
    expect(dll.leaked).toEqual([]);
    expect(dll.openHandles).toEqual([]);
  });

  it("load balancers (kube-proxy's, read only): enumerate, open, query and close; a load-balancer handle is no endpoint's", async () => {
    dll.next = { result: `["${NET}"]` };
    expect(await t.enumerateLoadBalancers('{}')).toBe(`["${NET}"]`);
    const l = await t.openLoadBalancer(NET);
    expect(dll.calls).toContain(`HcnOpenLoadBalancer ${NET}`);
    expect((await rejection(t.queryEndpointProperties(l, '{}'))).hresult).toBe(0x80070006);
    dll.next = { result: '{"ID":"L","SourceVIP":"10.244.1.2"}' };
    expect(await t.queryLoadBalancerProperties(l, '{}')).toBe('{"ID":"L","SourceVIP":"10.244.1.2"}');
    await t.closeLoadBalancer(l);
    expect((await rejection(t.closeLoadBalancer(l))).hresult).toBe(0x80070006);
    expect(dll.openHandles).toEqual([]);
    expect(dll.leaked).toEqual([]);
  });

  it('frees both out-strings even when reading fails', async () => {
    dll.next = { result: '[]', errorRecord: ERROR_RECORD };
    dll.readFails = true;
    await expect(t.enumerateEndpoints('{}')).rejects.toThrow('boom');
    expect(dll.frees).toBe(2);
    expect(dll.leaked).toEqual([]);
  });

  it('HnsClient on top: get-network-by-name closes every handle it opened, also on failure', async () => {
    const c = new HnsClient(t);
    dll.next = { result: `["${NET}"]` };
    const origQuery = dll.hcnQueryNetworkProperties.bind(dll);
    dll.hcnQueryNetworkProperties = (n, q) => {
      dll.next = { hr: 0x80070005 | 0, result: null, errorRecord: null };
      return origQuery(n, q);
    };
    await expect(c.getNetworkByName('flannel.4096')).rejects.toMatchObject({ code: 'FLANNEL_ERR_HNS_ACCESS_DENIED' });
    expect(dll.openHandles).toEqual([]);
    expect(dll.leaked).toEqual([]);
  });
});

describe('Win32RouteTable', () => {
  let dll: FakeNative;
  let r: Win32RouteTable;
  beforeEach(() => {
    dll = new FakeNative();
    r = new Win32RouteTable(dll);
    dll.routes.push({ destinationPrefix: '10.244.1.0/24', nextHop: '10.0.0.3', interfaceIndex: 9, metric: 5 });
  });

  it('lists, filters by interface, frees the table', async () => {
    expect(await r.list()).toEqual(dll.routes);
    expect(await r.list(9)).toEqual([dll.routes[1]]);
    expect(dll.tablesFreed).toBe(dll.tablesGiven);
  });

  it('1168 from GetIpForwardTable2 is an empty table; other statuses are RouteErrors', async () => {
    dll.tableStatus = 1168;
    expect(await r.list()).toEqual([]);
    dll.tableStatus = 5;
    const err = (await rejection(r.list())) as unknown as RouteError;
    expect(err).toBeInstanceOf(RouteError);
    expect(err.status).toBe(5);
  });

  it('add writes the row on top of InitializeIpForwardEntry; 5010 is success', async () => {
    const route = { destinationPrefix: '10.244.2.0/24', nextHop: '10.0.0.4', interfaceIndex: 9, metric: 7 };
    await r.add(route);
    const row = decodeIpForwardRow2(dll.lastRow!);
    expect(row).toMatchObject({
      interfaceLuid: 0n,
      interfaceIndex: 9,
      destination: '10.244.2.0',
      prefixLength: 24,
      nextHop: '10.0.0.4',
      metric: 7,
      protocol: 3,
      sitePrefixLength: 0,
    });
    expect(row.validLifetime).toBe(0xffffffff);
    dll.createStatus = 5010;
    await r.add(route);
  });

  it.each([
    [5, /Administrator/],
    [1168, /interface/],
    [87, /invalid parameter/],
  ])('add status %s is a RouteError naming the route; the status has its advice', async (status, advice) => {
    dll.createStatus = status;
    const err = (await rejection(r.add({ destinationPrefix: '10.244.2.0/24', nextHop: '10.0.0.4', interfaceIndex: 9, metric: 7 }))) as unknown as RouteError;
    expect(err).toBeInstanceOf(RouteError);
    expect(err.code).toBe('FLANNEL_ERR_ROUTE');
    expect(err.status).toBe(status);
    expect(err.context).toEqual({ op: 'CreateIpForwardEntry2', status, destination: '10.244.2.0/24', nextHop: '10.0.0.4', interfaceIndex: 9 });
    expect(win32StatusAdvice(status)).toMatch(advice);
  });

  it('remove: 1168 is success, 5 is a RouteError', async () => {
    dll.deleteStatus = 1168;
    await r.remove({ destinationPrefix: '10.244.1.0/24', nextHop: '10.0.0.3', interfaceIndex: 9, metric: 5 });
    expect(decodeIpForwardRow2(dll.lastRow!)).toMatchObject({ interfaceIndex: 9, destination: '10.244.1.0', nextHop: '10.0.0.3' });
    dll.deleteStatus = 5;
    expect(((await rejection(r.remove({ destinationPrefix: '10.244.1.0/24', nextHop: '10.0.0.3', interfaceIndex: 9, metric: 5 }))) as unknown as RouteError).status).toBe(5);
  });

  it('a bad route is a RouteError, not a crash', async () => {
    await expect(r.add({ destinationPrefix: 'nope', nextHop: '10.0.0.4', interfaceIndex: 9, metric: 7 })).rejects.toBeInstanceOf(RouteError);
  });
});

describe('Win32Host', () => {
  let dll: FakeNative;
  let h: Win32Host;
  beforeEach(() => {
    dll = new FakeNative();
    h = new Win32Host(dll);
  });

  it('interfaces: grows the GetIpAddrTable buffer, skips 127/8, 0.0.0.0 and vanished interfaces, reads alias and MTU', async () => {
    const ifaces = await h.interfaces();
    expect(ifaces[0]).toEqual({ name: 'vEthernet (Ethernet 2)', index: 4, ipv4: '10.0.0.2', prefixLength: 24, mtu: 1450 });
    expect(ifaces.map((i) => i.index)).toEqual([4, ...Array.from({ length: 10 }, (_, i) => 100 + 2 * i)]);
    expect(ifaces[1]).toMatchObject({ name: 'Ethernet 100', mtu: 1500 });
    expect(ipAddrTableLength(23)).toBeGreaterThan(ipAddrTableLength(16));
  });

  it('interfaces: the IPv6 table is read only when asked for (dual-stack start-up, an IPv6 --iface)', async () => {
    dll.unicast = [{ address: 'fd00::100', interfaceIndex: 4, prefixLength: 64 }];
    expect((await h.interfaces())[0]).not.toHaveProperty('ipv6Addresses');
    expect(dll.unicastReads).toBe(0);
    expect((await h.interfaces({ ipv6: true }))[0]?.ipv6Addresses).toEqual([{ address: 'fd00::100', prefixLength: 64 }]);
    expect(dll.unicastReads).toBe(1);
  });

  it("interfaces: each adapter's IPv6 addresses from GetUnicastIpAddressTable(AF_INET6), the table freed", async () => {
    dll.unicast = [
      { address: 'fe80::1', interfaceIndex: 4, prefixLength: 64, scopeId: 4 },
      { address: '2001:db8:1::2', interfaceIndex: 4, prefixLength: 56 },
      { address: '2001:db8:1::99', interfaceIndex: 4, prefixLength: 64, prefixOrigin: 4, suffixOrigin: 5 },
      { address: '2001:db8:1::3', interfaceIndex: 4, prefixLength: 64, dadState: 3 },
      { address: '2001:db8:1::4', interfaceIndex: 4, prefixLength: 64, dadState: 2 },
      { address: 'fd00::100', interfaceIndex: 100, prefixLength: 64 },
    ];
    const ifaces = await h.interfaces({ ipv6: true });
    expect(ifaces[0]?.ipv6Addresses).toEqual([
      { address: 'fe80::1', prefixLength: 64 },
      { address: '2001:db8:1::2', prefixLength: 56 },
      { address: '2001:db8:1::99', prefixLength: 64, temporary: true },
      { address: '2001:db8:1::3', prefixLength: 64, deprecated: true },
    ]);
    expect(ifaces[1]?.ipv6Addresses).toEqual([{ address: 'fd00::100', prefixLength: 64 }]);
    // Read, and none on this adapter: an empty list (no --public-ipv6 guess), unlike a failed read.
    expect(ifaces[2]?.ipv6Addresses).toEqual([]);
    expect(dll.tablesFreed).toBe(dll.tablesGiven);
    dll.unicast = 1168; // ERROR_NOT_FOUND: the empty table
    expect((await h.interfaces({ ipv6: true }))[0]?.ipv6Addresses).toEqual([]);
  });

  it("dual-stack on this host: --public-ipv6 matches the adapter's real address and prefix, not an assumed /64", async () => {
    dll.unicast = [
      { address: '2001:db8:1::99', interfaceIndex: 4, prefixLength: 56, prefixOrigin: 4, suffixOrigin: 5 },
      { address: '2001:db8:1::2', interfaceIndex: 4, prefixLength: 56 },
    ];
    const [ext] = await h.interfaces({ ipv6: true });
    expect(selectIPv6Address(ext, { publicIPv6s: ['2001:db8:1::2'], assumed: '2001:db8:1::2' })).toEqual({ address: '2001:db8:1::2', prefixLength: 56 });
    expect(selectIPv6Address(ext)).toEqual({ address: '2001:db8:1::2', prefixLength: 56 });
    dll.unicast = 5; // the read failed: the fallback
    const [fallback] = await h.interfaces({ ipv6: true });
    expect(selectIPv6Address(fallback, { assumed: '2001:db8:1::2' })).toEqual({ address: '2001:db8:1::2', prefixLength: 64 });
  });

  it('interfaces: a failed IPv6 read (a status, or no such export) leaves ipv6Addresses out; the IPv4 list stands', async () => {
    dll.unicast = 5;
    expect((await h.interfaces({ ipv6: true }))[0]).not.toHaveProperty('ipv6Addresses');
    dll.unicast = new Error('GetUnicastIpAddressTable: symbol not found');
    const ifaces = await h.interfaces({ ipv6: true });
    expect(ifaces[0]).toEqual({ name: 'vEthernet (Ethernet 2)', index: 4, ipv4: '10.0.0.2', prefixLength: 24, mtu: 1450 });
  });

  it("nicConfiguration: one adapter's addresses (both families) and routes with their origins, the tables freed", async () => {
    dll.unicast = [
      { address: '10.0.0.2', interfaceIndex: 4, prefixLength: 24 },
      { address: '10.0.0.9', interfaceIndex: 4, prefixLength: 24, prefixOrigin: 3 },
      { address: 'fe80::1', interfaceIndex: 4, prefixLength: 64, prefixOrigin: 2, suffixOrigin: 4 },
      { address: 'fd00::2', interfaceIndex: 4, prefixLength: 64 },
      { address: '192.168.5.7', interfaceIndex: 5, prefixLength: 24 },
    ];
    dll.routes.push({ destinationPrefix: '192.168.200.0/22', nextHop: '10.0.0.254', interfaceIndex: 4, metric: 5 });
    dll.routes.push({ destinationPrefix: '10.1.0.0/16', nextHop: '192.168.5.1', interfaceIndex: 5, metric: 5 });
    expect(await h.nicConfiguration(4)).toEqual({
      addresses: [
        { address: '10.0.0.2', prefixLength: 24, origin: 'manual' },
        { address: '10.0.0.9', prefixLength: 24, origin: 'dhcp' },
        { address: 'fe80::1', prefixLength: 64, origin: 'other' },
        { address: 'fd00::2', prefixLength: 64, origin: 'manual' },
      ],
      routes: [
        { destinationPrefix: '0.0.0.0/0', nextHop: '10.0.0.1', metric: 25, origin: 'manual' },
        { destinationPrefix: '192.168.200.0/22', nextHop: '10.0.0.254', metric: 5, origin: 'manual' },
      ],
    });
    expect(dll.tablesFreed).toBe(dll.tablesGiven);
    dll.unicast = 5;
    await expectCode(h.nicConfiguration(4), HostError, 'FLANNEL_ERR_HOST');
  });

  it('routeOriginSetting: manual is NlroManual by MIB_IPPROTO_NETMGMT, DHCP NlroDHCP, the rest other', () => {
    expect(routeOriginSetting({ origin: 0, protocol: 3 })).toBe('manual');
    expect(routeOriginSetting({ origin: 0, protocol: 2 })).toBe('other'); // MIB_IPPROTO_LOCAL: the subnet and host routes
    expect(routeOriginSetting({ origin: 2, protocol: 3 })).toBe('dhcp');
    expect(routeOriginSetting({ origin: 3, protocol: 12 })).toBe('other'); // a router advertisement
  });

  it('addUnicastAddress: the row on InitializeUnicastIpAddressEntry, 5010 is success, another status a coded error', async () => {
    await h.addUnicastAddress(7, '10.0.0.2', 24);
    const row = decodeUnicastIpAddressRow(dll.lastRow!);
    expect(row).toMatchObject({ family: 2, address: '10.0.0.2', interfaceIndex: 7, interfaceLuid: 0n, onLinkPrefixLength: 24, dadState: 4 });
    await h.addUnicastAddress(7, 'fd00::2', 64);
    expect(decodeUnicastIpAddressRow(dll.lastRow!)).toMatchObject({ family: 23, address: 'fd00::2', onLinkPrefixLength: 64 });
    dll.unicastCreateStatus = 5010;
    await h.addUnicastAddress(7, '10.0.0.2', 24);
    dll.unicastCreateStatus = 87;
    const err = await expectCode(h.addUnicastAddress(7, '10.0.0.2', 24), HostError, 'FLANNEL_ERR_HOST');
    expect(err.context).toMatchObject({ op: 'CreateUnicastIpAddressEntry', status: 87, interfaceIndex: 7 });
  });

  it('default route interface: 0.0.0.0/0 with the lowest metric', async () => {
    dll.routes.push({ destinationPrefix: '0.0.0.0/0', nextHop: '10.1.0.1', interfaceIndex: 12, metric: 5 });
    dll.routes.push({ destinationPrefix: '0.0.0.0/1', nextHop: '10.1.0.1', interfaceIndex: 13, metric: 0 });
    expect(await h.defaultRouteInterfaceIndex()).toBe(12);
    dll.routes = [];
    expect(await h.defaultRouteInterfaceIndex()).toBeUndefined();
    expect(dll.tablesFreed).toBe(dll.tablesGiven);
  });

  it('forwarding: Get, set with SitePrefixLength 0, Set', async () => {
    expect(await h.getForwarding(4)).toBe(false);
    await h.setForwarding(4, true);
    expect(await h.getForwarding(4)).toBe(true);
  });

  it('forwarding errors are FLANNEL_ERR_HOST with the status', async () => {
    const missing = await rejection(h.getForwarding(9));
    expect(missing).toBeInstanceOf(FlannelError);
    expect(missing.code).toBe('FLANNEL_ERR_HOST');
    expect(missing.context.status).toBe(1168);
    dll.setStatus = 5;
    const denied = await rejection(h.setForwarding(4, true));
    expect(denied).toBeInstanceOf(HostError);
    expect(denied.code).toBe('FLANNEL_ERR_HOST');
    expect(denied.context).toMatchObject({ op: 'SetIpInterfaceEntry', status: 5 });
  });
});

describe('Win32HnsTransport calls that return after the call timeout (a hung HNS on a worker thread)', () => {
  let dll: FakeNative;
  let t: Win32HnsTransport;
  let metrics: Metrics;
  let c: HnsClient;
  let clock: FakeClock;
  const TIMEOUT = 30;
  const settle = flush;
  /** The rejection of `p`, once the call timeout has passed on the virtual clock. */
  const timedOut = async (p: Promise<unknown>): Promise<HnsError> => {
    const r = rejection(p);
    await clock.advance(TIMEOUT);
    return r;
  };
  beforeEach(() => {
    dll = new FakeNative();
    t = new Win32HnsTransport(dll);
    metrics = new Metrics();
    clock = new FakeClock();
    c = new HnsClient(withCallTimeout(t, { timeoutMs: TIMEOUT, clock }), { metrics });
  });

  const POLICY = { Type: 'RemoteSubnetRoute', Settings: { DestinationPrefix: '10.244.1.0/24' } };

  it('a hung HcnModifyNetwork: the pass fails with FLANNEL_ERR_HNS_CALL; the handle is closed only once the call returns, its ErrorRecord freed', async () => {
    dll.hold('HcnModifyNetwork', { errorRecord: ERROR_RECORD });
    const err = await timedOut(c.addNetworkPolicies(NET, [POLICY]));
    expect(err).toBeInstanceOf(HnsError);
    expect(err.code).toBe('FLANNEL_ERR_HNS_CALL');
    expect(err.context).toMatchObject({ op: 'HcnModifyNetwork', networkId: NET, timeoutMs: TIMEOUT });
    expect(await readMetric(metrics, METRIC.dataplaneErrors, { op: 'hns.addNetworkPolicies' })).toBe(1);
    // HnsClient asked to close the network handle, but HcnModifyNetwork still runs with it.
    expect(dll.openHandles).toHaveLength(1);
    expect(t.openHandles).toBe(1);
    expect(dll.closes).toBe(0);

    dll.releaseAll();
    await settle();
    expect(dll.usedAfterClose).toEqual([]);
    expect(dll.closes).toBe(1);
    expect(dll.openHandles).toEqual([]);
    expect(t.openHandles).toBe(0);
    expect(dll.leaked).toEqual([]); // the late ErrorRecord was read and freed
    expect(dll.frees).toBe(1);
  });

  it('a hung HcnOpenNetwork: the handle it returns late is closed by HnsClient', async () => {
    dll.hold('HcnOpenNetwork', { errorRecord: null });
    expect((await timedOut(c.getNetwork(NET))).code).toBe('FLANNEL_ERR_HNS_CALL');
    expect(dll.handles).toHaveLength(0);
    dll.releaseAll();
    await settle();
    expect(dll.handles).toHaveLength(1);
    expect(dll.openHandles).toEqual([]);
    expect(dll.closes).toBe(1);
    expect(t.openHandles).toBe(0);
    expect(dll.leaked).toEqual([]);
  });

  it('a hung HcnCreateEndpoint returning a handle and an ErrorRecord late: both released, the network handle closed after it', async () => {
    dll.hold('HcnCreateEndpoint', { errorRecord: ERROR_RECORD });
    expect((await timedOut(c.createEndpoint(NET, { Name: 'e', SchemaVersion: { Major: 2, Minor: 0 } }))).code).toBe('FLANNEL_ERR_HNS_CALL');
    expect(dll.openHandles.map((h) => h.id)).toEqual([`HcnOpenNetwork ${NET}`]);
    dll.releaseAll();
    await settle();
    expect(dll.usedAfterClose).toEqual([]);
    expect(dll.openHandles).toEqual([]); // the failed call's endpoint handle and the network handle
    expect(dll.closes).toBe(2);
    expect(t.openHandles).toBe(0);
    expect(dll.leaked).toEqual([]);
  });

  it('a hung HcnQueryNetworkProperties / HcnEnumerateNetworks / HNSCall: the strings they return late are freed', async () => {
    dll.hold('HcnQueryNetworkProperties', { result: '{"ID":"X","Name":"n"}' });
    expect((await timedOut(c.getNetwork(NET))).code).toBe('FLANNEL_ERR_HNS_CALL');
    dll.hold('HcnEnumerateNetworks', { result: '["X"]', errorRecord: '' });
    expect((await timedOut(c.listNetworks())).code).toBe('FLANNEL_ERR_HNS_CALL');
    dll.hold('HNSCall GET /networks/');
    const v1 = await timedOut(c.listNetworksV1());
    expect(v1).toBeInstanceOf(HnsError);
    expect(v1.context).toMatchObject({ op: 'HNSCall GET /networks/', timeoutMs: TIMEOUT });
    expect(dll.held).toHaveLength(3);
    dll.releaseAll();
    await settle();
    expect(dll.strings).toHaveLength(4);
    expect(dll.leaked).toEqual([]);
    expect(dll.usedAfterClose).toEqual([]);
    expect(dll.openHandles).toEqual([]);
    expect(t.openHandles).toBe(0);
    expect(await readMetricTotal(metrics, METRIC.dataplaneErrors)).toBe(3);
  });

  it('a call that answers (on a worker thread) within the timeout is an ordinary call', async () => {
    dll.hold('HcnModifyNetwork');
    const p = c.addNetworkPolicies(NET, [POLICY]);
    await settle();
    dll.releaseAll();
    await expect(p).resolves.toBeUndefined();
    expect(dll.openHandles).toEqual([]);
    expect(dll.closes).toBe(1);
    expect(await readMetricTotal(metrics, METRIC.dataplaneErrors)).toBe(0);
  });

  it('a second close of a handle whose close is deferred is E_HANDLE, and a new call on it too', async () => {
    dll.hold('HcnModifyNetwork');
    const h = await t.openNetwork(NET);
    const modify = t.modifyNetwork(h, '{}');
    await t.closeNetwork(h); // deferred
    expect(dll.closes).toBe(0);
    expect((await rejection(t.closeNetwork(h))).hresult).toBe(0x80070006);
    expect((await rejection(t.queryNetworkProperties(h, '{}'))).hresult).toBe(0x80070006);
    dll.releaseAll();
    await modify;
    expect(dll.closes).toBe(1);
    expect(dll.usedAfterClose).toEqual([]);
  });
});

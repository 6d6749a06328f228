// The IPv4 route table on iphlpapi (netioapi.h): GetIpForwardTable2 + FreeMibTable to list,
// InitializeIpForwardEntry + CreateIpForwardEntry2 / DeleteIpForwardEntry2 to write, with
// MIB_IPFORWARD_ROW2 encoded in Buffers (../win32/iphlpapi.ts). 5010 on add and 1168 on delete are the
// idempotent outcomes the RouteTable contract asks for; other statuses become a RouteError with `status`.
/* eslint-disable @typescript-eslint/require-await -- the iphlpapi calls are synchronous; `async` is what turns their throws into the rejections the Host/RouteTable contract promises */
import { RouteError } from '../basics/errors.js';
import { AF_INET, AF_INET6, MIB_IPFORWARD_TABLE2_OFFSETS, SIZES, WIN32_ERROR } from '../win32/encoding.js';
import type { IpFamily } from '../basics/ip6.js';
import { decodeIpForwardTable2, encodeIpForwardRow2, ipForwardTable2Length } from '../win32/iphlpapi.js';
import type { IpForwardRow2 } from '../win32/iphlpapi.js';
import type { Win32IpHelperNative } from '../win32/native.js';
import type { Route, RouteTable } from './route-table.js';

/** What to do about a failed iphlpapi call, by status. */
export function win32StatusAdvice(status: number): string {
  switch (status >>> 0) {
    case WIN32_ERROR.ERROR_ACCESS_DENIED:
      return 'access denied: run flanneld as Administrator or LocalSystem';
    case WIN32_ERROR.ERROR_INVALID_PARAMETER:
      return 'invalid parameter: check that the interface index exists and has IPv4 enabled';
    case WIN32_ERROR.ERROR_NOT_FOUND:
      return 'not found: the interface is gone (its index changes when HNS creates the vSwitch); it is re-resolved on the next reconcile';
    case WIN32_ERROR.ERROR_OBJECT_ALREADY_EXISTS:
      return 'the object already exists';
    default:
      return `Win32 error ${status >>> 0}`;
  }
}

function describe(r: Route): string {
  return `${r.destinationPrefix} via ${r.nextHop} on interface ${r.interfaceIndex} (metric ${r.metric})`;
}

/** Read every IPv4 route (GetIpForwardTable2(AF_INET); the table is always freed). */
export function readIpv4ForwardTable(dll: Win32IpHelperNative): IpForwardRow2[] {
  return readIpForwardTable(dll, AF_INET);
}

/** Read every route of one family (GetIpForwardTable2(AF_INET or AF_INET6); the table is always freed). */
export function readIpForwardTable(dll: Win32IpHelperNative, family: number): IpForwardRow2[] {
  const { status, table } = dll.getIpForwardTable2(family);
  try {
    if (status === WIN32_ERROR.ERROR_NOT_FOUND) return []; // an empty table
    if (status !== WIN32_ERROR.NO_ERROR) {
      throw new RouteError('FLANNEL_ERR_ROUTE', `GetIpForwardTable2 failed with status ${status}: ${win32StatusAdvice(status)}`, { op: 'GetIpForwardTable2', status });
    }
    if (table === null) return [];
    const n = dll.readBytes(table, 4).readUInt32LE(MIB_IPFORWARD_TABLE2_OFFSETS.NumEntries);
    if (n === 0) return [];
    return decodeIpForwardTable2(dll.readBytes(table, ipForwardTable2Length(n)));
  } finally {
    if (table !== null) dll.freeMibTable(table);
  }
}

function rowToRoute(row: IpForwardRow2): Route {
  return { destinationPrefix: `${row.destination}/${row.prefixLength}`, nextHop: row.nextHop, interfaceIndex: row.interfaceIndex, metric: row.metric };
}

export class Win32RouteTable implements RouteTable {
  constructor(private readonly dll: Win32IpHelperNative) {}

  async list(interfaceIndex?: number, family: IpFamily = 'ipv4'): Promise<Route[]> {
    const af = family === 'ipv6' ? AF_INET6 : AF_INET;
    return readIpForwardTable(this.dll, af)
      .filter((r) => r.family === af && (interfaceIndex === undefined || r.interfaceIndex === interfaceIndex))
      .map(rowToRoute);
  }

  /** A MIB_IPFORWARD_ROW2 for `route`, on top of InitializeIpForwardEntry's defaults. */
  private row(route: Route): Buffer {
    const row = Buffer.alloc(SIZES.MIB_IPFORWARD_ROW2);
    this.dll.initializeIpForwardEntry(row);
    try {
      return encodeIpForwardRow2(route, row);
    } catch (err) {
      throw new RouteError('FLANNEL_ERR_ROUTE', `cannot encode the route ${describe(route)}: ${(err as Error).message}`, { destination: route.destinationPrefix });
    }
  }

  async add(route: Route): Promise<void> {
    const status = this.dll.createIpForwardEntry2(this.row(route));
    if (status === WIN32_ERROR.NO_ERROR || status === WIN32_ERROR.ERROR_OBJECT_ALREADY_EXISTS) return;
    throw new RouteError('FLANNEL_ERR_ROUTE', `CreateIpForwardEntry2 could not add the route ${describe(route)} (status ${status}): ${win32StatusAdvice(status)}`, {
      op: 'CreateIpForwardEntry2',
      status,
      destination: route.destinationPrefix,
      nextHop: route.nextHop,
      interfaceIndex: route.interfaceIndex,
    });
  }

  async remove(route: Route): Promise<void> {
    const status = this.dll.deleteIpForwardEntry2(this.row(route));
    if (status === WIN32_ERROR.NO_ERROR || status === WIN32_ERROR.ERROR_NOT_FOUND) return;
    throw new RouteError('FLANNEL_ERR_ROUTE', `DeleteIpForwardEntry2 could not remove the route ${describe(route)} (status ${status}): ${win32StatusAdvice(status)}`, {
      op: 'DeleteIpForwardEntry2',
      status,
      destination: route.destinationPrefix,
      nextHop: route.nextHop,
      interfaceIndex: route.interfaceIndex,
    });
  }
}

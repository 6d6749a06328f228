// IPv4 route table seam. win32 = iphlpapi (MIB_IPFORWARD_ROW2, ./iphlpapi-routes.ts); simulated = the simulated
// node's route table (src/simulator/host.ts). ./metered.ts counts the calls of either in /metrics.
import { RouteError } from '../basics/errors.js';
import { WIN32_ERROR } from '../win32/encoding.js';
import type { IpFamily } from '../basics/ip6.js';

/** winerror.h: CreateIpForwardEntry2 on an interface that is gone; DeleteIpForwardEntry2 of a missing route. */
export const ERROR_NOT_FOUND = WIN32_ERROR.ERROR_NOT_FOUND;
/** winerror.h: CreateIpForwardEntry2 of a route that exists. */
export const ERROR_OBJECT_ALREADY_EXISTS = WIN32_ERROR.ERROR_OBJECT_ALREADY_EXISTS;

/** An add failed because its interface index names no interface (any more). */
export function isInterfaceGone(err: unknown): boolean {
  return err instanceof RouteError && err.status === ERROR_NOT_FOUND;
}

export interface Route {
  /** CIDR, e.g. `10.244.3.0/24` (or `fd00:42:3::/64`: the family follows the destination). */
  destinationPrefix: string;
  /** The next hop, of the destination's family. */
  nextHop: string;
  interfaceIndex: number;
  metric: number;
}

export interface RouteTable {
  /** One family's routes (IPv4 by default; GetIpForwardTable2(AF_INET or AF_INET6)), optionally only those on one interface. */
  list(interfaceIndex?: number, family?: IpFamily): Promise<Route[]>;
  /** Add a route; an identical existing route (ERROR_OBJECT_ALREADY_EXISTS, 5010) counts as success. */
  add(route: Route): Promise<void>;
  /** Remove a route; a missing route (ERROR_NOT_FOUND, 1168) counts as success. */
  remove(route: Route): Promise<void>;
}

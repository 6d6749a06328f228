// IPv4 route table seam. win32 = iphlpapi (MIB_IPFORWARD_ROW2, issue 3); simulated = a JSON table.

export interface Route {
  /** CIDR, e.g. `10.244.3.0/24`. */
  destinationPrefix: string;
  /** Dotted IPv4 next hop. */
  nextHop: string;
  interfaceIndex: number;
  metric: number;
}

export interface RouteTable {
  /** IPv4 routes, optionally only those on one interface. */
  list(interfaceIndex?: number): Promise<Route[]>;
  /** Add a route; an identical existing route (ERROR_OBJECT_ALREADY_EXISTS, 5010) counts as success. */
  add(route: Route): Promise<void>;
  /** Remove a route; a missing route (ERROR_NOT_FOUND, 1168) counts as success. */
  remove(route: Route): Promise<void>;
}

// The host-gw reconcile driver: the actual set is every route on the management vNIC whose destination
// lies inside the cluster Network (other than the own subnet); the desired set is one route per peer.
// Routes are written one per call (CreateIpForwardEntry2 / DeleteIpForwardEntry2), several in flight.
import type { ReconcileDriver } from '../reconcile.js';
import { RouteError } from '../../errors.js';
import { cidrContains } from '../../ip4.js';
import type { Route, RouteTable } from '../../routes/route-table.js';

/** Metric of the routes the agent installs (Windows' default for manual routes). */
export const ROUTE_METRIC = 256;
const ROUTE_WRITE_CONCURRENCY = 8;
/** ERROR_NOT_FOUND: the interface is gone (not this route's fault). */
const STATUS_NOT_FOUND = 1168;
/** ERROR_OBJECT_ALREADY_EXISTS: the route is already there (the cache was wrong; re-read). */
const STATUS_EXISTS = 5010;

/** The route table refused this one route (any status but a missing interface or an existing route). */
export function isRouteRefusal(err: unknown): boolean {
  return err instanceof RouteError && err.status !== undefined && err.status !== STATUS_NOT_FOUND && err.status !== STATUS_EXISTS;
}

export function hostGwRouteDriver(opts: {
  routes: RouteTable;
  network: string;
  ownSubnet: string;
  interfaceIndex: number;
  /** Throws (a network-gone error) when the backing HNS network no longer exists; checked before each read. */
  checkNetwork?: () => Promise<void>;
  networkGone?: (err: unknown) => boolean;
}): ReconcileDriver<Route, Route> {
  const { routes, network, ownSubnet, interfaceIndex } = opts;
  return {
    name: 'host-gw routes',
    async readActual() {
      await opts.checkNetwork?.();
      const all = await routes.list(interfaceIndex);
      return all.filter(
        (r) => r.interfaceIndex === interfaceIndex && r.destinationPrefix !== ownSubnet && cidrContains(network, r.destinationPrefix),
      );
    },
    actualKey: (r) => r.destinationPrefix,
    desiredKey: (r) => r.destinationPrefix,
    same: (a, d) => a.nextHop === d.nextHop,
    batch: 1,
    concurrency: ROUTE_WRITE_CONCURRENCY,
    remove: async ([r]) => routes.remove(r!),
    add: async ([r]) => routes.add(r!),
    toActual: (d) => d,
    refuses: isRouteRefusal,
    networkGone: opts.networkGone,
  };
}

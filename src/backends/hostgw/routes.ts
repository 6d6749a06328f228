// The host-gw reconcile driver: the actual set is every route on the management vNIC whose destination
// lies inside the cluster Network (other than the own subnet); the desired set is one route per peer.
import type { ReconcileDriver } from '../reconcile.js';
import { forEachLimit } from '../../concurrency.js';
import { cidrContains } from '../../ip4.js';
import type { Route, RouteTable } from '../../routes/route-table.js';

/** Metric of the routes the agent installs (Windows' default for manual routes). */
export const ROUTE_METRIC = 256;
const ROUTE_WRITE_CONCURRENCY = 8;

export function hostGwRouteDriver(opts: {
  routes: RouteTable;
  network: string;
  ownSubnet: string;
  interfaceIndex: number;
}): ReconcileDriver<Route, Route> {
  const { routes, network, ownSubnet, interfaceIndex } = opts;
  return {
    name: 'host-gw routes',
    async readActual() {
      const all = await routes.list(interfaceIndex);
      return all.filter(
        (r) => r.interfaceIndex === interfaceIndex && r.destinationPrefix !== ownSubnet && cidrContains(network, r.destinationPrefix),
      );
    },
    actualKey: (r) => r.destinationPrefix,
    desiredKey: (r) => r.destinationPrefix,
    same: (a, d) => a.nextHop === d.nextHop,
    remove: (items) => forEachLimit(items, ROUTE_WRITE_CONCURRENCY, (r) => routes.remove(r)),
    add: (items) => forEachLimit(items, ROUTE_WRITE_CONCURRENCY, (r) => routes.add(r)),
  };
}

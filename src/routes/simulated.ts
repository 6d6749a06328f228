// RouteTable on the SimulatedDataplane: the simulated counterpart of iphlpapi's GetIpForwardTable2 /
// CreateIpForwardEntry2 / DeleteIpForwardEntry2 (netioapi.h). The store raises the NETIO statuses
// (5010 ERROR_OBJECT_ALREADY_EXISTS, 1168 ERROR_NOT_FOUND) as RouteError; this seam turns the duplicate
// add and the missing remove into success, as the RouteTable contract says.
import { RouteError } from '../errors.js';
import type { SimRoute, SimulatedDataplane } from '../dataplane/simulated.js';
import type { Route, RouteTable } from './route-table.js';

import { ERROR_NOT_FOUND, ERROR_OBJECT_ALREADY_EXISTS } from './route-table.js';

function toSim(r: Route): SimRoute {
  return { DestinationPrefix: r.destinationPrefix, NextHop: r.nextHop, InterfaceIndex: r.interfaceIndex, Metric: r.metric };
}

function fromSim(r: SimRoute): Route {
  return { destinationPrefix: r.DestinationPrefix, nextHop: r.NextHop, interfaceIndex: r.InterfaceIndex, metric: r.Metric };
}

export class SimulatedRouteTable implements RouteTable {
  constructor(private readonly dp: SimulatedDataplane) {}

  async list(interfaceIndex?: number): Promise<Route[]> {
    await this.dp.enter('GetIpForwardTable2', 'route', 0, interfaceIndex === undefined ? '' : JSON.stringify({ InterfaceIndex: interfaceIndex }));
    return this.dp.listRoutes(interfaceIndex).map(fromSim);
  }

  /** Duplicate (5010) = success; an unknown interface (1168) is thrown. */
  async add(route: Route): Promise<void> {
    await this.dp.enter('CreateIpForwardEntry2', 'route', 0, JSON.stringify(toSim(route)));
    try {
      this.dp.createRoute(toSim(route));
    } catch (err) {
      if (err instanceof RouteError && err.status === ERROR_OBJECT_ALREADY_EXISTS) return;
      throw err;
    }
  }

  /** Missing route (1168) = success. */
  async remove(route: Route): Promise<void> {
    await this.dp.enter('DeleteIpForwardEntry2', 'route', 0, JSON.stringify(toSim(route)));
    try {
      this.dp.deleteRoute(toSim(route));
    } catch (err) {
      if (err instanceof RouteError && err.status === ERROR_NOT_FOUND) return;
      throw err;
    }
  }
}

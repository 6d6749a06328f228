// A RouteTable that counts every call (and failure) in /metrics, whatever the implementation below.
import { metered, type Metrics } from '../basics/metrics.js';
import type { Route, RouteTable } from './route-table.js';
import type { IpFamily } from '../basics/ip6.js';

export class MeteredRouteTable implements RouteTable {
  constructor(
    private readonly inner: RouteTable,
    private readonly metrics: Metrics,
  ) {}

  list(interfaceIndex?: number, family?: IpFamily): Promise<Route[]> {
    return metered(this.metrics, 'routes.list', () => (family === undefined ? this.inner.list(interfaceIndex) : this.inner.list(interfaceIndex, family)));
  }

  add(route: Route): Promise<void> {
    return metered(this.metrics, 'routes.add', () => this.inner.add(route));
  }

  remove(route: Route): Promise<void> {
    return metered(this.metrics, 'routes.remove', () => this.inner.remove(route));
  }
}

// A RouteTable that counts every call (and failure) in /metrics, whatever the implementation below.
import { metered, type Metrics } from '../metrics.js';
import type { Route, RouteTable } from './route-table.js';

export class MeteredRouteTable implements RouteTable {
  constructor(
    private readonly inner: RouteTable,
    private readonly metrics: Metrics,
  ) {}

  list(interfaceIndex?: number): Promise<Route[]> {
    return metered(this.metrics, 'routes.list', () => this.inner.list(interfaceIndex));
  }

  add(route: Route): Promise<void> {
    return metered(this.metrics, 'routes.add', () => this.inner.add(route));
  }

  remove(route: Route): Promise<void> {
    return metered(this.metrics, 'routes.remove', () => this.inner.remove(route));
  }
}

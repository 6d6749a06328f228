// A RouteTable that counts every call (and failure) in /metrics, whatever the implementation below, and
// measures each under its iphlpapi function (flannel_hns_call_duration_seconds, flannel_hns_call_errors_total,
// as src/hns/timed.ts does for HNS): list = GetIpForwardTable2, add = CreateIpForwardEntry2, remove =
// DeleteIpForwardEntry2 (./iphlpapi-routes.ts).
import type { Clock } from '../basics/clock.js';
import { callFailure, metered, type Metrics } from '../basics/metrics.js';
import type { Route, RouteTable } from './route-table.js';
import type { IpFamily } from '../basics/ip6.js';

export class MeteredRouteTable implements RouteTable {
  constructor(
    private readonly inner: RouteTable,
    private readonly metrics: Metrics,
    private readonly clock: Clock,
  ) {}

  list(interfaceIndex?: number, family?: IpFamily): Promise<Route[]> {
    return metered(this.metrics, 'routes.list', () =>
      this.timed('GetIpForwardTable2', () => (family === undefined ? this.inner.list(interfaceIndex) : this.inner.list(interfaceIndex, family))),
    );
  }

  add(route: Route): Promise<void> {
    return metered(this.metrics, 'routes.add', () => this.timed('CreateIpForwardEntry2', () => this.inner.add(route)));
  }

  remove(route: Route): Promise<void> {
    return metered(this.metrics, 'routes.remove', () => this.timed('DeleteIpForwardEntry2', () => this.inner.remove(route)));
  }

  private async timed<T>(op: string, fn: () => Promise<T>): Promise<T> {
    const started = this.clock.now();
    try {
      const value = await fn();
      this.metrics.observeCall(op, (this.clock.now() - started) / 1000);
      return value;
    } catch (err) {
      this.metrics.observeCall(op, (this.clock.now() - started) / 1000, callFailure(err));
      throw err;
    }
  }
}

// The host-gw reconcile driver: the actual set is every route on the management vNIC whose destination
// lies inside the cluster Network (other than the own subnet); the desired set is one route per peer.
// The vNIC's interface index is not fixed: Windows gives the vNIC a new one whenever the vSwitch is
// rebuilt (an HNS restart, the NIC disabled and enabled), and CreateIpForwardEntry2 then fails with
// ERROR_NOT_FOUND (1168, netioapi.h). The driver looks the vNIC up again by its IP and writes there.
// Routes are written one per call (CreateIpForwardEntry2 / DeleteIpForwardEntry2), several in flight.
// With a route record (./route-record.ts) the actual set is only the routes the agent created: a route
// it never created is kept, and reported once when it overlaps a peer's subnet.
import type { LeaseDriver } from '../route-network.js';
import type { ItemSource } from '../../peers/store.js';
import type { PlanOps } from '../../reconcile/plan.js';
import { RouteError } from '../../basics/errors.js';
import type { Host, HostInterface } from '../../host/host.js';
import { findInterfaceByIP } from '../../host/select.js';
import { cidrContains, overlaps } from '../../basics/ip4.js';
import { cidrContains6, formatIp6, normalizeCidr6, overlaps6, parseIp6 } from '../../basics/ip6.js';
import type { Logger } from '../../basics/log.js';
import type { Lease } from '../../subnet/lease.js';
import { isInterfaceGone, type Route, type RouteTable } from '../../routes/route-table.js';
import type { RouteRecord } from './route-record.js';

/** Metric of the routes the agent installs (Windows' default for manual routes). */
export const ROUTE_METRIC = 256;
const ROUTE_WRITE_CONCURRENCY = 8;
/** The route table refused this one route: any status but a missing interface (an existing route is success). */
function isRouteRefusal(err: unknown): boolean {
  return err instanceof RouteError && err.status !== undefined && !isInterfaceGone(err);
}

/** Where the routes go: the vNIC's current index, and a way to look it up again. */
export interface RouteInterface {
  readonly index: number;
  /** Look the interface up again; true when its index changed. */
  refresh(): Promise<boolean>;
}

/** The management vNIC (the one holding the network's ManagementIP), re-resolved by IP on demand. */
export class ManagementVNic implements RouteInterface {
  private current: HostInterface;
  private refreshing: Promise<boolean> | undefined;

  constructor(
    private readonly host: Host,
    initial: HostInterface,
    private readonly log: Logger,
    /** Dual-stack: IPv6 forwarding follows the vNIC to its new index too. */
    private readonly ipv6 = false,
  ) {
    this.current = initial;
  }

  get index(): number {
    return this.current.index;
  }

  /** Look the vNIC up again by its IP; true when its index changed (forwarding is enabled on the new one). */
  refresh(): Promise<boolean> {
    this.refreshing ??= this.lookUp().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  private async lookUp(): Promise<boolean> {
    const found = findInterfaceByIP(await this.host.interfaces(), this.current.ipv4);
    if (!found || found.index === this.current.index) return false;
    this.log.info('the management vNIC has a new interface index; routes follow it', { interface: found.name, ip: found.ipv4, index: found.index, previous: this.current.index });
    this.current = found;
    if (!(await this.host.getForwarding(found.index))) await this.host.setForwarding(found.index, true);
    if (this.ipv6 && !(await this.host.getForwarding(found.index, 'ipv6'))) await this.host.setForwarding(found.index, true, 'ipv6');
    return true;
  }
}

/**
 * Which routes a peer needs (on the interface `index()` names now; with `dualStack`, its IPv6 subnet via
 * its public IPv6 too) and when a route read back already is one: the agent's driver writes by this rule
 * and `flanneld doctor` judges the node's routes by it (src/commands/doctor-checks.ts).
 */
export function hostGwRouteItems(index: () => number, dualStack: boolean): ItemSource<Route> & PlanOps<Route, Route> {
  return {
    desiredFor: (peer: Lease) => {
      const v4: Route = { destinationPrefix: peer.subnet, nextHop: peer.publicIP, interfaceIndex: index(), metric: ROUTE_METRIC };
      if (!dualStack || peer.ipv6Subnet === undefined || peer.publicIPv6 === undefined) return [v4];
      // The next hop as Windows prints it back (RFC 5952), so the diff never sees a spelling as a change.
      const nextHop = formatIp6(parseIp6(peer.publicIPv6) ?? 0n);
      return [v4, { destinationPrefix: peer.ipv6Subnet, nextHop, interfaceIndex: index(), metric: ROUTE_METRIC }];
    },
    actualKey: (r) => r.destinationPrefix,
    desiredKey: (r) => r.destinationPrefix,
    same: (a, d) => a.nextHop === d.nextHop,
  };
}

export function hostGwRouteDriver(opts: {
  routes: RouteTable;
  network: string;
  ownSubnet: string;
  vnic: RouteInterface;
  /** Throws (a network-gone error) when the backing HNS network no longer exists; checked before each read. */
  checkNetwork?: () => Promise<void>;
  networkGone?: (err: unknown) => boolean;
  /** The routes the agent created: only these are read as actual (and so ever removed). Without it, every route inside Network is. */
  record?: RouteRecord;
  log?: Logger;
  /**
   * Dual-stack: the IPv6Network and the own IPv6 subnet. A peer with an IPv6 half then gets a second
   * route (its IPv6 subnet via its public IPv6, CreateIpForwardEntry2 with AF_INET6), and the IPv6 routes
   * inside IPv6Network on the vNIC are read and swept as the IPv4 ones are (one diff, keyed by prefix).
   */
  ipv6?: { network: string; ownSubnet: string };
}): LeaseDriver<Route, Route> {
  const { routes, network, ownSubnet, vnic, record, ipv6 } = opts;
  /** Routes inside Network the agent did not create, as last read; each overlap with a peer's subnet is told once. */
  let foreign: Route[] = [];
  const told = new Set<string>();
  /** Two prefixes of one family overlap (IPv4 with ip4's overlaps, IPv6 with ip6's). */
  const overlap = (x: string, y: string) => (x.includes(':') ? y.includes(':') && overlaps6(x, y) : !y.includes(':') && overlaps(x, y));
  const tellOverlap = (f: Route, peer: string) => {
    const k = `${f.destinationPrefix} via ${f.nextHop}`;
    if (told.has(k)) return;
    told.add(k);
    opts.log?.warn("a route flanneld did not create overlaps a peer's subnet; it is kept (remove it if it is stale: it competes with the peer's route)", {
      route: f.destinationPrefix,
      nextHop: f.nextHop,
      interfaceIndex: f.interfaceIndex,
      peerSubnet: peer,
    });
  };
  /** Write on the vNIC's current index; after a 1168 (no such interface), re-resolve it once and retry. */
  const write = async (r: Route): Promise<void> => {
    try {
      await routes.add({ ...r, interfaceIndex: vnic.index });
    } catch (err) {
      if (!isInterfaceGone(err) || !(await vnic.refresh())) throw err;
      await routes.add({ ...r, interfaceIndex: vnic.index });
    }
  };
  return {
    name: 'host-gw routes',
    driftKind: 'route',
    ...hostGwRouteItems(() => vnic.index, ipv6 !== undefined),
    async readActual() {
      await opts.checkNetwork?.();
      const index = vnic.index;
      const all = await routes.list(index);
      const v4 = all.filter((r) => r.interfaceIndex === index && r.destinationPrefix !== ownSubnet && cidrContains(network, r.destinationPrefix));
      let inside = v4;
      if (ipv6) {
        const own6 = normalizeCidr6(ipv6.ownSubnet);
        const v6 = (await routes.list(index, 'ipv6')).filter(
          (r) => r.interfaceIndex === index && normalizeCidr6(r.destinationPrefix) !== own6 && cidrContains6(ipv6.network, r.destinationPrefix),
        );
        inside = [...v4, ...v6];
      }
      if (!record) return inside;
      const ours = inside.filter((r) => record.has(r));
      foreign = inside.filter((r) => !record.has(r));
      for (const f of foreign) {
        const peer = ours.find((o) => overlap(o.destinationPrefix, f.destinationPrefix));
        if (peer) tellOverlap(f, peer.destinationPrefix);
      }
      return ours;
    },
    batch: 1,
    concurrency: ROUTE_WRITE_CONCURRENCY,
    remove: async ([r]) => {
      await routes.remove(r);
      record?.removed(r);
    },
    add: async ([r]) => {
      await write(r);
      record?.added(r);
      for (const f of foreign) if (f.nextHop !== r.nextHop && overlap(f.destinationPrefix, r.destinationPrefix)) tellOverlap(f, r.destinationPrefix);
    },
    toActual: (d) => ({ ...d, interfaceIndex: vnic.index }),
    failure: (err) => (isRouteRefusal(err) ? 'refused' : opts.networkGone?.(err) ? 'gone' : 'transient'),
  };
}

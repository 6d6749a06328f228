// The routes the host-gw agent created, kept beside subnet.env (`C:\run\flannel\routes.json`) as the boot
// record keeps the network (src/host/boot.ts): the agent and `flanneld cleanup` remove only a route this
// record names. A route inside the cluster Network that flanneld never created (an administrator's
// `10.244.200.0/24 via 10.0.0.99`) is someone else's: kept, and reported when it overlaps a peer's subnet.
// No upstream counterpart: flannel's hostgw_windows.go neither records nor sweeps its routes
// (flannel#2554). A route is named by destination and next hop; its interface index is not part of the
// name, because Windows gives the management vNIC a new index when the vSwitch is rebuilt.
// A route the agent would write identically (same destination and next hop) is adopted by the write:
// CreateIpForwardEntry2 answers ERROR_OBJECT_ALREADY_EXISTS, which the route table treats as success.
import { dirname, join } from 'node:path';
import { withoutBom } from '../../basics/bom.js';
import { errorMessage } from '../../basics/errors.js';
import { writeFileAtomicSync, type AtomicWriteFs } from '../../basics/fs.js';
import type { Logger } from '../../basics/log.js';
import type { Route } from '../../routes/route-table.js';

const ROUTE_RECORD_FILE = 'routes.json';

/** One recorded route: what names it across vNIC rebuilds. */
export interface RecordedRoute {
  destinationPrefix: string;
  nextHop: string;
}

export interface RouteRecordFs extends AtomicWriteFs {
  readFileSync(path: string, encoding: 'utf8'): string;
}

/** `C:\run\flannel\subnet.env` -> `C:\run\flannel\routes.json`. */
export function routeRecordPath(subnetFile: string): string {
  return join(dirname(subnetFile), ROUTE_RECORD_FILE);
}

const keyOf = (r: RecordedRoute) => `${r.destinationPrefix} via ${r.nextHop}`;

/** The routes a record's text names; undefined when it is not a route record. */
export function parseRouteRecord(text: string): RecordedRoute[] | undefined {
  try {
    const o = JSON.parse(withoutBom(text)) as { routes?: unknown };
    if (!Array.isArray(o.routes)) return undefined;
    return o.routes.filter(
      (r): r is RecordedRoute =>
        typeof r === 'object' && r !== null && typeof (r as RecordedRoute).destinationPrefix === 'string' && typeof (r as RecordedRoute).nextHop === 'string',
    );
  } catch {
    return undefined;
  }
}

/** The record at `path` (cleanup reads it): undefined when there is none or it is not a route record. */
export function readRouteRecord(path: string, fs: Pick<RouteRecordFs, 'readFileSync'>): RecordedRoute[] | undefined {
  try {
    return parseRouteRecord(fs.readFileSync(path, 'utf8'));
  } catch {
    return undefined;
  }
}

/** Where the record lives and the files it is read and written with (the host's: src/basics/fs.ts hostFiles). */
export interface RouteRecordStore {
  path: string;
  fs: RouteRecordFs;
}

/** The agent's record: loaded at start, written (atomically) on each change; no store = memory only. */
export class RouteRecord {
  private readonly routes = new Map<string, RecordedRoute>();

  constructor(
    private readonly store: RouteRecordStore | undefined,
    private readonly log: Logger,
  ) {
    for (const r of store ? (readRouteRecord(store.path, store.fs) ?? []) : []) this.routes.set(keyOf(r), { destinationPrefix: r.destinationPrefix, nextHop: r.nextHop });
  }

  has(r: RecordedRoute): boolean {
    return this.routes.has(keyOf(r));
  }

  /** Every recorded route. */
  list(): RecordedRoute[] {
    return [...this.routes.values()];
  }

  added(r: Route): void {
    if (this.has(r)) return;
    this.routes.set(keyOf(r), { destinationPrefix: r.destinationPrefix, nextHop: r.nextHop });
    this.save();
  }

  removed(r: Route): void {
    if (this.routes.delete(keyOf(r))) this.save();
  }

  /** A failed write is a warning: the route stays programmed; it is only not known as ours at the next start. */
  private save(): void {
    if (!this.store) return;
    try {
      writeFileAtomicSync(this.store.path, JSON.stringify({ routes: this.list() }) + '\n', this.store.fs);
    } catch (err) {
      this.log.warn('could not write the record of the routes flanneld created; a restarted agent will keep them as foreign', { path: this.store.path, error: errorMessage(err) });
    }
  }
}

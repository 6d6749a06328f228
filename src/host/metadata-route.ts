// The host's route to the cloud instance metadata service (169.254.169.254), kept across the vSwitch.
//
// Creating the first L2Bridge or Overlay network binds the NIC to a Hyper-V vSwitch: the node's address
// moves to `vEthernet (<nic>)`, which gets a new interface index, and the routes of the old interface go
// with it. Cloud images carry a /32 route to the metadata server on that NIC (Azure, AWS and GCE serve
// instance metadata and credentials there), so after the vSwitch the host can no longer reach it.
// sig-windows-tools re-adds it after flanneld has built the network (hostprocess/flannel/flanneld/
// start.ps1: `route /p add 169.254.169.254 mask 255.255.255.255 0.0.0.0`, sig-windows-tools#36), as does
// cloudfoundry-incubator/kubo-release jobs/flanneld-windows/templates/bin/post-start.ps1 ("add back GCP /
// AWS metadata server"). Here the agent notes the route before it builds the network and, if the route
// is gone afterwards, adds it again through the RouteTable on the interface that now holds the same
// address, with the same next hop and metric. A host without such a route gets none. It lives with the
// host seam, which uses the route table (as ./win32-host.ts reads the forward table); routes imports no host module.
import { errorMessage } from '../basics/errors.js';
import type { Logger } from '../basics/log.js';
import type { Route, RouteTable } from '../routes/route-table.js';
import type { Host } from './host.js';
import { findInterfaceByIP } from './select.js';

export const METADATA_PREFIX = '169.254.169.254/32';

export interface MetadataRouteNote {
  route: Route;
  /** The address of the interface the route was on (it survives the move to vEthernet). */
  interfaceIP: string;
}

/** The metadata route and its interface's address, before the vSwitch exists; undefined when there is none. */
export async function noteMetadataRoute(routes: RouteTable, host: Host): Promise<MetadataRouteNote | undefined> {
  const route = (await routes.list()).find((r) => r.destinationPrefix === METADATA_PREFIX);
  if (!route) return undefined;
  const iface = (await host.interfaces()).find((i) => i.index === route.interfaceIndex);
  return iface ? { route, interfaceIP: iface.ipv4 } : undefined;
}

export type MetadataRouteOutcome = 'present' | 'restored' | 'no-interface';

/** After the network is built: re-add the noted route when it is gone. */
export async function restoreMetadataRoute(note: MetadataRouteNote, routes: RouteTable, host: Host): Promise<MetadataRouteOutcome> {
  if ((await routes.list()).some((r) => r.destinationPrefix === METADATA_PREFIX)) return 'present';
  const iface = findInterfaceByIP(await host.interfaces(), note.interfaceIP);
  if (!iface) return 'no-interface';
  await routes.add({ ...note.route, interfaceIndex: iface.index });
  return 'restored';
}

/** restoreMetadataRoute with its outcome logged; never throws (pods do not depend on the host's metadata route). */
export async function keepMetadataRoute(note: MetadataRouteNote | undefined, routes: RouteTable, host: Host, log: Logger): Promise<void> {
  if (!note) return;
  const fields = { destination: METADATA_PREFIX, nextHop: note.route.nextHop, address: note.interfaceIP };
  try {
    const outcome = await restoreMetadataRoute(note, routes, host);
    if (outcome === 'restored') log.info('re-added the route to the cloud metadata server that the vSwitch took away', fields);
    else if (outcome === 'no-interface')
      log.warn(`no interface holds ${note.interfaceIP} any more: the route to the metadata server was not re-added; add it by hand (route add)`, fields);
  } catch (err) {
    log.warn('could not re-add the route to the cloud metadata server; add it by hand (route add)', { ...fields, error: errorMessage(err) });
  }
}

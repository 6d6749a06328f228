// The host NIC's own settings, kept across the vSwitch HNS builds on it.
//
// Creating the first L2Bridge or Overlay network on an adapter binds a Hyper-V vSwitch to it and replaces
// the NIC with a host vNIC `vEthernet (<nic>)` (./physical-adapter.ts). On Windows 2004/20H2 and later
// the vNIC can come up with DHCP settings only: a static address falls back to APIPA 169.254.x.x and the
// node drops off the network (kubernetes-sigs/sig-windows-tools#162, #105, microsoft/SDN#498,
// ovn-kubernetes/ovn-kubernetes#2530: "the static IP being removed, and DHCP being used on the new
// vEthernet adapter"); persistent routes are not carried over in any case (sig-windows-tools' start.ps1
// re-adds 169.254.169.254 by hand, ./metadata-route.ts). So the agent snapshots the NIC it chose before it
// builds the network and, once the network stands, restores on the vNIC what the operator had set by hand
// and the vNIC lacks: static IPv4/IPv6 addresses (CreateUnicastIpAddressEntry), static routes and
// gateways (CreateIpForwardEntry2) and static DNS servers (SetInterfaceDnsSettings), never through netsh.
// DHCP settings are left to the vNIC's DHCP client. Only the chosen NIC's successor is touched, and a
// side that could not be read is unknown: nothing is restored on a guess.
// The compare (planNicRestore) is pure; the reads and writes go through the Host and RouteTable seams.
import { errorMessage } from '../basics/errors.js';
import { cidrContains } from '../basics/ip4.js';
import { cidrContains6 } from '../basics/ip6.js';
import type { Logger } from '../basics/log.js';
import { nicRestoredEvent, type NodeEvents } from '../node-events.js';
import type { RouteTable } from '../routes/route-table.js';
import type { Host, HostInterface, NicConfiguration, NicRoute } from './host.js';
import { isHostVNic } from './physical-adapter.js';

/** What to put back on the vNIC. */
export interface NicRestorePlan {
  addresses: { address: string; prefixLength: number }[];
  routes: NicRoute[];
  /** Set only when the hand-set DNS servers differ and both sides were read. */
  dnsServers?: string[];
}

const routeKey = (r: NicRoute): string => `${r.destinationPrefix} ${r.nextHop}`;

/** A route into the cluster's pod network is the agent's own (host-gw peers), reprogrammed by its loop, never restored from a snapshot. */
function intoClusterNetwork(prefix: string, clusterNetworks: readonly string[]): boolean {
  const v6 = prefix.includes(':');
  return clusterNetworks.some((n) => n.includes(':') === v6 && (v6 ? cidrContains6(n, prefix) : cidrContains(n, prefix)));
}

/**
 * What the NIC had by hand (origin manual) and its vNIC lacks: addresses by address, routes by destination
 * and next hop (a route still there under another metric is left alone; one into `clusterNetworks` is the
 * agent's), DNS servers as a list (set again when the vNIC's hand-set list is not the snapshot's; one the
 * vNIC holds beside them is left alone).
 */
export function planNicRestore(before: NicConfiguration, after: NicConfiguration, clusterNetworks: readonly string[] = []): NicRestorePlan {
  const held = new Set(after.addresses.map((a) => a.address));
  const routed = new Set(after.routes.map(routeKey));
  const addresses = before.addresses.filter((a) => a.origin === 'manual' && !held.has(a.address)).map(({ address, prefixLength }) => ({ address, prefixLength }));
  const routes = before.routes.filter((r) => r.origin === 'manual' && !routed.has(routeKey(r)) && !intoClusterNetwork(r.destinationPrefix, clusterNetworks));
  const dnsLost =
    before.dnsServers !== undefined && after.dnsServers !== undefined && before.dnsServers.length > 0 && !before.dnsServers.every((s, i) => after.dnsServers![i] === s);
  return { addresses, routes, ...(dnsLost ? { dnsServers: [...before.dnsServers!] } : {}) };
}

export function nicRestoreEmpty(plan: NicRestorePlan): boolean {
  return plan.addresses.length === 0 && plan.routes.length === 0 && plan.dnsServers === undefined;
}

/** `address 10.0.0.7/24, route 0.0.0.0/0 via 10.0.0.1, DNS servers 10.0.0.2`. */
export function describeNicRestore(plan: NicRestorePlan): string {
  return [
    ...plan.addresses.map((a) => `address ${a.address}/${a.prefixLength}`),
    ...plan.routes.map((r) => `route ${r.destinationPrefix} via ${r.nextHop}`),
    ...(plan.dnsServers ? [`DNS servers ${plan.dnsServers.join(',')}`] : []),
  ].join(', ');
}

/** The chosen NIC's configuration, read before the network is built. */
export interface NicSnapshot {
  /** The adapter's name as chosen (`Ethernet`, or `vEthernet (Ethernet)` when the vSwitch already stood). */
  name: string;
  config: NicConfiguration;
  /** net-conf's Network and IPv6Network: routes into them are the agent's. */
  clusterNetworks: string[];
}

/** Read the chosen NIC; undefined when this host cannot tell (no such read, or it failed): then nothing is restored. */
export async function snapshotNic(host: Host, iface: HostInterface, clusterNetworks: readonly string[], log: Logger): Promise<NicSnapshot | undefined> {
  if (!host.nicConfiguration) return undefined;
  try {
    return { name: iface.name, config: await host.nicConfiguration(iface.index), clusterNetworks: [...clusterNetworks] };
  } catch (err) {
    log.warn('could not read the settings of the chosen NIC; if HNS drops them when it builds the network they are not restored', {
      interface: iface.name,
      error: errorMessage(err),
    });
    return undefined;
  }
}

/** The adapter that stands for the chosen NIC now: its vNIC `vEthernet (<name>)`, else the NIC itself. */
function successorOf(interfaces: readonly HostInterface[], name: string): HostInterface | undefined {
  const want = isHostVNic(name) ? name : `vEthernet (${name})`;
  const lower = (s: string) => s.toLowerCase();
  return interfaces.find((i) => lower(i.name) === lower(want)) ?? interfaces.find((i) => lower(i.name) === lower(name));
}

const unsupported = (what: string): Promise<never> => Promise.reject(new Error(`this host cannot ${what}`));

export type NicKeepOutcome = 'kept' | 'restored' | 'partly-restored' | 'unknown';

export interface NicKeeperDeps {
  host: Host;
  routes: RouteTable;
  log: Logger;
  events: NodeEvents;
}

/**
 * After the network is built (and after each rebuild): compare the vNIC with the snapshot and restore what
 * it lost, with a log line and an Event naming it. Never throws: the node's own settings are the
 * operator's, and a failed write is told, not retried on a guess.
 */
export async function keepNic(snapshot: NicSnapshot | undefined, deps: NicKeeperDeps): Promise<NicKeepOutcome> {
  const { host, routes, log, events } = deps;
  if (!snapshot || !host.nicConfiguration) return 'unknown';
  let vnic: HostInterface | undefined;
  let now: NicConfiguration;
  try {
    vnic = successorOf(await host.interfaces(), snapshot.name);
    if (!vnic) {
      log.warn(`no interface stands for ${snapshot.name} after HNS built the network: its settings were not compared; check the adapter (ipconfig /all)`, {
        interface: snapshot.name,
      });
      return 'unknown';
    }
    now = await host.nicConfiguration(vnic.index);
  } catch (err) {
    log.warn('could not read the vNIC after HNS built the network: its settings were not compared', { interface: snapshot.name, error: errorMessage(err) });
    return 'unknown';
  }
  const plan = planNicRestore(snapshot.config, now, snapshot.clusterNetworks);
  if (nicRestoreEmpty(plan)) return 'kept';
  const target = vnic;
  const dns = plan.dnsServers;
  const steps: { what: string; write: () => Promise<void> }[] = [
    ...plan.addresses.map((a) => ({
      what: `address ${a.address}/${a.prefixLength}`,
      write: () => host.addUnicastAddress?.(target.index, a.address, a.prefixLength) ?? unsupported('add an address'),
    })),
    ...plan.routes.map((r) => ({
      what: `route ${r.destinationPrefix} via ${r.nextHop}`,
      write: () => routes.add({ destinationPrefix: r.destinationPrefix, nextHop: r.nextHop, interfaceIndex: target.index, metric: r.metric }),
    })),
    ...(dns ? [{ what: `DNS servers ${dns.join(',')}`, write: () => host.setDnsServers?.(target.index, dns) ?? unsupported('set DNS servers') }] : []),
  ];
  // In order: an address before the routes whose next hop it makes on-link.
  const done: string[] = [];
  const failed: string[] = [];
  for (const step of steps) {
    try {
      await step.write();
      done.push(step.what);
    } catch (err) {
      failed.push(`${step.what} (${errorMessage(err)})`);
    }
  }
  const restored = done.join(', ') || 'nothing';
  const fields = { nic: snapshot.name, vnic: target.name, index: target.index, restored, ...(failed.length > 0 ? { failed: failed.join('; ') } : {}) };
  if (failed.length > 0) log.error(`HNS dropped settings of ${snapshot.name} when it replaced it with ${target.name}; some could not be restored: set them by hand`, fields);
  else log.warn(`restored the settings HNS dropped from ${snapshot.name} when it replaced it with ${target.name}`, fields);
  events.record(nicRestoredEvent(snapshot.name, target.name, restored, failed));
  return failed.length > 0 ? 'partly-restored' : 'restored';
}

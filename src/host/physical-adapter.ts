// The physical adapter an L2Bridge or Overlay network must be built on. On Windows, building such a
// network binds a vSwitch to a physical NIC and moves the NIC's IPv4 address to a host vNIC
// `vEthernet (...)` (hcsshim internal/hns/hnsnetwork.go `NetworkAdapterName`, hcn/hcnnetwork.go
// `NetAdapterName` policy). So after a restart the external interface the agent finds by IP is that vNIC,
// and naming it as the adapter of a new network fails: HNS binds vSwitches to physical adapters only, and
// once the old network is deleted the vNIC is gone. The adapter is therefore resolved, in order, from:
//  1. the external interface itself, when it is not a host vNIC;
//  2. the HNS network that holds the interface's IP (the old network, or another one sharing the vSwitch):
//     its `NetworkAdapterName`;
//  3. the adapter table: once the old network is deleted the IP moves back to the physical NIC.
import { HostError } from '../basics/errors.js';
import type { Clock } from '../basics/clock.js';
import type { HnsNetworkV1 } from '../hns/schema.js';
import type { Host, HostInterface } from './host.js';
import { findInterfaceByIP } from './select.js';

/** `vEthernet (...)`: a host vNIC of a vSwitch or a host-attached endpoint, never a physical adapter. */
export function isHostVNic(name: string): boolean {
  return /^vEthernet \(.*\)$/i.test(name);
}

/** Step 1 and 2: the adapter name when it is known without waiting, else undefined. */
export function knownPhysicalAdapter(iface: HostInterface, networks: readonly HnsNetworkV1[]): string | undefined {
  if (!isHostVNic(iface.name)) return iface.name;
  const holder = networks.find((n) => n.ManagementIP === iface.ipv4 && n.NetworkAdapterName && !isHostVNic(n.NetworkAdapterName));
  return holder?.NetworkAdapterName;
}

export interface ResolveAdapterOptions {
  host: Host;
  iface: HostInterface;
  /** HNS networks as they are now (v1 view: NetworkAdapterName, ManagementIP). */
  networks: readonly HnsNetworkV1[];
  clock: Clock;
  signal?: AbortSignal;
  /** How long to wait for the IP to move back to the physical NIC (step 3). */
  timeoutMs?: number;
  intervalMs?: number;
}

/** The physical adapter name for a new vSwitch network; FLANNEL_ERR_HOST when none can be found. */
export async function resolvePhysicalAdapter(opts: ResolveAdapterOptions): Promise<string> {
  const known = knownPhysicalAdapter(opts.iface, opts.networks);
  if (known) return known;
  const deadline = opts.clock.now() + (opts.timeoutMs ?? 10_000);
  for (;;) {
    const holder = findInterfaceByIP(await opts.host.interfaces(), opts.iface.ipv4);
    if (holder && !isHostVNic(holder.name)) return holder.name;
    if (opts.clock.now() >= deadline) break;
    await opts.clock.sleep(opts.intervalMs ?? 500, opts.signal);
  }
  throw new HostError(
    'FLANNEL_ERR_HOST',
    `cannot find the physical adapter behind ${opts.iface.name} (${opts.iface.ipv4}): no HNS network names it and the address did not move back to a physical adapter; pass --iface <physical adapter name>`,
    { interface: opts.iface.name, ip: opts.iface.ipv4 },
  );
}

// Lease records and the SubnetManager seam. Mirrors flannel pkg/lease/types.go and pkg/subnet/subnet.go
// (Manager), reduced to what a Windows node needs: IPv4 leases with an optional IPv6 half (dual-stack), kube or etcd behind one interface.
import type { Random } from '../basics/clock.js';
import type { KubeHttp } from '../kube/http.js';
import { noNodeEvents, type NodeEvents } from '../node-events.js';
import type { SubnetTimings } from './timings.js';

/** vxlan BackendData as flannel publishes it: `{"VNI":4096,"VtepMAC":"00:15:5d:b3:ac:db"}`. */
export interface VxlanBackendData {
  VNI: number;
  VtepMAC: string;
}

/** One node's claim on a subnet, as small as a peer needs (full Node objects are never kept). */
export interface Lease {
  /** Stable identity of the record: the Node name (kube) or the subnet key (etcd). */
  key: string;
  /** IPv4 subnet in CIDR notation, network address, e.g. `10.244.3.0/24`. */
  subnet: string;
  /** Dotted IPv4 of the node (the VTEP / next hop). */
  publicIP: string;
  /** `vxlan`, `host-gw`, ... exactly as published. */
  backendType: string;
  /** Parsed backend-data JSON (`null` for host-gw). */
  backendData: unknown;
  /**
   * Dual-stack only (EnableIPv6): the node's IPv6 subnet (network-address form) and the IPv6 address
   * peers route it to (flannel Lease.IPv6Subnet, LeaseAttrs.PublicIPv6). Absent on IPv4-only networks,
   * and on a peer that publishes no IPv6 (it keeps its IPv4 route only).
   */
  ipv6Subnet?: string;
  publicIPv6?: string;
  /**
   * kube only: the Node's metadata.creationTimestamp (ms since epoch), which decides who holds a
   * contested subnet at start-up (src/peers/store.ts); undefined = unknown (counts as the newest).
   */
  created?: number;
}

/** What this node publishes about itself (flannel LeaseAttrs). */
export interface LeaseAttrs {
  publicIP: string;
  /** Dual-stack only: the IPv6 address peers route this node's IPv6 subnet to. */
  publicIPv6?: string;
  backendType: string;
  /** JSON-encodable backend data; `null` for host-gw. */
  backendData: unknown;
}

/** One peer as the list-watch last saw it: its lease, or `undefined` (deleted, or no usable lease now). */
export interface PeerLease {
  /** The lease key: the Node name (kube) or the subnet key (etcd). */
  key: string;
  lease: Lease | undefined;
}

/**
 * What a SubnetManager reports about the cluster, straight to the peer store (src/peers/store.ts),
 * which alone keeps the peer set and filters what did not change: `peers` as they are listed (page by
 * page) or watched, one entry per node seen; `listed` once a complete list ended, naming every key it
 * held, so that a key missing from it is gone.
 */
export type LeaseUpdate = { kind: 'peers'; peers: PeerLease[] } | { kind: 'listed'; keys: ReadonlySet<string> };

/** Called with the own subnet (CIDR) once known; returns the attributes to publish. */
export type LeaseAttrsSource = (subnet: string) => Promise<LeaseAttrs>;

export type LeaseUpdateHandler = (update: LeaseUpdate) => void;

/**
 * The own lease changed outside the agent (kube: the own Node): `lost` (deleted; the reason says so),
 * `back` (it is there again, the same one), `replaced` (deleted and registered again, now with `subnet`,
 * the new Node's creationTimestamp `created` in ms since the epoch, if known): the lease is to be taken again.
 */
export type OwnLeaseChange = { kind: 'lost'; reason: string } | { kind: 'back' } | { kind: 'replaced'; subnet: string; created?: number; reason: string };

/** A claim on a subnet: the claimant's name (kube: the Node's) and creation time (ms since the epoch; undefined = unknown). */
export interface SubnetClaim {
  key: string;
  created?: number;
}

/**
 * Whether claim `a` keeps a subnet against claim `b` (docs/compatibility.md, "Who holds a contested
 * subnet"): the older Node (metadata.creationTimestamp; an unknown time counts as the newest) and, with
 * equal times (the API server's are whole seconds), the one whose name sorts first. A total order: of two
 * claimants exactly one wins, whichever of them asks.
 */
export function claimsFirst(a: SubnetClaim, b: SubnetClaim): boolean {
  const ta = a.created ?? Infinity;
  const tb = b.created ?? Infinity;
  return ta < tb || (ta === tb && a.key < b.key);
}

/** Of `claims`, the one that keeps the subnet against `own`: the first by claimsFirst, if it claims before `own`. */
export function keeperAgainst<C extends SubnetClaim>(claims: Iterable<C>, own: SubnetClaim): C | undefined {
  let keeper: C | undefined;
  for (const c of claims) if (claimsFirst(c, own) && (!keeper || claimsFirst(c, keeper))) keeper = c;
  return keeper;
}

/** How acquireLease publishes the lease. */
export interface AcquireOptions {
  /**
   * kube: keep what the own Node's annotations would change unpublished until confirmLease: the agent
   * builds its network and programs its peers meanwhile (src/agent/lease-rounds.ts). etcd allocates a free subnet and
   * publishes at once.
   */
  hold?: boolean;
}

export interface SubnetManager {
  /** `kube` or `etcd`. */
  readonly name: string;
  /**
   * Find the own subnet (kube: the node's podCIDR; etcd: allocate one), call `attrsFor(subnet)` to
   * learn what to publish (vxlan creates its HNS network there to learn the VtepMAC, so a lease is never
   * published with an empty VtepMAC), publish it (unless `opts.hold`) and return the lease. `publicIP` of
   * the result may differ from the attrs' when the node overrides it (node-public-ip / public-ip-overwrite).
   */
  acquireLease(attrsFor: LeaseAttrsSource, signal: AbortSignal, opts?: AcquireOptions): Promise<Lease>;
  /**
   * kube, after acquireLease with `hold`: resolves once the first complete Node list (the lease watch's)
   * says no other Node keeps the own podCIDR against the own Node (claimsFirst), having published what
   * acquireLease held; rejects with FLANNEL_ERR_SUBNET_CONTESTED, and a Warning Event, when one does,
   * publishing nothing. Undefined when there is nothing to hold: acquireLease found the annotations as it
   * would write them and `published` says the agent's files do too (a restart). Upstream lists the Nodes
   * before AcquireLease (flannel pkg/subnet/kube/kube.go) but takes the podCIDR whatever they hold.
   */
  confirmLease?(published: boolean, signal: AbortSignal): Promise<void> | undefined;
  /**
   * List + watch peer leases until `signal` aborts: `peers` per list page and per watch event, `listed`
   * after every complete (re)list. Reconnects by itself; rejects only on a fatal error.
   */
  watchLeases(onUpdate: LeaseUpdateHandler, signal: AbortSignal): Promise<void>;
  /** Called once the dataplane is programmed for the own lease (kube: NetworkUnavailable=False). */
  completeLease(lease: Lease, signal: AbortSignal): Promise<void>;
  /**
   * Publish changed backend attributes of the acquired lease (vxlan: the DR MAC HNS gave a rebuilt
   * network), so peers follow: kube patches the backend-data annotation, etcd rewrites the lease value.
   */
  republishLease(lease: Lease, attrs: LeaseAttrs, signal: AbortSignal): Promise<void>;
  /**
   * Where Events about the own node go (kube: core/v1 Events on the own Node, once the lease names it).
   * The etcd manager has no API server and records none.
   */
  nodeEvents?(lease: Lease): NodeEvents;
  /** kube: the own Node's InternalIP addresses as last read (the dual-stack guidance warns on one family). */
  nodeInternalIPs?(): readonly string[] | undefined;
  /**
   * Whether pods can start on this node although the network is up (the agent's CNI config check):
   * kube sets NetworkUnavailable=True with `reason` and `message` while `problem` is given, False again
   * once it is cleared. The etcd manager has no node condition.
   */
  reportPodNetwork?(problem: { reason: string; message: string } | undefined, signal: AbortSignal): Promise<void>;
  /**
   * Where changes of the own lease made outside the agent are told, from the lease watch once a lease
   * was acquired (kube: the own Node deleted, or deleted and registered again). Set once; etcd has none.
   */
  onOwnLeaseChange?(handler: (change: OwnLeaseChange) => void): void;
  /**
   * kube: the Node without a lease (no flannel annotations yet) whose podCIDR is `subnet` and that keeps it
   * against the own Node created at `created` (claimsFirst); the peer store knows only leases. etcd has none.
   */
  unleasedKeeper?(subnet: string, created: number | undefined): string | undefined;
  /** kube: resolves once no Node without a lease keeps `subnet` (unleasedKeeper); rejects when `signal` aborts. */
  whenUnleasedFree?(subnet: string, created: number | undefined, signal: AbortSignal): Promise<void>;
  /**
   * kube: what another list-watch of the same API server is built with (the NetworkPolicy controller's,
   * src/policy/sources.ts), so it shares the manager's client, timings, page size and jitter. etcd has none.
   */
  readonly watchDeps?: ApiWatchDeps;
}

/** The kube subnet manager's client and list-watch settings, for another list-watch of the same API server. */
export interface ApiWatchDeps {
  http: KubeHttp;
  timings: SubnetTimings;
  listPageSize: number;
  random: Random;
}

/** `{VNI: number, VtepMAC: string}` as flannel's vxlan backend-data (the MAC may still be invalid). */
export function isVxlanBackendData(d: unknown): d is VxlanBackendData {
  return d !== null && typeof d === 'object' && typeof (d as VxlanBackendData).VNI === 'number' && typeof (d as VxlanBackendData).VtepMAC === 'string';
}

/** Where Events about the own node go: the subnet manager's recorder (kube), else nowhere (etcd). */
export function ownNodeEvents(manager: SubnetManager, lease: Lease): NodeEvents {
  return manager.nodeEvents?.(lease) ?? noNodeEvents;
}

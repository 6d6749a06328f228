// Every reason a peer lease is rejected for (src/peers/validate.ts decides them; docs/compatibility.md, "Peers
// are validated"). The validator, the problems ledger (./problems.ts: the metric's labels and the Events) and
// the store read the same list. No upstream counterpart: flannel trusts peer leases.

/**
 * Every reason a peer lease is rejected for: short machine labels, used as the `reason` label of
 * `flannel_leases_rejected_total` (pre-registered at zero, one series per reason).
 */
export const LEASE_REJECT_REASONS = [
  'subnet-invalid',
  'subnet-not-network-address',
  'subnet-outside-network',
  'subnet-length',
  'subnet-overlaps-own',
  'subnet-overlaps-peer',
  'subnet-equals-own',
  'subnet-ipv6-only',
  'public-ip-invalid',
  'public-ip-not-unicast',
  'public-ip-inside-network',
  'backend-type-mismatch',
  'backend-data-invalid',
  'vni-invalid',
  'vni-too-low',
  'vni-mismatch',
  'public-ip-link-local',
  'public-ip-own',
  'public-ip-off-link',
  'public-ip-broadcast',
  'vtep-mac-invalid',
] as const;

export type LeaseRejectReason = (typeof LEASE_REJECT_REASONS)[number];

/**
 * The reasons a dual-stack lease's IPv6 half alone is rejected for (its IPv4 route is kept): the `reason`
 * label of `flannel_leases_ipv6_rejected_total`, pre-registered at zero.
 */
export const IPV6_REJECT_REASONS = [
  'subnet-invalid',
  'subnet-not-network-address',
  'subnet-outside-network',
  'subnet-length',
  'subnet-equals-own',
  'subnet-overlaps-own',
  'public-ip-invalid',
  'public-ip-link-local',
  'public-ip-not-unicast',
  'public-ip-own',
  'public-ip-inside-network',
  'public-ip-off-link',
] as const satisfies readonly LeaseRejectReason[];

export type IPv6RejectReason = (typeof IPV6_REJECT_REASONS)[number];

/** The reasons that are a conflict between two peers over one subnet (flannel_subnet_conflicts_total, a contested Event). */
export const CONFLICT_REASONS: ReadonlySet<string> = new Set<LeaseRejectReason>(['subnet-overlaps-peer']);

/**
 * The reasons that say the peer and this node were configured for different clusters: they compare the
 * peer's lease with what net-conf.json's Backend sets, a value every node of a flannel cluster must
 * share (the Type; the VNI, and Windows' floor under it, whose fix is the cluster's net-conf). Any other
 * reason is a fault of that one peer (its podCIDR, its public IP, its VtepMAC, its backend-data), which
 * the peer's own fix ends. When every peer is rejected for one of these, this node reaches no other
 * node: it is broken, not the peers (src/peers/cluster-mismatch.ts). The vxlan port is no lease field
 * (flannel's vxlan backend-data holds only VNI and VtepMAC, pkg/backend/vxlan/vxlan.go), so no reason can
 * name it; `flanneld doctor`'s cluster-vni row reads it from the Linux ConfigMap.
 */
export const CLUSTER_CONFIG_REASONS: ReadonlySet<string> = new Set<LeaseRejectReason>(['backend-type-mismatch', 'vni-mismatch', 'vni-too-low']);

// The one status type of a running network: what the peer store and the reconciler keep, and what
// /healthz, /readyz, /metrics' gauges, `/status` and `flanneld status` read. It lives at the top of src/ so
// that the health server reads it without importing the layers that fill it in (the one type it takes from
// the reconcile loop is erased at build).
import type { ReconcileStatus } from './reconcile/reconciler.js';

/** One item the dataplane refuses now (a peer's route or policy). */
export interface RefusedItem {
  /** The peer (node) the item is for, when known. */
  node: string | undefined;
  /** The item's key: the peer's prefix. */
  prefix: string;
  /** The HRESULT (HNS) or route status, else the error code. */
  answer: string;
  attempts: number;
  /** When the dataplane first gave this answer (ms since the epoch). */
  since: number;
  error: string;
}

/** A peer whose current lease is rejected, or (`family: 'ipv6'`) whose lease is accepted but for its IPv6 half. */
export interface RejectedLease {
  key: string;
  /** Only the IPv6 half is rejected: `subnet` and `publicIP` are its IPv6 podCIDR and public IPv6; the IPv4 route is kept. */
  family?: 'ipv6';
  subnet: string;
  publicIP: string;
  /** One of LEASE_REJECT_REASONS (src/peers/reject-reasons.ts); `flanneld status` reads it off the wire as text. */
  reason: string;
  message: string;
  /** The peer's backend type, and its VNI when its backend-data has a number there (vxlan). */
  backendType: string;
  vni?: number;
}

/** The network's state as the peer store and the reconcile loop (its passes: ReconcileStatus, which the loop declares) know it now. */
export interface NetworkStatus extends ReconcileStatus {
  /** The first complete list of the peer leases has arrived; until then the agent is not ready. */
  listed: boolean;
  /** The last pass found the HNS network gone and it is not rebuilt yet. */
  networkMissing: boolean;
  /** Accepted peers (with items), and how many of them the dataplane holds completely. */
  peersDesired: number;
  peersProgrammed: number;
  /** Peer items the dataplane currently refuses, and which. */
  refusedItems: RefusedItem[];
  /** Peer leases rejected now, with the reason. */
  rejections: RejectedLease[];
}

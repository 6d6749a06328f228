// The reconcile driver seam (what a backend's dataplane writer implements) and the types a pass and
// the Reconciler's status report in.
import type { Lease } from '../subnet/lease.js';
import type { RefusedItem } from './refusals.js';

export interface PlanOps<A, D> {
  actualKey(a: A): string;
  desiredKey(d: D): string;
  /** True when actual item `a` already is desired item `d` (no write needed). */
  same(a: A, d: D): boolean;
}

export interface ReconcilePlan<A, D> {
  add: D[];
  remove: A[];
  replace: { from: A; to: D }[];
  unchanged: number;
}

export interface ReconcileDriver<A, D> extends PlanOps<A, D> {
  /** Short name for logs and metrics (`host-gw routes`, `vxlan RemoteSubnetRoute policies`). */
  name: string;
  /** The actual dataplane items this driver owns. Throws a network-gone error when the network is missing. */
  readActual(): Promise<A[]>;
  /** One write removing these items (at most `batch` of them). */
  remove(items: A[]): Promise<void>;
  /** One write adding these items (at most `batch` of them). */
  add(items: D[]): Promise<void>;
  /** Items per write call (default: all of them in one). */
  batch?: number;
  /** Write calls in flight at once (default 1). */
  concurrency?: number;
  /** What a successful add of `d` leaves in the dataplane. Without it every pass reads (no incremental apply). */
  toActual?(d: D): A;
  /** True when `err` refuses the items of one write (split the batch to find them), not the call as a whole. */
  refuses?(err: unknown): boolean;
  /** True when `err` says the network this driver writes to no longer exists. */
  networkGone?(err: unknown): boolean;
  /** Called after each full pass: close what incremental writes kept open (an HCN network handle). */
  release?(): Promise<void>;
}

/** A driver that also says which items a validated peer lease needs (a RouteNetwork writes through one). */
export interface LeaseDriver<A, D> extends ReconcileDriver<A, D> {
  desiredFor(peer: Lease): D[];
}

export interface PassResult {
  ok: boolean;
  added: number;
  removed: number;
  replaced: number;
  /** True when nothing was attempted because the first complete list has not arrived (`markSynced`). */
  skipped?: boolean;
  /** Items the dataplane refused in this pass (retried on their own backoff). */
  refused?: number;
  /** The pass found the network gone. */
  networkGone?: boolean;
  error?: unknown;
}

export interface ReconcilerStatus {
  /** `markSynced()` was called: the desired set is complete. */
  synced: boolean;
  /** The last pass wrote everything and nothing changed since (no refused item either). */
  inSync: boolean;
  lastSuccessAt: number | undefined;
  /** When the loop was last known good: now while it idles after a successful pass, else `lastSuccessAt`. */
  lastGoodAt: number | undefined;
  passes: number;
  consecutiveFailures: number;
  /** The last pass found the network gone and it has not been rebuilt yet. */
  networkMissing: boolean;
  /** Items the dataplane currently refuses, and which. */
  refused: number;
  refusedItems: RefusedItem[];
  /** When the last pass ended, and whether it succeeded. */
  lastPassAt: number | undefined;
  lastPassOk: boolean | undefined;
  /** The last failed pass: when, and its error. */
  lastError: { at: number; message: string } | undefined;
  /** Peers with desired items, and how many of them the dataplane holds completely. */
  peersDesired: number;
  peersProgrammed: number;
}

// The Nodes that have a podCIDR but no flannel lease (no `kube-subnet-manager` annotation yet: a Node whose
// flanneld has not started), followed through the Node list-watch for as long as the agent runs. The peer
// store (../../peers/store.ts) knows only leases, yet such a Node holds its podCIDR too: the node IPAM
// controller allocated it, and its flanneld, when it starts, lists the Nodes and goes on if it claims first
// (./own-subnet-claimants.ts). So the own Node registered again with that podCIDR must not take it when
// that Node claims first (docs/compatibility.md, "Who holds a contested subnet": every Node with that
// spec.podCIDR counts, annotated or not). Upstream takes the podCIDR as its lease whatever others hold
// (flannel pkg/subnet/kube/kube.go AcquireLease). Only Nodes without a lease are kept, a handful at most
// in a running cluster, so the index costs nothing per peer. Pure: told what the watch saw.
import { whenHolds } from '../../basics/clock.js';
import { keeperAgainst, type SubnetClaim } from '../lease.js';
import { holdsLease, type NodeLease, type NodeObserver } from './node-list-watch.js';

export class UnleasedClaimants implements NodeObserver {
  /** Node name -> its claim (name, creation time) and podCIDR, for Nodes with a podCIDR and no lease. */
  private readonly claims = new Map<string, SubnetClaim & { subnet: string }>();
  /** During a list, the claims it has not shown yet: one it never shows was deleted while the watch was down. */
  private unlisted: Set<string> | undefined;
  /** whenFree's checks, run after every change. */
  private readonly checks = new Set<() => void>();

  /** The own Node's name: never its own claimant. */
  constructor(private readonly own: string) {}

  listStarted(): void {
    this.unlisted = new Set(this.claims.keys());
  }

  seen(rec: NodeLease): void {
    this.unlisted?.delete(rec.name);
    if (rec.name === this.own) return;
    const before = this.claims.get(rec.name);
    // Seen for every Node update (status updates included): the lease test is a field read, not toLease's decode.
    if (rec.podCIDR !== undefined && !holdsLease(rec)) {
      if (before?.subnet === rec.podCIDR) return;
      this.claims.set(rec.name, { key: rec.name, subnet: rec.podCIDR, ...(rec.created !== undefined ? { created: rec.created } : {}) });
    } else if (!this.claims.delete(rec.name)) return;
    this.changed();
  }

  deleted(rec: NodeLease): void {
    if (this.claims.delete(rec.name)) this.changed();
  }

  listEnded(): void {
    const unlisted = this.unlisted;
    this.unlisted = undefined;
    if (!unlisted?.size) return;
    for (const name of unlisted) this.claims.delete(name);
    this.changed();
  }

  /** The Node without a lease that keeps `subnet` against the own Node created at `created` (claimsFirst), if any. */
  keeperOf(subnet: string, created: number | undefined): string | undefined {
    const own: SubnetClaim = { key: this.own, ...(created !== undefined ? { created } : {}) };
    return keeperAgainst(
      [...this.claims.values()].filter((c) => c.subnet === subnet),
      own,
    )?.key;
  }

  /** Resolves once no Node without a lease keeps `subnet` (keeperOf); rejects when `signal` aborts. */
  whenFree(subnet: string, created: number | undefined, signal: AbortSignal): Promise<void> {
    return whenHolds(this.checks, () => this.keeperOf(subnet, created) === undefined, signal);
  }

  private changed(): void {
    for (const check of [...this.checks]) check();
  }
}

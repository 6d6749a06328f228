// The other Nodes with the own podCIDR, as the first complete Node list after a held lease shows them (the
// lease watch's list: the agent builds its network and programs its peers while it pages, ../../agent/lease-rounds.ts).
// Upstream lists the Nodes before it leases (flannel pkg/subnet/kube/kube.go: NewSubnetManager waits for its
// node informer's sync before AcquireLease) but takes its podCIDR whatever they hold. Here the Node that
// claims first (../lease.ts claimsFirst: the older metadata.creationTimestamp, with equal times the name that
// sorts first) keeps it, as the peer store decides between peers (../../peers/store.ts). Every Node with that
// spec.podCIDR counts, annotated by flannel or not: the podCIDR is the node IPAM controller's allocation, and
// a Node whose flanneld has not published yet (two nodes starting at once) must be seen by both sides for
// exactly one of them to go on. Pure: told what the list saw, it says who keeps the podCIDR once it is complete.
import { keeperAgainst, type SubnetClaim } from '../lease.js';
import type { NodeLease, NodeObserver } from './node-list-watch.js';

export interface OwnSubnetClaimantsOptions {
  /** The own Node's name, podCIDR and creation time. */
  own: SubnetClaim & { subnet: string };
  /** The first complete list ended: the Node that keeps the podCIDR against the own one, if any. */
  decided(keeper: SubnetClaim | undefined): void;
}

export class OwnSubnetClaimants implements NodeObserver {
  /** The other Nodes with the own podCIDR in the list so far. */
  private readonly others = new Map<string, SubnetClaim>();
  private done = false;

  constructor(private readonly o: OwnSubnetClaimantsOptions) {}

  /** A list that failed part-way decides nothing: the next one starts afresh. */
  listStarted(): void {
    this.others.clear();
  }

  seen(rec: NodeLease): void {
    if (rec.name === this.o.own.key) return;
    if (rec.podCIDR === this.o.own.subnet) this.others.set(rec.name, { key: rec.name, ...(rec.created !== undefined ? { created: rec.created } : {}) });
    else this.others.delete(rec.name);
  }

  deleted(rec: NodeLease): void {
    this.others.delete(rec.name);
  }

  listEnded(): void {
    if (this.done) return;
    this.done = true;
    const keeper = keeperAgainst(this.others.values(), this.o.own);
    this.others.clear();
    this.o.decided(keeper);
  }
}

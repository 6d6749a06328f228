// The own Node, followed through the Node list-watch after its lease was acquired: deleted (a DELETED
// event, or a complete list without it), and registered again (the same name with another metadata.uid,
// as a kubelet registers a deleted Node anew; the node IPAM controller may give it another podCIDR, never
// changed on a live Node: pkg/apis/core/validation ValidateNodeUpdate). Upstream flannel's kube subnet
// manager does not notice either (pkg/subnet/kube/kube.go handles the own Node as any other), so the
// agent went on with the old lease until a restart. Pure: told what the watch saw, it says what changed.
// After a re-registration it follows the new Node until the agent leases again (a new watch then): the
// agent may not take the new podCIDR at once (an older peer holds it), and that Node may be deleted and
// registered again meanwhile. In a list, what the own Node's record says is told once the list is complete
// (listEnded): whether another Node keeps its new podCIDR is decided from the peers and the Nodes without a
// lease (../lease.ts keeperAgainst), which know the list's other Nodes only then (a relist after 410 Gone
// may hold the re-registered own Node and an older Node with its podCIDR, in any order and page).
import type { OwnLeaseChange } from '../lease.js';
import type { NodeLease, NodeObserver } from './node-list-watch.js';

export interface OwnNodeWatchOptions {
  node: string;
  /** The uid of the Node the lease was taken from (undefined: the first one seen is taken as it). */
  uid: string | undefined;
  subnet: string;
  onChange: (change: OwnLeaseChange) => void;
}

export class OwnNodeWatch implements NodeObserver {
  /** The Node followed: the one the lease was taken from, then the one last reported as its replacement. */
  private uid: string | undefined;
  private gone = false;
  /** Between listStarted and listEnded. */
  private listing = false;
  /** The own Node's record the list held, told at listEnded. */
  private listed: NodeLease | undefined;

  constructor(private readonly o: OwnNodeWatchOptions) {
    this.uid = o.uid;
  }

  listStarted(): void {
    this.listing = true;
    this.listed = undefined;
  }

  seen(rec: NodeLease): void {
    if (rec.name !== this.o.node) return;
    if (this.listing) this.listed = rec;
    else this.follow(rec);
  }

  private follow(rec: NodeLease): void {
    this.uid ??= rec.uid;
    if (rec.uid === undefined || rec.uid === this.uid) {
      if (this.gone) {
        this.gone = false;
        this.o.onChange({ kind: 'back' });
      }
      return;
    }
    // Another Node by the same name: the old one was deleted (maybe unseen, during a relist).
    if (rec.podCIDR === undefined) {
      this.lost(`the own Node "${this.o.node}" was deleted and registered again (uid ${rec.uid}) but has no IPv4 podCIDR yet`);
      return;
    }
    const before = this.uid;
    this.uid = rec.uid;
    this.gone = false;
    this.o.onChange({
      kind: 'replaced',
      subnet: rec.podCIDR,
      ...(rec.created !== undefined ? { created: rec.created } : {}),
      reason: `the own Node "${this.o.node}" was deleted and registered again (uid ${before ?? '?'} -> ${rec.uid}, podCIDR ${this.o.subnet} -> ${rec.podCIDR})`,
    });
  }

  deleted(rec: NodeLease): void {
    if (rec.name !== this.o.node) return;
    if (rec.uid !== undefined && this.uid !== undefined && rec.uid !== this.uid) return; // an older incarnation
    this.lost(`the own Node "${this.o.node}" was deleted from the API server`);
  }

  listEnded(): void {
    const listed = this.listed;
    this.listing = false;
    this.listed = undefined;
    if (listed) this.follow(listed);
    else this.lost(`the own Node "${this.o.node}" is not in the Node list: it was deleted from the API server`);
  }

  private lost(reason: string): void {
    if (this.gone) return;
    this.gone = true;
    this.o.onChange({ kind: 'lost', reason });
  }
}

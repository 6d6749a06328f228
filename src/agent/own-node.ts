// The own Node as the lease watch reports it (../subnet/lease.ts onOwnLeaseChange; kube:
// ../subnet/kube/own-node-watch.ts): deleted from the API server, back, or registered anew. Deleted, the
// agent keeps its dataplane and is not ready until the Node is registered again. Registered anew, the agent
// leases again from the new Node, as a restart would, unless an older peer holds its new podCIDR: the rule
// the agent applies to peers (../peers/store.ts: the older Node keeps a contested subnet) holds for itself
// too (docs/compatibility.md, Who holds a contested subnet). It is one of the agent's parts (./part.ts): the
// contest is its problem, so /readyz and the NetworkUnavailable condition (./readiness.ts) both say it; the
// deleted Node is a not-ready reason only (there is no Node to tell). /status's fields come from here; it ends
// the agent's lease round (./lease-rounds.ts) through `leaseAgain`.
import type { Network } from '../backends/backend.js';
import type { Logger } from '../basics/log.js';
import type { StatusInput } from '../health/status.js';
import { NODE_EVENT_REASON, nodeReregisteredEvent, ownSubnetContestedEvent, ownSubnetContestedFix, type NodeEvents } from '../node-events.js';
import type { OwnLeaseChange } from '../subnet/lease.js';
import type { AgentPart, PodNetworkProblem } from './part.js';

export type OwnNodeReplaced = Extract<OwnLeaseChange, { kind: 'replaced' }>;

export interface OwnNodeOptions {
  log: Logger;
  /** The network the agent runs now (undefined before the first lease). */
  network(): Network | undefined;
  /** Events on the own Node, for the current lease. */
  events(): NodeEvents;
  /** Ends the running lease round so the lease is taken from the re-registered Node. */
  leaseAgain(change: OwnNodeReplaced): void;
  /** The contest began or ended: the readiness loop tells the Node now, not at its next check. */
  contestChanged(): void;
}

export class OwnNode implements AgentPart {
  readonly name = 'own-node';
  /** Why the own Node is missing from the API server, while it is (the agent is not ready then). */
  private gone: string | undefined;
  /** The own Node's last re-registration, until the lease is taken from it. */
  private replacement: OwnNodeReplaced | undefined;
  /** While an older peer keeps the podCIDR the own Node was registered again with: why, the fix, the wait for the subnet (not ready meanwhile). */
  private contest: { reason: string; fix: string; wait: AbortController } | undefined;

  constructor(private readonly opts: OwnNodeOptions) {}

  /** Whether the own Node lets the agent be ready: it is there, and its podCIDR is not an older peer's. */
  get ready(): boolean {
    return this.gone === undefined && this.contest === undefined;
  }

  /** Why /readyz answers 503 while the own Node is deleted, with the fix (its contest is a problem, below). */
  notReadyReasons(): string[] {
    return this.gone !== undefined ? [`own-node-deleted: ${this.gone}; fix: register the Node again (restart the kubelet); the dataplane is kept meanwhile`] : [];
  }

  /** An older peer holds the podCIDR the own Node was registered again with: NetworkUnavailable says so, as /readyz does. */
  problems(): PodNetworkProblem[] {
    return this.contest ? [{ check: 'own-subnet-contested', reason: NODE_EVENT_REASON.subnetContested, detail: this.contest.reason, fix: this.contest.fix }] : [];
  }

  /** The own Node's part of /status. */
  status(): Partial<StatusInput> {
    return {
      ...(this.gone !== undefined ? { ownNodeGone: this.gone } : {}),
      ...(this.contest ? { ownSubnetContested: `${this.contest.reason}; fix: ${this.contest.fix}` } : {}),
    };
  }

  /**
   * A lease round's network runs: the Node it leased from is there. After a re-registration
   * (`previous`: the network of the round before) it is logged and told as an Event.
   */
  leased(network: Network, previous: Network | undefined): void {
    this.gone = undefined;
    this.replacement = undefined;
    if (!previous) return;
    const rebuilt = previous.lease.subnet !== network.lease.subnet;
    this.opts.log.info('leased again from the re-registered own Node', { node: network.lease.key, previousSubnet: previous.lease.subnet, subnet: network.lease.subnet, rebuilt });
    this.opts.events().record(nodeReregisteredEvent(previous.lease.subnet, network.lease.subnet, rebuilt));
  }

  /** A lease round ended: the wait for a contested subnet watched its network. */
  roundEnded(): void {
    this.endContest();
  }

  /** The lease watch saw the own Node go, come back, or be registered anew. */
  leaseChanged(change: OwnLeaseChange): void {
    this.endContest(); // decided anew below
    if (change.kind === 'lost') {
      this.gone = change.reason;
      this.opts.log.warn('own Node deleted from the API server; keeping the dataplane, not ready until it is registered again', { reason: change.reason });
    } else if (change.kind === 'back') {
      this.gone = undefined;
      this.opts.log.info('own Node is in the API server again (the same Node)');
      if (this.replacement) this.leaseFromReplacement(this.replacement);
    } else this.leaseFromReplacement(change);
  }

  /**
   * The own Node was registered again with `change.subnet`: lease again from it, unless an older peer
   * holds that subnet. Then the agent keeps its network and the peer's route, is not ready and says why,
   * and leases again once the subnet is free or the Node is registered with another podCIDR.
   */
  private leaseFromReplacement(change: OwnNodeReplaced): void {
    const { log } = this.opts;
    this.replacement = change;
    const network = this.opts.network();
    const keeper = network?.subnetKeeper(change.subnet, change.created);
    if (network && keeper !== undefined) {
      const node = network.lease.key;
      const kept = network.lease.subnet;
      const reason = `the own Node "${node}" was registered again with podCIDR ${change.subnet}, which the older Node "${keeper}" holds; the older Node keeps a contested subnet, so this node keeps its network on ${kept} and does not take it`;
      const wait = new AbortController();
      this.contest = { reason, fix: ownSubnetContestedFix(node, keeper), wait };
      this.gone = undefined;
      log.warn('own Node registered again with the podCIDR an older peer holds; keeping the network, not ready until that subnet is free or the Node has another podCIDR', {
        node,
        subnet: change.subnet,
        holder: keeper,
        kept,
      });
      this.opts.events().record(ownSubnetContestedEvent(node, change.subnet, keeper, kept));
      this.opts.contestChanged();
      network.whenSubnetFree(change.subnet, change.created, wait.signal).then(
        () => {
          this.endContest();
          log.info('the podCIDR the own Node was registered again with is free now', { node, subnet: change.subnet });
          this.leaseFromReplacement(change);
        },
        () => undefined, // ended: a later change of the own Node, or the round, decides
      );
      return;
    }
    this.gone = change.reason;
    log.warn('own Node registered again; leasing again', { node: network?.lease.key, previousSubnet: network?.lease.subnet, subnet: change.subnet, reason: change.reason });
    this.opts.leaseAgain(change);
  }

  private endContest(): void {
    if (!this.contest) return;
    this.contest.wait.abort(new Error('the contest of the own subnet ended'));
    this.contest = undefined;
    this.opts.contestChanged();
  }
}

// The own Node as the lease watch reports it (../subnet/lease.ts onOwnLeaseChange; kube:
// ../subnet/kube/own-node-watch.ts): deleted from the API server, back, or registered anew. Deleted, the
// agent keeps its dataplane and is not ready until the Node is registered again. Registered anew, the agent
// leases again from the new Node, as a restart would, unless an older peer holds its new podCIDR: the rule
// the agent applies to peers (../peers/store.ts: the older Node keeps a contested subnet) holds for itself
// too (docs/compatibility.md, Who holds a contested subnet). It is one of the agent's parts (./part.ts): the
// contest is its problem, so /readyz and the NetworkUnavailable condition (./readiness.ts) both say it; the
// deleted Node is a not-ready reason only (there is no Node to tell). /status's fields come from here; it ends
// the agent's lease round (../agent.ts) through `leaseAgain`. Before the first lease it lists the Nodes and
// holds the agent back while an older Node holds the own podCIDR (beforeFirstLease).
import type { Network } from '../backends/backend.js';
import { abortReason } from '../basics/clock.js';
import { errorMessage } from '../basics/errors.js';
import type { Logger } from '../basics/log.js';
import type { StatusInput } from '../health/status.js';
import { NODE_EVENT_REASON, nodeReregisteredEvent, ownSubnetContestedEvent, ownSubnetContestedFix, type NodeEvents } from '../node-events.js';
import { PeerStore, type ItemSource } from '../peers/store.js';
import { peerValidation, type PeerValidationFacts } from '../peers/validate.js';
import { ownNodeEvents, type OwnClaim, type OwnLeaseChange, type SubnetManager } from '../subnet/lease.js';
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
  /** Where the Nodes are listed and the contest told before the first lease (beforeFirstLease). */
  subnetManager: SubnetManager;
  /** What peers are judged against, but the own lease (what the network's peer store is given: ../backends/route-network.ts). */
  peerFacts: Omit<PeerValidationFacts, 'own'>;
}

/** The peer store of the look before the first lease keeps leases only, no dataplane items. */
const NO_ITEMS: ItemSource<never> = { desiredFor: () => [], desiredKey: () => '' };

export class OwnNode implements AgentPart {
  readonly name = 'own-node';
  /** Why the own Node is missing from the API server, while it is (the agent is not ready then). */
  private gone: string | undefined;
  /** The own Node's last re-registration, until the lease is taken from it. */
  private replacement: OwnNodeReplaced | undefined;
  /** While an older peer keeps the podCIDR the own Node was registered again with: why, the fix, the wait for the subnet (not ready meanwhile). */
  private contest: { reason: string; fix: string; wait: AbortController } | undefined;

  /** While the look before the first lease runs: aborted to look again when the own Node changes. */
  private firstLook: AbortController | undefined;

  constructor(private readonly opts: OwnNodeOptions) {}

  /**
   * Before the first lease, when the subnet manager can tell the own podCIDR unpublished (kube: ownClaim):
   * the Nodes are listed first, as upstream's kube subnet manager syncs its node informer before
   * AcquireLease (flannel pkg/subnet/kube/kube.go NewSubnetManager), into a peer store of leases only
   * (../peers/store.ts), judged as the network's store judges them but with no own subnet yet (the podCIDR
   * is what is in question). While an older Node keeps the own podCIDR (keeperOf: the store's rule for a
   * contested subnet), the agent neither builds its network on it nor publishes it: it is not ready and says
   * so as after a re-registration (/readyz, /status, an Event, and NetworkUnavailable=True at once, there
   * being no lease to complete), and goes on once the subnet is free. A change of the own Node meanwhile
   * (deleted, registered again) has it look again from the own Node on.
   */
  async beforeFirstLease(signal: AbortSignal): Promise<void> {
    const manager = this.opts.subnetManager;
    if (!manager.ownClaim) return;
    for (;;) {
      const look = new AbortController();
      const stop = () => look.abort(abortReason(signal));
      if (signal.aborted) stop();
      else signal.addEventListener('abort', stop, { once: true });
      this.firstLook = look;
      let watching: Promise<void> | undefined;
      try {
        const claim = await manager.ownClaim(look.signal);
        const { ownSubnet: _unknownYet, ...validation } = peerValidation({ ...this.opts.peerFacts, own: { subnet: claim.subnet } });
        const store = new PeerStore<never>({ ownLeaseKey: claim.key, validation, items: NO_ITEMS });
        const listed = new Promise<void>((resolve) => store.subscribe(() => store.listed && resolve()));
        // Taken over by the network's watch once the lease is taken (the Nodes are listed once).
        watching = manager.watchLeasesBeforeLease?.(store.apply, look.signal, signal) ?? manager.watchLeases(store.apply, look.signal);
        // The watch settles only when the look ends (or on a fatal error, which stops the agent).
        const ended = watching.then(() => Promise.reject(abortReason(look.signal)));
        await Promise.race([listed, ended]);
        const keeper = store.keeperOf(claim.subnet, claim.created);
        if (keeper === undefined) return;
        await this.contestAtStart(claim, keeper, look, signal);
        await Promise.race([store.whenFree(claim.subnet, claim.created, look.signal), ended]);
        this.opts.log.info('the own podCIDR is free now; leasing it', { node: claim.key, subnet: claim.subnet });
        return;
      } catch (err) {
        if (signal.aborted || !look.signal.aborted) throw err; // else the own Node changed: look again
      } finally {
        signal.removeEventListener('abort', stop);
        this.firstLook = undefined;
        look.abort(new Error('the look before the first lease ended'));
        await watching?.catch(() => undefined);
        if (this.contest) {
          this.endContest();
          await manager.reportPodNetwork?.(undefined, signal).catch(() => undefined); // kept only: completeLease writes the condition
        }
      }
    }
  }

  /** An older Node keeps the own podCIDR at the first start: not ready, logged, told as an Event and on the Node condition. */
  private async contestAtStart(claim: OwnClaim, keeper: string, look: AbortController, signal: AbortSignal): Promise<void> {
    const { log, subnetManager: manager } = this.opts;
    const node = claim.key;
    const reason = `the own Node "${node}" has podCIDR ${claim.subnet}, which the older Node "${keeper}" holds; the older Node keeps a contested subnet, so this node does not build its network on it`;
    const fix = ownSubnetContestedFix(node, keeper);
    this.contest = { reason, fix, wait: look };
    log.warn('the own podCIDR is held by an older Node; not leasing it, not ready until that subnet is free or the Node has another podCIDR', {
      node,
      subnet: claim.subnet,
      holder: keeper,
    });
    ownNodeEvents(manager, { key: node }).record(ownSubnetContestedEvent(node, claim.subnet, keeper, undefined));
    await manager.reportPodNetwork?.({ reason: NODE_EVENT_REASON.subnetContested, message: `${reason}; fix: ${fix}` }, signal, true).catch((err: unknown) => {
      if (!signal.aborted) log.warn('could not report the contested podCIDR on the node condition', { error: errorMessage(err) });
    });
  }

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
    if (this.firstLook) return void this.firstLook.abort(new Error('the own Node changed before the first lease'));
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

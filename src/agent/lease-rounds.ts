// The agent's lease rounds: register the network on the own lease, hold what other programs read until the
// subnet manager confirms the lease, publish it, and run the network until the run ends; again, from the
// top, when the own Node is registered anew (./own-node.ts ends the round, as a restart would). Mirrors
// flannel main.go (be.RegisterNetwork acquires the lease and builds the network, WriteSubnetFile, then
// bn.Run) and pkg/subnet/kube/kube.go, whose NewSubnetManager waits for its node informer's sync before
// AcquireLease: here the network is built and its peers programmed while the Node list pages, and the
// first complete list confirms the lease (../subnet/lease.ts confirmLease) before anything is published.
// What is held: the Node's annotations (the subnet manager's), the backend's files (Network.publish: vxlan's
// source VIP files), subnet.env (./subnet-env-file.ts) and what the agent writes after it (`publish`: the
// boot record, the parts' files such as the CNI conflist).
import type { Backend, Network } from '../backends/backend.js';
import type { Clock } from '../basics/clock.js';
import type { SubnetManager } from '../subnet/lease.js';
import type { OwnNode, OwnNodeReplaced } from './own-node.js';
import type { SubnetEnvFile } from './subnet-env-file.js';

export interface LeaseRoundsOptions {
  subnetManager: Pick<SubnetManager, 'confirmLease'>;
  /** The configured backend, a new one each round. */
  backend(): Promise<Backend>;
  /** What the host needs once the HNS network exists, and again after each rebuild of it (the NIC, the metadata route, the network's `settle`). */
  settle(network: Network): Promise<void>;
  subnetEnv: Pick<SubnetEnvFile, 'differs' | 'write' | 'keep'>;
  /** What other programs read beside subnet.env, written after it and held with it: the boot record, the parts' files. */
  publish(network: Network): Promise<void>;
  /** Runs once what was held is published, before the lease is completed (kube: NetworkUnavailable written). */
  beforeCompleteLease(signal: AbortSignal): Promise<void>;
  /** Told of each round's network, and of each round's end. */
  ownNode: Pick<OwnNode, 'leased' | 'roundEnded'>;
  /** A round's network is published and runs (the agent's parts start with the first). */
  running(): void;
  clock: Clock;
}

export type LeasePhase = 'starting' | 'registering' | 'running';

export class LeaseRounds {
  private phaseValue: LeasePhase = 'starting';
  private networkValue: Network | undefined;
  private readyValue = false;
  private runningSinceValue: number | undefined;
  /** Ends the running round so the lease is taken again (the own Node was registered again). */
  private endRound: ((change: OwnNodeReplaced) => void) | undefined;

  constructor(private readonly o: LeaseRoundsOptions) {}

  get phase(): LeasePhase {
    return this.phaseValue;
  }
  /** The network the agent runs: the current round's, or the last one's between rounds. */
  get network(): Network | undefined {
    return this.networkValue;
  }
  /** The round's network is published (subnet.env written) and runs; false while the lease is held and between rounds. */
  get ready(): boolean {
    return this.readyValue;
  }
  /** When the current round's network began to run (the health check's stale clock starts there). */
  get runningSince(): number | undefined {
    return this.runningSinceValue;
  }

  /** The own Node was registered again: end the running round; the next leases from the new Node. */
  again(change: OwnNodeReplaced): void {
    this.endRound?.(change);
  }

  /** Round after round until `signal` aborts (resolves) or a round fails other than by `again` (rejects). */
  async run(signal: AbortSignal): Promise<void> {
    const { subnetManager, subnetEnv, ownNode } = this.o;
    // While the lease is held (kube: until the first complete Node list confirms the podCIDR), what other
    // programs read waits: the backend's files, subnet.env, the boot record `flanneld cni-config` reads,
    // the parts' files.
    let holding = false;
    const publish = async (network: Network): Promise<void> => {
      network.publish(); // the backend's files (vxlan: the source VIP files kube-proxy's scripts read)
      if (subnetEnv.differs(network)) {
        // At start a failed write stops the agent; after a rebuild the network stands and the write is retried.
        if (this.readyValue) subnetEnv.keep(() => this.networkValue, signal);
        else await subnetEnv.write(network);
      }
      await this.o.publish(network);
    };
    const settle = async (network: Network): Promise<void> => {
      await this.o.settle(network);
      if (!holding) await publish(network);
    };
    // One round per lease: a new one when the own Node was deleted and registered again, as a restart
    // would (the backend reuses a matching network, or builds one on a new podCIDR).
    for (let again: OwnNodeReplaced | undefined; ;) {
      const round = new AbortController();
      const endRound = () => round.abort(signal.reason);
      if (signal.aborted) round.abort(signal.reason);
      else signal.addEventListener('abort', endRound, { once: true });
      let next: typeof again;
      this.endRound = (change) => {
        next ??= change;
        round.abort(new Error('the own Node was registered again'));
      };
      const previous = this.networkValue;
      let networkRun: Promise<void> | undefined;
      try {
        this.phaseValue = 'registering';
        // kube: what other programs read (the Node's annotations, subnet.env) is held until the first
        // complete Node list says no older Node has the podCIDR (SubnetManager.confirmLease); the network
        // is built and its peers programmed while the list pages. A restart that finds both as they would
        // be written holds nothing and runs as before.
        const network = await (await this.o.backend()).registerNetwork(round.signal, { hold: true });
        this.networkValue = network;
        const confirming = subnetManager.confirmLease?.(!subnetEnv.differs(network), round.signal);
        confirming?.catch(() => undefined); // awaited below; a rejection ends the round
        const run = () =>
          network.run(round.signal, {
            afterRebuild: settle,
            // The readiness loop runs once what was held is published: until then it waits for it.
            beforeCompleteLease: async (sig) => {
              await confirming;
              await this.o.beforeCompleteLease(sig);
            },
          });
        this.runningSinceValue = this.o.clock.now();
        if (confirming) {
          holding = true;
          networkRun = run();
          networkRun.catch(() => undefined); // awaited below, or in the catch once the round ends
        }
        await settle(network);
        if (confirming) {
          await confirming;
          holding = false;
          await publish(network);
        }
        this.readyValue = true;
        this.phaseValue = 'running';
        ownNode.leased(network, again && previous);
        this.o.running();
        await (networkRun ?? run());
      } catch (err) {
        // What the round started (the lease's renewal, the network's loops) stops with it.
        round.abort(err);
        await networkRun?.catch(() => undefined);
        if (signal.aborted || next === undefined) throw err;
      } finally {
        holding = false;
        signal.removeEventListener('abort', endRound);
        this.endRound = undefined;
        ownNode.roundEnded(); // the round's network, which the wait for a contested subnet watched, is done
      }
      if (signal.aborted || next === undefined) return;
      again = next;
      this.readyValue = false;
    }
  }
}

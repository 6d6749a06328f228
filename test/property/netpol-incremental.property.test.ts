// The NetworkPolicy core kept up to date (src/netpol/intent.ts IntentTracker, src/netpol/translate.ts
// TranslateCache, as the controller keeps them between recomputes) gives, after any sequence of batches of
// pod, namespace, policy and node changes, exactly what a full recompute of the same state gives: the same
// intents (isolation, allows, address sets, refusals) and the same rules and IP sets.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { computeIntent, IntentTracker } from '../../src/netpol/intent.js';
import type { ClusterState, NodeContext } from '../../src/netpol/intent.js';
import { hnsRefusal, translate, TranslateCache } from '../../src/netpol/translate.js';
import type { Namespace, NetworkPolicy, Pod } from '../../src/netpol/types.js';
import { buildCluster, labels, NS, podSpec, policySpec } from '../support/netpol-arbitraries.js';
import type { Of } from '../support/netpol-arbitraries.js';
import { NODE } from '../support/netpol-cluster.js';

const PODS = 6;
const POLICIES = 4;
const NODES: NodeContext[] = [NODE, { ...NODE, nodeIPs: [NODE.nodeIPs[0], '10.244.1.250'] }];

const event = fc.oneof(
  fc.record({ kind: fc.constant('pod' as const), i: fc.nat(PODS - 1), spec: fc.option(podSpec, { nil: undefined }) }),
  fc.record({ kind: fc.constant('policy' as const), i: fc.nat(POLICIES - 1), spec: fc.option(policySpec, { nil: undefined }) }),
  fc.record({ kind: fc.constant('namespace' as const), i: fc.nat(NS.length - 1), labels: fc.option(labels, { nil: undefined }) }),
  fc.record({ kind: fc.constant('node' as const), i: fc.nat(NODES.length - 1) }),
);
type Event = Of<typeof event>;

/**
 * The cluster as the controller's cache holds it: one slot per object, an object replaced only when its event
 * comes (the others keep their identity and their place, as a Map's values do), absent slots left out.
 */
class Cluster {
  pods: (Pod | undefined)[] = [];
  policies: (NetworkPolicy | undefined)[] = [];
  namespaces: (Namespace | undefined)[] = [];
  node = NODES[0];
  private podSpecs: (Of<typeof podSpec> | undefined)[] = [];
  private policySpecs: (Of<typeof policySpec> | undefined)[] = [];

  apply(e: Event): void {
    if (e.kind === 'node') this.node = NODES[e.i];
    else if (e.kind === 'namespace') this.namespaces[e.i] = e.labels === undefined ? undefined : this.build([], [], e.labels, e.i).namespaces[e.i];
    else if (e.kind === 'pod') {
      this.podSpecs[e.i] = e.spec;
      this.pods[e.i] = e.spec === undefined ? undefined : this.build(this.filled(this.podSpecs, e.i, e.spec), [], {}, 0).pods[e.i];
    } else {
      this.policySpecs[e.i] = e.spec;
      this.policies[e.i] = e.spec === undefined ? undefined : this.build([], this.filled(this.policySpecs, e.i, e.spec), {}, 0).policies[e.i];
    }
  }

  state(): ClusterState {
    const present = <T>(xs: (T | undefined)[]): T[] => xs.filter((x): x is T => x !== undefined);
    return { pods: present(this.pods), namespaces: present(this.namespaces), policies: present(this.policies) };
  }

  /** Specs up to slot i (buildCluster names and addresses an object by its index), the others any filler. */
  private filled<T>(specs: (T | undefined)[], i: number, spec: T): T[] {
    return Array.from({ length: i + 1 }, (_, k) => specs[k] ?? spec);
  }

  private build(pods: Of<typeof podSpec>[], policies: Of<typeof policySpec>[], nsLabels: Record<string, string>, ns: number): ClusterState {
    return buildCluster(
      pods,
      policies,
      NS.map((_, k) => (k === ns ? nsLabels : {})),
    );
  }
}

describe('NetworkPolicy intent kept up to date, by property', () => {
  it('equals a full recompute after every batch of any sequence of changes', () => {
    fc.assert(
      fc.property(fc.array(fc.array(event, { minLength: 1, maxLength: 3 }), { minLength: 1, maxLength: 12 }), (batches) => {
        const cluster = new Cluster();
        const tracker = new IntentTracker({ unsupported: hnsRefusal });
        const translations = new TranslateCache();
        for (const batch of batches) {
          for (const e of batch) cluster.apply(e);
          const state = cluster.state();
          const full = computeIntent(state, cluster.node, { unsupported: hnsRefusal });
          const kept = tracker.update(state, cluster.node);
          expect(kept).toEqual(full);
          for (const Major of [12, 13]) expect(translate(kept, { hnsVersion: { Major, Minor: 0 } }, translations)).toEqual(translate(full, { hnsVersion: { Major, Minor: 0 } }));
        }
      }),
      { numRuns: 300 },
    );
  });
});

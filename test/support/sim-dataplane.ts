// Back doors into a SimulatedDataplane for tests: change the simulated node behind the agent's back,
// as kube-proxy, an admin or an HNS restart changes a real node (a stale route or policy, a removed one,
// a deleted network), and read what the model holds. Every edit is a locked read-modify-write of the
// model's store, so a state file shared with an agent process sees it before the agent's next call.
// Injected call failures and stalls are the model's own (`sim.injections`), shared with the benchmarks.
import type { SimulatedDataplane } from '../../src/simulator/model.js';
import { deleteNetwork } from '../../src/simulator/objects.js';
import { defaultRoute } from '../../src/simulator/host.js';
import type { DataplaneState, SimRoute } from '../../src/simulator/state.js';
import { sameId, type HcnNetwork, type HcnPolicy } from '../../src/hns/schema.js';

/** Arbitrary change to the state (locked, persisted afterwards). */
export function editState(sim: SimulatedDataplane, fn: (state: DataplaneState) => void): void {
  sim.store.update(fn);
}

const byNameOrId = (state: DataplaneState, network: string): HcnNetwork | undefined => state.networks.find((n) => n.Name === network || sameId(n.ID, network));

/** Add a route directly (a stale route left by someone else). */
export function addRoute(sim: SimulatedDataplane, route: SimRoute): void {
  editState(sim, (s) => void s.routes.push({ ...route }));
}

/** Remove routes to `destinationPrefix` (on one interface, if given), bypassing injection. Returns how many. */
export function removeRoute(sim: SimulatedDataplane, destinationPrefix: string, interfaceIndex?: number): number {
  return sim.store.update((s) => {
    const before = s.routes.length;
    s.routes = s.routes.filter((r) => !(r.DestinationPrefix === destinationPrefix && (interfaceIndex === undefined || r.InterfaceIndex === interfaceIndex)));
    return before - s.routes.length;
  });
}

/** Add a network policy directly (a stale policy left by someone else) to the network with that name or ID. */
export function addPolicy(sim: SimulatedDataplane, network: string, policy: HcnPolicy): void {
  editState(sim, (s) => {
    const net = byNameOrId(s, network);
    if (!net) throw new Error(`no network ${network}`);
    (net.Policies ??= []).push(structuredClone(policy));
  });
}

/** Remove network policies matching `match` (a Type or a predicate) from the network with that name or ID. */
export function removePolicy(sim: SimulatedDataplane, network: string, match: string | ((p: HcnPolicy) => boolean)): number {
  const pred = typeof match === 'string' ? (p: HcnPolicy) => p.Type === match : match;
  return sim.store.update((s) => {
    const net = byNameOrId(s, network);
    if (!net?.Policies) return 0;
    const before = net.Policies.length;
    net.Policies = net.Policies.filter((p) => !pred(p));
    return before - net.Policies.length;
  });
}

/** Delete a network by name or ID as an operator would (Remove-HnsNetwork): endpoints and vSwitch go with it; false when none. */
export function removeNetwork(sim: SimulatedDataplane, network: string): boolean {
  return sim.store.update((s) => {
    const net = byNameOrId(s, network);
    if (net) deleteNetwork(s, 'test', net.ID!);
    return net !== undefined;
  });
}

/** The node's IP: the address of the adapter holding the default route (vEthernet once a vSwitch exists). */
export function nodeIP(sim: SimulatedDataplane): string | undefined {
  const state = sim.snapshot();
  const idx = defaultRoute(state)?.InterfaceIndex;
  return state.adapters.find((a) => a.InterfaceIndex === idx && a.IPAddress !== '')?.IPAddress;
}

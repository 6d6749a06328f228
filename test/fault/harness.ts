// The fault tests' defaults over the one cluster harness (../support/cluster.ts), and their assertions:
// agents on the simulated dataplane against the fake API server, each on a disk and clock under the test's
// control (../support/state-fs.ts: fill or freeze the state directory, hold a call, "kill" the process).
import { expect } from '@jest/globals';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { TestCluster, waitFor, WIN_IP, type RunningAgent, type StartOptions } from '../support/cluster.js';
import { APPLY_PASSES, waitForIncrease } from '../support/agent-signals.js';
import { StateFs } from '../support/state-fs.js';
import type { SimulatedDataplane } from '../../src/simulator/model.js';

export { HOSTGW_NET_CONF, VXLAN_NET_CONF, waitFor, WIN_IP } from '../support/cluster.js';
export { HELD, StateFs, type DiskState, type FsMode } from '../support/state-fs.js';

export const NETWORK = '10.244.0.0/16';
export const WIN = 'win-1';
export const WIN_CIDR = '10.244.100.0/24';

/** An agent of the fault tests: it runs on a disk and clock the test controls (`a.state`). */
export type FaultAgent = RunningAgent & { state: StateFs };

/** The fault tests' start options: the harness's own, with the node, its IP and its disk defaulted. */
export type FaultStartOptions = Omit<StartOptions, 'nodeName' | 'ip' | 'state' | 'before'> & {
  nodeName?: string;
  ip?: string;
  state?: StateFs;
  /** Prepare the dataplane and its disk before the agent runs (injections, fs mode). */
  before?: (sim: SimulatedDataplane, state: StateFs) => void;
};

/**
 * The cluster harness (../support/cluster.ts) with the fault tests' defaults: the Windows node `win-1` at
 * WIN_IP with 10.244.100.0/24, Linux peers at 10.0.1.n, and every agent on a StateFs (its disk and clock
 * under the test's control) on one L2 segment with its peers.
 */
export class FaultCluster extends TestCluster {
  override addWindowsNode(name = WIN, podCIDR: string | undefined = WIN_CIDR, ip = WIN_IP): void {
    super.addWindowsNode(name, podCIDR, ip);
  }

  /** A Linux flannel node n: 10.244.n.0/24 at 10.0.1.n (n < 256). */
  addLinux(n: number, backendType: 'vxlan' | 'host-gw'): void {
    this.api.addNode(linuxFlannelNode({ name: linuxName(n), podCIDR: `10.244.${n}.0/24`, publicIP: linuxIP(n), backendType }));
  }

  override startAgent(opts: FaultStartOptions): FaultAgent {
    // One L2 segment for the Windows node (10.0.0.2) and the Linux peers (10.0.1.n): host-gw refuses a peer
    // whose public IP is not on the node's network (src/peers/validate.ts, public-ip-off-link).
    const state = opts.state ?? new StateFs();
    const { before } = opts;
    return super.startAgent({
      linkPrefixLength: 16,
      ...opts,
      nodeName: opts.nodeName ?? WIN,
      ip: opts.ip ?? WIN_IP,
      state,
      before: before && ((sim) => before(sim, state)),
    }) as FaultAgent;
  }
}

/** Wait until the agent has run `n` more reconcile passes (ok or failed): it re-read the dataplane and diffed. */
export async function waitForPasses(a: FaultAgent, n: number, what: string): Promise<void> {
  await waitForIncrease(a.metrics, APPLY_PASSES, n, what, 20_000);
}

/** A small deterministic [0,1) generator. */
export function seeded(seed: number): () => number {
  let x = seed >>> 0;
  return () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32;
}

export const linuxName = (n: number) => `linux-${n}`;
export const linuxIP = (n: number) => `10.0.1.${n}`;
const macOf = (ip: string) =>
  '0e:2a:' +
  ip
    .split('.')
    .map((o) => Number(o).toString(16).padStart(2, '0'))
    .join(':');

/** The RemoteSubnetRoute policies the peers `ns` call for, as `dst pa vni mac` lines, sorted. */
export function wantPolicies(ns: number[]): string[] {
  return ns.map((n) => `10.244.${n}.0/24 ${linuxIP(n)} 4096 ${macOf(linuxIP(n))}`).sort();
}

/** The host-gw routes the peers `ns` call for, as `dst via nexthop` lines, sorted. */
export function wantRoutes(ns: number[]): string[] {
  return ns.map((n) => `10.244.${n}.0/24 via ${linuxIP(n)}`).sort();
}

/** Every RemoteSubnetRoute policy on the agent's network (duplicates kept), as `dst pa vni mac`. */
export function policies(a: FaultAgent): string[] {
  const state = a.sim.snapshot();
  return state.networks
    .flatMap((n) => n.Policies ?? [])
    .filter((p) => p.Type === 'RemoteSubnetRoute')
    .map((p) => {
      const s = p.Settings as { DestinationPrefix: string; ProviderAddress: string; IsolationId: number; DistributedRouterMacAddress: string };
      return `${s.DestinationPrefix} ${s.ProviderAddress} ${s.IsolationId} ${s.DistributedRouterMacAddress}`;
    })
    .sort();
}

/** Every route whose destination lies in the cluster network, other than the own subnet (duplicates kept). */
export function routes(a: FaultAgent): string[] {
  return a.sim
    .snapshot()
    .routes.filter((r) => r.DestinationPrefix.startsWith('10.244.') && r.DestinationPrefix !== WIN_CIDR)
    .map((r) => `${r.DestinationPrefix} via ${r.NextHop}`)
    .sort();
}

/** The whole dataplane in one comparable value: peer objects plus the invariants of the node itself. */
function shape(a: FaultAgent, backend: 'vxlan' | 'host-gw') {
  const s = a.sim.snapshot();
  const nonPeerRoutes = s.routes.filter((r) => !(r.DestinationPrefix.startsWith('10.244.') && r.DestinationPrefix !== WIN_CIDR));
  return {
    peers: backend === 'vxlan' ? policies(a) : routes(a),
    networks: s.networks.map((n) => `${n.Name} ${n.Type}`),
    basePolicies: s.networks.flatMap((n) => (n.Policies ?? []).map((p) => p.Type).filter((t) => t !== 'RemoteSubnetRoute')).sort(),
    endpoints: s.endpoints.map((e) => e.Name).sort(),
    defaultRoutes: nonPeerRoutes.filter((r) => r.DestinationPrefix === '0.0.0.0/0').length,
  };
}

/**
 * Wait until the dataplane equals exactly the desired set for peers `ns` (no more, no fewer, no
 * duplicates), then assert it, and the node's own objects (one network, its base policies once each).
 */
export async function expectConverged(a: FaultAgent, backend: 'vxlan' | 'host-gw', ns: number[], timeoutMs = 15_000): Promise<void> {
  const want = {
    peers: backend === 'vxlan' ? wantPolicies(ns) : wantRoutes(ns),
    networks: backend === 'vxlan' ? ['flannel.4096 Overlay'] : ['cbr0 L2Bridge'],
    basePolicies: backend === 'vxlan' ? ['DrMacAddress', 'HostRoute', 'NetAdapterName', 'ProviderAddress'] : ['NetAdapterName', 'ProviderAddress'],
    endpoints: backend === 'vxlan' ? [] : ['cbr0_ep'],
    defaultRoutes: 1,
  };
  await waitFor(() => a.agent.phase === 'running' && JSON.stringify(shape(a, backend)) === JSON.stringify(want), `dataplane == desired (${ns.length} peers)`, timeoutMs).catch(
    () => undefined,
  );
  expect(shape(a, backend)).toEqual(want);
  expect(a.agent.phase).toBe('running');
}

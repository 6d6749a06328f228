// Replay of recorded kube-proxy runs (test/fixtures/kube-proxy-traces, README "Which replies are data"): the
// calls the real kube-proxy (winkernel) made, sent again in order through the stand-in DLLs' own seam
// (WindowsSimServer.answer) into the agent's simulated node, as another process on the node: a
// SimulatedDataplane of its own over the agent's state file, as kube-proxy is another process talking to one
// HNS. The machinery (placeholders, handles, MACs) is the CNI replay's (./cni-replay.ts).
//
// A reply is judged by who gave it in the recording. `answeredBy: simulator`: the project's simulated HNS,
// so the live reply is compared field by field. `answeredBy: scratch-stub`: a placeholder of the recording
// harness (v1 `GET /policylists/` and every load-balancer call), no observation of HNS, so the live reply is
// checked against what hcsshim reads from it instead: the PolicyList list (internal/hns/hnspolicylist.go),
// GUID lists (hcn.ListLoadBalancers unmarshals `[]guid.GUID`), HostComputeLoadBalancer documents
// (hcn/hcnloadbalancer.go) with an ID; its placeholders are still bound from the live reply.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect } from '@jest/globals';
import { contains } from '../../src/basics/ip4.js';
import { ENDPOINT_FLAG_REMOTE, policySetting } from '../../src/hns/schema.js';
import { loadBalancerShapeProblem } from '../../src/simulator/load-balancers.js';
import { SimulatedDataplane } from '../../src/simulator/model.js';
import type { DataplaneState } from '../../src/simulator/state.js';
import { WindowsSimServer } from '../windows/sim-server.js';
import { macsSent, replayCalls, type ReplayBindings, type ReplayMismatch, type ReplayResult, type TraceCall, type TraceState } from './cni-replay.js';

/** The recorded runs (jest runs from the repository root). */
export const KUBE_PROXY_TRACES_DIR = resolve('test', 'fixtures', 'kube-proxy-traces');

export interface KubeProxyCall extends TraceCall {
  answeredBy: 'simulator' | 'scratch-stub';
  tMs: number;
}

export interface KubeProxyTrace {
  scenario: string;
  backend: 'vxlan' | 'host-gw';
  network: string;
  kubeProxy: { version: string; sha256: string; args: string[] };
  agent: { flags: string[]; netConf: unknown; subnetEnv: string; agentEndpointIp: string };
  calls: KubeProxyCall[];
  /** The agent's own calls while kube-proxy ran (its resync, a restart). */
  agentCallsDuringKubeProxy: KubeProxyCall[];
  stateBefore: TraceState;
  stateAfter: TraceState;
}

export function loadKubeProxyTrace(name: string, dir = KUBE_PROXY_TRACES_DIR): KubeProxyTrace {
  return JSON.parse(readFileSync(join(dir, `${name}.json`), 'utf8')) as KubeProxyTrace;
}

/** The HNS version the recording's node reported to kube-proxy (`GET /globals/version`). */
export function kubeProxyHnsVersion(trace: KubeProxyTrace): { Major: number; Minor: number } {
  const call = trace.calls.find((c) => c.fn === 'HNSCall' && c.args['path'] === '/globals/version');
  const out = (call?.reply['out'] as { Output?: { Major: number; Minor: number } } | undefined)?.Output;
  if (!out) throw new Error(`${trace.scenario}: kube-proxy never asked the HNS version`);
  return out;
}

const GUID = /^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/;

function parsed(v: unknown): unknown {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v) as unknown;
  } catch {
    return v;
  }
}

/**
 * A reply a placeholder gave in the recording, checked against what hcsshim reads from it (no comparison
 * with the placeholder's guess). Every other reply: `compare`.
 */
export function checkPlaceholderAnswer(call: TraceCall, live: Record<string, unknown>, where: string): 'compare' | ReplayMismatch[] {
  if ((call as KubeProxyCall).answeredBy !== 'scratch-stub') return 'compare';
  const bad = (what: string): ReplayMismatch[] => [{ where: `${where} (hcsshim schema)`, recorded: what, live }];
  if (live['hr'] !== 0) return []; // the hr is compared with the recording's as for every call
  const out = parsed(live['out']);
  switch (call.fn) {
    case 'HNSCall': {
      // hcsshim HNSListPolicyListRequest: the v1 envelope with a list of PolicyList {ID, References, Policies}.
      const env = out as { Success?: unknown; Output?: unknown };
      if (env?.Success !== true || !Array.isArray(env.Output)) return bad('{"Success":true,"Output":[PolicyList...]}');
      return env.Output.every((p) => typeof p === 'object' && p !== null && typeof (p as { ID?: unknown }).ID === 'string') ? [] : bad('every PolicyList with an ID');
    }
    case 'HcnEnumerateLoadBalancers':
      return Array.isArray(out) && out.every((id) => typeof id === 'string' && GUID.test(id)) ? [] : bad('a JSON list of GUIDs');
    case 'HcnQueryLoadBalancerProperties': {
      const problem = loadBalancerShapeProblem(out);
      if (problem) return bad(problem);
      return typeof (out as { ID?: unknown }).ID === 'string' && GUID.test((out as { ID: string }).ID) ? [] : bad('a HostComputeLoadBalancer with its GUID ID');
    }
    default:
      // Create, open, close: an hr and a handle, both judged as for every call.
      return [];
  }
}

/**
 * Replay the recording's calls (or `calls`, a part of them) into the node whose state file is `statePath`, as
 * kube-proxy: its own process with its own SimulatedDataplane on the shared file, HNS at the recorded version.
 * The parts of one recording replayed apart (around an agent restart) share `handles`.
 */
export async function replayKubeProxy(
  trace: KubeProxyTrace,
  statePath: string,
  b: ReplayBindings,
  opts: { calls?: readonly KubeProxyCall[]; handles?: Map<number, number> } = {},
): Promise<ReplayResult> {
  const dp = new SimulatedDataplane({ statePath });
  const server = new WindowsSimServer({ dp, hns: { version: kubeProxyHnsVersion(trace) } });
  return replayCalls(opts.calls ?? trace.calls, server, b, macsSent(trace.calls), { check: checkPlaceholderAnswer, handles: opts.handles });
}

/**
 * Where the agent was restarted in a recording (vxlan-agent-restart.json): its restarted process reads the
 * host's interfaces (GetIpAddrTable) once at start-up, and only then. undefined when it was not restarted.
 */
export function agentRestartAt(trace: KubeProxyTrace): number | undefined {
  return trace.agentCallsDuringKubeProxy.find((c) => c.fn === 'GetIpAddrTable')?.tMs;
}

/** HNS and route calls that write: what the agent must never make on kube-proxy's objects. */
export const WRITE_OPS = /^(Hcn(Create|Modify|Delete)|HNSCall (POST|DELETE)|CreateIpForwardEntry2|DeleteIpForwardEntry2|SetIpInterfaceEntry)/;

/** The writes among a SimulatedDataplane's calls since `before` (a copy of `sim.calls` taken earlier). */
export function writesSince(calls: ReadonlyMap<string, number>, before: ReadonlyMap<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [op, n] of calls) {
    const d = n - (before.get(op) ?? 0);
    if (d > 0 && WRITE_OPS.test(op)) out[op] = d;
  }
  return out;
}

/** kube-proxy's objects on the node: its endpoints (no Name: winkernel hns.go createEndpoint) and its load balancers. */
export function kubeProxyObjects(state: DataplaneState): unknown {
  return { endpoints: state.endpoints.filter((e) => e.Name === undefined), loadBalancers: state.loadBalancers ?? [] };
}

/**
 * What kube-proxy needs of the agent's network, on the node after it ran the recording's Services
 * (inputs.kubernetesObjects: kube-dns's two endpoints and web's remote one on `peer`): a remote endpoint per
 * remote pod, with the provider address the agent's RemoteSubnetRoute gives the peer's subnet (vxlan; none on
 * host-gw), and a load balancer per Service port, each with `sourceVip` (the agent's, on vxlan) as its SourceVIP.
 * The replay tier (test/integration/kube-proxy-replay.test.ts) and the live tier (test/interop/kube-proxy.test.ts) both assert it.
 */
export function checkServicePath(
  trace: Pick<KubeProxyTrace, 'backend' | 'network'>,
  state: DataplaneState,
  peer: { podCIDR: string; publicIP: string },
  sourceVip: string | undefined,
): void {
  const net = state.networks.find((n) => n.Name === trace.network)!;
  const remote = state.endpoints.filter((e) => ((e.Flags ?? 0) & ENDPOINT_FLAG_REMOTE) !== 0 && contains(peer.podCIDR, e.IpConfigurations![0].IpAddress));
  expect(remote.map((e) => e.IpConfigurations![0].IpAddress).sort()).toEqual(['10.244.1.2', '10.244.1.3', '10.244.1.4']);
  // vxlan: kube-proxy takes the PA of a remote pod from the RemoteSubnetRoute the agent programmed for its subnet.
  const route = net.Policies?.find((p) => p.Type === 'RemoteSubnetRoute' && p.Settings?.['DestinationPrefix'] === peer.podCIDR);
  const wantPa = trace.backend === 'vxlan' ? peer.publicIP : undefined;
  expect(route?.Settings?.['ProviderAddress']).toBe(wantPa);
  expect(remote.map((e) => policySetting(e.Policies, 'ProviderAddress', 'ProviderAddress'))).toEqual(remote.map(() => wantPa));
  // vxlan: every load balancer SNATs to the source VIP the agent reserved and wrote for kube-proxy (the
  // host-gw run gave kube-proxy no --source-vip: kubeProxy.args).
  const lbs = state.loadBalancers ?? [];
  expect(lbs.map((l) => `${l.FrontendVIPs?.[0]}:${l.PortMappings?.[0]?.ExternalPort}/${l.PortMappings?.[0]?.Protocol}`).sort()).toEqual([
    '10.96.0.10:53/17',
    '10.96.0.10:53/6',
    '10.96.0.20:80/6',
  ]);
  expect(lbs.map((l) => l.SourceVIP)).toEqual(lbs.map(() => sourceVip));
}

// NetworkPolicy end to end: the built agent (`node dist/main.js --network-policy`, test/support/cluster.ts
// startProcess) on a simulated Windows node, against the fake API server over real HTTP. The test creates
// Namespaces, Pods (on this node's podCIDR and on a Linux peer's) and NetworkPolicies in the API server,
// attaches the local pods as the CNI ADD does (the recorded win-overlay / win-bridge ADD replayed into the
// node's state file for each pod: test/fixtures/cni-traces, test/support/cni-replay.ts addTraceFor), waits on
// what the agent reports (its flannel_netpol_* metrics and /status), and judges packets with the simulated
// node's evaluator (src/simulator/acl.ts) over what the agent wrote into the state file. Semantics: the
// NetworkPolicy reference (https://kubernetes.io/docs/concepts/services-networking/network-policies/): a pod
// selected for ingress takes only what some policy allows, policies add up, the node's own traffic (kubelet
// probes) is always allowed. Then a policy is updated, a pod relabelled and the policy deleted, and each
// change's HNS writes are counted on the node's side (its HcnModifyEndpoint and HcnModifyNetwork calls,
// flannel_simulated_dataplane_calls_total): they are the change's, never a rewrite of every endpoint, and the
// endpoint the change does not concern is never written (a state file `faults` rule on it, which would fire
// on any write to it, stays unfired).
//
// Each backend runs on each HNS profile (../support/hns-profiles.ts: Windows Server 2019, 2022 and 2025): below SetPolicyVersion (13.0, hcsshim hcn/hcnglobals.go) the peers are flattened into the
// rules' address lists, from it they are SetPolicy IP sets on the network that the rules name.
import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { METRIC } from '../../src/basics/metrics.js';
import { linuxFlannelNode } from '../../src/demo/kube-fake/api-server.js';
import { SET_POLICY } from '../../src/hns/schema.js';
import { isAgentId } from '../../src/netpol/diff.js';
import type { NetpolStatus } from '../../src/policy/controller.js';
import { AclEvaluator } from '../../src/simulator/acl.js';
import type { DataplaneState } from '../../src/simulator/model.js';
import { metricValue } from '../support/agent-signals.js';
import { addTraceFor, bindAgentNetwork, loadTrace, newBindings, replayScenario } from '../support/cni-replay.js';
import { HOSTGW_NET_CONF, TestCluster, VXLAN_NET_CONF, WIN_IP, waitFor } from '../support/cluster.js';
import type { SimAgent, SimNodeState } from '../support/sim-node.js';
import { PROFILES } from '../support/hns-profiles.js';
import { isFeatureSupported } from '../../src/hns/features.js';

const WIN = 'win-1';
/** The recorded scene (test/fixtures/cni-traces/README.md): win-1 at 10.0.0.2 with 10.244.100.0/24, the peer linux-1. */
const POD_CIDR = '10.244.100.0/24';
const TIMEOUT = { timeoutMs: 60_000 };

const BACKENDS = {
  vxlan: { netConf: VXLAN_NET_CONF, network: 'flannel.4096', agentEndpoint: 'flannel.4096_sourcevip', add: 'vxlan-add' },
  'host-gw': { netConf: HOSTGW_NET_CONF, network: 'cbr0', agentEndpoint: 'cbr0_ep', add: 'host-gw-add' },
} as const;

type Backend = keyof typeof BACKENDS;

const podJson = (namespace: string, name: string, ip: string, nodeName: string, labels: Record<string, string>) => ({
  metadata: { namespace, name, labels },
  spec: { nodeName, containers: [{ name: 'c', ports: [{ name: 'http', containerPort: 80 }] }] },
  status: { phase: 'Running', podIPs: [{ ip }] },
});

/** x/allow-a: ingress to pod=a from pod=b (its namespace) and from namespace ns=y, TCP `port`. */
const allowA = (port: number) => ({
  metadata: { namespace: 'x', name: 'allow-a' },
  spec: {
    podSelector: { matchLabels: { pod: 'a' } },
    ingress: [{ from: [{ podSelector: { matchLabels: { pod: 'b' } } }, { namespaceSelector: { matchLabels: { ns: 'y' } } }], ports: [{ protocol: 'TCP', port }] }],
  },
});

let cluster: TestCluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

interface Node {
  agent: SimAgent;
  state: SimNodeState;
  metrics(): Promise<string>;
  status(): Promise<NetpolStatus | undefined>;
  /** HcnModifyEndpoint and HcnModifyNetwork calls the node received from the agent. */
  modifies(): Promise<number>;
  /** The agent's own count of its NetworkPolicy writes. */
  writes(): Promise<number>;
  /** Whether the node's HNS passes a TCP connection's first packet. */
  passes(src: string, dst: string, port: number): boolean;
  /** The HNS endpoint holding `ip`. */
  endpointOf(ip: string): { ID?: string; Policies?: { Type: string; Settings?: Record<string, unknown> }[] };
}

async function startNode(backend: Backend, hnsVersion: string): Promise<Node> {
  const c = (cluster = await new TestCluster().start());
  c.api.addNode(linuxFlannelNode({ name: 'linux-1', podCIDR: '10.244.1.0/24', publicIP: '10.0.0.11', backendType: backend }));
  c.addWindowsNode(WIN, POD_CIDR, WIN_IP);
  mkdirSync(join(c.dir, WIN), { recursive: true });
  const state = c.stateOf(WIN);
  state.edit((s) => void (s.hnsVersion = hnsVersion));
  const agent = await c.startProcess({ nodeName: WIN, netConf: BACKENDS[backend].netConf, args: [`--iface=${WIN_IP}`, '--network-policy'] });
  await agent.waitReady(60_000);
  const metrics = () => agent.metrics();
  const read = (): DataplaneState => state.read();
  return {
    agent,
    state,
    metrics,
    status: async () => ((await (await fetch(`http://127.0.0.1:${agent.port}/status`)).json()) as { networkPolicy?: NetpolStatus }).networkPolicy,
    modifies: async () => {
      const t = await metrics();
      return metricValue(t, METRIC.simulatedCalls, { op: 'HcnModifyEndpoint' }) + metricValue(t, METRIC.simulatedCalls, { op: 'HcnModifyNetwork' });
    },
    writes: async () => metricValue(await metrics(), METRIC.netpolWrites),
    passes: (src, dst, port) => new AclEvaluator(read()).send({ src, dst, protocol: 6, srcPort: 40000, dstPort: port }).allowed,
    endpointOf: (ip) => read().endpoints.find((e) => (e.IpConfigurations ?? []).some((x) => x.IpAddress === ip))!,
  };
}

/** The CNI ADD of a pod at `ip`: the backend's recorded ADD, replayed for this pod into the node's state file. */
async function cniAdd(node: Node, backend: Backend, ip: string, containerId: string): Promise<void> {
  const { network, agentEndpoint, add } = BACKENDS[backend];
  const dp = node.state.model();
  const b = newBindings();
  bindAgentNetwork(dp, b, network, agentEndpoint);
  const r = await replayScenario(addTraceFor(loadTrace(add), { ips: [ip], containerId: containerId.padEnd(64, '0') }), dp, b, {
    checkStateBefore: false,
    checkStateAfter: false,
  });
  // Every call answered as recorded (the network's documents differ: the agent's SetPolicy sets, the HNS version).
  expect(r.mismatches.filter((m) => m.where.endsWith(' hr'))).toEqual([]);
}

/** Wait until the agent wrote `more` NetworkPolicy writes past `from` and says it is in sync. */
async function settled(node: Node, from: number, more: number, what: string): Promise<void> {
  await waitFor(async () => (await node.writes()) >= from + more && (await node.status())?.inSync === true, what, { ...TIMEOUT, detail: () => node.agent.dump().slice(-3000) });
}

/** A `faults` rule that fires on any HcnModifyEndpoint of this endpoint: it must stay unfired. */
function tripwire(node: Node, endpointId: string): () => number {
  node.state.addFault({ op: 'HcnModifyEndpoint', match: `${endpointId} `, hresult: '0x80004005', remaining: 1 });
  return () => node.state.read().faults!.find((f) => f.match === `${endpointId} `)!.remaining;
}

const agentSetCount = (s: DataplaneState, network: string) =>
  (s.networks.find((n) => n.Name === network)?.Policies ?? []).filter((p) => p.Type === SET_POLICY && isAgentId(p.Settings?.['Id'])).length;

const CASES = (['vxlan', 'host-gw'] as const).flatMap((backend) => PROFILES.map(({ version, hns }) => ({ backend, hns, sets: isFeatureSupported(version, 'SetPolicy') })));

describe('the built agent with --network-policy on a simulated node', () => {
  it.each(CASES)(
    '$backend on HNS $hns: pods get their rules once attached, packets judged by the node; an update, a relabel and a delete write only what they change',
    async ({ backend, hns, sets }) => {
      const node = await startNode(backend, hns);
      const { api } = cluster!;
      const network = BACKENDS[backend].network;
      api.addObject('namespaces', { metadata: { name: 'x', labels: { ns: 'x' } } });
      api.addObject('namespaces', { metadata: { name: 'y', labels: { ns: 'y' } } });
      // On this node: x/a, x/b. On linux-1: y/c, x/d.
      const A = '10.244.100.3';
      const B = '10.244.100.4';
      const C = '10.244.1.5';
      const D = '10.244.1.6';
      api.addObject('pods', podJson('x', 'a', A, WIN, { pod: 'a' }));
      api.addObject('pods', podJson('x', 'b', B, WIN, { pod: 'b' }));
      api.addObject('pods', podJson('y', 'c', C, 'linux-1', { pod: 'c' }));
      api.addObject('pods', podJson('x', 'd', D, 'linux-1', { pod: 'd' }));
      // Default deny ingress in x (x/a and x/b isolated), and x/a open to pod=b and namespace y on TCP 80.
      api.addObject('networkpolicies', { metadata: { namespace: 'x', name: 'deny-ingress' }, spec: { podSelector: {}, policyTypes: ['Ingress'] } });
      api.addObject('networkpolicies', allowA(80));

      // The pods' events come first, then the CNI ADDs: the agent finds each endpoint by the pod's IP.
      await waitFor(async () => (await node.status())?.listed === true, 'the three lists', TIMEOUT);
      await cniAdd(node, backend, A, 'poda');
      await cniAdd(node, backend, B, 'podb');
      await waitFor(async () => metricValue(await node.metrics(), `${METRIC.netpolDelay}_count`) === 2, 'both endpoints holding their rules', TIMEOUT);
      await waitFor(async () => (await node.status())?.inSync === true, 'in sync', TIMEOUT);
      const status = (await node.status())!;
      expect(status.pods.map((p) => [p.pod, p.policies, p.programmed])).toEqual([
        ['x/a', ['x/allow-a', 'x/deny-ingress'], true],
        ['x/b', ['x/deny-ingress'], true],
      ]);

      // Flattened below HNS 13.0, IP sets from it: the network's SetPolicy and the gauge say which.
      const t = await node.metrics();
      expect(agentSetCount(node.state.read(), network) > 0).toBe(sets);
      expect(metricValue(t, METRIC.netpolSets) > 0).toBe(sets);
      expect(metricValue(t, METRIC.netpolRules)).toBeGreaterThan(0);

      expect(node.passes(B, A, 80)).toBe(true);
      expect(node.passes(B, A, 81)).toBe(false);
      expect(node.passes(C, A, 80)).toBe(true); // namespace y
      expect(node.passes(D, A, 80)).toBe(false); // x/d is not pod=b
      expect(node.passes(C, B, 80)).toBe(false); // x/b: default deny
      expect(node.passes(A, B, 80)).toBe(false);
      expect(node.passes(B, C, 80)).toBe(true); // egress is not isolated
      expect(node.passes(WIN_IP, A, 10250)).toBe(true); // the node itself: kubelet probes
      expect(node.passes(WIN_IP, B, 10250)).toBe(true);

      // x/b's endpoint is the concern of none of the changes below: no write may reach it.
      const bUnwritten = tripwire(node, node.endpointOf(B).ID!);

      // 1. The policy updated (port 80 -> 81): x/a's changed rules removed and added, one request each.
      let modifies = await node.modifies();
      let writes = await node.writes();
      api.updateObject('networkpolicies', 'x/allow-a', (p: ReturnType<typeof allowA>) => void (p.spec.ingress[0].ports[0].port = 81));
      await settled(node, writes, 2, 'the policy update written');
      expect((await node.modifies()) - modifies).toBe(2);
      expect((await node.writes()) - writes).toBe(2);
      expect(node.passes(B, A, 81)).toBe(true);
      expect(node.passes(B, A, 80)).toBe(false);

      // 2. x/d relabelled pod=b: one IP set updated, or (flattened) x/a's rule naming the peers replaced.
      modifies = await node.modifies();
      writes = await node.writes();
      api.updateObject('pods', 'x/d', (p: ReturnType<typeof podJson>) => void (p.metadata.labels = { pod: 'b' }));
      const relabel = sets ? 1 : 2;
      await settled(node, writes, relabel, 'the relabel written');
      expect((await node.modifies()) - modifies).toBe(relabel);
      expect((await node.writes()) - writes).toBe(relabel);
      expect(node.passes(D, A, 81)).toBe(true);

      // 3. The policy deleted: x/a's allow rules removed in one request, then (sets) its IP sets in another.
      modifies = await node.modifies();
      writes = await node.writes();
      api.deleteObject('networkpolicies', 'x/allow-a');
      const removal = sets ? 2 : 1;
      await settled(node, writes, removal, 'the policy deletion written');
      expect((await node.modifies()) - modifies).toBe(removal);
      expect((await node.writes()) - writes).toBe(removal);
      expect(node.passes(B, A, 81)).toBe(false);
      expect(node.passes(C, A, 81)).toBe(false);
      expect(node.passes(WIN_IP, A, 10250)).toBe(true);
      expect(agentSetCount(node.state.read(), network)).toBe(0);

      expect(bUnwritten()).toBe(1);
      expect((await node.status())?.hnsRefused).toBe(0);
    },
    240_000,
  );
});

// Simulated Windows nodes enforcing the NetworkPolicy core, for its truth-table and conformance tests: each
// node has the pod network a CNI plugin attaches pods to (L2Bridge cbr0 with an IPv4 and an IPv6 subnet), an
// HNS endpoint per live local pod (created and deleted as the CNI's ADD and DEL would), and the core's
// translation written through HnsClient as src/netpol/diff.ts plans it against what HNS reports (set adds and
// updates, rule removes, rule adds, set removes: real HcnModifyEndpoint and HcnModifyNetwork requests to the
// simulated HNS, which refuses what HNS refuses). Verdicts come from the simulated node's own evaluator
// (src/simulator/acl.ts) over what its HNS then holds. A packet between two nodes is judged by the source
// node (its endpoint's Out rules) and then the destination node (its endpoint's In rules), as two Windows
// nodes would; an address no node holds (a host off the cluster) has no rules.
import { HnsClient } from '../../src/hns/client.js';
import type { HnsVersion } from '../../src/hns/schema.js';
import { computeIntent, type ClusterState, type NodeContext } from '../../src/netpol/intent.js';
import { agentAcls, agentSets, planEndpointAcls, planSets } from '../../src/netpol/diff.js';
import { hnsRefusal, translate, type Translation } from '../../src/netpol/translate.js';
import { AclEvaluator, type Packet } from '../../src/simulator/acl.js';
import { SimulatedHnsTransport } from '../../src/simulator/hns.js';
import { SimulatedDataplane } from '../../src/simulator/model.js';

const V2 = { Major: 2, Minor: 0 };

/** What one apply wrote: HcnModify* requests, and the ACL rules and IP sets they carried. */
export interface Writes {
  requests: number;
  rules: number;
  sets: number;
}

export interface PolicyNodeOptions {
  node: NodeContext;
  /** The node's pod subnets, one per family (the network's Ipams). */
  subnets: readonly string[];
  hnsVersion: HnsVersion;
}

/** One Windows node: its simulated HNS, the agent's pod network on it, and the core applied to it. */
export class PolicyNode {
  readonly dp = new SimulatedDataplane();
  readonly hns: HnsClient;
  private networkId = '';

  private constructor(readonly options: PolicyNodeOptions) {
    this.hns = new HnsClient(new SimulatedHnsTransport(this.dp, { version: options.hnsVersion }));
  }

  static async start(options: PolicyNodeOptions): Promise<PolicyNode> {
    const n = new PolicyNode(options);
    const net = await n.hns.createNetwork({
      Name: 'cbr0',
      Type: 'L2Bridge',
      SchemaVersion: V2,
      Ipams: [{ Type: 'Static', Subnets: options.subnets.map((IpAddressPrefix) => ({ IpAddressPrefix })) }],
    });
    n.networkId = net.ID!;
    return n;
  }

  /** What the agent wants on this node for the cluster: the core's intent and translation for this HNS version. */
  translation(state: ClusterState): Translation {
    return translate(computeIntent(state, this.options.node, { unsupported: hnsRefusal }), { hnsVersion: this.options.hnsVersion });
  }

  /** Converge the node on the cluster: endpoints for its live pods (CNI ADD and DEL), then the plan's writes, counted. */
  async apply(state: ClusterState): Promise<Writes> {
    const t = this.translation(state);
    await this.syncEndpoints(t);
    const before = this.modifyRequests();
    const endpoints = await this.hns.listEndpoints(this.networkId);
    const idOf = (ip: string) => endpoints.find((e) => (e.IpConfigurations ?? []).some((c) => c.IpAddress === ip))!.ID!;
    const sets = planSets(agentSets((await this.hns.getNetwork(this.networkId))!.Policies), t.sets);
    const plans = t.endpoints.map((e) => {
      const id = idOf(e.podIPs[0]);
      return { id, plan: planEndpointAcls(agentAcls(endpoints.find((x) => x.ID === id)!.Policies), e.rules) };
    });
    await this.hns.addSetPolicies(this.networkId, sets.add);
    await this.hns.updateSetPolicies(this.networkId, sets.update);
    for (const { id, plan } of plans) await this.hns.removeEndpointAcls(id, plan.remove);
    for (const { id, plan } of plans) await this.hns.addEndpointAcls(id, plan.add);
    await this.hns.removeSetPolicies(this.networkId, sets.remove);
    return {
      requests: this.modifyRequests() - before,
      rules: plans.reduce((n, { plan }) => n + plan.add.length + plan.remove.length, 0),
      sets: sets.add.length + sets.update.length + sets.remove.length,
    };
  }

  /** The node as its HNS holds it now: its endpoints' addresses and its evaluator. */
  judge(): NodeJudge {
    const snapshot = this.dp.snapshot();
    const ips = new Set(snapshot.endpoints.flatMap((e) => (e.IpConfigurations ?? []).map((c) => c.IpAddress)));
    return { ips, ev: new AclEvaluator(snapshot) };
  }

  private modifyRequests(): number {
    return (this.dp.calls.get('HcnModifyEndpoint') ?? 0) + (this.dp.calls.get('HcnModifyNetwork') ?? 0);
  }

  /** An endpoint per pod of the translation, named by the pod's uid; endpoints of pods gone are deleted. */
  private async syncEndpoints(t: Translation): Promise<void> {
    const have = await this.hns.listEndpoints(this.networkId);
    const want = new Set(t.endpoints.map((e) => e.uid));
    for (const ep of have) if (!want.has(ep.Name ?? '')) await this.hns.deleteEndpoint(ep.ID!);
    const named = new Set(have.map((e) => e.Name));
    for (const e of t.endpoints) {
      if (named.has(e.uid)) continue;
      await this.hns.createEndpoint(this.networkId, { Name: e.uid, SchemaVersion: V2, IpConfigurations: e.podIPs.map((IpAddress) => ({ IpAddress })) });
    }
  }
}

export interface NodeJudge {
  ips: ReadonlySet<string>;
  ev: AclEvaluator;
}

/** The verdict of the nodes on a packet: every node holding its source or destination judges it, each once. */
export function passes(judges: readonly NodeJudge[], p: Packet): boolean {
  return judges.filter((j) => j.ips.has(p.src) || j.ips.has(p.dst)).every((j) => j.ev.send(p).allowed);
}

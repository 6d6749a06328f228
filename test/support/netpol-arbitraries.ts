// Random NetworkPolicy clusters for the core's property tests (test/property/netpol-*.property.test.ts): two
// namespaces, pods and policies drawn from a few labels, selectors, ipBlocks and ports (numeric, ranges,
// named), the objects built through the real projections (./netpol-cluster.ts).
import fc from 'fast-check';
import type { ClusterState } from '../../src/netpol/intent.js';
import { namespace, NODE, OTHER_NODE, pod, policy } from './netpol-cluster.js';

export const NS = ['x', 'y'];
const KEYS = ['app', 'tier'];
const VALUES = ['a', 'b'];

export const labels = fc.dictionary(fc.constantFrom(...KEYS), fc.constantFrom(...VALUES), { maxKeys: 2 });
const requirement = fc.oneof(
  fc.record({ key: fc.constantFrom(...KEYS), operator: fc.constantFrom('In', 'NotIn'), values: fc.uniqueArray(fc.constantFrom(...VALUES), { minLength: 1 }) }),
  fc.record({ key: fc.constantFrom(...KEYS), operator: fc.constantFrom('Exists', 'DoesNotExist'), values: fc.constant([]) }),
);
const selector = fc.record(
  { matchLabels: fc.option(labels, { nil: undefined }), matchExpressions: fc.option(fc.array(requirement, { maxLength: 2 }), { nil: undefined }) },
  { requiredKeys: [] },
);
const ipBlock = fc.constantFrom(
  { cidr: '10.244.0.0/16' },
  { cidr: '10.244.1.0/24', except: ['10.244.1.0/30'] },
  { cidr: '10.244.0.0/16', except: ['10.244.2.0/24', '10.244.1.4/32'] },
  { cidr: 'fd00:10:244::/48', except: ['fd00:10:244:1::/64'] },
  { cidr: '0.0.0.0/0' },
);
const peer = fc.oneof(
  fc.record({ podSelector: selector }),
  fc.record({ namespaceSelector: selector }),
  fc.record({ podSelector: selector, namespaceSelector: selector }),
  fc.record({ ipBlock }),
);
const port = fc.oneof(
  fc.record({ protocol: fc.constantFrom('TCP', 'UDP', undefined), port: fc.constantFrom(80, 81, 8080) }, { requiredKeys: ['port'] }),
  fc.record({ protocol: fc.constantFrom('TCP', 'UDP'), port: fc.constant(80), endPort: fc.constantFrom(81, 8080) }),
  fc.record({ protocol: fc.constantFrom('TCP', 'UDP') }),
  fc.record({ protocol: fc.constantFrom('TCP', 'UDP', undefined), port: fc.constantFrom('web', 'dns') }, { requiredKeys: ['port'] }),
);
const rule = fc.record({ peers: fc.array(peer, { maxLength: 2 }), ports: fc.array(port, { maxLength: 2 }) });
export const policySpec = fc.record({
  ns: fc.constantFrom(...NS),
  podSelector: selector,
  policyTypes: fc.constantFrom(undefined, ['Ingress'], ['Egress'], ['Ingress', 'Egress']),
  ingress: fc.array(rule, { maxLength: 2 }),
  egress: fc.array(rule, { maxLength: 2 }),
});
export const podSpec = fc.record({
  ns: fc.constantFrom(...NS),
  labels,
  local: fc.boolean(),
  dual: fc.boolean(),
  web: fc.constantFrom(80, 8080, undefined),
  dns: fc.constantFrom('TCP', 'UDP', undefined),
  hostNetwork: fc.constantFrom(false, false, false, true),
  phase: fc.constantFrom('Running', 'Running', 'Pending', 'Succeeded'),
});

/** A hostNetwork pod has its node's addresses (this node's are NODE.nodeIPs). */
const hostIps = (local: boolean, dual: boolean): string[] => (local ? NODE.nodeIPs : ['192.168.0.20', 'fd00:192:168::20']).slice(0, dual ? 2 : 1);

export type Of<A> = A extends fc.Arbitrary<infer T> ? T : never;

export function buildCluster(pods: Of<typeof podSpec>[], specs: Of<typeof policySpec>[], nsLabels: Record<string, string>[]): ClusterState {
  return {
    namespaces: NS.map((n, i) => namespace(n, nsLabels[i])),
    pods: pods.map((p, i) =>
      pod(p.ns, `p${i}`, {
        labels: p.labels,
        ips: p.hostNetwork
          ? hostIps(p.local, p.dual)
          : p.dual
            ? [`10.244.${p.local ? 1 : 2}.${i + 1}`, `fd00:10:244:${p.local ? 1 : 2}::${i + 1}`]
            : [`10.244.${p.local ? 1 : 2}.${i + 1}`],
        hostNetwork: p.hostNetwork,
        node: p.local ? NODE.nodeName : OTHER_NODE,
        phase: p.phase,
        ports: [...(p.web === undefined ? [] : [{ name: 'web', containerPort: p.web }]), ...(p.dns === undefined ? [] : [{ name: 'dns', containerPort: 81, protocol: p.dns }])],
      }),
    ),
    policies: specs.map((s, i) =>
      policy(s.ns, `np${i}`, {
        podSelector: s.podSelector,
        ...(s.policyTypes === undefined ? {} : { policyTypes: s.policyTypes }),
        ingress: s.ingress.map((r) => ({ from: r.peers, ports: r.ports })),
        egress: s.egress.map((r) => ({ to: r.peers, ports: r.ports })),
      }),
    ),
  };
}

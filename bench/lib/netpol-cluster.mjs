// The NetworkPolicy benchmark's cluster (bench/netpol.mjs): namespaces, pods and NetworkPolicies as the API
// server holds them, deterministic. 100 namespaces of 100 pods each (10 apps of 10 pods, half frontends),
// the node's own pods spread over the namespaces, the others on peer nodes; 10 policies a namespace, each
// selecting one app: ingress from the namespace's frontends and from the namespaces of one team on two TCP
// ports, every fourth also an egress rule to an ipBlock with an except (the shapes of upstream's e2e suite,
// test/e2e/network/netpol/, at scale).
import { OWN_NODE, peer } from './common.mjs';

export const NAMESPACES = 100;
export const TEAMS = 10;
export const APPS = 10;

const nsName = (n) => `ns-${String(n).padStart(3, '0')}`;

export function namespaces(count = NAMESPACES) {
  return Array.from({ length: count }, (_, n) => ({ metadata: { name: nsName(n), labels: { 'kubernetes.io/metadata.name': nsName(n), team: `team-${n % TEAMS}` } } }));
}

/** Pod i of `total` (0-based): the first `local` (spread over namespaces) on this node, in 10.128.0.0/24; the others on peers. */
export function pod(i, total, local) {
  const ns = i % NAMESPACES;
  const inNs = Math.floor(i / NAMESPACES);
  const onThisNode = i < local;
  const p = onThisNode ? undefined : peer(1 + Math.floor((i - local) / 100));
  const ip = onThisNode ? `10.128.0.${10 + i}` : p.subnet.replace(/\.0\/24$/, `.${10 + ((i - local) % 100)}`);
  return {
    metadata: {
      namespace: nsName(ns),
      name: `pod-${String(i).padStart(5, '0')}`,
      labels: { app: `app-${inNs % APPS}`, role: inNs % 2 === 0 ? 'frontend' : 'backend', 'pod-template-hash': '5d8f9c7b6d' },
    },
    spec: {
      nodeName: onThisNode ? OWN_NODE : p.name,
      containers: [{ name: 'main', image: 'registry.k8s.io/e2e-test-images/agnhost:2.47', ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }] }],
    },
    status: { phase: 'Running', podIP: ip, podIPs: [{ ip }] },
  };
}

export function pods(total, local) {
  return Array.from({ length: total }, (_, i) => pod(i, total, local));
}

/** Policy j: in namespace j % 100, selecting app (j / 100) % 10; `port` varies it (a policy update). */
export function policy(j, port = 80) {
  const ns = j % NAMESPACES;
  const app = Math.floor(j / NAMESPACES) % APPS;
  const egress = j % 4 === 0;
  return {
    metadata: { namespace: nsName(ns), name: `np-${String(j).padStart(4, '0')}` },
    spec: {
      podSelector: { matchLabels: { app: `app-${app}` } },
      policyTypes: egress ? ['Ingress', 'Egress'] : ['Ingress'],
      ingress: [
        {
          from: [{ podSelector: { matchLabels: { role: 'frontend' } } }, { namespaceSelector: { matchLabels: { team: `team-${(ns + 1) % TEAMS}` } } }],
          ports: [
            { protocol: 'TCP', port },
            { protocol: 'TCP', port: 'http' },
          ],
        },
      ],
      ...(egress ? { egress: [{ to: [{ ipBlock: { cidr: '10.128.0.0/9', except: [`10.${128 + (j % 64)}.0.0/16`] } }], ports: [{ protocol: 'TCP', port: 443 }] }] } : {}),
    },
  };
}

export function policies(count) {
  return Array.from({ length: count }, (_, j) => policy(j));
}

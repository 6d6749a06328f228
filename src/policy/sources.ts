// The NetworkPolicy controller's three list-watches (../kube/list-watch.ts KubeListWatch, one per resource, as
// the kube subnet manager's Node watch is one: src/subnet/kube/node-list-watch.ts), with the same paging,
// deadlines, backoff and watch timeouts (src/subnet/timings.ts): networking.k8s.io/v1 NetworkPolicies, and
// core/v1 Pods and Namespaces of every namespace, each projected to what policy needs (../netpol/types.ts).
import type { Clock, Random } from '../basics/clock.js';
import type { Logger } from '../basics/log.js';
import type { Metrics } from '../basics/metrics.js';
import { kubeListFn, kubeWatchFn, type KubeHttp } from '../kube/http.js';
import { KubeListWatch } from '../kube/list-watch.js';
import { unreadFields, type DroppedField } from '../kube/watch-lines.js';
import type { SubnetTimings } from '../subnet/timings.js';
import { namespacedKey } from './cluster.js';
import type { NetpolSources } from './controller.js';
import { projectNamespace, projectNetworkPolicy, projectPod, type Projection } from '../netpol/types.js';

/** What the controller lists and watches (its RBAC: ../kube/api-error.ts AGENT_RBAC_RULES, held equal by a test). */
export const NETPOL_RESOURCES = [
  { group: 'networking.k8s.io', resource: 'networkpolicies', path: '/apis/networking.k8s.io/v1/networkpolicies' },
  { group: '', resource: 'pods', path: '/api/v1/pods' },
  { group: '', resource: 'namespaces', path: '/api/v1/namespaces' },
] as const;

/**
 * The most objects one list may hold: 2x Kubernetes' largest supported cluster for Pods (150,000,
 * https://kubernetes.io/docs/setup/best-practices/cluster-large/), 100,000 Namespaces and NetworkPolicies.
 */
export const NETPOL_LIST_BOUNDS = { pods: 300_000, namespaces: 100_000, networkpolicies: 100_000 } as const;

// A Pod's managedFields are a third of its JSON and never read (../netpol/types.ts reads metadata's names, uid and
// labels, spec's nodeName, hostNetwork and container ports, status's phase and podIPs).
const { event: POD_EVENT_UNREAD, list: POD_LIST_UNREAD } = unreadFields([{ depth: 2, key: 'managedFields', open: '[' }]);

export interface NetpolSourceDeps {
  http: KubeHttp;
  timings: Pick<SubnetTimings, 'requestTimeoutMs' | 'relistBackoff' | 'listDeadlineMs' | 'watchTimeoutSeconds' | 'watchSilenceMs'>;
  listPageSize: number;
  log: Logger;
  metrics: Metrics;
  clock: Clock;
  random: Random;
}

function value<T>(p: Projection<T>): T | undefined {
  return p.ok ? p.value : undefined;
}

function reason<T>(p: Projection<T>): string {
  return p.ok ? '' : p.reason;
}

export function netpolSources(d: NetpolSourceDeps): NetpolSources {
  const common = (path: string, unread?: { event: readonly DroppedField[]; list: readonly DroppedField[] }) => ({
    list: kubeListFn(d.http, path, d.timings.requestTimeoutMs, unread?.list),
    watch: kubeWatchFn(d.http, path, { metrics: d.metrics, unread: unread?.event }),
    log: d.log,
    metrics: d.metrics,
    clock: d.clock,
    random: d.random,
    backoff: d.timings.relistBackoff,
    listPageSize: d.listPageSize,
    listDeadlineMs: d.timings.listDeadlineMs,
    watchTimeoutSeconds: d.timings.watchTimeoutSeconds,
    watchSilenceMs: d.timings.watchSilenceMs,
    rbacFeatures: ['network-policy'] as const,
  });
  const [policies, pods, namespaces] = NETPOL_RESOURCES.map((r) => r.path);
  return {
    policies: new KubeListWatch({
      ...common(policies),
      resource: 'networkpolicies',
      kind: 'NetworkPolicy',
      project: (o) => value(projectNetworkPolicy(o)),
      skipReason: (o) => reason(projectNetworkPolicy(o)),
      keyOf: namespacedKey,
      maxObjects: NETPOL_LIST_BOUNDS.networkpolicies,
    }),
    pods: new KubeListWatch({
      ...common(pods, { event: POD_EVENT_UNREAD, list: POD_LIST_UNREAD }),
      resource: 'pods',
      kind: 'Pod',
      project: (o) => value(projectPod(o)),
      skipReason: (o) => reason(projectPod(o)),
      keyOf: namespacedKey,
      maxObjects: NETPOL_LIST_BOUNDS.pods,
    }),
    namespaces: new KubeListWatch({
      ...common(namespaces),
      resource: 'namespaces',
      kind: 'Namespace',
      project: (o) => value(projectNamespace(o)),
      skipReason: (o) => reason(projectNamespace(o)),
      keyOf: (n) => n.name,
      maxObjects: NETPOL_LIST_BOUNDS.namespaces,
    }),
  };
}

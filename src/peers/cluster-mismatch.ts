// A node that reaches no peer because it is configured for another cluster: the cluster has peers and
// every one of them is rejected for a reason in CLUSTER_CONFIG_REASONS (./reject-reasons.ts: another
// backend type, another VNI, a VNI Windows cannot use). Such a node is broken, not its peers, so it is
// not ready and says so on its Node (NetworkUnavailable, an Event), in /readyz, `flanneld status` and
// `flanneld doctor`, with the one setting to change. A node with no peer at all, or with one peer it
// accepts, is not. No upstream counterpart: flannel trusts peer leases and has no readiness of its own
// beyond its Node informer's sync. Pure.
import type { NetworkStatus, RejectedLease } from '../network-status.js';
import { CLUSTER_CONFIG_REASONS } from './reject-reasons.js';
import { MIN_WINDOWS_VNI } from './validate.js';
import { DEFAULT_VXLAN_PORT } from '../subnet/net-conf-types.js';

/** What this node's net-conf.json says about the cluster, and where it is read from. */
export interface OwnBackend {
  type: string;
  /** vxlan only. */
  vni?: number;
  /** --net-config-path, named in the fix. */
  netConfPath: string;
}

/** The node reaches no peer: the NetworkUnavailable reason, what was seen and the fix. */
export interface ClusterMismatch {
  /** A stable id (/readyz, `flanneld status`), as the CNI checks have. */
  check: 'cluster-config';
  /** The NetworkUnavailable condition's reason (CamelCase, as condition reasons are). */
  reason: string;
  detail: string;
  fix: string;
}

const CONDITION_REASONS: Record<string, string> = {
  'backend-type-mismatch': 'BackendTypeMismatch',
  'vni-mismatch': 'VNIMismatch',
  'vni-too-low': 'VNITooLow',
};

/** The value most of `items` have (the first such in their order on a tie). */
function mostCommon<T>(items: readonly T[]): T {
  const counts = new Map<T, number>();
  for (const x of items) counts.set(x, (counts.get(x) ?? 0) + 1);
  let best = items[0];
  for (const [x, n] of counts) if (n > counts.get(best)!) best = x;
  return best;
}

const VXLAN_WINDOWS = `"VNI": ${MIN_WINDOWS_VNI}, "Port": ${DEFAULT_VXLAN_PORT}`;
const SET_VNI = 'kubectl -n kube-flannel get cm kube-flannel-cfg -o yaml | flanneld netconf set-vni | kubectl apply -f -';

/** Undefined unless the peers are listed, none is accepted, and every rejection is a cluster-configuration one. */
export function clusterMismatch(s: Pick<NetworkStatus, 'listed' | 'peersDesired' | 'rejections'>, own: OwnBackend): ClusterMismatch | undefined {
  const rejected = s.rejections;
  if (!s.listed || s.peersDesired > 0 || rejected.length === 0 || !rejected.every((r) => CLUSTER_CONFIG_REASONS.has(r.reason))) return undefined;
  const reason = mostCommon(rejected.map((r) => r.reason));
  const like = rejected.filter((r) => r.reason === reason);
  const peers = `${rejected.length === 1 ? 'the one peer' : `all ${rejected.length} peers`} (${names(rejected)})`;
  const here = `this node's net-conf.json (${own.netConfPath})`;
  if (reason === 'backend-type-mismatch') {
    const type = mostCommon(like.map((r) => r.backendType));
    return {
      check: 'cluster-config',
      reason: CONDITION_REASONS[reason],
      detail: `${peers} rejected: they run backend "${type}", ${here} says "${own.type}"; this node reaches no other node's pods`,
      // The other backend's HNS network cannot take over this one's subnet (FLANNEL_ERR_NETWORK_CLASH): cleanup first, by the old net-conf's names.
      fix:
        `stop flanneld and remove this node's ${own.type} network (flanneld cleanup, with the net-conf.json it ran with), ` +
        `set "Backend": {"Type": "${type}"${type === 'vxlan' ? `, ${VXLAN_WINDOWS}` : ''}} in ${here} as the cluster's other nodes have it, then start flanneld`,
    };
  }
  const vni = mostCommon(like.map((r) => r.vni ?? NaN));
  const theirs = Number.isNaN(vni) ? 'another VNI' : `VNI ${vni}`;
  const detail = `${peers} rejected: they use ${theirs}, ${here} says VNI ${own.vni ?? '?'}; this node reaches no other node's pods`;
  if (reason === 'vni-too-low') {
    return {
      check: 'cluster-config',
      reason: CONDITION_REASONS[reason],
      detail,
      fix: `Windows needs a VNI of ${MIN_WINDOWS_VNI} or more: move the cluster's net-conf.json (kube-flannel-cfg) to ${VXLAN_WINDOWS} (${SET_VNI}), then restart flannel on every node`,
    };
  }
  return {
    check: 'cluster-config',
    reason: CONDITION_REASONS[reason] ?? 'ClusterConfigMismatch',
    detail,
    fix: `set "VNI": ${Number.isNaN(vni) ? "the cluster's" : vni} in the Backend of ${here}, as the cluster's other nodes have it, then restart flanneld`,
  };
}

/** The first three peers' names, then how many more. */
function names(rejected: readonly RejectedLease[]): string {
  const shown = rejected.slice(0, 3).map((r) => r.key);
  return rejected.length > 3 ? `${shown.join(', ')} and ${rejected.length - 3} more` : shown.join(', ');
}

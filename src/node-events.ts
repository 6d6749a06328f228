// What the agent tells the cluster about its own Node: Kubernetes Events (core/v1 Event, involvedObject
// the own Node) for the things an operator must act on, so `kubectl describe node` tells the story without
// the agent's logs. The seam the watcher, the reconcile loop and the backends report through; the kube
// subnet manager's recorder (src/kube/event-recorder.ts, client-go tools/record's rules) writes
// them, and the etcd mode has no API server to write to and records nothing (`noNodeEvents`).
// The reasons are CamelCase, as kubelet's (pkg/kubelet/events/event.go) are.
export type NodeEventType = 'Normal' | 'Warning';

/**
 * The object an Event is about when it is not the own Node (core/v1 ObjectReference): a namespaced object
 * (a NetworkPolicy the agent refuses), whose Event the recorder writes in that object's namespace.
 */
export interface EventObject {
  kind: string;
  apiVersion: string;
  namespace: string;
  name: string;
  uid: string;
}

export interface NodeEvent {
  type: NodeEventType;
  /** What it is about; absent: the own Node. */
  regarding?: EventObject;
  /** Short CamelCase machine reason (`kubectl describe node`'s Reason column). */
  reason: string;
  /** What happened, naming the peer, and what to do. */
  message: string;
}

/** Fire and forget: the recorder rate-limits, deduplicates and writes in the background. */
export interface NodeEvents {
  record(event: NodeEvent): void;
}

/** etcd mode, tests: no API server to record Events on. */
export const noNodeEvents: NodeEvents = { record: () => undefined };

export const NODE_EVENT_REASON = {
  peerRejected: 'FlannelPeerRejected',
  subnetContested: 'FlannelSubnetContested',
  peerRefused: 'FlannelPeerRefusedByHNS',
  networkRebuilt: 'FlannelNetworkRebuilt',
  hnsRestarted: 'FlannelHNSRestarted',
  hnsObjectsRepaired: 'FlannelHNSObjectsRepaired',
  nodeReregistered: 'FlannelNodeReregistered',
  cniConfigRenamed: 'FlannelCNIConfigRewritten',
  clusterConfigMismatch: 'FlannelClusterConfigMismatch',
  hostNicRestored: 'FlannelHostNICRestored',
} as const;

// The peers' Events (a rejected lease, a refused item) are raised by the problems ledger, src/peers/problems.ts.

/** The HNS network was found gone and recreated. */
export function networkRebuiltEvent(network: string, peers: number): NodeEvent {
  return {
    type: 'Warning',
    reason: NODE_EVENT_REASON.networkRebuilt,
    message: `HNS network ${network} was gone (HNS restarted, or it was deleted outside flanneld) and was recreated; ${peers} peers reprogrammed. If it recurs, look for what deletes it (Get-WinEvent Microsoft-Windows-Host-Network-Service-Admin)`,
  };
}

/** HNS lost the agent's objects (it restarted, or they were removed behind the agent's back); they were re-applied. */
export function hnsStateRepairedEvent(network: string, lost: readonly string[], restarted: boolean, peers: number): NodeEvent {
  const why = restarted ? 'the HNS service restarted (it runs in a new process)' : `HNS lost ${lost.join(', ')}`;
  return {
    type: 'Warning',
    reason: restarted ? NODE_EVENT_REASON.hnsRestarted : NODE_EVENT_REASON.hnsObjectsRepaired,
    message: `${why}: re-applied ${lost.length > 0 ? lost.join(', ') : 'its network and endpoints'} on network ${network} and reprogrammed ${peers} peers without a restart of flanneld. kube-proxy must re-add its load balancer policies (restart it if Services stay unreachable); look for why HNS restarted (Get-WinEvent Microsoft-Windows-Host-Network-Service-Admin)`,
  };
}

/** HNS replaced the chosen NIC with a vNIC that lacked its hand-set settings; the agent put them back (src/host/nic-keeper.ts). */
export function nicRestoredEvent(nic: string, vnic: string, restored: string, failed: readonly string[]): NodeEvent {
  const notDone = failed.length > 0 ? `; could not restore ${failed.join('; ')}: set them by hand on ${vnic}` : '';
  return {
    type: 'Warning',
    reason: NODE_EVENT_REASON.hostNicRestored,
    message: `HNS replaced ${nic} with ${vnic} and dropped its static settings; flanneld restored ${restored}${notDone}. Check the node's connectivity (ipconfig /all)`,
  };
}

/** The own Node was deleted and registered again; the lease was taken again from the new one. */
export function nodeReregisteredEvent(previousSubnet: string, subnet: string, rebuilt: boolean): NodeEvent {
  const change = previousSubnet === subnet ? `podCIDR ${subnet} unchanged` : `podCIDR ${previousSubnet} -> ${subnet}${rebuilt ? ', HNS network rebuilt on it' : ''}`;
  return {
    type: 'Normal',
    reason: NODE_EVENT_REASON.nodeReregistered,
    message: `the Node was deleted and registered again; flanneld leased it again without a restart (${change}; annotations, NetworkUnavailable and subnet.env rewritten). Pods started before keep addresses of the old podCIDR: recreate them if it changed`,
  };
}

/** The own Node was registered again with the podCIDR an older peer holds: the older Node keeps it, the agent keeps its old network. */
export function ownSubnetContestedEvent(node: string, subnet: string, keeper: string, kept: string): NodeEvent {
  return {
    type: 'Warning',
    reason: NODE_EVENT_REASON.subnetContested,
    message: `the Node was registered again with podCIDR ${subnet}, which the older Node ${keeper} holds; the older Node keeps a contested subnet, so flanneld keeps its network on ${kept} and is not ready. Fix: ${ownSubnetContestedFix(node, keeper)}`,
  };
}

/** The own Node's podCIDR is another's at the agent's first start: the agent published nothing and stops (src/subnet/kube/manager.ts confirmLease). */
export function ownSubnetContestedAtStartEvent(node: string, subnet: string, keeper: string, sameSecond: boolean): NodeEvent {
  const holder = sameSecond ? `Node ${keeper}, created in the same second with a name that sorts first, holds` : `the older Node ${keeper} holds`;
  return {
    type: 'Warning',
    reason: NODE_EVENT_REASON.subnetContested,
    message: `the Node has podCIDR ${subnet}, which ${holder}; flanneld published nothing (no annotations, no subnet.env) and stopped. Fix: ${ownSubnetContestedFix(node, keeper, 'then start flanneld again (its DaemonSet or service restarts it)')}`,
  };
}

/**
 * What ends the own Node's subnet contest, then `after` (by default: the agent leases again by itself). The
 * kubelet registers a deleted Node only when it starts (kubernetes/kubernetes#71398), hence its restart.
 */
export function ownSubnetContestedFix(node: string, keeper: string, after = 'flanneld leases again by itself once either is done'): string {
  return `give ${node} a podCIDR no other Node has (kubectl delete node ${node}, then restart the kubelet on it, Restart-Service kubelet: it registers the Node again and kube-controller-manager --allocate-node-cidrs assigns a free podCIDR), or, if ${keeper} is stale, kubectl delete node ${keeper}; ${after}`;
}

/** This node rejects every peer for a cluster-configuration mismatch (src/peers/cluster-mismatch.ts): it reaches none. */
export function clusterMismatchEvent(detail: string, fix: string): NodeEvent {
  return { type: 'Warning', reason: NODE_EVENT_REASON.clusterConfigMismatch, message: `${detail}; the node is not ready; fix: ${fix}` };
}

/** The agent's own CNI config named net-conf's network, not the adopted one the agent runs; it was rewritten. */
export function cniConfigRenamedEvent(path: string, previous: string, network: string): NodeEvent {
  return {
    type: 'Normal',
    reason: NODE_EVENT_REASON.cniConfigRenamed,
    message: `the CNI config ${path} named network "${previous}" (rendered before flanneld adopted ${network}); rewrote it to name ${network}, the HNS network flanneld runs, so pods can start. Set Backend.Name "${network}" in net-conf.json to render it so from the start`,
  };
}

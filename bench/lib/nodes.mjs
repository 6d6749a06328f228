// The benchmarks' Nodes: as heavy as a real cluster's (about 9 KB of JSON each), generated
// deterministically from the peer's index (same bytes on every run, every field that is unique per node
// in a real cluster unique here too: uid, machineID, systemUUID, bootID, providerID, hostname).
//
// The shape is that of a Node exported from a real kubeadm cluster running upstream flanneld:
// openyurtio/kole pkg/stormtest/node_template.go (its `nodeStr`, "cn-zhangjiakou.192.168.0.81"):
// metadata.managedFields written by kube-controller-manager (ttl annotation, podCIDR), kubeadm
// (cri-socket), flanneld (its four annotations) and kubelet (labels, addresses, capacity/allocatable,
// conditions, daemonEndpoints, images, nodeInfo; the status subresource), the four kubelet conditions
// plus NetworkUnavailable, images listed with a digest name, a tag name and sizeBytes, nodeInfo,
// capacity/allocatable with hugepages, InternalIP + Hostname addresses, cloud topology labels. That
// Node lists 12 images; a node of a busy cluster lists the kubelet's cap of 50 (`--node-status-max-images`,
// kubelet pkg/kubelet/nodestatus/setters.go Images); this one lists 30, drawn from a pool of 36 so
// neighbours share most but not all of them. The flannel annotations are upstream's
// (src/demo/kube-fake/nodes.ts linuxFlannelNode).
import { createHash } from 'node:crypto';
import { linuxFlannelNode } from '../../dist/demo/kube-fake/api-server.js';

const hex = (s, n = 64) => createHash('sha256').update(s).digest('hex').slice(0, n);
const uuid = (s) => {
  const h = hex(s, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
};

/** The image pool: the usual kube-system, CNI, CSI and monitoring images of a managed cluster. */
const IMAGE_POOL = [
  'registry.k8s.io/kube-proxy:v1.30.3',
  'registry.k8s.io/pause:3.9',
  'registry.k8s.io/coredns/coredns:v1.11.1',
  'registry.k8s.io/etcd:3.5.12-0',
  'registry.k8s.io/metrics-server:v0.7.1',
  'registry.k8s.io/csi-node-driver-registrar:v2.10.1',
  'registry.k8s.io/livenessprobe:v2.12.0',
  'registry.k8s.io/csi-provisioner:v4.0.1',
  'registry.k8s.io/csi-attacher:v4.5.1',
  'registry.k8s.io/csi-resizer:v1.10.1',
  'registry.k8s.io/kube-state-metrics:v2.12.0',
  'registry.k8s.io/ingress-nginx:v1.10.1',
  'docker.io/flannel/flannel:v0.25.5',
  'docker.io/flannel/flannel-cni-plugin:v1.5.1',
  'quay.io/prometheus/node-exporter:v1.8.1',
  'quay.io/prometheus/prometheus:v2.53.0',
  'quay.io/jetstack/cert-manager:v1.15.1',
  'docker.io/grafana/grafana:11.1.0',
  'docker.io/grafana/promtail:3.0.0',
  'docker.io/grafana/loki:3.0.0',
  'docker.io/fluent/fluent-bit:3.0.7',
  'docker.io/library/nginx:1.27.0',
  'docker.io/library/redis:7.2.5',
  'docker.io/library/postgres:16.3',
  'docker.io/library/busybox:1.36.1',
  'docker.io/library/alpine:3.20.1',
  'docker.io/bitnami/kubectl:1.30.2',
  'ghcr.io/kyverno/kyverno:v1.12.4',
  'ghcr.io/fluxcd/source-controller:v1.3.0',
  'ghcr.io/fluxcd/helm-controller:v1.0.1',
  'mcr.microsoft.com/azuredisk-csi:v1.30.1',
  'mcr.microsoft.com/azurefile-csi:v1.30.2',
  'mcr.microsoft.com/blob-csi:v1.24.1',
  'docker.io/library/python:3.12.4',
  'docker.io/library/node:20.15.1',
  'docker.io/library/golang:1.22.5',
].map((tagged, k) => {
  const repo = tagged.slice(0, tagged.lastIndexOf(':'));
  // Every third image was pulled by digest (Helm charts and operators pin them so): the kubelet lists
  // only its digest name.
  const names = k % 3 === 2 ? [`${repo}@sha256:${hex(tagged)}`] : [`${repo}@sha256:${hex(tagged)}`, tagged];
  return { names, sizeBytes: 700_000 + ((Number.parseInt(hex(`size ${tagged}`, 8), 16) % 300) + k) * 1_048_573 };
});
export const IMAGES_PER_NODE = 30;

/** The kubelet's managedFields entry (status subresource): every field it owns, as in the real Node. */
const KUBELET_FIELDS = {
  'f:metadata': {
    'f:annotations': { '.': {}, 'f:volumes.kubernetes.io/controller-managed-attach-detach': {} },
    'f:labels': {
      '.': {},
      'f:beta.kubernetes.io/arch': {},
      'f:beta.kubernetes.io/os': {},
      'f:kubernetes.io/arch': {},
      'f:kubernetes.io/hostname': {},
      'f:kubernetes.io/os': {},
      'f:node.kubernetes.io/instance-type': {},
      'f:topology.kubernetes.io/region': {},
      'f:topology.kubernetes.io/zone': {},
    },
  },
  'f:spec': { 'f:providerID': {} },
  'f:status': {
    'f:addresses': {
      '.': {},
      'k:{"type":"Hostname"}': { '.': {}, 'f:address': {}, 'f:type': {} },
      'k:{"type":"InternalIP"}': { '.': {}, 'f:address': {}, 'f:type': {} },
    },
    'f:allocatable': { '.': {}, 'f:cpu': {}, 'f:ephemeral-storage': {}, 'f:hugepages-1Gi': {}, 'f:hugepages-2Mi': {}, 'f:memory': {}, 'f:pods': {} },
    'f:capacity': { '.': {}, 'f:cpu': {}, 'f:ephemeral-storage': {}, 'f:hugepages-1Gi': {}, 'f:hugepages-2Mi': {}, 'f:memory': {}, 'f:pods': {} },
    'f:conditions': Object.fromEntries(
      ['DiskPressure', 'MemoryPressure', 'PIDPressure', 'Ready'].map((t) => [
        `k:{"type":"${t}"}`,
        { '.': {}, 'f:lastHeartbeatTime': {}, 'f:lastTransitionTime': {}, 'f:message': {}, 'f:reason': {}, 'f:status': {}, 'f:type': {} },
      ]),
    ),
    'f:config': {},
    'f:daemonEndpoints': { 'f:kubeletEndpoint': { 'f:Port': {} } },
    'f:images': {},
    'f:nodeInfo': {
      'f:architecture': {},
      'f:bootID': {},
      'f:containerRuntimeVersion': {},
      'f:kernelVersion': {},
      'f:kubeProxyVersion': {},
      'f:kubeletVersion': {},
      'f:machineID': {},
      'f:operatingSystem': {},
      'f:osImage': {},
      'f:systemUUID': {},
    },
  },
};

/** The fixed creation time of every bench Node (the data must not depend on when the bench runs). */
const CREATED = '2026-11-02T08:00:00Z';

/**
 * Peer `i`'s Node as every Windows agent rejects it: `vni1`, a Linux node left at flannel's default VNI 1
 * (vni-too-low); `hostile`, its public-ip, backend-type and backend-data annotations each about as long as
 * the agent reads one (1,000 characters, node-list-watch.ts MAX_ANNOTATION_LENGTH 1,024), distinct per node.
 */
export function rejectedNode(i, p, backend, how) {
  if (how === 'vni1') return realisticNode(i, p, backend, { vni: 1 });
  const n = realisticNode(i, p, backend);
  Object.assign(n.metadata.annotations, {
    'flannel.alpha.coreos.com/public-ip': `${'p'.repeat(1000)}${i}`,
    'flannel.alpha.coreos.com/backend-type': `${'t'.repeat(1000)}${i}`,
    'flannel.alpha.coreos.com/backend-data': JSON.stringify({ VNI: 4096, VtepMAC: `${'x'.repeat(950)}${i}` }),
  });
  return n;
}

/** A UTC timestamp in the API's format (seconds), `t` ms since the epoch. */
export const apiTime = (t) => new Date(t).toISOString().replace(/\.\d+Z$/, 'Z');

/**
 * Peer `i`'s Node (`p` = common.mjs peer(i)) annotated by upstream flanneld for `backend`, about 9 KB
 * of JSON. Timestamps are fixed; `heartbeat` moves them as the kubelet does.
 */
export function realisticNode(i, p, backend, { vni } = {}) {
  const n = linuxFlannelNode({ name: p.name, podCIDR: p.subnet, publicIP: p.publicIP, backendType: backend, ...(vni !== undefined ? { vni } : {}) });
  const zone = `westeurope-${(i % 3) + 1}`;
  n.metadata.uid = uuid(`uid ${p.name}`);
  n.metadata.creationTimestamp = CREATED;
  Object.assign(n.metadata.labels, {
    'beta.kubernetes.io/arch': 'amd64',
    'beta.kubernetes.io/os': 'linux',
    'kubernetes.io/arch': 'amd64',
    'node.kubernetes.io/instance-type': 'Standard_D4s_v5',
    'topology.kubernetes.io/region': 'westeurope',
    'topology.kubernetes.io/zone': zone,
  });
  Object.assign(n.metadata.annotations, {
    'kubeadm.alpha.kubernetes.io/cri-socket': 'unix:///run/containerd/containerd.sock',
    'node.alpha.kubernetes.io/ttl': '0',
    'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
  });
  const entry = (manager, time, fieldsV1, subresource) => ({
    manager,
    operation: 'Update',
    apiVersion: 'v1',
    time,
    fieldsType: 'FieldsV1',
    fieldsV1,
    ...(subresource ? { subresource } : {}),
  });
  n.metadata.managedFields = [
    entry('kubeadm', CREATED, { 'f:metadata': { 'f:annotations': { 'f:kubeadm.alpha.kubernetes.io/cri-socket': {} } } }),
    entry('kube-controller-manager', CREATED, {
      'f:metadata': { 'f:annotations': { 'f:node.alpha.kubernetes.io/ttl': {} } },
      'f:spec': { 'f:podCIDR': {}, 'f:podCIDRs': { '.': {}, [`v:"${p.subnet}"`]: {} } },
    }),
    entry(
      'flanneld',
      CREATED,
      {
        'f:metadata': {
          'f:annotations': Object.fromEntries(
            Object.keys(n.metadata.annotations)
              .filter((k) => k.startsWith('flannel.'))
              .map((k) => [`f:${k}`, {}]),
          ),
        },
        'f:status': {
          'f:conditions': {
            'k:{"type":"NetworkUnavailable"}': { '.': {}, 'f:lastHeartbeatTime': {}, 'f:lastTransitionTime': {}, 'f:message': {}, 'f:reason': {}, 'f:status': {}, 'f:type': {} },
          },
        },
      },
      'status',
    ),
    entry('kubelet', CREATED, KUBELET_FIELDS, 'status'),
  ];
  n.spec.providerID = `azure:///subscriptions/${uuid('sub')}/resourceGroups/mc_bench/providers/Microsoft.Compute/virtualMachines/${p.name}`;
  const res = { cpu: '4', 'ephemeral-storage': '129886128Ki', 'hugepages-1Gi': '0', 'hugepages-2Mi': '0', memory: '16393232Ki', pods: '110' };
  n.status.capacity = res;
  n.status.allocatable = { ...res, cpu: '3860m', 'ephemeral-storage': '119703055367', memory: '12879888Ki' };
  const kubelet = (type, reason, message) => ({ type, status: 'False', lastHeartbeatTime: CREATED, lastTransitionTime: CREATED, reason, message });
  n.status.conditions = [
    { type: 'NetworkUnavailable', status: 'False', lastHeartbeatTime: CREATED, lastTransitionTime: CREATED, reason: 'FlannelIsUp', message: 'Flannel is running on this node' },
    kubelet('MemoryPressure', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
    kubelet('DiskPressure', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
    kubelet('PIDPressure', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
    { ...kubelet('Ready', 'KubeletReady', 'kubelet is posting ready status'), status: 'True' },
  ];
  n.status.addresses = [
    { type: 'InternalIP', address: p.publicIP },
    { type: 'Hostname', address: p.name },
  ];
  n.status.daemonEndpoints = { kubeletEndpoint: { Port: 10250 } };
  n.status.nodeInfo = {
    machineID: hex(`machine ${p.name}`, 32),
    systemUUID: uuid(`system ${p.name}`),
    bootID: uuid(`boot ${p.name}`),
    kernelVersion: '5.15.0-1064-azure',
    osImage: 'Ubuntu 22.04.4 LTS',
    containerRuntimeVersion: 'containerd://1.7.15-1',
    kubeletVersion: 'v1.30.3',
    kubeProxyVersion: 'v1.30.3',
    operatingSystem: 'linux',
    architecture: 'amd64',
  };
  n.status.config = {};
  // 30 of the pool, rotated by the index (the kubelet lists them by size, largest first).
  n.status.images = Array.from({ length: IMAGES_PER_NODE }, (_, k) => IMAGE_POOL[(i + k) % IMAGE_POOL.length]).sort((a, b) => b.sizeBytes - a.sizeBytes);
  return n;
}

/**
 * A kubelet status heartbeat (a status-only update): every kubelet condition's lastHeartbeatTime and the
 * kubelet's managedFields time move to `time`; nothing the agent reads changes (the API server then bumps
 * resourceVersion). Mutates `n`.
 */
export function heartbeat(n, time) {
  for (const c of n.status?.conditions ?? []) if (c.type !== 'NetworkUnavailable') c.lastHeartbeatTime = time;
  const mf = n.metadata?.managedFields?.find((m) => m.manager === 'kubelet');
  if (mf) mf.time = time;
}

// When a node reaches no peer because it is configured for another cluster (src/peers/cluster-mismatch.ts):
// the peers are listed, none is accepted, and every rejection is a cluster-configuration one
// (CLUSTER_CONFIG_REASONS); the condition's reason and the fix follow the most common reason.
import { describe, expect, it } from '@jest/globals';
import { clusterMismatch } from '../../../src/peers/cluster-mismatch.js';
import type { RejectedLease } from '../../../src/network-status.js';

const rejected = (key: string, reason: string, backendType = 'vxlan', vni?: number): RejectedLease => ({
  key,
  subnet: '10.244.1.0/24',
  publicIP: '10.0.0.11',
  reason,
  message: reason,
  backendType,
  ...(vni !== undefined ? { vni } : {}),
});
const HOSTGW = { type: 'host-gw', netConfPath: '/etc/kube-flannel/net-conf.json' };
const VXLAN = { type: 'vxlan', vni: 4096, netConfPath: '/etc/kube-flannel/net-conf.json' };
const status = (rejections: RejectedLease[], over: { listed?: boolean; peersDesired?: number } = {}) => ({ listed: true, peersDesired: 0, rejections, ...over });

describe('clusterMismatch', () => {
  it.each<[string, ReturnType<typeof status>, typeof HOSTGW | typeof VXLAN]>([
    ['no peer at all', status([]), HOSTGW],
    ['before the complete list', status([rejected('a', 'backend-type-mismatch')], { listed: false }), HOSTGW],
    ['one peer accepted', status([rejected('a', 'backend-type-mismatch')], { peersDesired: 1 }), HOSTGW],
    ["a rejection that is the peer's own fault among them", status([rejected('a', 'backend-type-mismatch'), rejected('b', 'public-ip-own')]), HOSTGW],
    ['only peer faults', status([rejected('a', 'subnet-overlaps-peer')]), HOSTGW],
  ])('none: %s', (_what, s, own) => {
    expect(clusterMismatch(s, own)).toBeUndefined();
  });

  it('another backend type: the net-conf Backend to set, vxlan with what Windows needs, after a cleanup of the old network', () => {
    const m = clusterMismatch(status([rejected('linux-1', 'backend-type-mismatch'), rejected('linux-2', 'backend-type-mismatch')]), HOSTGW);
    expect(m).toMatchObject({ check: 'cluster-config', reason: 'BackendTypeMismatch' });
    expect(m?.detail).toBe(
      'all 2 peers (linux-1, linux-2) rejected: they run backend "vxlan", this node\'s net-conf.json (/etc/kube-flannel/net-conf.json) says "host-gw"; this node reaches no other node\'s pods',
    );
    expect(m?.fix).toBe(
      'stop flanneld and remove this node\'s host-gw network (flanneld cleanup, with the net-conf.json it ran with), set "Backend": {"Type": "vxlan", "VNI": 4096, "Port": 4789} ' +
        "in this node's net-conf.json (/etc/kube-flannel/net-conf.json) as the cluster's other nodes have it, then start flanneld",
    );
  });

  it("a VNI below 4096 on the peers: the cluster's net-conf is what changes", () => {
    const m = clusterMismatch(status([rejected('linux-1', 'vni-too-low', 'vxlan', 1)]), VXLAN);
    expect(m).toMatchObject({ reason: 'VNITooLow', detail: expect.stringContaining('the one peer (linux-1) rejected: they use VNI 1') });
    expect(m?.fix).toContain('flanneld netconf set-vni');
  });

  it("another VNI Windows can use: this node takes the cluster's; the most common reason and value win, names are capped", () => {
    const peers = ['a', 'b', 'c', 'd'].map((k) => rejected(k, 'vni-mismatch', 'vxlan', 4097));
    const m = clusterMismatch(status([...peers, rejected('e', 'backend-type-mismatch', 'host-gw')]), VXLAN);
    expect(m).toMatchObject({ reason: 'VNIMismatch', detail: expect.stringContaining('all 5 peers (a, b, c and 2 more) rejected: they use VNI 4097') });
    expect(m?.fix).toBe(
      'set "VNI": 4097 in the Backend of this node\'s net-conf.json (/etc/kube-flannel/net-conf.json), as the cluster\'s other nodes have it, then restart flanneld',
    );
  });
});

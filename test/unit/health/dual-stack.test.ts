// The kubelet / kube-proxy settings a dual-stack node needs, and the one-family InternalIP warning.
import { describe, expect, it } from '@jest/globals';
import { dualStackGuidance } from '../../../src/health/dual-stack.js';

const facts = { nodeIP: '10.0.0.2', nodeIPv6: 'fd00:10::2', network: '10.244.0.0/16', ipv6Network: 'fd00:10:244::/56', networkName: 'cbr0' };

describe('dualStackGuidance', () => {
  it('names --node-ip, --cluster-cidr and the network', () => {
    expect(dualStackGuidance({ ...facts, internalIPs: ['10.0.0.2', 'fd00:10::2'] })).toEqual({
      kubelet: ['--node-ip=10.0.0.2,fd00:10::2'],
      kubeProxy: ['--cluster-cidr=10.244.0.0/16,fd00:10:244::/56', '--proxy-mode=kernelspace', 'KUBE_NETWORK=cbr0 (winkernel networkName)'],
      warnings: [],
    });
  });

  it.each([[['10.0.0.2']], [['fd00:10::2']]])('warns when the Node has an InternalIP of one family only: %j', (ips) => {
    expect(dualStackGuidance({ ...facts, internalIPs: ips }).warnings).toHaveLength(1);
  });

  it('says nothing of InternalIPs it did not read', () => {
    expect(dualStackGuidance(facts).warnings).toEqual([]);
  });
});

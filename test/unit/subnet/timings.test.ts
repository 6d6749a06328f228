// The subnet managers' one timing shape (src/subnet/timings.ts): each manager's defaults, and what the
// composition root gives over them (a field given as undefined keeps the default).
import { describe, expect, it } from '@jest/globals';
import { subnetTimings } from '../../../src/subnet/timings.js';

describe('subnetTimings', () => {
  it.each<[string, 'kube' | 'etcd', Parameters<typeof subnetTimings>[1], Partial<ReturnType<typeof subnetTimings>>]>([
    [
      'kube defaults',
      'kube',
      {},
      { backoffBaseMs: 1000, backoffCapMs: 30_000, apiRetryTimeoutMs: 300_000, nodeWaitTimeoutMs: 300_000, requestTimeoutMs: 30_000, startUpWindowMs: 300_000 },
    ],
    // A ClusterRole applied after the agent is waited for as long as the own Node (--node-wait-timeout).
    ['kube: the RBAC start-up window follows the node wait', 'kube', { nodeWaitTimeoutMs: 600_000 }, { startUpWindowMs: 600_000 }],
    ['kube: unless given', 'kube', { nodeWaitTimeoutMs: 600_000, startUpWindowMs: 1000 }, { startUpWindowMs: 1000 }],
    ['etcd defaults: a shorter backoff', 'etcd', {}, { backoffBaseMs: 100, backoffCapMs: 5000, leaseTtlSeconds: 86_400, leaseRenewMarginMs: 3_600_000, renewRetryMs: 60_000 }],
    ['given fields win', 'etcd', { backoffBaseMs: 50, leaseRenewMarginMs: 3000 }, { backoffBaseMs: 50, backoffCapMs: 5000, leaseRenewMarginMs: 3000 }],
    ['a field given as undefined keeps the default', 'kube', { nodeWaitTimeoutMs: undefined, relistBackoff: undefined }, { nodeWaitTimeoutMs: 300_000 }],
  ])('%s', (_what, manager, given, expected) => {
    expect(subnetTimings(manager, given)).toMatchObject(expected);
  });

  it('leaves the computed ones to their manager (jittered watch timeout, silence after it, list deadline)', () => {
    const t = subnetTimings('kube');
    expect([t.watchTimeoutSeconds, t.watchSilenceMs, t.listDeadlineMs, t.relistBackoff]).toEqual([undefined, undefined, undefined, undefined]);
  });
});

// The subnet managers' timings in one shape: the retries' backoffs, the retry and start-up windows, the
// polls and the deadlines of the kube and the etcd subnet manager. The composition root (src/agent.ts,
// through kube/factory.ts and etcd/factory.ts) fills the ones a flag sets (--node-wait-timeout,
// --subnet-lease-renew-margin) and passes them down; each manager reads the fields it uses, over its
// defaults (subnetTimings). A test shortens them the same way, through the same object.
import type { RelistOptions } from '../basics/relist.js';

export interface SubnetTimings {
  /** Capped exponential backoff of API call retries (kube: 1 s / 30 s; etcd: 100 ms / 5 s). */
  backoffBaseMs: number;
  backoffCapMs: number;
  /** How long a failing API call is retried before giving up: kube's pod lookup and patches, etcd's acquire (5 min). */
  apiRetryTimeoutMs: number;
  /** Pauses between list and watch rounds (absent: client-go's reflector, 800 ms doubling to 30 s, jittered). */
  relistBackoff?: RelistOptions['backoff'];

  /** kube: how long to wait for the own Node to exist and get a podCIDR (`--node-wait-timeout`, 5 min). */
  nodeWaitTimeoutMs: number;
  /** kube: how often that wait is logged (10 s). */
  nodeWaitLogIntervalMs: number;
  /** kube: how often the own Node is read again while waiting (1 s). */
  nodePollIntervalMs: number;
  /**
   * kube: for this long after start-up began, a 403 on the start-up path is retried (kube/own-node.ts,
   * kube/node-public-ip.ts): a ClusterRole applied after the agent is waited for as the own Node is
   * (default nodeWaitTimeoutMs, `--node-wait-timeout`).
   */
  startUpWindowMs: number;
  /** kube: deadline of every request: list pages, the own-Node get, patches, the pod lookup (30 s). */
  requestTimeoutMs: number;
  /** kube: server-side watch timeout (absent: 30-40 s, jittered, so a healthy watch is never silent longer). */
  watchTimeoutSeconds?: number;
  /** kube: a watch without a byte for this long is abandoned and relisted (absent: watch timeout + 10 s). */
  watchSilenceMs?: number;
  /** kube: how long one paged Node list may take, all its pages (absent: 10 min; ../kube/list-watch.ts). */
  listDeadlineMs?: number;

  /** etcd: TTL of the own lease's etcd lease (24 h, flannel's subnetTTL). */
  leaseTtlSeconds: number;
  /** etcd: renew the own lease this long before it expires (`--subnet-lease-renew-margin`, 60 min). */
  leaseRenewMarginMs: number;
  /** etcd: delay after a failed renewal (1 min, as upstream). */
  renewRetryMs: number;
}

const MIN = 60_000;

const DEFAULTS: Readonly<Omit<SubnetTimings, 'startUpWindowMs'>> = Object.freeze({
  backoffBaseMs: 1000,
  backoffCapMs: 30_000,
  apiRetryTimeoutMs: 5 * MIN,
  nodeWaitTimeoutMs: 5 * MIN,
  nodeWaitLogIntervalMs: 10_000,
  nodePollIntervalMs: 1000,
  requestTimeoutMs: 30_000,
  leaseTtlSeconds: 24 * 60 * 60,
  leaseRenewMarginMs: 60 * MIN,
  renewRetryMs: MIN,
});

/** The etcd manager retries its own lease's calls on a shorter backoff: 100 ms doubling to 5 s. */
const ETCD_DEFAULTS: Partial<SubnetTimings> = { backoffBaseMs: 100, backoffCapMs: 5000 };

/** The timings `manager` runs with: its defaults, with the fields `given` sets (not undefined) over them. */
export function subnetTimings(manager: 'kube' | 'etcd', given: Partial<SubnetTimings> = {}): SubnetTimings {
  const set = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) as Partial<SubnetTimings>;
  const t = { ...DEFAULTS, ...(manager === 'etcd' ? ETCD_DEFAULTS : {}), ...set };
  return { ...t, startUpWindowMs: set.startUpWindowMs ?? t.nodeWaitTimeoutMs };
}

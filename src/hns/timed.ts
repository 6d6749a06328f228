// An HnsTransport that bounds every call (`--hns-call-timeout`), whatever the transport below: a hung
// HNS fails the operation with FLANNEL_ERR_HNS_CALL instead of hanging the agent, and what the call
// returns later (a handle) is released. The timers are the injected Clock, so tests run on virtual
// time. Our own addition: hcsshim's wrappers (internal/hns/hnsfuncs.go hnsCallRawResponse, the hcn
// syscalls declared in hcn/hcn.go) call the DLLs synchronously, without a timeout.
// Every HNS call passes here once, so it is also where each is measured: how long it took
// (flannel_hns_call_duration_seconds{op}, from the clock read that starts its timer) and the HRESULT it
// failed with (flannel_hns_call_errors_total{op,hresult}), under the Windows function's name.
import type { Clock } from '../basics/clock.js';
import { HnsError, errorMessage } from '../basics/errors.js';
import { silentLogger } from '../basics/log.js';
import type { Logger } from '../basics/log.js';
import { callFailure, type CallFailure, type Metrics } from '../basics/metrics.js';
import { hnsCallOp, type HcnHandle, type HnsTransport } from './transport.js';
import { closeQuietly } from './client.js';

/** `--hns-call-timeout` default: 120 s. */
export const DEFAULT_HNS_CALL_TIMEOUT_MS = 120_000;

export interface CallTimeoutOptions {
  /** Give up on one call (HNSCall, one Hcn* function) after this long. Default DEFAULT_HNS_CALL_TIMEOUT_MS; 0 = wait forever. */
  timeoutMs?: number;
  /**
   * The timers: `after` bounds each call, `now` measures it. The timer races the call, so it must take
   * real or test-advanced time: a clock whose timers fire at once times every call out.
   */
  clock: Clock;
  log?: Logger;
  /** Where each call is measured; without it, and with no timeout, the transport is returned as it is. */
  metrics?: Metrics;
}

/** `transport` bounded by `opts.timeoutMs` and measured in `opts.metrics`, or `transport` itself when there is neither. */
export function withCallTimeout(transport: HnsTransport, opts: CallTimeoutOptions): HnsTransport {
  const timeoutMs = Math.max(0, opts.timeoutMs ?? DEFAULT_HNS_CALL_TIMEOUT_MS);
  return timeoutMs > 0 || opts.metrics ? new TimedHnsTransport(transport, { ...opts, timeoutMs }) : transport;
}

function formatMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

/**
 * Every call rejects with FLANNEL_ERR_HNS_CALL when it has not settled within `timeoutMs` (0: never). A
 * call cannot be cancelled: a handle it returns after its timeout is closed here (nobody else holds it), a
 * late failure is only logged. The closes are bounded too (a hung close must not hang a pass either)
 * but nothing is cleaned up after them. A call is observed once, when it settles or times out (then at
 * its timeout); a late completion is not observed again.
 */
class TimedHnsTransport implements HnsTransport {
  private readonly timeoutMs: number;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly metrics: Metrics | undefined;

  constructor(
    private readonly inner: HnsTransport,
    opts: CallTimeoutOptions & { timeoutMs: number },
  ) {
    this.timeoutMs = opts.timeoutMs;
    this.clock = opts.clock;
    this.log = opts.log ?? silentLogger();
    this.metrics = opts.metrics;
  }

  hnsCall(method: 'GET' | 'POST' | 'DELETE', path: string, request: string): Promise<string> {
    return this.bounded(`HNSCall ${method} ${path}`, () => this.inner.hnsCall(method, path, request), undefined, hnsCallOp(method, path));
  }

  enumerateNetworks(query: string): Promise<string> {
    return this.bounded('HcnEnumerateNetworks', () => this.inner.enumerateNetworks(query));
  }

  createNetwork(id: string, settings: string): Promise<HcnHandle> {
    return this.bounded('HcnCreateNetwork', () => this.inner.createNetwork(id, settings), this.closeLate);
  }

  openNetwork(id: string): Promise<HcnHandle> {
    return this.bounded('HcnOpenNetwork', () => this.inner.openNetwork(id), this.closeLate);
  }

  modifyNetwork(network: HcnHandle, settings: string): Promise<void> {
    return this.bounded('HcnModifyNetwork', () => this.inner.modifyNetwork(network, settings));
  }

  queryNetworkProperties(network: HcnHandle, query: string): Promise<string> {
    return this.bounded('HcnQueryNetworkProperties', () => this.inner.queryNetworkProperties(network, query));
  }

  deleteNetwork(id: string): Promise<void> {
    return this.bounded('HcnDeleteNetwork', () => this.inner.deleteNetwork(id));
  }

  closeNetwork(network: HcnHandle): Promise<void> {
    return this.bounded('HcnCloseNetwork', () => this.inner.closeNetwork(network));
  }

  enumerateEndpoints(query: string): Promise<string> {
    return this.bounded('HcnEnumerateEndpoints', () => this.inner.enumerateEndpoints(query));
  }

  createEndpoint(network: HcnHandle, id: string, settings: string): Promise<HcnHandle> {
    return this.bounded('HcnCreateEndpoint', () => this.inner.createEndpoint(network, id, settings), this.closeLate);
  }

  openEndpoint(id: string): Promise<HcnHandle> {
    return this.bounded('HcnOpenEndpoint', () => this.inner.openEndpoint(id), this.closeLate);
  }

  modifyEndpoint(endpoint: HcnHandle, settings: string): Promise<void> {
    return this.bounded('HcnModifyEndpoint', () => this.inner.modifyEndpoint(endpoint, settings));
  }

  queryEndpointProperties(endpoint: HcnHandle, query: string): Promise<string> {
    return this.bounded('HcnQueryEndpointProperties', () => this.inner.queryEndpointProperties(endpoint, query));
  }

  deleteEndpoint(id: string): Promise<void> {
    return this.bounded('HcnDeleteEndpoint', () => this.inner.deleteEndpoint(id));
  }

  closeEndpoint(endpoint: HcnHandle): Promise<void> {
    return this.bounded('HcnCloseEndpoint', () => this.inner.closeEndpoint(endpoint));
  }

  enumerateLoadBalancers(query: string): Promise<string> {
    return this.bounded('HcnEnumerateLoadBalancers', () => this.inner.enumerateLoadBalancers(query));
  }

  openLoadBalancer(id: string): Promise<HcnHandle> {
    return this.bounded('HcnOpenLoadBalancer', () => this.inner.openLoadBalancer(id), this.closeLate);
  }

  queryLoadBalancerProperties(loadBalancer: HcnHandle, query: string): Promise<string> {
    return this.bounded('HcnQueryLoadBalancerProperties', () => this.inner.queryLoadBalancerProperties(loadBalancer, query));
  }

  closeLoadBalancer(loadBalancer: HcnHandle): Promise<void> {
    return this.bounded('HcnCloseLoadBalancer', () => this.inner.closeLoadBalancer(loadBalancer));
  }

  /**
   * Run one call against the timer; `late` receives a value that arrives after the timeout. `op` names
   * the call in errors and logs, `metricOp` (default `op`) in /metrics: a fixed set of names.
   */
  private bounded<T>(op: string, fn: () => Promise<T>, late?: (value: T) => Promise<void>, metricOp = op): Promise<T> {
    const started = this.clock.now();
    let call: Promise<T>;
    try {
      call = fn();
    } catch (err) {
      call = Promise.reject(err);
    }
    if (this.timeoutMs === 0) return this.measured(metricOp, started, call);
    // One promise settled by the call or the timer, observed as it settles: no async layer of its own
    // between the call and its caller (docs/performance.md, "CPU per node event at 5,000 Nodes").
    return new Promise<T>((resolve, reject) => {
      let done = false;
      const cancel = this.clock.after(this.timeoutMs, () => {
        if (done) return;
        done = true;
        this.observe(metricOp, started, 'timeout');
        const ms = this.timeoutMs;
        reject(
          new HnsError(
            'FLANNEL_ERR_HNS_CALL',
            `${op} timed out after ${formatMs(ms)} (--hns-call-timeout): HNS did not answer; check that the hns and vmcompute services are running (Get-Service hns, vmcompute) and the Microsoft-Windows-Host-Network-Service-Admin event log. The call may still complete; the next reconcile pass re-reads the state`,
            { op, timeoutMs: ms },
          ),
        );
      });
      call.then(
        (value) => {
          if (!done) {
            done = true;
            cancel();
            this.observe(metricOp, started);
            return resolve(value);
          }
          this.log.warn('an HNS call completed after its timeout', { op, afterMs: this.clock.now() - started });
          if (late) void late(value);
        },
        (error: unknown) => {
          if (!done) {
            done = true;
            cancel();
            this.observe(metricOp, started, callFailure(error));
            return reject(error);
          }
          this.log.warn('an HNS call failed after its timeout', { op, afterMs: this.clock.now() - started, error: errorMessage(error) });
        },
      );
    });
  }

  /** A call without a timer, measured. */
  private async measured<T>(op: string, started: number, call: Promise<T>): Promise<T> {
    try {
      const value = await call;
      this.observe(op, started);
      return value;
    } catch (err) {
      this.observe(op, started, callFailure(err));
      throw err;
    }
  }

  /** The call of `op` begun at `started` has just ended (or timed out). */
  private observe(op: string, started: number, failure?: CallFailure): void {
    this.metrics?.observeCall(op, (this.clock.now() - started) / 1000, failure);
  }

  /** A handle that arrived after its call timed out: nobody holds it, so close it now. */
  private readonly closeLate = async (h: HcnHandle): Promise<void> => {
    if (await closeQuietly(this.inner, this.log, h)) this.log.info('closed the handle of an HNS call that completed after its timeout', { kind: h.kind, id: h.id });
  };
}

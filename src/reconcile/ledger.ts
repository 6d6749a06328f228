// What the reconcile loop keeps of its passes: the ledger of passes and rebuilds (what `flanneld status`,
// /healthz and /metrics say about it: the last pass and its error, consecutive failures, whether the HNS
// network is missing, event-to-dataplane latency, and the log lines of a failed pass or rebuild). The
// items the dataplane refuses are the peers' problems ledger's (src/peers/problems.ts). No upstream
// counterpart: flannel's handlers keep no ledger.
import type { Clock } from '../basics/clock.js';
import { backoffDelay } from '../basics/clock.js';
import { errorMessage } from '../basics/errors.js';
import type { Metrics } from '../basics/metrics.js';
import { METRIC } from '../basics/metrics.js';
import type { Logger } from '../basics/log.js';

/** What one reconcile pass did. */
export interface PassResult {
  ok: boolean;
  added: number;
  removed: number;
  replaced: number;
  /** Items the dataplane refused in this pass (retried on their own backoff). */
  refused?: number;
  /** The pass found the network gone. */
  networkGone?: boolean;
  error?: unknown;
}

/** When a pass started, and since when the change it writes was waiting. */
export interface PassStart {
  started: number;
  since: number | undefined;
}

export class PassLedger {
  passes = 0;
  consecutiveFailures = 0;
  /** The last pass found the network gone and it is not rebuilt yet. */
  missing = false;
  lastSuccessAt: number | undefined;
  lastPassAt: number | undefined;
  lastPassOk: boolean | undefined;
  lastError: { at: number; message: string } | undefined;
  /** When the desired set first changed since the last successful pass. */
  private pendingSince: number | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly metrics: Metrics | undefined,
    private readonly backoff: { baseMs: number; capMs: number },
  ) {}

  /** The desired set changed. */
  changed(): void {
    this.pendingSince ??= this.clock.now();
  }

  begin(): PassStart {
    this.passes++;
    const since = this.pendingSince;
    this.pendingSince = undefined;
    return { started: this.clock.now(), since };
  }

  /** The pass's figures and histograms; a change not applied keeps its start time. */
  ended(out: PassResult, start: PassStart): void {
    const now = this.clock.now();
    this.lastPassAt = now;
    this.lastPassOk = out.ok;
    if (!out.ok) this.lastError = { at: now, message: errorMessage(out.error) };
    this.metrics?.observe(METRIC.passDuration, (now - start.started) / 1000, { result: out.ok ? 'ok' : 'error' });
    if (start.since === undefined) return;
    if (out.ok) this.metrics?.observe(METRIC.eventToDataplane, (now - start.since) / 1000);
    else this.pendingSince = Math.min(start.since, this.pendingSince ?? start.since);
  }

  /** Count the pass's result and log a failure (once per disappearance of the network). */
  settled(out: PassResult, driver: string, incremental: boolean): void {
    if (out.ok) {
      this.consecutiveFailures = 0;
      this.missing = false; // back (recreated by someone else when there is no rebuild hook)
      this.lastSuccessAt = this.clock.now();
      this.metrics?.inc(METRIC.applyPasses, { result: 'ok' });
      this.metrics?.set(METRIC.lastApplySuccess, Math.floor(this.lastSuccessAt / 1000));
      return;
    }
    this.consecutiveFailures++;
    this.metrics?.inc(METRIC.applyPasses, { result: 'error' });
    if (out.networkGone) {
      if (!this.missing)
        this.log.warn('the HNS network is gone (HNS restarted, or it was deleted outside flanneld); recreating it with the same subnet and reprogramming every peer', {
          driver,
          error: errorMessage(out.error),
        });
      this.missing = true;
    } else {
      this.log.warn('reconcile pass failed', { driver, incremental, error: errorMessage(out.error), consecutiveFailures: this.consecutiveFailures });
    }
  }

  rebuildDone(): void {
    this.missing = false;
    this.metrics?.inc(METRIC.networkRebuilds, { result: 'ok' });
  }

  /** Recreating the network failed: returns how long to wait before the next try. */
  rebuildFailed(driver: string, err: unknown): number {
    this.consecutiveFailures++;
    this.metrics?.inc(METRIC.networkRebuilds, { result: 'error' });
    const delay = this.retryDelay();
    this.log.warn('recreating the HNS network failed; retrying', { driver, error: errorMessage(err), delayMs: delay });
    return delay;
  }

  /** Capped exponential backoff after the consecutive failures so far. */
  retryDelay(): number {
    return backoffDelay(this.consecutiveFailures - 1, this.backoff.baseMs, this.backoff.capMs);
  }
}

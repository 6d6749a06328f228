// What the reconcile loop keeps of its passes: the ledger of passes and rebuilds (what `flanneld status`,
// /healthz and /metrics say about it: the last pass and its error, consecutive failures, whether what the
// driver writes into (the HNS network) is missing, event-to-dataplane latency, and the log lines of a failed
// pass or rebuild), and the info line that sums up the passes once a minute (each pass's own line is debug:
// a Node event per second would otherwise write a line per second). The items the dataplane refuses are
// ./refusals.ts's. No upstream counterpart: flannel's handlers keep no ledger.
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
  /** The pass found what the driver writes into gone (the driver's `failure` said `gone`). */
  gone?: boolean;
  error?: unknown;
}

/** When a pass started, and since when the change it writes was waiting. */
interface PassStart {
  started: number;
  since: number | undefined;
}

/** How often the passes are summed up at info (when they wrote or failed since the last summary). */
const PASS_SUMMARY_INTERVAL_MS = 60_000;

/** What the passes since the last summary did. */
interface PassSummary {
  since: number;
  passes: number;
  added: number;
  removed: number;
  replaced: number;
  refused: number;
  errors: number;
}

export class PassLedger {
  passes = 0;
  consecutiveFailures = 0;
  /** The last pass found what the driver writes into gone, and it is not rebuilt yet. */
  missing = false;
  lastSuccessAt: number | undefined;
  lastPassAt: number | undefined;
  lastPassOk: boolean | undefined;
  lastError: { at: number; message: string } | undefined;
  /** When the desired set first changed since the last successful pass. */
  private pendingSince: number | undefined;
  private summary: PassSummary;

  constructor(
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly metrics: Metrics | undefined,
    private readonly backoff: { baseMs: number; capMs: number },
    /** What owns the items, singular, as the log lines name it (`peer`, `pod`). */
    private readonly owner: string,
  ) {
    this.summary = this.newSummary();
  }

  private newSummary(): PassSummary {
    return { since: this.clock.now(), passes: 0, added: 0, removed: 0, replaced: 0, refused: 0, errors: 0 };
  }

  /**
   * Add the pass to the summary; once PASS_SUMMARY_INTERVAL_MS has gone by, log it at info when a pass
   * wrote, was refused or failed in that time (a quiet minute of resyncs says nothing) and start the next.
   */
  private summarize(out: PassResult, driver: string): void {
    const s = this.summary;
    s.passes++;
    s.added += out.added;
    s.removed += out.removed;
    s.replaced += out.replaced;
    s.refused += out.refused ?? 0;
    if (!out.ok) s.errors++;
    const now = this.clock.now();
    if (now - s.since < PASS_SUMMARY_INTERVAL_MS) return;
    if (s.added + s.removed + s.replaced + s.refused + s.errors > 0) {
      const { since, ...counts } = s;
      this.log.info('reconcile summary', { driver, periodS: Math.round((now - since) / 1000), ...counts });
    }
    this.summary = this.newSummary();
  }

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

  /** Count the pass's result and log a failure (once per disappearance of what the driver writes into). */
  settled(out: PassResult, driver: string, incremental: boolean): void {
    this.summarize(out, driver);
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
    if (out.gone) {
      if (!this.missing)
        this.log.warn(
          `the HNS network is gone (HNS restarted, or it was deleted outside flanneld); recreating it with the same subnet and writing every ${this.owner}'s items again`,
          {
            driver,
            error: errorMessage(out.error),
          },
        );
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

// The pause before the next list or watch round of the relist loop (./relist.ts), so that an API server
// (or etcd) that keeps ending rounds early is never hammered. Mirrors the backoff manager client-go's
// Reflector runs every ListAndWatch round through (kubernetes/client-go tools/cache/reflector.go:
// `wait.NewExponentialBackoffManager(800*time.Millisecond, 30*time.Second, 2*time.Minute, 2.0, 1.0, clock)`,
// in k8s.io/apimachinery/pkg/util/wait backoff.go: exponentialBackoffManagerImpl and Backoff.Step):
// - the first pause is 800 ms, each next one doubles, and the doubling stops at 30 s;
// - every pause is jittered by up to 100% of itself (Jitter(d, 1.0): a pause in [d, 2d)), so nodes
//   that lost the API server together do not come back together; capped pauses are in [30, 60) s,
//   one round every 30-60 s per node against a sick API server (client-go's comment: "~98% traffic
//   reduction" against its former one round a second);
// - the steps start again from 800 ms only when no pause was asked for 2 minutes (the "healthy
//   period": the manager resets when the last backoff started more than backoffResetDuration ago).
import type { Clock, Random } from './clock.js';

export interface RoundBackoffOptions {
  clock: Clock;
  /** [0,1) source of the jitter. */
  random: Random;
  /** First pause (default 800 ms, client-go's). */
  initialMs?: number;
  /** The un-jittered pause stops doubling here (default 30 s). */
  capMs?: number;
  /** No pause asked for this long resets the steps (default 2 min). */
  resetAfterMs?: number;
}

const ROUND_BACKOFF = { initialMs: 800, capMs: 30_000, resetAfterMs: 120_000, factor: 2, jitter: 1 } as const;

export class RoundBackoff {
  private readonly initialMs: number;
  private readonly capMs: number;
  private readonly resetAfterMs: number;
  /** The un-jittered next pause. */
  private stepMs: number;
  private lastStart = -Infinity;
  /** Pauses since the last reset (from 1 once next() was called). */
  private steps = 0;

  constructor(private readonly o: RoundBackoffOptions) {
    this.initialMs = o.initialMs ?? ROUND_BACKOFF.initialMs;
    this.capMs = o.capMs ?? ROUND_BACKOFF.capMs;
    this.resetAfterMs = o.resetAfterMs ?? ROUND_BACKOFF.resetAfterMs;
    this.stepMs = this.initialMs;
  }

  /** Pauses asked since the steps last started afresh. */
  get attempt(): number {
    return this.steps;
  }

  /** The next pause in ms; a new series when the previous pause was asked more than `resetAfterMs` ago. */
  next(): number {
    const now = this.o.clock.now();
    if (now - this.lastStart > this.resetAfterMs) {
      this.stepMs = this.initialMs;
      this.steps = 0;
    }
    this.lastStart = now;
    this.steps++;
    const d = this.stepMs;
    this.stepMs = Math.min(this.capMs, this.stepMs * ROUND_BACKOFF.factor);
    return Math.round(d * (1 + ROUND_BACKOFF.jitter * this.o.random()));
  }
}

// What keeps this node from serving pods although its network is up, gathered from the agent's parts
// (./part.ts `problems`: the cluster mismatch, the CNI config, ...) and told to the subnet manager (kube:
// the NetworkUnavailable condition, as kubelet's network plugins report it). The loop checks now, every
// interval and whenever a read finds the problems other than the Node was last told (/readyz and /status
// read them at each request), so the scheduler (the condition) and the probe (/readyz) see the same state.
import type { Clock } from '../basics/clock.js';
import { errorMessage } from '../basics/errors.js';
import type { Logger } from '../basics/log.js';
import type { SubnetManager } from '../subnet/lease.js';
import type { AgentPart, PodNetworkProblem } from './part.js';

/** How often the problems are checked again (the kubelet probes /readyz every 10 s in deploy/). */
const READINESS_CHECK_INTERVAL_MS = 10_000;

/** What the Node is told about a set of problems: equal keys, nothing new to tell. */
const problemsKey = (problems: readonly PodNetworkProblem[]): string => problems.map((p) => `${p.check}\n${p.reason}\n${p.detail}`).join('\n');

export interface ReadinessOptions {
  /** The parts whose problems count, in the order the Node is told them (the first is the condition's reason). */
  parts: readonly AgentPart[];
  subnetManager: SubnetManager;
  clock: Clock;
  log: Logger;
  /** How often the problems are checked again; default READINESS_CHECK_INTERVAL_MS. */
  intervalMs?: number;
}

export class PodNetworkReadiness implements AgentPart {
  readonly name = 'readiness';
  /** The problems last told to the subnet manager (the Node condition), by part, and their problemsKey. */
  private told: { key: string; byPart: PodNetworkProblem[][] } | undefined;
  /** A read saw problems the Node was not told; the loop checks again before it sleeps. */
  private rung = false;
  /** Ends the loop's sleep, while it sleeps. */
  private wake: (() => void) | undefined;
  /** Resolved once the loop has checked and told the Node after they were added. */
  private waiters: (() => void)[] = [];

  constructor(private readonly opts: ReadinessOptions) {}

  /**
   * What keeps this node from serving pods, in the parts' order. Read at each call: a read that finds them
   * other than the Node was last told wakes the loop, which tells the Node at once.
   */
  problems(): PodNetworkProblem[] {
    return this.byPart().flat();
  }

  /** problems, one list per part (in the parts' order). */
  byPart(): PodNetworkProblem[][] {
    const byPart = this.read();
    if (problemsKey(byPart.flat()) !== this.told?.key) this.ring();
    return byPart;
  }

  /** Resolves once the loop has checked again and told the Node what it found (or has stopped). */
  checked(): Promise<void> {
    return new Promise((resolve) => {
      this.waiters.push(resolve);
      this.ring();
    });
  }

  /** Check now, every interval and whenever a read saw a change, until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    try {
      while (!signal.aborted) {
        this.rung = false;
        const waiting = this.waiters.splice(0);
        await this.check(signal);
        for (const done of waiting) done();
        if (this.rung) continue;
        // Sleep until the next check, or until a read rings (problems) or the run ends.
        const nap = new AbortController();
        const wake = () => nap.abort();
        this.wake = wake;
        signal.addEventListener('abort', wake, { once: true });
        await this.opts.clock.sleep(this.opts.intervalMs ?? READINESS_CHECK_INTERVAL_MS, nap.signal).catch(() => undefined);
        signal.removeEventListener('abort', wake);
        this.wake = undefined;
      }
    } finally {
      for (const done of this.waiters.splice(0)) done();
    }
  }

  private ring(): void {
    this.rung = true;
    this.wake?.();
  }

  private read(): PodNetworkProblem[][] {
    return this.opts.parts.map((p) => p.problems?.() ?? []);
  }

  /** Check what keeps the node from serving pods; when it changed, have the parts log it and tell the subnet manager. */
  private async check(signal: AbortSignal): Promise<void> {
    const { parts, subnetManager, log } = this.opts;
    let byPart = this.read();
    // A part mends what it can first (the agent's own conflist written again with net-conf's name after the start).
    let mended = false;
    for (const [i, part] of parts.entries()) {
      if (!part.repair || byPart[i].length === 0) continue;
      await part.repair(byPart[i]);
      mended = true;
    }
    if (mended) byPart = this.read();
    const problems = byPart.flat();
    const key = problemsKey(problems);
    const before = this.told;
    if (key === before?.key) return;
    this.told = { key, byPart };
    parts.forEach((p, i) => p.changed?.(byPart[i], before?.byPart[i]));
    const problem = problems[0] && { reason: problems[0].reason, message: `${problems[0].detail}; fix: ${problems[0].fix}` };
    await subnetManager.reportPodNetwork?.(problem, signal).catch((err: unknown) => {
      if (!signal.aborted) log.warn('could not report the readiness check on the node condition', { error: errorMessage(err) });
    });
  }
}

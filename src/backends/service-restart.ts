// --restart-service-on-hns-restart: restart a Windows service (kube-proxy) once after an HNS restart, as AKS's
// task does on the same signal (Azure/AgentBaker#2085), but not while HNS is still putting kube-proxy's load
// balancers back. kube-proxy owns them and the agent never repairs one; what HNS does with them is:
//  * it restores them after it restarts ("the actual HNS LoadBalancer objects were never deleted. After HNS
//    restarted, the LoadBalancers were restored through the HNS backup/restore (rehydration) mechanism",
//    kubernetes#139519), and a kube-proxy that creates them again meanwhile fails with "hcnCreateLoadBalancer
//    failed in Win32: Cannot create a file when that file already exists. (0xb7)" (ibid.; kube-proxy's own
//    fix, PR #139503, stops it treating HNS's outage as their absence): so the restart waits until every load
//    balancer HNS held at the last check before the restart is enumerated again;
//  * when they do not come back, kube-proxy does not make them again by itself ("HNS loadbalancers appear to
//    persist in cache, if removed these are never created throughout the lifecycle of kube-proxy",
//    kubernetes#135802; "If I restart kubeproxy, the load balancer count will come back to normal",
//    kubernetes#110849): so after --restart-service-lb-wait the service is restarted anyway.
// Never in a loop: one restart per wait, and an HNS restart seen while a wait runs joins it (a restarted
// kube-proxy does not restart HNS, so nothing the restart does starts another). The load balancers are read
// only when the flag is set: one HcnEnumerateLoadBalancers per resync period.
import type { Clock } from '../basics/clock.js';
import { pause } from '../basics/clock.js';
import { errorMessage } from '../basics/errors.js';
import type { Logger } from '../basics/log.js';
import type { Host } from '../host/host.js';

export interface ServiceRestartOptions {
  /** The Windows service (--restart-service-on-hns-restart). */
  service: string;
  host: Pick<Host, 'restartService'>;
  /** The IDs of the node's load balancers (HnsClient.listLoadBalancerIds). */
  loadBalancerIds: () => Promise<string[]>;
  clock: Clock;
  log: Logger;
  /** How long to wait for HNS to restore them (--restart-service-lb-wait). */
  waitMs: number;
  /** How often to look while waiting (the resync period). */
  pollMs: number;
}

export class ServiceRestarter {
  /** The load balancers HNS held at the last check (undefined: not read, or the read failed). */
  private known: ReadonlySet<string> | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly opts: ServiceRestartOptions) {}

  /** Before any HNS restart is seen (at start and at each check that saw none): what HNS holds now. */
  async remember(): Promise<void> {
    if (this.running) return; // the wait's own snapshot stands; a partial one would only mislead the next wait
    try {
      this.known = new Set(await this.opts.loadBalancerIds());
    } catch (err) {
      this.known = undefined;
      this.opts.log.debug('reading the load balancers failed; an HNS restart before the next read restarts the service without waiting for them', {
        error: errorMessage(err),
      });
    }
  }

  /** The network is back after an HNS restart: restart the service once, in the background, when the load balancers are. */
  restartAfterHnsRestart(signal: AbortSignal): void {
    const { service, log } = this.opts;
    if (this.running) {
      log.info('HNS restarted again while waiting to restart the service; the restart under way stands for both', { service });
      return;
    }
    const before = this.known;
    this.running = this.waitThenRestart(before, signal).finally(() => {
      this.running = undefined;
    });
  }

  /** Settles when no restart is pending (tests, shutdown). */
  async idle(): Promise<void> {
    await this.running;
  }

  private async waitThenRestart(before: ReadonlySet<string> | undefined, signal: AbortSignal): Promise<void> {
    const { service, log, clock } = this.opts;
    const missing = before === undefined ? undefined : await this.waitForLoadBalancers(before, signal);
    if (signal.aborted) return;
    const wait = {
      service,
      loadBalancers: before?.size,
      ...(before === undefined ? { why: 'the load balancers HNS held before the restart are not known' } : {}),
      ...(missing?.length ? { notRestored: missing.length, waitedMs: this.opts.waitMs } : {}),
    };
    if (missing?.length) log.warn('HNS did not restore every load balancer in time; restarting the service anyway, so kube-proxy makes them again', wait);
    else log.info('restarting service after the HNS restart', wait);
    const startedAt = clock.now();
    try {
      await this.opts.host.restartService!(service, signal);
      log.info('restarted service after the HNS restart', { service, tookMs: clock.now() - startedAt });
    } catch (err) {
      if (signal.aborted) return;
      log.error('restarting service after the HNS restart failed; the next HNS restart tries again', {
        service,
        code: (err as { code?: unknown }).code,
        error: errorMessage(err),
      });
    }
  }

  /** Poll until every ID of `before` is enumerated again, or waitMs passed; returns the ones still missing. */
  private async waitForLoadBalancers(before: ReadonlySet<string>, signal: AbortSignal): Promise<string[]> {
    const { clock, log, service } = this.opts;
    const deadline = clock.now() + this.opts.waitMs;
    let missing = [...before];
    let said = false;
    for (;;) {
      try {
        const now = new Set((await this.opts.loadBalancerIds()).map((id) => id.toUpperCase()));
        missing = [...before].filter((id) => !now.has(id.toUpperCase()));
      } catch (err) {
        log.debug('reading the load balancers failed while waiting for HNS to restore them', { error: errorMessage(err) });
      }
      if (missing.length === 0) return [];
      if (!said) {
        log.info("waiting for HNS to restore kube-proxy's load balancers before restarting the service", {
          service,
          loadBalancers: before.size,
          notRestored: missing.length,
          waitMs: this.opts.waitMs,
        });
        said = true;
      }
      const left = deadline - clock.now();
      if (left <= 0 || !(await pause(clock, Math.min(this.opts.pollMs, left), signal))) return missing;
    }
  }
}

// The one fake reconcile driver of the tests: a dataplane of `key=value` items (a route `subnet=nextHop`,
// a policy `prefix=provider`), keyed by the part before `=`, whose batch writes are atomic as an
// HcnModifyNetwork is (hcsshim hcn/hcnnetwork.go modifyNetwork: one request, one HRESULT), with the
// failures a real one has, each switched on by the test: a refused item sinks its batch, a transient
// failure, a network gone, a read that waits. `log` records every call in order.
import type { ReconcileDriver, WriteFailure } from '../../src/reconcile/writes.js';
import type { Lease } from '../../src/subnet/lease.js';

export class RefusedError extends Error {}
export class GoneError extends Error {}

/** The key of a `key=value` item. */
export const itemKey = (s: string): string => s.split('=')[0];

export class FakeDriver implements ReconcileDriver<string, string> {
  name = 'fake';
  driftKind = 'policy';
  actual: string[] = [];
  log: string[] = [];
  /** A write carrying one of these items fails whole, as a refusal. */
  readonly refused = new Set<string>();
  /** The next N writes fail as a whole (transient), after being logged. */
  failNext = 0;
  /** The next N adds fail as a whole (transient), logged as `add-failed`. */
  failAdds = 0;
  /** The next N reads fail (transient). */
  failReads = 0;
  /** Reads and writes fail: the network is gone. */
  gone = false;
  /** Reads wait for this. */
  gate: Promise<void> | undefined;
  /** An add of an item already there fails (as HNS's HCN_E_POLICY_ALREADY_EXISTS). */
  existingIsError = false;
  /** Full passes that closed what incremental writes kept open. */
  released = 0;
  batch: number | undefined;
  /** Without it, every pass reads (no incremental apply). */
  toActual: ((d: string) => string) | undefined;

  constructor(opts: { incremental?: boolean; batch?: number } = {}) {
    this.toActual = opts.incremental === false ? undefined : (d) => d;
    this.batch = opts.batch;
  }

  actualKey = itemKey;
  desiredKey = itemKey;
  same = (a: string, d: string): boolean => a === d;
  failure = (e: unknown): WriteFailure => (e instanceof RefusedError ? 'refused' : e instanceof GoneError ? 'gone' : 'transient');
  /** A peer's item: its subnet via its public IP. */
  desiredFor = (p: Lease): string[] => [`${p.subnet}=${p.publicIP}`];

  /** The read calls so far. */
  get reads(): number {
    return this.log.filter((l) => l === 'read').length;
  }

  async readActual(): Promise<string[]> {
    this.log.push('read');
    if (this.gate) await this.gate;
    if (this.gone) throw new GoneError('network gone');
    if (this.failReads > 0 && this.failReads--) throw new Error('HNS is down');
    return [...this.actual];
  }

  private check(items: string[]): void {
    if (this.gone) throw new GoneError('network gone');
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('HNS is down');
    }
    if (items.some((i) => this.refused.has(i))) throw new RefusedError('refused');
  }

  async remove(items: string[]): Promise<void> {
    this.log.push(`remove ${items.join(',')}`);
    this.check(items);
    for (const it of items) {
      const i = this.actual.indexOf(it);
      if (i >= 0) this.actual.splice(i, 1); // one copy per item; already gone counts as removed
    }
  }

  async add(items: string[]): Promise<void> {
    if (this.failAdds > 0) {
      this.failAdds--;
      this.log.push(`add-failed ${items.join(',')}`);
      throw new Error('HNS said no');
    }
    this.log.push(`add ${items.join(',')}`);
    this.check(items);
    if (this.existingIsError && items.some((i) => this.actual.includes(i))) throw new Error('HCN_E_POLICY_ALREADY_EXISTS');
    this.actual.push(...items);
  }

  async release(): Promise<void> {
    this.released++;
  }
}

// A RefusalSink (src/reconcile/refusals.ts) kept in a Map: the keys refused now with the last error and try
// the loop reported, and every clearing in order. For tests of the loop itself, which check what the loop
// tells its owner, not what the network's sink (the peers' problems ledger, src/peers/problems.ts) makes of
// it. A refusal is news when the key was not refused or the error says something else, as the ledger rules.
import type { ItemKey } from '../../src/reconcile/plan.js';
import type { Cleared, RefusalSink } from '../../src/reconcile/refusals.js';

export class MapSink<K extends ItemKey = string> implements RefusalSink<K> {
  readonly refusedNow = new Map<K, { error: unknown; attempts: number; retryInMs: number }>();
  readonly clearings: [key: K, how: Cleared][] = [];

  refused(key: K, error: unknown, retry: { attempts: number; retryInMs: number }): boolean {
    const prev = this.refusedNow.get(key);
    this.refusedNow.set(key, { error, ...retry });
    return prev === undefined || String(prev.error) !== String(error);
  }

  cleared(key: K, how: Cleared): void {
    this.refusedNow.delete(key);
    this.clearings.push([key, how]);
  }
}

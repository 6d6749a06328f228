// List + watch of Nodes, projected straight to lease records. Mirrors what flannel
// pkg/subnet/kube/kube.go gets from its client-go node informer (and client-node src/cache.ts does for
// JavaScript): a paged list, then a watch from the list's resourceVersion, resumed after a clean close
// and relisted after 410 Gone or a broken watch. Differences by design:
// - Nodes are read as raw JSON and only the fields flannel needs are kept (projection.ts); an object
//   that cannot be projected is skipped, logged and counted, and the rest of the list still counts.
// - Every list page has a deadline, and a watch that goes silent is abandoned well under a minute:
//   the watch asks for `timeoutSeconds` (the server ends it cleanly) and `allowWatchBookmarks` (the
//   apiserver sends a bookmark about once a minute and before its timeout; kubernetes/kubernetes#90249,
//   https://kubernetes.io/docs/reference/using-api/api-concepts/#watch-bookmarks), so no byte for
//   `watchSilenceMs` means the connection is dead even when TCP does not say so.
// - The first list's pages are emitted as they arrive (`page`, additions only); the complete list ends
//   with a `snapshot` as before, so nothing is removed on a partial view.
import { backoffDelay, pause } from '../../clock.js';
import type { Clock } from '../../clock.js';
import { errorMessage } from '../../errors.js';
import { METRIC } from '../../health/metrics.js';
import type { Metrics } from '../../health/metrics.js';
import type { Logger } from '../../log.js';
import type { Lease, LeaseEvent, LeaseUpdate, LeaseUpdateHandler } from '../lease.js';
import type { AnnotationKeys } from './annotations.js';
import { describe } from './api-error.js';
import type { KubeHttp } from './http.js';
import { leaseRelevantChanged, projectNode, toLease } from './projection.js';
import type { NodeLease } from './projection.js';

export interface NodeWatchOptions {
  http: KubeHttp;
  keys: AnnotationKeys;
  log: Logger;
  metrics: Metrics;
  clock: Clock;
  backoffBaseMs: number;
  backoffCapMs: number;
  /** Deadline of each list page. */
  requestTimeoutMs: number;
  /** Page size of the Node list (bench/kube-api.mjs). */
  listPageSize: number;
  /** Server-side watch timeout; default 30-40 s (jittered). */
  watchTimeoutSeconds?: number;
  /** No byte for this long ends a watch as failed (default: watch timeout + 10 s). */
  watchSilenceMs?: number;
}

type WatchOutcome = 'aborted' | 'closed' | 'gone' | 'error';

interface WatchResult {
  outcome: WatchOutcome;
  rv: string;
  events: number;
  err?: unknown;
}

const SKIP_LOG_INTERVAL_MS = 60_000;

type Obj = Record<string, unknown>;
const asObj = (v: unknown): Obj | undefined => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined);

/** The name of a skipped Node, when it has a string one (for the log line). */
function skipName(obj: unknown): string {
  const name = asObj(asObj(obj)?.metadata)?.name;
  return typeof name === 'string' ? name.slice(0, 64) : '';
}

export class NodeWatch {
  private records = new Map<string, NodeLease>();
  private synced = false;
  /** Skipped objects are logged at most once a minute, with how many were held back. */
  private lastSkipLog = -Infinity;
  private heldSkips = 0;

  constructor(private readonly o: NodeWatchOptions) {}

  get hasSynced(): boolean {
    return this.synced;
  }

  private deliver(onUpdate: LeaseUpdateHandler, update: LeaseUpdate): void {
    try {
      onUpdate(update);
    } catch (err) {
      this.o.log.error('lease update handler failed', { error: errorMessage(err) });
    }
  }

  /** Project one raw Node, or count and log it as skipped. */
  private project(obj: unknown, where: 'list' | 'watch'): NodeLease | undefined {
    const rec = projectNode(obj, this.o.keys);
    if (rec) return rec;
    this.o.metrics.inc(METRIC.nodesSkipped, { where });
    const now = this.o.clock.now();
    if (now - this.lastSkipLog < SKIP_LOG_INTERVAL_MS) {
      this.heldSkips++;
      return undefined;
    }
    this.o.log.warn('skipping a Node object that cannot be read (no valid metadata.name)', {
      where,
      name: skipName(obj),
      ...(this.heldSkips > 0 ? { heldBack: this.heldSkips } : {}),
    });
    this.lastSkipLog = now;
    this.heldSkips = 0;
    return undefined;
  }

  private async listAll(onUpdate: LeaseUpdateHandler, signal: AbortSignal): Promise<{ records: Map<string, NodeLease>; rv: string }> {
    const records = new Map<string, NodeLease>();
    const firstList = !this.synced;
    let cont: string | undefined;
    let rv = '';
    do {
      const page = asObj(
        await this.o.http.json({
          method: 'GET',
          path: '/api/v1/nodes',
          query: { limit: this.o.listPageSize, continue: cont },
          timeoutMs: this.o.requestTimeoutMs,
          signal,
        }),
      );
      const meta = asObj(page?.metadata);
      const items = page?.items;
      if (!page || !Array.isArray(items)) throw new Error('the Node list answer has no items array');
      if (rv === '' && typeof meta?.resourceVersion === 'string') rv = meta.resourceVersion;
      const added: Lease[] = [];
      for (const item of items) {
        const rec = this.project(item, 'list');
        if (!rec) continue;
        records.set(rec.name, rec);
        const lease = firstList ? toLease(rec) : undefined;
        if (lease) added.push(lease);
      }
      cont = typeof meta?.continue === 'string' && meta.continue !== '' ? meta.continue : undefined;
      // Additions from a partial first list; the snapshot after the last page still decides removals.
      if (firstList && cont !== undefined && added.length > 0) this.deliver(onUpdate, { kind: 'page', leases: added });
    } while (cont);
    return { records, rv };
  }

  /** Apply one watch event to the records; returns the lease events it implies. */
  private apply(type: string, obj: unknown): LeaseEvent[] {
    const rec = this.project(obj, 'watch');
    if (!rec) return [];
    const prev = this.records.get(rec.name);
    if (type === 'DELETED') {
      this.records.delete(rec.name);
      const lease = toLease(prev ?? rec);
      return lease ? [{ type: 'removed', lease }] : [];
    }
    this.records.set(rec.name, rec);
    if (prev && !leaseRelevantChanged(prev, rec)) return [];
    const next = toLease(rec);
    if (next) return [{ type: 'added', lease: next }];
    const old = prev && toLease(prev);
    return old ? [{ type: 'removed', lease: old }] : [];
  }

  private async watchOnce(rv: string, onUpdate: LeaseUpdateHandler, signal: AbortSignal): Promise<WatchResult> {
    const timeoutSeconds = this.o.watchTimeoutSeconds ?? 30 + Math.floor(Math.random() * 10);
    const silenceMs = this.o.watchSilenceMs ?? (timeoutSeconds + 10) * 1000;
    let lastRv = rv;
    let events = 0;
    let gone = false;
    const ctrl = new AbortController();
    const stop = () => ctrl.abort();
    signal.addEventListener('abort', stop, { once: true });
    const onEvent = (type: unknown, obj: unknown) => {
      if (ctrl.signal.aborted) return;
      if (type === 'ERROR') {
        const st = asObj(obj);
        if (st?.code === 410) gone = true;
        else this.o.log.warn('node watch error event', { message: typeof st?.message === 'string' ? st.message.slice(0, 200) : 'unknown' });
        ctrl.abort(new Error(`watch error event${typeof st?.message === 'string' ? `: ${st.message.slice(0, 200)}` : ''}`));
        return;
      }
      const meta = asObj(asObj(obj)?.metadata);
      if (typeof meta?.resourceVersion === 'string' && meta.resourceVersion !== '') lastRv = meta.resourceVersion;
      if (type !== 'ADDED' && type !== 'MODIFIED' && type !== 'DELETED') return; // BOOKMARK: rv only
      events++;
      const evs = this.apply(type, obj);
      if (evs.length > 0) this.deliver(onUpdate, { kind: 'events', events: evs });
    };
    try {
      await this.o.http.watch(
        '/api/v1/nodes',
        { resourceVersion: rv, allowWatchBookmarks: true, timeoutSeconds },
        onEvent,
        { silenceMs, signal: ctrl.signal, onBadLine: () => this.o.metrics.inc(METRIC.nodesSkipped, { where: 'watch' }) },
      );
    } catch (err) {
      if (!ctrl.signal.aborted) return { outcome: 'error', rv: lastRv, events, err };
    } finally {
      signal.removeEventListener('abort', stop);
    }
    if (signal.aborted) return { outcome: 'aborted', rv: lastRv, events };
    if (gone) return { outcome: 'gone', rv: lastRv, events };
    if (ctrl.signal.aborted) return { outcome: 'error', rv: lastRv, events, err: ctrl.signal.reason };
    return { outcome: 'closed', rv: lastRv, events };
  }

  /** List + watch until `signal` aborts; see SubnetManager.watchLeases. */
  async run(onUpdate: LeaseUpdateHandler, signal: AbortSignal): Promise<void> {
    const { clock, backoffBaseMs: base, backoffCapMs: cap, metrics, log } = this.o;
    let failures = 0;
    let lists = 0;
    while (!signal.aborted) {
      let rv: string;
      try {
        const listed = await this.listAll(onUpdate, signal);
        rv = listed.rv;
        this.records = listed.records;
      } catch (err) {
        if (signal.aborted) break;
        const delayMs = backoffDelay(failures++, base, cap);
        log.warn('listing nodes failed, retrying', { attempt: failures, delayMs, error: describe(err) });
        if (!(await pause(clock, delayMs, signal))) break;
        continue;
      }
      if (lists++ > 0) metrics.inc(METRIC.apiReconnects);
      failures = 0; // the API answered: a watch that breaks next starts its backoff afresh
      this.synced = true;
      const leases: Lease[] = [];
      for (const rec of this.records.values()) {
        const l = toLease(rec);
        if (l) leases.push(l);
      }
      log.info('node list synced', { nodes: this.records.size, leases: leases.length, resourceVersion: rv });
      this.deliver(onUpdate, { kind: 'snapshot', leases });

      // Watch from the list's resourceVersion until the watch breaks; then relist.
      for (;;) {
        const started = clock.now();
        const r = await this.watchOnce(rv, onUpdate, signal);
        rv = r.rv;
        if (r.outcome === 'aborted' || signal.aborted) return;
        if (r.outcome === 'closed') {
          // Normal end (the server's timeoutSeconds): resume from the last resourceVersion, no relist.
          if (r.events > 0 || clock.now() - started >= 1000) {
            failures = 0;
          } else {
            metrics.inc(METRIC.apiReconnects);
            if (!(await pause(clock, backoffDelay(failures++, base, cap), signal))) return;
          }
          continue;
        }
        if (r.outcome === 'gone') {
          log.info('watch resourceVersion expired (410 Gone), relisting nodes', { resourceVersion: rv });
          failures = 0;
          break;
        }
        const delayMs = backoffDelay(failures++, base, cap);
        log.warn('node watch failed, relisting', { attempt: failures, delayMs, error: describe(r.err) });
        if (!(await pause(clock, delayMs, signal))) return;
        break;
      }
    }
  }
}

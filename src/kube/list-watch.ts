// A list + watch of one Kubernetes resource, each object projected as it arrives: the generic half of an
// informer, for any resource (Nodes today; NetworkPolicies, Pods and Namespaces next). Modelled on
// client-node's ListWatch<T> (client-node src/cache.ts: `new ListWatch(path, watch, listFn)`; a second resource is a
// second instance) and client-go's Reflector (tools/cache/reflector.go ListAndWatch), whose loop it runs
// through ../basics/relist.ts: a paged list, then a watch from the list's resourceVersion, resumed after a
// clean close and relisted after 410 Gone or a broken watch, every round but a healthy watch's resumption
// after client-go's backoff pause (../basics/round-backoff.ts).
// It keeps no object: what the projection returns goes to the handler `run` is given, page by page and
// event by event, and the handler keeps what it needs (client-node's ListWatch keeps every object; the
// kube subnet manager keeps none, src/subnet/kube/node-list-watch.ts). The list and the watch are
// functions (./http.ts kubeListFn, kubeWatchFn: raw JSON requests with deadlines); tests inject others.
// Differences from client-go and client-node, by design:
// - Only what the projection reads is kept; an object it cannot read is skipped, logged (at most once a
//   minute) and counted (flannel_kube_objects_skipped_total{resource,where}), and the rest of the list
//   still counts.
// - Every list page has a deadline, and a watch that goes silent is abandoned well under a minute: the
//   watch asks for `timeoutSeconds` (the server ends it cleanly) and `allowWatchBookmarks` (the apiserver
//   sends a bookmark about once a minute and before its timeout; kubernetes/kubernetes#90249,
//   https://kubernetes.io/docs/reference/using-api/api-concepts/#watch-bookmarks), so no byte for
//   `watchSilenceMs` means the connection is dead even when TCP does not say so.
// - List pages go to the handler as they arrive; `listEnded` follows the last page, so an owner that
//   removes what a list no longer holds never does so on a partial view.
// - A paged list cannot loop: client-go's pager (tools/pager/pager.go) follows `continue` for as long as
//   the server sends one, so a server that repeats a token is paged forever. Here a token seen before in
//   the same list, or a page that does not advance (no items, or its last object's key not past the
//   previous page's: the API server pages in etcd key order, k8s.io/apiserver pkg/storage/etcd3/store.go
//   GetList, which is name order for a cluster-scoped resource and namespace/name order for a namespaced
//   one listed across namespaces), fails the list with FLANNEL_ERR_KUBE_LIST, logged and retried after
//   the backoff pause like any failed list. A list is also bounded in what it keeps (`maxObjects` keys)
//   and in time (`listDeadlineMs`), never by a page count: 50,000 Nodes list in 200 pages.
// - A watch the server closes cleanly is resumed at once only after a healthy run: at least half the
//   timeout it asked for. client-go reopens every watch that lasted a second or brought an event; a server
//   that closes each watch after one event then gets a watch per event (measured against the fake API
//   server: 10,000-25,000 in 15 s).
import { createHash } from 'node:crypto';
import type { Clock, Random } from '../basics/clock.js';
import { FlannelError, KubeAnswerError, KubeError, KubeWatchError } from '../basics/errors.js';
import type { Logger } from '../basics/log.js';
import { METRIC } from '../basics/metrics.js';
import type { Metrics } from '../basics/metrics.js';
import { runRelistLoop } from '../basics/relist.js';
import type { ListWatchSource, RelistOptions, RetryNote, WatchEnd } from '../basics/relist.js';
import { asObj } from '../basics/json-object.js';
import { describe, rbacRefusal, retryAfterMs, type RbacFeature } from './api-error.js';

/** One page of a list (`GET <path>?limit=&continue=`), as raw JSON. */
export type ListPageFn = (page: { limit: number; continue?: string }, signal: AbortSignal) => Promise<unknown>;

export interface WatchQuery {
  resourceVersion: string;
  allowWatchBookmarks: boolean;
  timeoutSeconds: number;
}

/**
 * A watch: `onEvent(type, object)` per event until the server ends the stream (resolves), or an error,
 * `silenceMs` without a byte or the signal (rejects). A 410 Gone arrives as an ERROR event.
 */
export type WatchFn = (
  query: WatchQuery,
  onEvent: (type: unknown, object: unknown) => void,
  opts: { silenceMs: number; signal: AbortSignal; onBadLine?: (line: string) => void },
) => Promise<void>;

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** What the list-watch tells its owner, in order: a list (started, its pages, ended), then watch events. */
export interface ListWatchHandler<T> {
  /** A complete list begins (the first, or a relist after 410 Gone or a failure). */
  listStarted(): void;
  /** One page of the list: its readable objects, projected, in the API server's order. */
  listPage(items: readonly T[]): void;
  /** The complete list ended: every object it held was in a page. */
  listEnded(): void;
  /** Fields for the `<kind> list synced` log line, asked just before it (after the last page). */
  listSummary?(): Record<string, unknown>;
  /** A watch event, its object projected (DELETED: as it was last). */
  watched(type: WatchEventType, item: T): void;
}

export interface KubeListWatchOptions<T> {
  /** The resource's name in its path (`nodes`, `pods`, `namespaces`, `networkpolicies`): the log lines and the metrics' `resource` label. */
  resource: string;
  /** Its kind (`Node`, `Pod`, ...), for messages. */
  kind: string;
  list: ListPageFn;
  watch: WatchFn;
  /** What is kept of a raw object (pure and total: hostile input never throws); undefined: it cannot be read, and is skipped. */
  project(object: unknown): T | undefined;
  /** Why `project` refused an object, for the skip's log line (asked only then). */
  skipReason?(object: unknown): string;
  /** The object's key in the order the API server pages: `name`, or `namespace/name` for a namespaced resource listed across namespaces. */
  keyOf(item: T): string;
  /** The most objects one list may hold (their keys are kept until it ends). */
  maxObjects: number;
  log: Logger;
  metrics: Metrics;
  clock: Clock;
  /** Jitter of the default watch timeout and of the relist loop's pauses. */
  random: Random;
  /** The relist loop's pause schedule (default client-go's: 800 ms doubling to 30 s, jittered). */
  backoff?: RelistOptions['backoff'];
  /** Objects per list page (`limit`). */
  listPageSize: number;
  /** Server-side watch timeout; default 30-40 s (jittered). */
  watchTimeoutSeconds?: number;
  /** No byte for this long ends a watch as failed (default: watch timeout + 10 s). */
  watchSilenceMs?: number;
  /** How long one paged list may take, all its pages (default LIST_DEADLINE_MS). */
  listDeadlineMs?: number;
  /** The features whose RBAC a 403's fix names besides the agent's own (../kube/api-error.ts rbacFix). */
  rbacFeatures?: readonly RbacFeature[];
}

const SKIP_LOG_INTERVAL_MS = 60_000;

/** How long one paged list may take, all pages together (default of `listDeadlineMs`). */
export const LIST_DEADLINE_MS = 10 * 60_000;

export class KubeListWatch<T> {
  /** Skipped objects are logged at most once a minute, with how many were held back. */
  private lastSkipLog = -Infinity;
  private heldSkips = 0;
  /** `node`, `pod`, ...: the log lines' subject. */
  private readonly noun: string;

  constructor(private readonly o: KubeListWatchOptions<T>) {
    this.noun = o.kind.toLowerCase();
    // Every series at zero from the start (a rate() or an alert on them works before the first skip or reconnect).
    o.metrics.declare(METRIC.kubeObjectsSkipped, 'where', ['list', 'watch'], { resource: o.resource });
    o.metrics.declare(METRIC.apiReconnects, 'resource', [o.resource]);
  }

  /** List + watch until `signal` aborts, telling `handler` what they see. */
  run(handler: ListWatchHandler<T>, signal: AbortSignal): Promise<void> {
    const source: ListWatchSource<string> = {
      list: (s) => this.relist(handler, s),
      watch: (rv, s) => this.watchOnce(rv, handler, s),
      // A 429 or 5xx with Retry-After: the server's wait, when longer than the backoff (./api-error.ts).
      minDelayMs: retryAfterMs,
      onRetry: (note) => {
        const [message, fields] = this.retryLine(note);
        if (note.reason === 'stale') this.o.log.info(message, fields);
        else this.o.log.warn(message, fields);
      },
    };
    const { clock, metrics, random, backoff, resource } = this.o;
    // A watch that ran half the timeout it asked for (15 s of the default 30-40 s) was healthy.
    const healthyWatchMs = ((this.o.watchTimeoutSeconds ?? 30) * 1000) / 2;
    return runRelistLoop(source, { clock, metrics, random, backoff, healthyWatchMs, resource }, signal);
  }

  /** The log line before the loop's pause: what ended the round, and how long the pause is. */
  private retryLine(n: RetryNote): [message: string, fields: Record<string, unknown>] {
    const fields: Record<string, unknown> = { attempt: n.attempt, delayMs: n.delayMs };
    if (n.err !== undefined) fields.error = describe(n.err);
    if (n.err instanceof FlannelError) fields.code = n.err.code;
    Object.assign(fields, rbacRefusal(n.err, this.o.rbacFeatures)); // a 403: the permission RBAC lacks and the fix
    switch (n.reason) {
      case 'list-failed':
        return [`listing ${this.o.resource} failed, backing off`, fields];
      case 'watch-failed':
        return [`${this.noun} watch failed, backing off`, fields];
      case 'stale':
        return [`${this.noun} watch resourceVersion expired (410 Gone), backing off before relisting`, fields];
      case 'closed-early':
        return [`${this.noun} watch closed early by the server, backing off`, fields];
    }
  }

  /** Project one raw object, or count and log it as skipped. */
  private project(obj: unknown, where: 'list' | 'watch'): T | undefined {
    const item = this.o.project(obj);
    if (item !== undefined) return item;
    this.o.metrics.inc(METRIC.kubeObjectsSkipped, { resource: this.o.resource, where });
    const now = this.o.clock.now();
    if (now - this.lastSkipLog < SKIP_LOG_INTERVAL_MS) {
      this.heldSkips++;
      return undefined;
    }
    const name = asObj(asObj(obj)?.metadata)?.name;
    this.o.log.warn(`skipping a ${this.o.kind} object that cannot be read`, {
      where,
      name: typeof name === 'string' ? name.slice(0, 64) : '',
      ...(this.o.skipReason ? { reason: this.o.skipReason(obj) } : {}),
      ...(this.heldSkips > 0 ? { heldBack: this.heldSkips } : {}),
    });
    this.lastSkipLog = now;
    this.heldSkips = 0;
    return undefined;
  }

  /** The complete list, page by page, then `listEnded`; returns its resourceVersion, where the watch starts. */
  private async relist(handler: ListWatchHandler<T>, signal: AbortSignal): Promise<string> {
    const { kind, resource, maxObjects } = this.o;
    let count = 0;
    /** Digests of the continue tokens of this list (a token's size is the server's to choose). */
    const seen = new Set<string>();
    const started = this.o.clock.now();
    const deadlineMs = this.o.listDeadlineMs ?? LIST_DEADLINE_MS;
    let cont: string | undefined;
    let rv = '';
    let pages = 0;
    /** The key of the last object of the previous page (pages are in key order). */
    let lastKey: string | undefined;
    const fail = (why: string, context: Record<string, unknown>) =>
      new KubeError('FLANNEL_ERR_KUBE_LIST', `${why}; the list would never end — check the API server or a proxy in front of it`, { page: pages, ...context });
    handler.listStarted();
    // Each page is asked for as soon as the one before it has come, before that one is projected and handed
    // on: the API server makes and sends the next page while the owner takes this one (client-go's pager
    // waits; a 50,000-Node list is 334 pages: docs/performance.md, 50,000 Nodes). A page asked for by a list
    // that then fails is abandoned.
    const ctrl = new AbortController();
    const stop = () => ctrl.abort(signal.reason);
    signal.addEventListener('abort', stop, { once: true });
    if (signal.aborted) stop();
    const ask = (c: string | undefined): Promise<unknown> => {
      const p = this.o.list({ limit: this.o.listPageSize, continue: c }, ctrl.signal);
      p.catch(() => undefined); // awaited below, unless the list fails first
      return p;
    };
    let next = ask(undefined);
    try {
      do {
        pages++;
        if (this.o.clock.now() - started > deadlineMs) {
          throw fail(`the ${kind} list did not end within ${Math.round(deadlineMs / 1000)} s (${count} ${resource} in ${pages - 1} pages)`, { objects: count, deadlineMs });
        }
        const page = asObj(await next);
        const meta = asObj(page?.metadata);
        const raw = page?.items;
        if (!page || !Array.isArray(raw))
          throw new KubeAnswerError('FLANNEL_ERR_KUBE_ANSWER', `the ${kind} list answer has no items array; check the API server or a proxy in front of it`, { page: pages });
        if (rv === '' && typeof meta?.resourceVersion === 'string') rv = meta.resourceVersion;
        if (count + raw.length > maxObjects) {
          throw fail(`the ${kind} list holds more than ${maxObjects} ${resource}`, { objects: count + raw.length });
        }
        cont = typeof meta?.continue === 'string' && meta.continue !== '' ? meta.continue : undefined;
        const digest = cont === undefined ? undefined : createHash('sha256').update(cont).digest('base64');
        if (cont !== undefined && seen.has(digest!)) throw fail(`the API server sent the same ${kind} list continue token twice (page ${pages})`, { continue: cont.slice(0, 64) });
        if (cont !== undefined && raw.length > 0) next = ask(cont); // an empty page does not advance (below): nothing after it
        const items: T[] = [];
        for (const obj of raw) {
          const item = this.project(obj, 'list');
          if (item !== undefined) items.push(item);
        }
        count += items.length;
        const pageLast = items.length > 0 ? this.o.keyOf(items[items.length - 1]) : undefined;
        if (cont !== undefined) {
          // A page that does not advance past the previous one (with more to come): a loop with fresh tokens.
          if (pageLast === undefined || (lastKey !== undefined && pageLast <= lastKey)) {
            throw fail(`page ${pages} of the ${kind} list does not advance (${raw.length} ${resource}, the last ${JSON.stringify((pageLast ?? '').slice(0, 64))})`, {
              continue: cont.slice(0, 64),
            });
          }
          seen.add(digest!);
        }
        if (pageLast !== undefined) lastKey = pageLast;
        if (items.length > 0) handler.listPage(items);
      } while (cont);
    } finally {
      if (cont !== undefined) ctrl.abort(); // the list failed: the page asked for ahead goes
      signal.removeEventListener('abort', stop);
    }
    this.o.log.info(`${this.noun} list synced`, { [resource]: count, ...handler.listSummary?.(), pages, resourceVersion: rv });
    handler.listEnded();
    return rv;
  }

  /** One watch from `rv` until the server closes it, it breaks or goes silent, or 410 Gone. */
  private async watchOnce(rv: string, handler: ListWatchHandler<T>, signal: AbortSignal): Promise<WatchEnd<string>> {
    const { log, metrics, kind, resource } = this.o;
    const timeoutSeconds = this.o.watchTimeoutSeconds ?? 30 + Math.floor(this.o.random() * 10);
    const silenceMs = this.o.watchSilenceMs ?? (timeoutSeconds + 10) * 1000;
    let lastRv = rv;
    let gone = false;
    const ctrl = new AbortController();
    const stop = () => ctrl.abort();
    signal.addEventListener('abort', stop, { once: true });
    const onEvent = (type: unknown, obj: unknown) => {
      if (ctrl.signal.aborted) return;
      if (type === 'ERROR') {
        const st = asObj(obj);
        if (st?.code === 410) gone = true;
        else log.warn(`${this.noun} watch error event`, { message: typeof st?.message === 'string' ? st.message.slice(0, 200) : 'unknown' });
        ctrl.abort(
          new KubeWatchError(
            'FLANNEL_ERR_KUBE_WATCH_BROKEN',
            `the API server ended the ${kind} watch with an error event${typeof st?.message === 'string' ? `: ${st.message.slice(0, 200)}` : ''}`,
            {
              status: typeof st?.code === 'number' ? st.code : undefined,
            },
          ),
        );
        return;
      }
      const meta = asObj(asObj(obj)?.metadata);
      if (typeof meta?.resourceVersion === 'string' && meta.resourceVersion !== '') lastRv = meta.resourceVersion;
      if (type !== 'ADDED' && type !== 'MODIFIED' && type !== 'DELETED') return; // BOOKMARK: rv only
      const item = this.project(obj, 'watch');
      if (item !== undefined) handler.watched(type, item);
    };
    try {
      await this.o.watch({ resourceVersion: rv, allowWatchBookmarks: true, timeoutSeconds }, onEvent, {
        silenceMs,
        signal: ctrl.signal,
        onBadLine: () => metrics.inc(METRIC.kubeObjectsSkipped, { resource, where: 'watch' }),
      });
    } catch (err) {
      if (!ctrl.signal.aborted) return { kind: 'broken', err };
    } finally {
      signal.removeEventListener('abort', stop);
    }
    if (signal.aborted) return { kind: 'aborted' };
    if (gone) return { kind: 'stale' };
    if (ctrl.signal.aborted) return { kind: 'broken', err: ctrl.signal.reason };
    // A clean end (the server's timeoutSeconds): resume from the last resourceVersion, no relist; the
    // loop pauses first when it came early.
    return { kind: 'closed', cursor: lastRv };
  }
}

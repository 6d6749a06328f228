// Kubernetes Events on the own Node, with client-go's rules (k8s.io/client-go tools/record/events_cache.go
// and event.go), so a peer that keeps failing is one Event whose count grows, never an event storm:
// - aggregation (EventAggregatorByReasonFunc): events that differ only in their message are grouped by
//   the aggregation key (source, object, type, reason); after 10 distinct messages within 10 minutes
//   they become one "(combined from similar events): <latest message>" event;
// - deduplication (eventLogger.eventObserve): an event seen before (same key, message included) is not
//   created again: the existing one is PATCHed with its count + 1, lastTimestamp and message;
// - spam filter (EventSourceObjectSpamFilter): a token bucket per source+object, burst 25, refilled one
//   token per 5 minutes; an event without a token is dropped (its count still grows in the cache, as
//   client-go's does, so the next patch carries it);
// - recordToSink: create (POST) or patch (PATCH, strategic merge); a patch answered 404 (the event
//   expired, default TTL one hour) creates it anew. Writes are best effort: one try each, in order,
//   from a queue of at most 1000 (client-go's maxQueuedEvents; more are dropped), failures logged at debug,
//   except the first refusal (403: a ClusterRole without events, as upstream's kube-flannel.yml), one WARN
//   naming the rule, since every Event after it is lost too.
// What it writes, drops (by reason), queues and keeps in its caches is in /metrics (flannel_node_event*,
// docs/metrics.md), so the bounds above can be watched on a running agent.
// Names and references as kubelet's for its Node (pkg/kubelet: involvedObject kind Node, uid = the node
// name, namespace "" so the Event lives in `default`), which is what `kubectl describe node` searches for.
// An event about a namespaced object (a NetworkPolicy the agent refuses: NodeEvent.regarding) names it as
// involvedObject (kind, apiVersion, namespace, name, uid) and lives in its namespace, as the kube-apiserver
// requires of a core/v1 Event (pkg/apis/core/validation/events.go: involvedObject.namespace must equal the
// Event's namespace; empty only for a cluster-scoped object, whose Event lives in `default`); `kubectl
// describe networkpolicy` finds it there. Its name is the object's name and a time in hex (client-go
// tools/record/event.go makeEvent: "%v.%x"), and it has its own spam bucket and aggregation records (the
// keys above include the object: events_cache.go getSpamKey, getEventKey), so one policy's events never
// starve the Node's or another policy's.
import type { Clock } from '../basics/clock.js';
import { errorMessage } from '../basics/errors.js';
import type { Logger } from '../basics/log.js';
import { METRIC, type Metrics } from '../basics/metrics.js';
import type { EventObject, NodeEvent, NodeEvents } from '../node-events.js';
import type { KubeHttp } from './http.js';
import { describe, httpStatus } from './api-error.js';

export const EVENT_COMPONENT = 'flanneld';
const AGGREGATE_MAX_EVENTS = 10;
const AGGREGATE_INTERVAL_MS = 600_000;
const SPAM_BURST = 25;
const SPAM_REFILL_MS = 300_000;
const CACHE_ENTRIES = 4096;
const MAX_QUEUED = 1000;
const REQUEST_TIMEOUT_MS = 10_000;
const COMBINED = '(combined from similar events): ';
/** Longest Event message sent and kept (events.k8s.io's note limit, NoteLengthLimit = 1 kB); longer ones are cut. */
export const MAX_EVENT_MESSAGE = 1024;

/** The core/v1 Event fields this recorder writes. */
export interface KubeEvent {
  apiVersion: 'v1';
  kind: 'Event';
  metadata: { name: string; namespace: string; resourceVersion?: string };
  involvedObject: { kind: string; name: string; uid: string; apiVersion: string; namespace?: string };
  reason: string;
  message: string;
  type: string;
  source: { component: string; host: string };
  firstTimestamp: string;
  lastTimestamp: string;
  count: number;
  reportingComponent: string;
  reportingInstance: string;
}

/** What to send: a new Event, or a patch of an existing one. */
export type EventWrite = { kind: 'create'; event: KubeEvent } | { kind: 'patch'; event: KubeEvent; patch: { count: number; lastTimestamp: string; message: string } };

/** metav1.Time: RFC 3339, whole seconds. */
const rfc3339 = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** The caches of EventCorrelator, as flannel_node_event_cache_entries{cache} names them. */
export type EventCache = 'aggregate-messages' | 'dedup' | 'names';
const EVENT_CACHES: readonly EventCache[] = ['aggregate-messages', 'dedup', 'names'];
/** Why an Event was not written (flannel_node_events_dropped_total{reason}). */
export type EventDropReason = 'rate-limit' | 'queue-full' | 'write-failed';
const EVENT_DROP_REASONS: readonly EventDropReason[] = ['rate-limit', 'queue-full', 'write-failed'];

/** The recorder's labelled series at zero (idempotent): the kube subnet manager declares them at its start. */
export function declareEventMetrics(metrics: Metrics): void {
  metrics.declare(METRIC.nodeEventsDropped, 'reason', EVENT_DROP_REASONS);
  metrics.declare(METRIC.nodeEventCacheEntries, 'cache', EVENT_CACHES);
}

/** A Map bounded like client-go's LRU caches (the least recently set entry goes first). */
class Lru<V> {
  private readonly m = new Map<string, V>();
  get(k: string): V | undefined {
    return this.m.get(k);
  }
  get size(): number {
    return this.m.size;
  }
  values(): IterableIterator<V> {
    return this.m.values();
  }
  set(k: string, v: V): void {
    this.m.delete(k);
    this.m.set(k, v);
    if (this.m.size > CACHE_ENTRIES) this.m.delete(this.m.keys().next().value!);
  }
}

/** A token bucket of the spam filter (one per object). */
interface Bucket {
  tokens: number;
  refilledAt: number;
}

const objectKey = (o: EventObject | undefined): string => (o === undefined ? '' : `${o.kind}\0${o.namespace}\0${o.name}\0${o.uid}`);

/**
 * The pure part: decides for each event whether it is dropped, created or patched. One per node (the
 * source is fixed, so the keys below leave it out; the object is the own Node unless the event says).
 */
export class EventCorrelator {
  private readonly aggregate = new Lru<{ messages: Set<string>; last: number }>();
  private readonly seen = new Lru<{ count: number; first: string; name: string; resourceVersion?: string }>();
  /** Event name -> its dedup key (bounded like the caches). */
  private readonly keys = new Lru<string>();
  private readonly buckets = new Lru<Bucket>();
  private seq = 0;

  constructor(
    private readonly node: string,
    private readonly now: () => number,
  ) {}

  /** What the caches hold (the recorder's flannel_node_event_cache_entries): messages of the aggregation records, entries of the dedup and name caches. */
  cacheEntries(): Record<EventCache, number> {
    let aggregateMessages = 0;
    for (const v of this.aggregate.values()) aggregateMessages += v.messages.size;
    return { 'aggregate-messages': aggregateMessages, dedup: this.seen.size, names: this.keys.size };
  }

  /** undefined = dropped by the spam filter. */
  correlate(e: NodeEvent): EventWrite | undefined {
    const t = this.now();
    // 1. Aggregate by reason (events_cache.go EventAggregate).
    const object = e.regarding;
    const aggKey = `${objectKey(object)}\0${e.type}\0${e.reason}`;
    const text = e.message.length > MAX_EVENT_MESSAGE - COMBINED.length ? `${e.message.slice(0, MAX_EVENT_MESSAGE - COMBINED.length - 1)}…` : e.message;
    let agg = this.aggregate.get(aggKey);
    if (!agg || t - agg.last > AGGREGATE_INTERVAL_MS) agg = { messages: new Set(), last: t };
    agg.messages.add(text);
    agg.last = t;
    this.aggregate.set(aggKey, agg);
    const combined = agg.messages.size >= AGGREGATE_MAX_EVENTS;
    // "do not grow our local key set any larger than max" (EventAggregate: localKeys.PopAny()).
    if (combined) agg.messages.delete(agg.messages.values().next().value!);
    const message = combined ? COMBINED + text : text;
    const key = combined ? aggKey : `${aggKey}\0${text}`;
    // 2. Observe: a known key becomes a patch of the existing event (eventLogger.eventObserve).
    const prev = this.seen.get(key);
    const stamp = rfc3339(t);
    const entry = prev
      ? { ...prev, count: prev.count + 1 }
      : { count: 1, first: stamp, name: `${object?.name ?? this.node}.${(BigInt(t) * 1_000_000n + BigInt(this.seq++ % 1_000_000)).toString(16)}` };
    this.seen.set(key, entry);
    // 3. Spam filter on source+object (EventSourceObjectSpamFilter.Filter).
    if (!this.takeToken(objectKey(object), t)) return undefined;
    const event: KubeEvent = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: entry.name, namespace: object?.namespace ?? 'default', ...(entry.resourceVersion ? { resourceVersion: entry.resourceVersion } : {}) },
      involvedObject: object ?? { kind: 'Node', name: this.node, uid: this.node, apiVersion: 'v1' },
      reason: e.reason,
      message,
      type: e.type,
      source: { component: EVENT_COMPONENT, host: this.node },
      firstTimestamp: entry.first,
      lastTimestamp: stamp,
      count: entry.count,
      reportingComponent: EVENT_COMPONENT,
      reportingInstance: this.node,
    };
    this.keys.set(entry.name, key);
    return prev ? { kind: 'patch', event, patch: { count: entry.count, lastTimestamp: stamp, message } } : { kind: 'create', event };
  }

  /** The API server's answer to a write (events_cache.go UpdateState): keep its name and count. */
  written(answer: { metadata?: { name?: string; resourceVersion?: string }; count?: number }, sent: KubeEvent): void {
    const key = this.keys.get(sent.metadata.name);
    const cur = key === undefined ? undefined : this.seen.get(key);
    if (key === undefined || !cur) return;
    this.seen.set(key, { ...cur, name: answer.metadata?.name ?? cur.name, resourceVersion: answer.metadata?.resourceVersion, count: Math.max(cur.count, answer.count ?? 0) });
  }

  private takeToken(object: string, t: number): boolean {
    const b = this.buckets.get(object) ?? { tokens: SPAM_BURST, refilledAt: t };
    const refill = Math.floor((t - b.refilledAt) / SPAM_REFILL_MS);
    if (refill > 0) {
      b.tokens = Math.min(SPAM_BURST, b.tokens + refill);
      b.refilledAt += refill * SPAM_REFILL_MS;
    }
    this.buckets.set(object, b);
    if (b.tokens === 0) return false;
    b.tokens--;
    return true;
  }
}

export interface EventRecorderOptions {
  http: KubeHttp;
  nodeName: string;
  clock: Clock;
  log: Logger;
  metrics: Metrics;
}

/** The own Node's recorder: correlates synchronously, writes in order in the background. */
export class KubeEventRecorder implements NodeEvents {
  private readonly correlator: EventCorrelator;
  private readonly queue: EventWrite[] = [];
  private draining: Promise<void> | undefined;
  /** Whether the refusal of Events (403) was logged at WARN already: once, then debug. */
  private refusalWarned = false;

  constructor(private readonly o: EventRecorderOptions) {
    this.correlator = new EventCorrelator(o.nodeName, () => o.clock.now());
    declareEventMetrics(o.metrics);
  }

  record(e: NodeEvent): void {
    const w = this.correlator.correlate(e);
    for (const [cache, n] of Object.entries(this.correlator.cacheEntries())) this.o.metrics.set(METRIC.nodeEventCacheEntries, n, { cache });
    if (!w || this.queue.length >= MAX_QUEUED) {
      const why: EventDropReason = w ? 'queue-full' : 'rate-limit';
      this.o.metrics.inc(METRIC.nodeEventsDropped, { reason: why });
      this.o.log.debug('event not sent (rate limit or full queue)', { reason: e.reason, why });
      return;
    }
    this.queue.push(w);
    this.o.metrics.set(METRIC.nodeEventsQueued, this.queue.length);
    this.draining ??= this.startDrain();
  }

  /** Resolves once every Event recorded so far was written or dropped (each write has its deadline). */
  async flushed(): Promise<void> {
    while (this.draining) await this.draining;
  }

  /**
   * drain() returns once it finds the queue empty, but `draining` is cleared a microtask later: a write
   * queued in between found `draining` still set and started nothing, so drain again when one is waiting.
   */
  private startDrain(): Promise<void> {
    return this.drain().finally(() => {
      this.draining = this.queue.length > 0 ? this.startDrain() : undefined;
    });
  }

  private async drain(): Promise<void> {
    for (let w = this.queue.shift(); w; w = this.queue.shift()) {
      this.o.metrics.set(METRIC.nodeEventsQueued, this.queue.length);
      try {
        this.correlator.written(await this.send(w), w.event);
        this.o.metrics.inc(METRIC.nodeEventsWritten);
      } catch (err) {
        this.o.metrics.inc(METRIC.nodeEventsDropped, { reason: 'write-failed' });
        if (httpStatus(err) === 403 && !this.refusalWarned) {
          this.refusalWarned = true;
          this.o.log.warn("the API server refuses Events: flannel's ClusterRole lacks events: create, patch; Events are not recorded until it grants them", {
            rule: 'events: create, patch',
            namespace: w.event.metadata.namespace,
            verb: w.kind,
            reason: w.event.reason,
            error: describe(err),
          });
        } else {
          this.o.log.debug('recording an event failed', { reason: w.event.reason, about: w.event.involvedObject.kind, error: errorMessage(err) });
        }
      }
    }
  }

  private async send(w: EventWrite): Promise<{ metadata?: { name?: string; resourceVersion?: string }; count?: number }> {
    const base = `/api/v1/namespaces/${w.event.metadata.namespace}/events`;
    const signal = new AbortController().signal;
    const create = (event: KubeEvent) => {
      const { resourceVersion: _rv, ...metadata } = event.metadata;
      return this.o.http.json({ method: 'POST', path: base, body: { ...event, metadata }, timeoutMs: REQUEST_TIMEOUT_MS, signal });
    };
    if (w.kind === 'create') return (await create(w.event)) as object;
    try {
      const path = `${base}/${encodeURIComponent(w.event.metadata.name)}`;
      return (await this.o.http.json({
        method: 'PATCH',
        path,
        body: w.patch,
        contentType: 'application/strategic-merge-patch+json',
        timeoutMs: REQUEST_TIMEOUT_MS,
        signal,
      })) as object;
    } catch (err) {
      if (httpStatus(err) !== 404) throw err;
      return (await create(w.event)) as object;
    }
  }
}

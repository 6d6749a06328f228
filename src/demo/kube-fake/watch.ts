// The watch streams of one resource in one fake API server process, as kube-apiserver serves `?watch=true`
// (Kubernetes API concepts, "Efficient detection of changes" and "Watch bookmarks"): a chunked stream of
// JSON lines `{"type","object"}`; without a resourceVersion (or "0") it starts with an ADDED event per
// object; from a resourceVersion it replays the events after it, or sends one ERROR event with a 410
// `Expired` Status when that resourceVersion is out of reach; at `timeoutSeconds` the stream ends cleanly.
//
// With the watch cache on (the default, --watch-cache) watches are served by the cacher
// (k8s.io/apiserver pkg/storage/cacher, one cacher per resource): watch_cache.go keeps a bounded window of
// the resource's events in memory, filled from the revision the process listed at when it started, so a
// new process reaches back to its start only; getAllEventsSinceLocked answers a resourceVersion below the window's oldest - 1 with
// `too old resource version: <rv> (<oldest - 1>)`, and the newest resourceVersion always works. etcd
// compaction does not touch the window. Bookmarks are the cacher's (cacher.go dispatchEvents and
// cache_watcher.go nextBookmarkTime): a watcher with allowWatchBookmarks is due one a minute after it
// starts and then every minute, or 2 s before its deadline when that comes first; when it is due, the
// bookmark carries the last resourceVersion the cacher processed, and is sent only when that is newer
// than the watcher's own (cache_watcher.go process: only events newer than the watcher's resourceVersion);
// a cacher that processed nothing since it started drops the due watchers from its bookmark timers.
// With the cache off the etcd watcher (storage/etcd3/watcher.go) serves from etcd's history: too old is
// below the compaction (`The resourceVersion for the provided watch is too old.`) and there are no
// bookmarks.
import type { ServerResponse } from 'node:http';
import { pause, type Clock } from '../../basics/clock.js';
import type { Collection, Etcd, StoredEvent } from './collection.js';
import { kubeStatus, sendStatus, startStream } from './responses.js';

interface OpenWatch {
  res: ServerResponse;
  /** Aborted when the watch ends: cancels its timers. */
  ended: AbortController;
  /** The resourceVersion the watch started from (for a start "from now", the cache's). */
  rv: number;
  /** Clock time the watch ends at (undefined: no timeoutSeconds). */
  deadline?: number;
}

const line = (type: string, object: unknown): string => JSON.stringify({ type, object }) + '\n';

/** cacher.go defaultBookmarkFrequency. */
export const BOOKMARK_FREQUENCY_MS = 60_000;
/** cache_watcher.go nextBookmarkTime: "right before the watcher timeout - for now we simply set it 2s before the deadline". */
export const BOOKMARK_BEFORE_DEADLINE_MS = 2_000;

// storage/etcd3/watcher.go, interpretWatchError for ErrCompacted.
export const WATCH_EXPIRED_ETCD = 'The resourceVersion for the provided watch is too old.';

export interface WatchCacheOptions {
  /** The resource watched. */
  collection: Collection;
  /** Its etcd: the newest revision. */
  etcd: Etcd;
  clock: Clock;
  /** Serve from the cacher's window (true) or from etcd (false). */
  watchCache: boolean;
  /** The cacher's window, in events of the resource. */
  cacheCapacity: number;
}

/** The watches of one resource in one server process and, with the cache on, its watch cache. */
export class WatchCache {
  private readonly open = new Set<OpenWatch>();
  /** Watches answered with 410 Gone. */
  expired = 0;
  /** The window: the newest events of the resource this process saw, oldest first. */
  private window: StoredEvent[] = [];
  /** The revision the cacher listed at when the process started. */
  private readonly listRv: number;
  /** Whether an event fell out of the window (then its oldest is the first event in it). */
  private dropped = false;
  /** cacher.go lastProcessedResourceVersion: 0 until the cacher processed an event. */
  private lastProcessed = 0;

  constructor(private readonly o: WatchCacheOptions) {
    this.listRv = o.etcd.revision;
  }

  get active(): number {
    return this.open.size;
  }

  /** The cache's resourceVersion (what a watch "from now" starts at). */
  private get cacheRv(): number {
    return Math.max(this.listRv, this.lastProcessed);
  }

  /** An event of the resource reached this process (from etcd): into the window and to every open watch. */
  observe(ev: StoredEvent): void {
    this.window.push(ev);
    while (this.window.length > this.o.cacheCapacity) {
      this.window.shift();
      this.dropped = true;
    }
    this.lastProcessed = ev.rv;
    const text = line(ev.type, ev.object);
    for (const w of this.open) if (ev.rv > w.rv) w.res.write(text);
  }

  /**
   * etcd's progress notification reached the cacher (etcd --experimental-watch-progress-notify-interval,
   * 10 minutes by default): the cacher's resourceVersion moves to the newest revision without an event.
   */
  progressNotify(): void {
    this.lastProcessed = this.o.etcd.revision;
  }

  /** Serve `GET <the resource's path>?watch=true&...`. */
  serve(res: ServerResponse, query: Record<string, string>): void {
    const rvParam = query.resourceVersion;
    let events: StoredEvent[];
    let rv: number;
    if (rvParam === undefined || rvParam === '' || rvParam === '0') {
      // Start "from now" with synthetic ADDED events for the current state, as the apiserver does.
      events = this.o.collection.currentAsAdded();
      rv = this.o.watchCache ? this.cacheRv : this.o.etcd.revision;
    } else {
      rv = Number(rvParam);
      if (!Number.isInteger(rv) || rv < 0) return sendStatus(res, 400, `invalid resource version: ${rvParam}`);
      const replay = this.o.watchCache ? this.cachedSince(rv) : (this.o.collection.eventsSince(rv) ?? WATCH_EXPIRED_ETCD);
      if (typeof replay === 'string') {
        this.expired++;
        startStream(res);
        res.end(line('ERROR', kubeStatus(410, 'Expired', replay)));
        return;
      }
      events = replay;
    }
    startStream(res);
    res.flushHeaders();
    for (const e of events) res.write(line(e.type, e.object));
    const w: OpenWatch = { res, ended: new AbortController(), rv };
    const timeout = Number(query.timeoutSeconds);
    if (Number.isFinite(timeout) && timeout > 0) {
      w.deadline = this.o.clock.now() + timeout * 1000;
      void this.endAt(w, timeout * 1000);
    }
    if (this.o.watchCache && query.allowWatchBookmarks === 'true') void this.bookmarks(w);
    this.open.add(w);
    res.on('close', () => {
      w.ended.abort();
      this.open.delete(w);
    });
  }

  /** End every open watch cleanly (as an apiserver does at its watch timeout). */
  closeAll(): void {
    for (const w of [...this.open]) this.end(w);
  }

  /** Forget every watch without answering (the server is going away and cuts the connections). */
  dropAll(): void {
    for (const w of this.open) w.ended.abort();
    this.open.clear();
  }

  /** Resolves when no watch with a timeout is open any more (the others would never end by themselves). */
  async drained(): Promise<void> {
    for (;;) {
      const w = [...this.open].find((x) => x.deadline !== undefined);
      if (!w) return;
      await new Promise<void>((resolve) => (w.ended.signal.aborted ? resolve() : w.ended.signal.addEventListener('abort', () => resolve(), { once: true })));
    }
  }

  /** watch_cache.go getAllEventsSinceLocked: the window's events after `since`, or the 410 message. */
  private cachedSince(since: number): StoredEvent[] | string {
    const oldest = this.dropped && this.window.length > 0 ? this.window[0].rv : this.listRv + 1;
    if (since < oldest - 1) return `too old resource version: ${since} (${oldest - 1})`;
    return this.window.filter((e) => e.rv > since);
  }

  /** cache_watcher.go nextBookmarkTime: a minute from now, or 2 s before the deadline if sooner; none once that is past. */
  private nextBookmark(w: OpenWatch): number | undefined {
    const now = this.o.clock.now();
    let at = now + BOOKMARK_FREQUENCY_MS;
    if (w.deadline !== undefined) at = Math.min(at, w.deadline - BOOKMARK_BEFORE_DEADLINE_MS);
    return at <= now ? undefined : at;
  }

  private async bookmarks(w: OpenWatch): Promise<void> {
    for (let at = this.nextBookmark(w); at !== undefined; at = this.nextBookmark(w)) {
      if (!(await pause(this.o.clock, at - this.o.clock.now(), w.ended.signal))) return;
      // dispatchEvents: "Never send a bookmark event if we did not see an event here"; the due watchers
      // are popped and not put back.
      if (this.lastProcessed === 0) return;
      if (this.lastProcessed > w.rv) {
        const { kind, apiVersion } = this.o.collection.info;
        w.res.write(line('BOOKMARK', { kind, apiVersion, metadata: { resourceVersion: String(this.lastProcessed), creationTimestamp: null } }));
      }
    }
  }

  private async endAt(w: OpenWatch, ms: number): Promise<void> {
    if (!(await pause(this.o.clock, ms, w.ended.signal))) return;
    this.end(w);
  }

  private end(w: OpenWatch): void {
    w.ended.abort();
    this.open.delete(w);
    w.res.end();
  }
}

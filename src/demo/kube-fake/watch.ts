// Node watch streams of the fake API server, as the apiserver serves `?watch=true` (Kubernetes API
// concepts, "Efficient detection of changes" and "Watch bookmarks"): a chunked stream of JSON lines
// `{"type","object"}`; without a resourceVersion (or "0") it starts with an ADDED event per Node; from a
// resourceVersion it replays the history after it, or sends one ERROR event with a 410 `Expired` Status
// ("too old resource version") when the history no longer reaches back that far; at `timeoutSeconds`
// the stream ends, after a BOOKMARK carrying the current resourceVersion when `allowWatchBookmarks=true`.
import type { ServerResponse } from 'node:http';
import { pause, type Clock } from '../../clock.js';
import type { NodeEvent, NodeStore } from './node-store.js';
import { kubeStatus, sendStatus, startStream } from './responses.js';

interface OpenWatch {
  res: ServerResponse;
  /** Aborted when the watch ends: cancels its timeout. */
  ended: AbortController;
}

const line = (type: string, object: unknown): string => JSON.stringify({ type, object }) + '\n';

export class NodeWatches {
  private readonly open = new Set<OpenWatch>();
  /** Watches answered with 410 Gone. */
  expired = 0;

  constructor(
    private readonly store: NodeStore,
    private readonly clock: Clock,
  ) {}

  get active(): number {
    return this.open.size;
  }

  /** Send a recorded event to every open watch. */
  broadcast(ev: NodeEvent): void {
    const text = line(ev.type, ev.object);
    for (const w of this.open) w.res.write(text);
  }

  /** Serve `GET /api/v1/nodes?watch=true&...`. */
  serve(res: ServerResponse, query: Record<string, string>): void {
    const rvParam = query.resourceVersion;
    let events: NodeEvent[];
    if (rvParam === undefined || rvParam === '' || rvParam === '0') {
      // Start "from now" with synthetic ADDED events for the current state, as the apiserver does.
      events = this.store.currentAsAdded();
    } else {
      const since = Number(rvParam);
      if (!Number.isFinite(since) || since < 0) return sendStatus(res, 400, `invalid resource version: ${rvParam}`);
      const replay = this.store.eventsSince(since);
      if (replay === undefined) {
        this.expired++;
        startStream(res);
        res.end(line('ERROR', kubeStatus(410, 'Expired', `too old resource version: ${since} (${this.store.oldestResumable})`)));
        return;
      }
      events = replay;
    }
    startStream(res);
    res.flushHeaders();
    for (const e of events) res.write(line(e.type, e.object));
    const w: OpenWatch = { res, ended: new AbortController() };
    const timeout = Number(query.timeoutSeconds);
    if (Number.isFinite(timeout) && timeout > 0) void this.endAt(w, timeout * 1000, query.allowWatchBookmarks === 'true');
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

  private async endAt(w: OpenWatch, ms: number, bookmark: boolean): Promise<void> {
    if (!(await pause(this.clock, ms, w.ended.signal))) return;
    if (bookmark) w.res.write(line('BOOKMARK', { kind: 'Node', apiVersion: 'v1', metadata: { resourceVersion: String(this.store.resourceVersion) } }));
    this.end(w);
  }

  private end(w: OpenWatch): void {
    w.ended.abort();
    this.open.delete(w);
    w.res.end();
  }
}

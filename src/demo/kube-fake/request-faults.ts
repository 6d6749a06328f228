// Faults the fake API server injects into requests, for the failures a real control plane shows: a
// request answered with an error Status (or its connection cut), and a request that hangs (never
// answered, or answered with headers and then silence, as a list or watch behind a dead load balancer).
// A rule matches a method and a path pattern, tried on the path and on `path?query`. And a Node list
// and watch that misbehave for as long as they are told to, as the hostile API servers the
// agent's list and watch bounds are built against (docs/architecture.md) do.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { kubeStatus, sendJson, sendStatus, startStream } from './responses.js';
import type { JsonObject } from './responses.js';

/**
 * How the Node list and watch misbehave until cleared: `watch-gone` answers every watch with one
 * `410 Gone` ERROR event; `watch-one-event` sends every watch one MODIFIED event (a current Node) and
 * closes it; `list-repeat-continue` gives every list page the same `continue` token, so a client that
 * follows tokens pages forever. None is what a healthy kube-apiserver does (that is store.ts, collection.ts and
 * watch.ts); each is what a server in a crash loop (a new watch cache every few seconds), a proxy or load
 * balancer that cuts streams, or a broken aggregation layer or proxy rewriting pages can send.
 */
export type NodeMisbehaviour = 'watch-gone' | 'watch-one-event' | 'list-repeat-continue';

const REPEATED_CONTINUE = Buffer.from('repeated').toString('base64url');
const watchLine = (type: string, object: unknown): string => JSON.stringify({ type, object }) + '\n';

/**
 * What a failed request is answered with, beyond its status: the Status message a real server sends
 * (a 403 before the apiserver's RBAC caches synced, a NodeRestriction refusal) and headers (the
 * `Retry-After` of a 429 under API Priority and Fairness, k8s.io/apiserver pkg/server/filters).
 */
export interface FailAnswer {
  message?: string;
  headers?: Record<string, string>;
}

/** `no-answer`: the request is read and never answered; `headers-only`: 200 and headers, then nothing. */
export type HangMode = 'no-answer' | 'headers-only';

interface Rule {
  method: string;
  path: RegExp;
  remaining: number;
}

export class RequestFaults {
  private failRules: (Rule & { status: number; answer?: FailAnswer })[] = [];
  private hangRules: (Rule & { mode: HangMode })[] = [];
  /** Requests held open by a hang rule (answered never; closed by the server's stop() or unhang()). */
  private readonly hung = new Set<ServerResponse>();
  /** The Node list and watch misbehave this way until set to undefined. */
  nodes: NodeMisbehaviour | undefined;

  /**
   * Answer a Node list (`page`: the page the store would send) or watch (`current`: a Node for the one
   * event, if any) the misbehaving way; false when this request is served normally.
   */
  misbehaveOnNodes(res: ServerResponse, watch: boolean, page: () => JsonObject, current: () => unknown): boolean {
    if (this.nodes === 'list-repeat-continue' && !watch) {
      const p = page();
      sendJson(res, 200, { ...p, metadata: { ...(p.metadata as JsonObject), continue: REPEATED_CONTINUE } });
      return true;
    }
    if (this.nodes === 'watch-gone' && watch) {
      startStream(res);
      res.end(watchLine('ERROR', kubeStatus(410, 'Expired', 'too old resource version (misbehaving server)')));
      return true;
    }
    if (this.nodes === 'watch-one-event' && watch) {
      const node = current();
      startStream(res);
      res.end(node === undefined ? '' : watchLine('MODIFIED', node));
      return true;
    }
    return false;
  }

  /** The next `count` matching requests fail with `status` (a Status body); status 0 destroys the connection. */
  failNext(method: string, path: RegExp, status: number, count: number, answer?: FailAnswer): void {
    this.failRules.push({ method: method.toUpperCase(), path, status, remaining: count, answer });
  }

  /** The next `count` matching requests (Infinity = until unhang()) hang in `mode`. */
  hang(method: string, path: RegExp, mode: HangMode, count: number): void {
    this.hangRules.push({ method: method.toUpperCase(), path, mode, remaining: count });
  }

  /** Drop every hang rule and cut the connections held open so far. */
  unhang(): void {
    this.hangRules = [];
    for (const res of this.hung) res.destroy();
    this.hung.clear();
  }

  /** Requests currently held open by a hang rule. */
  get hanging(): number {
    return this.hung.size;
  }

  /** Forget the held requests (the server is stopping and destroys their sockets). */
  forgetHung(): void {
    this.hung.clear();
  }

  /** Apply the first matching rule (hangs before failures); true when the request was taken by one. */
  intercept(req: IncomingMessage, res: ServerResponse, method: string, path: string, full: string): boolean {
    const matches = (r: Rule) => r.remaining > 0 && r.method === method && (r.path.test(path) || r.path.test(full));
    const hang = this.hangRules.find(matches);
    if (hang) {
      hang.remaining--;
      this.hangRules = this.hangRules.filter((r) => r.remaining > 0);
      this.hung.add(res);
      res.on('close', () => this.hung.delete(res));
      if (hang.mode === 'headers-only') {
        startStream(res);
        res.flushHeaders();
      }
      return true;
    }
    const rule = this.failRules.find(matches);
    if (!rule) return false;
    rule.remaining--;
    this.failRules = this.failRules.filter((r) => r.remaining > 0);
    if (rule.status === 0) req.socket.destroy();
    else {
      for (const [k, v] of Object.entries(rule.answer?.headers ?? {})) res.setHeader(k, v);
      sendStatus(res, rule.status, rule.answer?.message ?? `injected failure ${rule.status} for ${method} ${path}`);
    }
    return true;
  }
}

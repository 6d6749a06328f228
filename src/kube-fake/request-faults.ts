// Faults the fake API server injects into requests, for the failures a real control plane shows: a
// request answered with an error Status (or its connection cut), and a request that hangs (never
// answered, or answered with headers and then silence, as a list or watch behind a dead load balancer).
// A rule matches a method and a path pattern, tried on the path and on `path?query`.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendStatus, startStream } from './responses.js';

/** `no-answer`: the request is read and never answered; `headers-only`: 200 and headers, then nothing. */
export type HangMode = 'no-answer' | 'headers-only';

interface Rule {
  method: string;
  path: RegExp;
  remaining: number;
}

export class RequestFaults {
  private failRules: (Rule & { status: number })[] = [];
  private hangRules: (Rule & { mode: HangMode })[] = [];
  /** Requests held open by a hang rule (answered never; closed by the server's stop() or unhang()). */
  private readonly hung = new Set<ServerResponse>();

  /** The next `count` matching requests fail with `status` (a Status body); status 0 destroys the connection. */
  failNext(method: string, path: RegExp, status: number, count: number): void {
    this.failRules.push({ method: method.toUpperCase(), path, status, remaining: count });
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
    else sendStatus(res, rule.status, `injected failure ${rule.status} for ${method} ${path}`);
    return true;
  }
}

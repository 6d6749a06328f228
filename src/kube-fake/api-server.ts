// An in-process fake of the Kubernetes API server, just big enough for flannel's kube subnet manager:
// Nodes (list, watch with a bounded event history and 410 Gone, get, patch incl. /status) and Pods (get).
// It mirrors the behaviour of k8s.io/apiserver (watch cache, status subresource strategy, Status errors)
// that flannel pkg/subnet/kube/kube.go relies on through client-go. Used by the integration tests and the
// `npm start` demo; real HTTP on 127.0.0.1 so the real @kubernetes/client-node talks to it.
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { annotationKeys, DEFAULT_ANNOTATION_PREFIX, encodeBackendData, normalizeAnnotationPrefix } from '../subnet/kube/annotations.js';

export type JsonObject = Record<string, unknown>;

export interface FakeObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  creationTimestamp?: string;
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
  [k: string]: unknown;
}

export interface FakeNode {
  apiVersion?: string;
  kind?: string;
  metadata: FakeObjectMeta;
  spec?: { podCIDR?: string; podCIDRs?: string[]; [k: string]: unknown };
  status?: { conditions?: JsonObject[]; addresses?: JsonObject[]; [k: string]: unknown };
  [k: string]: unknown;
}

export interface FakePod {
  apiVersion?: string;
  kind?: string;
  metadata: FakeObjectMeta & { namespace: string };
  spec?: { nodeName?: string; [k: string]: unknown };
  status?: JsonObject;
  [k: string]: unknown;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType: string | undefined;
  /** Parsed JSON when the body is JSON, the raw text otherwise, undefined when empty. */
  body: unknown;
  authorization?: string;
}

export interface FakeKubeApiServerOptions {
  /** 0 (default) = pick a free port; restart() reuses the port actually bound. */
  port?: number;
  /** When set, every request must carry `Authorization: Bearer <token>` (else 401). */
  bearerToken?: string;
  /** Watch events kept for resuming watches (default 1000); older resourceVersions get 410 Gone. */
  historyLimit?: number;
  /** Serve https with this certificate and key (PEM); plain http otherwise. */
  tls?: { cert: string | Buffer; key: string | Buffer };
}

type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

interface HistoryEvent {
  rv: number;
  type: WatchEventType;
  object: FakeNode;
}

interface ActiveWatch {
  res: http.ServerResponse;
  timer: NodeJS.Timeout | undefined;
}

interface FailRule {
  method: string;
  path: RegExp;
  status: number;
  remaining: number;
}

/** `no-answer`: the request is read and never answered; `headers-only`: 200 and headers, then nothing. */
export type HangMode = 'no-answer' | 'headers-only';

interface HangRule {
  method: string;
  path: RegExp;
  mode: HangMode;
  remaining: number;
}

const clone = <T>(v: T): T => structuredClone(v);

/** A Kubernetes `Status` failure object. */
export function kubeStatus(code: number, reason: string, message: string, details?: JsonObject): JsonObject {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, ...(details ? { details } : {}), code };
}

const REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  409: 'Conflict',
  410: 'Expired',
  415: 'UnsupportedMediaType',
  422: 'Invalid',
  429: 'TooManyRequests',
  500: 'InternalError',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

export class FakeKubeApiServer {
  /** Every request, in arrival order (tests assert on these). */
  readonly requests: RecordedRequest[] = [];
  readonly bearerToken: string | undefined;

  private server: http.Server | undefined;
  private port: number;
  private readonly historyLimit: number;
  private readonly tls: FakeKubeApiServerOptions['tls'];
  private readonly nodes = new Map<string, FakeNode>();
  private readonly pods = new Map<string, FakePod>();
  private rv = 1;
  /** Events with rv > compactedRv are in `history`; a watch from an older rv gets 410. */
  private compactedRv = 1;
  private history: HistoryEvent[] = [];
  private readonly watches = new Set<ActiveWatch>();
  private readonly sockets = new Set<Socket>();
  private failRules: FailRule[] = [];
  private hangRules: HangRule[] = [];
  /** Requests held open by a hang rule (answered never; closed by stop() or unhang()). */
  private readonly hung = new Set<http.ServerResponse>();
  private uidSeq = 0;
  /** Watches answered with 410 Gone (`too old resource version`). */
  expiredWatches = 0;

  constructor(opts: FakeKubeApiServerOptions = {}) {
    this.port = opts.port ?? 0;
    this.bearerToken = opts.bearerToken;
    this.historyLimit = Math.max(1, opts.historyLimit ?? 1000);
    this.tls = opts.tls;
  }

  /** `http://127.0.0.1:<port>` (`https://` with `tls`; valid after start()). */
  get url(): string {
    return `${this.tls ? 'https' : 'http'}://127.0.0.1:${this.port}`;
  }

  get resourceVersion(): string {
    return String(this.rv);
  }

  get running(): boolean {
    return this.server !== undefined;
  }

  async start(): Promise<void> {
    if (this.server) return;
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => this.handle(req, res);
    const server: http.Server = this.tls ? https.createServer({ cert: this.tls.cert, key: this.tls.key }, handler) : http.createServer(handler);
    server.on('connection', (s: Socket) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  /** Stop listening and destroy every open connection (watches included). State is kept. */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    this.hung.clear();
    for (const w of this.watches) if (w.timer) clearTimeout(w.timer);
    this.watches.clear();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    server.closeAllConnections();
    await closed;
  }

  /** Stop and start again on the same port (state and history kept, like an apiserver on etcd). */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  // ---- control API -------------------------------------------------------------------------------

  addNode(node: FakeNode): FakeNode {
    const n = clone(node);
    const name = n.metadata?.name;
    if (!name) throw new Error('addNode: metadata.name required');
    if (this.nodes.has(name)) throw new Error(`addNode: node ${name} exists`);
    n.apiVersion = 'v1';
    n.kind = 'Node';
    n.metadata.uid ??= `00000000-0000-4000-8000-${String(++this.uidSeq).padStart(12, '0')}`;
    n.metadata.creationTimestamp ??= new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    this.store(n, 'ADDED');
    return clone(n);
  }

  /** Apply `mutator` to a copy of the node (mutate in place or return a replacement); emits MODIFIED. */
  updateNode(name: string, mutator: (node: FakeNode) => FakeNode | void): FakeNode {
    const cur = this.nodes.get(name);
    if (!cur) throw new Error(`updateNode: node ${name} not found`);
    const copy = clone(cur);
    const next = mutator(copy) ?? copy;
    next.metadata.name = name;
    this.store(next, 'MODIFIED');
    return clone(next);
  }

  deleteNode(name: string): boolean {
    const cur = this.nodes.get(name);
    if (!cur) return false;
    this.nodes.delete(name);
    const rv = ++this.rv;
    const obj = clone(cur);
    obj.metadata.resourceVersion = String(rv);
    this.record({ rv, type: 'DELETED', object: obj });
    return true;
  }

  getNode(name: string): FakeNode | undefined {
    const n = this.nodes.get(name);
    return n ? clone(n) : undefined;
  }

  listNodes(): FakeNode[] {
    return [...this.nodes.values()].map(clone);
  }

  addPod(pod: FakePod): FakePod {
    const p = clone(pod);
    p.apiVersion = 'v1';
    p.kind = 'Pod';
    p.metadata.resourceVersion = String(++this.rv);
    this.pods.set(`${p.metadata.namespace}/${p.metadata.name}`, p);
    return clone(p);
  }

  /**
   * Drop the whole event history: any watch resumed from a resourceVersion older than now gets
   * `410 Gone` (`too old resource version`). With `closeWatches` the open watches are ended too.
   */
  compact(opts: { closeWatches?: boolean } = {}): void {
    this.history = [];
    // Bump past every resourceVersion handed out so far, so even an up-to-date watch gets 410.
    this.compactedRv = ++this.rv;
    if (opts.closeWatches ?? true) this.closeWatches();
  }

  /** End every open watch cleanly (as an apiserver does at its watch timeout). */
  closeWatches(): void {
    for (const w of [...this.watches]) this.endWatch(w);
  }

  /** Number of open watch connections. */
  get activeWatches(): number {
    return this.watches.size;
  }

  /**
   * The next `count` requests whose method matches and whose path (or `path?query`) matches `path`
   * fail with `status` (a k8s Status body); status 0 destroys the connection instead.
   */
  failNext(method: string, path: RegExp, status: number, count = 1): void {
    this.failRules.push({ method: method.toUpperCase(), path, status, remaining: count });
  }

  /**
   * The next `count` matching requests (Infinity = until unhang()) hang: `no-answer` never answers,
   * `headers-only` sends 200 and its headers and then nothing (a watch or list gone silent).
   */
  hang(method: string, path: RegExp, mode: HangMode = 'no-answer', count = Infinity): void {
    this.hangRules.push({ method: method.toUpperCase(), path, mode, remaining: count });
  }

  /** Drop every hang rule and cut the connections held open so far. */
  unhang(): void {
    this.hangRules = [];
    for (const res of this.hung) res.destroy();
    this.hung.clear();
  }

  /** Requests currently held open by a hang rule. */
  get hangingRequests(): number {
    return this.hung.size;
  }

  clearRequests(): void {
    this.requests.length = 0;
  }

  // ---- internals ---------------------------------------------------------------------------------

  private store(n: FakeNode, type: WatchEventType): void {
    const rv = ++this.rv;
    n.metadata.resourceVersion = String(rv);
    this.nodes.set(n.metadata.name, n);
    this.record({ rv, type, object: clone(n) });
  }

  private record(ev: HistoryEvent): void {
    this.history.push(ev);
    while (this.history.length > this.historyLimit) {
      const dropped = this.history.shift()!;
      this.compactedRv = dropped.rv;
    }
    const line = JSON.stringify({ type: ev.type, object: ev.object }) + '\n';
    for (const w of this.watches) w.res.write(line);
  }

  private endWatch(w: ActiveWatch): void {
    if (w.timer) clearTimeout(w.timer);
    this.watches.delete(w);
    w.res.end();
  }

  private send(res: http.ServerResponse, code: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  }

  private fail(res: http.ServerResponse, code: number, message: string, details?: JsonObject): void {
    this.send(res, code, kubeStatus(code, REASONS[code] ?? 'Unknown', message, details));
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= 8 * 1024 * 1024) chunks.push(c);
    });
    req.on('end', () => {
      try {
        this.route(req, res, Buffer.concat(chunks).toString('utf8'));
      } catch (err) {
        if (!res.headersSent) this.fail(res, 500, `fake apiserver: ${err instanceof Error ? err.message : String(err)}`);
        else res.destroy();
      }
    });
  }

  private route(req: http.IncomingMessage, res: http.ServerResponse, raw: string): void {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const method = (req.method ?? 'GET').toUpperCase();
    const path = url.pathname;
    const query = Object.fromEntries(url.searchParams.entries());
    const contentType = req.headers['content-type']?.split(';')[0]?.trim();
    let body: unknown;
    if (raw !== '') {
      try {
        body = JSON.parse(raw) as unknown;
      } catch {
        body = raw;
      }
    }
    const rec: RecordedRequest = { method, path, query, contentType, body };
    if (req.headers.authorization !== undefined) rec.authorization = req.headers.authorization;
    this.requests.push(rec);

    const full = url.search ? `${path}${url.search}` : path;
    const hang = this.hangRules.find((r) => r.remaining > 0 && r.method === method && (r.path.test(path) || r.path.test(full)));
    if (hang) {
      hang.remaining--;
      this.hangRules = this.hangRules.filter((r) => r.remaining > 0);
      this.hung.add(res);
      res.on('close', () => this.hung.delete(res));
      if (hang.mode === 'headers-only') {
        res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
        res.flushHeaders();
      }
      return;
    }
    const rule = this.failRules.find((r) => r.remaining > 0 && r.method === method && (r.path.test(path) || r.path.test(full)));
    if (rule) {
      rule.remaining--;
      this.failRules = this.failRules.filter((r) => r.remaining > 0);
      if (rule.status === 0) {
        req.socket.destroy();
        return;
      }
      return this.fail(res, rule.status, `injected failure ${rule.status} for ${method} ${path}`);
    }

    if (this.bearerToken !== undefined && req.headers.authorization !== `Bearer ${this.bearerToken}`) {
      return this.fail(res, 401, 'Unauthorized');
    }

    let m: RegExpMatchArray | null;
    if (path === '/api/v1/nodes') {
      if (method !== 'GET') return this.fail(res, 405, `method ${method} not allowed on ${path}`);
      if (query.watch === 'true' || query.watch === '1') return this.watchNodes(res, query);
      return this.listNodesResponse(res, query);
    }
    if ((m = path.match(/^\/api\/v1\/nodes\/([^/]+)(\/status)?$/))) {
      const name = decodeURIComponent(m[1]!);
      const sub = m[2] !== undefined;
      if (method === 'GET') {
        const n = this.nodes.get(name);
        if (!n) return this.fail(res, 404, `nodes "${name}" not found`, { name, kind: 'nodes' });
        return this.send(res, 200, n);
      }
      if (method === 'PATCH') return this.patchNode(res, name, sub, contentType, body);
      return this.fail(res, 405, `method ${method} not allowed on ${path}`);
    }
    if ((m = path.match(/^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)$/))) {
      if (method !== 'GET') return this.fail(res, 405, `method ${method} not allowed on ${path}`);
      const ns = decodeURIComponent(m[1]!);
      const name = decodeURIComponent(m[2]!);
      const p = this.pods.get(`${ns}/${name}`);
      if (!p) return this.fail(res, 404, `pods "${name}" not found`, { name, kind: 'pods' });
      return this.send(res, 200, p);
    }
    return this.fail(res, 404, 'the server could not find the requested resource');
  }

  private listNodesResponse(res: http.ServerResponse, query: Record<string, string>): void {
    const all = [...this.nodes.values()].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
    let start = 0;
    if (query.continue) {
      const after = Buffer.from(query.continue, 'base64url').toString('utf8');
      start = all.findIndex((n) => n.metadata.name > after);
      if (start < 0) start = all.length;
    }
    const limit = Number(query.limit);
    const end = Number.isInteger(limit) && limit > 0 ? Math.min(all.length, start + limit) : all.length;
    const items = all.slice(start, end);
    const metadata: JsonObject = { resourceVersion: String(this.rv) };
    if (end < all.length) metadata.continue = Buffer.from(items[items.length - 1]!.metadata.name).toString('base64url');
    this.send(res, 200, { kind: 'NodeList', apiVersion: 'v1', metadata, items });
  }

  private watchNodes(res: http.ServerResponse, query: Record<string, string>): void {
    const rvParam = query.resourceVersion;
    let events: HistoryEvent[];
    if (rvParam === undefined || rvParam === '' || rvParam === '0') {
      // Start "from now" with synthetic ADDED events for the current state, as the apiserver does.
      events = [...this.nodes.values()].map((n) => ({ rv: Number(n.metadata.resourceVersion), type: 'ADDED', object: n }));
    } else {
      const since = Number(rvParam);
      if (!Number.isFinite(since) || since < 0) return this.fail(res, 400, `invalid resource version: ${rvParam}`);
      if (since < this.compactedRv) {
        this.expiredWatches++;
        res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
        res.end(
          JSON.stringify({
            type: 'ERROR',
            object: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: `too old resource version: ${since} (${this.compactedRv})`, reason: 'Expired', code: 410 },
          }) + '\n',
        );
        return;
      }
      events = this.history.filter((e) => e.rv > since);
    }
    res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    for (const e of events) res.write(JSON.stringify({ type: e.type, object: e.object }) + '\n');
    const w: ActiveWatch = { res, timer: undefined };
    const timeout = Number(query.timeoutSeconds);
    if (Number.isFinite(timeout) && timeout > 0) {
      w.timer = setTimeout(() => {
        if (query.allowWatchBookmarks === 'true') {
          res.write(JSON.stringify({ type: 'BOOKMARK', object: { kind: 'Node', apiVersion: 'v1', metadata: { resourceVersion: String(this.rv) } } }) + '\n');
        }
        this.endWatch(w);
      }, timeout * 1000);
    }
    this.watches.add(w);
    res.on('close', () => {
      if (w.timer) clearTimeout(w.timer);
      this.watches.delete(w);
    });
  }

  private patchNode(res: http.ServerResponse, name: string, statusSub: boolean, contentType: string | undefined, body: unknown): void {
    const cur = this.nodes.get(name);
    if (!cur) return this.fail(res, 404, `nodes "${name}" not found`, { name, kind: 'nodes' });
    if (contentType === 'application/json-patch+json') {
      return this.fail(res, 415, 'the fake apiserver does not implement application/json-patch+json; use a strategic merge patch');
    }
    if (contentType !== 'application/strategic-merge-patch+json' && contentType !== 'application/merge-patch+json') {
      return this.fail(res, 415, `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, got ${String(contentType)}`);
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      return this.fail(res, 400, 'the patch body must be a JSON object');
    }
    const strategic = contentType === 'application/strategic-merge-patch+json';
    const next = mergePatch(clone(cur), body as JsonObject, strategic, '') as FakeNode;
    // Status subresource strategy keeps spec; the main resource keeps status (k8s pkg/registry/core/node).
    if (statusSub) next.spec = clone(cur.spec);
    else next.status = clone(cur.status);
    next.metadata = { ...(next.metadata ?? {}), name, uid: cur.metadata.uid, creationTimestamp: cur.metadata.creationTimestamp };
    next.apiVersion = 'v1';
    next.kind = 'Node';
    this.store(next, 'MODIFIED');
    this.send(res, 200, next);
  }
}

/** Lists merged by key under a strategic merge patch (k8s.io/api core/v1 patchMergeKey tags). */
const MERGE_KEYS: Record<string, string> = {
  '.status.conditions': 'type',
  '.status.addresses': 'type',
  '.spec.taints': 'key',
};

/** JSON merge patch (RFC 7386), plus the merge-by-key lists of a strategic merge patch. */
export function mergePatch(target: unknown, patch: unknown, strategic: boolean, path: string): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) {
    const key = MERGE_KEYS[path];
    if (strategic && key && Array.isArray(patch) && Array.isArray(target)) return mergeList(target, patch, key);
    return clone(patch);
  }
  const out: JsonObject = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...(target as JsonObject) } : {};
  for (const [k, v] of Object.entries(patch as JsonObject)) {
    if (strategic && k.startsWith('$')) continue;
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v, strategic, `${path}.${k}`);
  }
  return out;
}

function mergeList(target: unknown[], patch: unknown[], key: string): unknown[] {
  const out = target.map((x) => clone(x));
  for (const item of patch) {
    if (item === null || typeof item !== 'object') continue;
    const id = (item as JsonObject)[key];
    const i = out.findIndex((x) => x !== null && typeof x === 'object' && (x as JsonObject)[key] === id);
    if ((item as JsonObject).$patch === 'delete') {
      if (i >= 0) out.splice(i, 1);
    } else if (i >= 0) out[i] = mergePatch(out[i], item, true, '');
    else out.push(clone(item));
  }
  return out;
}

// ---- node builders ------------------------------------------------------------------------------

export interface LinuxFlannelNodeOptions {
  name: string;
  podCIDR: string;
  publicIP: string;
  backendType: 'vxlan' | 'host-gw';
  /** vxlan only, default 4096. */
  vni?: number;
  /** vxlan only, default `0e:2a:` + the public IP's octets in hex. */
  vtepMAC?: string;
  /** `--kube-annotation-prefix` as given to flanneld (default flannel.alpha.coreos.com). */
  prefix?: string;
}

function readyCondition(): JsonObject {
  const t = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  return { type: 'Ready', status: 'True', lastHeartbeatTime: t, lastTransitionTime: t, reason: 'KubeletReady', message: 'kubelet is posting ready status' };
}

/** A Node without flannel annotations (as the kubelet registers it, podCIDR set by the controller). */
export function bareNode(opts: { name: string; podCIDR?: string; internalIP?: string }): FakeNode {
  const node: FakeNode = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: opts.name, labels: { 'kubernetes.io/hostname': opts.name, 'kubernetes.io/os': 'linux' }, annotations: {} },
    spec: {},
    status: { conditions: [readyCondition()], addresses: [] },
  };
  if (opts.podCIDR !== undefined) node.spec = { podCIDR: opts.podCIDR, podCIDRs: [opts.podCIDR] };
  if (opts.internalIP !== undefined) node.status!.addresses = [{ type: 'InternalIP', address: opts.internalIP }];
  return node;
}

/** A Node annotated exactly as upstream Linux flanneld (kube subnet manager) annotates it. */
export function linuxFlannelNode(opts: LinuxFlannelNodeOptions): FakeNode {
  const keys = annotationKeys(normalizeAnnotationPrefix(opts.prefix ?? DEFAULT_ANNOTATION_PREFIX));
  const node = bareNode({ name: opts.name, podCIDR: opts.podCIDR, internalIP: opts.publicIP });
  const defaultMac = '0e:2a:' + opts.publicIP.split('.').map((o) => Number(o).toString(16).padStart(2, '0')).join(':');
  const data = opts.backendType === 'vxlan' ? { VNI: opts.vni ?? 4096, VtepMAC: opts.vtepMAC ?? defaultMac } : null;
  node.metadata.annotations = {
    [keys.backendData]: encodeBackendData(data),
    [keys.backendType]: opts.backendType,
    [keys.kubeSubnetManager]: 'true',
    [keys.publicIP]: opts.publicIP,
  };
  return node;
}

/** A Pod bound to a node (for POD_NAME/POD_NAMESPACE resolution). */
export function podOnNode(opts: { name: string; namespace: string; nodeName?: string }): FakePod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: opts.name, namespace: opts.namespace },
    spec: opts.nodeName === undefined ? {} : { nodeName: opts.nodeName },
    status: { phase: 'Running' },
  };
}

/**
 * Write a kubeconfig for `serverUrl`. A plain `http://` server gets `insecure-skip-tls-verify: true`
 * (client-node refuses http otherwise; there is no TLS to verify).
 */
export async function writeKubeconfig(path: string, serverUrl: string, opts: { token?: string; insecure?: boolean; caFile?: string } = {}): Promise<void> {
  const q = (s: string) => JSON.stringify(s);
  const insecure = opts.insecure ?? serverUrl.startsWith('http:');
  const lines = [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: fake',
    '  cluster:',
    `    server: ${q(serverUrl)}`,
    ...(insecure ? ['    insecure-skip-tls-verify: true'] : []),
    ...(opts.caFile !== undefined ? [`    certificate-authority: ${q(opts.caFile)}`] : []),
    'users:',
    '- name: fake-user',
    `  user: ${opts.token !== undefined ? `{token: ${q(opts.token)}}` : '{}'}`,
    'contexts:',
    '- name: fake',
    '  context:',
    '    cluster: fake',
    '    user: fake-user',
    'current-context: fake',
    '',
  ];
  await writeFile(path, lines.join('\n'), 'utf8');
}

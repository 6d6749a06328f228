// An in-process fake of the Kubernetes API server, just big enough for flannel's kube subnet manager and
// the agent's list-watches, over real HTTP(S) on 127.0.0.1 so the real @kubernetes/client-node (and
// kubectl) talk to it: Nodes (list, watch, get, patch incl. /status), Namespaces, Pods and
// NetworkPolicies (list and watch across namespaces, under the same rules as Nodes; Pods get too),
// Services and EndpointSlices (list: ./services.ts), ConfigMaps (get), Events (./events.ts) and the discovery documents kubectl reads first (/api, /apis, /api/v1), so
// `kubectl describe node` works against it. It models what flannel pkg/subnet/kube/kube.go
// relies on through client-go, as the Kubernetes API documents it: the API conventions
// (sig-architecture api-conventions.md: resourceVersion, Status errors with reason and code, the status
// subresource), the API concepts ("Efficient detection of changes": list then watch from the list's
// resourceVersion, 410 Gone when it is too old, watch bookmarks; "Retrieving large results sets in
// chunks": limit/continue) and k8s.io/apiserver's watch cache. The parts: ./store.ts (etcd: one revision
// for every kind, compaction, the Nodes' rules), ./collection.ts (one resource's objects, history and
// paged lists with continue tokens), ./watch.ts (one process's watch cache of one resource, watch
// streams and bookmarks), ./rbac-startup.ts (the 403s before RBAC grants the agent: caches
// not synced, a ClusterRole applied late), ./merge-patch.ts (patches), ./request-faults.ts (injected
// failures and hangs), ./responses.ts (Status bodies), ./nodes.ts (Node builders), ./kubeconfig.ts. It ships with the `npm start` demo (../main.ts), which it serves; the
// integration tests use it too. The agent never imports it.
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { systemClock, type Clock } from '../../basics/clock.js';
import type { Collection, StoredEvent, StoredObject, StoreRefusal } from './collection.js';
import { EventStore } from './events.js';
import { isRefusal, ObjectStore, RESOURCES, type ResourceName } from './store.js';
import { isResourcePath, rbacAllows, rbacDenialReason, rbacForbiddenMessage, type NamespacedRules, type PolicyRule, type RbacGrant } from './rbac-startup.js';
import type { FakeNode, FakePod } from './nodes.js';
import { RequestFaults, type FailAnswer, type HangMode, type NodeMisbehaviour } from './request-faults.js';
import { kubeStatus, sendJson, sendStatus, type JsonObject } from './responses.js';
import { WatchCache } from './watch.js';
import { ServiceStore, type FakeNamespacedObject, type ServiceResource } from './services.js';

export type { JsonObject } from './responses.js';
export { kubeStatus } from './responses.js';
export type { FailAnswer, HangMode, NodeMisbehaviour } from './request-faults.js';
export { bareNode, linuxFlannelNode, podOnNode, type FakeNode, type FakeObjectMeta, type FakePod } from './nodes.js';
export { writeKubeconfig } from './kubeconfig.js';
export { CONTINUE_EXPIRED, LIST_EXPIRED } from './collection.js';
export { FakeApiRefusal, PODCIDR_FORBIDDEN, RESOURCES, type ResourceName } from './store.js';
export { WATCH_EXPIRED_ETCD } from './watch.js';

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  contentType: string | undefined;
  /** Parsed JSON when the body is JSON, the raw text otherwise, undefined when empty. */
  body: unknown;
  authorization?: string;
  /** The User-Agent header, when sent (the apiserver writes it into its audit log as `userAgent`). */
  userAgent?: string;
}

export interface FakeKubeApiServerOptions {
  /** 0 (default) = pick a free port; restart() reuses the port actually bound. */
  port?: number;
  /** When set, every request must carry `Authorization: Bearer <token>` (else 401). */
  bearerToken?: string;
  /**
   * Each resource's watch cache window, in its events (default 1000; k8s.io/apiserver watch_cache.go sizes
   * it between 100 and 102400): a watch resumed from a resourceVersion older than the window gets 410 Gone.
   */
  historyLimit?: number;
  /**
   * kube-apiserver --watch-cache (default true). false: watches are served by etcd, from its history
   * since the last compact(), and get no bookmarks.
   */
  watchCache?: boolean;
  /**
   * Off unless set: for this many ms (the injected clock) after each start, every request is answered
   * `403 Forbidden` as a kube-apiserver answers before its RBAC informers have synced
   * (`... RBAC: clusterrole.rbac.authorization.k8s.io "flannel-windows" not found`). A real one does
   * so for ~100 ms.
   */
  rbacSyncDelayMs?: number;
  /**
   * What RBAC grants the agent's user (default `granted`): `unbound` or `role-missing` answer every
   * resource request 403 until a test sets `rbac` to `granted` (the ClusterRole and binding applied late).
   */
  rbac?: RbacGrant;
  /** The rules the bound ClusterRole grants once `granted` (default: every request, as cluster-admin's). */
  rbacRules?: readonly PolicyRule[];
  /** With `rbacRules`: the rules Roles bound by RoleBindings grant, in their namespace only (default none). */
  rbacNamespacedRules?: NamespacedRules;
  /** The user named in those 403s (default the DaemonSet's service account). */
  rbacUser?: string;
  /** Serve https with this certificate and key (PEM); plain http otherwise. */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** Watch timeouts and creationTimestamps (default the system clock). */
  clock?: Clock;
}

/** Request bodies larger than this are cut (the apiserver refuses them; nothing here sends one). */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

const STRATEGIC_MERGE = 'application/strategic-merge-patch+json';
const MERGE = 'application/merge-patch+json';
const JSON_PATCH = 'application/json-patch+json';

export class FakeKubeApiServer {
  /** Every request, in arrival order (tests assert on these). */
  readonly requests: RecordedRequest[] = [];
  /** The one token accepted; a test may change it (a rotated token: the old one then gets 401). */
  bearerToken: string | undefined;
  /** What RBAC grants the agent now; a test applies the ClusterRole by setting `granted`. */
  rbac: RbacGrant;
  /** The bound ClusterRole's rules (undefined: it grants everything); a test applies a manifest's. */
  rbacRules: readonly PolicyRule[] | undefined;
  /** With `rbacRules`: the bound Roles' rules by namespace; a test applies a manifest's. */
  rbacNamespacedRules: NamespacedRules;

  /** The process serving now (undefined while stopped). */
  private current: ServerProcess | undefined;
  /** Processes shut down gracefully that still serve their open watches. */
  private readonly draining = new Set<ServerProcess>();
  private port: number;
  private readonly tls: FakeKubeApiServerOptions['tls'];
  private readonly clock: Clock;
  private readonly store: ObjectStore;
  private readonly eventStore: EventStore;
  private readonly serviceStore: ServiceStore;
  private readonly faults = new RequestFaults();
  private readonly watchOptions: { watchCache: boolean; cacheCapacity: number };
  private readonly rbacSyncDelayMs: number;
  private readonly rbacUser: string;
  /** 410s answered by processes gone, for expiredWatches. */
  private expiredBefore = 0;
  /** TCP connections accepted, by every process so far (a client that keeps its connection makes one). */
  connectionsAccepted = 0;

  constructor(opts: FakeKubeApiServerOptions = {}) {
    const clock = opts.clock ?? systemClock;
    this.clock = clock;
    this.port = opts.port ?? 0;
    this.bearerToken = opts.bearerToken;
    this.tls = opts.tls;
    this.watchOptions = { watchCache: opts.watchCache ?? true, cacheCapacity: Math.max(1, opts.historyLimit ?? 1000) };
    this.rbacSyncDelayMs = opts.rbacSyncDelayMs ?? 0;
    this.rbac = opts.rbac ?? 'granted';
    this.rbacRules = opts.rbacRules;
    this.rbacNamespacedRules = opts.rbacNamespacedRules ?? {};
    this.rbacUser = opts.rbacUser ?? 'system:serviceaccount:kube-flannel:flannel-windows';
    this.store = new ObjectStore({ now: () => clock.now(), onEvent: (ev) => this.observe(ev) });
    this.eventStore = new EventStore(
      () => clock.now(),
      () => this.store.nextRevision(),
    );
    this.serviceStore = new ServiceStore(() => this.store.nextRevision());
  }

  /** Every running process's watch cache of the resource is fed by etcd, the draining ones' too. */
  private observe(ev: StoredEvent): void {
    this.current?.watches.get(ev.resource)?.observe(ev);
    for (const p of this.draining) p.watches.get(ev.resource)?.observe(ev);
  }

  /** Every watch cache of every process (the running one and those draining). */
  private caches(): WatchCache[] {
    return [...(this.current ? [this.current] : []), ...this.draining].flatMap((p) => [...p.watches.values()]);
  }

  /** `http://127.0.0.1:<port>` (`https://` with `tls`; valid after start()). */
  get url(): string {
    return `${this.tls ? 'https' : 'http'}://127.0.0.1:${this.port}`;
  }

  get resourceVersion(): string {
    return String(this.store.revision);
  }

  get running(): boolean {
    return this.current !== undefined;
  }

  /**
   * Start a server process on the port. Its watch cache starts empty at the newest revision (a new
   * kube-apiserver's cacher lists etcd first), so a watch resumed from an older resourceVersion gets 410.
   */
  async start(): Promise<void> {
    if (this.current) return;
    const proc: ServerProcess = {
      server: undefined as unknown as http.Server,
      sockets: new Set(),
      watches: new Map(
        Object.keys(RESOURCES).map((r) => {
          const collection = this.store.collection(r)!;
          return [r, new WatchCache({ collection, etcd: this.store, clock: this.clock, ...this.watchOptions })];
        }),
      ),
      startedAt: this.clock.now(),
    };
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => this.handle(proc, req, res);
    const server: http.Server = this.tls ? https.createServer({ cert: this.tls.cert, key: this.tls.key }, handler) : http.createServer(handler);
    proc.server = server;
    server.on('connection', (s: Socket) => {
      this.connectionsAccepted++;
      proc.sockets.add(s);
      s.on('close', () => proc.sockets.delete(s));
    });
    for (let attempt = 0; ; attempt++) {
      try {
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(this.port, '127.0.0.1', () => {
            server.off('error', reject);
            resolve();
          });
        });
        break;
      } catch (err) {
        // The listener of a process shutting down may take a turn of the event loop to close.
        if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt >= 1000 || this.port === 0) throw err;
        await new Promise((r) => setImmediate(r));
      }
    }
    this.port = (server.address() as AddressInfo).port;
    this.current = proc;
  }

  /**
   * The process dies (SIGKILL, a crash): the listener and every open connection (watches included) are
   * cut at once, and so are those of a process still shutting down. etcd, and so every object, is kept.
   */
  async stop(): Promise<void> {
    const procs = [...(this.current ? [this.current] : []), ...this.draining];
    this.current = undefined;
    this.draining.clear();
    this.faults.forgetHung();
    for (const proc of procs) await this.exit(proc);
  }

  /**
   * SIGTERM: the process stops listening at once (new connections are refused), keeps serving its open
   * watches (events and bookmarks included) until each one's timeoutSeconds ends it cleanly, then exits.
   * Watches without a timeout end when it exits. Resolves when it has exited. (k8s.io/apiserver
   * pkg/server/genericapiserver.go: the listener closes, long-running requests finish on their own;
   * client-go sets timeoutSeconds on every watch.) start() may be called at once: a rolling restart.
   */
  async shutdown(): Promise<void> {
    const proc = this.current;
    if (!proc) return;
    this.current = undefined;
    this.draining.add(proc);
    proc.server.close();
    proc.server.closeIdleConnections();
    await new Promise((r) => setImmediate(r));
    for (const w of proc.watches.values()) await w.drained();
    if (!this.draining.delete(proc)) return; // stop() killed it meanwhile
    await this.exit(proc);
  }

  /**
   * A rolling restart: the process shuts down gracefully (shutdown()) while a new one starts on the same
   * port at once. Resolves when the new one listens; `exited` when the old one has exited.
   */
  async rollingRestart(): Promise<{ exited: Promise<void> }> {
    const exited = this.shutdown();
    await this.start();
    return { exited };
  }

  private async exit(proc: ServerProcess): Promise<void> {
    for (const w of proc.watches.values()) {
      this.expiredBefore += w.expired;
      w.dropAll();
    }
    const closed = new Promise<void>((resolve) => proc.server.close(() => resolve()));
    for (const s of proc.sockets) s.destroy();
    proc.sockets.clear();
    proc.server.closeAllConnections();
    await closed;
  }

  /** Stop (a crash) and start again on the same port: objects kept, the watch cache new. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  // ---- control API -------------------------------------------------------------------------------

  addNode(node: FakeNode): FakeNode {
    return this.store.addNode(node);
  }

  /**
   * Apply `mutator` to a copy of the node (mutate in place or return a replacement); emits MODIFIED.
   * Throws FakeApiRefusal when it changes a podCIDR already set, as the apiserver refuses that: a node
   * with a new podCIDR is deleted and registered again (reregisterNode).
   */
  updateNode(name: string, mutator: (node: FakeNode) => FakeNode | void): FakeNode {
    return this.store.updateNode(name, mutator);
  }

  /**
   * The Node is deleted and registered again, as when a node is removed from the cluster (kubectl delete
   * node) and its kubelet registers it anew: a DELETED, then an ADDED of `node` with a new uid (and
   * whatever podCIDR the node IPAM controller hands out this time).
   */
  reregisterNode(node: FakeNode): FakeNode {
    this.store.deleteNode(node.metadata.name);
    const fresh = structuredClone(node);
    delete fresh.metadata.uid;
    delete fresh.metadata.resourceVersion;
    delete fresh.metadata.creationTimestamp;
    return this.store.addNode(fresh);
  }

  /** The kubelet renews the node's Lease: the revision moves, no Node event (store.ts). */
  renewNodeLease(nodeName: string): JsonObject {
    return this.store.renewNodeLease(nodeName);
  }

  /** etcd's watch progress notification reaches the running watch caches (watch.ts). */
  progressNotify(): void {
    for (const w of this.caches()) w.progressNotify();
  }

  deleteNode(name: string): boolean {
    return this.store.deleteNode(name);
  }

  getNode(name: string): FakeNode | undefined {
    return this.store.getNode(name);
  }

  listNodes(): FakeNode[] {
    return this.store.listNodes();
  }

  addPod(pod: FakePod): FakePod {
    return this.store.addPod(pod);
  }

  /**
   * Create an object of a listed and watched resource (a Namespace, a Pod, a NetworkPolicy, a Node): a uid
   * and a creationTimestamp when it has none, the next revision, an ADDED event.
   */
  addObject<T extends StoredObject>(resource: ResourceName, obj: T): T {
    return this.store.add(resource, obj);
  }

  /** Apply `mutator` to a copy of the object under `key` (`name`, or `namespace/name`); a MODIFIED event (Nodes: updateNode). */
  updateObject<T extends StoredObject>(resource: Exclude<ResourceName, 'nodes'>, key: string, mutator: (obj: T) => T | void): T {
    return this.store.update(resource, key, mutator);
  }

  /** Delete the object under `key` (`name`, or `namespace/name`); a DELETED event. False when there is none. */
  deleteObject(resource: ResourceName, key: string): boolean {
    return this.store.remove(resource, key);
  }

  listObjects<T extends StoredObject>(resource: ResourceName): T[] {
    return this.store.list(resource);
  }

  /** A Service (core/v1), as kube-proxy and `flanneld doctor` list it (./services.ts). */
  addService(svc: FakeNamespacedObject): FakeNamespacedObject {
    return this.serviceStore.add('services', svc);
  }

  /** An EndpointSlice (discovery.k8s.io/v1), as kube-proxy and `flanneld doctor` list it (./services.ts). */
  addEndpointSlice(slice: FakeNamespacedObject): FakeNamespacedObject {
    return this.serviceStore.add('endpointslices', slice);
  }

  /** A ConfigMap (core/v1), created or replaced, as `kubectl apply` makes one; read by name (./services.ts). */
  applyConfigMap(cm: FakeNamespacedObject): FakeNamespacedObject {
    return this.serviceStore.add('configmaps', cm);
  }

  /** Events stored (created by POST, updated by PATCH), optionally only those about one object. */
  events(involved?: { kind: string; name: string }): JsonObject[] {
    const sel = involved ? `involvedObject.kind=${involved.kind},involvedObject.name=${involved.name}` : undefined;
    return this.eventStore.list(undefined, sel);
  }

  /** Drop an event (as its TTL would): the next patch of it gets 404. */
  expireEvent(namespace: string, name: string): boolean {
    return this.eventStore.delete(namespace, name);
  }

  /**
   * Compact etcd at the newest revision (store.ts): continue tokens and reads at older revisions get
   * 410, and so do watches resumed from before it when the watch cache is off; with the cache on, the
   * watchers see nothing of it.
   */
  compact(): void {
    this.store.compact();
  }

  /** End every open watch cleanly (as an apiserver does at its watch timeout). */
  closeWatches(): void {
    for (const w of this.caches()) w.closeAll();
  }

  /** Number of open watch connections, of every resource (draining processes' included). */
  get activeWatches(): number {
    return this.caches().reduce((n, w) => n + w.active, 0);
  }

  /** Watches answered with 410 Gone (`too old resource version`), of every resource, by every process so far. */
  get expiredWatches(): number {
    return this.caches().reduce((n, w) => n + w.expired, this.expiredBefore);
  }

  /**
   * The next `count` requests whose method matches and whose path (or `path?query`) matches `path`
   * fail with `status` (a k8s Status body, with `answer`'s message and headers); status 0 destroys the
   * connection instead.
   */
  failNext(method: string, path: RegExp, status: number, count = 1, answer?: FailAnswer): void {
    this.faults.failNext(method, path, status, count, answer);
  }

  /**
   * The next `count` matching requests (Infinity = until unhang()) hang: `no-answer` never answers,
   * `headers-only` sends 200 and its headers and then nothing (a watch or list gone silent).
   */
  hang(method: string, path: RegExp, mode: HangMode = 'no-answer', count = Infinity): void {
    this.faults.hang(method, path, mode, count);
  }

  /** Drop every hang rule and cut the connections held open so far. */
  unhang(): void {
    this.faults.unhang();
  }

  /** From now on the Node list or watch misbehaves this way (request-faults.ts); undefined serves them normally again. */
  misbehave(nodes: NodeMisbehaviour | undefined): void {
    this.faults.nodes = nodes;
  }

  /** Requests currently held open by a hang rule. */
  get hangingRequests(): number {
    return this.faults.hanging;
  }

  clearRequests(): void {
    this.requests.length = 0;
  }

  // ---- HTTP --------------------------------------------------------------------------------------

  private handle(proc: ServerProcess, req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY_BYTES) chunks.push(c);
    });
    req.on('end', () => {
      try {
        this.route(proc, req, res, Buffer.concat(chunks).toString('utf8'));
      } catch (err) {
        if (!res.headersSent) sendStatus(res, 500, `fake apiserver: ${err instanceof Error ? err.message : String(err)}`);
        else res.destroy();
      }
    });
  }

  private route(proc: ServerProcess, req: http.IncomingMessage, res: http.ServerResponse, raw: string): void {
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
    if (req.headers['user-agent'] !== undefined) rec.userAgent = req.headers['user-agent'];
    this.requests.push(rec);

    if (this.faults.intercept(req, res, method, path, url.search ? `${path}${url.search}` : path)) return;
    if (this.bearerToken !== undefined && req.headers.authorization !== `Bearer ${this.bearerToken}`) {
      return sendStatus(res, 401, 'Unauthorized');
    }
    let denial = this.clock.now() - proc.startedAt < this.rbacSyncDelayMs ? rbacDenialReason('role-missing') : isResourcePath(path) ? rbacDenialReason(this.rbac) : undefined;
    if (denial === undefined && this.rbacRules !== undefined && !rbacAllows(this.rbacRules, method, path, query, this.rbacNamespacedRules)) denial = '';
    if (denial !== undefined) {
      const f = rbacForbiddenMessage(method, path, query, this.rbacUser, denial);
      return sendJson(res, 403, kubeStatus(403, 'Forbidden', f.message, f.details));
    }

    const notAllowed = () => sendStatus(res, 405, `method ${method} not allowed on ${path}`);
    let m: RegExpMatchArray | null;
    const listed = LISTED_PATHS.get(path);
    if (listed !== undefined) {
      if (method !== 'GET') return notAllowed();
      const watch = query.watch === 'true' || query.watch === '1';
      const collection = this.store.collection(listed)!;
      if (
        listed === 'nodes' &&
        this.faults.misbehaveOnNodes(
          res,
          watch,
          () => collection.listPage({}) as JsonObject,
          () => this.store.listNodes()[0],
        )
      )
        return;
      if (watch) return proc.watches.get(listed)!.serve(res, query);
      return this.serveList(collection, res, query, listed === 'pods' ? podsOnNode(query.fieldSelector) : undefined);
    }
    if ((m = path.match(/^\/api\/v1\/nodes\/([^/]+)(\/status)?$/))) {
      const name = decodeURIComponent(m[1]);
      if (method === 'GET') {
        const n = this.store.getNode(name);
        return n ? sendJson(res, 200, n) : nodeNotFound(res, name);
      }
      if (method === 'PATCH') return this.patchNode(res, name, m[2] !== undefined, contentType, body);
      return notAllowed();
    }
    if (Object.hasOwn(DISCOVERY, path)) {
      if (method !== 'GET') return notAllowed();
      return sendJson(res, 200, DISCOVERY[path]);
    }
    if ((m = path.match(/^\/(?:api\/v1\/(?:namespaces\/([^/]+)\/)?(services)|apis\/discovery\.k8s\.io\/v1\/(?:namespaces\/([^/]+)\/)?(endpointslices))$/))) {
      if (method !== 'GET') return notAllowed();
      const ns = m[1] ?? m[3];
      const list = this.serviceStore.list((m[2] ?? m[4]) as ServiceResource, ns === undefined ? undefined : decodeURIComponent(ns), query.labelSelector, this.resourceVersion);
      return typeof list === 'string' ? sendStatus(res, 400, list) : sendJson(res, 200, list);
    }
    if ((m = path.match(/^\/api\/v1\/namespaces\/([^/]+)\/configmaps\/([^/]+)$/))) {
      if (method !== 'GET') return notAllowed();
      const name = decodeURIComponent(m[2]);
      const cm = this.serviceStore.get('configmaps', decodeURIComponent(m[1]), name);
      return cm ? sendJson(res, 200, cm) : sendStatus(res, 404, `configmaps "${name}" not found`, { name, kind: 'configmaps' });
    }
    if ((m = path.match(/^\/api\/v1\/(?:namespaces\/([^/]+)\/)?events(?:\/([^/]+))?$/))) return this.routeEvents(res, method, m[1], m[2], query, body);
    if ((m = path.match(/^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)$/))) {
      if (method !== 'GET') return notAllowed();
      const name = decodeURIComponent(m[2]);
      const p = this.store.getPod(decodeURIComponent(m[1]), name);
      return p ? sendJson(res, 200, p) : sendStatus(res, 404, `pods "${name}" not found`, { name, kind: 'pods' });
    }
    return sendStatus(res, 404, 'the server could not find the requested resource');
  }

  private routeEvents(res: http.ServerResponse, method: string, ns: string | undefined, nameEnc: string | undefined, query: Record<string, string>, body: unknown): void {
    const namespace = ns === undefined ? undefined : decodeURIComponent(ns);
    const name = nameEnc === undefined ? undefined : decodeURIComponent(nameEnc);
    const answer = (a: { code: number; body?: JsonObject; message?: string }) => (a.body ? sendJson(res, a.code, a.body) : sendStatus(res, a.code, a.message ?? ''));
    if (name === undefined && method === 'GET') {
      return sendJson(res, 200, {
        kind: 'EventList',
        apiVersion: 'v1',
        metadata: { resourceVersion: this.resourceVersion },
        items: this.eventStore.list(namespace, query.fieldSelector),
      });
    }
    if (namespace === undefined) return sendStatus(res, 405, `method ${method} not allowed on /api/v1/events`);
    if (name === undefined && method === 'POST') return answer(this.eventStore.create(namespace, body));
    if (name !== undefined && method === 'GET') {
      const e = this.eventStore.get(namespace, name);
      return e ? sendJson(res, 200, e) : sendStatus(res, 404, `events "${name}" not found`, { name, kind: 'events' });
    }
    if (name !== undefined && method === 'PATCH') return answer(this.eventStore.patch(namespace, name, body));
    return sendStatus(res, 405, `method ${method} not allowed on events`);
  }

  private patchNode(res: http.ServerResponse, name: string, statusSub: boolean, contentType: string | undefined, body: unknown): void {
    if (!this.store.getNode(name)) return nodeNotFound(res, name);
    if (contentType === JSON_PATCH) {
      return sendStatus(res, 415, 'the fake apiserver does not implement application/json-patch+json; use a strategic merge patch');
    }
    if (contentType !== STRATEGIC_MERGE && contentType !== MERGE) {
      return sendStatus(
        res,
        415,
        `the body of the request was in an unknown format - accepted media types include: ${JSON_PATCH}, ${MERGE}, ${STRATEGIC_MERGE}, got ${String(contentType)}`,
      );
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      return sendStatus(res, 400, 'the patch body must be a JSON object');
    }
    const next = this.store.patchNode(name, body as JsonObject, contentType === STRATEGIC_MERGE, statusSub);
    if (isRefusal(next)) return sendRefusal(res, next);
    return next ? sendJson(res, 200, next) : nodeNotFound(res, name);
  }

  /**
   * GET of a listed resource's path (cacher.go GetList): resourceVersion "0" (or a resourceVersion without
   * a limit and not Exact) is served whole from the watch cache, limit ignored; otherwise etcd serves it,
   * paged, at the newest revision or at resourceVersion with resourceVersionMatch=Exact (collection.ts).
   * `keep`: a field selector's filter.
   */
  private serveList(collection: Collection, res: http.ServerResponse, query: Record<string, string>, keep?: (obj: StoredObject) => boolean): void {
    const rv = query.resourceVersion;
    const hasLimit = Number(query.limit) > 0;
    const exact = query.resourceVersionMatch === 'Exact';
    if (rv !== undefined && rv !== '' && !query.continue && (rv === '0' || (!hasLimit && !exact)) && this.watchOptions.watchCache) {
      const { limit: _limit, ...rest } = query;
      return sendJson(res, 200, collection.listPage(rest, undefined, keep));
    }
    let atRv: number | undefined;
    if (rv !== undefined && rv !== '' && rv !== '0' && !query.continue) {
      atRv = Number(rv);
      if (!Number.isInteger(atRv) || atRv < 0) return sendStatus(res, 400, `invalid resource version: ${rv}`);
      if (!exact) atRv = undefined; // NotOlderThan: the newest revision does
    }
    const page = collection.listPage(query, atRv, keep);
    return isRefusal(page) ? sendRefusal(res, page) : sendJson(res, 200, page);
  }
}

/** One kube-apiserver process: its listener, connections and watch caches (one per listed resource). */
interface ServerProcess {
  server: http.Server;
  sockets: Set<Socket>;
  watches: Map<string, WatchCache>;
  /** Clock time it started (its RBAC caches sync rbacSyncDelayMs later). */
  startedAt: number;
}

function sendRefusal(res: http.ServerResponse, r: StoreRefusal): void {
  const status = kubeStatus(r.code, r.reason, r.message, r.details);
  if (r.continue !== undefined) status.metadata = { continue: r.continue };
  sendJson(res, r.code, status);
}

/** Legacy discovery (kubectl falls back to it when the aggregated form is not offered). */
const NETWORKING_V1 = { groupVersion: 'networking.k8s.io/v1', version: 'v1' };
const DISCOVERY: Record<string, JsonObject> = {
  '/api': { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1' }] },
  '/apis': { kind: 'APIGroupList', apiVersion: 'v1', groups: [{ name: 'networking.k8s.io', versions: [NETWORKING_V1], preferredVersion: NETWORKING_V1 }] },
  '/api/v1': {
    kind: 'APIResourceList',
    groupVersion: 'v1',
    resources: [
      { name: 'nodes', singularName: 'node', namespaced: false, kind: 'Node', verbs: ['get', 'list', 'patch', 'watch'], shortNames: ['no'] },
      { name: 'nodes/status', singularName: '', namespaced: false, kind: 'Node', verbs: ['get', 'patch'] },
      { name: 'namespaces', singularName: 'namespace', namespaced: false, kind: 'Namespace', verbs: ['list', 'watch'], shortNames: ['ns'] },
      { name: 'pods', singularName: 'pod', namespaced: true, kind: 'Pod', verbs: ['get', 'list', 'watch'], shortNames: ['po'] },
      { name: 'events', singularName: 'event', namespaced: true, kind: 'Event', verbs: ['create', 'get', 'list', 'patch'], shortNames: ['ev'] },
      { name: 'services', singularName: 'service', namespaced: true, kind: 'Service', verbs: ['list'], shortNames: ['svc'] },
    ],
  },
  '/apis/networking.k8s.io/v1': {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: 'networking.k8s.io/v1',
    resources: [{ name: 'networkpolicies', singularName: 'networkpolicy', namespaced: true, kind: 'NetworkPolicy', verbs: ['list', 'watch'], shortNames: ['netpol'] }],
  },
};

/** The listed and watched resources by their path (all namespaces). */
const LISTED_PATHS = new Map<string, ResourceName>(Object.values(RESOURCES).map((r) => [r.path, r.resource]));

/**
 * A Pod list's field selector `spec.nodeName=X` (what `kubectl describe node` asks), as a filter; other
 * selectors are not modelled (every Pod passes them). undefined without one.
 */
function podsOnNode(fieldSelector: string | undefined): ((obj: StoredObject) => boolean) | undefined {
  const node = /(?:^|,)spec\.nodeName==?([^,]*)/.exec(fieldSelector ?? '')?.[1];
  return node === undefined ? undefined : (p) => (p as FakePod).spec?.nodeName === node;
}

function nodeNotFound(res: http.ServerResponse, name: string): void {
  sendStatus(res, 404, `nodes "${name}" not found`, { name, kind: 'nodes' });
}

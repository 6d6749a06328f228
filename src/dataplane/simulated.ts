// The simulated Windows node: one model (HNS networks/endpoints in the HCN v2 schema, the IPv4 route
// table, the host adapters) shared by the simulated HNS transport, route table and host, and persisted to
// one JSON file that several processes may share (README "The simulated node"). Every call enters through
// `enter` (latency, injected failures, `faults` rules), then changes the document under the store's lock.
// The parts: sim-state.ts (the document), sim-store.ts (the shared file and its lock), sim-faults.ts (the
// `faults` rules and the in-process injections), sim-objects.ts (HNS objects), sim-host.ts (adapters,
// vSwitch, routes). Tests edit the node behind the agent's back through test/support/sim-dataplane.ts.
import { HostError, RouteError } from '../errors.js';
import { hnsError, hresultText } from '../hns/errors.js';
import type { HcnEndpoint, HcnNetwork, HcnPolicy } from '../hns/schema.js';
import { sameId } from '../hns/schema.js';
import { systemClock, systemRandom, type Clock, type Random } from '../clock.js';
import { Injections, consumeFault, findFault, parseHresult } from './sim-faults.js';
import { adapterOrThrow, createRoute, defaultRoute, deleteRoute } from './sim-host.js';
import * as namespaces from './sim-namespaces.js';
import * as objects from './sim-objects.js';
import { initialState, nextInterfaceIndex, type DataplaneState, type SimAdapter, type SimRoute } from './sim-state.js';
import { StateStore, type DataplaneFs } from './sim-store.js';

export type { DataplaneState, SimAdapter, SimRoute } from './sim-state.js';
export type { DataplaneFs } from './sim-store.js';
export { jsonEqual } from './sim-state.js';

/** Which seam a call belongs to: decides the latency used and the error type a failure raises. */
export type CallKind = 'hns' | 'route' | 'host';

export interface DataplaneLatency {
  /** Per HNS call (v1 HNSCall or v2 Hcn*). */
  hnsCallMs?: number;
  /** Per item an HNS call carries (policies in a modify, objects in a list/enumerate). */
  hnsPerItemMs?: number;
  /** Per route table call. */
  routeCallMs?: number;
}

export interface SimulatedDataplaneOptions {
  /** Persist to (and share through) this JSON file (loaded when it exists). No file = memory only. */
  statePath?: string;
  /** IPv4 of the physical adapter when starting from scratch. Default 10.0.0.2. */
  nodeIP?: string;
  /** Prefix length of that address (its L2 segment; host-gw peers must be on it). Default 24. */
  nodePrefixLength?: number;
  fs?: DataplaneFs;
  /** Source for IDs, MACs and failRate. Default the system's. */
  random?: Random;
  latency?: DataplaneLatency;
  clock?: Clock;
  /** Told the name of every call (the agent counts them in /metrics). */
  onCall?: (op: string) => void;
}

export class SimulatedDataplane {
  /** Calls per operation name (`HcnCreateNetwork`, `HNSCall GET /networks/`, `CreateIpForwardEntry2`, ...). */
  readonly calls = new Map<string, number>();
  /** HCN handles currently open (HnsClient must bring this back to 0). */
  openHandles = 0;
  /**
   * The state document and its shared file (sim-store.ts). The seams change it only through the calls
   * below; test/support/sim-dataplane.ts edits it behind the agent's back, as an admin would.
   */
  readonly store: StateStore;
  /** In-process failures and stalls of tests and benchmarks (failNext, failRate, stall), never persisted. */
  readonly injections = new Injections();

  private readonly random: Random;
  private readonly clock: Clock;
  private readonly latency: Required<DataplaneLatency>;
  private readonly onCall: ((op: string) => void) | undefined;
  private readonly ids: objects.SimIds = { guid: () => this.newGuid(), mac: () => this.newMac(), ifIndex: () => this.newInterfaceIndex() };
  /** Interface indexes below this were handed out (kept across removals, as Windows does). */
  private indexHighWater = 0;

  constructor(opts: SimulatedDataplaneOptions = {}) {
    this.random = opts.random ?? systemRandom;
    this.clock = opts.clock ?? systemClock;
    this.latency = { hnsCallMs: 0, hnsPerItemMs: 0, routeCallMs: 0, ...opts.latency };
    this.onCall = opts.onCall;
    this.store = new StateStore({ file: opts.statePath, fs: opts.fs, now: () => this.clock.now(), fresh: () => initialState(opts.nodeIP ?? '10.0.0.2', opts.nodePrefixLength) });
  }

  /** The state as the file holds it now (re-read when another process changed it). */
  private read(): DataplaneState {
    this.store.refresh();
    return this.store.state;
  }

  /** Deep copy of the whole state (what the state file holds). */
  snapshot(): DataplaneState {
    return structuredClone(this.read());
  }

  /**
   * Every seam call starts here: re-read the shared state, count the call, sleep the modelled latency
   * (+ stalls), then maybe fail (an in-process injection, else a `faults` rule of the state file).
   * `items` = policies in a modify or objects returned by a list/enumerate; `input` = what the call was
   * given (JSON settings, ID, path, route), which a rule's `match` is looked for in.
   */
  async enter(op: string, kind: CallKind, items = 0, input = ''): Promise<void> {
    this.calls.set(op, (this.calls.get(op) ?? 0) + 1);
    this.onCall?.(op);
    let delay = kind === 'hns' ? this.latency.hnsCallMs + this.latency.hnsPerItemMs * items : kind === 'route' ? this.latency.routeCallMs : 0;
    delay += this.injections.takeStall(op);
    if (delay > 0) await this.clock.sleep(delay);
    await this.store.waitUnlocked((ms) => this.clock.sleep(ms));
    const injected = this.injections.takeFailure(op, this.random);
    const code = injected ?? this.takeFault(op, input);
    if (code === undefined) return;
    const context = { op, ...(injected !== undefined ? { injected: true } : { fault: true }) };
    if (kind === 'hns') throw hnsError(op, code, hresultText(code) ?? 'injected failure', context);
    if (kind === 'route')
      throw new RouteError('FLANNEL_ERR_ROUTE', `${op} failed with status ${code} (injected failure); the route is retried on the next reconcile`, { ...context, status: code });
    throw new HostError('FLANNEL_ERR_HOST', `${op} failed with status ${code} (injected failure)`, { ...context, status: code });
  }

  /** Fire the state file's first matching `faults` rule: its code, its `remaining` counted down in the file. */
  private takeFault(op: string, input: string): number | undefined {
    if (!findFault(this.read().faults, op, input)) return undefined;
    return this.store.update((state) => {
      const rule = findFault(state.faults, op, input);
      if (!rule) return undefined;
      consumeFault(rule);
      return parseHresult(rule.hresult);
    });
  }

  // ---------------------------------------------------------------- ids, MACs

  /** Upper-case GUID from the injected random source. */
  private newGuid(): string {
    const hexDigits = (n: number) => Array.from({ length: n }, () => Math.floor(this.random() * 16).toString(16)).join('');
    const variant = (8 + Math.floor(this.random() * 4)).toString(16);
    return `${hexDigits(8)}-${hexDigits(4)}-4${hexDigits(3)}-${variant}${hexDigits(3)}-${hexDigits(12)}`.toUpperCase();
  }

  /** A Hyper-V MAC `00-15-5D-XX-XX-XX`. */
  private newMac(): string {
    const byte = () =>
      Math.floor(this.random() * 256)
        .toString(16)
        .toUpperCase()
        .padStart(2, '0');
    return `00-15-5D-${byte()}-${byte()}-${byte()}`;
  }

  private newInterfaceIndex(): number {
    const index = Math.max(this.indexHighWater, nextInterfaceIndex(this.store.state));
    this.indexHighWater = index + 1;
    return index;
  }

  // ---------------------------------------------------------------- HNS objects

  listNetworks(): HcnNetwork[] {
    return structuredClone(this.read().networks);
  }

  getNetwork(id: string): HcnNetwork | undefined {
    const n = this.read().networks.find((x) => sameId(x.ID, id));
    return n && structuredClone(n);
  }

  getNetworkByName(name: string): HcnNetwork | undefined {
    const n = this.read().networks.find((x) => x.Name === name);
    return n && structuredClone(n);
  }

  /** HcnCreateNetwork: 0x803B0010 duplicate name/ID, 0x80070057 bad settings, 0x803B0006 no such physical adapter. */
  createNetwork(op: string, settings: HcnNetwork, id?: string): HcnNetwork {
    return this.store.update((s) => objects.createNetwork(s, this.ids, op, settings, id));
  }

  /** HcnDeleteNetwork / DELETE /networks/<id>: also removes its endpoints. 0x803B0001 when missing. */
  deleteNetwork(op: string, id: string): void {
    this.store.update((s) => objects.deleteNetwork(s, op, id));
  }

  /**
   * HcnModifyNetwork with ResourceType Policy (0x803B0012 exists, 0x803B0008 missing, 0x803B000D malformed),
   * batched as the state file's `policyBatches` says: a `partial` refusal is thrown after its prefix is stored.
   */
  modifyNetworkPolicies(op: string, id: string, requestType: string, policies: HcnPolicy[]): void {
    const refusal = this.store.update((s) => objects.modifyNetworkPolicies(s, op, id, requestType, policies));
    if (refusal) throw refusal;
  }

  listEndpoints(): HcnEndpoint[] {
    return structuredClone(this.read().endpoints);
  }

  getEndpoint(id: string): HcnEndpoint | undefined {
    const e = this.read().endpoints.find((x) => sameId(x.ID, id));
    return e && structuredClone(e);
  }

  /** HcnCreateEndpoint: allocates an IP from the network's first subnet and a MAC when not given. */
  createEndpoint(op: string, networkId: string, settings: HcnEndpoint, id?: string): HcnEndpoint {
    return this.store.update((s) => objects.createEndpoint(s, this.ids, op, networkId, settings, id));
  }

  /** HcnDeleteEndpoint / DELETE /endpoints/<id>. 0x803B0002 when missing. */
  deleteEndpoint(op: string, id: string): void {
    this.store.update((s) => objects.deleteEndpoint(s, op, id));
  }

  isAttachedToHost(id: string): boolean {
    return objects.isAttachedToHost(this.read(), id);
  }

  /** Attach to the host compartment: a new adapter `vEthernet (<name>)` with the endpoint's IP. */
  attachEndpointToHost(op: string, id: string): SimAdapter {
    return this.store.update((s) => objects.attachEndpointToHost(s, this.ids, op, id));
  }

  // ---------------------------------------------------------------- HNS namespaces (./sim-namespaces.ts)

  /** Every namespace with the endpoints in it (HcnQueryNamespaceProperties of each). */
  listNamespaces(): namespaces.HcnNamespaceProperties[] {
    const s = this.read();
    return (s.namespaces ?? []).map((n) => namespaces.namespaceProperties(s, n));
  }

  getNamespace(id: string): namespaces.HcnNamespaceProperties | undefined {
    const s = this.read();
    const n = namespaces.findNamespace(s, id);
    return n && namespaces.namespaceProperties(s, n);
  }

  createNamespace(op: string, settings: Record<string, unknown>, id?: string): namespaces.SimNamespace {
    return this.store.update((s) => namespaces.createNamespace(s, this.ids, op, settings, id));
  }

  /** HcnModifyNamespace: add or remove an endpoint. 0x80070490 for a missing namespace. */
  modifyNamespace(op: string, id: string, request: Record<string, unknown>): void {
    this.store.update((s) => namespaces.modifyNamespace(s, op, id, request));
  }

  deleteNamespace(op: string, id: string): void {
    this.store.update((s) => namespaces.deleteNamespace(s, op, id));
  }

  // ---------------------------------------------------------------- routes, adapters

  listRoutes(interfaceIndex?: number): SimRoute[] {
    return this.read()
      .routes.filter((r) => interfaceIndex === undefined || r.InterfaceIndex === interfaceIndex)
      .map((r) => ({ ...r }));
  }

  /** CreateIpForwardEntry2: RouteError 1168 for an unknown interface, 5010 for an existing route. */
  createRoute(route: SimRoute): void {
    this.store.update((s) => createRoute(s, route));
  }

  /** DeleteIpForwardEntry2: RouteError 1168 when no such route. */
  deleteRoute(route: SimRoute): void {
    this.store.update((s) => deleteRoute(s, route));
  }

  defaultRouteInterfaceIndex(): number | undefined {
    return defaultRoute(this.read())?.InterfaceIndex;
  }

  listAdapters(): SimAdapter[] {
    return this.read().adapters.map((a) => ({ ...a }));
  }

  /** SetIpInterfaceEntry(ForwardingEnabled). HostError FLANNEL_ERR_HOST (status 1168) for an unknown index. */
  setForwarding(interfaceIndex: number, enabled: boolean): void {
    this.store.update((s) => {
      adapterOrThrow(s, 'SetIpInterfaceEntry', interfaceIndex).Forwarding = enabled;
    });
  }

  getForwarding(interfaceIndex: number): boolean {
    return adapterOrThrow(this.read(), 'GetIpInterfaceEntry', interfaceIndex).Forwarding;
  }
}

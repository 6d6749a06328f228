// The simulated Windows node: one model (HNS networks/endpoints in the HCN v2 schema, the IPv4 route
// table, the host adapters) shared by the simulated HNS transport, route table and host, and persisted to
// one JSON file that several processes may share (docs/simulator.md). Every call enters through
// `enter` (latency, injected failures, `faults` rules), then changes the document under the store's lock.
// The parts, all in this folder: state.ts (the document), store.ts (the shared file and its lock),
// faults.ts (the `faults` rules and the in-process injections), objects.ts (HNS objects), host.ts
// (adapters, vSwitch, routes), namespaces.ts; the seams over the model are hns.ts (+ hns-v1.ts), host.ts
// and node.ts. Tests edit the node behind the agent's back through test/support/sim-dataplane.ts.
import { HostError, RouteError } from '../basics/errors.js';
import { hnsError, hresultText } from '../hns/errors.js';
import type { HcnEndpoint, HcnLoadBalancer, HcnNetwork, HcnPolicy, HnsVersion } from '../hns/schema.js';
import { systemClock, systemRandom, type Clock, type Random } from '../basics/clock.js';
import { Injections, consumeFault, findFault, parseHresult } from './faults.js';
import { adapterOrThrow, addUnicastAddress, createRoute, deleteRoute } from './host.js';
import type { IpFamily } from '../host/host.js';
import * as loadBalancers from './load-balancers.js';
import * as namespaces from './namespaces.js';
import * as objects from './objects.js';
import { modifyEndpointAcls } from './acl-objects.js';
import { parseHnsVersion } from './state-file.js';
import { NEWEST_HNS_VERSION, initialState, nextInterfaceIndex, type DataplaneState, type SimAdapter, type SimRoute } from './state.js';
import { StateStore, type DataplaneFs } from './store.js';

export type { DataplaneState, SimAdapter, SimRoute } from './state.js';
export type { DataplaneFs } from './store.js';

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
  /** Aborts when the agent stops: a call waiting for another process's state lock then fails at once. */
  signal?: AbortSignal;
}

export class SimulatedDataplane {
  /** Calls per operation name (`HcnCreateNetwork`, `HNSCall GET /networks/`, `CreateIpForwardEntry2`, ...). */
  readonly calls = new Map<string, number>();
  /** HCN handles currently open (HnsClient must bring this back to 0). */
  openHandles = 0;
  /**
   * The state document and its shared file (./store.ts). The seams change it only through the calls
   * below; test/support/sim-dataplane.ts edits it behind the agent's back, as an admin would.
   */
  readonly store: StateStore;
  /** In-process failures and stalls of tests and benchmarks (failNext, failRate, stall), never persisted. */
  readonly injections = new Injections();

  private readonly random: Random;
  private readonly clock: Clock;
  private readonly latency: Required<DataplaneLatency>;
  private readonly onCall: ((op: string) => void) | undefined;
  private readonly signal: AbortSignal | undefined;
  private readonly ids: objects.SimIds = { guid: () => this.newGuid(), mac: () => this.newMac(), ifIndex: () => this.newInterfaceIndex() };
  /** Interface indexes below this were handed out (kept across removals, as Windows does). */
  private indexHighWater = 0;

  constructor(opts: SimulatedDataplaneOptions = {}) {
    this.random = opts.random ?? systemRandom;
    this.clock = opts.clock ?? systemClock;
    this.latency = { hnsCallMs: 0, hnsPerItemMs: 0, routeCallMs: 0, ...opts.latency };
    this.onCall = opts.onCall;
    this.signal = opts.signal;
    this.store = new StateStore({ file: opts.statePath, fs: opts.fs, now: () => this.clock.now(), fresh: () => initialState(opts.nodeIP ?? '10.0.0.2', opts.nodePrefixLength) });
  }

  /** Deep copy of the whole state (what the state file holds). */
  snapshot(): DataplaneState {
    return structuredClone(this.document());
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
    await this.store.waitUnlocked((ms) => this.clock.sleep(ms, this.signal));
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
    this.store.refresh();
    if (!findFault(this.store.peek().faults, op, input)) return undefined;
    return this.store.change((v) => {
      const rule = findFault(v.doc.faults, op, input);
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

  /** The whole document, re-read when another process changed it (every array current). */
  private document(): DataplaneState {
    this.store.refresh();
    return this.store.state;
  }

  listNetworks(): HcnNetwork[] {
    return structuredClone(this.document().networks);
  }

  /** IDs of the networks `match` accepts (it may read a network's Policies only when `readsPolicies`). */
  networkIds(match: (n: HcnNetwork) => boolean, readsPolicies: boolean): string[] {
    return this.store.read((v) =>
      v.networks
        .values()
        .filter((n) => {
          if (readsPolicies) v.flushNetwork(n);
          return match(n);
        })
        .map((n) => n.ID!),
    );
  }

  getNetwork(id: string): HcnNetwork | undefined {
    return this.store.read((v) => {
      const n = v.network(id);
      if (!n) return undefined;
      v.flushNetwork(n);
      return structuredClone(n);
    });
  }

  /** A network (by ID, else by name) without its policies (what an endpoint needs of it): O(1) however many it holds. */
  getNetworkHead(ref: { id?: string; name?: string }): HcnNetwork | undefined {
    return this.store.read((v) => {
      const n = ref.id !== undefined ? v.network(ref.id) : v.networks.values().find((x) => x.Name === ref.name);
      if (!n) return undefined;
      const { Policies: _policies, ...head } = n;
      return structuredClone(head);
    });
  }

  hasNetwork(id: string): boolean {
    return this.store.read((v) => v.network(id) !== undefined);
  }

  getNetworkByName(name: string): HcnNetwork | undefined {
    return this.store.read((v) => {
      const n = v.networks.values().find((x) => x.Name === name);
      if (!n) return undefined;
      v.flushNetwork(n);
      return structuredClone(n);
    });
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
   * HcnModifyNetwork with ResourceType Policy (0x803B0012 exists, 0x803B0008 missing, 0x803B000D malformed;
   * SetPolicy IP sets as ./acl-objects.ts says), batched as the state file's `policyBatches` says: a `partial`
   * refusal is thrown after its prefix is stored. `version`: the HNS version the call is judged by.
   */
  modifyNetworkPolicies(op: string, id: string, requestType: string, policies: HcnPolicy[], version = this.versionOrNewest()): void {
    const refusal = this.store.change((v) => objects.modifyNetworkPolicies(v, op, id, requestType, policies, version));
    if (refusal) throw refusal;
  }

  /** HcnModifyEndpoint with ResourceType Policy: ACL rules added or removed (./acl-objects.ts modifyEndpointAcls). */
  modifyEndpointPolicies(op: string, id: string, requestType: string, policies: HcnPolicy[], version = this.versionOrNewest()): void {
    this.store.change((v) => modifyEndpointAcls(v, op, id, requestType, policies, version));
  }

  /** The version the state file names (`hnsVersion`), if it names one. */
  hnsVersion(): HnsVersion | undefined {
    this.store.refresh();
    return parseHnsVersion(this.store.peek().hnsVersion);
  }

  private versionOrNewest(): HnsVersion {
    return this.hnsVersion() ?? NEWEST_HNS_VERSION;
  }

  listEndpoints(): HcnEndpoint[] {
    return structuredClone(this.document().endpoints);
  }

  /** IDs of the endpoints `match` accepts (it may read an endpoint's Policies only when `readsPolicies`). */
  endpointIds(match: (e: HcnEndpoint) => boolean, readsPolicies = false): string[] {
    return this.store.read((v) =>
      v.endpoints
        .values()
        .filter((e) => {
          if (readsPolicies) v.flushEndpoint(e);
          return match(e);
        })
        .map((e) => e.ID!),
    );
  }

  getEndpoint(id: string): HcnEndpoint | undefined {
    return this.store.read((v) => {
      const e = v.endpoint(id);
      if (!e) return undefined;
      v.flushEndpoint(e);
      return structuredClone(e);
    });
  }

  hasEndpoint(id: string): boolean {
    return this.store.read((v) => v.endpoint(id) !== undefined);
  }

  /** HcnCreateEndpoint: allocates an IP from the network's first subnet and a MAC when not given. */
  createEndpoint(op: string, networkId: string, settings: HcnEndpoint, id?: string, version = this.versionOrNewest()): HcnEndpoint {
    return this.store.change((v) => objects.createEndpoint(v, this.ids, op, networkId, settings, version, id));
  }

  /** HcnDeleteEndpoint / DELETE /endpoints/<id>. 0x803B0002 when missing. */
  deleteEndpoint(op: string, id: string): void {
    this.store.change((v) => objects.deleteEndpoint(v, op, id));
  }

  isAttachedToHost(id: string): boolean {
    return this.store.read((v) => objects.isAttachedToHost(v, id));
  }

  /** Attach to the host compartment: a new adapter `vEthernet (<name>)` with the endpoint's IP. */
  attachEndpointToHost(op: string, id: string): SimAdapter {
    return this.store.change((v) => objects.attachEndpointToHost(v, this.ids, op, id));
  }

  /**
   * The "HNS restarted" fault (./objects.ts restartHns): endpoints, their vNICs, added policies and the
   * non-persistent networks are gone, and the HNS service runs in a new instance. kube-proxy's load balancers
   * are gone until `rehydrateLoadBalancers` (HNS restores them: ./load-balancers.ts).
   */
  restartHns(): objects.HnsRestartEffects & { loadBalancersRehydrating: number } {
    return this.store.update((s) => ({ ...objects.restartHns(s), loadBalancersRehydrating: loadBalancers.holdForRehydration(s) }));
  }

  /** HNS has restored the load balancers an HNS restart took away (./load-balancers.ts). Returns how many came back. */
  rehydrateLoadBalancers(): number {
    return this.store.update((s) => loadBalancers.rehydrateLoadBalancers(s));
  }

  // ---------------------------------------------------------------- load balancers (./load-balancers.ts)

  /** IDs of the load balancers `match` accepts. */
  loadBalancerIds(match: (lb: HcnLoadBalancer) => boolean): string[] {
    this.store.refresh();
    return (this.store.peek().loadBalancers ?? []).filter(match).map((lb) => lb.ID ?? '');
  }

  getLoadBalancer(id: string): HcnLoadBalancer | undefined {
    this.store.refresh();
    const lb = loadBalancers.findLoadBalancer(this.store.peek(), id);
    return lb && structuredClone(lb);
  }

  createLoadBalancer(op: string, settings: Record<string, unknown>, id?: string): HcnLoadBalancer {
    return this.store.update((s) => loadBalancers.createLoadBalancer(s, this.ids, op, settings, id));
  }

  modifyLoadBalancer(op: string, id: string, settings: Record<string, unknown>, version = this.versionOrNewest()): void {
    this.store.update((s) => loadBalancers.modifyLoadBalancer(s, op, id, settings, version));
  }

  deleteLoadBalancer(op: string, id: string): void {
    this.store.update((s) => loadBalancers.deleteLoadBalancer(s, op, id));
  }

  /** A Windows service restarted through the service control manager (./host.ts restartService): counted per name. */
  restartService(name: string): number {
    return this.store.update((s) => {
      const n = (s.serviceRestarts?.[name] ?? 0) + 1;
      s.serviceRestarts = { ...s.serviceRestarts, [name]: n };
      return n;
    });
  }

  /** How often `name` was restarted. */
  serviceRestarts(name: string): number {
    this.store.refresh();
    return this.store.peek().serviceRestarts?.[name] ?? 0;
  }

  /** The HNS service's instance (what the host reports as its process; ./host.ts). */
  hnsInstance(): number {
    this.store.refresh();
    return this.store.peek().hnsInstance ?? 1;
  }

  // ---------------------------------------------------------------- HNS namespaces (./namespaces.ts)

  /** Every namespace with the endpoints in it (HcnQueryNamespaceProperties of each). */
  listNamespaces(): namespaces.HcnNamespaceProperties[] {
    return this.store.read((v) => v.namespaces.values().map((n) => namespaces.namespaceProperties(v, n)));
  }

  getNamespace(id: string): namespaces.HcnNamespaceProperties | undefined {
    return this.store.read((v) => {
      const n = v.namespace(id);
      return n && namespaces.namespaceProperties(v, n);
    });
  }

  createNamespace(op: string, settings: Record<string, unknown>, id?: string): namespaces.SimNamespace {
    return this.store.change((v) => namespaces.createNamespace(v, this.ids, op, settings, id));
  }

  /** HcnModifyNamespace: add or remove an endpoint. 0x80070490 for a missing namespace. */
  modifyNamespace(op: string, id: string, request: Record<string, unknown>): void {
    this.store.change((v) => namespaces.modifyNamespace(v, op, id, request));
  }

  deleteNamespace(op: string, id: string): void {
    this.store.change((v) => namespaces.deleteNamespace(v, op, id));
  }

  // ---------------------------------------------------------------- routes, adapters

  listRoutes(interfaceIndex?: number): SimRoute[] {
    return this.document()
      .routes.filter((r) => interfaceIndex === undefined || r.InterfaceIndex === interfaceIndex)
      .map((r) => ({ ...r }));
  }

  /** CreateIpForwardEntry2: RouteError 1168 for an unknown interface, 5010 for an existing route. */
  createRoute(route: SimRoute): void {
    this.store.change((v) => createRoute(v, route));
  }

  /** DeleteIpForwardEntry2: RouteError 1168 when no such route. */
  deleteRoute(route: SimRoute): void {
    this.store.change((v) => deleteRoute(v, route));
  }

  defaultRouteInterfaceIndex(): number | undefined {
    return this.store.read((v) => v.defaultRoute()?.InterfaceIndex);
  }

  listAdapters(): SimAdapter[] {
    this.store.refresh();
    return this.store.peek().adapters.map((a) => ({ ...a }));
  }

  /** SetIpInterfaceEntry(ForwardingEnabled). HostError FLANNEL_ERR_HOST (status 1168) for an unknown index. */
  setForwarding(interfaceIndex: number, enabled: boolean, family: IpFamily = 'ipv4'): void {
    this.store.change((v) => {
      const a = adapterOrThrow(v.doc, 'SetIpInterfaceEntry', interfaceIndex);
      if (family === 'ipv6') a.ForwardingV6 = enabled;
      else a.Forwarding = enabled;
    });
  }

  /** CreateUnicastIpAddressEntry (./host.ts addUnicastAddress). */
  addUnicastAddress(interfaceIndex: number, address: string, prefixLength: number): void {
    this.store.change((v) => addUnicastAddress(v.doc, interfaceIndex, address, prefixLength));
  }

  /** SetInterfaceDnsSettings(NameServer). HostError FLANNEL_ERR_HOST (status 1168) for an unknown index. */
  setDnsServers(interfaceIndex: number, servers: readonly string[]): void {
    this.store.change((v) => {
      adapterOrThrow(v.doc, 'SetInterfaceDnsSettings', interfaceIndex).DnsServers = [...servers];
    });
  }

  /** IPv6 forwarding is a flag of its own (the AF_INET6 MIB_IPINTERFACE_ROW), off until set. */
  getForwarding(interfaceIndex: number, family: IpFamily = 'ipv4'): boolean {
    this.store.refresh();
    const a = adapterOrThrow(this.store.peek(), 'GetIpInterfaceEntry', interfaceIndex);
    return family === 'ipv6' ? a.ForwardingV6 === true : a.Forwarding;
  }
}

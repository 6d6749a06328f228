// The simulated Windows node: one in-memory model (HNS networks/endpoints in the HCN v2 schema, the IPv4
// route table, the host adapters) shared by the simulated HNS transport, route table and host, persisted
// to one JSON file (ARCHITECTURE.md "Simulated dataplane state file"). Models what HNS does on Windows
// (hcsshim hcn/hcnnetwork.go, hcnendpoint.go, internal/hns/hnsnetwork.go, hnsendpoint.go describe the
// objects): IDs, the host vNIC move, ProviderAddress/DrMacAddress policies and HNS's HRESULTs.
import * as nodeFs from 'node:fs';
import { writeFileAtomicSync } from '../fs-atomic.js';
import { parseDataplaneState } from './state-file.js';
import { FlannelError, RouteError, errorMessage } from '../errors.js';
import type { ErrorContext } from '../errors.js';
import { HRESULT, hnsError, hresultText } from '../hns/errors.js';
import type { HcnEndpoint, HcnNetwork, HcnPolicy } from '../hns/schema.js';
import { HCN_SCHEMA_V2, policySetting, sameId } from '../hns/schema.js';
import { systemClock } from '../clock.js';
import type { Clock } from '../clock.js';

/** A route as the state file stores it (iphlpapi's MIB_IPFORWARD_ROW2, reduced). */
export interface SimRoute {
  DestinationPrefix: string;
  NextHop: string;
  InterfaceIndex: number;
  Metric: number;
}

/** A host network adapter. `IPAddress` is '' when the adapter carries no IPv4 (bound to a vSwitch). */
export interface SimAdapter {
  Name: string;
  InterfaceIndex: number;
  IPAddress: string;
  PrefixLength: number;
  Mtu: number;
  Forwarding: boolean;
}

/** The state file document. */
export interface DataplaneState {
  networks: HcnNetwork[];
  endpoints: HcnEndpoint[];
  routes: SimRoute[];
  adapters: SimAdapter[];
}

/** The file-system calls the dataplane makes (node:fs by default). */
export interface DataplaneFs {
  readFileSync(file: string, encoding: 'utf8'): string;
  writeFileSync(file: string, data: string): void;
  renameSync(from: string, to: string): void;
  mkdirSync(dir: string, options: { recursive: true }): unknown;
}

/** Which seam a call belongs to: decides the latency used and the error type injected failures raise. */
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
  /** Persist to this JSON file (loaded when it exists). No file = memory only. */
  statePath?: string;
  /** IPv4 of the physical adapter when starting from scratch. Default 10.0.0.2. */
  nodeIP?: string;
  fs?: DataplaneFs;
  /** [0,1) source for IDs, MACs and failRate. Default Math.random. */
  random?: () => number;
  latency?: DataplaneLatency;
  clock?: Clock;
}

export const PHYSICAL_ADAPTER = 'Ethernet';
export const PHYSICAL_ADAPTER_INDEX = 4;
const VSWITCH_TYPES = new Set(['l2bridge', 'overlay']);

interface FailRule {
  op: string | RegExp;
  hresult: number;
  remaining: number;
}

interface StallRule {
  op: string | RegExp;
  ms: number;
  remaining: number;
}

function opMatches(pattern: string | RegExp, op: string): boolean {
  if (typeof pattern === 'string') return op === pattern || op.startsWith(pattern + ' ');
  pattern.lastIndex = 0;
  return pattern.test(op);
}

// ---- small IPv4 helpers (private to the model) ----

function ipToInt(ip: string): number {
  const parts = ip.split('.').map(Number);
  return (((parts[0]! << 24) | (parts[1]! << 16) | (parts[2]! << 8) | parts[3]!) >>> 0) as number;
}

function intToIp(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

function parseCidr(cidr: string): { base: number; bits: number } | undefined {
  const m = /^(\d+\.\d+\.\d+\.\d+)\/(\d+)$/.exec(cidr);
  if (!m) return undefined;
  const bits = Number(m[2]);
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  return { base: (ipToInt(m[1]!) & mask) >>> 0, bits };
}

function inCidr(ip: string, cidr: string): boolean {
  const c = parseCidr(cidr);
  if (!c) return false;
  const mask = c.bits === 0 ? 0 : (0xffffffff << (32 - c.bits)) >>> 0;
  return ((ipToInt(ip) & mask) >>> 0) === c.base;
}

/** Deep equality of JSON values, key order ignored (policy identity). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    return a.length === bb.length && a.every((v, i) => jsonEqual(v, bb[i]));
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  const ak = Object.keys(ao).filter((k) => ao[k] !== undefined);
  const bk = Object.keys(bo).filter((k) => bo[k] !== undefined);
  return ak.length === bk.length && ak.every((k) => jsonEqual(ao[k], bo[k]));
}


function isVSwitchType(type: string): boolean {
  return VSWITCH_TYPES.has(type.toLowerCase());
}


export class SimulatedDataplane {
  /** Calls per operation name (`HcnCreateNetwork`, `HNSCall GET /networks/`, `CreateIpForwardEntry2`, ...). */
  readonly calls = new Map<string, number>();
  /** HCN handles currently open (HnsClient must bring this back to 0). */
  openHandles = 0;

  private state: DataplaneState;
  private readonly statePath: string | undefined;
  private readonly fs: DataplaneFs;
  private readonly random: () => number;
  private readonly clock: Clock;
  private readonly latency: Required<DataplaneLatency>;
  private readonly defaultNodeIP: string;
  private nextIndex: number;
  private failRules: FailRule[] = [];
  private stallRules: StallRule[] = [];
  private rate: { probability: number; hresult: number; op?: string | RegExp } | undefined;
  /** The document the state file holds (last written or loaded): a failed write rolls the model back to it. */
  private persisted: string | undefined;

  constructor(opts: SimulatedDataplaneOptions = {}) {
    this.statePath = opts.statePath;
    this.fs = opts.fs ?? nodeFs;
    this.random = opts.random ?? Math.random;
    this.clock = opts.clock ?? systemClock;
    this.latency = { hnsCallMs: 0, hnsPerItemMs: 0, routeCallMs: 0, ...opts.latency };
    this.defaultNodeIP = opts.nodeIP ?? '10.0.0.2';
    const loaded = this.load();
    this.state = loaded ?? this.initialState();
    this.nextIndex =
      Math.max(
        PHYSICAL_ADAPTER_INDEX,
        ...this.state.adapters.map((a) => a.InterfaceIndex),
        ...this.state.routes.map((r) => r.InterfaceIndex),
      ) + 1;
    if (!loaded) this.persist();
  }

  // ---------------------------------------------------------------- state, persistence

  private initialState(): DataplaneState {
    const ip = this.defaultNodeIP;
    const gw = intToIp(((ipToInt(ip) & 0xffffff00) >>> 0) + 1);
    return {
      networks: [],
      endpoints: [],
      routes: [{ DestinationPrefix: '0.0.0.0/0', NextHop: gw, InterfaceIndex: PHYSICAL_ADAPTER_INDEX, Metric: 0 }],
      adapters: [
        { Name: PHYSICAL_ADAPTER, InterfaceIndex: PHYSICAL_ADAPTER_INDEX, IPAddress: ip, PrefixLength: 24, Mtu: 1500, Forwarding: false },
      ],
    };
  }

  private load(): DataplaneState | undefined {
    if (!this.statePath) return undefined;
    let text: string;
    try {
      text = this.fs.readFileSync(this.statePath, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new FlannelError(
        'FLANNEL_ERR_DATAPLANE_STATE',
        `cannot read the simulated dataplane state file ${this.statePath}: ${errorMessage(err)}; fix its permissions or pass another --dataplane-state`,
        { file: this.statePath },
        { cause: err },
      );
    }
    const parsed = parseDataplaneState(text, this.statePath);
    this.persisted = text;
    return parsed;
  }

  /** Write the state atomically (temp file + rename). No-op without a state path. */
  private persist(): void {
    if (!this.statePath) return;
    const file = this.statePath;
    const text = JSON.stringify(this.state, null, 2) + '\n';
    try {
      writeFileAtomicSync(file, text, this.fs);
      this.persisted = text;
    } catch (err) {
      // The call fails as a whole: the model goes back to what its file holds (what a restart would see).
      if (this.persisted !== undefined) this.state = JSON.parse(this.persisted) as DataplaneState;
      throw new FlannelError(
        'FLANNEL_ERR_DATAPLANE_STATE',
        `cannot write the simulated dataplane state file ${file}: ${errorMessage(err)}; check the directory is writable`,
        { file },
        { cause: err },
      );
    }
  }

  /** Deep copy of the whole state (what the state file holds). */
  snapshot(): DataplaneState {
    return structuredClone(this.state);
  }

  /** The node's IP: on the adapter holding the default route (vEthernet once a vSwitch exists). */
  get nodeIP(): string {
    const idx = this.defaultRoute()?.InterfaceIndex;
    const a = this.state.adapters.find((x) => x.InterfaceIndex === idx && x.IPAddress !== '');
    return a?.IPAddress ?? this.defaultNodeIP;
  }

  // ---------------------------------------------------------------- injection

  /** Make the next `count` calls matching `op` fail with `hresult` (a NETIO status for route/host calls). */
  failNext(op: string | RegExp, hresult: number, count = 1): void {
    this.failRules.push({ op, hresult, remaining: count });
  }

  /** Fail each matching call (all calls without `op`) with probability `probability`; 0 turns it off. */
  failRate(probability: number, hresult: number, op?: string | RegExp): void {
    this.rate = probability > 0 ? { probability, hresult, op } : undefined;
  }

  /** The next `count` calls matching `op` take `ms` longer (a hung HNS, the vSwitch connectivity blip). */
  stall(op: string | RegExp, ms: number, count = 1): void {
    this.stallRules.push({ op, ms, remaining: count });
  }

  /** Forget all injected failures and stalls. */
  clearInjections(): void {
    this.failRules = [];
    this.stallRules = [];
    this.rate = undefined;
  }

  /**
   * Every seam call starts here: count it, sleep the modelled latency (+ stalls), then maybe fail.
   * `items` = policies in a modify or objects returned by a list/enumerate.
   */
  async enter(op: string, kind: CallKind, items = 0): Promise<void> {
    this.calls.set(op, (this.calls.get(op) ?? 0) + 1);
    let delay = kind === 'hns' ? this.latency.hnsCallMs + this.latency.hnsPerItemMs * items : kind === 'route' ? this.latency.routeCallMs : 0;
    const stall = this.stallRules.find((r) => r.remaining > 0 && opMatches(r.op, op));
    if (stall) {
      stall.remaining--;
      delay += stall.ms;
      this.stallRules = this.stallRules.filter((r) => r.remaining > 0);
    }
    if (delay > 0) await this.clock.sleep(delay);
    let code: number | undefined;
    const rule = this.failRules.find((r) => r.remaining > 0 && opMatches(r.op, op));
    if (rule) {
      rule.remaining--;
      code = rule.hresult;
      this.failRules = this.failRules.filter((r) => r.remaining > 0);
    } else if (this.rate && (this.rate.op === undefined || opMatches(this.rate.op, op)) && this.random() < this.rate.probability) {
      code = this.rate.hresult;
    }
    if (code === undefined) return;
    if (kind === 'hns') throw hnsError(op, code, hresultText(code) ?? 'injected failure', { injected: true });
    if (kind === 'route') throw new RouteError(`${op} failed with status ${code} (injected failure); the route is retried on the next reconcile`, { op, status: code, injected: true });
    throw new FlannelError('FLANNEL_ERR_HOST', `${op} failed with status ${code} (injected failure)`, { op, status: code, injected: true });
  }

  // ---------------------------------------------------------------- ids, MACs

  /** Upper-case GUID from the injected random source. */
  newGuid(): string {
    const hexDigits = (n: number) => Array.from({ length: n }, () => Math.floor(this.random() * 16).toString(16)).join('');
    const variant = (8 + Math.floor(this.random() * 4)).toString(16);
    return `${hexDigits(8)}-${hexDigits(4)}-4${hexDigits(3)}-${variant}${hexDigits(3)}-${hexDigits(12)}`.toUpperCase();
  }

  /** A Hyper-V MAC `00-15-5D-XX-XX-XX`. */
  newMac(): string {
    const byte = () => Math.floor(this.random() * 256).toString(16).toUpperCase().padStart(2, '0');
    return `00-15-5D-${byte()}-${byte()}-${byte()}`;
  }

  private newInterfaceIndex(): number {
    return this.nextIndex++;
  }

  // ---------------------------------------------------------------- networks

  listNetworks(): HcnNetwork[] {
    return structuredClone(this.state.networks);
  }

  getNetwork(id: string): HcnNetwork | undefined {
    const n = this.state.networks.find((x) => sameId(x.ID, id));
    return n && structuredClone(n);
  }

  getNetworkByName(name: string): HcnNetwork | undefined {
    const n = this.state.networks.find((x) => x.Name === name);
    return n && structuredClone(n);
  }

  /**
   * HcnCreateNetwork semantics. `id` undefined or the zero GUID: HNS picks one. Throws HnsError
   * (0x803B0010 duplicate name/ID, 0x80070057 bad settings).
   */
  createNetwork(op: string, settings: HcnNetwork, id?: string): HcnNetwork {
    const ctx: ErrorContext = { network: settings?.Name };
    if (typeof settings !== 'object' || settings === null || typeof settings.Name !== 'string' || settings.Name === '' || typeof settings.Type !== 'string') {
      throw hnsError(op, HRESULT.E_INVALIDARG, 'The parameter is incorrect. (Name and Type are required)', ctx);
    }
    if (this.state.networks.some((n) => n.Name === settings.Name)) {
      throw hnsError(op, HRESULT.HCN_E_NETWORK_ALREADY_EXISTS, hresultText(HRESULT.HCN_E_NETWORK_ALREADY_EXISTS), ctx);
    }
    const useId = id && !/^0{8}-0{4}-0{4}-0{4}-0{12}$/.test(id) ? id.toUpperCase() : this.newGuid();
    if (this.state.networks.some((n) => sameId(n.ID, useId))) {
      throw hnsError(op, HRESULT.HCN_E_NETWORK_ALREADY_EXISTS, `A network with ID ${useId} already exists.`, ctx);
    }
    const net: HcnNetwork = structuredClone(settings);
    net.ID = useId;
    net.SchemaVersion = net.SchemaVersion ?? { ...HCN_SCHEMA_V2 };
    net.Flags = net.Flags ?? 0;
    net.Policies = [...(net.Policies ?? [])];
    for (const p of net.Policies) {
      if (typeof p !== 'object' || p === null || typeof p.Type !== 'string') {
        throw hnsError(op, HRESULT.E_INVALIDARG, 'The parameter is incorrect. (policy without Type)', ctx);
      }
    }
    if (isVSwitchType(net.Type)) {
      const wanted = policySetting(net.Policies, 'NetAdapterName', 'NetworkAdapterName');
      const phys = this.physicalAdapterFor(wanted);
      if (!phys) {
        throw hnsError(op, HRESULT.E_INVALIDARG, `The network adapter '${wanted ?? '(default)'}' is not present on this host.`, ctx);
      }
      if (!wanted) net.Policies.push({ Type: 'NetAdapterName', Settings: { NetworkAdapterName: phys.Name } });
      const vnic = this.ensureVSwitch(phys);
      if (!net.Policies.some((p) => p.Type === 'ProviderAddress')) {
        net.Policies.push({ Type: 'ProviderAddress', Settings: { ProviderAddress: vnic.IPAddress } });
      }
      if (net.Type.toLowerCase() === 'overlay' && !net.Policies.some((p) => p.Type === 'DrMacAddress')) {
        net.Policies.push({ Type: 'DrMacAddress', Settings: { Address: this.newMac() } });
      }
    }
    this.state.networks.push(net);
    this.persist();
    return structuredClone(net);
  }

  /** The physical adapter a vSwitch network binds to: by name, else the one with the node's IP / default route. */
  private physicalAdapterFor(name: string | undefined): SimAdapter | undefined {
    if (name) return this.state.adapters.find((a) => a.Name === name && !a.Name.startsWith('vEthernet ('));
    const idx = this.defaultRoute()?.InterfaceIndex;
    const byRoute = this.state.adapters.find((a) => a.InterfaceIndex === idx);
    if (byRoute) {
      const m = /^vEthernet \((.*)\)$/.exec(byRoute.Name);
      return m ? this.state.adapters.find((a) => a.Name === m[1]) : byRoute;
    }
    return this.state.adapters.find((a) => a.Name === PHYSICAL_ADAPTER);
  }

  /**
   * Build the vSwitch on `phys` once: move its IP and default route to `vEthernet (<phys>)` with a new index.
   * Its other routes are lost, as on Windows: among them a cloud image's route to the metadata server
   * 169.254.169.254 (sig-windows-tools hostprocess/flannel/flanneld/start.ps1 re-adds it for that reason).
   */
  private ensureVSwitch(phys: SimAdapter): SimAdapter {
    const name = `vEthernet (${phys.Name})`;
    const existing = this.state.adapters.find((a) => a.Name === name);
    if (existing) return existing;
    const vnic: SimAdapter = {
      Name: name,
      InterfaceIndex: this.newInterfaceIndex(),
      IPAddress: phys.IPAddress,
      PrefixLength: phys.PrefixLength,
      Mtu: phys.Mtu,
      Forwarding: false,
    };
    phys.IPAddress = '';
    phys.PrefixLength = 0;
    this.state.adapters.push(vnic);
    this.state.routes = this.state.routes.flatMap((r) => {
      if (r.InterfaceIndex !== phys.InterfaceIndex) return [r];
      return r.DestinationPrefix === '0.0.0.0/0' ? [{ ...r, InterfaceIndex: vnic.InterfaceIndex }] : [];
    });
    return vnic;
  }

  /** Tear the vSwitch down: the IP and default route go back to the physical adapter; the vNIC's routes go. */
  private removeVSwitch(physName: string): void {
    const vnic = this.state.adapters.find((a) => a.Name === `vEthernet (${physName})`);
    const phys = this.state.adapters.find((a) => a.Name === physName);
    if (!vnic) return;
    if (phys) {
      phys.IPAddress = vnic.IPAddress;
      phys.PrefixLength = vnic.PrefixLength;
    }
    this.state.routes = this.state.routes.flatMap((r) => {
      if (r.InterfaceIndex !== vnic.InterfaceIndex) return [r];
      return r.DestinationPrefix === '0.0.0.0/0' && phys ? [{ ...r, InterfaceIndex: phys.InterfaceIndex }] : [];
    });
    this.state.adapters = this.state.adapters.filter((a) => a !== vnic);
  }

  /** HcnDeleteNetwork / DELETE /networks/<id>: also removes its endpoints. 0x803B0001 when missing. */
  deleteNetwork(op: string, id: string): void {
    const net = this.state.networks.find((n) => sameId(n.ID, id));
    if (!net) throw hnsError(op, HRESULT.HCN_E_NETWORK_NOT_FOUND, hresultText(HRESULT.HCN_E_NETWORK_NOT_FOUND), { networkId: id });
    for (const ep of this.state.endpoints.filter((e) => sameId(e.HostComputeNetwork, net.ID))) this.dropEndpoint(ep);
    this.state.networks = this.state.networks.filter((n) => n !== net);
    if (isVSwitchType(net.Type)) {
      const adapter = policySetting(net.Policies, 'NetAdapterName', 'NetworkAdapterName') ?? PHYSICAL_ADAPTER;
      const stillUsed = this.state.networks.some(
        (n) => isVSwitchType(n.Type) && (policySetting(n.Policies, 'NetAdapterName', 'NetworkAdapterName') ?? PHYSICAL_ADAPTER) === adapter,
      );
      if (!stillUsed) this.removeVSwitch(adapter);
    }
    this.persist();
  }

  /**
   * HcnModifyNetwork with ResourceType Policy. Atomic: Add fails with 0x803B0012 if any policy is already
   * there (or repeated), Remove fails with 0x80070490 if any is missing; nothing changes then.
   */
  modifyNetworkPolicies(op: string, id: string, requestType: string, policies: HcnPolicy[]): void {
    const net = this.state.networks.find((n) => sameId(n.ID, id));
    const ctx: ErrorContext = { networkId: id };
    if (!net) throw hnsError(op, HRESULT.HCN_E_NETWORK_NOT_FOUND, hresultText(HRESULT.HCN_E_NETWORK_NOT_FOUND), ctx);
    if (!Array.isArray(policies) || policies.some((p) => typeof p !== 'object' || p === null || typeof p.Type !== 'string')) {
      throw hnsError(op, HRESULT.E_INVALIDARG, 'The parameter is incorrect. (Settings.Policies must be [{Type, Settings}])', ctx);
    }
    const current = net.Policies ?? [];
    if (requestType === 'Add') {
      for (let i = 0; i < policies.length; i++) {
        const p = policies[i]!;
        if (current.some((c) => jsonEqual(c, p)) || policies.slice(0, i).some((q) => jsonEqual(q, p))) {
          throw hnsError(op, HRESULT.HCN_E_POLICY_ALREADY_EXISTS, hresultText(HRESULT.HCN_E_POLICY_ALREADY_EXISTS), { ...ctx, policyType: p.Type });
        }
      }
      net.Policies = [...current, ...structuredClone(policies)];
    } else if (requestType === 'Remove') {
      const left = [...current];
      for (const p of policies) {
        const i = left.findIndex((c) => jsonEqual(c, p));
        if (i < 0) throw hnsError(op, HRESULT.E_NOT_FOUND, hresultText(HRESULT.E_NOT_FOUND), { ...ctx, policyType: p.Type });
        left.splice(i, 1);
      }
      net.Policies = left;
    } else {
      throw hnsError(op, HRESULT.E_INVALIDARG, `The parameter is incorrect. (RequestType ${requestType} is not modelled)`, ctx);
    }
    this.persist();
  }

  // ---------------------------------------------------------------- endpoints

  listEndpoints(): HcnEndpoint[] {
    return structuredClone(this.state.endpoints);
  }

  getEndpoint(id: string): HcnEndpoint | undefined {
    const e = this.state.endpoints.find((x) => sameId(x.ID, id));
    return e && structuredClone(e);
  }

  /** HcnCreateEndpoint: allocates an IP from the network's first subnet and a MAC when not given. */
  createEndpoint(op: string, networkId: string, settings: HcnEndpoint, id?: string): HcnEndpoint {
    const ctx: ErrorContext = { networkId, endpoint: settings?.Name };
    const net = this.state.networks.find((n) => sameId(n.ID, networkId));
    if (!net) throw hnsError(op, HRESULT.HCN_E_NETWORK_NOT_FOUND, hresultText(HRESULT.HCN_E_NETWORK_NOT_FOUND), ctx);
    if (typeof settings !== 'object' || settings === null || typeof settings.Name !== 'string') {
      throw hnsError(op, HRESULT.E_INVALIDARG, 'The parameter is incorrect. (Name is required)', ctx);
    }
    const useId = id && !/^0{8}-0{4}-0{4}-0{4}-0{12}$/.test(id) ? id.toUpperCase() : this.newGuid();
    if (this.state.endpoints.some((e) => sameId(e.ID, useId))) {
      throw hnsError(op, HRESULT.E_INVALIDARG, `An endpoint with ID ${useId} already exists.`, ctx);
    }
    const ep: HcnEndpoint = structuredClone(settings);
    ep.ID = useId;
    ep.HostComputeNetwork = net.ID;
    ep.SchemaVersion = ep.SchemaVersion ?? { ...HCN_SCHEMA_V2 };
    ep.Flags = ep.Flags ?? 0;
    ep.Policies = ep.Policies ?? [];
    ep.MacAddress = ep.MacAddress || this.newMac();
    if (!ep.IpConfigurations?.length) {
      const alloc = this.allocateIp(net);
      if (alloc) ep.IpConfigurations = [alloc];
    }
    this.state.endpoints.push(ep);
    this.persist();
    return structuredClone(ep);
  }

  private allocateIp(net: HcnNetwork): { IpAddress: string; PrefixLength: number } | undefined {
    const subnet = net.Ipams?.[0]?.Subnets?.[0]?.IpAddressPrefix;
    const c = subnet ? parseCidr(subnet) : undefined;
    if (!c) return undefined;
    const used = new Set(
      this.state.endpoints.filter((e) => sameId(e.HostComputeNetwork, net.ID)).flatMap((e) => (e.IpConfigurations ?? []).map((i) => i.IpAddress)),
    );
    const size = 2 ** (32 - c.bits);
    for (let off = 2; off < size - 1; off++) {
      const ip = intToIp(c.base + off);
      if (!used.has(ip)) return { IpAddress: ip, PrefixLength: c.bits };
    }
    return undefined;
  }

  /** HcnDeleteEndpoint / DELETE /endpoints/<id>. 0x803B0002 when missing. */
  deleteEndpoint(op: string, id: string): void {
    const ep = this.state.endpoints.find((e) => sameId(e.ID, id));
    if (!ep) throw hnsError(op, HRESULT.HCN_E_ENDPOINT_NOT_FOUND, hresultText(HRESULT.HCN_E_ENDPOINT_NOT_FOUND), { endpointId: id });
    this.dropEndpoint(ep);
    this.persist();
  }

  private dropEndpoint(ep: HcnEndpoint): void {
    const adapter = this.hostAdapterOf(ep);
    if (adapter) {
      this.state.adapters = this.state.adapters.filter((a) => a !== adapter);
      this.state.routes = this.state.routes.filter((r) => r.InterfaceIndex !== adapter.InterfaceIndex);
    }
    this.state.endpoints = this.state.endpoints.filter((e) => e !== ep);
  }

  private hostAdapterOf(ep: HcnEndpoint): SimAdapter | undefined {
    return this.state.adapters.find((a) => a.Name === `vEthernet (${ep.Name})`);
  }

  isAttachedToHost(id: string): boolean {
    const ep = this.state.endpoints.find((e) => sameId(e.ID, id));
    return ep !== undefined && this.hostAdapterOf(ep) !== undefined;
  }

  /** Attach to the host compartment: a new adapter `vEthernet (<name>)` with the endpoint's IP. */
  attachEndpointToHost(op: string, id: string): SimAdapter {
    const ep = this.state.endpoints.find((e) => sameId(e.ID, id));
    if (!ep) throw hnsError(op, HRESULT.HCN_E_ENDPOINT_NOT_FOUND, hresultText(HRESULT.HCN_E_ENDPOINT_NOT_FOUND), { endpointId: id });
    if (this.hostAdapterOf(ep)) {
      throw hnsError(op, HRESULT.HCN_E_ENDPOINT_ALREADY_ATTACHED, hresultText(HRESULT.HCN_E_ENDPOINT_ALREADY_ATTACHED), { endpointId: id, endpoint: ep.Name });
    }
    const ipc = ep.IpConfigurations?.[0];
    const adapter: SimAdapter = {
      Name: `vEthernet (${ep.Name})`,
      InterfaceIndex: this.newInterfaceIndex(),
      IPAddress: ipc?.IpAddress ?? '',
      PrefixLength: ipc?.PrefixLength ?? 0,
      Mtu: 1500,
      Forwarding: false,
    };
    this.state.adapters.push(adapter);
    this.persist();
    return { ...adapter };
  }

  // ---------------------------------------------------------------- routes

  listRoutes(interfaceIndex?: number): SimRoute[] {
    return this.state.routes.filter((r) => interfaceIndex === undefined || r.InterfaceIndex === interfaceIndex).map((r) => ({ ...r }));
  }

  /** CreateIpForwardEntry2: RouteError 1168 for an unknown interface, 5010 for an existing route. */
  createRoute(route: SimRoute): void {
    const ctx = { destination: route.DestinationPrefix, nextHop: route.NextHop, interfaceIndex: route.InterfaceIndex };
    if (!this.state.adapters.some((a) => a.InterfaceIndex === route.InterfaceIndex)) {
      throw new RouteError(`CreateIpForwardEntry2 failed with status 1168: no interface with index ${route.InterfaceIndex}; re-resolve the interface`, {
        ...ctx,
        status: 1168,
      });
    }
    if (this.state.routes.some((r) => sameRoute(r, route))) {
      throw new RouteError(`CreateIpForwardEntry2 failed with status 5010: the route already exists`, { ...ctx, status: 5010 });
    }
    this.state.routes.push({ ...route });
    this.persist();
  }

  /** DeleteIpForwardEntry2: RouteError 1168 when no such route. */
  deleteRoute(route: SimRoute): void {
    const i = this.state.routes.findIndex((r) => sameRoute(r, route));
    if (i < 0) {
      throw new RouteError(`DeleteIpForwardEntry2 failed with status 1168: no such route`, {
        destination: route.DestinationPrefix,
        nextHop: route.NextHop,
        interfaceIndex: route.InterfaceIndex,
        status: 1168,
      });
    }
    this.state.routes.splice(i, 1);
    this.persist();
  }

  private defaultRoute(): SimRoute | undefined {
    return this.state.routes.filter((r) => r.DestinationPrefix === '0.0.0.0/0').sort((a, b) => a.Metric - b.Metric)[0];
  }

  defaultRouteInterfaceIndex(): number | undefined {
    return this.defaultRoute()?.InterfaceIndex;
  }

  // ---------------------------------------------------------------- adapters

  listAdapters(): SimAdapter[] {
    return this.state.adapters.map((a) => ({ ...a }));
  }

  /** SetIpInterfaceEntry(ForwardingEnabled). FlannelError FLANNEL_ERR_HOST (status 1168) for an unknown index. */
  setForwarding(interfaceIndex: number, enabled: boolean): void {
    const a = this.adapterOrThrow('SetIpInterfaceEntry', interfaceIndex);
    if (a.Forwarding !== enabled) {
      a.Forwarding = enabled;
      this.persist();
    }
  }

  getForwarding(interfaceIndex: number): boolean {
    return this.adapterOrThrow('GetIpInterfaceEntry', interfaceIndex).Forwarding;
  }

  private adapterOrThrow(op: string, interfaceIndex: number): SimAdapter {
    const a = this.state.adapters.find((x) => x.InterfaceIndex === interfaceIndex);
    if (!a) {
      throw new FlannelError('FLANNEL_ERR_HOST', `${op} failed with status 1168: no interface with index ${interfaceIndex}; re-resolve the interface (its index changes when the vSwitch is created)`, {
        op,
        interfaceIndex,
        status: 1168,
      });
    }
    return a;
  }

  // ---------------------------------------------------------------- test helpers (behind the agent's back)

  /** Remove routes to `destinationPrefix` (on one interface, if given), bypassing injection. Returns how many. */
  removeRoute(destinationPrefix: string, interfaceIndex?: number): number {
    const before = this.state.routes.length;
    this.state.routes = this.state.routes.filter(
      (r) => !(r.DestinationPrefix === destinationPrefix && (interfaceIndex === undefined || r.InterfaceIndex === interfaceIndex)),
    );
    const removed = before - this.state.routes.length;
    if (removed) this.persist();
    return removed;
  }

  /** Add a route directly (a stale route left by someone else). */
  addRoute(route: SimRoute): void {
    this.state.routes.push({ ...route });
    this.persist();
  }

  /** Remove network policies matching `match` (a Type or a predicate) from the network with that name or ID. */
  removePolicy(network: string, match: string | ((p: HcnPolicy) => boolean)): number {
    const net = this.state.networks.find((n) => n.Name === network || sameId(n.ID, network));
    if (!net?.Policies) return 0;
    const pred = typeof match === 'string' ? (p: HcnPolicy) => p.Type === match : match;
    const before = net.Policies.length;
    net.Policies = net.Policies.filter((p) => !pred(p));
    const removed = before - net.Policies.length;
    if (removed) this.persist();
    return removed;
  }

  /** Add a network policy directly (a stale policy left by someone else). */
  addPolicy(network: string, policy: HcnPolicy): void {
    const net = this.state.networks.find((n) => n.Name === network || sameId(n.ID, network));
    if (!net) throw new Error(`no network ${network}`);
    (net.Policies ??= []).push(structuredClone(policy));
    this.persist();
  }

  /** Delete a network by name or ID as an operator would (Remove-HnsNetwork); false when none. */
  removeNetwork(network: string): boolean {
    const net = this.state.networks.find((n) => n.Name === network || sameId(n.ID, network));
    if (!net) return false;
    this.deleteNetwork('test', net.ID!);
    return true;
  }

  /** Arbitrary change to the state (persisted afterwards). */
  mutate(fn: (state: DataplaneState) => void): void {
    fn(this.state);
    this.persist();
  }
}

function sameRoute(a: SimRoute, b: SimRoute): boolean {
  return a.DestinationPrefix === b.DestinationPrefix && a.NextHop === b.NextHop && a.InterfaceIndex === b.InterfaceIndex;
}

/** True when `ip` lies in `cidr` (exported for the simulated transports). */
export function ipInCidr(ip: string, cidr: string): boolean {
  return inCidr(ip, cidr);
}

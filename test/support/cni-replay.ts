// Replay of recorded CNI plugin runs (test/fixtures/cni-traces, README "How a replay test can use them"):
// every HCN/HNS call the real win-overlay / win-bridge made, sent again in order through the stand-in DLLs'
// own seam (WindowsSimServer.answer: one `{fn, ...args}` request line, the flat reply a DLL returns) into a
// simulated node, each answer compared field by field with the recorded one. No Wine, no plugin binary.
//
// Placeholders (`<NETWORK_ID>`, `<ENDPOINT_ID_N>`, ...) are bound as the replay goes: from the live node
// before it starts, from the namespace created for an ADD, or from the first live reply where the
// recording has an unbound placeholder. Handles are bound from the replies that hand them out. MAC
// addresses HNS generated (the network's DrMacAddress, an endpoint's MacAddress no plugin sent) are bound
// on first sight and must stay consistent; a MAC a plugin sent is compared exactly. `names` maps a
// recorded network name to the live one (the SDN migration: `flannel.4096` recorded, `vxlan0` live).
// One function, replayScenario, takes a scenario file and bindings, so other networks (dual stack) can
// reuse it.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { HnsVersion } from '../../src/hns/schema.js';
import type { SimulatedDataplane } from '../../src/simulator/model.js';
import { WindowsSimServer } from '../windows/sim-server.js';

/** The recorded scenarios (jest runs from the repository root). */
export const TRACES_DIR = resolve('test', 'fixtures', 'cni-traces');

/** The twelve flannel scenarios, per backend, in the order they were recorded. */
export const SCENARIOS = {
  vxlan: ['vxlan-add', 'vxlan-del', 'vxlan-add-network-missing', 'vxlan-del-network-missing'],
  'host-gw': [
    'host-gw-add',
    'host-gw-add-second',
    'host-gw-add-third',
    'host-gw-del',
    'host-gw-del-second',
    'host-gw-del-third',
    'host-gw-add-network-missing',
    'host-gw-del-network-missing',
  ],
} as const;

export interface TraceCall {
  seq: number;
  process: string;
  fn: string;
  args: Record<string, unknown>;
  hresult: string;
  reply: Record<string, unknown>;
}

export interface TraceState {
  networks: unknown[];
  endpoints: unknown[];
  namespaces?: unknown[];
  /** kube-proxy recordings (test/fixtures/kube-proxy-traces): the node's load balancers. */
  loadBalancers?: unknown[];
}

export interface Trace {
  scenario: string;
  backend: 'vxlan' | 'host-gw' | null;
  network: string;
  command: 'ADD' | 'DEL';
  agent: { commit: string; flags: string[]; netConf: unknown } | null;
  inputs: {
    conflist?: Record<string, unknown>;
    stdin?: string;
    env: Record<string, string>;
    namespaceCreatedBeforehand?: { ID: string; settings: Record<string, unknown> } | null;
    /** sdnbridge files: the network the harness staged before the run (no agent ran). */
    networkCreatedBeforehand?: { fn: string; id: string; settings: Record<string, unknown>; ID: string } | null;
    subnetEnv?: string;
    hostLocalStore?: { path: string; before: Record<string, string> | null; after: Record<string, string> | null };
  };
  calls: TraceCall[];
  callCount: number;
  exitCode: number;
  stateBefore: TraceState;
  stateAfter: TraceState;
}

export function loadTrace(name: string, dir = TRACES_DIR): Trace {
  return JSON.parse(readFileSync(join(dir, `${name}.json`), 'utf8')) as Trace;
}

/** What the replay has learnt so far; shared by the files of one backend (a placeholder means one object there). */
export interface ReplayBindings {
  /** Placeholder (`<NETWORK_ID>`) -> live value. */
  ids: Map<string, string>;
  /** Recorded network name -> live name. */
  names: [string, string][];
  /** HNS-generated MAC recorded -> live. */
  macs: Map<string, string>;
}

export function newBindings(init: { ids?: Record<string, string>; names?: Record<string, string> } = {}): ReplayBindings {
  return { ids: new Map(Object.entries(init.ids ?? {})), names: Object.entries(init.names ?? {}), macs: new Map() };
}

/** One field where the live answer differs from the recording. */
export interface ReplayMismatch {
  /** `seq 4 HcnQueryNetworkProperties out.Ipams[0].Subnets[0]...`, or `stateAfter networks[0]...`. */
  where: string;
  recorded: unknown;
  live: unknown;
}

export interface ReplayResult {
  mismatches: ReplayMismatch[];
  /** Every request sent and the live reply (for a failure's message). */
  transcript: string[];
}

/** `<NETWORK_ID>`, `<ENDPOINT_ID_2>`; the kube-proxy recordings name objects by address too: `<KP_ENDPOINT_10.96.0.20>`. */
const PLACEHOLDER = /<[A-Z][A-Z0-9_.]*>/g;
const EXACT_PLACEHOLDER = /^<[A-Z][A-Z0-9_.]*>$/;
const MAC = /^[0-9A-Fa-f]{2}([-:][0-9A-Fa-f]{2}){5}$/;
/** The keys whose MAC value HNS generates when the caller sent none (endpoint MacAddress, DrMacAddress Address). */
const GENERATED_MAC_KEYS = new Set(['MacAddress', 'Address']);

/** A recorded string with the bound placeholders and the live network names put in. */
function forward(text: string, b: ReplayBindings): string {
  let s = text.replace(PLACEHOLDER, (p) => b.ids.get(p) ?? p);
  for (const [recorded, live] of b.names) if (recorded !== live) s = s.split(recorded).join(live);
  return s;
}

function forwardDeep(v: unknown, b: ReplayBindings): unknown {
  if (typeof v === 'string') return forward(v, b);
  if (Array.isArray(v)) return v.map((x) => forwardDeep(x, b));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, forwardDeep(x, b)]));
  return v;
}

class Comparer {
  readonly mismatches: ReplayMismatch[] = [];
  constructor(
    private readonly b: ReplayBindings,
    private readonly sentMacs: Set<string>,
  ) {}

  compare(recorded: unknown, live: unknown, where: string, key = ''): void {
    if (typeof recorded === 'string') {
      if (EXACT_PLACEHOLDER.test(recorded) && !this.b.ids.has(recorded) && typeof live === 'string') {
        this.b.ids.set(recorded, live);
        return;
      }
      if (MAC.test(recorded) && GENERATED_MAC_KEYS.has(key) && !this.sentMacs.has(recorded) && typeof live === 'string' && MAC.test(live)) {
        const bound = this.b.macs.get(recorded);
        if (bound === undefined) this.b.macs.set(recorded, live);
        else if (bound !== live) this.mismatches.push({ where, recorded: `${recorded} (seen before as ${bound})`, live });
        return;
      }
      const want = forward(recorded, this.b);
      if (want !== live) this.mismatches.push({ where, recorded: want, live });
      return;
    }
    if (Array.isArray(recorded)) {
      if (!Array.isArray(live) || live.length !== recorded.length) {
        this.mismatches.push({ where, recorded: forwardDeep(recorded, this.b), live });
        return;
      }
      recorded.forEach((r, i) => this.compare(r, live[i], `${where}[${i}]`, key));
      return;
    }
    if (recorded && typeof recorded === 'object') {
      if (!live || typeof live !== 'object' || Array.isArray(live)) {
        this.mismatches.push({ where, recorded: forwardDeep(recorded, this.b), live });
        return;
      }
      const r = recorded as Record<string, unknown>;
      const l = live as Record<string, unknown>;
      for (const k of new Set([...Object.keys(r), ...Object.keys(l)])) {
        if (!(k in r)) this.mismatches.push({ where: `${where}.${k}`, recorded: undefined, live: l[k] });
        else if (!(k in l)) this.mismatches.push({ where: `${where}.${k}`, recorded: forwardDeep(r[k], this.b), live: undefined });
        else this.compare(r[k], l[k], `${where}.${k}`, k);
      }
      return;
    }
    if (recorded !== live) this.mismatches.push({ where, recorded, live });
  }
}

/** The MACs a plugin sent in its calls (echoed back by HNS, so compared exactly). */
export function macsSent(calls: TraceCall[]): Set<string> {
  const out = new Set<string>();
  const walk = (v: unknown, key = ''): void => {
    if (typeof v === 'string' && GENERATED_MAC_KEYS.has(key) && MAC.test(v)) out.add(v);
    else if (Array.isArray(v)) v.forEach((x) => walk(x, key));
    else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) walk(x, k);
  };
  for (const c of calls) walk(c.args);
  return out;
}

/** A reply field the DLL hands over as JSON text, parsed (null and '' stay as they are). */
function parsedField(v: unknown): unknown {
  if (typeof v !== 'string' || v === '') return v;
  try {
    return JSON.parse(v) as unknown;
  } catch {
    return v;
  }
}

/** The argument documents the stand-ins send as JSON text. */
const DOCUMENT_ARGS = new Set(['settings', 'query', 'request']);

/** The node's networks, endpoints, namespaces and load balancers, as the simulator's state file holds them. */
export function liveState(dp: SimulatedDataplane): TraceState {
  const s = dp.snapshot();
  return { networks: s.networks, endpoints: s.endpoints, namespaces: s.namespaces ?? [], loadBalancers: s.loadBalancers ?? [] };
}

/** Compare the node with a recorded state (placeholders and generated MACs bound as in the replay). */
export function compareState(recorded: TraceState, dp: SimulatedDataplane, b: ReplayBindings, where: string, sentMacs: Set<string> = new Set()): ReplayMismatch[] {
  const c = new Comparer(b, sentMacs);
  const live = liveState(dp);
  c.compare(recorded.networks, live.networks, `${where} networks`);
  c.compare(recorded.endpoints, live.endpoints, `${where} endpoints`);
  // A recording names what it holds: the CNI files namespaces, the kube-proxy files load balancers.
  if (recorded.namespaces !== undefined) c.compare(recorded.namespaces, live.namespaces, `${where} namespaces`);
  if (recorded.loadBalancers !== undefined) c.compare(recorded.loadBalancers, live.loadBalancers, `${where} loadBalancers`);
  return c.mismatches;
}

export interface ReplayOptions {
  /** Compare stateBefore (after an ADD's namespace is created) before the first call; default true. */
  checkStateBefore?: boolean;
  /** Compare stateAfter after the last call; default true. */
  checkStateAfter?: boolean;
}

/** The HNS version the recording's node reported (its `HNSCall GET /globals/version` reply), if a plugin asked. */
export function recordedHnsVersion(trace: Trace): HnsVersion | undefined {
  const call = trace.calls.find((c) => c.fn === 'HNSCall' && c.args['path'] === '/globals/version');
  const out = (call?.reply['out'] as { Output?: HnsVersion } | undefined)?.Output;
  return out && typeof out.Major === 'number' && typeof out.Minor === 'number' ? { Major: out.Major, Minor: out.Minor } : undefined;
}

/**
 * Replay one scenario file against `dp` through the stand-ins' request handler, its HNS reporting the
 * version the recording's did (recordedHnsVersion; the simulator's default otherwise). For an ADD the pod's
 * namespace is created first, as containerd does (`inputs.namespaceCreatedBeforehand`). `<NETWORK_ID>` and
 * `<AGENT_ENDPOINT_ID>` must be bound by the caller when the network exists (bindAgentNetwork).
 */
export async function replayScenario(trace: Trace, dp: SimulatedDataplane, b: ReplayBindings, opts: ReplayOptions = {}): Promise<ReplayResult> {
  const version = recordedHnsVersion(trace);
  const server = new WindowsSimServer({ dp, ...(version ? { hns: { version } } : {}) });
  const sentMacs = macsSent(trace.calls);
  const ns = trace.inputs.namespaceCreatedBeforehand;
  if (ns && !(b.ids.has(ns.ID) && dp.getNamespace(b.ids.get(ns.ID)!))) {
    const created = dp.createNamespace('HcnCreateNamespace', ns.settings);
    b.ids.set(ns.ID, created.ID);
  }
  const mismatches: ReplayMismatch[] = [];
  if (opts.checkStateBefore !== false) mismatches.push(...compareState(trace.stateBefore, dp, b, 'stateBefore', sentMacs));
  const r = await replayCalls(trace.calls, server, b, sentMacs);
  mismatches.push(...r.mismatches);
  if (opts.checkStateAfter !== false) mismatches.push(...compareState(trace.stateAfter, dp, b, 'stateAfter', sentMacs));
  return { mismatches, transcript: r.transcript };
}

/**
 * How one recorded reply is judged: `compare` (field by field, the default), or a function that checks the live
 * reply itself (e.g. against a schema, when the recorded reply was no observation) and returns what is wrong;
 * placeholders in such a reply are still bound from the live one.
 */
export type AnswerCheck = (call: TraceCall, live: Record<string, unknown>, where: string) => 'compare' | ReplayMismatch[];

/**
 * Send `calls` in order through the stand-ins' request handler of `server`, binding handles and placeholders
 * from the live replies, and judge each reply (`check`, default field by field against the recording).
 * `handles` maps recorded handle numbers to live ones (shared by the parts of one recording replayed apart).
 */
export async function replayCalls(
  calls: readonly TraceCall[],
  server: WindowsSimServer,
  b: ReplayBindings,
  sentMacs: Set<string>,
  opts: { check?: AnswerCheck; handles?: Map<number, number> } = {},
): Promise<ReplayResult> {
  const transcript: string[] = [];
  const mismatches: ReplayMismatch[] = [];
  const handles = opts.handles ?? new Map<number, number>();
  const c = new Comparer(b, sentMacs);
  for (const call of calls) {
    const req: Record<string, unknown> = { fn: call.fn };
    for (const [k, v] of Object.entries(call.args)) {
      if (k === 'h' && typeof v === 'number') req[k] = handles.get(v) ?? v;
      else if (DOCUMENT_ARGS.has(k) && v !== null && typeof v === 'object') req[k] = JSON.stringify(forwardDeep(v, b));
      else req[k] = forwardDeep(v, b);
    }
    const line = JSON.stringify(req);
    const reply = await server.answer(line);
    transcript.push(`${call.seq} ${line.slice(0, 400)} -> ${JSON.stringify(reply).slice(0, 400)}`);
    const where = `seq ${call.seq} ${call.fn}`;
    const recorded = call.reply;
    const checked = opts.check?.(call, reply, where) ?? 'compare';
    // A reply judged by `check`: its placeholders are bound from the live reply, its differences from the recording dropped.
    const cmp = checked === 'compare' ? c : new Comparer(b, sentMacs);
    if (checked !== 'compare') mismatches.push(...checked);
    for (const k of new Set([...Object.keys(recorded), ...Object.keys(reply)])) {
      if (k === 'h') {
        const r = recorded['h'];
        const l = reply['h'];
        // A handle's number is the simulator's counter: bind it; only a handle against none (or 0) differs.
        if (typeof r === 'number' && typeof l === 'number' && (r === 0) === (l === 0)) {
          if (r !== 0) handles.set(r, l);
        } else if (r !== l) mismatches.push({ where: `${where} h`, recorded: r, live: l });
        continue;
      }
      if (!(k in recorded) || !(k in reply)) {
        if (checked === 'compare') mismatches.push({ where: `${where} ${k}`, recorded: recorded[k], live: reply[k] });
        continue;
      }
      if (k === 'hr') {
        if (recorded[k] !== reply[k]) mismatches.push({ where: `${where} hr`, recorded: recorded[k], live: reply[k] });
        continue;
      }
      cmp.compare(recorded[k], k === 'out' || k === 'err' ? parsedField(reply[k]) : reply[k], `${where} ${k}`);
    }
  }
  mismatches.push(...c.mismatches);
  if (server.protocolErrors.length > 0) mismatches.push({ where: 'protocol', recorded: [], live: server.protocolErrors });
  return { mismatches, transcript };
}

/**
 * Load a recorded state into `dp` (networks, endpoints, namespaces), every GUID placeholder bound to a new
 * GUID: to replay one file alone, or to plant a break in the network before the replay.
 */
export function loadState(dp: SimulatedDataplane, state: TraceState, b: ReplayBindings): void {
  let n = 0;
  const fresh = (p: string) => {
    n++;
    const hex = n.toString(16).toUpperCase().padStart(12, '0');
    return `${(p.length * 7919).toString(16).toUpperCase().padStart(8, '0').slice(-8)}-0000-4000-8000-${hex}`;
  };
  const text = JSON.stringify(state);
  for (const p of new Set(text.match(PLACEHOLDER) ?? [])) if (!b.ids.has(p)) b.ids.set(p, fresh(p));
  const doc = forwardDeep(state, b) as TraceState;
  dp.store.update((s) => {
    s.networks = doc.networks as typeof s.networks;
    s.endpoints = doc.endpoints as typeof s.endpoints;
    s.namespaces = (doc.namespaces ?? []) as NonNullable<typeof s.namespaces>;
  });
}

/**
 * Stage the network a file says the harness made before the run (`inputs.networkCreatedBeforehand`, the
 * sdnbridge files: no agent ran), as HcnCreateNetwork through the stand-ins' seam, and bind its ID.
 */
export async function stageNetworkCreatedBeforehand(trace: Trace, dp: SimulatedDataplane, b: ReplayBindings): Promise<void> {
  const staged = trace.inputs.networkCreatedBeforehand;
  if (!staged) return;
  const server = new WindowsSimServer({ dp });
  const reply = await server.answer(JSON.stringify({ fn: staged.fn, id: staged.id, settings: JSON.stringify(forwardDeep(staged.settings, b)) }));
  if (reply['hr'] !== 0) throw new Error(`staging the network failed: ${JSON.stringify(reply)}`);
  const name = (staged.settings as { Name?: string }).Name ?? '';
  const net = dp.getNetworkByName(forward(name, b));
  if (!net?.ID) throw new Error(`the staged network ${name} is not on the node`);
  b.ids.set(staged.ID, net.ID);
}

/** Bind `<NETWORK_ID>` and `<AGENT_ENDPOINT_ID>` from the live node (the agent's network and its own endpoint). */
export function bindAgentNetwork(dp: SimulatedDataplane, b: ReplayBindings, network: string, agentEndpoint: string): void {
  const net = dp.getNetworkByName(network);
  if (!net?.ID) throw new Error(`the node has no network ${network}`);
  b.ids.set('<NETWORK_ID>', net.ID);
  const ep = dp.listEndpoints().find((e) => e.Name === agentEndpoint);
  if (ep?.ID) b.ids.set('<AGENT_ENDPOINT_ID>', ep.ID);
}

/** A readable list of mismatches for a failing expectation. */
export function describeMismatches(r: ReplayMismatch[], max = 20): string {
  return r
    .slice(0, max)
    .map((m) => `${m.where}: recorded ${JSON.stringify(m.recorded)}, live ${JSON.stringify(m.live)}`)
    .join('\n');
}

/**
 * The sdnbridge recording's network was staged by its harness, not by an agent (README "sdnbridge, dual
 * stack"), so replayed against the agent's network two answers differ by design: the network documents
 * (HcnQueryNetworkProperties, HcnEnumerateNetworks) and the endpoints' PrefixLength, which HNS fills and the
 * recording's simulator did not. The mismatches other than those.
 */
export function sdnbridgeUnexpected(ms: ReplayMismatch[]): ReplayMismatch[] {
  return ms.filter((m) => !/HcnQueryNetworkProperties out|HcnEnumerateNetworks out/.test(m.where) && !/PrefixLength/.test(m.where));
}

/** An IPv4 address as the hex of its bytes, as win-overlay derives an endpoint's MAC from it (`0E-2A-0a-f4-64-03`). */
const ipv4Hex = (ip: string) =>
  ip
    .split('.')
    .map((b) => Number(b).toString(16).padStart(2, '0'))
    .join('-');

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * A recorded ADD made the ADD of another pod: the same calls, with the pod's addresses (host-local's
 * allocation, one per family, in the order of the recorded endpoint's IpConfigurations), its container id
 * and, where the plugin derived the endpoint's MAC from the IPv4 address (win-overlay's endpointMacPrefix),
 * that MAC put in. What the plugin sends and what HNS answers change together, so the replay still compares
 * every reply with the recording.
 */
export function addTraceFor(trace: Trace, pod: { ips: readonly string[]; containerId: string }): Trace {
  if (trace.command !== 'ADD') throw new Error(`${trace.scenario} is no ADD`);
  const create = trace.calls.find((c) => c.fn === 'HcnCreateEndpoint');
  const settings = create?.args['settings'] as { IpConfigurations?: { IpAddress: string }[]; MacAddress?: string } | undefined;
  const recorded = (settings?.IpConfigurations ?? []).map((c) => c.IpAddress);
  if (recorded.length !== pod.ips.length) throw new Error(`${trace.scenario} adds a pod with ${recorded.length} addresses, not ${pod.ips.length}`);
  let text = JSON.stringify(trace).split(trace.inputs.env['CNI_CONTAINERID']).join(pod.containerId);
  recorded.forEach((ip, i) => {
    text = text.replace(new RegExp(`(?<![0-9a-fA-F.:])${escapeRe(ip)}(?![0-9a-fA-F:]|\\.\\d)`, 'g'), pod.ips[i]);
    if (!ip.includes(':') && settings?.MacAddress?.endsWith(ipv4Hex(ip))) text = text.split(ipv4Hex(ip)).join(ipv4Hex(pod.ips[i]));
  });
  return JSON.parse(text) as Trace;
}

// The loopback server behind the stand-in DLLs (test/windows/standins/*.c). It wraps ONE
// SimulatedDataplane (the project's one model of HNS, the route table and the host adapters) with the
// SimulatedHnsTransport, and only translates: the stand-ins send one JSON request per line, this answers
// one JSON line with the raw outcome a Windows DLL would return (HRESULT + result/ErrorRecord strings,
// NETIO statuses, MIB rows as integers). No HNS or route semantics live here or in the C code.
//
// Wire format (all replies are flat objects; strings are JSON strings, handles small integers):
//   HNSCall                      {method,path,request}          -> {hr,out}
//   HcnEnumerate{Networks,Endpoints} {query}                    -> {hr,out,err}
//   HcnCreateNetwork             {id,settings}                  -> {hr,h,err}
//   HcnCreateEndpoint            {h,id,settings}                -> {hr,h,err}
//   HcnOpen{Network,Endpoint}    {id}                           -> {hr,h,err}
//   HcnModify{Network,Endpoint}  {h,settings}                   -> {hr,err}
//   HcnQuery{Network,Endpoint}Properties {h,query}              -> {hr,out,err}
//   HcnDelete{Network,Endpoint}  {id}                           -> {hr,err}
//   HcnClose{Network,Endpoint}   {h}                            -> {hr}
//   HcnEnumerateNamespaces       {query}                        -> {hr,out,err}
//   HcnCreateNamespace           {id,settings}                  -> {hr,h,err}
//   HcnOpenNamespace             {id}                           -> {hr,h,err}
//   HcnModifyNamespace           {h,settings}                   -> {hr,err}
//   HcnQueryNamespaceProperties  {h,query}                      -> {hr,out,err}
//   HcnDeleteNamespace           {id}                           -> {hr,err}
//   HcnCloseNamespace            {h}                            -> {hr}
//   HcnEnumerateLoadBalancers    {query}                        -> {hr,out,err}
//   HcnCreateLoadBalancer        {id,settings}                  -> {hr,h,err}
//   HcnOpenLoadBalancer          {id}                           -> {hr,h,err}
//   HcnModifyLoadBalancer        {h,settings}                   -> {hr,err}
//   HcnQueryLoadBalancerProperties {h,query}                    -> {hr,out,err}
//   HcnDeleteLoadBalancer        {id}                           -> {hr,err}
//   HcnCloseLoadBalancer         {h}                            -> {hr}
//   GetIpForwardTable2           {family}                       -> {st,rows:[39 ints per row: luid,index,dest(17),prefixLength,nextHop(17),metric,protocol,origin]}
//   Create/DeleteIpForwardEntry2 {luid,ifIndex,destFamily,dest,prefixLength,nextHopFamily,nextHop,sitePrefixLength,metric,protocol,...} -> {st}
//                                (dest, nextHop: dotted IPv4, or IPv6 as eight hex groups)
//   GetIpAddrTable               {order}                        -> {st,rows:[6 ints per row]}
//   GetUnicastIpAddressTable     {family}                       -> {st,rows:[25 ints per row: luid,index,onLinkPrefixLength,prefixOrigin,suffixOrigin,dadState,valid,preferred,address(17)]}
//   CreateUnicastIpAddressEntry  {luid,ifIndex,family,address,onLinkPrefixLength,prefixOrigin,dadState,validLifetime} -> {st}
//   (an address on the wire: its family, then 16 bytes, an IPv4 address in the first 4)
//   ConvertInterface*            {ifIndex|luid|alias}           -> {st,luid|ifIndex|alias}
//   ConvertInterfaceLuidToGuid   {luid}                         -> {st,guid:[16 ints: the GUID's bytes]}
//   GetInterfaceDnsSettings      {guid}                         -> {st,nameServer}
//   SetInterfaceDnsSettings      {guid,version,flags,nameServer} -> {st}
//   FreeInterfaceDnsSettings     {ok: 1 ours, 0 NULL, -1 not ours} -> {st}   (bookkeeping: every read freed?)
//   Get/SetIpInterfaceEntry      {family,luid,ifIndex,...}      -> {st,...}
//   MibTableAllocated / FreeMibTable {ok}                       -> {st}   (bookkeeping: every table freed?)
import { createServer, type Server, type Socket } from 'node:net';
import { FlannelError, HnsError, RouteError, errorMessage } from '../../src/basics/errors.js';
import { SimulatedDataplane, type SimulatedDataplaneOptions } from '../../src/simulator/model.js';
import { HRESULT } from '../../src/hns/errors.js';
import { SimulatedHnsTransport, type SimulatedHnsOptions } from '../../src/simulator/hns.js';
import { SimulatedHcnNamespaces, type HcnNamespaceHandle } from '../../src/simulator/namespaces.js';
import type { HcnHandle } from '../../src/hns/transport.js';
import { editState } from '../support/sim-dataplane.js';
import { formatIp6, maskOf6, parseIp6 } from '../../src/basics/ip6.js';
import { DNS_SETTINGS, guidToBuffer, NL } from '../../src/win32/encoding.js';
import { parseNameServer } from '../../src/win32/dns-settings.js';
import { isApipa } from '../../src/basics/ip4.js';
import type { SimAdapter } from '../../src/simulator/state.js';

/** NETIO / Win32 statuses the server answers with (winerror.h). */
export const STATUS = {
  NO_ERROR: 0,
  ERROR_FILE_NOT_FOUND: 2,
  ERROR_GEN_FAILURE: 31,
  ERROR_NOT_SUPPORTED: 50,
  ERROR_INVALID_PARAMETER: 87,
  ERROR_NOT_FOUND: 1168,
  ERROR_OBJECT_ALREADY_EXISTS: 5010,
} as const;

const E_NOTIMPL = 0x80004001;
const AF_UNSPEC = 0;
const AF_INET = 2;
const AF_INET6 = 23;
const IF_TYPE_ETHERNET_CSMACD = 6;
/** What GetIpInterfaceEntry reports for an IPv4 interface: Windows returns a non-zero SitePrefixLength, and
 *  SetIpInterfaceEntry rejects an IPv4 row whose SitePrefixLength is not 0 (the caller must clear it). */
const IPV4_SITE_PREFIX_LENGTH_REPORTED = 64;
/** An IPv6 interface's SitePrefixLength: 48 unless configured (`netsh interface ipv6 show interface N`, "Site Prefix Length"). */
const IPV6_SITE_PREFIX_LENGTH_REPORTED = 48;
/** NL_PREFIX_ORIGIN / NL_SUFFIX_ORIGIN IpPrefixOriginManual / IpSuffixOriginManual (nldef.h): a static address. */
const ORIGIN_MANUAL = NL.IpPrefixOriginManual;
const ORIGIN_WELL_KNOWN = 2;
const ORIGIN_DHCP = NL.IpPrefixOriginDhcp;
/** MIB_UNICASTIPADDRESS_ROW ValidLifetime / PreferredLifetime of a static address: infinite. */
const INFINITE_LIFETIME = 0xffffffff;

/** NET_LUID of a simulated adapter: IfType 6 (Ethernet) in bits 48-63, NetLuidIndex = the interface index. */
export function luidOf(interfaceIndex: number): number {
  return IF_TYPE_ETHERNET_CSMACD * 2 ** 48 + interfaceIndex * 2 ** 24;
}

/** The interface GUID of a simulated adapter (ConvertInterfaceLuidToGuid): the simulator's own, naming the index. */
export function interfaceGuidOf(interfaceIndex: number): string {
  return `464C4E4C-0000-4000-8000-${interfaceIndex.toString(16).padStart(12, '0')}`.toUpperCase();
}

type Req = Record<string, unknown> & { fn: string };
type Reply = Record<string, unknown>;

export interface WindowsSimServerOptions {
  /** Serve this dataplane (default: a new one built from `dataplane`). */
  dp?: SimulatedDataplane;
  dataplane?: SimulatedDataplaneOptions;
  hns?: SimulatedHnsOptions;
}

interface RecordOnlyRule {
  op: string;
  remaining: number;
}

function ipBytes(ip: string): number[] {
  const parts = ip.split('.').map(Number);
  return parts.length === 4 && parts.every((p) => Number.isInteger(p) && p >= 0 && p <= 255) ? parts : [0, 0, 0, 0];
}

/** An address as the wire carries it: its family, then 16 bytes (an IPv4 address in the first 4). */
function inetFields(ip: string): number[] {
  const v6 = ip.includes(':') ? parseIp6(ip) : undefined;
  if (v6 === undefined) return [AF_INET, ...ipBytes(ip), ...new Array<number>(12).fill(0)];
  return [AF_INET6, ...Array.from({ length: 16 }, (_, i) => Number((v6 >> BigInt(8 * (15 - i))) & 0xffn))];
}

/** The canonical text of an IPv6 address the stand-in sent (eight hex groups), or undefined. */
function canonicalIp6(s: string): string | undefined {
  const v = parseIp6(s);
  return v === undefined ? undefined : formatIp6(v);
}

function ipToInt(ip: string): number {
  const [a, b, c, d] = ipBytes(ip);
  return ((a << 24) | (b << 16) | (c << 8) | d) >>> 0;
}

function isDottedIPv4(s: unknown): s is string {
  return typeof s === 'string' && /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(s) && s.split('.').every((p) => Number(p) <= 255);
}

function num(req: Req, key: string): number {
  const v = req[key];
  return typeof v === 'number' ? v : NaN;
}

function str(req: Req, key: string): string {
  const v = req[key];
  return typeof v === 'string' ? v : '';
}

/** A NETIO status out of whatever the dataplane threw (RouteError.status, FlannelError context.status). */
function statusOf(err: unknown): number | undefined {
  if (err instanceof RouteError && typeof err.status === 'number') return err.status;
  if (err instanceof FlannelError && typeof err.context.status === 'number') return err.context.status;
  return undefined;
}

export class WindowsSimServer {
  readonly dp: SimulatedDataplane;
  readonly hns: SimulatedHnsTransport;
  /** The namespace calls (the CNI plugins make them; the agent does not). */
  readonly namespaces: SimulatedHcnNamespaces;
  /** Requests received per DLL function name (what actually crossed the DLL boundary). */
  readonly requests = new Map<string, number>();
  /** Requests the server could not understand (unknown function, malformed line): should stay empty. */
  readonly protocolErrors: string[] = [];
  /** Every request/answer, one line each (written into a test's failure output). */
  readonly transcript: string[] = [];
  /** The whole request of every HCN call that creates, modifies or deletes, in order, as the stand-in sent it. */
  readonly writes: Req[] = [];
  /** MIB tables handed out by GetIpForwardTable2 and not yet freed with FreeMibTable. */
  mibTablesOutstanding = 0;
  /** FreeMibTable calls on a pointer that was not a live table from the stand-in. */
  badFrees = 0;
  /** GetInterfaceDnsSettings results not yet freed with FreeInterfaceDnsSettings. */
  dnsSettingsOutstanding = 0;
  /** FreeInterfaceDnsSettings calls on a struct the stand-in did not fill, or freed twice. */
  badDnsFrees = 0;

  private readonly handles = new Map<number, HcnHandle | HcnNamespaceHandle>();
  private nextHandle = 1;
  private recordOnly: RecordOnlyRule[] = [];
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;

  constructor(opts: WindowsSimServerOptions = {}) {
    this.dp = opts.dp ?? new SimulatedDataplane(opts.dataplane);
    this.hns = new SimulatedHnsTransport(this.dp, opts.hns);
    this.namespaces = new SimulatedHcnNamespaces(this.dp);
  }

  /** HCN handles the DLL side holds open (each HcnOpen/Create must be matched by HcnClose*). */
  get openHandles(): number {
    return this.handles.size;
  }

  count(fn: string): number {
    return this.requests.get(fn) ?? 0;
  }

  /**
   * The next `count` failing v2 calls named `op` report their failure the other way HCN does:
   * S_OK with a non-empty ErrorRecord (the caller must still treat it as a failure).
   */
  errorRecordOnly(op: string, count = 1): void {
    this.recordOnly.push({ op, remaining: count });
  }

  async start(): Promise<number> {
    this.server = createServer((socket) => this.onConnection(socket));
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(0, '127.0.0.1', () => resolve());
    });
    const addr = this.server.address();
    this.port = typeof addr === 'object' && addr ? addr.port : 0;
    return this.port;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    if (this.server) await new Promise<void>((resolve) => this.server!.close(() => resolve()));
    this.server = undefined;
  }

  private onConnection(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => undefined);
    let buf = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        void this.answer(line).then((reply) => {
          if (!socket.destroyed) socket.write(JSON.stringify(reply) + '\n');
        });
      }
    });
  }

  /** Handle one request line (exported for unit tests of the translation). */
  async answer(line: string): Promise<Reply> {
    let req: Req;
    try {
      const parsed: unknown = JSON.parse(line);
      if (typeof parsed !== 'object' || parsed === null || typeof (parsed as Req).fn !== 'string') throw new Error('no "fn"');
      req = parsed as Req;
    } catch (err) {
      this.protocolErrors.push(`malformed request line ${JSON.stringify(line.slice(0, 200))}: ${errorMessage(err)}`);
      return { hr: E_NOTIMPL, st: STATUS.ERROR_NOT_SUPPORTED };
    }
    this.requests.set(req.fn, (this.requests.get(req.fn) ?? 0) + 1);
    if (/^Hcn(Create|Modify|Delete)/.test(req.fn)) this.writes.push(req);
    let reply: Reply;
    try {
      reply = await this.dispatch(req);
    } catch (err) {
      // Not an HNS/route outcome: a bug in the simulator or this server. Visible, never silent.
      this.protocolErrors.push(`${req.fn}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      reply = { hr: HRESULT.E_FAIL, st: STATUS.ERROR_GEN_FAILURE };
    }
    const { fn, ...args } = req;
    this.transcript.push(`${fn} ${JSON.stringify(args).slice(0, 300)} -> ${JSON.stringify(reply).slice(0, 300)}`);
    return reply;
  }

  private async dispatch(req: Req): Promise<Reply> {
    switch (req.fn) {
      case 'HNSCall':
        return this.hnsCall(req);
      case 'HcnEnumerateNetworks':
        return this.v2(req.fn, async () => ({ out: await this.hns.enumerateNetworks(str(req, 'query')) }));
      case 'HcnEnumerateEndpoints':
        return this.v2(req.fn, async () => ({ out: await this.hns.enumerateEndpoints(str(req, 'query')) }));
      case 'HcnCreateNetwork':
        return this.v2(req.fn, async () => ({ h: this.addHandle(await this.hns.createNetwork(str(req, 'id'), str(req, 'settings'))) }));
      case 'HcnOpenNetwork':
        return this.v2(req.fn, async () => ({ h: this.addHandle(await this.hns.openNetwork(str(req, 'id'))) }));
      case 'HcnModifyNetwork':
        return this.v2(req.fn, async () => {
          await this.hns.modifyNetwork(this.handle(req, 'network'), str(req, 'settings'));
          return {};
        });
      case 'HcnQueryNetworkProperties':
        return this.v2(req.fn, async () => ({ out: await this.hns.queryNetworkProperties(this.handle(req, 'network'), str(req, 'query')) }));
      case 'HcnDeleteNetwork':
        return this.v2(req.fn, async () => {
          await this.hns.deleteNetwork(str(req, 'id'));
          return {};
        });
      case 'HcnCloseNetwork':
        return this.v2(
          req.fn,
          async () => {
            await this.hns.closeNetwork(this.handle(req, 'network'));
            this.handles.delete(num(req, 'h'));
            return {};
          },
          false,
        );
      case 'HcnCreateEndpoint':
        return this.v2(req.fn, async () => ({
          h: this.addHandle(await this.hns.createEndpoint(this.handle(req, 'network'), str(req, 'id'), str(req, 'settings'))),
        }));
      case 'HcnOpenEndpoint':
        return this.v2(req.fn, async () => ({ h: this.addHandle(await this.hns.openEndpoint(str(req, 'id'))) }));
      case 'HcnModifyEndpoint':
        return this.v2(req.fn, async () => {
          await this.hns.modifyEndpoint(this.handle(req, 'endpoint'), str(req, 'settings'));
          return {};
        });
      case 'HcnQueryEndpointProperties':
        return this.v2(req.fn, async () => ({ out: await this.hns.queryEndpointProperties(this.handle(req, 'endpoint'), str(req, 'query')) }));
      case 'HcnDeleteEndpoint':
        return this.v2(req.fn, async () => {
          await this.hns.deleteEndpoint(str(req, 'id'));
          return {};
        });
      case 'HcnCloseEndpoint':
        return this.v2(
          req.fn,
          async () => {
            await this.hns.closeEndpoint(this.handle(req, 'endpoint'));
            this.handles.delete(num(req, 'h'));
            return {};
          },
          false,
        );
      case 'HcnEnumerateNamespaces':
        return this.v2(req.fn, async () => ({ out: await this.namespaces.enumerateNamespaces(str(req, 'query')) }));
      case 'HcnCreateNamespace':
        return this.v2(req.fn, async () => ({ h: this.addHandle(await this.namespaces.createNamespace(str(req, 'id'), str(req, 'settings'))) }));
      case 'HcnOpenNamespace':
        return this.v2(req.fn, async () => ({ h: this.addHandle(await this.namespaces.openNamespace(str(req, 'id'))) }));
      case 'HcnModifyNamespace':
        return this.v2(req.fn, async () => {
          await this.namespaces.modifyNamespace(this.namespaceHandle(req), str(req, 'settings'));
          return {};
        });
      case 'HcnQueryNamespaceProperties':
        return this.v2(req.fn, async () => ({ out: await this.namespaces.queryNamespaceProperties(this.namespaceHandle(req), str(req, 'query')) }));
      case 'HcnDeleteNamespace':
        return this.v2(req.fn, async () => {
          await this.namespaces.deleteNamespace(str(req, 'id'));
          return {};
        });
      case 'HcnCloseNamespace':
        return this.v2(
          req.fn,
          async () => {
            await this.namespaces.closeNamespace(this.namespaceHandle(req));
            this.handles.delete(num(req, 'h'));
            return {};
          },
          false,
        );
      case 'HcnEnumerateLoadBalancers':
        return this.v2(req.fn, async () => ({ out: await this.hns.enumerateLoadBalancers(str(req, 'query')) }));
      case 'HcnCreateLoadBalancer':
        return this.v2(req.fn, async () => ({ h: this.addHandle(await this.hns.createLoadBalancer(str(req, 'id'), str(req, 'settings'))) }));
      case 'HcnOpenLoadBalancer':
        return this.v2(req.fn, async () => ({ h: this.addHandle(await this.hns.openLoadBalancer(str(req, 'id'))) }));
      case 'HcnModifyLoadBalancer':
        return this.v2(req.fn, async () => {
          await this.hns.modifyLoadBalancer(this.handle(req, 'loadBalancer'), str(req, 'settings'));
          return {};
        });
      case 'HcnQueryLoadBalancerProperties':
        return this.v2(req.fn, async () => ({ out: await this.hns.queryLoadBalancerProperties(this.handle(req, 'loadBalancer'), str(req, 'query')) }));
      case 'HcnDeleteLoadBalancer':
        return this.v2(req.fn, async () => {
          await this.hns.deleteLoadBalancer(str(req, 'id'));
          return {};
        });
      case 'HcnCloseLoadBalancer':
        return this.v2(
          req.fn,
          async () => {
            await this.hns.closeLoadBalancer(this.handle(req, 'loadBalancer'));
            this.handles.delete(num(req, 'h'));
            return {};
          },
          false,
        );
      case 'GetIpForwardTable2':
        return this.netio(() => this.getIpForwardTable2(req));
      case 'CreateIpForwardEntry2':
      case 'DeleteIpForwardEntry2':
        return this.netio(() => this.routeEntry(req));
      case 'GetIpAddrTable':
        return this.netio(() => this.getIpAddrTable(req));
      case 'GetUnicastIpAddressTable':
        return this.netio(() => this.getUnicastIpAddressTable(req));
      case 'CreateUnicastIpAddressEntry':
        return this.netio(() => this.createUnicastIpAddressEntry(req));
      case 'ConvertInterfaceIndexToLuid':
        return this.netio(async () => {
          await this.dp.enter(req.fn, 'host');
          const idx = num(req, 'ifIndex');
          if (!this.dp.listAdapters().some((a) => a.InterfaceIndex === idx)) return { st: STATUS.ERROR_FILE_NOT_FOUND };
          return { st: 0, luid: luidOf(idx) };
        });
      case 'ConvertInterfaceLuidToIndex':
        return this.netio(async () => {
          await this.dp.enter(req.fn, 'host');
          const a = this.adapterByLuid(num(req, 'luid'));
          return a ? { st: 0, ifIndex: a.InterfaceIndex } : { st: STATUS.ERROR_FILE_NOT_FOUND };
        });
      case 'ConvertInterfaceLuidToAlias':
        return this.netio(async () => {
          await this.dp.enter(req.fn, 'host');
          const a = this.adapterByLuid(num(req, 'luid'));
          return a ? { st: 0, alias: a.Name } : { st: STATUS.ERROR_FILE_NOT_FOUND };
        });
      case 'ConvertInterfaceAliasToLuid':
        return this.netio(async () => {
          await this.dp.enter(req.fn, 'host');
          // Windows compares aliases case-insensitively.
          const alias = str(req, 'alias').toLowerCase();
          const a = this.dp.listAdapters().find((x) => x.Name.toLowerCase() === alias);
          return a ? { st: 0, luid: luidOf(a.InterfaceIndex) } : { st: STATUS.ERROR_INVALID_PARAMETER };
        });
      case 'ConvertInterfaceLuidToGuid':
        return this.netio(async () => {
          await this.dp.enter(req.fn, 'host');
          const a = this.adapterByLuid(num(req, 'luid'));
          return a ? { st: 0, guid: [...guidToBuffer(interfaceGuidOf(a.InterfaceIndex))] } : { st: STATUS.ERROR_FILE_NOT_FOUND };
        });
      case 'GetInterfaceDnsSettings':
        return this.netio(() => this.getInterfaceDnsSettings(req));
      case 'SetInterfaceDnsSettings':
        return this.netio(() => this.setInterfaceDnsSettings(req));
      case 'FreeInterfaceDnsSettings':
        if (num(req, 'ok') === 1) this.dnsSettingsOutstanding--;
        else if (num(req, 'ok') === -1) this.badDnsFrees++;
        return { st: 0 };
      case 'GetIpInterfaceEntry':
        return this.netio(() => this.getIpInterfaceEntry(req));
      case 'SetIpInterfaceEntry':
        return this.netio(() => this.setIpInterfaceEntry(req));
      case 'MibTableAllocated':
        this.mibTablesOutstanding++;
        return { st: 0 };
      case 'FreeMibTable':
        if (num(req, 'ok') === 1) this.mibTablesOutstanding--;
        else this.badFrees++;
        return { st: 0 };
      default:
        this.protocolErrors.push(`unknown function ${req.fn}`);
        return { hr: E_NOTIMPL, st: STATUS.ERROR_NOT_SUPPORTED };
    }
  }

  // ---------------------------------------------------------------- HNS

  private async hnsCall(req: Req): Promise<Reply> {
    const method = str(req, 'method');
    if (method !== 'GET' && method !== 'POST' && method !== 'DELETE') return { hr: HRESULT.E_INVALIDARG, out: null };
    try {
      // Success:false envelopes come back with S_OK, as HNS does; only a thrown HnsError is an HRESULT.
      return { hr: 0, out: await this.hns.hnsCall(method, str(req, 'path'), str(req, 'request')) };
    } catch (err) {
      if (err instanceof HnsError) return { hr: err.hresult ?? HRESULT.E_FAIL, out: null };
      throw err;
    }
  }

  private addHandle(h: HcnHandle | HcnNamespaceHandle): number {
    const n = this.nextHandle++;
    this.handles.set(n, h);
    return n;
  }

  /** The transport's handle for a DLL handle; an unknown one becomes a handle the transport rejects (E_HANDLE). */
  private handle(req: Req, kind: HcnHandle['kind']): HcnHandle {
    const h = this.handles.get(num(req, 'h'));
    return h && h.kind !== 'namespace' ? h : { kind, id: '' };
  }

  /** A namespace handle; any other becomes one the model rejects (E_HANDLE). */
  private namespaceHandle(req: Req): HcnNamespaceHandle {
    const h = this.handles.get(num(req, 'h'));
    return h?.kind === 'namespace' ? h : { kind: 'namespace', id: '' };
  }

  /** Run a v2 call: success -> hr 0 (+ fields); HnsError -> negative HRESULT + ErrorRecord JSON (or S_OK + record). */
  private async v2(op: string, fn: () => Promise<Reply>, hasErrorRecord = true): Promise<Reply> {
    try {
      return { hr: 0, ...(await fn()), err: null };
    } catch (err) {
      if (!(err instanceof HnsError)) throw err;
      const hr = (err.hresult ?? HRESULT.E_FAIL) >>> 0;
      if (!hasErrorRecord) return { hr };
      const text = typeof err.context.hnsError === 'string' ? err.context.hnsError : err.message;
      const record = JSON.stringify({ Success: false, Error: text, ErrorCode: hr });
      const rule = this.recordOnly.find((r) => r.remaining > 0 && r.op === op);
      if (rule) {
        rule.remaining--;
        this.recordOnly = this.recordOnly.filter((r) => r.remaining > 0);
        return { hr: 0, out: null, h: 0, err: record };
      }
      return { hr, out: null, h: 0, err: record };
    }
  }

  // ---------------------------------------------------------------- iphlpapi

  /** Run a NETIO call: the dataplane's RouteError/FlannelError statuses become the returned status. */
  private async netio(fn: () => Promise<Reply>): Promise<Reply> {
    try {
      return await fn();
    } catch (err) {
      const st = statusOf(err);
      if (st === undefined) throw err;
      return { st };
    }
  }

  private adapterByLuid(luid: number) {
    return this.dp.listAdapters().find((a) => luidOf(a.InterfaceIndex) === luid);
  }

  /** InterfaceLuid wins when non-zero (as iphlpapi does); else InterfaceIndex. undefined = no such interface. */
  private resolveIndex(req: Req): number | undefined {
    const luid = num(req, 'luid');
    if (luid) return this.adapterByLuid(luid)?.InterfaceIndex;
    const idx = num(req, 'ifIndex');
    return this.dp.listAdapters().some((a) => a.InterfaceIndex === idx) ? idx : undefined;
  }

  private async getIpForwardTable2(req: Req): Promise<Reply> {
    await this.dp.enter('GetIpForwardTable2', 'route');
    const family = num(req, 'family');
    if (family !== AF_UNSPEC && family !== AF_INET && family !== AF_INET6) return { st: STATUS.ERROR_INVALID_PARAMETER };
    const routes = this.dp.listRoutes().filter((r) => family === AF_UNSPEC || (family === AF_INET6) === r.DestinationPrefix.includes(':'));
    if (routes.length === 0) return { st: STATUS.ERROR_NOT_FOUND };
    // A DHCP adapter's IPv4 default route is DHCP's (NlroDHCP); every other route is set by hand (NlroManual, MIB_IPPROTO_NETMGMT).
    const dhcp = new Set(
      this.dp
        .listAdapters()
        .filter((a) => a.Dhcp)
        .map((a) => a.InterfaceIndex),
    );
    const rows = routes.flatMap((r) => {
      const [dest, plen] = r.DestinationPrefix.split('/');
      const origin = dhcp.has(r.InterfaceIndex) && r.DestinationPrefix === '0.0.0.0/0' ? NL.NlroDHCP : NL.NlroManual;
      return [luidOf(r.InterfaceIndex), r.InterfaceIndex, ...inetFields(dest), Number(plen), ...inetFields(r.NextHop), r.Metric, 3, origin];
    });
    return { st: 0, rows };
  }

  private async routeEntry(req: Req): Promise<Reply> {
    const create = req.fn === 'CreateIpForwardEntry2';
    // Row validation as iphlpapi does it: what InitializeIpForwardEntry leaves invalid must have been set.
    const family = num(req, 'destFamily');
    const v6 = family === AF_INET6;
    const bits = v6 ? 128 : 32;
    const plen = num(req, 'prefixLength');
    // Both addresses of the row's one family (an IPv6 route's next hop is IPv6), the prefix's host bits zero.
    const dest = v6 ? canonicalIp6(str(req, 'dest')) : str(req, 'dest');
    const nextHop = v6 ? canonicalIp6(str(req, 'nextHop')) : str(req, 'nextHop');
    if ((family !== AF_INET && !v6) || num(req, 'nextHopFamily') !== family || dest === undefined || nextHop === undefined) return { st: STATUS.ERROR_INVALID_PARAMETER };
    if (!v6 && (!isDottedIPv4(dest) || !isDottedIPv4(nextHop))) return { st: STATUS.ERROR_INVALID_PARAMETER };
    if (!(plen >= 0 && plen <= bits)) return { st: STATUS.ERROR_INVALID_PARAMETER };
    if (v6 ? (parseIp6(dest)! & ~maskOf6(plen)) !== 0n : (ipToInt(dest) & ~(plen === 0 ? 0 : (0xffffffff << (32 - plen)) >>> 0)) >>> 0 !== 0) {
      return { st: STATUS.ERROR_INVALID_PARAMETER };
    }
    if (create) {
      const metric = num(req, 'metric');
      const protocol = num(req, 'protocol');
      if (!(num(req, 'sitePrefixLength') <= bits)) return { st: STATUS.ERROR_INVALID_PARAMETER };
      if (!(metric >= 0 && metric < 0xffffffff)) return { st: STATUS.ERROR_INVALID_PARAMETER };
      if (!(protocol >= 1 && protocol <= 20)) return { st: STATUS.ERROR_INVALID_PARAMETER };
    }
    const luid = num(req, 'luid');
    const idx = num(req, 'ifIndex');
    let interfaceIndex = idx;
    if (luid) {
      const byLuid = this.adapterByLuid(luid);
      if (!byLuid) return { st: STATUS.ERROR_NOT_FOUND };
      if (idx && idx !== byLuid.InterfaceIndex) return { st: STATUS.ERROR_INVALID_PARAMETER };
      interfaceIndex = byLuid.InterfaceIndex;
    }
    const route = { DestinationPrefix: `${dest}/${plen}`, NextHop: nextHop, InterfaceIndex: interfaceIndex, Metric: create ? num(req, 'metric') : 0 };
    await this.dp.enter(req.fn, 'route', 0, JSON.stringify(route));
    if (create) this.dp.createRoute(route);
    else this.dp.deleteRoute(route);
    return { st: 0 };
  }

  private async getIpAddrTable(req: Req): Promise<Reply> {
    await this.dp.enter('GetIpAddrTable', 'host');
    const adapters = this.dp.listAdapters().filter((a) => a.IPAddress !== '');
    if (num(req, 'order') === 1) adapters.sort((a, b) => ipToInt(a.IPAddress) - ipToInt(b.IPAddress));
    return { st: 0, rows: adapters.flatMap((a) => [...ipBytes(a.IPAddress), a.InterfaceIndex, a.PrefixLength]) };
  }

  /**
   * GetUnicastIpAddressTable: the adapters' addresses of the family asked (AF_UNSPEC both), each a static
   * (manual, preferred, infinite) address with its on-link prefix length; ERROR_NOT_FOUND when there is none.
   */
  private async getUnicastIpAddressTable(req: Req): Promise<Reply> {
    await this.dp.enter('GetUnicastIpAddressTable', 'host');
    const family = num(req, 'family');
    if (family !== AF_UNSPEC && family !== AF_INET && family !== AF_INET6) return { st: STATUS.ERROR_INVALID_PARAMETER };
    // An APIPA address is the autoconfiguration's (PrefixOrigin WellKnown, SuffixOrigin LinkLayerAddress), a DHCP adapter's IPv4 DHCP's.
    const v4Origin = (a: SimAdapter): number => (isApipa(a.IPAddress) ? ORIGIN_WELL_KNOWN : a.Dhcp ? ORIGIN_DHCP : ORIGIN_MANUAL);
    const rows = this.dp
      .listAdapters()
      .flatMap((a) => [
        ...(family !== AF_INET6 && a.IPAddress !== '' ? [[a.InterfaceIndex, a.IPAddress, a.PrefixLength, v4Origin(a)] as const] : []),
        ...(family !== AF_INET && a.IPv6Address !== undefined ? [[a.InterfaceIndex, a.IPv6Address, a.IPv6PrefixLength ?? 64, ORIGIN_MANUAL] as const] : []),
      ]);
    if (rows.length === 0) return { st: STATUS.ERROR_NOT_FOUND };
    return {
      st: 0,
      rows: rows.flatMap(([idx, ip, plen, origin]) => [
        luidOf(idx),
        idx,
        plen,
        origin,
        origin === ORIGIN_WELL_KNOWN ? NL.IpSuffixOriginLinkLayerAddress : origin,
        NL.IpDadStatePreferred,
        INFINITE_LIFETIME,
        INFINITE_LIFETIME,
        ...inetFields(ip),
      ]),
    };
  }

  /**
   * CreateUnicastIpAddressEntry: the row checked as iphlpapi checks what InitializeUnicastIpAddressEntry
   * leaves invalid (OnLinkPrefixLength within the family's bits, an address of the family), then the
   * simulated host's manual address (src/simulator/host.ts addUnicastAddress: 5010 held already).
   */
  private async createUnicastIpAddressEntry(req: Req): Promise<Reply> {
    const family = num(req, 'family');
    const v6 = family === AF_INET6;
    const address = v6 ? canonicalIp6(str(req, 'address')) : str(req, 'address');
    const plen = num(req, 'onLinkPrefixLength');
    if ((family !== AF_INET && !v6) || address === undefined || (!v6 && !isDottedIPv4(address))) return { st: STATUS.ERROR_INVALID_PARAMETER };
    if (!(plen >= 0 && plen <= (v6 ? 128 : 32))) return { st: STATUS.ERROR_INVALID_PARAMETER };
    const idx = this.resolveIndex(req);
    if (idx === undefined) return { st: STATUS.ERROR_NOT_FOUND };
    await this.dp.enter('CreateUnicastIpAddressEntry', 'host', 0, JSON.stringify({ InterfaceIndex: idx, Address: address, PrefixLength: plen }));
    this.dp.addUnicastAddress(idx, address, plen);
    return { st: 0 };
  }

  private adapterByGuid(req: Req) {
    const guid = str(req, 'guid').toUpperCase();
    return this.dp.listAdapters().find((a) => interfaceGuidOf(a.InterfaceIndex) === guid);
  }

  /**
   * GetInterfaceDnsSettings: the adapter's static DNS servers (the simulated node's `DnsServers`), as one
   * comma-separated NameServer (Microsoft Learn, DNS_INTERFACE_SETTINGS); ERROR_NOT_FOUND for an unknown GUID.
   * A fault on `GetInterfaceDnsSettings` fails it, as on src/simulator/host.ts's nicConfiguration.
   */
  private async getInterfaceDnsSettings(req: Req): Promise<Reply> {
    const a = this.adapterByGuid(req);
    await this.dp.enter('GetInterfaceDnsSettings', 'host', 0, JSON.stringify({ InterfaceIndex: a?.InterfaceIndex }));
    if (!a) return { st: STATUS.ERROR_NOT_FOUND };
    this.dnsSettingsOutstanding++;
    return { st: 0, nameServer: (a.DnsServers ?? []).join(',') };
  }

  /**
   * SetInterfaceDnsSettings: only Version DNS_INTERFACE_SETTINGS_VERSION1 with DNS_SETTING_NAMESERVER is
   * modelled (other settings: ERROR_NOT_SUPPORTED). NameServer (commas or spaces) replaces the static servers
   * of one stack, IPv6 with DNS_SETTING_IPV6 and IPv4 without, whose addresses it must hold
   * (ERROR_INVALID_PARAMETER otherwise); the other stack's stay.
   */
  private async setInterfaceDnsSettings(req: Req): Promise<Reply> {
    const flags = BigInt(num(req, 'flags'));
    const ipv6 = (flags & DNS_SETTINGS.DNS_SETTING_IPV6) !== 0n;
    if (num(req, 'version') !== DNS_SETTINGS.DNS_INTERFACE_SETTINGS_VERSION1) return { st: STATUS.ERROR_INVALID_PARAMETER };
    if ((flags & ~(DNS_SETTINGS.DNS_SETTING_NAMESERVER | DNS_SETTINGS.DNS_SETTING_IPV6)) !== 0n || (flags & DNS_SETTINGS.DNS_SETTING_NAMESERVER) === 0n) {
      return { st: STATUS.ERROR_NOT_SUPPORTED };
    }
    let servers: string[];
    try {
      servers = parseNameServer(str(req, 'nameServer'));
    } catch {
      return { st: STATUS.ERROR_INVALID_PARAMETER };
    }
    if (servers.some((x) => x.includes(':') !== ipv6)) return { st: STATUS.ERROR_INVALID_PARAMETER };
    const a = this.adapterByGuid(req);
    if (!a) return { st: STATUS.ERROR_NOT_FOUND };
    const kept = (a.DnsServers ?? []).filter((x) => x.includes(':') !== ipv6);
    const all = ipv6 ? [...kept, ...servers] : [...servers, ...kept];
    await this.dp.enter('SetInterfaceDnsSettings', 'host', 0, JSON.stringify({ InterfaceIndex: a.InterfaceIndex, NameServer: all.join(',') }));
    this.dp.setDnsServers(a.InterfaceIndex, all);
    return { st: 0 };
  }

  /** An adapter's IPv4 or IPv6 interface row (every adapter has both here, as with both protocols bound). */
  private async getIpInterfaceEntry(req: Req): Promise<Reply> {
    await this.dp.enter('GetIpInterfaceEntry', 'host');
    const family = num(req, 'family');
    if (family !== AF_INET && family !== AF_INET6) return { st: STATUS.ERROR_INVALID_PARAMETER };
    const idx = this.resolveIndex(req);
    if (idx === undefined) return { st: STATUS.ERROR_NOT_FOUND };
    const adapter = this.dp.listAdapters().find((a) => a.InterfaceIndex === idx)!;
    const v6 = family === AF_INET6;
    return {
      st: 0,
      luid: luidOf(idx),
      ifIndex: idx,
      forwarding: this.dp.getForwarding(idx, v6 ? 'ipv6' : 'ipv4') ? 1 : 0,
      mtu: adapter.Mtu,
      metric: 25,
      sitePrefixLength: v6 ? IPV6_SITE_PREFIX_LENGTH_REPORTED : IPV4_SITE_PREFIX_LENGTH_REPORTED,
    };
  }

  private async setIpInterfaceEntry(req: Req): Promise<Reply> {
    await this.dp.enter('SetIpInterfaceEntry', 'host');
    const family = num(req, 'family');
    if (family !== AF_INET && family !== AF_INET6) return { st: STATUS.ERROR_INVALID_PARAMETER };
    // IPv4: SitePrefixLength must be 0 (Microsoft Learn, SetIpInterfaceEntry); IPv6: a prefix length.
    const site = num(req, 'sitePrefixLength');
    if (family === AF_INET ? site !== 0 : !(site >= 0 && site <= 128)) return { st: STATUS.ERROR_INVALID_PARAMETER };
    const idx = this.resolveIndex(req);
    if (idx === undefined) return { st: STATUS.ERROR_NOT_FOUND };
    const mtu = num(req, 'mtu');
    if (!(mtu >= (family === AF_INET6 ? 1280 : 576))) return { st: STATUS.ERROR_INVALID_PARAMETER };
    if (family === AF_INET6) {
      // The IPv6 row's own MTU is not modelled: the agent changes forwarding only.
      this.dp.setForwarding(idx, num(req, 'forwarding') === 1, 'ipv6');
      return { st: 0 };
    }
    const adapter = this.dp.listAdapters().find((a) => a.InterfaceIndex === idx)!;
    if (adapter.Mtu !== mtu) {
      editState(this.dp, (s) => {
        const a = s.adapters.find((x) => x.InterfaceIndex === idx);
        if (a) a.Mtu = mtu;
      });
    }
    this.dp.setForwarding(idx, num(req, 'forwarding') === 1);
    return { st: 0 };
  }
}

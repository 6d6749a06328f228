// Parse net-conf.json into a NetworkConfig, with flannel's defaults and the Windows backend rules.
// Mirrors flannel pkg/subnet/config.go (ParseConfig, CheckNetworkConfig) and the config parts of
// pkg/backend/vxlan/vxlan_windows.go and pkg/backend/hostgw/hostgw_windows.go. Upstream error texts are kept
// byte for byte (docs/compatibility.md §2); every error is FLANNEL_ERR_NET_CONF.
import { isIPv4 } from 'node:net';
import IPCIDR from 'ip-cidr';
import { errorMessage, FlannelError, NetConfError, UnsupportedError } from '../basics/errors.js';
import { contains6, formatCidr6, formatIp6, maskOf6, network6, parseCidr6, parseIp6, type Ip6Net } from '../basics/ip6.js';
import { MAX_CONFIG_FILE_BYTES, readRegularFile } from '../basics/fs.js';
import { withoutBom } from '../basics/bom.js';
import { MAX_JSON_DEPTH, jsonTooDeep } from '../basics/json-depth.js';
import { DEFAULT_VXLAN_PORT, type BackendConfig, type HostGwBackendConfig, type NetworkConfig, type VxlanBackendConfig } from './net-conf-types.js';
import { escapeUnsafe } from '../basics/terminal-text.js';

const DEFAULT_VXLAN_VNI = 4096;
/**
 * Highest VNI Windows can use: the RemoteSubnetRoute policy's IsolationId is a uint16 (hcsshim
 * hcn/hcnpolicy.go RemoteSubnetRoutePolicySetting), and kube-proxy winkernel keeps it as one too.
 */
const MAX_WINDOWS_VNI = 65535;
const DEFAULT_MAC_PREFIX = '0E-2A';
const DEFAULT_HOSTGW_NAME = 'cbr0';
const NET_CONF_CONFIGMAP = 'kube-flannel-cfg';
/**
 * The widest Network accepted: /8. The largest private block (RFC 1918 10.0.0.0/8, RFC 6598
 * 100.64.0.0/10) fits; anything wider takes in public address space, which the pods would then shadow
 * (upstream takes even 0.0.0.0/0, after which every peer's subnet is "in" the network and no route
 * to the outside is left). docs/compatibility.md §2.
 */
export const MIN_NETWORK_PREFIX = 8;

type JsonObject = Record<string, unknown>;

function fail(message: string, context: Record<string, string | number | boolean | undefined> = {}): never {
  throw new NetConfError('FLANNEL_ERR_NET_CONF', message, context);
}

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Go encoding/json field matching: case-insensitive, the last matching key wins; `null` leaves the default.
 * `flanneld netconf set-vni` checks its edit with this same rule (./net-conf-edit.ts).
 */
export function field(obj: JsonObject, name: string): unknown {
  const want = name.toLowerCase();
  let found: unknown = undefined;
  for (const [k, v] of Object.entries(obj)) if (k.toLowerCase() === want) found = v;
  return found === null ? undefined : found;
}

function describe(v: unknown): string {
  const text = JSON.stringify(v) ?? String(v);
  return `${Array.isArray(v) ? 'array' : typeof v} ${text.length > 80 ? text.slice(0, 77) + '...' : text}`;
}

function optBool(obj: JsonObject, name: string, path: string): boolean | undefined {
  const v = field(obj, name);
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') fail(`${path}${name} must be true or false, got ${describe(v)}`, { key: path + name });
  return v;
}

function optString(obj: JsonObject, name: string, path: string): string | undefined {
  const v = field(obj, name);
  if (v === undefined) return undefined;
  if (typeof v !== 'string') fail(`${path}${name} must be a string, got ${describe(v)}`, { key: path + name });
  return v;
}

function optInt(obj: JsonObject, name: string, path: string, min: number): number | undefined {
  const v = field(obj, name);
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min) {
    fail(`${path}${name} must be an integer${min === 0 ? ' >= 0' : ''}, got ${describe(v)}`, { key: path + name });
  }
  return v;
}

function ip4ToInt(ip: string): number {
  return ip.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
}

function intToIp4(n: number): string {
  return [24, 16, 8, 0].map((s) => Math.floor(n / 2 ** s) % 256).join('.');
}

interface Cidr4 {
  base: number;
  prefix: number;
}

function parseCidr4(key: string, s: string): Cidr4 {
  if (!IPCIDR.isValidCIDR(s)) fail(`invalid CIDR address: ${s}`, { key });
  const c = new IPCIDR(s);
  if (!c.address.v4) fail(`${key} ${s} is not an IPv4 CIDR; Network must be an IPv4 range such as 10.244.0.0/16 (use IPv6Network for IPv6)`, { key });
  return { base: ip4ToInt(String(c.start())), prefix: c.address.subnetMask };
}

function optIp4(obj: JsonObject, name: string): number | undefined {
  const s = optString(obj, name, '');
  if (s === undefined) return undefined;
  if (!isIPv4(s)) fail(`${name} "${s}" is not an IPv4 address`, { key: name });
  const n = ip4ToInt(s);
  return n === 0 ? undefined : n; // upstream treats 0.0.0.0 as "not set"
}

/** Parse and validate net-conf.json text (a leading UTF-8 BOM is ignored). Throws NetConfError (FLANNEL_ERR_NET_CONF). */
export function parseNetConf(json: string): NetworkConfig {
  let doc: unknown;
  try {
    doc = JSON.parse(withoutBom(json));
  } catch (err) {
    fail(`net-conf.json is not valid JSON: ${errorMessage(err)}`, { key: '$', reason: 'syntax' });
  }
  if (jsonTooDeep(doc)) fail(`net-conf.json nests arrays or objects deeper than ${MAX_JSON_DEPTH} levels; a network config is a few levels deep`, { key: '$', reason: 'depth' });
  if (!isObject(doc))
    fail(`net-conf.json must be a JSON object such as {"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan"}}, got ${describe(doc)}`, { key: '$', reason: 'type' });

  // Decode (ParseConfig).
  const enableIPv4 = optBool(doc, 'EnableIPv4', '') ?? true;
  const enableIPv6 = optBool(doc, 'EnableIPv6', '') ?? false;
  const networkText = optString(doc, 'Network', '');
  const network = networkText === undefined || networkText === '' ? undefined : parseCidr4('Network', networkText);
  let subnetLen = optInt(doc, 'SubnetLen', '', 0) ?? 0;
  let subnetMin = optIp4(doc, 'SubnetMin');
  let subnetMax = optIp4(doc, 'SubnetMax');
  const ipv6NetworkText = optString(doc, 'IPv6Network', '');
  let ipv6SubnetLen = optInt(doc, 'IPv6SubnetLen', '', 0) ?? 0;
  const rawBackendValue = field(doc, 'Backend');
  const backendPresent = Object.keys(doc).some((k) => k.toLowerCase() === 'backend');
  if (!backendPresent) {
    fail('net-conf.json has no Backend: upstream flannel then defaults to udp, which Windows cannot run; use "Backend": {"Type": "vxlan"} or "Backend": {"Type": "host-gw"}', {
      key: 'Backend',
    });
  }
  const rawBackend: JsonObject = rawBackendValue === undefined ? {} : (rawBackendValue as JsonObject);
  if (!isObject(rawBackend)) fail(`error decoding Backend property of config: Backend must be an object, got ${describe(rawBackendValue)}`, { key: 'Backend' });
  const typeText = optString(rawBackend, 'Type', 'Backend.') ?? '';
  const backendType = typeText.toLowerCase();
  if (typeText === '') fail('Backend.Type is missing; use "Type": "vxlan" or "Type": "host-gw"', { key: 'Backend.Type' });
  if (backendType !== 'vxlan' && backendType !== 'host-gw') {
    fail(`backend type ${typeText} is not supported on Windows; use vxlan or host-gw`, { backendType: typeText });
  }

  if (!enableIPv4 && !enableIPv6) {
    fail('net-conf.json disables IPv4 (EnableIPv4: false) and does not enable IPv6: set EnableIPv4 to true (or remove it)', { key: 'EnableIPv4' });
  }

  // CheckNetworkConfig (IPv4).
  let networkOut = '';
  let minOut = '';
  let maxOut = '';
  if (enableIPv4) {
    if (network === undefined) fail('please define a correct Network parameter in the flannel config');
    if (network.prefix < MIN_NETWORK_PREFIX) {
      fail(
        `Network ${networkText} is wider than /${MIN_NETWORK_PREFIX}: a pod network that large takes in public addresses (and the nodes' own); use a private range such as 10.244.0.0/16`,
        { key: 'Network', reason: 'too-wide', network: networkText },
      );
    }
    if (subnetLen > 0) {
      if (subnetLen > 30) fail('SubnetLen must be less than /31');
      if (subnetLen < network.prefix + 2) fail('network must be able to accommodate at least four subnets');
    } else if (network.prefix > 28) {
      fail('network is too small. Minimum useful network prefix is /28');
    } else if (network.prefix <= 22) {
      subnetLen = 24;
    } else {
      subnetLen = network.prefix + 2;
    }
    const subnetSize = 2 ** (32 - subnetLen);
    const netSize = 2 ** (32 - network.prefix);
    const contains = (ip: number) => ip >= network.base && ip < network.base + netSize;
    if (subnetMin === undefined) subnetMin = network.base + subnetSize;
    else if (!contains(subnetMin)) fail('SubnetMin is not in the range of the Network');
    if (subnetMax === undefined) subnetMax = network.base + netSize - subnetSize;
    else if (!contains(subnetMax)) fail('SubnetMax is not in the range of the Network');
    if (subnetMin % subnetSize !== 0) fail(`SubnetMin is not on a SubnetLen boundary: ${intToIp4(subnetMin)}`);
    if (subnetMax % subnetSize !== 0) fail(`SubnetMax is not on a SubnetLen boundary: ${intToIp4(subnetMax)}`);
    networkOut = `${intToIp4(network.base)}/${network.prefix}`;
    minOut = intToIp4(subnetMin);
    maxOut = intToIp4(subnetMax);
  } else if (network !== undefined) {
    networkOut = `${intToIp4(network.base)}/${network.prefix}`;
  }

  // CheckNetworkConfig (IPv6).
  let ipv6Network = '';
  let ipv6Range: { ipv6SubnetMin: string; ipv6SubnetMax: string } | undefined;
  if (enableIPv6) {
    if (ipv6NetworkText === undefined || ipv6NetworkText === '' || !IPCIDR.isValidCIDR(ipv6NetworkText) || new IPCIDR(ipv6NetworkText).address.v4) {
      fail('please define a correct IPv6Network parameter in the flannel config');
    }
    const c6 = parseCidr6(ipv6NetworkText);
    if (c6 === undefined) fail('please define a correct IPv6Network parameter in the flannel config');
    const prefix6 = c6.prefix;
    if (ipv6SubnetLen > 0) {
      if (ipv6SubnetLen > 126) fail('SubnetLen must be less than /127');
      if (ipv6SubnetLen < prefix6 + 2) fail('network must be able to accommodate at least four subnets');
    } else if (prefix6 > 124) {
      fail('IPv6Network is too small. Minimum useful network prefix is /124');
    } else if (prefix6 <= 62) {
      ipv6SubnetLen = 64;
    } else {
      ipv6SubnetLen = prefix6 + 2;
    }
    const net6 = network6(c6);
    ipv6Network = formatCidr6(net6);
    ipv6Range = ipv6SubnetRange(doc, net6, ipv6SubnetLen);
  }

  const backend: BackendConfig = backendType === 'vxlan' ? vxlanConfig(rawBackend) : hostGwConfig(rawBackend);

  return {
    enableIPv4,
    enableIPv6,
    network: networkOut,
    subnetLen,
    subnetMin: minOut,
    subnetMax: maxOut,
    ipv6Network,
    ipv6SubnetLen: enableIPv6 ? ipv6SubnetLen : 0,
    ...ipv6Range,
    backend,
    rawBackend,
  };
}

/** `IPv6SubnetMin`/`IPv6SubnetMax` as text; unset, empty or `::` means "not set" (upstream ip.IsEmpty). */
function optIp6(obj: JsonObject, name: string): bigint | undefined {
  const s = optString(obj, name, '');
  if (s === undefined || s === '') return undefined;
  const v = parseIp6(s);
  if (v === undefined) fail(`${name} "${s}" is not an IPv6 address`, { key: name });
  return v === 0n ? undefined : v;
}

/**
 * CheckNetworkConfig's IPv6 range: IPv6SubnetMin defaults to the second subnet, IPv6SubnetMax to the
 * last (upstream GetIPv6SubnetMin/Max); given ones must lie in IPv6Network and on an IPv6SubnetLen
 * boundary, with upstream's messages.
 */
function ipv6SubnetRange(doc: JsonObject, net: Ip6Net, subnetLen: number): { ipv6SubnetMin: string; ipv6SubnetMax: string } {
  const size = 1n << BigInt(128 - subnetLen);
  const next = net.ip + (1n << BigInt(128 - net.prefix));
  let min = optIp6(doc, 'IPv6SubnetMin');
  let max = optIp6(doc, 'IPv6SubnetMax');
  if (min === undefined) min = net.ip + size;
  else if (!contains6(net, min)) fail('IPv6SubnetMin is not in the range of the IPv6Network', { key: 'IPv6SubnetMin' });
  if (max === undefined) max = next - size;
  else if (!contains6(net, max)) fail('IPv6SubnetMax is not in the range of the IPv6Network', { key: 'IPv6SubnetMax' });
  const mask = maskOf6(subnetLen);
  if ((min & mask) !== min) fail(`IPv6SubnetMin is not on a SubnetLen boundary: ${formatIp6(min)}`, { key: 'IPv6SubnetMin' });
  if ((max & mask) !== max) fail(`IPv6SubnetMax is not on a SubnetLen boundary: ${formatIp6(max)}`, { key: 'IPv6SubnetMax' });
  return { ipv6SubnetMin: formatIp6(min), ipv6SubnetMax: formatIp6(max) };
}

/**
 * The IP families this agent runs on Windows, checked after parsing (upstream's parser takes them all):
 * IPv4 alone, or IPv4 with IPv6 on host-gw. Throws UnsupportedError (FLANNEL_ERR_UNSUPPORTED) with
 * `reason`:
 * - `ipv6-only`: HNS gives a Windows endpoint no IPv6-only configuration (an L2Bridge network needs an
 *   IPv4 subnet; Windows-Containers#522), and kube-proxy winkernel has no IPv6-only mode.
 * - `vxlan-ipv6`: kube-proxy winkernel falls back to single-stack on an Overlay network, and HNS has
 *   Overlay IPv6 only from build 22410 (microsoft/Windows-Containers#522).
 */
export function checkWindowsIpFamilies(nc: NetworkConfig, context: Record<string, string | undefined> = {}): void {
  if (!nc.enableIPv6) return;
  if (!nc.enableIPv4) {
    throw new UnsupportedError(
      'FLANNEL_ERR_UNSUPPORTED',
      'IPv6-only pod networks (EnableIPv4: false) are not possible on Windows: HNS endpoints need an IPv4 address; set "EnableIPv4": true with a "Network" to run dual-stack',
      { ...context, reason: 'ipv6-only' },
    );
  }
  if (nc.backend.type === 'vxlan') {
    throw new UnsupportedError(
      'FLANNEL_ERR_UNSUPPORTED',
      'IPv6 with the vxlan backend is not supported on Windows (kube-proxy runs single-stack on Overlay networks): run this node IPv4-only with --ipv4-only (FLANNELD_IPV4_ONLY=true; the Linux nodes stay dual-stack, docs/compatibility.md "IPv4-only Windows nodes in a dual-stack cluster"), or use "Backend": {"Type": "host-gw"} for dual-stack',
      { ...context, reason: 'vxlan-ipv6' },
    );
  }
}

/**
 * The net-conf this node runs, checked with checkWindowsIpFamilies: with `--ipv4-only` (the operator's
 * choice, never made for them) a dual-stack net-conf is run as if it had no EnableIPv6, as an IPv4-only
 * cluster's nodes run it: no IPv6 subnet, subnet.env or conflist family, and peers' IPv6 halves unread.
 * An IPv6-only net-conf stays refused (there is no IPv4 half to run).
 */
export function windowsNetConf(nc: NetworkConfig, ipv4Only: boolean, context: Record<string, string | undefined> = {}): NetworkConfig {
  if (!ipv4Only || !nc.enableIPv6 || !nc.enableIPv4) {
    checkWindowsIpFamilies(nc, context);
    return nc;
  }
  const { ipv6SubnetMin: _min, ipv6SubnetMax: _max, ...v4 } = nc;
  return { ...v4, enableIPv6: false, ipv6Network: '', ipv6SubnetLen: 0 };
}

/** What to do when the shared net-conf still carries Linux's vxlan defaults (VNI 1, port 8472). */
export const MIXED_CLUSTER_HINT = `; every node of a mixed cluster must use VNI >= 4096 and one Port (${DEFAULT_VXLAN_PORT} unless every Windows node has HNS 10.3): set them in the shared kube-flannel-cfg with flanneld netconf set-vni (docs/install.md: "2. The net-conf (vxlan)")`;

/** vxlan_windows.go RegisterNetwork: decode, then verify in upstream's order (upstream's messages, plus a hint). */
function vxlanConfig(be: JsonObject): VxlanBackendConfig {
  const vni = optInt(be, 'VNI', 'Backend.', Number.MIN_SAFE_INTEGER) ?? DEFAULT_VXLAN_VNI;
  const port = optInt(be, 'Port', 'Backend.', Number.MIN_SAFE_INTEGER) ?? DEFAULT_VXLAN_PORT;
  const gbp = optBool(be, 'GBP', 'Backend.') ?? false;
  const directRouting = optBool(be, 'DirectRouting', 'Backend.') ?? false;
  const macPrefix = optString(be, 'MacPrefix', 'Backend.') ?? DEFAULT_MAC_PREFIX;
  const name = optString(be, 'Name', 'Backend.') ?? '';
  const legacyRemoteEndpoints = optBool(be, 'LegacyRemoteEndpoints', 'Backend.') ?? false;

  if (vni < DEFAULT_VXLAN_VNI) {
    fail(`invalid VXLAN backend config. VNI [${vni}] must be greater than or equal to ${DEFAULT_VXLAN_VNI} on Windows${MIXED_CLUSTER_HINT}`, { vni });
  }
  if (vni > 0xffffff) fail(`invalid VXLAN backend config. VNI [${vni}] must be at most 16777215 (24 bits)`, { vni });
  if (vni > MAX_WINDOWS_VNI) {
    fail(
      `invalid VXLAN backend config. VNI [${vni}] must be at most ${MAX_WINDOWS_VNI} on Windows: HNS and kube-proxy carry it as a 16-bit IsolationId; choose a VNI from ${DEFAULT_VXLAN_VNI} to ${MAX_WINDOWS_VNI} for every node of the cluster`,
      { vni },
    );
  }
  // Upstream refuses any port but 4789 on Windows; HNS 10.3 takes another as a VxlanPort network policy
  // (src/backends/vxlan/backend.ts), whose Port is a uint16 (hcsshim hcnpolicy.go VxlanPortPolicySetting).
  if (port < 1 || port > 65535) {
    fail(
      `invalid VXLAN backend config. Port [${port}] must be a UDP port from 1 to 65535 (hcsshim VxlanPortPolicySetting Port uint16); omit the setting to default to port ${DEFAULT_VXLAN_PORT}`,
      { port },
    );
  }
  if (directRouting) fail('invalid VXLAN backend config. DirectRouting is not supported on Windows');
  if (gbp) fail('invalid VXLAN backend config. GBP is not supported on Windows');
  if (!/^[0-9A-Fa-f]{2}-[0-9A-Fa-f]{2}$/.test(macPrefix)) {
    fail(`invalid VXLAN backend config.MacPrefix [${macPrefix}] is invalid, prefix must be of the format xx-xx e.g. 0E-2A`, { macPrefix });
  }
  return { type: 'vxlan', vni, port, macPrefix, name: name === '' ? `flannel.${vni}` : hnsNetworkName(name), legacyRemoteEndpoints };
}

/** hostgw_windows.go RegisterNetwork config: Name (default cbr0), DNSServerList. */
function hostGwConfig(be: JsonObject): HostGwBackendConfig {
  const name = optString(be, 'Name', 'Backend.') ?? '';
  const dnsServerList = optString(be, 'DNSServerList', 'Backend.') ?? '';
  return { type: 'host-gw', name: name === '' ? DEFAULT_HOSTGW_NAME : hnsNetworkName(name), dnsServerList };
}

const MAX_HNS_NETWORK_NAME = 256;

/** Device names Windows reserves in every directory, with or without an extension (COM¹..³ and LPT¹..³ too). */
const WINDOWS_RESERVED_NAME = /^(CON|PRN|AUX|NUL|COM[0-9\u00b9\u00b2\u00b3]|LPT[0-9\u00b9\u00b2\u00b3])(\..*)?$/i;

/**
 * Why `name` is not a plain Windows path component (Microsoft Learn, "Naming Files, Paths, and
 * Namespaces"): a reserved character `< > : " | ? *`, a reserved device name (`CON`, `nul.txt`), `.`,
 * or a trailing dot or space (Windows strips them, so `cbr0.` is the directory `cbr0`).
 */
function windowsPathProblem(name: string): string | undefined {
  if (/[<>:"|?*]/.test(name)) return 'contains a character Windows reserves in file names (< > : " | ? *)';
  if (WINDOWS_RESERVED_NAME.test(name)) return 'is a device name Windows reserves (CON, PRN, AUX, NUL, COM0-9, LPT0-9)';
  if (name === '.') return 'is "."';
  if (/[. ]$/.test(name)) return 'ends with a dot or a space, which Windows drops from file names';
  return undefined;
}

/**
 * Backend.Name names the HNS network and, through the CNI config, the host-local IPAM directory
 * `<--cni-ipam-data-dir>/<name>` (containernetworking/plugins plugins/ipam/host-local/backend/disk:
 * filepath.Join(dataDir, network)). So it must be one plain Windows path element: no `/` or `\`, no `..`,
 * nothing windowsPathProblem names,
 * no control, bidi-override or line-separator characters (the one escape, ../basics/terminal-text.ts),
 * at most 256 characters.
 */
function hnsNetworkName(name: string): string {
  const bad =
    name.length > MAX_HNS_NETWORK_NAME
      ? `is longer than ${MAX_HNS_NETWORK_NAME} characters`
      : /[/\\]/.test(name)
        ? 'contains a path separator'
        : name.includes('..')
          ? 'contains ".."'
          : escapeUnsafe(name) !== name
            ? 'contains a control or bidi character'
            : windowsPathProblem(name);
  if (bad) fail(`Backend.Name ${JSON.stringify(name.slice(0, 64))} ${bad}; use a plain HNS network name such as cbr0 or flannel.4096`, { key: 'Backend.Name' });
  return name;
}

/**
 * Refuse a Network that holds one of the node's own addresses (its public IP, its external interface's
 * IP): pod subnets carved from it would be routed over the node's own network, and the host's traffic to
 * its neighbours would go to pods. Throws NetConfError (FLANNEL_ERR_NET_CONF, reason covers-node-address).
 */
export function checkNetworkExcludesNode(networkCidr: string, nodeAddresses: readonly string[]): void {
  const n = parseCidr4('Network', networkCidr);
  const size = 2 ** (32 - n.prefix);
  for (const address of nodeAddresses) {
    if (!isIPv4(address)) continue;
    const ip = ip4ToInt(address);
    if (ip >= n.base && ip < n.base + size) {
      fail(`Network ${networkCidr} contains this node's address ${address}: choose a pod network that does not overlap the node network (e.g. 10.244.0.0/16)`, {
        key: 'Network',
        reason: 'covers-node-address',
        network: networkCidr,
        address,
      });
    }
  }
}

/** checkNetworkExcludesNode for IPv6Network and the node's IPv6 addresses (reason covers-node-address). */
export function checkIPv6NetworkExcludesNode(ipv6Network: string, nodeAddresses: readonly string[]): void {
  for (const address of nodeAddresses) {
    if (contains6(ipv6Network, address)) {
      fail(`IPv6Network ${ipv6Network} contains this node's address ${address}: choose a pod network that does not overlap the node network`, {
        key: 'IPv6Network',
        reason: 'covers-node-address',
        network: ipv6Network,
        address,
      });
    }
  }
}

/**
 * Read and parse the net-conf.json at `path` (a regular file of at most 1 MiB, src/basics/fs.ts). A missing file names the path and the ConfigMap that
 * normally provides it; parse errors keep their upstream text, prefixed with the path.
 */
export function readNetConf(path: string, readFile: (p: string) => string = (p) => readRegularFile(p, MAX_CONFIG_FILE_BYTES, '--net-config-path')): NetworkConfig {
  let text: string;
  try {
    text = readFile(path);
  } catch (err) {
    if (err instanceof FlannelError) throw err;
    const code = (err as { code?: unknown }).code;
    if (code === 'ENOENT') {
      throw new NetConfError(
        'FLANNEL_ERR_NET_CONF',
        `net-conf.json not found at ${path}: mount the ${NET_CONF_CONFIGMAP} ConfigMap (key net-conf.json) there, or pass --net-config-path`,
        { path },
        { cause: err },
      );
    }
    throw new NetConfError('FLANNEL_ERR_NET_CONF', `cannot read net-conf.json at ${path}: ${errorMessage(err)}`, { path }, { cause: err });
  }
  try {
    return parseNetConf(text);
  } catch (err) {
    if (err instanceof FlannelError) {
      throw new NetConfError('FLANNEL_ERR_NET_CONF', `${path}: ${err.message}`, { ...err.context, path }, { cause: err });
    }
    throw err;
  }
}

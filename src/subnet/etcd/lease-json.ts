// The JSON value of an etcd lease key, byte-compatible with flannel's LeaseAttrs marshalling.
// Mirrors flannel pkg/lease/lease.go (LeaseAttrs: PublicIP, PublicIPv6 pointer -> `null`,
// BackendType/BackendData/BackendV6Data `omitempty`), as encoding/json writes and reads it; a dual-stack
// lease's PublicIPv6 is its text.
import { isIp4 } from '../../basics/ip4.js';
import { formatIp6, parseIp6 } from '../../basics/ip6.js';
import type { LeaseAttrs } from '../lease.js';
import { isVxlanBackendData } from '../lease.js';

/** What a lease value says about its node. */
export interface DecodedLeaseAttrs {
  publicIP: string;
  backendType: string;
  /** Parsed BackendData; `null` when absent (host-gw). */
  backendData: unknown;
  /** A dual-stack lease's PublicIPv6 (as Go prints it), when it holds one. */
  publicIPv6?: string;
}

/**
 * `{"PublicIP":"192.168.64.3","PublicIPv6":null,"BackendType":"vxlan","BackendData":{"VNI":4096,"VtepMAC":"c6:d2:32:6f:8f:44"}}`.
 * vxlan data is written in Go's struct order (VNI, VtepMAC); host-gw (null data) omits BackendData.
 */
export function encodeLeaseAttrs(attrs: LeaseAttrs): string {
  // PublicIPv6 is a *ip.IP6: `null` when unset, else its text (ip.IP6 MarshalJSON: json.Marshal(ip6.String())).
  const v6 = attrs.publicIPv6 === undefined ? undefined : parseIp6(attrs.publicIPv6);
  let out = `{"PublicIP":${JSON.stringify(attrs.publicIP)},"PublicIPv6":${v6 === undefined ? 'null' : JSON.stringify(formatIp6(v6))}`;
  if (attrs.backendType !== '') out += `,"BackendType":${JSON.stringify(attrs.backendType)}`;
  const d = attrs.backendData;
  if (d !== null && d !== undefined) {
    const data = isVxlanBackendData(d) ? { VNI: d.VNI, VtepMAC: d.VtepMAC } : d;
    out += `,"BackendData":${JSON.stringify(data)}`;
  }
  return out + '}';
}

/** encoding/json field matching: case-insensitive, the last matching key wins. */
function field(obj: Record<string, unknown>, name: string): unknown {
  const want = name.toLowerCase();
  let found: unknown = undefined;
  for (const [k, v] of Object.entries(obj)) if (k.toLowerCase() === want) found = v;
  return found;
}

/** Decode a lease value; a string saying what is wrong when it cannot be used. */
export function decodeLeaseAttrs(text: string): DecodedLeaseAttrs | string {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    return `value is not JSON (${err instanceof Error ? err.message : String(err)})`;
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return 'value is not a JSON object';
  const obj = doc as Record<string, unknown>;
  const ip = field(obj, 'PublicIP');
  if (typeof ip !== 'string' || !isIp4(ip)) return `PublicIP ${JSON.stringify(ip) ?? 'undefined'} is not an IPv4 address`;
  const bt = field(obj, 'BackendType');
  if (bt !== undefined && bt !== null && typeof bt !== 'string') return 'BackendType is not a string';
  const bd = field(obj, 'BackendData');
  const ip6 = field(obj, 'PublicIPv6');
  const out: DecodedLeaseAttrs = { publicIP: ip, backendType: typeof bt === 'string' ? bt : '', backendData: bd === undefined ? null : bd };
  if (ip6 !== undefined && ip6 !== null) out.publicIPv6 = publicIPv6Text(ip6);
  return out;
}

/** The longest PublicIPv6 text kept as given when it is no IPv6 address (an address with a zone fits). */
const MAX_BAD_IPV6_TEXT = 64;

/**
 * A PublicIPv6 as Go prints it; one that is no IPv6 address stays as given (bounded) for the peer
 * validator to reject the IPv6 half alone, naming it: upstream's ip.IP6 UnmarshalJSON fails the whole
 * value, which would cost the peer its IPv4 route (docs/compatibility.md, Dual-stack).
 */
function publicIPv6Text(v: unknown): string {
  if (typeof v !== 'string') return Array.isArray(v) ? '(an array)' : `(a${typeof v === 'object' ? 'n' : ''} ${typeof v})`;
  const ip6 = parseIp6(v);
  if (ip6 !== undefined) return formatIp6(ip6);
  return v.length <= MAX_BAD_IPV6_TEXT ? v : `(${v.length} characters)`;
}

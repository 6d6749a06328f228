// Node -> small lease record, the moment a Node arrives (full Node objects are never kept).
// Mirrors flannel pkg/subnet/kube/kube.go: nodeToLease, handleAddLeaseEvent, handleUpdateLeaseEvent.
// Pure and total: hostile input (missing fields, wrong types, huge strings) never throws.
import type { Lease } from '../lease.js';
import type { AnnotationKeys } from './annotations.js';
import { decodeBackendData } from './annotations.js';

/** Annotation values longer than this are treated as invalid (never kept in memory). */
export const MAX_ANNOTATION_LENGTH = 1024;
const MAX_NAME_LENGTH = 253;
const MAX_CIDR_LENGTH = 43;

/** What the kube subnet manager keeps per Node. */
export interface NodeLease {
  name: string;
  /** First IPv4 of spec.podCIDRs, else spec.podCIDR (when IPv4); network-address form. */
  podCIDR?: string;
  /** The `kube-subnet-manager` annotation. */
  subnetManager?: string;
  backendType?: string;
  /** The raw `backend-data` annotation. */
  backendData?: string;
  publicIP?: string;
  publicIPOverwrite?: string;
  nodePublicIP?: string;
  /** Names of the fields above whose annotation was present but oversized (value dropped). */
  oversized?: string[];
}

type Obj = Record<string, unknown>;

function asObj(v: unknown): Obj | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined;
}

/** Strict dotted-quad IPv4 (no leading zeros, as Go's net.ParseIP) to a uint32. */
export function parseIPv4(s: string): number | undefined {
  if (s.length > 15) return undefined;
  const parts = s.split('.');
  if (parts.length !== 4) return undefined;
  let n = 0;
  for (const p of parts) {
    if (!/^(0|[1-9]\d{0,2})$/.test(p)) return undefined;
    const o = Number(p);
    if (o > 255) return undefined;
    n = n * 256 + o;
  }
  return n;
}

export function formatIPv4(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

export interface IPv4Cidr {
  /** Network address (host bits cleared). */
  ip: number;
  prefix: number;
}

/** Parse `a.b.c.d/n` (IPv4 only) and mask the host bits, as Go's net.ParseCIDR does. */
export function parseIPv4Cidr(s: string): IPv4Cidr | undefined {
  if (s.length > MAX_CIDR_LENGTH) return undefined;
  const slash = s.indexOf('/');
  if (slash < 0) return undefined;
  const ip = parseIPv4(s.slice(0, slash));
  const pfx = s.slice(slash + 1);
  if (ip === undefined || !/^(0|[1-9]\d?)$/.test(pfx)) return undefined;
  const prefix = Number(pfx);
  if (prefix > 32) return undefined;
  return { ip: maskIPv4(ip, prefix), prefix };
}

export function maskIPv4(ip: number, prefix: number): number {
  return prefix === 0 ? 0 : (ip & (0xffffffff << (32 - prefix))) >>> 0;
}

export function formatCidr(c: IPv4Cidr): string {
  return `${formatIPv4(c.ip)}/${c.prefix}`;
}

/** `inner` lies inside `outer` (flannel containsCIDR). */
export function cidrContains(outer: IPv4Cidr, inner: IPv4Cidr): boolean {
  return outer.prefix <= inner.prefix && maskIPv4(inner.ip, outer.prefix) === outer.ip;
}

/** First IPv4 CIDR of spec.podCIDRs, else spec.podCIDR when it is IPv4; network-address form. */
export function nodePodCIDR(spec: unknown): string | undefined {
  const s = asObj(spec);
  if (!s) return undefined;
  const list = s.podCIDRs;
  if (Array.isArray(list) && list.length > 0) {
    for (const c of list.slice(0, 8)) {
      if (typeof c !== 'string') continue;
      const p = parseIPv4Cidr(c);
      if (p) return formatCidr(p);
    }
    return undefined;
  }
  if (typeof s.podCIDR === 'string') {
    const p = parseIPv4Cidr(s.podCIDR);
    if (p) return formatCidr(p);
  }
  return undefined;
}

/** Project a Node (typed client-node object or raw JSON) to its lease record; undefined without a name. */
export function projectNode(node: unknown, keys: AnnotationKeys): NodeLease | undefined {
  const n = asObj(node);
  const meta = asObj(n?.metadata);
  const name = meta?.name;
  if (typeof name !== 'string' || name === '' || name.length > MAX_NAME_LENGTH) return undefined;
  const rec: NodeLease = { name };
  const pod = nodePodCIDR(n?.spec);
  if (pod !== undefined) rec.podCIDR = pod;
  const ann = asObj(meta?.annotations);
  if (!ann) return rec;
  const pick = (field: keyof NodeLease & string, key: string) => {
    if (!Object.prototype.hasOwnProperty.call(ann, key)) return;
    const v = ann[key];
    if (typeof v !== 'string') return;
    if (v.length > MAX_ANNOTATION_LENGTH) {
      (rec.oversized ??= []).push(field);
      return;
    }
    (rec as unknown as Record<string, string>)[field] = v;
  };
  pick('subnetManager', keys.kubeSubnetManager);
  pick('backendType', keys.backendType);
  pick('backendData', keys.backendData);
  pick('publicIP', keys.publicIP);
  pick('publicIPOverwrite', keys.publicIPOverwrite);
  pick('nodePublicIP', keys.nodePublicIP);
  return rec;
}

/**
 * The peer lease a record stands for: only Nodes with `kube-subnet-manager == "true"` and a podCIDR.
 * Other fields pass through as published (an invalid public IP or backend-data is the LeaseWatcher's
 * to reject); oversized backend-data decodes as `undefined` (malformed).
 */
export function toLease(rec: NodeLease): Lease | undefined {
  if (rec.subnetManager !== 'true' || rec.podCIDR === undefined) return undefined;
  const oversized = rec.oversized ?? [];
  return {
    key: rec.name,
    subnet: rec.podCIDR,
    publicIP: rec.publicIP ?? '',
    backendType: rec.backendType ?? '',
    backendData: oversized.includes('backendData') ? undefined : decodeBackendData(rec.backendData),
  };
}

/**
 * Whether a change between two records of one Node can change its lease: podCIDR, the subnet-manager
 * flag, backend-type, backend-data or public-ip. Heartbeats and resourceVersion bumps cannot.
 */
export function leaseRelevantChanged(a: NodeLease | undefined, b: NodeLease | undefined): boolean {
  if (a === undefined || b === undefined) return a !== b;
  return (
    a.podCIDR !== b.podCIDR ||
    a.subnetManager !== b.subnetManager ||
    a.backendType !== b.backendType ||
    a.backendData !== b.backendData ||
    a.publicIP !== b.publicIP ||
    (a.oversized ?? []).join(',') !== (b.oversized ?? []).join(',')
  );
}

// Node -> small lease record, the moment a Node arrives (full Node objects are never kept).
// Mirrors flannel pkg/subnet/kube/kube.go: nodeToLease, handleAddLeaseEvent, handleUpdateLeaseEvent.
// Pure and total: hostile input (missing fields, wrong types, huge strings) never throws.
import type { Lease } from '../lease.js';
import type { AnnotationKeys } from './annotations.js';
import { decodeBackendData } from './annotations.js';
import { normalizeCidr } from '../../ip4.js';

/** Annotation values longer than this are treated as invalid (never kept in memory). */
export const MAX_ANNOTATION_LENGTH = 1024;
const MAX_NAME_LENGTH = 253;
const MAX_CIDR_LENGTH = 43;

/** What the kube subnet manager keeps per Node. */
export interface NodeLease {
  name: string;
  /** First IPv4 of spec.podCIDRs, else spec.podCIDR (when IPv4); network-address form. */
  podCIDR?: string;
  /** What the Node has instead when it has a podCIDR but no IPv4 CIDR (bounded; e.g. an IPv6 CIDR). */
  badPodCIDR?: string;
  /** metadata.creationTimestamp in ms since epoch (who holds a contested subnet). */
  created?: number;
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

/** `v` as a plain JSON object (not null, not an array), else undefined. */
export function asObj(v: unknown): Obj | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined;
}

/** An IPv4 CIDR in network-address form (host bits masked, as Go's net.ParseCIDR), bounded in length. */
function podCidr(s: string): string | undefined {
  return s.length > MAX_CIDR_LENGTH ? undefined : normalizeCidr(s);
}

/** First IPv4 CIDR of spec.podCIDRs, else spec.podCIDR when it is IPv4; network-address form. */
export function nodePodCIDR(spec: unknown): string | undefined {
  const s = asObj(spec);
  if (!s) return undefined;
  const list = s.podCIDRs;
  // A podCIDRs that is not a list is malformed (the API always serves a list); falling back to podCIDR
  // would accept a Node the API server's own validation could never have produced.
  if (list !== undefined && list !== null && list !== '' && !Array.isArray(list)) return undefined;
  if (Array.isArray(list) && list.length > 0) {
    for (const c of list.slice(0, 8)) {
      if (typeof c !== 'string') continue;
      const p = podCidr(c);
      if (p) return p;
    }
    return undefined;
  }
  return typeof s.podCIDR === 'string' ? podCidr(s.podCIDR) : undefined;
}

/**
 * What a Node offers as podCIDR when it has no IPv4 CIDR: the first entry of spec.podCIDRs (or
 * spec.podCIDR), as text and bounded, so that the peer is rejected with a reason instead of vanishing.
 * Undefined when the Node has no podCIDR at all (not yet allocated: not an error).
 */
function nodeBadPodCIDR(spec: unknown): string | undefined {
  const s = asObj(spec);
  if (!s) return spec === undefined || spec === null ? undefined : '';
  const list = s.podCIDRs;
  // podCIDRs that is not a list is shown as JSON (quoted), so it can never pass as a CIDR.
  if (list !== undefined && list !== null && list !== '' && !Array.isArray(list)) return bounded(JSON.stringify(list) ?? '');
  const v: unknown = Array.isArray(list) && list.length > 0 ? list[0] : s.podCIDR;
  if (v === undefined || v === null || v === '') return undefined;
  return bounded(typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));
}

/** At most MAX_CIDR_LENGTH characters; a longer text is cut and marked, so it stays invalid. */
function bounded(text: string): string {
  return text.length > MAX_CIDR_LENGTH ? `${text.slice(0, MAX_CIDR_LENGTH)}…` : text;
}

/** metadata.creationTimestamp (RFC 3339) in ms since epoch; undefined when absent or unparsable. */
function creationTime(v: unknown): number | undefined {
  if (typeof v !== 'string' || v.length > 64) return undefined;
  const t = Date.parse(v);
  return Number.isFinite(t) ? t : undefined;
}

/** Project a raw Node to its lease record; undefined without a usable name. */
export function projectNode(node: unknown, keys: AnnotationKeys): NodeLease | undefined {
  const n = asObj(node);
  const meta = asObj(n?.metadata);
  const name = meta?.name;
  if (typeof name !== 'string' || name === '' || name.length > MAX_NAME_LENGTH) return undefined;
  const rec: NodeLease = { name };
  const pod = nodePodCIDR(n?.spec);
  if (pod !== undefined) rec.podCIDR = pod;
  else {
    const bad = nodeBadPodCIDR(n?.spec);
    if (bad !== undefined) rec.badPodCIDR = bad;
  }
  const created = creationTime(meta?.creationTimestamp);
  if (created !== undefined) rec.created = created;
  const ann = asObj(meta?.annotations);
  if (!ann) return rec;
  const pick = (field: Extract<keyof NodeLease, string>, key: string) => {
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
 * Other fields pass through as published (an invalid subnet, public IP or backend-data is the
 * LeaseWatcher's to reject, with a reason); oversized backend-data decodes as `undefined` (malformed).
 */
export function toLease(rec: NodeLease): Lease | undefined {
  const subnet = rec.podCIDR ?? rec.badPodCIDR;
  if (rec.subnetManager !== 'true' || subnet === undefined) return undefined;
  const oversized = rec.oversized ?? [];
  return {
    key: rec.name,
    subnet,
    ...(rec.created !== undefined ? { created: rec.created } : {}),
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
    a.badPodCIDR !== b.badPodCIDR ||
    a.created !== b.created ||
    a.subnetManager !== b.subnetManager ||
    a.backendType !== b.backendType ||
    a.backendData !== b.backendData ||
    a.publicIP !== b.publicIP ||
    (a.oversized ?? []).join(',') !== (b.oversized ?? []).join(',')
  );
}

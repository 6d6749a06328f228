// A JSON object read from raw JSON (an API object, a file): the one check every reader of untyped JSON
// makes before it reads a field (src/kube/list-watch.ts's projections, src/netpol/types.ts's validation).

/** A JSON object's fields, not yet checked. */
export type Obj = Record<string, unknown>;

/** `v` as an object (not null, not an array), else undefined. */
export function asObj(v: unknown): Obj | undefined {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : undefined;
}

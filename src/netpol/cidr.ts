// CIDR arithmetic for both families, for what HNS ACLs cannot say: an ipBlock's `except` becomes the
// CIDRs of `cidr` that remain (HNS ACLs have no "not" match: hcsshim hcn/hcnpolicy.go AclPolicySetting
// has addresses only, and Azure NPM refuses `except` on Windows for that reason, ErrUnsupportedExceptCIDR in
// npm/pkg/controlplane/translation/translatePolicy.go). Parsing and text are src/basics/ip4.ts and ip6.ts
// (flannel pkg/ip); a network is held here as a bigint for both families alike.
import { formatIp4, normalizeCidr, parseIp4 } from '../basics/ip4.js';
import { formatIp6, normalizeCidr6, parseIp6 } from '../basics/ip6.js';

export interface Net {
  v6: boolean;
  /** The network address (host bits clear). */
  ip: bigint;
  prefix: number;
}

const bitsOf = (v6: boolean): number => (v6 ? 128 : 32);

/** A CIDR of either family in canonical network form (host bits cleared), with its family; undefined when neither. */
export function canonicalCidr(text: string): { cidr: string; v6: boolean } | undefined {
  const v4 = normalizeCidr(text);
  if (v4 !== undefined) return { cidr: v4, v6: false };
  const v6 = normalizeCidr6(text);
  return v6 === undefined ? undefined : { cidr: v6, v6: true };
}

export function parseNet(text: string): Net | undefined {
  const c = canonicalCidr(text);
  if (c === undefined) return undefined;
  const [addr, prefix] = c.cidr.split('/');
  const ip = c.v6 ? parseIp6(addr) : parseIp4(addr);
  return ip === undefined ? undefined : { v6: c.v6, ip: BigInt(ip), prefix: Number(prefix) };
}

export function formatNet(n: Net): string {
  return `${n.v6 ? formatIp6(n.ip) : formatIp4(Number(n.ip))}/${n.prefix}`;
}

/** Does `outer` hold all of `inner` (same family)? */
export function netContains(outer: Net, inner: Net): boolean {
  if (outer.v6 !== inner.v6 || inner.prefix < outer.prefix) return false;
  const shift = BigInt(bitsOf(outer.v6) - outer.prefix);
  return inner.ip >> shift === outer.ip >> shift;
}

/** Does the network hold the address (text of either family)? */
export function netHas(n: Net, ip: string): boolean {
  const v = n.v6 ? parseIp6(ip) : parseIp4(ip);
  return v !== undefined && netContains(n, { v6: n.v6, ip: BigInt(v), prefix: bitsOf(n.v6) });
}

/**
 * `base` less every network in `except`, as the fewest aligned CIDRs, in address order. Removing a /p
 * from a /q (q < p) leaves p - q networks: the sibling of each step down towards it; so the result holds
 * at most 128 networks per except.
 */
export function subtract(base: Net, except: readonly Net[]): Net[] {
  let rest = [base];
  for (const e of except) {
    if (e.v6 !== base.v6) continue;
    rest = rest.flatMap((n) => {
      if (netContains(e, n)) return [];
      if (!netContains(n, e)) return [n];
      const out: Net[] = [];
      const bits = bitsOf(n.v6);
      for (let p = n.prefix + 1; p <= e.prefix; p++) {
        // The half at prefix p that does not hold e: e's own network at p with that bit flipped.
        const bit = 1n << BigInt(bits - p);
        const mask = ((1n << BigInt(bits)) - 1n) ^ (bit - 1n);
        out.push({ v6: n.v6, ip: (e.ip & mask) ^ bit, prefix: p });
      }
      return out;
    });
  }
  return rest.sort((a, b) => (a.ip < b.ip ? -1 : a.ip > b.ip ? 1 : a.prefix - b.prefix));
}

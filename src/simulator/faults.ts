// Fault rules of the simulated node: what makes a call fail the way Windows makes it fail.
//  * `faults` in the state file (scriptable from outside the agent, docs/simulator.md, Faults):
//    `{"op": "HcnModifyNetwork", "match": "10.244.7.0/24", "hresult": "0x803B002F", "remaining": -1}`;
//  * the in-process injections of tests and benchmarks (failNext, failRate, stall), never persisted.
// `op` names the Windows call as the simulator counts it: the computenetwork.dll export (`HcnModifyNetwork`),
// `HNSCall <METHOD> <path template>` for vmcompute.dll's v1 HNSCall (`HNSCall POST /networks/`,
// `HNSCall GET /networks/{id}`), the iphlpapi function for routes and adapters (`CreateIpForwardEntry2`).
// A pattern matches the name exactly or as a word prefix (`HNSCall` matches every v1 call). Pure.

/** A rule of the state file's `faults` array. */
export interface FaultRule {
  /** The call name (see above). */
  op: string;
  /** Substring of the call's input (its JSON settings/query/body, the object ID or path, the route); optional. */
  match?: string;
  /** What the call returns: an HRESULT for HNS calls, a Win32/NETIO status for route and host calls. */
  hresult: string | number;
  /** Times left to fire; -1 = always. Decremented (and written back) each time it fires. */
  remaining: number;
}

function opMatches(pattern: string | RegExp, op: string): boolean {
  if (typeof pattern === 'string') return op === pattern || op.startsWith(pattern + ' ');
  pattern.lastIndex = 0;
  return pattern.test(op);
}

/** `"0x803B002F"`, `"2151350319"` or a number -> the unsigned code; undefined when not a 32-bit code. */
export function parseHresult(v: unknown): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^(0x[0-9a-f]{1,8}|\d{1,10})$/i.test(v.trim()) ? Number(v.trim()) : NaN;
  if (!Number.isInteger(n) || n < -0x80000000 || n > 0xffffffff) return undefined;
  return n >>> 0;
}

/** What is wrong with a `faults` value, and where (`$.faults[1].hresult`). */
export interface FaultRulesProblem {
  problem: string;
  entry: string;
}

/** Check a `faults` value; returns the rules, or what is wrong with which rule. */
export function parseFaultRules(v: unknown): FaultRule[] | FaultRulesProblem {
  const bad = (problem: string, entry: string): FaultRulesProblem => ({ problem, entry: `$.faults${entry}` });
  if (!Array.isArray(v)) return bad('"faults" must be an array of {"op","match","hresult","remaining"} rules', '');
  const rules: FaultRule[] = [];
  for (const [i, r] of v.entries()) {
    const o = (typeof r === 'object' && r !== null && !Array.isArray(r) ? r : undefined) as Record<string, unknown> | undefined;
    if (!o || typeof o.op !== 'string' || o.op.trim() === '') return bad(`faults[${i}] needs "op": the call name, e.g. "HcnModifyNetwork"`, `[${i}].op`);
    if (o.match !== undefined && typeof o.match !== 'string') return bad(`faults[${i}].match must be a string (a substring of the call's input)`, `[${i}].match`);
    if (parseHresult(o.hresult) === undefined) return bad(`faults[${i}].hresult ${JSON.stringify(o.hresult)} is not a 32-bit code like "0x803B002F"`, `[${i}].hresult`);
    const remaining = o.remaining ?? -1;
    if (!Number.isInteger(remaining) || (remaining as number) < -1) return bad(`faults[${i}].remaining must be -1 (always) or a count >= 0`, `[${i}].remaining`);
    rules.push({ ...(o as unknown as FaultRule), remaining: remaining as number });
  }
  return rules;
}

/**
 * The first live rule for this call, or undefined. `input` is what the call was given; a rule with a
 * `match` fires only when its text occurs in it.
 */
export function findFault(rules: readonly FaultRule[] | undefined, op: string, input: string): FaultRule | undefined {
  return rules?.find((r) => r.remaining !== 0 && opMatches(r.op, op) && (r.match === undefined || input.includes(r.match)));
}

/** Count one firing of `rule` (an always-rule stays at -1). */
export function consumeFault(rule: FaultRule): void {
  if (rule.remaining > 0) rule.remaining--;
}

interface CountedRule {
  op: string | RegExp;
  remaining: number;
}

/** The in-process injections of tests and benchmarks (not persisted). */
export class Injections {
  private failRules: (CountedRule & { hresult: number })[] = [];
  private stallRules: (CountedRule & { ms: number })[] = [];
  private rate: { probability: number; hresult: number; op?: string | RegExp } | undefined;

  failNext(op: string | RegExp, hresult: number, count = 1): void {
    this.failRules.push({ op, hresult, remaining: count });
  }

  failRate(probability: number, hresult: number, op?: string | RegExp): void {
    this.rate = probability > 0 ? { probability, hresult, op } : undefined;
  }

  stall(op: string | RegExp, ms: number, count = 1): void {
    this.stallRules.push({ op, ms, remaining: count });
  }

  clear(): void {
    this.failRules = [];
    this.stallRules = [];
    this.rate = undefined;
  }

  /** Extra delay for this call (consumes one stall). */
  takeStall(op: string): number {
    const rule = take(this.stallRules, op);
    this.stallRules = this.stallRules.filter((r) => r.remaining > 0);
    return rule?.ms ?? 0;
  }

  /** The code this call fails with, if any (consumes one failNext; `random` decides failRate). */
  takeFailure(op: string, random: () => number): number | undefined {
    const rule = take(this.failRules, op);
    this.failRules = this.failRules.filter((r) => r.remaining > 0);
    if (rule) return rule.hresult;
    if (this.rate && (this.rate.op === undefined || opMatches(this.rate.op, op)) && random() < this.rate.probability) return this.rate.hresult;
    return undefined;
  }
}

function take<R extends CountedRule>(rules: R[], op: string): R | undefined {
  const rule = rules.find((r) => r.remaining > 0 && opMatches(r.op, op));
  if (rule) rule.remaining--;
  return rule;
}

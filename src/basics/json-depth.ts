// Bounded JSON documents. JSON.parse itself copes with any nesting, but everything that walks the result
// recursively afterwards (JSON.stringify in a message, structuredClone, a validator) overflows the stack
// on a hostile file of 100,000 `[`. Files the agent reads (net-conf.json, the dataplane state file) are a
// few levels deep, so anything deeper than MAX_JSON_DEPTH is refused before it is walked.

/** Deepest nesting of arrays/objects accepted in a file the agent reads. */
export const MAX_JSON_DEPTH = 64;

/** True when `value` nests arrays/objects deeper than `max` levels. Iterative: safe on any input. */
export function jsonTooDeep(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  const stack: Array<{ v: unknown; depth: number }> = [{ v: value, depth: 0 }];
  while (stack.length > 0) {
    const { v, depth } = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth + 1 > max) return true;
    for (const child of Object.values(v)) stack.push({ v: child, depth: depth + 1 });
  }
  return false;
}

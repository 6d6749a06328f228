// src/netpol/ is the pure core of NetworkPolicy enforcement (docs/architecture.md): it takes objects and
// gives rules, and has no effects. It may import src/basics' address helpers and JSON-object check, the HNS JSON of
// src/hns/schema.ts (types and constants) and the version gates of src/hns/features.ts (both pure),
// src/reconcile/plan.ts (the agent's one diff) and node:crypto (the Ids' digest); no
// clock, file, log, metric, HNS client or API client. Read from the source text, as
// import-direction.test.ts reads it.
import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const ALLOWED = new Set(['../basics/ip4.js', '../basics/ip6.js', '../basics/json-object.js', '../hns/schema.js', '../hns/features.js', '../reconcile/plan.js', 'node:crypto']);

/** Every import of a file not inside src/netpol/ that the rule does not allow, as `file: what`. */
function violations(file: string, text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(/^import\s+(type\s+)?[^'"]*?from\s+['"]([^'"]+)['"]/gm)) {
    const spec = m[2];
    if (spec.startsWith('./')) continue;
    if (!ALLOWED.has(spec)) out.push(`${file}: ${spec}`);
  }
  for (const m of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]/g)) out.push(`${file}: import(${m[1]})`);
  return out;
}

describe('src/netpol/ imports', () => {
  it('the check sees a forbidden module, a type import of one and a dynamic import', () => {
    expect(
      violations(
        'f.ts',
        "import { x } from '../basics/clock.js';\nimport type { c } from '../hns/client.js';\nimport { y } from '../hns/schema.js';\nconst m = import('node:fs');",
      ),
    ).toEqual(['f.ts: ../basics/clock.js', 'f.ts: ../hns/client.js', 'f.ts: import(node:fs)']);
  });

  it('are its own files, the address helpers, the HNS schema and version gates, the plan and node:crypto only', () => {
    const files = readdirSync('src/netpol').filter((f) => f.endsWith('.ts'));
    expect(files).toContain('types.ts');
    expect(files.flatMap((f) => violations(f, readFileSync(join('src/netpol', f), 'utf8')))).toEqual([]);
  });
});

// docs/errors.md must document every error code the source uses, each with its family class, its cause
// and what to do, and must not document codes that no longer exist. A code added to src/ without a
// section fails here.
import { describe, it, expect } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ERROR_FAMILIES } from '../../../src/basics/errors.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const CODE = /FLANNEL_ERR_[A-Z0-9_]+/g;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return /\.(ts|mts|cts|js|mjs)$/.test(e.name) ? [p] : [];
  });
}

function codesInSource(): Set<string> {
  const codes = new Set<string>();
  for (const file of sourceFiles(join(root, 'src'))) {
    for (const m of readFileSync(file, 'utf8').matchAll(CODE)) codes.add(m[0]);
  }
  return codes;
}

/** `### \`FLANNEL_ERR_X\`` headings of docs/errors.md, each with the text up to the next heading. */
function documentedSections(): Map<string, string> {
  const text = readFileSync(join(root, 'docs', 'errors.md'), 'utf8');
  const sections = new Map<string, string>();
  const parts = text.split(/^(?=#{1,3} )/m);
  for (const part of parts) {
    const m = /^### `(FLANNEL_ERR_[A-Z0-9_]+)`/.exec(part);
    if (m) sections.set(m[1], part);
  }
  return sections;
}

describe('docs/errors.md', () => {
  const inSource = codesInSource();
  const documented = documentedSections();

  it('finds the codes in src/ (the scan works)', () => {
    expect(inSource.size).toBeGreaterThan(10);
    expect(inSource).toContain('FLANNEL_ERR_HNS_CALL');
  });

  it('has a section for every FLANNEL_ERR_ code used in src/', () => {
    const missing = [...inSource].filter((c) => !documented.has(c)).sort();
    expect(missing).toEqual([]);
  });

  it('documents no code that src/ no longer uses', () => {
    const stale = [...documented.keys()].filter((c) => !inSource.has(c)).sort();
    expect(stale).toEqual([]);
  });

  it('names the family class of each code, as src/basics/errors.ts declares it', () => {
    const declared = new Map<string, string>(Object.entries(ERROR_FAMILIES).flatMap(([family, codes]) => codes.map((c): [string, string] => [c, family])));
    expect([...declared.keys()].sort()).toEqual([...inSource].sort());
    const wrong = [...documented]
      .filter(([code, body]) => /\*\*Class\.\*\* `(\w+)`/.exec(body)?.[1] !== declared.get(code))
      .map(([code]) => code)
      .sort();
    expect(wrong).toEqual([]);
  });

  it('gives each code a cause and what to do', () => {
    const incomplete = [...documented]
      .filter(([, body]) => !/\*\*Cause\.\*\*/.test(body) || !/\*\*What to do\.\*\*/.test(body))
      .map(([code]) => code)
      .sort();
    expect(incomplete).toEqual([]);
  });
});

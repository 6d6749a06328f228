// Imports run one way (issue 20): no two folders of src/ import each other, type imports included. A file
// at the top of src/ counts as a folder of its own (the basics, agent.ts, main.ts), so a basic that imports
// a layer above it is caught as well. Read from the source text: every `from '...'` and `import('...')`.
import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const SRC = resolve('src');
const IMPORT = /(?:\bfrom|\bimport)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

/** The folder a file belongs to: its first directory under src/, or the file itself at the top. */
function unit(file: string): string {
  const rel = relative(SRC, file).split(sep);
  return rel.length > 1 ? `${rel[0]}/` : rel[0].replace(/\.[jt]s$/, '');
}

/** Every edge between two units: from -> to -> the imports that make it. */
function folderGraph(): Map<string, Map<string, string[]>> {
  const graph = new Map<string, Map<string, string[]>>();
  for (const file of sourceFiles(SRC)) {
    for (const m of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const target = resolve(dirname(file), m[1]);
      if (!target.startsWith(SRC + sep)) continue;
      const [a, b] = [unit(file), unit(target)];
      if (a === b) continue;
      let out = graph.get(a);
      if (!out) graph.set(a, (out = new Map<string, string[]>()));
      out.set(b, [...(out.get(b) ?? []), `${relative(SRC, file)} -> ${m[1]}`]);
    }
  }
  return graph;
}

describe('imports between the folders of src/', () => {
  it('never run both ways', () => {
    const graph = folderGraph();
    const mutual: string[] = [];
    for (const [a, out] of graph) {
      for (const [b, why] of out) {
        const back = graph.get(b)?.get(a);
        if (back && a < b) mutual.push(`${a} <-> ${b}: ${why[0]}; ${back[0]}`);
      }
    }
    expect(mutual).toEqual([]);
  });

  it('sees the imports it judges (the graph is not empty, type imports count)', () => {
    const graph = folderGraph();
    expect(graph.get('health/')?.has('network-status')).toBe(true); // `import type` only
    expect(graph.get('peers/')?.has('subnet/')).toBe(true);
  });
});

// Imports run one way: the folders of src/ import each other without a cycle of any length (A -> B -> A,
// A -> B -> C -> A, ...), type imports included. A file at the top of src/ counts as a folder of its own
// (agent.ts, main.ts, network-status.ts, node-events.ts), and src/basics/ is one folder, so a basic that
// imports a layer above it is caught as well. Read from the source text: every `from '...'` and
// `import('...')`. A cycle is found as a strongly connected component of the folder graph (Tarjan's
// algorithm) and reported as one closed path, each step with an import that makes it.
import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const SRC = resolve('src');
const IMPORT = /(?:\bfrom|\bimport)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g;

type Graph = Map<string, Map<string, string[]>>;

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
function folderGraph(): Graph {
  const graph: Graph = new Map();
  for (const file of sourceFiles(SRC)) {
    for (const m of readFileSync(file, 'utf8').matchAll(IMPORT)) {
      const target = resolve(dirname(file), m[1]);
      if (!target.startsWith(SRC + sep)) continue;
      addEdge(graph, unit(file), unit(target), `${relative(SRC, file)} -> ${m[1]}`);
    }
  }
  return graph;
}

function addEdge(graph: Graph, a: string, b: string, why: string): void {
  if (a === b) return;
  let out = graph.get(a);
  if (!out) graph.set(a, (out = new Map<string, string[]>()));
  out.set(b, [...(out.get(b) ?? []), why]);
}

/** The strongly connected components of more than one unit (Tarjan), each sorted, in sorted order. */
function cyclicComponents(graph: Graph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) components.push(component.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  return components.sort((a, b) => a[0].localeCompare(b[0]));
}

/** One closed path through a component, from its first unit back to it (breadth-first, so the shortest). */
function cycleThrough(graph: Graph, component: readonly string[]): string {
  const inside = new Set(component);
  const start = component[0];
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const [w, why] of graph.get(v) ?? []) {
      if (!inside.has(w)) continue;
      if (w === start) {
        const steps = [`${v} -> ${w} (${why[0]})`];
        for (let u = v; u !== start; u = previous.get(u)!) {
          const p = previous.get(u)!;
          steps.unshift(`${p} -> ${u} (${graph.get(p)!.get(u)![0]})`);
        }
        return steps.join('; ');
      }
      if (!previous.has(w) && w !== start) {
        previous.set(w, v);
        queue.push(w);
      }
    }
  }
  return component.join(', ');
}

function cycles(graph: Graph): string[] {
  return cyclicComponents(graph).map((c) => cycleThrough(graph, c));
}

function graphOf(edges: readonly (readonly [string, string])[]): Graph {
  const graph: Graph = new Map();
  for (const [a, b] of edges) addEdge(graph, a, b, `${a}x.ts -> ../${b}y.js`);
  return graph;
}

describe('imports between the folders of src/', () => {
  it('form no cycle of any length', () => {
    expect(cycles(folderGraph())).toEqual([]);
  });

  it('the check finds a pair both ways, a longer cycle and none in a layered graph', () => {
    expect(
      cycles(
        graphOf([
          ['a/', 'b/'],
          ['b/', 'a/'],
        ]),
      ),
    ).toEqual(['a/ -> b/ (a/x.ts -> ../b/y.js); b/ -> a/ (b/x.ts -> ../a/y.js)']);
    expect(
      cycles(
        graphOf([
          ['a/', 'b/'],
          ['b/', 'c/'],
          ['c/', 'a/'],
          ['c/', 'd/'],
        ]),
      ),
    ).toEqual(['a/ -> b/ (a/x.ts -> ../b/y.js); b/ -> c/ (b/x.ts -> ../c/y.js); c/ -> a/ (c/x.ts -> ../a/y.js)']);
    expect(
      cycles(
        graphOf([
          ['a/', 'b/'],
          ['a/', 'c/'],
          ['b/', 'c/'],
          ['c/', 'd/'],
        ]),
      ),
    ).toEqual([]);
  });

  it('sees the imports it judges (the graph is not empty, type imports count)', () => {
    const graph = folderGraph();
    expect(graph.get('health/')?.has('network-status')).toBe(true); // `import type` only
    expect(graph.get('peers/')?.has('subnet/')).toBe(true);
  });
});

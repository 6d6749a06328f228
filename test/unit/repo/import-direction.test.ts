// Imports run one way, checked two ways on the folder graph of src/. Every folder is a unit, a sub-folder
// one of its own (`backends/` and `backends/hostgw/` are two), and a file at the top of src/ counts as a
// folder of its own (agent.ts, main.ts, network-status.ts, node-events.ts). Read from the source text: every
// `from '...'` and `import('...')`, type imports included.
// - No cycle of any length (A -> B -> A, A -> B -> C -> A, ...), found as a strongly connected component of
//   the graph (Tarjan's algorithm) and reported as one closed path, each step with an import that makes it.
//   A seam that imports one of its implementations (`backends/backend.ts -> ./hostgw/`) is such a cycle.
// - No import the rule table FORBIDDEN names, cycle or not: each rule says which folder (with its
//   sub-folders) must not import which, and why; `*` is every folder outside the other side of the rule,
//   but those `except` names.
// An import on its way out may be listed in KNOWN_IMPORTS with the branch that removes it; the check then
// fails once it is gone, so the entry goes with it.
import { describe, expect, it } from '@jest/globals';
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';

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

/** The unit a file belongs to: its folder under src/ (a sub-folder its own: `backends/hostgw/`), or the file itself at the top. */
function unit(file: string): string {
  const dir = relative(SRC, dirname(file)).split(sep).join('/');
  return dir === '' ? basename(file).replace(/\.[jt]s$/, '') : `${dir}/`;
}

/**
 * Imports that break the rules today and are being removed, each as `file -> specifier` and the branch that
 * removes it: left out of the graph until then. Remove an entry once that branch is merged (the last test
 * below fails while an entry names an import that no longer exists).
 */
const KNOWN_IMPORTS: ReadonlyMap<string, string> = new Map<string, string>([]);

/** Every import of src/ into src/, as `file -> specifier`, with the units it joins. */
function imports(): { why: string; from: string; to: string }[] {
  return sourceFiles(SRC).flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(IMPORT)].flatMap((m) => {
      const target = resolve(dirname(file), m[1]);
      if (!target.startsWith(SRC + sep)) return [];
      return [{ why: `${relative(SRC, file).split(sep).join('/')} -> ${m[1]}`, from: unit(file), to: unit(target) }];
    }),
  );
}

/** Every edge between two units: from -> to -> the imports that make it (but the KNOWN_IMPORTS). */
function folderGraph(): Graph {
  const graph: Graph = new Map();
  for (const i of imports()) if (!KNOWN_IMPORTS.has(i.why)) addEdge(graph, i.from, i.to, i.why);
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

interface Rule {
  /** A folder (`reconcile/`, its sub-folders included), a file at the top of src/, or `*`. */
  from: string;
  to: string;
  /** With `*`: the folders it does not stand for. */
  except?: readonly string[];
  why: string;
}

/** Imports that must not exist, cycle or not; each rule repeats a claim of docs/architecture.md. */
const FORBIDDEN: readonly Rule[] = [
  { from: 'basics/', to: '*', why: 'the basics are the bottom layer: they import no other folder' },
  {
    from: 'reconcile/',
    to: '*',
    except: ['basics/'],
    why: 'the reconcile loop is generic: it declares what it needs (DesiredSet, ReconcileDriver, RefusalSink) and a second controller reuses it with its own',
  },
  { from: 'peers/', to: 'reconcile/', why: 'the desired side knows nothing of the loop: the two meet in backends/route-network.ts' },
  { from: 'peers/', to: 'backends/', why: "the peers' side asks the driver for items through ItemSource, which it declares" },
  { from: 'backends/hostgw/', to: 'backends/vxlan/', why: 'a backend does not import another' },
  { from: 'backends/vxlan/', to: 'backends/hostgw/', why: 'a backend does not import another' },
  { from: 'health/', to: 'peers/', why: 'the health server imports no layer that fills in the status' },
  { from: 'health/', to: 'reconcile/', why: 'the health server imports no layer that fills in the status' },
  { from: 'health/', to: 'backends/', why: 'the health server imports no layer that fills in the status' },
  {
    from: 'agent/',
    to: 'subnet/kube/',
    why: "the agent's parts see the subnet manager through its contract (subnet/lease.ts SubnetManager), never the kube manager's types or a downcast to them",
  },
  { from: '*', to: 'simulator/', except: ['dataplane/', 'demo/'], why: 'only the dataplane chooser and the demo load the simulated node' },
  { from: '*', to: 'demo/', why: 'the agent never loads the demo or its fake API server' },
];

/** True when unit `u` is `folder` or inside it (`backends/` holds `backends/hostgw/`); a top-level file holds only itself. */
function within(u: string, folder: string): boolean {
  return u === folder || (folder.endsWith('/') && u.startsWith(folder));
}

/** True when the edge `a -> b` is one `rule` forbids. */
function breaks(rule: Rule, a: string, b: string): boolean {
  const fromOk = rule.from === '*' ? !within(a, rule.to) : within(a, rule.from);
  const toOk = rule.to === '*' ? !within(b, rule.from) : within(b, rule.to);
  const wild = rule.from === '*' ? a : b;
  return fromOk && toOk && !(rule.except ?? []).some((e) => within(wild, e));
}

/** Every forbidden edge: `a -> b (the first import that makes it): why`. */
function forbidden(graph: Graph, rules: readonly Rule[]): string[] {
  const out: string[] = [];
  for (const [a, edges] of [...graph].sort(([x], [y]) => x.localeCompare(y))) {
    for (const [b, why] of [...edges].sort(([x], [y]) => x.localeCompare(y))) {
      for (const rule of rules) if (breaks(rule, a, b)) out.push(`${a} -> ${b} (${why[0]}): ${rule.why}`);
    }
  }
  return out;
}

function graphOf(edges: readonly (readonly [string, string])[]): Graph {
  const graph: Graph = new Map();
  for (const [a, b] of edges) addEdge(graph, a, b, `${a}x.ts -> ../${b}y.js`);
  return graph;
}

describe('imports between the folders of src/', () => {
  it('form no cycle of any length, sub-folders included', () => {
    expect(cycles(folderGraph())).toEqual([]);
  });

  it('break none of the rules of FORBIDDEN', () => {
    expect(forbidden(folderGraph(), FORBIDDEN)).toEqual([]);
  });

  it('the check finds a pair both ways, a longer cycle, a seam importing its implementation, and none in a layered graph', () => {
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
          ['a/', 'a/impl/'],
          ['a/impl/', 'a/'],
        ]),
      ),
    ).toEqual(['a/ -> a/impl/ (a/x.ts -> ../a/impl/y.js); a/impl/ -> a/ (a/impl/x.ts -> ../a/y.js)']);
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

  it('the rules reach into sub-folders on both sides, and `*` stands for every other folder but its exceptions', () => {
    const rules: Rule[] = [
      { from: 'loop/', to: 'peers/', why: 'generic' },
      { from: 'base/', to: '*', why: 'bottom' },
      { from: '*', to: 'sim/', except: ['chooser/'], why: 'test double' },
    ];
    const graph = graphOf([
      ['loop/', 'peers/'],
      ['loop/sub/', 'peers/deep/'],
      ['loop/', 'base/'],
      ['base/', 'base/sub/'],
      ['base/sub/', 'agent'],
      ['chooser/', 'sim/'],
      ['agent', 'sim/inner/'],
      ['sim/', 'sim/inner/'],
    ]);
    expect(forbidden(graph, rules)).toEqual([
      'agent -> sim/inner/ (agentx.ts -> ../sim/inner/y.js): test double',
      'base/sub/ -> agent (base/sub/x.ts -> ../agenty.js): bottom',
      'loop/ -> peers/ (loop/x.ts -> ../peers/y.js): generic',
      'loop/sub/ -> peers/deep/ (loop/sub/x.ts -> ../peers/deep/y.js): generic',
    ]);
  });

  it('sees the imports it judges (the graph is not empty, type imports count, sub-folders are units of their own)', () => {
    const graph = folderGraph();
    expect(graph.get('health/')?.has('network-status')).toBe(true); // `import type` only
    expect(graph.get('peers/')?.has('subnet/')).toBe(true);
    expect(graph.get('backends/hostgw/')?.has('backends/')).toBe(true);
    expect(graph.get('backends/')?.has('reconcile/')).toBe(true);
  });

  it('KNOWN_IMPORTS names only imports that still exist (remove an entry once its branch is merged)', () => {
    const existing = new Set(imports().map((i) => i.why));
    expect([...KNOWN_IMPORTS].filter(([i]) => !existing.has(i))).toEqual([]);
  });
});

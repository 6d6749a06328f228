// Every path of this repository a source comment names resolves to a file or folder that exists, so a
// module moved or renamed cannot leave a comment pointing nowhere (docs-links.test.ts keeps the docs' links).
// Comments are read as the compiler reads them (TypeScript's comment ranges: `//` and `/* */`, never a string) in
// src/, scripts/ and deploy/, and `#` comments in deploy/'s YAML and scripts/' PowerShell. A path counts as
// this repository's when its top folder is one of ours (src/, test/, docs/, deploy/, scripts/, bench/);
// `./x.ts` and `../x.ts` resolve against the commenting file's folder. Paths of other repositories
// (flannel's `pkg/backend/...`, hcsshim's `hcn/hcnpolicy.go`) start elsewhere and are not ours to check,
// except where an upstream path starts with one of our folder names: then the comment names that
// repository right before it (`client-node src/watch.ts`, `kubernetes/kubernetes test/e2e/...`), and UPSTREAM
// says which. A relative path is checked when it names a folder or a file of a kind this repository holds
// (`./win-overlay.exe` in an archive is not one), and the overlay an operator copies the example to
// (deploy/overlays/my-cluster, deploy/README.md) is theirs.
import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, extname, join, normalize } from 'node:path';
import ts from 'typescript';

const ROOTS = ['src', 'scripts', 'deploy'];
const OURS = ['src', 'test', 'docs', 'deploy', 'scripts', 'bench'];
/** Words right before a path that say it is another repository's (an org/repo, or a project named before it). */
const UPSTREAM =
  /(?:[\w.-]+\/[\w.-]+[ :]|\b(?:kubernetes|kubelet|flannel|hcsshim|containerd|calico|felix|cilium|kube-proxy|client-go|plugins|client-node|cni|windows-testing|sig-windows-tools|network-policy-api)\b[^\n]{0,3})$/i;

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

/** The comments of a TypeScript or JavaScript file, as the compiler attaches them to its tokens. */
function scriptComments(text: string): string[] {
  const file = ts.createSourceFile('x.ts', text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found = new Map<number, string>();
  const take = (ranges: ts.CommentRange[] | undefined) => ranges?.forEach((r) => found.set(r.pos, text.slice(r.pos, r.end)));
  const visit = (node: ts.Node): void => {
    take(ts.getLeadingCommentRanges(text, node.getFullStart()));
    take(ts.getTrailingCommentRanges(text, node.getEnd()));
    node.getChildren(file).forEach(visit);
  };
  visit(file);
  return [...found.entries()].sort(([x], [y]) => x - y).map(([, c]) => c);
}

/** `#` comments (YAML, PowerShell): from a `#` at the start or after a blank to the end of the line. */
function hashComments(text: string): string[] {
  return text.split('\n').flatMap((line) => {
    const m = /(?:^|\s)#(.*)$/.exec(line);
    return m ? [m[1]] : [];
  });
}

/** What a relative path may name: a folder, or a file of a kind this repository holds. */
const OUR_KINDS = new Set(['', '.ts', '.mts', '.mjs', '.js', '.cjs', '.json', '.md', '.yaml', '.yml', '.ps1', '.c', '.h', '.sh']);
/** The operator's copy of deploy/overlays/example (deploy/README.md). */
const OPERATOR_COPY = /^deploy\/overlays\/my-cluster(\/|$)/;

const SCRIPT = new Set(['.ts', '.mts', '.mjs', '.js', '.cjs']);
const HASH = new Set(['.yaml', '.yml', '.ps1']);

/** Each repository path a comment of `file` names, resolved from the repository's root. */
function namedPaths(file: string): { named: string; path: string }[] {
  const text = readFileSync(file, 'utf8');
  const ext = extname(file);
  const comments = SCRIPT.has(ext) ? scriptComments(text) : HASH.has(ext) ? hashComments(text) : [];
  const out: { named: string; path: string }[] = [];
  const pathRe = new RegExp(String.raw`(?<![\w.@/-])(?:(?:${OURS.join('|')})/|\.\.?/)[\w./-]*`, 'g');
  for (const c of comments) {
    for (const m of c.matchAll(pathRe)) {
      const named = m[0].replace(/[.,;:)-]+$/, '');
      if (named.startsWith('.') && named.split('/').every((p) => p === '.' || p === '..' || p === '')) continue; // `./` alone
      if (!named.startsWith('.') && UPSTREAM.test(c.slice(0, m.index))) continue;
      if (named.startsWith('.') && !OUR_KINDS.has(extname(named))) continue;
      if (OPERATOR_COPY.test(named)) continue;
      out.push({ named, path: named.startsWith('.') ? normalize(join(dirname(file), named)) : normalize(named) });
    }
  }
  return out;
}

/** `foo.js` as the import names a TypeScript module: the `.ts` exists. */
const exists = (path: string) => existsSync(path) || (path.endsWith('.js') && existsSync(path.replace(/\.js$/, '.ts')));

describe('paths named in source comments', () => {
  const sources = ROOTS.flatMap(files).filter((f) => SCRIPT.has(extname(f)) || HASH.has(extname(f)));
  const named = sources.map((f) => ({ f, paths: namedPaths(f) }));

  it('are read from the sources (the compiler finds comments, and paths in them)', () => {
    expect(sources.length).toBeGreaterThan(100);
    expect(named.flatMap((n) => n.paths).length).toBeGreaterThan(400);
    expect(namedPaths('src/commands/doctor-gather.ts').map((p) => p.path)).toContain('src/basics/fs.ts');
    expect(scriptComments('const a = `${1}// no`; // one\n/* two */ const b = /\\/\\//;')).toEqual(['// one', '/* two */']);
  });

  it('each resolve to a file or folder of this repository', () => {
    const dead = named.flatMap(({ f, paths }) => paths.flatMap((p) => (exists(p.path) ? [] : [`${f}: ${p.named}`])));
    expect(dead).toEqual([]);
  });
});

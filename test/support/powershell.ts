// The PowerShell the install paths run, interpreted here on Linux (pwsh is not available and cannot be
// installed): deploy/'s containers' `powershell.exe ... -Command <script>` lines, scripts/start.ps1 and the
// operator's command lines of docs/install.md. Scripts are parsed with tree-sitter-powershell (the grammar
// deploy.test.ts checks scripts/start.ps1 with) and run for the subset they use, with PowerShell's rules
// (about_* topics of the PowerShell documentation, learn.microsoft.com/powershell/module/microsoft.powershell.core/about):
//  * statements: assignments (`=`, `+=`), pipelines of expressions and commands, if/elseif/else, for,
//    foreach, while, try/catch, function definitions with a param block, throw, return, exit, break;
//  * values: strings, integers, booleans, $null, arrays (`@()`, `a, b`; a pipeline's output of one item is
//    that item, of none $null: about_Pipelines), hashtables and [ordered] ones (keys case-insensitive,
//    about_Hash_Tables), PSCustomObjects from ConvertFrom-Json (under Set-StrictMode -Version Latest a
//    missing property throws, about_Set-StrictMode), [DateTime]s;
//  * operators: -eq -ne -ceq -cne -gt -ge -lt -le (case-insensitive unless c-prefixed, the left operand's
//    type rules the comparison: about_Comparison_Operators), -match -notmatch ($Matches), -split -join,
//    -and -or -not !, + (numbers, strings, arrays), unary -, ++, casts [string] [int] [ordered];
//  * expandable strings ("$x ${x} $($expr) $env:NAME"), '' verbatim strings, member access and the methods
//    the scripts call (.ToLower() .Trim() .AddSeconds() .PSObject.Properties[...] .Count .Value);
//  * cmdlets: Join-Path, Split-Path, Test-Path, New-Item -ItemType Directory, Get-Item, Get-Content,
//    Set-Content, Select-String -Quiet, ConvertFrom-Json, ConvertTo-Json (as PowerShell 7 lays it out),
//    ForEach-Object, Where-Object, Out-Null, Write-Host, Write-Warning, Set-StrictMode, Start-Sleep,
//    Invoke-WebRequest (a status other than 2xx throws, as it does), and [System.IO.File]::ReadAllText /
//    WriteAllText, [System.Net.Dns]::GetHostName(), [DateTime]::UtcNow;
//  * native commands (`& <expr> args`, `name.exe args`): arguments as PowerShell passes them (arrays and
//    `@splat` spread), stdout lines as the command's output, the exit code in $LASTEXITCODE, `2>$null`.
// The file system cmdlets work on the host's mapping of Windows paths (`files`), the network, the clock's
// sleeps and the native commands through the host. Anything else throws Unsupported, and so does an
// environment variable the container does not have (PowerShell would drop the argument silently): a script
// that starts using more fails the test that runs it instead of running differently from PowerShell.
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Node as SyntaxNode, Parser } from 'web-tree-sitter';

/** What the script runs against. */
export interface PowerShellHost {
  /** The process environment (names compared case-insensitively, as on Windows). */
  env: Record<string, string>;
  /** Run a native command; resolves to its exit code, or with its stdout (the command's output lines). */
  run(program: string, args: string[]): Promise<number | { code: number; stdout: string }>;
  /** Windows path -> this host's path; enables the file system cmdlets and [System.IO.File]. */
  files?: (windowsPath: string) => string;
  /** Invoke-WebRequest: the answer to a GET. */
  fetch?: (url: string) => Promise<{ status: number; body: string }>;
  /** Start-Sleep: resolves once the script may go on (a journey waits for the agent instead of the clock). */
  sleep?: (seconds: number) => Promise<void>;
  /** [System.Net.Dns]::GetHostName(). */
  hostName?: string;
  /** Write-Host, Write-Warning and the script's own output, one line each. */
  write?: (line: string) => void;
}

/** A construct this interpreter does not model (never caught by the script's try/catch). */
export class Unsupported extends Error {}

/** A terminating error the script can catch: `throw`, a failing cmdlet under ErrorActionPreference Stop. */
export class PSError extends Error {}

/** `exit`, `return` and `break` unwind the interpreter's stack as exceptions. */
class Exit extends Error {
  constructor(readonly code: number) {
    super('exit');
  }
}
class Return extends Error {
  constructor(readonly value: Value[]) {
    super('return');
  }
}
class Break extends Error {}

/** A hashtable (about_Hash_Tables) or a PSCustomObject: ordered, keys case-insensitive. */
export class PSBag {
  readonly entries = new Map<string, { key: string; value: Value }>();
  constructor(readonly kind: 'hashtable' | 'object') {}
  get(k: string): Value {
    return this.entries.get(k.toLowerCase())?.value ?? null;
  }
  has(k: string): boolean {
    return this.entries.has(k.toLowerCase());
  }
  set(k: string, v: Value): void {
    const e = this.entries.get(k.toLowerCase());
    if (e) e.value = v;
    else this.entries.set(k.toLowerCase(), { key: k, value: v });
  }
}

class PSDate {
  constructor(readonly ms: number) {}
}

class ScriptBlock {
  constructor(readonly node: SyntaxNode) {}
}

export type Value = null | boolean | number | string | Value[] | PSBag | PSDate | ScriptBlock;

let parser: Promise<Parser> | undefined;

async function powershellParser(): Promise<Parser> {
  const { Parser: P, Language } = await import('web-tree-sitter');
  await P.init();
  const lang = await Language.load(join(process.cwd(), 'node_modules', 'tree-sitter-powershell', 'tree-sitter-powershell.wasm'));
  const p = new P();
  p.setLanguage(lang);
  return p;
}

async function parse(script: string): Promise<SyntaxNode> {
  const p = await (parser ??= powershellParser());
  const tree = p.parse(script);
  if (!tree) throw new Error('tree-sitter-powershell returned no tree');
  if (tree.rootNode.hasError) {
    const at = tree.rootNode.descendantsOfType('ERROR')[0];
    throw new Unsupported(`the script does not parse as PowerShell (tree-sitter-powershell) at line ${(at?.startPosition.row ?? 0) + 1}: ${(at?.text ?? script).slice(0, 120)}`);
  }
  return tree.rootNode;
}

/** Nodes that only wrap one expression (precedence levels of the grammar). */
const WRAPPERS = new Set([
  'pipeline_chain',
  'logical_expression',
  'bitwise_expression',
  'comparison_expression',
  'additive_expression',
  'multiplicative_expression',
  'format_expression',
  'range_expression',
  'array_literal_expression',
  'unary_expression',
  'left_assignment_expression',
  'argument_expression',
  'logical_argument_expression',
  'bitwise_argument_expression',
  'comparison_argument_expression',
  'additive_argument_expression',
  'multiplicative_argument_expression',
  'format_argument_expression',
  'range_argument_expression',
]);

/** Statements that may stand where a value is expected (`$x = if (...) {...}`). */
const STATEMENTS = new Set(['if_statement', 'for_statement', 'foreach_statement', 'while_statement', 'try_statement']);

const named = (n: SyntaxNode): SyntaxNode[] => n.namedChildren.filter((c): c is SyntaxNode => c !== null && c.type !== 'comment');
const kids = (n: SyntaxNode): SyntaxNode[] => n.children.filter((c): c is SyntaxNode => c !== null && c.type !== 'comment');

function unwrap(n: SyntaxNode): SyntaxNode {
  while (WRAPPERS.has(n.type) && kids(n).length === 1) n = kids(n)[0];
  return n;
}

/** A pipeline's output as one value: none -> $null, one -> that item, more -> an array. */
const collapse = (items: Value[]): Value => (items.length === 0 ? null : items.length === 1 ? items[0] : items);
/** A value sent down a pipeline: an array's items, $null as nothing. */
const enumerate = (v: Value): Value[] => (Array.isArray(v) ? v : v === null ? [] : [v]);

/** PowerShell's truthiness (about_Booleans). */
function truthy(v: Value): boolean {
  if (v === null) return false;
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v !== 0;
  if (typeof v === 'string') return v !== '';
  if (Array.isArray(v)) return v.length === 0 ? false : v.length === 1 ? truthy(v[0]) : true;
  return true;
}

function str(v: Value): string {
  if (v === null) return '';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) return v.map(str).join(' ');
  if (v instanceof PSDate) return new Date(v.ms).toISOString();
  if (v instanceof PSBag) return v.kind === 'hashtable' ? 'System.Collections.Hashtable' : `@{${[...v.entries.values()].map((e) => `${e.key}=${str(e.value)}`).join('; ')}}`;
  return '{ script block }';
}

function num(v: Value): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (v === null) return 0;
  if (typeof v === 'string' && /^\s*-?\d+(\.\d+)?\s*$/.test(v)) return Number(v);
  throw new PSError(`Cannot convert value "${str(v)}" to type "System.Int32"`);
}

function toJson(v: Value): unknown {
  if (v instanceof PSBag) return Object.fromEntries([...v.entries.values()].map((e) => [e.key, toJson(e.value)]));
  if (Array.isArray(v)) return v.map(toJson);
  if (v instanceof PSDate) return new Date(v.ms).toISOString();
  if (v instanceof ScriptBlock) return str(v);
  return v;
}

function fromJson(v: unknown): Value {
  if (Array.isArray(v)) return v.map(fromJson);
  if (v && typeof v === 'object') {
    const b = new PSBag('object');
    for (const [k, x] of Object.entries(v)) b.set(k, fromJson(x));
    return b;
  }
  return v as Value;
}

/** Compare two values as PowerShell does for the left operand's type; <0, 0, >0. */
function compare(l: Value, r: Value, caseSensitive: boolean): number {
  if (l instanceof PSDate && r instanceof PSDate) return l.ms - r.ms;
  if (typeof l === 'number') return l - num(r);
  if (typeof l === 'boolean') return Number(l) - Number(truthy(r));
  if (l === null) return r === null ? 0 : -1;
  if (r === null) return 1;
  let a = str(l);
  let b = str(r);
  if (!caseSensitive) {
    a = a.toLowerCase();
    b = b.toLowerCase();
  }
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Parameters a command takes without a value (so `-Parent $x` binds $x positionally). */
const CMDLET_SWITCHES: Record<string, string[]> = {
  'split-path': ['parent', 'leaf'],
  'new-item': ['force'],
  'select-string': ['quiet'],
  'get-content': ['raw'],
  'invoke-webrequest': ['usebasicparsing'],
  'test-path': [],
};

interface FunctionDef {
  params: SyntaxNode | undefined;
  body: SyntaxNode;
}

class Scope {
  readonly vars = new Map<string, Value>();
  constructor(readonly parent?: Scope) {}
  lookup(name: string): { found: boolean; value: Value } {
    if (this.vars.has(name)) return { found: true, value: this.vars.get(name)! };
    return this.parent ? this.parent.lookup(name) : { found: false, value: null };
  }
}

class Interpreter {
  private readonly functions = new Map<string, FunctionDef>();
  private lastExitCode = 0;
  private strict = false;
  private scope: Scope;

  constructor(
    private readonly host: PowerShellHost,
    private readonly source: string,
    scope: Scope,
  ) {
    this.scope = scope;
  }

  private unsupported(node: SyntaxNode, what = ''): never {
    throw new Unsupported(`PowerShell construct not supported by test/support/powershell.ts${what ? ` (${what})` : ''}: ${node.type} ${JSON.stringify(node.text.slice(0, 100))}`);
  }

  private files(node: SyntaxNode): (p: string) => string {
    if (!this.host.files) this.unsupported(node, 'no file system on this host');
    return this.host.files;
  }

  private env(name: string): string {
    const key = Object.keys(this.host.env).find((k) => k.toLowerCase() === name.toLowerCase());
    if (key === undefined) throw new Unsupported(`the script reads $env:${name}, which the environment does not set`);
    return this.host.env[key];
  }

  private getVar(text: string): Value {
    const name = text.replace(/^[$@]\{?|\}$/g, '');
    if (/^env:/i.test(name)) return this.env(name.slice(4));
    const lower = name.toLowerCase();
    if (lower === 'true') return true;
    if (lower === 'false') return false;
    if (lower === 'null') return null;
    if (lower === 'lastexitcode') return this.lastExitCode;
    const v = this.scope.lookup(lower);
    if (!v.found) {
      if (this.strict) throw new PSError(`The variable '$${name}' cannot be retrieved because it has not been set.`);
      return null;
    }
    return v.value;
  }

  private setVar(text: string, v: Value): void {
    const name = text.replace(/^\$\{?|\}$/g, '').toLowerCase();
    if (name.startsWith('env:')) this.unsupported({ text, type: 'variable' } as SyntaxNode, 'setting an environment variable');
    // An existing variable of an enclosing scope is read there, but a function's assignment makes a local one.
    this.scope.vars.set(name, v);
  }

  // ------------------------------------------------------------------ statements

  /** Run statements; their output goes to `out`. */
  async exec(node: SyntaxNode, out: Value[]): Promise<void> {
    switch (node.type) {
      case 'program':
      case 'statement_list':
      case 'script_block_body':
      case 'statement_block':
        for (const c of named(node)) await this.exec(c, out);
        return;
      case 'empty_statement':
        return;
      case 'param_block':
        return; // bound by the caller
      case 'script_block':
        for (const c of named(node)) await this.exec(c, out);
        return;
      case 'pipeline':
        out.push(...(await this.pipeline(node)));
        return;
      case 'function_statement': {
        const name = named(node)
          .find((c) => c.type === 'function_name')!
          .text.toLowerCase();
        const block = named(node).find((c) => c.type === 'script_block');
        if (!block) this.unsupported(node);
        this.functions.set(name, { params: named(block).find((c) => c.type === 'param_block'), body: block });
        return;
      }
      case 'if_statement':
        return this.ifStatement(node, out);
      case 'for_statement':
        return this.forStatement(node, out);
      case 'foreach_statement': {
        const [variable, ...rest] = named(node);
        const list = rest.find((c) => c.type === 'pipeline')!;
        const body = rest.find((c) => c.type === 'statement_block')!;
        for (const item of enumerate(collapse(await this.pipeline(list)))) {
          this.setVar(variable.text, item);
          try {
            await this.exec(body, out);
          } catch (e) {
            if (e instanceof Break) break;
            throw e;
          }
        }
        return;
      }
      case 'while_statement': {
        const cond = named(node).find((c) => c.type === 'while_condition')!;
        const body = named(node).find((c) => c.type === 'statement_block')!;
        while (truthy(collapse(await this.pipeline(named(cond)[0])))) {
          try {
            await this.exec(body, out);
          } catch (e) {
            if (e instanceof Break) break;
            throw e;
          }
        }
        return;
      }
      case 'try_statement': {
        const [body, catches] = named(node);
        try {
          await this.exec(body, out);
        } catch (e) {
          if (!(e instanceof PSError)) throw e;
          const clause = named(catches).find((c) => c.type === 'catch_clause');
          if (!clause || named(clause).some((c) => c.type === 'catch_type_list')) this.unsupported(catches, 'typed catch');
          const err = new PSBag('object');
          const ex = new PSBag('object');
          ex.set('Message', e.message);
          err.set('Exception', ex);
          const saved = this.scope.lookup('_');
          this.scope.vars.set('_', err);
          try {
            await this.exec(
              named(clause).find((c) => c.type === 'statement_block')!,
              out,
            );
          } finally {
            if (saved.found) this.scope.vars.set('_', saved.value);
            else this.scope.vars.delete('_');
          }
        }
        return;
      }
      case 'flow_control_statement': {
        const keyword = kids(node)[0].text.toLowerCase();
        const arg = named(node).find((c) => c.type === 'pipeline');
        const value = arg ? collapse(await this.pipeline(arg)) : null;
        if (keyword === 'throw') throw new PSError(arg ? str(value) : 'ScriptHalted');
        if (keyword === 'return') throw new Return(arg ? enumerate(value) : []);
        if (keyword === 'exit') throw new Exit(arg ? num(value) : 0);
        if (keyword === 'break') throw new Break();
        return this.unsupported(node);
      }
      default:
        return this.unsupported(node);
    }
  }

  private async ifStatement(node: SyntaxNode, out: Value[]): Promise<void> {
    const parts = named(node);
    if (truthy(collapse(await this.pipeline(parts[0])))) return this.exec(parts[1], out);
    for (const p of parts.slice(2)) {
      if (p.type === 'elseif_clauses') {
        for (const c of named(p)) {
          const [cond, block] = named(c);
          if (truthy(collapse(await this.pipeline(cond)))) return this.exec(block, out);
        }
      } else if (p.type === 'else_clause') return this.exec(named(p)[0], out);
    }
  }

  private async forStatement(node: SyntaxNode, out: Value[]): Promise<void> {
    const part = (t: string) => named(node).find((c) => c.type === t);
    const init = part('for_initializer');
    const cond = part('for_condition');
    const iter = part('for_iterator');
    const body = part('statement_block')!;
    if (init) await this.pipeline(named(init)[0]);
    while (!cond || truthy(collapse(await this.pipeline(named(cond)[0])))) {
      try {
        await this.exec(body, out);
      } catch (e) {
        if (e instanceof Break) break;
        throw e;
      }
      if (iter) await this.pipeline(named(iter)[0]);
    }
  }

  // ------------------------------------------------------------------ pipelines

  /** A `pipeline` node: an assignment (no output), or stages joined by `|`. */
  private async pipeline(node: SyntaxNode): Promise<Value[]> {
    const parts = named(node);
    if (node.type === 'pipeline' && parts.length === 1 && parts[0].type === 'assignment_expression') {
      await this.assign(parts[0]);
      return [];
    }
    const chain = node.type === 'pipeline' && parts.length === 1 ? parts[0] : node;
    const stages = chain.type === 'pipeline_chain' ? named(chain) : [chain];
    let items: Value[] | undefined;
    for (const stage of stages) {
      const s = unwrap(stage);
      if (s.type === 'command') items = await this.command(s, items);
      else if (items !== undefined) this.unsupported(s, 'an expression after |');
      else if (s.type === 'if_statement' || s.type === 'pipeline') {
        items = [];
        await this.exec(s, items);
      } else items = enumerate(await this.value(s));
    }
    return items ?? [];
  }

  private async assign(node: SyntaxNode): Promise<void> {
    const [left, opNode, right] = named(node);
    const op = opNode.text;
    const rightValue = await this.assignedValue(right);
    const target = unwrap(left);
    const current = async () => this.value(target);
    const value = op === '=' ? rightValue : op === '+=' ? this.add(await current(), rightValue) : this.unsupported(node, `assignment ${op}`);
    if (target.type === 'variable') return this.setVar(target.text, value);
    if (target.type === 'element_access') {
      const [obj, index] = named(target);
      const container = await this.value(obj);
      const key = await this.value(index);
      if (container instanceof PSBag) return container.set(str(key), value);
      if (Array.isArray(container)) {
        container[num(key)] = value;
        return;
      }
    }
    return this.unsupported(node, 'assignment target');
  }

  /**
   * The value of an assignment's right side (or a default): an expression's value as it is (`$x = @()` is an
   * empty array), a command pipeline's or a statement's output collapsed (`$x = if (...) {...} else {...}`).
   */
  private async assignedValue(node: SyntaxNode): Promise<Value> {
    const parts = named(node);
    const chain = node.type === 'pipeline' && parts.length === 1 ? unwrap(parts[0]) : unwrap(node);
    if (chain.type !== 'pipeline_chain' && chain.type !== 'command' && !STATEMENTS.has(chain.type) && chain.type !== 'assignment_expression') return this.value(chain);
    if (node.type === 'pipeline') return collapse(await this.pipeline(node));
    const out: Value[] = [];
    await this.exec(chain, out);
    return collapse(out);
  }

  private add(l: Value, r: Value): Value {
    if (Array.isArray(l)) return [...l, ...(Array.isArray(r) ? r : [r])];
    if (typeof l === 'string') return l + str(r);
    if (l === null) return r;
    if (typeof l === 'number') return l + num(r);
    throw new PSError(`cannot add ${str(r)} to ${str(l)}`);
  }

  // ------------------------------------------------------------------ expressions

  async value(node: SyntaxNode): Promise<Value> {
    node = unwrap(node);
    const parts = named(node);
    switch (node.type) {
      case 'variable':
        return this.getVar(node.text);
      case 'string_literal':
        return this.value(parts[0]);
      case 'verbatim_string_characters':
        return node.text.slice(1, -1).replace(/''/g, "'");
      case 'expandable_string_literal':
        return this.expand(node, 1, node.text.length - 1);
      case 'integer_literal':
      case 'decimal_integer_literal':
        if (!/^\d+$/.test(node.text)) this.unsupported(node);
        return Number(node.text);
      case 'generic_token':
        return parts.length > 0 ? this.expand(node, 0, node.text.length) : node.text;
      case 'command_parameter':
        return node.text;
      case 'array_expression': {
        const out: Value[] = [];
        for (const c of parts) await this.exec(c, out);
        return out;
      }
      case 'array_literal_expression': {
        const out: Value[] = [];
        for (const c of parts) out.push(await this.value(c));
        return out;
      }
      case 'hash_literal_expression':
        return this.hash(node);
      case 'parenthesized_expression':
      case 'sub_expression': {
        const out: Value[] = [];
        for (const c of parts) await this.exec(c, out);
        return collapse(out);
      }
      case 'statement_list': {
        const out: Value[] = [];
        await this.exec(node, out);
        return collapse(out);
      }
      case 'pipeline':
        return collapse(await this.pipeline(node));
      case 'command':
        return collapse(await this.command(node, undefined));
      case 'script_block_expression':
        return new ScriptBlock(parts.find((c) => c.type === 'script_block') ?? node);
      case 'member_access':
        return this.member(node);
      case 'invokation_expression':
        return this.invoke(node);
      case 'element_access': {
        const [obj, index] = parts;
        const container = await this.value(obj);
        const key = await this.value(index);
        if (container instanceof PSBag) return container.get(str(key));
        if (Array.isArray(container)) return container[num(key) < 0 ? container.length + num(key) : num(key)] ?? null;
        if (typeof container === 'string') return container[num(key)] ?? null;
        if (container === null) throw new PSError('Cannot index into a null array.');
        return this.unsupported(node, 'indexing');
      }
      case 'cast_expression': {
        const [type, inner] = parts;
        return this.cast(type.text, await this.value(inner), node);
      }
      case 'expression_with_unary_operator':
        return this.unary(node);
      case 'post_increment_expression': {
        const v = named(node)[0];
        const before = await this.value(v);
        this.setVar(v.text, num(before) + 1);
        return before;
      }
      case 'comparison_expression':
      case 'logical_expression':
      case 'additive_expression':
      case 'multiplicative_expression':
        return this.binary(node);
      case 'type_literal':
        return this.unsupported(node, 'a type as a value');
      default:
        return this.unsupported(node);
    }
  }

  /** "…$x ${x} $($e) $env:X…" between offsets of the node's text (PowerShell's escapes: `x, "" inside ""). */
  private async expand(node: SyntaxNode, from: number, to: number): Promise<string> {
    let out = '';
    let at = node.startIndex + from;
    const end = node.startIndex + to;
    const literal = (s: string) => s.replace(/`(.)/g, (_m, c: string) => ({ n: '\n', r: '\r', t: '\t', '0': '\0' })[c] ?? c).replace(/""/g, '"');
    for (const c of named(node)) {
      out += literal(this.source.slice(at, c.startIndex));
      out += str(c.type === 'sub_expression' ? await this.value(c) : await this.value(c));
      at = c.endIndex;
    }
    return out + literal(this.source.slice(at, end));
  }

  private async hash(node: SyntaxNode): Promise<PSBag> {
    const bag = new PSBag('hashtable');
    const body = named(node).find((c) => c.type === 'hash_literal_body');
    for (const e of body ? named(body) : []) {
      const [key, v] = named(e);
      bag.set(key.text.replace(/^['"]|['"]$/g, ''), await this.assignedValue(v));
    }
    return bag;
  }

  private cast(type: string, v: Value, node: SyntaxNode): Value {
    switch (type.toLowerCase()) {
      case '[string]':
        return str(v);
      case '[int]':
        return num(v);
      case '[ordered]':
        if (!(v instanceof PSBag)) this.unsupported(node);
        return v;
      case '[string[]]':
        return enumerate(v).map(str);
      default:
        return this.unsupported(node, `cast ${type}`);
    }
  }

  private async unary(node: SyntaxNode): Promise<Value> {
    const [op, ...rest] = kids(node);
    if (op.type === 'cast_expression') return this.value(op);
    const operand = rest.length ? await this.value(rest[rest.length - 1]) : null;
    switch (op.text.toLowerCase()) {
      case '-not':
      case '!':
        return !truthy(operand);
      case '-':
        return -num(operand);
      case '-join':
        return enumerate(operand).map(str).join('');
      default:
        return this.unsupported(node, `unary ${op.text}`);
    }
  }

  private async binary(node: SyntaxNode): Promise<Value> {
    const [l, opNode, r] = kids(node);
    const op = opNode.text.toLowerCase();
    if (op === '-and') return truthy(await this.value(l)) && truthy(await this.value(r));
    if (op === '-or') return truthy(await this.value(l)) || truthy(await this.value(r));
    const left = await this.value(l);
    const right = await this.value(r);
    if (op === '+') return this.add(left, right);
    if (op === '-') return num(left) - num(right);
    if (op === '-join') return enumerate(left).map(str).join(str(right));
    if (op === '-split') return str(left).split(new RegExp(str(right), 'i'));
    if (op === '-match' || op === '-notmatch' || op === '-cmatch') {
      if (Array.isArray(left)) this.unsupported(node, '-match on an array');
      const m = new RegExp(str(right), op === '-cmatch' ? '' : 'i').exec(str(left));
      if (m) {
        const matches = new PSBag('hashtable');
        m.forEach((g, i) => matches.set(String(i), g ?? null));
        this.scope.vars.set('matches', matches);
      }
      return op === '-notmatch' ? !m : !!m;
    }
    const c = /^-c(eq|ne|gt|ge|lt|le)$/.exec(op);
    const base = c ? `-${c[1]}` : op.replace(/^-i/, '-');
    const cmp = (a: Value) => compare(a, right, !!c);
    const test: Record<string, (n: number) => boolean> = {
      '-eq': (n) => n === 0,
      '-ne': (n) => n !== 0,
      '-gt': (n) => n > 0,
      '-ge': (n) => n >= 0,
      '-lt': (n) => n < 0,
      '-le': (n) => n <= 0,
    };
    if (!test[base]) return this.unsupported(node, `operator ${op}`);
    // An array on the left filters (about_Comparison_Operators).
    if (Array.isArray(left)) return left.filter((x) => test[base](cmp(x)));
    return test[base](cmp(left));
  }

  private async member(node: SyntaxNode): Promise<Value> {
    const [target, name] = named(node);
    const member = name.text;
    if (target.type === 'type_literal') return this.staticMember(target.text, member, [], node);
    return this.property(await this.value(target), member, node);
  }

  private property(v: Value, member: string, node: SyntaxNode): Value {
    const m = member.toLowerCase();
    if (m === 'count' || m === 'length') {
      if (Array.isArray(v)) return v.length;
      if (v instanceof PSBag && v.kind === 'hashtable') return v.entries.size;
      if (typeof v === 'string' && m === 'length') return v.length;
      return v === null ? 0 : 1;
    }
    if (v instanceof PSBag) {
      if (m === 'psobject') {
        const props = new PSBag('hashtable');
        for (const e of v.entries.values()) {
          const p = new PSBag('object');
          p.set('Name', e.key);
          p.set('Value', e.value);
          props.set(e.key, p);
        }
        const pso = new PSBag('object');
        pso.set('Properties', props);
        return pso;
      }
      if (v.has(member) || v.kind === 'hashtable') return v.get(member);
      if (this.strict) throw new PSError(`The property '${member}' cannot be found on this object. Verify that the property exists.`);
      return null;
    }
    if (v === null) {
      if (this.strict) throw new PSError(`The property '${member}' cannot be found on this object. Verify that the property exists.`);
      return null;
    }
    return this.unsupported(node, `property ${member} of ${typeof v}`);
  }

  private async invoke(node: SyntaxNode): Promise<Value> {
    const parts = named(node);
    const target = parts[0];
    const name = parts.find((c) => c.type === 'member_name')!.text;
    const argList = parts.find((c) => c.type === 'argument_list');
    const args: Value[] = [];
    const exprs = argList ? named(argList).flatMap((c) => (c.type === 'argument_expression_list' ? named(c) : [c])) : [];
    for (const a of exprs) args.push(await this.value(a));
    if (target.type === 'type_literal') return this.staticMember(target.text, name, args, node);
    const v = await this.value(target);
    const m = name.toLowerCase();
    if (typeof v === 'string') {
      if (m === 'tolower') return v.toLowerCase();
      if (m === 'toupper') return v.toUpperCase();
      if (m === 'trim') return v.trim();
      if (m === 'split') return v.split(str(args[0]));
    }
    if (v instanceof PSDate && m === 'addseconds') return new PSDate(v.ms + num(args[0]) * 1000);
    return this.unsupported(node, `method ${name}`);
  }

  private staticMember(type: string, member: string, args: Value[], node: SyntaxNode): Value {
    const key = `${type.toLowerCase()}::${member.toLowerCase()}`;
    switch (key) {
      case '[datetime]::utcnow':
        return new PSDate(Date.now());
      case '[system.net.dns]::gethostname':
        if (this.host.hostName === undefined) this.unsupported(node, 'no host name');
        return this.host.hostName;
      case '[system.io.file]::readalltext': {
        const file = this.files(node)(str(args[0]));
        if (!existsSync(file)) throw new PSError(`Could not find file '${str(args[0])}'.`);
        return readFileSync(file, 'utf8').replace(/^\ufeff/, '');
      }
      case '[system.io.file]::writealltext':
        // UTF-8 without a byte order mark (.NET's File.WriteAllText(path, contents)).
        writeFileSync(this.files(node)(str(args[0])), str(args[1]));
        return null;
      default:
        return this.unsupported(node, `static ${type}::${member}`);
    }
  }

  // ------------------------------------------------------------------ commands

  /** A command's elements: parameters (`-Name`), values, splats; `2>$null` dropped. */
  private async elements(command: SyntaxNode): Promise<{ param?: string; value?: Value; splat?: boolean }[]> {
    const els = named(command).find((c) => c.type === 'command_elements');
    const out: { param?: string; value?: Value; splat?: boolean }[] = [];
    for (const e of els ? named(els) : []) {
      if (e.type === 'command_argument_sep') continue;
      if (e.type === 'generic_token' && /^2>\$null$/i.test(e.text)) continue;
      if (e.type === 'command_parameter') out.push({ param: e.text });
      else if (e.type === 'variable' && e.text.startsWith('@')) out.push({ value: this.getVar(e.text), splat: true });
      else out.push({ value: await this.value(e) });
    }
    return out;
  }

  private async command(node: SyntaxNode, input: Value[] | undefined): Promise<Value[]> {
    const parts = named(node);
    const els = await this.elements(node);
    if (parts.some((c) => c.type === 'command_invokation_operator')) {
      const expr = parts.find((c) => c.type === 'command_name_expr')!;
      const inner = named(expr)[0];
      const program = str(inner.type === 'path_command_name' ? await this.value(named(inner)[0] ?? inner) : await this.value(inner));
      return this.native(program, els);
    }
    const name = parts.find((c) => c.type === 'command_name')!.text;
    const fn = this.functions.get(name.toLowerCase());
    if (fn) return this.callFunction(fn, els, name);
    if (/\.exe$|[\\/]/i.test(name)) return this.native(name, els);
    return this.cmdlet(name, els, input ?? [], node);
  }

  private async native(program: string, els: { param?: string; value?: Value; splat?: boolean }[]): Promise<Value[]> {
    const args = els.flatMap((e) => (e.param !== undefined ? [e.param] : enumerate(e.value ?? null).map(str)));
    const r = await this.host.run(program, args);
    const { code, stdout } = typeof r === 'number' ? { code: r, stdout: '' } : r;
    this.lastExitCode = code;
    return stdout.split(/\r?\n/).filter((l, i, all) => l !== '' || i < all.length - 1);
  }

  /** Bind named and positional arguments to a param block's parameters (types coerced, switches set). */
  private async bind(params: SyntaxNode | undefined, els: { param?: string; value?: Value; splat?: boolean }[], what: string): Promise<Map<string, Value>> {
    const specs = (params ? params.descendantsOfType('script_parameter') : []).filter((p): p is SyntaxNode => p !== null);
    const info = specs.map((p) => {
      const variable = named(p).find((c) => c.type === 'variable')!;
      const attrs = named(p).find((c) => c.type === 'attribute_list')?.text ?? '';
      const type = /\[(string\[\]|string|int|switch)\]/i.exec(attrs)?.[1]?.toLowerCase() ?? '';
      const validate = /ValidateSet\(([^)]*)\)/i.exec(attrs)?.[1];
      return {
        name: variable.text.slice(1),
        type,
        mandatory: /Mandatory\s*=\s*\$true/i.test(attrs),
        set: validate ? [...validate.matchAll(/'([^']*)'/g)].map((m) => m[1]) : undefined,
        def: named(p).find((c) => c.type === 'script_parameter_default'),
      };
    });
    const bound = new Map<string, Value>();
    const positional: Value[] = [];
    for (let i = 0; i < els.length; i++) {
      const e = els[i];
      if (e.param === undefined) {
        positional.push(e.value ?? null);
        continue;
      }
      const pname = e.param.replace(/^-/, '').replace(/:$/, '');
      const spec = info.find((s) => s.name.toLowerCase() === pname.toLowerCase());
      if (!spec) throw new PSError(`${what}: A parameter cannot be found that matches parameter name '${pname}'.`);
      if (spec.type === 'switch') bound.set(spec.name, true);
      else {
        const next = els[++i];
        if (!next || next.param !== undefined) throw new PSError(`${what}: Missing an argument for parameter '${pname}'.`);
        bound.set(spec.name, next.value ?? null);
      }
    }
    for (const spec of info) if (!bound.has(spec.name) && spec.type !== 'switch' && positional.length) bound.set(spec.name, positional.shift()!);
    if (positional.length) throw new PSError(`${what}: A positional parameter cannot be found that accepts argument '${str(positional[0])}'.`);
    const out = new Map<string, Value>();
    for (const spec of info) {
      let v: Value;
      if (bound.has(spec.name)) v = bound.get(spec.name)!;
      else if (spec.mandatory) throw new Unsupported(`${what}: the mandatory parameter -${spec.name} is missing (PowerShell would prompt for it)`);
      else if (spec.def) v = await this.assignedValue(named(spec.def)[0]);
      else v = spec.type === 'switch' ? false : spec.type === 'string' ? '' : spec.type === 'int' ? 0 : null;
      if (spec.type === 'string') v = Array.isArray(v) ? v.map(str).join(' ') : str(v);
      if (spec.type === 'string[]') v = enumerate(v).map(str);
      if (spec.type === 'int') v = num(v);
      if (spec.set && !spec.set.some((s) => s.toLowerCase() === str(v).toLowerCase()))
        throw new PSError(`${what}: Cannot validate argument on parameter '${spec.name}'. The argument "${str(v)}" does not belong to the set "${spec.set.join(',')}"`);
      out.set(spec.name.toLowerCase(), v);
    }
    return out;
  }

  private async callFunction(fn: FunctionDef, els: { param?: string; value?: Value; splat?: boolean }[], name: string): Promise<Value[]> {
    const saved = this.scope;
    const scope = new Scope(saved);
    for (const [k, v] of await this.bind(fn.params, els, name)) scope.vars.set(k, v);
    this.scope = scope;
    const out: Value[] = [];
    try {
      const body = named(fn.body).find((c) => c.type === 'script_block_body');
      if (body) await this.exec(body, out);
    } catch (e) {
      if (!(e instanceof Return)) throw e;
      out.push(...e.value);
    } finally {
      this.scope = saved;
    }
    return out;
  }

  /** Run a script file's top level with its parameters bound; resolves to its exit code. */
  async script(root: SyntaxNode, els: { param?: string; value?: Value }[], what: string): Promise<number> {
    const params = named(root).find((c) => c.type === 'param_block');
    for (const [k, v] of await this.bind(params, els, what)) this.scope.vars.set(k, v);
    return this.top(root);
  }

  async top(root: SyntaxNode): Promise<number> {
    const out: Value[] = [];
    try {
      for (const c of named(root)) if (c.type !== 'param_block' && c.type !== 'attribute_list') await this.exec(c, out);
    } catch (e) {
      if (e instanceof Exit) return e.code;
      throw e;
    } finally {
      for (const o of out) this.host.write?.(str(o));
    }
    return this.lastExitCode;
  }

  private cmdletArgs(els: { param?: string; value?: Value }[], switches: string[]): { named: Map<string, Value>; positional: Value[] } {
    const m = new Map<string, Value>();
    const positional: Value[] = [];
    for (let i = 0; i < els.length; i++) {
      const e = els[i];
      if (e.param === undefined) positional.push(e.value ?? null);
      else {
        const p = e.param.replace(/^-/, '').toLowerCase();
        if (switches.includes(p) || !els[i + 1] || els[i + 1].param !== undefined) m.set(p, true);
        else m.set(p, els[++i].value ?? null);
      }
    }
    return { named: m, positional };
  }

  private async cmdlet(name: string, els: { param?: string; value?: Value }[], input: Value[], node: SyntaxNode): Promise<Value[]> {
    const lower = name.toLowerCase();
    const { named: a, positional } = this.cmdletArgs(els, CMDLET_SWITCHES[lower] ?? []);
    const path = () => str(a.get('literalpath') ?? a.get('path') ?? positional[0] ?? null);
    const winParent = (p: string) => p.replace(/[\\/]+[^\\/]*$/, '');
    switch (lower) {
      case 'set-strictmode':
        this.strict = true;
        return [];
      case 'join-path':
        return [`${str(a.get('path') ?? positional[0] ?? null).replace(/\\+$/, '')}\\${str(a.get('childpath') ?? positional[1] ?? null).replace(/^\\+/, '')}`];
      case 'split-path':
        if (a.get('parent') === true || !a.has('leaf')) return [winParent(path())];
        return this.unsupported(node);
      case 'test-path':
        return [existsSync(this.files(node)(path()))];
      case 'new-item': {
        if (str(a.get('itemtype') ?? null).toLowerCase() !== 'directory') this.unsupported(node, 'New-Item other than a directory');
        mkdirSync(this.files(node)(path()), { recursive: true });
        return [path()];
      }
      case 'get-item': {
        const f = this.files(node)(path());
        if (!existsSync(f)) throw new PSError(`Cannot find path '${path()}' because it does not exist.`);
        const item = new PSBag('object');
        item.set('FullName', path());
        item.set('LastWriteTimeUtc', new PSDate(statSync(f).mtimeMs));
        return [item];
      }
      case 'get-content': {
        const f = this.files(node)(path());
        if (!existsSync(f)) throw new PSError(`Cannot find path '${path()}' because it does not exist.`);
        const text = readFileSync(f, 'utf8').replace(/^\ufeff/, '');
        return a.get('raw') === true ? [text] : text.split(/\r?\n/);
      }
      case 'set-content': {
        // Windows PowerShell 5.1's default encoding is the ANSI code page: the same bytes for ASCII text.
        const v = a.get('value') ?? positional[1] ?? null;
        writeFileSync(this.files(node)(path()), enumerate(v).map(str).join('\r\n') + '\r\n');
        return [];
      }
      case 'select-string': {
        if (a.get('quiet') !== true) this.unsupported(node, 'Select-String without -Quiet');
        const f = this.files(node)(path());
        if (!existsSync(f)) throw new PSError(`Cannot find path '${path()}' because it does not exist.`);
        const re = new RegExp(str(a.get('pattern') ?? null), 'im');
        return [
          readFileSync(f, 'utf8')
            .split(/\r?\n/)
            .some((l) => re.test(l)),
        ];
      }
      case 'convertfrom-json': {
        const text = (input.length ? input : positional).map(str).join('\n');
        try {
          return [fromJson(JSON.parse(text))];
        } catch (e) {
          throw new PSError(`Conversion from JSON failed with error: ${(e as Error).message}`);
        }
      }
      case 'convertto-json': {
        const v = input.length === 1 ? input[0] : input.length ? input : (positional[0] ?? null);
        return [JSON.stringify(toJson(v), null, 2)];
      }
      case 'foreach-object':
      case 'where-object': {
        const block = positional[0];
        if (!(block instanceof ScriptBlock)) return this.unsupported(node, `${name} without a script block`);
        const out: Value[] = [];
        const saved = this.scope.lookup('_');
        try {
          for (const item of input) {
            this.scope.vars.set('_', item);
            const r: Value[] = [];
            await this.exec(block.node, r);
            if (lower === 'foreach-object') out.push(...r.flatMap(enumerate));
            else if (truthy(collapse(r))) out.push(item);
          }
        } finally {
          if (saved.found) this.scope.vars.set('_', saved.value);
          else this.scope.vars.delete('_');
        }
        return out;
      }
      case 'out-null':
        return [];
      case 'write-host':
        this.host.write?.(positional.map(str).join(' '));
        return [];
      case 'write-warning':
        this.host.write?.(`WARNING: ${positional.map(str).join(' ')}`);
        return [];
      case 'start-sleep':
        if (!this.host.sleep) this.unsupported(node, 'no clock on this host');
        await this.host.sleep(num(a.get('seconds') ?? positional[0] ?? null));
        return [];
      case 'invoke-webrequest': {
        if (!this.host.fetch) this.unsupported(node, 'no network on this host');
        const url = str(a.get('uri') ?? positional[0] ?? null);
        let r: { status: number; body: string };
        try {
          r = await this.host.fetch(url);
        } catch (e) {
          throw new PSError(`Unable to connect to the remote server (${(e as Error).message})`);
        }
        // A status other than 2xx is a terminating error (Invoke-WebRequest, "Outputs").
        if (r.status < 200 || r.status > 299) throw new PSError(`The remote server returned an error: (${r.status}).`);
        const resp = new PSBag('object');
        resp.set('StatusCode', r.status);
        resp.set('Content', r.body);
        return [resp];
      }
      default:
        return this.unsupported(node, `command ${name}`);
    }
  }
}

/** Run `script` (e.g. the text after `powershell.exe -Command`) against `host`; resolves to its exit code. */
export async function runPowerShell(script: string, host: PowerShellHost): Promise<number> {
  const root = await parse(script);
  return new Interpreter(host, script, new Scope()).top(root);
}

/**
 * Run a script file (`file` on this host; `windowsPath` is where it is on the node, for $PSScriptRoot) with
 * the arguments of its command line (`commandLine`'s tokens); resolves to its exit code, or rejects with
 * the error it threw.
 */
export async function runScriptFile(file: string, windowsPath: string, args: ArgToken[], host: PowerShellHost): Promise<number> {
  const text = readFileSync(file, 'utf8');
  const root = await parse(text);
  const scope = new Scope();
  scope.vars.set('psscriptroot', windowsPath.replace(/\\[^\\]*$/, ''));
  const els = args.map((t) => (t.param !== undefined ? { param: t.param } : { value: t.value ?? null }));
  return new Interpreter(host, text, scope).script(root, els, windowsPath);
}

/** One argument of a command line in argument mode: a `-Parameter`, or a value (a string, or an array for `a,b`). */
export interface ArgToken {
  param?: string;
  value?: string | string[];
}

/**
 * A command line as PowerShell's argument mode splits it (about_Parsing): blanks separate arguments, '…'
 * and "…" quote (no variable in the documented lines), a bare `-Name` is a parameter, a bare `a,b` an
 * array, `--x` and `--` are plain arguments. tree-sitter-powershell misparses some of these lines (a
 * parameter name with a digit, `-IPv4Only`; a bare `--`), hence this tokenizer for the operator's lines.
 */
export function commandLine(text: string): { program: string; args: ArgToken[] } {
  const words: { text: string; quoted: boolean }[] = [];
  const re = /'((?:[^']|'')*)'|"((?:[^"`]|`.)*)"|(\S+)/g;
  for (const m of text.matchAll(re)) {
    if (m[3] !== undefined && /[$`;|&(){}]/.test(m[3])) throw new Unsupported(`the command line ${JSON.stringify(text)} needs PowerShell's expression mode (${m[3]})`);
    if (m[2] !== undefined && /\$/.test(m[2])) throw new Unsupported(`the command line ${JSON.stringify(text)} expands a variable`);
    words.push(
      m[1] !== undefined
        ? { text: m[1].replace(/''/g, "'"), quoted: true }
        : m[2] !== undefined
          ? { text: m[2].replace(/`(.)/g, '$1'), quoted: true }
          : { text: m[3], quoted: false },
    );
  }
  const [program, ...rest] = words;
  if (!program) throw new Unsupported('an empty command line');
  return {
    program: program.text,
    args: rest.map((w) => {
      if (!w.quoted && /^-[A-Za-z][A-Za-z0-9]*$/.test(w.text)) return { param: w.text };
      if (!w.quoted && w.text.includes(',') && !w.text.startsWith('-')) return { value: w.text.split(',') };
      return { value: w.text };
    }),
  };
}

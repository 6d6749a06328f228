// The PowerShell that deploy/'s containers run (`powershell.exe ... -Command <script>`), interpreted here on
// Linux for the subset they use, so a test runs a rendered manifest's own command lines: parsed with
// tree-sitter-powershell (the grammar deploy.test.ts checks scripts/start.ps1 with), then
//  * statements separated by `;`;
//  * `$name = <expression>`;
//  * the call operator `& <expression> <arguments>`: a native command, its exit code in $LASTEXITCODE;
//  * `Join-Path A B` (one separator between the parts, as PowerShell's FileSystem provider joins on Windows);
//  * `$env:NAME`, `$name`, '...' verbatim strings ('' for a quote), decimal integers, bare words and
//    -parameters, which a native command receives as they are written;
//  * `exit <expression>`.
// Anything else throws, and so does an environment variable the container does not have (PowerShell would
// drop the argument silently): a manifest that starts using more fails the test that runs it instead of
// running differently from PowerShell.
import { join } from 'node:path';
import type { Node as SyntaxNode, Parser } from 'web-tree-sitter';

/** What the script runs against: its environment and the native commands. */
export interface PowerShellHost {
  /** The container's environment (names compared case-insensitively, as on Windows). */
  env: Record<string, string>;
  /** Run a native command; resolves to its exit code. */
  run(program: string, args: string[]): Promise<number>;
}

let parser: Promise<Parser> | undefined;

async function powershellParser(): Promise<Parser> {
  const { Parser: P, Language } = await import('web-tree-sitter');
  await P.init();
  const lang = await Language.load(join(process.cwd(), 'node_modules', 'tree-sitter-powershell', 'tree-sitter-powershell.wasm'));
  const p = new P();
  p.setLanguage(lang);
  return p;
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
]);

class Interpreter {
  private readonly vars = new Map<string, string>();
  private lastExitCode = 0;

  constructor(private readonly host: PowerShellHost) {}

  private unsupported(node: SyntaxNode): never {
    throw new Error(`PowerShell construct not supported by test/support/powershell.ts: ${node.type} ${JSON.stringify(node.text.slice(0, 80))}`);
  }

  private env(name: string): string {
    const key = Object.keys(this.host.env).find((k) => k.toLowerCase() === name.toLowerCase());
    if (key === undefined) throw new Error(`the script reads $env:${name}, which the container's environment does not set`);
    return this.host.env[key];
  }

  private variable(text: string): string {
    if (/^\$env:/i.test(text)) return this.env(text.slice(5));
    const name = text.slice(1).toLowerCase();
    if (name === 'lastexitcode') return String(this.lastExitCode);
    const v = this.vars.get(name);
    if (v === undefined) throw new Error(`the script reads ${text} before setting it`);
    return v;
  }

  /** The value of an expression or a command argument. */
  private async value(node: SyntaxNode): Promise<string> {
    const named = node.namedChildren.filter((c): c is SyntaxNode => c !== null);
    if (WRAPPERS.has(node.type) && named.length === 1) return this.value(named[0]);
    switch (node.type) {
      case 'variable':
        return this.variable(node.text);
      case 'string_literal': {
        const s = named[0];
        if (s?.type !== 'verbatim_string_characters') return this.unsupported(node);
        return s.text.slice(1, -1).replace(/''/g, "'");
      }
      case 'generic_token':
      case 'command_parameter':
      case 'decimal_integer_literal':
        return node.text;
      case 'integer_literal':
        if (!/^\d+$/.test(node.text)) return this.unsupported(node);
        return node.text;
      case 'parenthesized_expression':
      case 'pipeline':
        if (named.length !== 1) return this.unsupported(node);
        return this.value(named[0]);
      case 'command':
        return this.cmdlet(node);
      default:
        return this.unsupported(node);
    }
  }

  /** The arguments of a command, in order. */
  private async elements(command: SyntaxNode): Promise<string[]> {
    const elements = command.namedChildren.find((c) => c?.type === 'command_elements');
    const out: string[] = [];
    for (const e of elements?.namedChildren ?? []) {
      if (!e || e.type === 'command_argument_sep') continue;
      out.push(await this.value(e));
    }
    return out;
  }

  /** The one cmdlet the manifests use for a value: Join-Path. */
  private async cmdlet(command: SyntaxNode): Promise<string> {
    const name = command.namedChildren.find((c) => c?.type === 'command_name');
    if (!name || name.text.toLowerCase() !== 'join-path') return this.unsupported(command);
    const args = await this.elements(command);
    if (args.length !== 2) return this.unsupported(command);
    return `${args[0].replace(/\\+$/, '')}\\${args[1].replace(/^\\+/, '')}`;
  }

  /** `& <program> args...`: run it, keep its exit code. */
  private async call(command: SyntaxNode): Promise<void> {
    const nameExpr = command.namedChildren.find((c) => c?.type === 'command_name_expr');
    if (!command.namedChildren.some((c) => c?.type === 'command_invokation_operator') || !nameExpr) return this.unsupported(command);
    const inner = nameExpr.namedChildren[0];
    if (!inner) return this.unsupported(command);
    const program = await this.value(inner);
    this.lastExitCode = await this.host.run(program, await this.elements(command));
  }

  /** Run the statements; resolves to the exit code the script ends with. */
  async run(root: SyntaxNode): Promise<number> {
    if (root.hasError) throw new Error(`the script does not parse as PowerShell: ${root.text.slice(0, 200)}`);
    const list = root.namedChildren.find((c) => c?.type === 'statement_list');
    for (const st of list?.namedChildren ?? []) {
      if (!st || st.type === 'empty_statement') continue;
      if (st.type === 'flow_control_statement') {
        if (!/^exit\b/i.test(st.text)) return this.unsupported(st);
        const arg = st.namedChildren[0];
        return arg ? Number(await this.value(arg)) : 0;
      }
      if (st.type !== 'pipeline') return this.unsupported(st);
      const body = st.namedChildren[0];
      if (body?.type === 'assignment_expression') {
        const [left, , right] = body.namedChildren;
        const name = left?.text ?? '';
        if (!/^\$[A-Za-z_]\w*$/.test(name) || !right || body.namedChildren[1]?.text !== '=') return this.unsupported(body);
        this.vars.set(name.slice(1).toLowerCase(), await this.value(right));
        continue;
      }
      const command = body?.type === 'pipeline_chain' && body.namedChildren.length === 1 ? body.namedChildren[0] : undefined;
      if (command?.type !== 'command') return this.unsupported(st);
      await this.call(command);
    }
    return this.lastExitCode;
  }
}

/** Run `script` (the text after `powershell.exe -Command`) against `host`; resolves to its exit code. */
export async function runPowerShell(script: string, host: PowerShellHost): Promise<number> {
  const p = await (parser ??= powershellParser());
  const tree = p.parse(script);
  if (!tree) throw new Error('tree-sitter-powershell returned no tree');
  return new Interpreter(host).run(tree.rootNode);
}

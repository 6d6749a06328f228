// `flanneld netconf set-vni`: set Backend.VNI and Backend.Port inside a net-conf.json, and nothing else.
// A merge patch of the shared kube-flannel-cfg replaces the whole net-conf.json string (a config with
// EnableNFTables, EnableIPv6 and IPv6Network comes back as four keys), so the edit works on the text:
// jsonc-parser's modify/applyEdits change the two values (or insert the two keys into Backend) and leave
// every other byte as it was: key order, unknown keys, spacing. The keys are the ones of flannel
// pkg/subnet/config.go (EnableIPv4, EnableIPv6, Network, IPv6Network, SubnetLen, SubnetMin, SubnetMax,
// IPv6SubnetLen/Min/Max, EnableNFTables, Backend) and Documentation/backends.md for vxlan (Type, VNI,
// Port, GBP, Learning, DirectRouting, MTU, MacPrefix, Name); Go's encoding/json matches keys without
// regard to case, so an existing "backend" or "vni" key is edited under its own spelling; and when several
// keys match (`Backend` and `backend`), the last one is what Go (Linux flanneld) and the agent read
// (./net-conf.ts field), so that is the one edited and checked.
//
// The input may be the ConfigMap itself (`kubectl get cm kube-flannel-cfg -o json` or `-o yaml`) or a bare
// net-conf.json. In a ConfigMap only the net-conf.json value changes: in JSON its string literal, in YAML
// its block scalar (`net-conf.json: |`, as kubectl prints it) or its one-line scalar, re-indented as it was.
// Every result is parsed again and compared with what was meant, so a layout this cannot edit in place
// fails with FLANNEL_ERR_NET_CONF instead of writing something else.
import { applyEdits, modify, parseTree, printParseErrorCode, type FormattingOptions, type ModificationOptions, type Node, type ParseError } from 'jsonc-parser';
import yaml from 'js-yaml';
import { withoutBom } from '../basics/bom.js';
import { NetConfError } from '../basics/errors.js';
import { field } from './net-conf.js';

export type NetConfSource = 'net-conf.json' | 'ConfigMap (JSON)' | 'ConfigMap (YAML)';

export interface VniEdit {
  vni: number;
  port: number;
}

export interface EditResult {
  source: NetConfSource;
  text: string;
  /** Backend.VNI and Backend.Port before the edit (undefined: not set). */
  before: { vni: unknown; port: unknown };
  /** The net-conf.json text before and after the edit (inside the ConfigMap, when the input is one). */
  netConfBefore: string;
  netConf: string;
}

const NET_CONF_KEY = 'net-conf.json';

function fail(message: string, context: Record<string, string | number> = {}): never {
  throw new NetConfError('FLANNEL_ERR_NET_CONF', message, context);
}

/**
 * The property of object node `obj` a Go reader takes for `name`: the last key equal to it without regard
 * to case (encoding/json decodes every matching key in order into the one field, so the last one stays).
 */
function property(obj: Node | undefined, name: string): Node | undefined {
  const props = obj?.type === 'object' ? (obj.children ?? []) : [];
  const key = (p: Node) => String(p.children?.[0]?.value);
  return props.findLast((p) => key(p).toLowerCase() === name.toLowerCase());
}

/** Indentation unit and line ending of a multi-line JSON text, for the keys jsonc-parser inserts. */
function formatting(text: string): FormattingOptions | undefined {
  if (!text.includes('\n')) return undefined;
  const indents = [...text.matchAll(/\n([ \t]+)\S/g)].map((m) => m[1] ?? '');
  const tab = indents.some((i) => i.startsWith('\t'));
  const unit = indents.length > 0 ? Math.min(...indents.map((i) => i.length)) : 2;
  return { insertSpaces: !tab, tabSize: tab ? 1 : unit, eol: text.includes('\r\n') ? '\r\n' : '\n' };
}

/** Set Backend.VNI and Backend.Port in net-conf.json text; every other byte stays. */
export function setVniInNetConf(text: string, edit: VniEdit): { text: string; before: { vni: unknown; port: unknown } } {
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { disallowComments: true, allowTrailingComma: false });
  if (!root || errors.length > 0) fail(`net-conf.json is not valid JSON (${printParseErrorCode(errors[0]?.error ?? 0)} at offset ${errors[0]?.offset ?? 0})`);
  if (root.type !== 'object') fail('net-conf.json must be a JSON object such as {"Network": "10.244.0.0/16", "Backend": {"Type": "vxlan"}}');
  const backendProp = property(root, 'Backend');
  const backend = backendProp?.children?.[1];
  if (!backendProp || backend?.type !== 'object') fail('net-conf.json has no Backend object: set-vni edits the vxlan backend of an existing net-conf');
  const type: unknown = property(backend, 'Type')?.children?.[1]?.value;
  if (typeof type !== 'string' || type.toLowerCase() !== 'vxlan')
    fail(`Backend.Type is ${JSON.stringify(type)}, not vxlan: VNI and Port belong to the vxlan backend`, { backendType: String(type) });
  const backendKey = String(backendProp.children?.[0]?.value);
  const vniProp = property(backend, 'VNI');
  const portProp = property(backend, 'Port');
  const before = { vni: vniProp?.children?.[1]?.value as unknown, port: portProp?.children?.[1]?.value as unknown };
  const backendText = text.slice(backend.offset, backend.offset + backend.length);
  const options: ModificationOptions = { formattingOptions: formatting(backendText) };
  let out = text;
  out = applyEdits(out, modify(out, [backendKey, vniProp ? String(vniProp.children?.[0]?.value) : 'VNI'], edit.vni, options));
  out = applyEdits(out, modify(out, [backendKey, portProp ? String(portProp.children?.[0]?.value) : 'Port'], edit.port, options));
  return { text: out, before };
}

/** Check that `edited` is `original` with only Backend.VNI/Port changed (what the edit promised), read as the agent reads it. */
function checkOnlyVniChanged(original: string, edited: string, edit: VniEdit): void {
  const a = JSON.parse(original) as Record<string, unknown>;
  const b = JSON.parse(edited) as Record<string, unknown>;
  const be = field(b, 'Backend');
  if (!isObject(be) || field(be, 'VNI') !== edit.vni || field(be, 'Port') !== edit.port) fail('internal: the edited net-conf.json does not carry the new VNI and Port');
  // Every other key as it was: the read Backend without its VNI and Port keys, and the rest untouched.
  const strip = (o: Record<string, unknown>) => {
    const k = Object.keys(o).findLast((x) => x.toLowerCase() === 'backend')!;
    const inner = { ...(o[k] as Record<string, unknown>) };
    for (const x of Object.keys(inner)) if (['vni', 'port'].includes(x.toLowerCase())) delete inner[x];
    return JSON.stringify({ ...o, [k]: inner });
  };
  if (strip(a) !== strip(b)) fail('internal: the edit changed more than Backend.VNI and Backend.Port');
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The ConfigMap's net-conf.json value, or a coded error saying what the input is instead. */
function netConfOf(doc: Record<string, unknown>, source: NetConfSource): string {
  const data = doc['data'];
  const value = isObject(data) ? data[NET_CONF_KEY] : undefined;
  if (typeof value !== 'string')
    fail(`the ${source} has no data["${NET_CONF_KEY}"] string: pass kube-flannel-cfg (kubectl -n kube-flannel get cm kube-flannel-cfg -o yaml) or a net-conf.json`);
  return value;
}

/** Replace the YAML scalar of `net-conf.json` under `data:` with `value`, keeping its style and indentation. */
function replaceYamlScalar(text: string, value: string): string {
  const lines = text.split(/(?<=\n)/);
  const keyRe = /^([ \t]*)(["']?)net-conf\.json\2[ \t]*:[ \t]*(.*?)(\r?\n)?$/;
  const at = lines.findIndex((l) => keyRe.test(l));
  if (at < 0) fail(`no "${NET_CONF_KEY}:" line in the YAML ConfigMap`);
  const m = keyRe.exec(lines[at])!;
  const keyIndent = m[1].length;
  const rest = m[3];
  const eol = m[4] ?? (text.includes('\r\n') ? '\r\n' : '\n');
  if (/^[|>]/.test(rest)) {
    if (rest.startsWith('>')) fail(`the YAML ConfigMap holds ${NET_CONF_KEY} as a folded scalar (>); use kubectl get -o json, or a literal block (|)`);
    let end = at + 1;
    let indent: number | undefined;
    while (end < lines.length) {
      const l = lines[end];
      if (l.trim() === '') {
        end++;
        continue;
      }
      const ind = /^[ ]*/.exec(l)![0].length;
      if (ind <= keyIndent) break;
      indent ??= ind;
      end++;
    }
    // Trailing blank lines belong to what follows (unless kept with |+, which re-parsing checks).
    while (end > at + 1 && lines[end - 1].trim() === '') end--;
    const pad = ' '.repeat(indent ?? keyIndent + 2);
    // The edit never touches the text's last line, so the block's chomping indicator still fits.
    const block = value
      .replace(/\r?\n$/, '')
      .split(/\r?\n/)
      .map((l) => (l === '' ? eol : `${pad}${l}${eol}`))
      .join('');
    return [...lines.slice(0, at), lines[at], block, ...lines.slice(end)].join('');
  }
  const closed = (q: string) => rest.length > 1 && new RegExp(`${q}[ \\t]*(#.*)?$`).test(rest);
  const oneLine = rest !== '' && (rest.startsWith('"') ? closed('"') : rest.startsWith("'") ? closed("'") : true);
  if (oneLine) {
    const line = `${m[1]}${m[2]}${NET_CONF_KEY}${m[2]}: ${JSON.stringify(value)}${m[4] ?? ''}`;
    return [...lines.slice(0, at), line, ...lines.slice(at + 1)].join('');
  }
  return fail(`cannot edit the YAML layout of ${NET_CONF_KEY} in place; use kubectl get -o json`);
}

/**
 * Set Backend.VNI and Backend.Port in a net-conf.json, or in the net-conf.json of a kube-flannel-cfg
 * ConfigMap (JSON or YAML). Throws FLANNEL_ERR_NET_CONF for input it cannot edit. A leading UTF-8 BOM (what
 * PowerShell 5's `Set-Content -Encoding utf8` writes; src/basics/bom.ts) is set aside for the edit and kept on output.
 */
export function setVni(text: string, edit: VniEdit): EditResult {
  const body = withoutBom(text);
  const r = setVniInText(body, edit);
  return body === text ? r : { ...r, text: `${text.slice(0, 1)}${r.text}` };
}

function setVniInText(text: string, edit: VniEdit): EditResult {
  let json: unknown;
  let isJson = true;
  try {
    json = JSON.parse(text);
  } catch {
    isJson = false;
  }
  if (isJson && isObject(json) && !('data' in json) && !('kind' in json)) {
    const r = setVniInNetConf(text, edit);
    checkOnlyVniChanged(text, r.text, edit);
    return { source: 'net-conf.json', text: r.text, before: r.before, netConfBefore: text, netConf: r.text };
  }
  if (isJson && isObject(json)) {
    const inner = netConfOf(json, 'ConfigMap (JSON)');
    const r = setVniInNetConf(inner, edit);
    checkOnlyVniChanged(inner, r.text, edit);
    const out = applyEdits(text, modify(text, ['data', NET_CONF_KEY], r.text, {}));
    const again = JSON.parse(out) as Record<string, unknown>;
    if (netConfOf(again, 'ConfigMap (JSON)') !== r.text || JSON.stringify({ ...again, data: {} }) !== JSON.stringify({ ...json, data: {} })) {
      fail('internal: the ConfigMap changed outside data["net-conf.json"]');
    }
    return { source: 'ConfigMap (JSON)', text: out, before: r.before, netConfBefore: inner, netConf: r.text };
  }
  if (isJson) fail('the input is JSON but not an object: pass a net-conf.json or the kube-flannel-cfg ConfigMap');
  let doc: unknown;
  try {
    doc = yaml.load(text);
  } catch (err) {
    fail(`the input is neither JSON nor YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (!isObject(doc)) fail('the input is not a ConfigMap or a net-conf.json');
  const inner = netConfOf(doc, 'ConfigMap (YAML)');
  const r = setVniInNetConf(inner, edit);
  checkOnlyVniChanged(inner, r.text, edit);
  const out = replaceYamlScalar(text, r.text);
  const again = yaml.load(out);
  const data = (d: unknown) => (isObject(d) && isObject(d['data']) ? d['data'] : {});
  if (
    !isObject(again) ||
    data(again)[NET_CONF_KEY] !== r.text ||
    JSON.stringify({ ...again, data: { ...data(again), [NET_CONF_KEY]: '' } }) !== JSON.stringify({ ...doc, data: { ...data(doc), [NET_CONF_KEY]: '' } })
  ) {
    fail(`cannot edit the YAML layout of ${NET_CONF_KEY} in place; use kubectl get -o json`);
  }
  return { source: 'ConfigMap (YAML)', text: out, before: r.before, netConfBefore: inner, netConf: r.text };
}

/** A unified diff of two texts, line by line (what --dry-run prints). */
export function lineDiff(a: string, b: string, names: [string, string]): string {
  const x = a.split(/\r?\n/);
  const y = b.split(/\r?\n/);
  // Longest common subsequence table; net-conf texts are a few dozen lines.
  const lcs: number[][] = Array.from({ length: x.length + 1 }, () => new Array<number>(y.length + 1).fill(0));
  for (let i = x.length - 1; i >= 0; i--) for (let j = y.length - 1; j >= 0; j--) lcs[i][j] = x[i] === y[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const out = [`--- ${names[0]}`, `+++ ${names[1]}`];
  let i = 0;
  let j = 0;
  while (i < x.length || j < y.length) {
    if (i < x.length && j < y.length && x[i] === y[j]) {
      out.push(` ${x[i]}`);
      i++;
      j++;
    } else if (j < y.length && (i >= x.length || lcs[i][j + 1] > lcs[i + 1][j])) {
      out.push(`+${y[j++]}`);
    } else {
      out.push(`-${x[i++]}`);
    }
  }
  return out.join('\n') + '\n';
}

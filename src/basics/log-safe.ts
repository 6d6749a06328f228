// Make logged values safe to read in a terminal and to hand to others:
// - control characters (C0, DEL, C1), the bidi overrides and isolates ("Trojan Source") and U+2028/2029
//   are escaped as \uXXXX by the one escape of ./terminal-text.ts: an annotation carrying
//   ESC [2J would otherwise clear the operator's terminal, and a newline would forge a log line;
// - secrets are redacted by value: every password, token and private key this process reads (the etcd
//   password, a token file, an exec plugin's token, the etcd client key) is registered here
//   (registerSecret) and replaced by `***` wherever it appears, whatever text carries it: gRPC names an
//   endpoint `dns:user:pass@host`, which no URL pattern recognises. One slot per source (a token file, the
//   etcd password): a rotated token replaces the one before, so the set stays as small as the sources;
// - and by shape, for secrets never registered: credentials embedded in URLs (`http://user:pass@host`,
//   RFC 3986 userinfo; a password's up to the last `@`, as it may hold `/`), HTTP credentials (`Bearer <token>`, `Basic <base64>`, RFC 6750 / RFC 7617),
//   `token=...`, `password: ...`, `"secret":"..."` inside messages (what a credential plugin's stderr or
//   a server's error body carries), and fields named like a secret (token, password, authorization).
// Applied by the winston format of ./log.ts to the message and every field, text and json alike, and by
// main.ts to what it prints on stderr.

import { escapeUnsafe } from './terminal-text.js';

/**
 * scheme://userinfo@. A `user:password` may hold `/ ? #` unencoded (`http://u:ab/cd@host`): after the
 * first `:` everything up to the last `@` (before whitespace, a quote, `<>` or a comma, which separates
 * endpoints) is the userinfo; `http://host:2379/a@b` is redacted too, the safe side. Without a `:`, the
 * userinfo stops at `/ ? #`, so `http://host/a@b` stays (RFC 3986 §3.2).
 */
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)(?:[^/?#@\s:]*:(?:[^\s"'<>,@]*@)+|[^/?#@\s]+@)/gi;
/** An HTTP Authorization credential as it appears in a header or an error message. */
const HTTP_CREDENTIAL = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/gi;
/** Names of secrets, as the key of `key=value` / `key: value` / `"key":"value"` in text, and as field names. */
const SECRET_NAME = 'token|password|passwd|pwd|secret|authorization|api[_-]?key|private[_-]?key';
const SECRET_KEY = new RegExp(`${SECRET_NAME}|credential`, 'i');
/** `<name>=value`, `<name>: value`, `"<name>": "value"`: the value (up to a quote, space, comma, `;`, `&` or brace) is redacted. */
const SECRET_ASSIGNMENT = new RegExp(`((?:[\\w.-]*(?:${SECRET_NAME})[\\w.-]*)["']?\\s*[:=]\\s*["']?)(?!\\*\\*\\*|(?:Bearer|Basic)\\s)[^\\s"',;&{}\\[\\]]+`, 'gi');
const MAX_DEPTH = 8;
/** Shorter registered values are not redacted by value: they would blank out ordinary words (docs/compatibility.md). */
const MIN_SECRET_LENGTH = 4;

/** The registered secrets, one slot per source (its forms: as read, URL-encoded; a PEM's lines). */
const slots = new Map<string, string[]>();
let secretPattern: RegExp | undefined;

function setSlot(source: string, values: string[]): void {
  const forms = [
    ...new Set(
      values
        .map((v) => v.trim())
        .filter((v) => v.length >= MIN_SECRET_LENGTH)
        .flatMap((v) => [v, encodeURIComponent(v)]),
    ),
  ];
  const before = slots.get(source) ?? [];
  if (forms.length === before.length && forms.every((f, i) => f === before[i])) return;
  if (forms.length === 0) slots.delete(source);
  else slots.set(source, forms);
  const all = [...new Set([...slots.values()].flat())];
  const alternatives = all.sort((a, b) => b.length - a.length).map((x) => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  secretPattern = alternatives.length > 0 ? new RegExp(alternatives.join('|'), 'g') : undefined;
}

/**
 * Register the secret this process holds from `source` (e.g. `etcd-password`, `token-file:<path>`): from
 * now on it is written as `***` wherever it appears in the log or on stderr (also URL-encoded), until
 * the same source registers another value, which replaces it (a rotated token). Process-wide, like the
 * secret itself; values shorter than MIN_SECRET_LENGTH are ignored.
 */
export function registerSecret(source: string, value: string | undefined): void {
  setSlot(source, value === undefined ? [] : [value]);
}

/** Register the key material of a PEM file (each base64 line of it), e.g. a TLS private key, as `source`. */
export function registerPemSecret(source: string, pem: string | Buffer): void {
  setSlot(
    source,
    pem
      .toString()
      .split(/\r?\n/)
      .filter((line) => !line.startsWith('-----')),
  );
}

/** Escape control characters and redact secrets (registered values, URL and HTTP credentials, `token=...`) in one string. */
export function safeText(s: string): string {
  const byValue = secretPattern ? s.replace(secretPattern, '***') : s;
  const redacted = byValue.replace(URL_USERINFO, '$1***@').replace(HTTP_CREDENTIAL, '$1 ***').replace(SECRET_ASSIGNMENT, '$1***');
  return escapeUnsafe(redacted);
}

/**
 * safeText applied to every string in a value (plain objects and arrays are copied, a few levels deep).
 * Any other object (a URL, a Map, a Buffer, a class instance) is rendered as text first (its JSON, else
 * String()), so what it holds is redacted too; an Error becomes its redacted message.
 */
export function safeValue(v: unknown, depth = 0): unknown {
  if (typeof v === 'string') return safeText(v);
  if (typeof v !== 'object' || v === null) return v;
  if (depth >= MAX_DEPTH) return safeText(renderObject(v));
  if (Array.isArray(v)) return v.map((x) => safeValue(x, depth + 1));
  if (v instanceof Error) return safeText(v.message);
  const proto = Object.getPrototypeOf(v) as unknown;
  if (proto !== Object.prototype && proto !== null) return safeText(renderObject(v));
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    const [sk, sx] = safeField(k, x, depth + 1);
    out[sk] = sx;
  }
  return out;
}

/** An object as text: its JSON, else its own toString() (a cycle, a BigInt, a throwing toJSON). */
function renderObject(v: object): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(v);
  } catch {
    json = undefined;
  }
  // eslint-disable-next-line @typescript-eslint/no-base-to-string -- a class's own toString (URL's href) is the point; Object's is the last resort
  return json ?? String(v);
}

/** One field made safe: its name escaped, its value redacted when the name says it is a secret. */
export function safeField(key: string, value: unknown, depth = 0): [string, unknown] {
  const redact = SECRET_KEY.test(key) && value !== undefined && value !== '';
  return [safeText(key), redact ? '***' : safeValue(value, depth)];
}

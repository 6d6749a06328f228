// Make logged values safe to read in a terminal and to hand to others:
// - control characters (C0, DEL, C1) are escaped as \u00XX: an annotation carrying ESC [2J would
//   otherwise clear the operator's terminal, and a newline would forge a log line;
// - secrets are redacted by value: every password, token and private key this process reads (the etcd
//   password, a token file, an exec plugin's token, the etcd client key) is registered here
//   (registerSecret) and replaced by `***` wherever it appears, whatever text carries it: gRPC names an
//   endpoint `dns:user:pass@host`, which no URL pattern recognises;
// - and by shape, for secrets never registered: credentials embedded in URLs (`http://user:pass@host`,
//   RFC 3986 userinfo), HTTP credentials (`Bearer <token>`, `Basic <base64>`, RFC 6750 / RFC 7617),
//   `token=...`, `password: ...`, `"secret":"..."` inside messages (what a credential plugin's stderr or
//   a server's error body carries), and fields named like a secret (token, password, authorization).
// Applied by the winston format of ./log.ts to the message and every field, text and json alike, and by
// main.ts to what it prints on stderr.

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
/** scheme://userinfo@ where userinfo holds no `/ ? # @` or whitespace. */
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^/?#@\s]+@/gi;
/** An HTTP Authorization credential as it appears in a header or an error message. */
const HTTP_CREDENTIAL = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/gi;
/** Names of secrets, as the key of `key=value` / `key: value` / `"key":"value"` in text, and as field names. */
const SECRET_NAME = 'token|password|passwd|pwd|secret|authorization|api[_-]?key|private[_-]?key';
const SECRET_KEY = new RegExp(`${SECRET_NAME}|credential`, 'i');
/** `<name>=value`, `<name>: value`, `"<name>": "value"`: the value (up to a quote, space, comma, `;`, `&` or brace) is redacted. */
const SECRET_ASSIGNMENT = new RegExp(`((?:[\\w.-]*(?:${SECRET_NAME})[\\w.-]*)["']?\\s*[:=]\\s*["']?)(?!\\*\\*\\*|(?:Bearer|Basic)\\s)[^\\s"',;&{}\\[\\]]+`, 'gi');
const MAX_DEPTH = 8;
/** Shorter registered values are not redacted by value: they would blank out ordinary words (docs/compatibility.md). */
export const MIN_SECRET_LENGTH = 4;

const secrets = new Set<string>();
let secretPattern: RegExp | undefined;

/**
 * Register a secret this process holds: from now on it is written as `***` wherever it appears in the
 * log or on stderr (also URL-encoded). Process-wide, like the secret itself; values shorter than
 * MIN_SECRET_LENGTH are ignored.
 */
export function registerSecret(value: string | undefined): void {
  if (value === undefined) return;
  const v = value.trim();
  if (v.length < MIN_SECRET_LENGTH) return;
  const before = secrets.size;
  for (const form of [v, encodeURIComponent(v)]) secrets.add(form);
  if (secrets.size === before) return;
  const alternatives = [...secrets].sort((a, b) => b.length - a.length).map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  secretPattern = new RegExp(alternatives.join('|'), 'g');
}

/** Register the key material of a PEM file (each base64 line of it), e.g. a TLS private key. */
export function registerPemSecret(pem: string | Buffer): void {
  for (const line of pem.toString().split(/\r?\n/)) if (!line.startsWith('-----')) registerSecret(line);
}

/** Escape control characters and redact secrets (registered values, URL and HTTP credentials, `token=...`) in one string. */
export function safeText(s: string): string {
  const byValue = secretPattern ? s.replace(secretPattern, '***') : s;
  return byValue
    .replace(URL_USERINFO, '$1***@')
    .replace(HTTP_CREDENTIAL, '$1 ***')
    .replace(SECRET_ASSIGNMENT, '$1***')
    .replace(CONTROL, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

/** safeText applied to every string in a value (plain objects and arrays are copied, a few levels deep). */
export function safeValue(v: unknown, depth = 0): unknown {
  if (typeof v === 'string') return safeText(v);
  if (typeof v !== 'object' || v === null || depth >= MAX_DEPTH) return v;
  if (Array.isArray(v)) return v.map((x) => safeValue(x, depth + 1));
  if (v instanceof Error) return safeText(v.message);
  const proto = Object.getPrototypeOf(v) as unknown;
  if (proto !== Object.prototype && proto !== null) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    const [sk, sx] = safeField(k, x, depth + 1);
    out[sk] = sx;
  }
  return out;
}

/** One field made safe: its name escaped, its value redacted when the name says it is a secret. */
export function safeField(key: string, value: unknown, depth = 0): [string, unknown] {
  const redact = SECRET_KEY.test(key) && value !== undefined && value !== '';
  return [safeText(key), redact ? '***' : safeValue(value, depth)];
}

// Make logged values safe to read in a terminal and to hand to others:
// - control characters (C0, DEL, C1) are escaped as \u00XX: an annotation carrying ESC [2J would
//   otherwise clear the operator's terminal, and a newline would forge a log line;
// - credentials embedded in URLs (`http://user:pass@host`, RFC 3986 userinfo), HTTP credentials
//   (`Bearer <token>`, `Basic <base64>`, RFC 6750 / RFC 7617) and fields named like a secret (token,
//   password, authorization) are replaced by `***`.
// Applied by the winston format of ./log.ts to the message and every field, text and json alike.

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
/** scheme://userinfo@ where userinfo holds no `/ ? # @` or whitespace. */
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^/?#@\s]+@/gi;
/** An HTTP Authorization credential as it appears in a header or an error message. */
const HTTP_CREDENTIAL = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]+/gi;
/** Field names whose values are secrets whatever they hold. */
const SECRET_KEY = /token|password|passwd|secret|authorization|credential/i;
const MAX_DEPTH = 8;

/** Escape control characters and redact URL credentials in one string. */
export function safeText(s: string): string {
  return s
    .replace(URL_USERINFO, '$1***@')
    .replace(HTTP_CREDENTIAL, '$1 ***')
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

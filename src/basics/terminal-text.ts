// Text from elsewhere made safe to print on an operator's terminal: `flanneld status` prints what the
// agent's /status answered, and whatever answers on that port (or a value the agent relays: an HNS error,
// a peer's rejection message built from its annotations) must not drive the terminal. Escaped as \uXXXX:
// the C0 controls (ESC starts the ANSI/VT sequences that move the cursor, clear the screen, set the
// window title or write to the clipboard via OSC 52; CR rewrites the line; LF forges a row), DEL, the C1
// controls (U+009B is a one-character CSI on terminals that honour C1), the Unicode bidi overrides and
// isolates (U+202A-U+202E, U+2066-U+2069: "Trojan Source", CVE-2021-42574) and the line and paragraph
// separators (U+2028, U+2029). The one escape of the project, a basic module: `flanneld status`, the log
// (./log-safe.ts) and net-conf's Backend.Name check use it.

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** UNSAFE less C0, which JSON.stringify escapes inside strings (outside them are only its own newlines). */
const UNSAFE_IN_JSON = /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const escape = (c: string) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0');

/** Escape every UNSAFE character of a string as \\uXXXX. */
export function escapeUnsafe(s: string): string {
  return s.replace(UNSAFE, escape);
}

/** One value as printable text: strings escaped, anything else through String() and escaped too. */
export function terminalText(v: unknown): string {
  return escapeUnsafe(typeof v === 'string' ? v : String(v));
}

/**
 * JSON for a terminal: JSON.stringify already escapes C0 (and quotes) in strings; the rest of UNSAFE is
 * escaped the same way, which is still valid JSON that parses back to the same value.
 */
export function terminalJson(v: unknown): string {
  return JSON.stringify(v, null, 2).replace(UNSAFE_IN_JSON, escape);
}

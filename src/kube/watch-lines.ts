// Splitting a watch stream into its lines: newline-delimited JSON, one event per line
// (https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes; client-go
// reads the same stream with a json.Decoder, apimachinery pkg/util/framer). Bytes in, lines out.
//
// Each byte is scanned for '\n' once, however the line is cut into chunks: the bytes of an unfinished line
// are kept as the chunks they came in and joined once, when its newline arrives (the earlier splitter
// appended every chunk to one string and searched it from the start again, so a long line delivered in
// small chunks cost quadratic work). The bytes searched are counted in flannel_watch_bytes_scanned_total
// (docs/metrics.md): equal to the bytes received while the work stays linear. Works on bytes: '\n' (0x0A)
// never occurs inside a UTF-8 sequence, so a multi-byte character cut between chunks is decoded whole
// with its line.
//
// A line longer than `maxLineBytes` is refused with FLANNEL_ERR_KUBE_WATCH_LINE before more of it is kept:
// no object fits there (etcd refuses requests over 1.5 MiB by default; docs/bounds.md).
import { KubeWatchError } from '../basics/errors.js';
import { METRIC, type Metrics } from '../basics/metrics.js';

/** The longest watch line kept; docs/bounds.md says why this number. */
export const MAX_WATCH_LINE_BYTES = 16 * 1024 * 1024;

export interface WatchLineSplitterOptions {
  /** The longest line kept (default MAX_WATCH_LINE_BYTES). */
  maxLineBytes?: number;
  /** Where the bytes searched for a newline are counted (flannel_watch_bytes_scanned_total). */
  metrics?: Metrics;
}

/** The longest line put together in the splitter's reused buffer; a longer one gets a buffer of its own. */
const MAX_REUSED_LINE_BYTES = 64 * 1024;

export class WatchLineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private readonly maxLineBytes: number;
  /**
   * Where a line that spans chunks is put together, reused: a 10.8 KB Node line mostly spans two TLS records,
   * and a buffer of its own per line (Buffer.concat: an ArrayBuffer allocated, copied into, freed) was 7% of
   * the agent's CPU in a status storm at 50,000 Nodes (docs/performance.md, session 14). Grown up to
   * MAX_REUSED_LINE_BYTES.
   */
  private joined: Buffer | undefined;

  constructor(
    private readonly what: string,
    private readonly opts: WatchLineSplitterOptions = {},
  ) {
    this.maxLineBytes = opts.maxLineBytes ?? MAX_WATCH_LINE_BYTES;
  }

  /**
   * The complete lines (without their '\n', as UTF-8 text) that `chunk` finishes. Throws
   * FLANNEL_ERR_KUBE_WATCH_LINE when the unfinished line grows past the limit.
   */
  push(chunk: Buffer): string[] {
    return this.pushBytes(chunk).map((line) => line.toString('utf8'));
  }

  /** As push, the lines as bytes (views of `chunk` or of a buffer the splitter reuses: read them before the next push). */
  pushBytes(chunk: Buffer): Buffer[] {
    const lines: Buffer[] = [];
    let start = 0;
    let scanned = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      scanned += (nl < 0 ? chunk.length : nl + 1) - start;
      if (nl < 0) break;
      const tail = chunk.subarray(start, nl);
      this.check(this.pendingBytes + tail.length);
      lines.push(this.pending.length === 0 ? tail : this.join(tail));
      this.pending = [];
      this.pendingBytes = 0;
      start = nl + 1;
    }
    this.opts.metrics?.inc(METRIC.watchBytesScanned, {}, scanned);
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      this.check(this.pendingBytes + rest.length);
      this.pending.push(rest);
      this.pendingBytes += rest.length;
    }
    return lines;
  }

  /** The pending bytes and `tail`, as one line (only the first line of a push can span chunks). */
  private join(tail: Buffer): Buffer {
    const size = this.pendingBytes + tail.length;
    if (size > MAX_REUSED_LINE_BYTES) return Buffer.concat([...this.pending, tail], size);
    if (!this.joined || this.joined.length < size) this.joined = Buffer.allocUnsafeSlow(Math.min(MAX_REUSED_LINE_BYTES, Math.max(size, 2 * (this.joined?.length ?? 8 * 1024))));
    let at = 0;
    for (const p of this.pending) at += p.copy(this.joined, at);
    tail.copy(this.joined, at);
    return this.joined.subarray(0, size);
  }

  private check(bytes: number): void {
    if (bytes > this.maxLineBytes) {
      throw new KubeWatchError(
        'FLANNEL_ERR_KUBE_WATCH_LINE',
        `${this.what}: a watch line longer than ${this.maxLineBytes} bytes (no object is that large: etcd keeps none over 1.5 MiB); the watch round ends and the list-watch loop starts a new one after its backoff`,
        { maxLineBytes: this.maxLineBytes, kept: this.pendingBytes },
      );
    }
  }
}

// ---- Fields a list-watch never reads, dropped from the text before JSON.parse --------------------------
//
// Most of an object's JSON can be of no use to its reader: a real Node is about 10 KB, of which status and
// metadata.managedFields are nine tenths, and the kube subnet manager reads neither
// (src/subnet/kube/node-list-watch.ts NODE_EVENT_UNREAD, NODE_LIST_UNREAD). Parsing them costs most of the CPU of an update that
// changes only them, and most of the garbage. client-go's answer is a metadata-only informer
// (PartialObjectMetadata), which would lose spec; so the JSON text is cut instead: one pass over it
// (strings jumped with indexOf), and the values named, at their depth, are left out of the text
// JSON.parse sees. Anything unexpected (an unterminated string, a key written with escapes, a value of
// another type: the `status` string of an ERROR event's metav1.Status) leaves the text as it was, so the
// parse and its errors are exactly those of the full text.

/** A value left out: the key `key` of an object at nesting depth `depth` (1 = the top object), when its value opens with `open`. */
export interface DroppedField {
  depth: number;
  key: string;
  open: '{' | '[';
}

/**
 * The fields of an object (`depth` 1: the object's own keys) as they lie in a watch line
 * `{"type":..,"object":{..}}` (one level deeper) and in a list page `{..,"items":[{..},..]}` (two deeper).
 */
export function unreadFields(ofObject: readonly DroppedField[]): { event: readonly DroppedField[]; list: readonly DroppedField[] } {
  return { event: ofObject.map((f) => ({ ...f, depth: f.depth + 1 })), list: ofObject.map((f) => ({ ...f, depth: f.depth + 2 })) };
}

const QUOTE = 34;
const BACKSLASH = 92;
const COMMA = 44;
const COLON = 58;
const OPEN_OBJECT = 123;
const isOpen = (c: number) => c === OPEN_OBJECT || c === 91; // { [
const isClose = (c: number) => c === 125 || c === 93; // } ]
const isSpace = (c: number) => c === 32 || c === 10 || c === 13 || c === 9;

/** Index of the quote closing the string whose opening quote is at `open`, or -1. */
function stringEnd(b: Buffer, open: number): number {
  let from = open + 1;
  for (;;) {
    const q = b.indexOf(QUOTE, from);
    if (q < 0) return -1;
    let backslashes = 0;
    for (let k = q - 1; b[k] === BACKSLASH; k--) backslashes++;
    if ((backslashes & 1) === 0) return q;
    from = q + 1;
  }
}

/** Index of the bracket closing the container opened at `open`, or -1. */
function containerEnd(b: Buffer, open: number): number {
  let depth = 0;
  for (let i = open; i < b.length; i++) {
    const c = b[i];
    if (c === QUOTE) {
      i = stringEnd(b, i);
      if (i < 0) return -1;
    } else if (isOpen(c)) depth++;
    else if (isClose(c) && --depth === 0) return i;
  }
  return -1;
}

/** Whether the bytes of `b` from `at` are `key`'s (ASCII) characters and nothing more up to `end`. */
function isKey(b: Buffer, at: number, end: number, key: string): boolean {
  if (end - at !== key.length) return false;
  for (let k = 0; k < key.length; k++) if (b[at + k] !== key.charCodeAt(k)) return false;
  return true;
}

/** withoutFields's copy of the kept bytes, used and read within one call (a Node's kept text is about 1.3 KB). */
const SCRATCH = Buffer.allocUnsafeSlow(16 * 1024);

/**
 * The UTF-8 text of `json` without the `drop` fields (see above): JSON.parse of it equals JSON.parse of
 * the whole text with those values deleted. It works on the bytes and decodes only what it keeps (a cut
 * falls on an ASCII quote, comma or bracket, never inside a multi-byte character). The whole text,
 * decoded, when there is nothing to drop or anything is unexpected.
 */
export function withoutFields(json: Buffer | string, drop: readonly DroppedField[]): string {
  const b = typeof json === 'string' ? Buffer.from(json) : json;
  const whole = () => (typeof json === 'string' ? json : json.toString('utf8'));
  /** The kept byte ranges, as start and end pairs: copied together and decoded once, not as parts joined. */
  const kept: number[] = [];
  let from = 0;
  let depth = 0;
  /** The last structural byte outside strings ('{' or ',' before a key). */
  let prev = -1;
  for (let i = 0; i < b.length; i++) {
    const c = b[i];
    if (c === QUOTE) {
      const end = stringEnd(b, i);
      if (end < 0) return whole();
      const keyStart = i;
      const prevChar = prev < 0 ? 0 : b[prev];
      i = end;
      if (prevChar !== COMMA && prevChar !== OPEN_OBJECT) continue; // a value, not a key
      // A loop, not drop.find: its closure, made for every key of every line, was half of the cut's garbage.
      let rule: DroppedField | undefined;
      for (let r = 0; r < drop.length && !rule; r++) if (drop[r].depth === depth && isKey(b, keyStart + 1, end, drop[r].key)) rule = drop[r];
      if (!rule) continue;
      let v = end + 1;
      while (isSpace(b[v])) v++;
      if (b[v] !== COLON) continue;
      v++;
      while (isSpace(b[v])) v++;
      if (b[v] !== rule.open.charCodeAt(0)) continue;
      const valueEnd = containerEnd(b, v);
      if (valueEnd < 0) return whole();
      // `,"key":value` goes with its leading comma; a first key `"key":value,` with its trailing one.
      let cutFrom = prev;
      let cutTo = valueEnd + 1;
      if (prevChar !== COMMA) {
        cutFrom = keyStart;
        let after = cutTo;
        while (isSpace(b[after])) after++;
        if (b[after] === COMMA) cutTo = after + 1;
      }
      kept.push(from, cutFrom);
      from = cutTo;
      // `prev` stays: the container's '{' when a first key went, else the next comma or bracket updates it.
      i = cutTo - 1;
      continue;
    }
    if (isOpen(c) || isClose(c)) {
      depth += isOpen(c) ? 1 : -1;
      prev = i;
    } else if (c === COMMA || c === COLON) prev = i;
  }
  if (kept.length === 0) return whole();
  kept.push(from, b.length);
  // Decoded once: each part's text and then their join made the kept text twice, about 1 KB of a status
  // update's garbage (docs/performance.md, session 14). A watch line's kept bytes go through one scratch
  // buffer (no allocation, and no memory outside the heap per line); a list page's through a buffer of its own.
  let size = 0;
  for (let k = 0; k < kept.length; k += 2) size += kept[k + 1] - kept[k];
  const out = size <= SCRATCH.length ? SCRATCH : Buffer.allocUnsafe(size);
  let at = 0;
  for (let k = 0; k < kept.length; k += 2) at += b.copy(out, at, kept[k], kept[k + 1]);
  return out.toString('utf8', 0, size);
}

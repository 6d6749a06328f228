// Splitting a watch stream into its lines: newline-delimited JSON, one event per line
// (https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes; client-go
// reads the same stream with a json.Decoder, apimachinery pkg/util/framer). Pure: bytes in, lines out.
//
// Each byte is scanned for '\n' once, however the line is cut into chunks: the bytes of an unfinished line
// are kept as the chunks they came in and joined once, when its newline arrives (the earlier splitter
// appended every chunk to one string and searched it from the start again, so a long line delivered in
// small chunks cost quadratic work). Works on bytes: '\n' (0x0A) never occurs inside a UTF-8 sequence,
// so a multi-byte character cut between chunks is decoded whole with its line.
//
// A line longer than `maxLineBytes` is refused with FLANNEL_ERR_KUBE_WATCH_LINE before more of it is kept:
// no Node fits there (etcd refuses requests over 1.5 MiB by default; docs/bounds.md).
import { KubeWatchError } from '../../errors.js';

/** The longest watch line kept; docs/bounds.md says why this number. */
export const MAX_WATCH_LINE_BYTES = 16 * 1024 * 1024;

export class WatchLineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Bytes searched for a newline so far (each byte once: the work is linear in the stream). */
  scannedBytes = 0;

  constructor(
    private readonly what: string,
    private readonly maxLineBytes: number = MAX_WATCH_LINE_BYTES,
  ) {}

  /**
   * The complete lines (without their '\n', as UTF-8 text) that `chunk` finishes. Throws
   * FLANNEL_ERR_KUBE_WATCH_LINE when the unfinished line grows past the limit.
   */
  push(chunk: Buffer): string[] {
    const lines: string[] = [];
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      this.scannedBytes += (nl < 0 ? chunk.length : nl + 1) - start;
      if (nl < 0) break;
      const tail = chunk.subarray(start, nl);
      this.check(this.pendingBytes + tail.length);
      lines.push(this.pending.length === 0 ? tail.toString('utf8') : Buffer.concat([...this.pending, tail]).toString('utf8'));
      this.pending = [];
      this.pendingBytes = 0;
      start = nl + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      this.check(this.pendingBytes + rest.length);
      this.pending.push(rest);
      this.pendingBytes += rest.length;
    }
    return lines;
  }

  private check(bytes: number): void {
    if (bytes > this.maxLineBytes) {
      throw new KubeWatchError(
        'FLANNEL_ERR_KUBE_WATCH_LINE',
        `${this.what}: a watch line longer than ${this.maxLineBytes} bytes (no Node is that large); the watch round ends and the list-watch loop starts a new one after its backoff`,
        { maxLineBytes: this.maxLineBytes, kept: this.pendingBytes },
      );
    }
  }
}

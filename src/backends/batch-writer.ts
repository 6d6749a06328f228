// Bounded batches of dataplane writes, split when the dataplane refuses part of one. An HcnModifyNetwork
// carrying many policies is atomic (hcsshim hcn/hcnnetwork.go modifyNetwork: one request, one HRESULT),
// so one policy HNS refuses (HCN_E_ADDR_INVALID_OR_RESERVED, HCN_E_INVALID_POLICY, ...) sinks the
// others with it. A refused batch is halved until the refused items stand alone; everything else lands.
// A failure that is not a refusal (HNS down, a timeout, the network gone) stops the writes instead:
// splitting would only multiply failing calls.

export interface Refusal<T> {
  item: T;
  error: unknown;
}

export interface BatchResult<T, R> {
  /** Items written, in write order. */
  done: T[];
  /** What each successful write returned, in the same order as the writes. */
  returned: R[];
  /** Items the dataplane refused, one by one. */
  refused: Refusal<T>[];
  /** The first failure that was not a refusal; the items after it were not attempted. */
  failure?: unknown;
  /** Items not attempted because of `failure`. */
  skipped: T[];
  /** Write calls made. */
  calls: number;
}

export interface BatchOptions<T, R> {
  /** Items per write (>= 1). */
  size: number;
  /** Writes in flight at once (>= 1). */
  concurrency: number;
  write: (items: T[]) => Promise<R>;
  /** True when `error` refuses the items of this write rather than failing the call as a whole. */
  refuses: (error: unknown) => boolean;
}

/** Write `items` in batches of `size`; halve refused batches down to single refused items. */
export async function writeInBatches<T, R>(items: readonly T[], opts: BatchOptions<T, R>): Promise<BatchResult<T, R>> {
  const size = Math.max(1, Math.floor(opts.size));
  const result: BatchResult<T, R> = { done: [], returned: [], refused: [], skipped: [], calls: 0 };
  const queue: T[][] = [];
  for (let i = 0; i < items.length; i += size) queue.push(items.slice(i, i + size));

  const attempt = async (part: T[]): Promise<void> => {
    if (result.failure !== undefined) {
      result.skipped.push(...part);
      return;
    }
    result.calls++;
    try {
      const r = await opts.write(part);
      result.done.push(...part);
      result.returned.push(r);
    } catch (error) {
      if (!opts.refuses(error)) {
        result.failure ??= error;
        result.skipped.push(...part);
        return;
      }
      if (part.length === 1) {
        result.refused.push({ item: part[0]!, error });
        return;
      }
      const half = Math.ceil(part.length / 2);
      await attempt(part.slice(0, half));
      await attempt(part.slice(half));
    }
  };

  const worker = async (): Promise<void> => {
    for (let part = queue.shift(); part; part = queue.shift()) await attempt(part);
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(Math.floor(opts.concurrency), queue.length)) }, worker));
  return result;
}

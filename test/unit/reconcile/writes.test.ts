// writeInBatches: an atomic batch write that HNS refuses for one item is split until only the refused
// items are left out (hcsshim hcn/hcnnetwork.go: one HcnModifyNetwork request, one HRESULT for all).
import { describe, expect, it } from '@jest/globals';
import { writeInBatches } from '../../../src/reconcile/writes.js';

class Refused extends Error {}

/** A fake atomic write: fails as a whole when any item is refused, or when `down` says so. */
function fakeWriter(refused: Set<number>, down: (call: number) => boolean = () => false) {
  const calls: number[][] = [];
  const landed: number[] = [];
  const write = async (items: number[]) => {
    calls.push(items);
    if (down(calls.length)) throw new Error('HNS is down');
    if (items.some((i) => refused.has(i))) throw new Refused('refused');
    landed.push(...items);
    return items.length;
  };
  return { calls, landed, write };
}

const items = (n: number) => Array.from({ length: n }, (_, i) => i);

describe('writeInBatches', () => {
  const cases: [string, number, number, number[], { refused: number[]; calls: number }][] = [
    ['nothing refused: one call per batch', 10, 4, [], { refused: [], calls: 3 }],
    ['one refused in one batch of 8: halves down to it', 8, 8, [5], { refused: [5], calls: 1 + 2 + 2 + 2 }],
    ['one refused in a batch of 200: two calls per halving (200 100 50 25 13 6 3 -> 1)', 200, 200, [137], { refused: [137], calls: 1 + 2 * 7 }],
    ['two refused in different batches', 8, 4, [1, 6], { refused: [1, 6], calls: 2 + 4 + 4 }],
    ['all refused: each ends alone', 4, 4, [0, 1, 2, 3], { refused: [0, 1, 2, 3], calls: 1 + 2 + 4 }],
    ['batch of 1: no splitting', 3, 1, [1], { refused: [1], calls: 3 }],
  ];
  it.each(cases)('%s', async (_name, n, size, refusedIds, want) => {
    const w = fakeWriter(new Set(refusedIds));
    const r = await writeInBatches(items(n), { size, concurrency: 1, write: w.write, refuses: (e) => e instanceof Refused });
    expect(r.refused.map((x) => x.item).sort((a, b) => a - b)).toEqual(want.refused);
    expect(r.refused.every((x) => x.error instanceof Refused)).toBe(true);
    expect(r.calls).toBe(want.calls);
    expect(w.calls.length).toBe(want.calls);
    expect([...r.done].sort((a, b) => a - b)).toEqual(items(n).filter((i) => !refusedIds.includes(i)));
    expect(w.landed.sort((a, b) => a - b)).toEqual(r.done.sort((a, b) => a - b));
    expect(r.failure).toBeUndefined();
  });

  it('a failure that is not a refusal stops the writes: no splitting, the rest is skipped', async () => {
    const w = fakeWriter(new Set(), (call) => call === 2);
    const r = await writeInBatches(items(10), { size: 3, concurrency: 1, write: w.write, refuses: (e) => e instanceof Refused });
    expect(w.calls).toEqual([
      [0, 1, 2],
      [3, 4, 5],
    ]);
    expect(r.done).toEqual([0, 1, 2]);
    expect(r.refused).toEqual([]);
    expect((r.failure as Error).message).toBe('HNS is down');
  });

  it('a failure while splitting a refused batch also stops it', async () => {
    const w = fakeWriter(new Set([0]), (call) => call === 3);
    const r = await writeInBatches(items(4), { size: 4, concurrency: 1, write: w.write, refuses: (e) => e instanceof Refused });
    // [0..3] refused -> [0,1] refused -> [0] fails as a whole (HNS down) -> [1], [2,3] not attempted.
    expect(w.calls).toEqual([[0, 1, 2, 3], [0, 1], [0]]);
    expect(r.done).toEqual([]);
    expect(r.failure).toBeDefined();
  });

  it('runs up to `concurrency` writes at once', async () => {
    let inFlight = 0;
    let peak = 0;
    // Each write waits until no further write starts in the same turn (a macrotask later), so every write
    // the writer starts at once is in flight together.
    const write = async (xs: number[]) => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await new Promise((r) => setImmediate(r));
      inFlight--;
      return xs.length;
    };
    const r = await writeInBatches(items(20), { size: 1, concurrency: 8, write, refuses: () => false });
    expect(peak).toBe(8);
    expect(r.done.length).toBe(20);
  });

  it('writes nothing for no items', async () => {
    const w = fakeWriter(new Set());
    expect(await writeInBatches([], { size: 5, concurrency: 3, write: w.write, refuses: () => true })).toMatchObject({ done: [], calls: 0 });
    expect(w.calls).toEqual([]);
  });
});

describe('writeInBatches: a removal naming an item already gone', () => {
  it('is split like a refusal, the lone gone item counts as done, and every call made is counted', async () => {
    // HCN_E_POLICY_NOT_FOUND for one policy of a Remove fails the whole (atomic) request; the writes split
    // it, and the HNS client answers a lone policy already gone as removed (src/hns/client.ts).
    class Gone extends Error {}
    const gone = new Set([2]);
    const calls: number[][] = [];
    const write = async (part: number[]) => {
      calls.push(part);
      if (part.length > 1 && part.some((i) => gone.has(i))) throw new Gone('policy not found');
      if (part.length === 1 && gone.has(part[0])) throw new Gone('policy not found');
    };
    const isGone = (e: unknown) => e instanceof Gone;
    const r = await writeInBatches(items(4), { size: 4, concurrency: 1, write, refuses: isGone, absent: isGone });
    expect(r.refused).toEqual([]);
    expect([...r.done].sort()).toEqual([0, 1, 2, 3]);
    expect(r.calls).toBe(calls.length);
    expect(calls).toEqual([[0, 1, 2, 3], [0, 1], [2, 3], [2], [3]]);
  });
});

describe('writeInBatches: items in groups (one HcnModifyEndpoint carries the policies of one endpoint)', () => {
  it('never mixes two groups in a write, writes the groups in the order of their keys, and splits a refused one within its group', async () => {
    const w = fakeWriter(new Set([7]));
    // Group 'b' (odd) before group 'a' (even) in the input; the keys order them a, then b.
    const groupOf = (i: number) => (i % 2 === 0 ? 'a' : 'b');
    const r = await writeInBatches([1, 2, 3, 4, 7, 6], { size: 10, concurrency: 1, write: w.write, refuses: (e) => e instanceof Refused, groupOf });
    expect(w.calls).toEqual([[2, 4, 6], [1, 3, 7], [1, 3], [7]]);
    expect(r.refused.map((x) => x.item)).toEqual([7]);
    expect(r.calls).toBe(4);
  });
});

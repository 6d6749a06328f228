// The heap the live objects hold, for tests that bound what the agent keeps in bytes rather than in
// records (docs/bounds.md).
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Full GCs (V8's `gc`, exposed for the caller's context), then the heap in use: what the objects alive hold. */
export function heapAfterGc(): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/**
 * Two scavenges (V8's minor GC), then the bytes old space holds, live or dead: what promotion and
 * allocation in old space added since the last mark-compact, which only a mark-compact takes back.
 */
export function oldSpaceAfterScavenges(): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as (options: { type: 'minor' }) => void;
  gc({ type: 'minor' });
  gc({ type: 'minor' });
  return getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')?.space_used_size ?? 0;
}

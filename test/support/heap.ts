// The heap the live objects hold, for tests that bound what the agent keeps in bytes rather than in
// records (docs/bounds.md).
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Full GCs (V8's `gc`, exposed for the caller's context), then the heap in use: what the objects alive hold. */
export function heapAfterGc(): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

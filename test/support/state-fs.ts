// The simulated node's disk and clock under the test's control: make the state directory read-only or
// full, hold a dataplane call (a stall) until the test wakes it, see every state document written, and
// "kill" the process (its pending calls never land and nothing more reaches its state file). Handed to
// an in-process agent's SimulatedDataplane by TestCluster.startAgent({ state }).
import * as nodeFs from 'node:fs';
import type { Clock } from '../../src/basics/clock.js';
import type { DataplaneFs } from '../../src/simulator/model.js';

/** A stall that lasts until the test calls `StateFs.wake()` (the test's own deadline ends it first). */
export const HELD = 10 * 60_000;

export type FsMode = 'ok' | 'erofs' | 'enospc';

/** The parts of the dataplane state file a kill switch looks at. */
export interface DiskState {
  networks: { Policies?: { Type: string }[] }[];
  routes: { DestinationPrefix: string }[];
}

function errno(code: 'EROFS' | 'ENOSPC', syscall: string, path: string): NodeJS.ErrnoException {
  const text = code === 'EROFS' ? 'read-only file system' : 'no space left on device';
  const e = new Error(`${code}: ${text}, ${syscall} '${path}'`) as NodeJS.ErrnoException;
  e.code = code;
  e.syscall = syscall;
  e.path = path;
  return e;
}

/** node:fs for the dataplane state file, with a switch to make its directory read-only or full, and a kill switch. */
export class StateFs {
  mode: FsMode = 'ok';
  /** After kill(): writes are dropped (the process is gone; nothing more reaches the disk). */
  dead = false;
  writes = 0;
  /** Called with each state document about to be written; return true to kill right after this write lands. */
  killAfter: ((state: DiskState) => boolean) | undefined;
  /** Called with each state document written (to see a transient state, e.g. a late call landing). */
  onWrite: ((state: DiskState) => void) | undefined;
  /** The pending sleeps of the model (latency, stalls): each can be killed (reject) or woken (resolve). */
  private readonly pending = new Set<{ wake: () => void; kill: () => void }>();

  readonly fs: DataplaneFs = {
    readFileSync: (f, enc) => nodeFs.readFileSync(f, enc),
    mkdirSync: (d, o) => (this.dead ? undefined : nodeFs.mkdirSync(d, o)),
    writeFileSync: (f, data) => {
      if (this.dead) return;
      if (this.mode === 'erofs') throw errno('EROFS', 'open', f);
      if (this.mode === 'enospc') {
        nodeFs.writeFileSync(f, data.slice(0, Math.floor(data.length / 2))); // a torn temp file
        throw errno('ENOSPC', 'write', f);
      }
      nodeFs.writeFileSync(f, data);
    },
    unlinkSync: (f) => {
      if (this.dead) return;
      if (this.mode === 'erofs') throw errno('EROFS', 'unlink', f);
      nodeFs.unlinkSync(f); // a full disk still lets a file go
    },
    renameSync: (a, b) => {
      if (this.dead) return;
      if (this.mode === 'erofs') throw errno('EROFS', 'rename', b);
      nodeFs.renameSync(a, b);
      this.writes++;
      if (!this.killAfter && !this.onWrite) return;
      const state = JSON.parse(nodeFs.readFileSync(b, 'utf8')) as DiskState;
      this.onWrite?.(state);
      if (this.killAfter?.(state)) this.kill();
    },
  };

  /**
   * A clock for the dataplane's latency and stalls: a killed process's pending calls never complete, and
   * `wake()` ends a stall when the test says (a stall of HELD ms lasts until then).
   */
  readonly clock: Clock = {
    now: () => Date.now(),
    after: (ms, fn) => {
      if (this.dead) return () => undefined; // a killed process's timers never fire
      const entry = {
        wake: () => {
          cancel();
          fn();
        },
        kill: () => cancel(),
      };
      const cancel = () => {
        clearTimeout(t);
        this.pending.delete(entry);
      };
      const t = setTimeout(entry.wake, ms);
      t.unref();
      this.pending.add(entry);
      return cancel;
    },
    sleep: (ms) =>
      new Promise<void>((resolve, reject) => {
        if (this.dead) return reject(new Error('process killed'));
        const entry = {
          wake: () => {
            clearTimeout(t);
            this.pending.delete(entry);
            resolve();
          },
          kill: () => {
            clearTimeout(t);
            this.pending.delete(entry);
            reject(new Error('process killed'));
          },
        };
        const t = setTimeout(entry.wake, ms);
        t.unref();
        this.pending.add(entry);
      }),
  };

  /** Stalls (and latency sleeps) not over yet: a hung call that has not landed. */
  get sleeping(): number {
    return this.pending.size;
  }

  /** End every pending stall now: the hung calls land. */
  wake(): void {
    for (const e of [...this.pending]) e.wake();
  }

  kill(): void {
    if (this.dead) return;
    this.dead = true;
    for (const e of [...this.pending]) e.kill();
  }
}

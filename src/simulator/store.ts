// The simulated node's state file as shared truth. On Windows HNS is one service that every process on
// the node talks to (kube-proxy, the CNI plugins, an admin's Remove-HnsNetwork), so the simulated node is
// one file that several processes share:
//  * before each call the model re-reads the file when another process changed it (inode, size, mtime);
//  * every change is a locked read-modify-write: `FILE.lock` is created exclusively (O_EXCL) and holds
//    `{"pid","at"}`; a lock whose process is gone, or older than LOCK_STALE_MS, is broken; the document is
//    re-read under the lock, changed, written atomically (temp + rename), then the lock is removed;
//  * a lock's age is the larger of `now - at` and how long this process has seen that same lock, so one
//    stamped in the future (clock skew, a hand-written file) is still broken after LOCK_STALE_MS;
//  * the agent waits for another process's lock asynchronously (`waitUnlocked`, before each seam call),
//    so its event loop (health server, watches, SIGTERM) keeps running, and the wait ends when the agent
//    stops (its signal aborts the sleep); the synchronous acquire then only meets a lock taken in the
//    instant between, which is held for milliseconds. Creating a missing file in the constructor, which
//    cannot wait asynchronously, is skipped while another process holds the lock: the first change
//    creates it after its seam call waited.
// So no update is lost, and `flanneld cleanup` against a running agent's file acts as it would on Windows.
// In memory (no file) a call changes the document through the keyed view (./keyed.ts) and costs O(1) per
// item it touches; with a file every change also serializes and writes the whole document (the price of
// sharing it).
import * as nodeFs from 'node:fs';
import { dirname } from 'node:path';
import { writeFileAtomicSync } from '../basics/fs.js';
import { DataplaneStateError, errorMessage, FlannelError } from '../basics/errors.js';
import { readRegularFile } from '../basics/fs.js';
import { processAlive } from '../host/agent-lock.js';
import { KeyedState } from './keyed.js';
import { deleteNetwork } from './objects.js';
import { serializeState, type DataplaneState } from './state.js';
import { parseDataplaneState } from './state-file.js';

/** The file-system calls the dataplane makes (node:fs by default). */
export interface DataplaneFs {
  readFileSync(file: string, encoding: 'utf8'): string;
  writeFileSync(file: string, data: string): void;
  renameSync(from: string, to: string): void;
  mkdirSync(dir: string, options: { recursive: true }): unknown;
  /** Removes the temporary file of a failed write (src/basics/fs.ts writeFileAtomicSync). */
  unlinkSync?(file: string): void;
  /** Used to notice another process's write cheaply; without it the file is read before each call. */
  statSync?(file: string): { ino: number; size: number; mtimeMs: number };
}

/** The most of the state file that is read (about 100,000 endpoints; docs/errors.md FLANNEL_ERR_INPUT_FILE). */
const MAX_STATE_FILE_BYTES = 64 * 1024 * 1024;

/** node:fs, the state file read as a regular file under MAX_STATE_FILE_BYTES (a FIFO or a device is refused). */
const hostFs: DataplaneFs = {
  readFileSync: (file) => readRegularFile(file, MAX_STATE_FILE_BYTES, '--dataplane-state'),
  writeFileSync: (file, data) => nodeFs.writeFileSync(file, data),
  renameSync: (from, to) => nodeFs.renameSync(from, to),
  mkdirSync: (dir, options) => nodeFs.mkdirSync(dir, options),
  unlinkSync: (file) => nodeFs.unlinkSync(file),
  statSync: (file) => nodeFs.statSync(file),
};

/** The most of the lock file read (it holds `{"pid":…,"at":…}`); a FIFO there is refused, not waited on. */
const MAX_LOCK_FILE_BYTES = 4096;

/** How long a writer waits for another one's lock before failing the call. */
export const LOCK_WAIT_MS = 10_000;
/** A lock older than this is broken even if its process still runs (a lock is held for milliseconds). */
export const LOCK_STALE_MS = 30_000;
const LOCK_SPIN_MS = 2;
/** How often `waitUnlocked` looks at the lock again. */
const LOCK_POLL_MS = 5;

export interface StateStoreOptions {
  file: string | undefined;
  fs?: DataplaneFs;
  /** Take `FILE.lock` around writes (default: when `fs` is node:fs; an injected fs is one process's). */
  lock?: boolean;
  /** Wall clock for lock ages (ms). */
  now: () => number;
  /** The document of a node that has no file yet. */
  fresh: () => DataplaneState;
}

/** Block the thread for `ms` (the lock is taken inside synchronous model calls). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

export class StateStore {
  /** The document; arrays the keyed view changed are written back by `flush` (the `state` getter). */
  private doc: DataplaneState;
  /** The keyed view of `doc`, built when a call needs it, dropped when `doc` changes behind it. */
  private view: KeyedState | undefined;
  private readonly file: string | undefined;
  private readonly fs: DataplaneFs;
  private readonly locking: boolean;
  private readonly now: () => number;
  /** The text the file held when last read or written (a failed change rolls back to it). */
  private persisted: string | undefined;
  private statKey: string | undefined;
  private lockDepth = 0;
  /** The lock file content last seen held by another, and since when (this process's clock). */
  private sighting: { text: string; since: number } | undefined;

  constructor(opts: StateStoreOptions) {
    this.file = opts.file;
    this.fs = opts.fs ?? hostFs;
    this.locking = opts.lock ?? opts.fs === undefined;
    this.now = opts.now;
    this.doc = opts.fresh();
    // An existing file is read without the lock (writes are atomic renames); only creating one locks,
    // and only when the lock is free now (no thread-blocking wait here).
    if (!this.file || this.reload()) return;
    this.withLock(
      () => {
        if (!this.reload()) this.write(serializeState(this.doc));
      },
      { wait: false },
    );
  }

  /** The model's current document, every array current. Callers mutate it only inside `update`. */
  get state(): DataplaneState {
    this.view?.flush();
    return this.doc;
  }

  /**
   * The document as it is, without writing the keyed view's changes back: for what the view does not
   * keep (the `faults` rules, `policyBatches`, the adapters).
   */
  peek(): DataplaneState {
    return this.doc;
  }

  private replace(doc: DataplaneState): void {
    this.doc = doc;
    this.view = undefined;
  }

  /** Re-read the file if another process changed it since this model last read or wrote it. */
  refresh(): void {
    if (!this.file) return;
    const key = this.currentStatKey();
    if (key !== undefined && key === this.statKey) return;
    if (!this.reload() && this.persisted !== undefined) this.lost();
  }

  /**
   * The state file this model wrote is gone (deleted under the agent): the node's HNS state is lost, as
   * when HNS restarts without its persisted networks, so every network goes with its endpoints and
   * vSwitch (the agent finds its network gone and rebuilds it); the next write creates the file anew.
   */
  private lost(): void {
    const doc = this.state;
    for (const net of [...doc.networks]) deleteNetwork(doc, 'state file deleted', net.ID!);
    this.view = undefined;
    this.persisted = undefined;
    this.statKey = undefined;
  }

  /**
   * A locked read-modify-write of the whole document: `fn` may change anything in `state`; the file is
   * written when the document changed. The keyed view is dropped (rebuilt in one pass by the next
   * `change`): for what is rare (a network created or deleted) and for edits made behind the model's back.
   */
  update<T>(fn: (state: DataplaneState) => T): T {
    return this.locked(() => {
      const doc = this.state;
      this.view = undefined;
      return fn(doc);
    });
  }

  /** A look through the keyed view (re-read first when another process changed the file); `fn` changes nothing. */
  read<T>(fn: (view: KeyedState) => T): T {
    this.refresh();
    return fn((this.view ??= new KeyedState(this.doc)));
  }

  /** A locked read-modify-write through the keyed view: `fn` changes the document only through `view`. */
  change<T>(fn: (view: KeyedState) => T): T {
    return this.locked(() => fn((this.view ??= new KeyedState(this.doc))));
  }

  private locked<T>(fn: () => T): T {
    if (!this.file) return fn();
    return this.withLock(() => {
      this.refresh();
      let result: T;
      try {
        result = fn();
      } catch (err) {
        this.rollback();
        throw err;
      }
      const text = serializeState(this.state);
      if (text !== this.persisted) this.write(text);
      return result;
    });
  }

  private rollback(): void {
    if (this.persisted !== undefined) this.replace(parseDataplaneState(this.persisted, this.file!));
  }

  /** Load the file into `state`; false when it does not exist (the model keeps what it has). */
  private reload(): boolean {
    const file = this.file!;
    // The stat is taken before the read: a writer renaming its file in between then leaves a key that
    // no longer matches (one extra re-read later), never a new key recorded beside the old text (which
    // would hide that writer's change from refresh and lose the next update's base). The constructor
    // reads without the lock, so that interleaving happens.
    const key = this.currentStatKey();
    let text: string;
    try {
      text = this.fs.readFileSync(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      if (err instanceof FlannelError) throw err;
      throw new DataplaneStateError(
        'FLANNEL_ERR_DATAPLANE_STATE',
        `cannot read the simulated dataplane state file ${file}: ${errorMessage(err)}; fix its permissions or pass another --dataplane-state`,
        { file },
        { cause: err },
      );
    }
    this.statKey = key;
    if (text === this.persisted) return true;
    this.replace(parseDataplaneState(text, file));
    this.persisted = text;
    return true;
  }

  private currentStatKey(): string | undefined {
    if (!this.fs.statSync) return undefined;
    try {
      const st = this.fs.statSync(this.file!);
      return `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      return undefined;
    }
  }

  private write(text: string): void {
    const file = this.file!;
    try {
      writeFileAtomicSync(file, text, this.fs);
      this.persisted = text;
      this.statKey = this.currentStatKey();
    } catch (err) {
      // The call fails as a whole: the model goes back to what its file holds (what a restart would see).
      this.rollback();
      throw new DataplaneStateError(
        'FLANNEL_ERR_DATAPLANE_STATE',
        `cannot write the simulated dataplane state file ${file}: ${errorMessage(err)}; check the directory is writable`,
        { file },
        { cause: err },
      );
    }
  }

  /**
   * Wait, without blocking the event loop, until no other process holds the lock (breaking a stale one).
   * DataplaneStateError after LOCK_WAIT_MS, like the synchronous acquire; `sleep`'s rejection (the agent
   * stopping: its signal aborts the sleep) ends the wait with that error.
   */
  async waitUnlocked(sleep: (ms: number) => Promise<void>): Promise<void> {
    if (!this.file || !this.locking || this.lockDepth > 0) return;
    const lockFile = `${this.file}.lock`;
    const deadline = this.now() + LOCK_WAIT_MS;
    for (;;) {
      const holder = this.lockHolder(lockFile);
      if (holder.free) return;
      if (holder.stale) {
        this.breakLock(lockFile);
        continue;
      }
      // A lock this process has watched for a while (e.g. stamped in the future) becomes stale after
      // LOCK_STALE_MS of it: wait for that when it is later than LOCK_WAIT_MS, rather than fail first. An
      // unreadable lock (no sighting, e.g. a FIFO) fails after LOCK_WAIT_MS.
      const until = holder.seenFor === undefined ? deadline : Math.max(deadline, this.now() - holder.seenFor + LOCK_STALE_MS);
      if (this.now() > until) throw this.lockedError(lockFile, holder.pid);
      await sleep(LOCK_POLL_MS);
    }
  }

  private lockedError(lockFile: string, pid: number | undefined): DataplaneStateError {
    return new DataplaneStateError(
      'FLANNEL_ERR_DATAPLANE_STATE',
      `the simulated dataplane state file is locked by process ${pid ?? '?'} (${lockFile}); remove the lock file if that process is gone`,
      {
        file: lockFile,
        pid,
      },
    );
  }

  /** Run `fn` holding the lock; with `wait: false`, skip `fn` (undefined) when another process holds it. */
  private withLock<T>(fn: () => T): T;
  private withLock<T>(fn: () => T, opts: { wait: false }): T | undefined;
  private withLock<T>(fn: () => T, opts: { wait: boolean } = { wait: true }): T | undefined {
    if (!this.locking || this.lockDepth > 0) return fn();
    const lockFile = `${this.file!}.lock`;
    if (!this.acquire(lockFile, opts.wait)) return undefined;
    this.lockDepth++;
    try {
      return fn();
    } finally {
      this.lockDepth--;
      try {
        nodeFs.unlinkSync(lockFile);
      } catch {
        // already broken by another process as stale: nothing to release
      }
    }
  }

  /** Take the lock (true), breaking a stale one; false when another process holds it and `wait` is false. */
  private acquire(lockFile: string, wait: boolean): boolean {
    const deadline = this.now() + LOCK_WAIT_MS;
    nodeFs.mkdirSync(dirname(lockFile), { recursive: true });
    for (;;) {
      try {
        nodeFs.writeFileSync(lockFile, JSON.stringify({ pid: process.pid, at: this.now() }), { flag: 'wx' });
        return true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') {
          throw new DataplaneStateError(
            'FLANNEL_ERR_DATAPLANE_STATE',
            `cannot create the lock ${lockFile}: ${errorMessage(err)}; check the directory is writable`,
            { file: lockFile },
            { cause: err },
          );
        }
      }
      const holder = this.lockHolder(lockFile);
      if (holder.stale) {
        this.breakLock(lockFile);
        continue;
      }
      if (!wait) return false;
      if (this.now() > deadline) throw this.lockedError(lockFile, holder.pid);
      sleepSync(LOCK_SPIN_MS);
    }
  }

  /**
   * Who holds the lock, and whether it is stale: its process is gone, or it is older than LOCK_STALE_MS
   * by its stamp or by how long this process has seen it (a stamp in the future). `free`: no lock file.
   */
  private lockHolder(lockFile: string): { pid?: number; stale: boolean; free?: true; seenFor?: number } {
    let text: string;
    try {
      text = readRegularFile(lockFile, MAX_LOCK_FILE_BYTES, 'the --dataplane-state lock file');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { stale: false, free: true };
      return { stale: false }; // unreadable right now: try again
    }
    if (this.sighting?.text !== text) this.sighting = { text, since: this.now() };
    const seenFor = this.now() - this.sighting.since;
    let rec: { pid?: unknown; at?: unknown } = {};
    try {
      rec = JSON.parse(text) as typeof rec;
    } catch {
      // being written right now, or garbage: judged by age below
    }
    const pid = typeof rec.pid === 'number' ? rec.pid : undefined;
    let at = typeof rec.at === 'number' ? rec.at : undefined;
    if (at === undefined) {
      try {
        at = nodeFs.statSync(lockFile).mtimeMs;
      } catch {
        return { pid, stale: false, seenFor };
      }
    }
    const dead = pid !== undefined && pid !== process.pid && !processAlive(pid);
    return { pid, stale: dead || Math.max(this.now() - at, seenFor) > LOCK_STALE_MS, seenFor };
  }

  /** Remove a stale lock: renamed away first, so of several processes breaking it only one succeeds. */
  private breakLock(lockFile: string): void {
    const aside = `${lockFile}.stale-${process.pid}`;
    try {
      nodeFs.renameSync(lockFile, aside);
      nodeFs.unlinkSync(aside);
    } catch {
      // another process broke it first
    }
  }
}

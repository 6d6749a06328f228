// One agent per node: an exclusive lock file beside subnet.env (`C:\run\flannel\flanneld.lock`) holding
// the agent's PID. Two agents on one node would fight over the same HNS network, routes and subnet.env.
// The lock is created atomically with its content (temp file + link, which fails if the lock exists),
// so no reader ever sees an empty lock. A lock is stale, and taken over, when its PID is not running,
// when it was written in an earlier boot (PIDs are reused after a reboot; see ./boot.ts), when it holds
// this process's own PID (an earlier agent in this process), or when it cannot be read as a lock.
// `flanneld cleanup` reads it to refuse running beside a live agent.
import * as nodeFs from 'node:fs';
import { dirname, join } from 'node:path';
import { systemClock } from '../clock.js';
import { errorMessage, HostError } from '../errors.js';
import { BOOT_TIME_TOLERANCE_MS, systemBootTimeMs } from './boot.js';

export const AGENT_LOCK_FILE = 'flanneld.lock';

/** The file-system calls the lock makes (node:fs by default; tests inject their own). */
export interface LockFs {
  readFileSync(path: string, encoding: 'utf8'): string;
  writeFileSync(path: string, data: string): void;
  linkSync(existing: string, path: string): void;
  unlinkSync(path: string): void;
  mkdirSync(path: string, opts: { recursive: true }): unknown;
}

export interface AgentLockDeps {
  fs?: LockFs;
  /** This process's PID (default process.pid). */
  pid?: number;
  /** Is a process with this PID running? Default: process.kill(pid, 0) (OpenProcess on Windows). */
  isAlive?: (pid: number) => boolean;
  /** The host's boot time in ms (default now - uptime). */
  bootTimeMs?: () => number;
  /** Wall clock for `startedAt` (default the system clock). */
  now?: () => number;
}

/** What the lock file holds. */
export interface LockHolder {
  pid: number;
  bootTimeMs: number;
  startedAt: string;
}

export interface AgentLock {
  readonly path: string;
  /** Remove the lock if it is still ours. Idempotent. */
  release(): void;
}

/** `C:\run\flannel\subnet.env` -> `C:\run\flannel\flanneld.lock`. */
export function agentLockPath(subnetFile: string): string {
  return join(dirname(subnetFile), AGENT_LOCK_FILE);
}

/** Is a process with this PID running (on Windows node maps signal 0 to OpenProcess)? */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function parseHolder(text: string): LockHolder | undefined {
  try {
    const o = JSON.parse(text) as Partial<LockHolder>;
    if (!Number.isSafeInteger(o.pid) || (o.pid as number) <= 0 || typeof o.bootTimeMs !== 'number') return undefined;
    return { pid: o.pid as number, bootTimeMs: o.bootTimeMs, startedAt: String(o.startedAt ?? '') };
  } catch {
    return undefined;
  }
}

function lockError(message: string, path: string, err?: unknown): HostError {
  return new HostError('FLANNEL_ERR_AGENT_LOCK', message, { path }, err === undefined ? undefined : { cause: err });
}

/** The live agent holding the lock at `path`, or undefined when there is none (no file, or a stale one). */
export function readLockHolder(path: string, deps: AgentLockDeps = {}): LockHolder | undefined {
  const fs = deps.fs ?? nodeFs;
  let text: string;
  try {
    text = fs.readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw lockError(`cannot read the agent lock ${path}: ${errorMessage(err)}`, path, err);
  }
  const holder = parseHolder(text);
  if (!holder) return undefined;
  const boot = (deps.bootTimeMs ?? systemBootTimeMs)();
  if (Math.abs(holder.bootTimeMs - boot) > BOOT_TIME_TOLERANCE_MS) return undefined;
  if (holder.pid === (deps.pid ?? process.pid)) return undefined;
  return (deps.isAlive ?? processAlive)(holder.pid) ? holder : undefined;
}

/**
 * Take the node's agent lock at `path`, taking over a stale one. Throws FLANNEL_ERR_AGENT_LOCK naming
 * the holder's PID when another agent is running.
 */
export function acquireAgentLock(path: string, deps: AgentLockDeps = {}): AgentLock {
  const fs = deps.fs ?? nodeFs;
  const pid = deps.pid ?? process.pid;
  const me: LockHolder = { pid, bootTimeMs: (deps.bootTimeMs ?? systemBootTimeMs)(), startedAt: new Date(deps.now ? deps.now() : systemClock.now()).toISOString() };
  const text = JSON.stringify(me) + '\n';
  const tmp = `${path}.tmp-${pid}`;
  try {
    fs.mkdirSync(dirname(path), { recursive: true });
    fs.writeFileSync(tmp, text);
  } catch (err) {
    throw lockError(`cannot write the agent lock ${path}: ${errorMessage(err)}; check that the directory of --subnet-file is writable`, path, err);
  }
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        fs.linkSync(tmp, path);
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 3) {
          throw lockError(`cannot create the agent lock ${path}: ${errorMessage(err)}`, path, err);
        }
      }
      const holder = readLockHolder(path, deps);
      if (holder) {
        throw new HostError(
          'FLANNEL_ERR_AGENT_LOCK',
          `another flanneld (PID ${holder.pid}, started ${holder.startedAt}) is running for this node and holds ${path}; stop it first (one agent per node)`,
          { path, pid: holder.pid },
        );
      }
      try {
        fs.unlinkSync(path); // stale: take it over
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw lockError(`cannot remove the stale agent lock ${path}: ${errorMessage(err)}`, path, err);
      }
    }
  } finally {
    try {
      fs.unlinkSync(tmp);
    } catch {
      // already gone
    }
  }
  let released = false;
  return {
    path,
    release() {
      if (released) return;
      released = true;
      try {
        if (fs.readFileSync(path, 'utf8') === text) fs.unlinkSync(path);
      } catch {
        // gone already, or unreadable: leave it (a later start sees it as stale)
      }
    },
  };
}

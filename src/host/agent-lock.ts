// One agent per node: an exclusive lock file beside subnet.env (`C:\run\flannel\flanneld.lock`) holding
// the agent's PID. Two agents on one node would fight over the same HNS network, routes and subnet.env.
// The lock is created atomically with its content (temp file + link, which fails if the lock exists),
// so no reader ever sees an empty lock. A lock is stale, and taken over, when its PID is not running,
// when it was written in an earlier boot (PIDs are reused after a reboot; see ./boot.ts), when it holds
// this process's own PID (an earlier agent in this process), or when it cannot be read as a lock.
// A bare PID is not proof: Windows hands a dead process's PID to the next one quickly, and a crashed
// agent's PID held by another live program would block the agent (and cleanup) for as long as that
// program lives, while the SCM gives up after its restarts. So the lock also records the holder's image
// name and its process start time, and a live PID whose process has another image, or started at
// another time, is not the holder: stale. A lock without an image (an older agent's, which recorded only
// its PID and boot time) is held only by a process of an image an agent runs as (AGENT_IMAGES, or this
// process's own). What is known of a PID comes from the OS (processInfo: on Windows `tasklist` for the
// image; on Linux /proc/<pid>/exe for the image and /proc/<pid>/stat for the start); what is not known is
// not held against the holder.
// `flanneld cleanup` reads it to refuse running beside a live agent.
import { execFileSync } from 'node:child_process';
import * as nodeFs from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { systemClock } from '../basics/clock.js';
import { errorMessage, HostError } from '../basics/errors.js';
import { BOOT_TIME_TOLERANCE_MS, systemBootTimeMs } from './boot.js';

const AGENT_LOCK_FILE = 'flanneld.lock';

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
  /** What the OS says of a running PID: its image name and start time (default processInfo). */
  processInfo?: (pid: number) => ProcessInfo | undefined;
  /** This process's image name and start time (default basename(process.execPath), now - uptime). */
  self?: { image: string; startMs: number };
}

/** A running process as the OS describes it; a field the OS did not give is absent. */
export interface ProcessInfo {
  image?: string;
  startMs?: number;
}

/**
 * The images an agent runs as: the single executable (flanneld.exe, packaging/build.mjs), or Node running
 * dist/main.js (node.exe on Windows, node elsewhere). With this process's own image, what a lock without an
 * image may be held by.
 */
const AGENT_IMAGES = ['flanneld.exe', 'node.exe', 'flanneld', 'node'];

/** Two start times of one process agree within this (one is derived from the wall clock and uptime). */
const PROCESS_START_TOLERANCE_MS = 2_000;

/** What the lock file holds. */
export interface LockHolder {
  pid: number;
  bootTimeMs: number;
  startedAt: string;
  /** The holder's executable (`flanneld.exe`, `node.exe`); absent in a lock of an older agent. */
  image?: string;
  /** When the holder's process started, ms since the epoch; absent in a lock of an older agent. */
  processStartMs?: number;
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

/** The lock file's holder as the agent writes it (`{pid, bootTimeMs, ...}`), or undefined when `text` is not a lock. */
export function parseLockHolder(text: string): LockHolder | undefined {
  try {
    const o = JSON.parse(text) as Partial<LockHolder>;
    if (!Number.isSafeInteger(o.pid) || (o.pid as number) <= 0 || typeof o.bootTimeMs !== 'number') return undefined;
    return {
      pid: o.pid as number,
      bootTimeMs: o.bootTimeMs,
      startedAt: String(o.startedAt ?? ''),
      ...(typeof o.image === 'string' && o.image !== '' ? { image: o.image } : {}),
      ...(typeof o.processStartMs === 'number' && Number.isFinite(o.processStartMs) ? { processStartMs: o.processStartMs } : {}),
    };
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
  const holder = parseLockHolder(text);
  if (!holder) return undefined;
  const boot = (deps.bootTimeMs ?? systemBootTimeMs)();
  if (Math.abs(holder.bootTimeMs - boot) > BOOT_TIME_TOLERANCE_MS) return undefined;
  if (holder.pid === (deps.pid ?? process.pid)) return undefined;
  if (!(deps.isAlive ?? processAlive)(holder.pid)) return undefined;
  const agentImages = [...AGENT_IMAGES, deps.self?.image ?? basename(process.execPath)];
  return isSameProcess(holder, (deps.processInfo ?? processInfo)(holder.pid), agentImages) ? holder : undefined;
}

/**
 * Is the live process `info` the one that wrote `holder`? Its image must be the recorded one, or, when
 * none is recorded, one of `agentImages`; its start, the recorded one. Unknown on either side counts as the same.
 */
function isSameProcess(holder: LockHolder, info: ProcessInfo | undefined, agentImages: readonly string[]): boolean {
  if (!info) return true;
  const image = info.image?.toLowerCase();
  if (image !== undefined && !(holder.image !== undefined ? [holder.image] : agentImages).some((i) => i.toLowerCase() === image)) return false;
  if (holder.processStartMs !== undefined && info.startMs !== undefined && Math.abs(holder.processStartMs - info.startMs) > PROCESS_START_TOLERANCE_MS) return false;
  return true;
}

/**
 * What the OS says of `pid`: on Windows its image name (`tasklist /FI "PID eq N" /FO CSV /NH`: one CSV row
 * `"flanneld.exe","4242",...`); on Linux its image (the file name of the /proc/<pid>/exe link, as
 * process.execPath is read from /proc/self/exe; proc(5): " (deleted)" follows a replaced binary) and its
 * start time (/proc/<pid>/stat field 22, clock ticks after boot, USER_HZ 100). Undefined when nothing can be told.
 */
export function processInfo(pid: number): ProcessInfo | undefined {
  try {
    if (process.platform === 'win32') {
      const out = execFileSync('tasklist.exe', ['/FI', `PID eq ${pid}`, '/FO', 'CSV', '/NH'], { encoding: 'utf8', timeout: 5_000, windowsHide: true });
      return tasklistImage(out, pid);
    }
    const stat = nodeFs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ticks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
    const image = linuxImage(pid);
    const info: ProcessInfo = { ...(image ? { image } : {}), ...(Number.isFinite(ticks) ? { startMs: systemBootTimeMs() + ticks * 10 } : {}) };
    return info.image === undefined && info.startMs === undefined ? undefined : info;
  } catch {
    return undefined;
  }
}

/** The file name of /proc/<pid>/exe; undefined when it cannot be read (another user's process: EACCES). */
function linuxImage(pid: number): string | undefined {
  try {
    return basename(nodeFs.readlinkSync(`/proc/${pid}/exe`).replace(/ \(deleted\)$/, '')) || undefined;
  } catch {
    return undefined;
  }
}

/** The image name tasklist's CSV row gives for `pid`; undefined when no row names that PID. */
export function tasklistImage(csv: string, pid: number): ProcessInfo | undefined {
  for (const line of csv.split(/\r?\n/)) {
    const m = /^"([^"]+)","(\d+)"/.exec(line.trim());
    if (m && Number(m[2]) === pid) return { image: m[1] };
  }
  return undefined;
}

/** This process: its image name and start time. */
function selfProcess(deps: AgentLockDeps): { image: string; startMs: number } {
  if (deps.self) return deps.self;
  if (process.platform !== 'win32') {
    const own = processInfo(process.pid);
    if (own?.startMs !== undefined) return { image: basename(process.execPath), startMs: own.startMs };
  }
  return { image: basename(process.execPath), startMs: Math.round(systemClock.now() - process.uptime() * 1000) };
}

/**
 * Take the node's agent lock at `path`, taking over a stale one. Throws FLANNEL_ERR_AGENT_LOCK naming
 * the holder's PID when another agent is running.
 */
export function acquireAgentLock(path: string, deps: AgentLockDeps = {}): AgentLock {
  const fs = deps.fs ?? nodeFs;
  const pid = deps.pid ?? process.pid;
  const self = selfProcess(deps);
  const me: LockHolder = {
    pid,
    bootTimeMs: (deps.bootTimeMs ?? systemBootTimeMs)(),
    startedAt: new Date(deps.now ? deps.now() : systemClock.now()).toISOString(),
    image: self.image,
    processStartMs: self.startMs,
  };
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

// Boot awareness. The vxlan Overlay network is created non-persistent (Flags 8): a reboot removes it and
// the agent recreates it, while a service restart must find and reuse it (deleting it kills every pod on
// the node). The agent records the host's boot time in a small file next to subnet.env (`boot.json`) and
// compares it at each start, so the log says whether this start follows a reboot or only a restart, and
// tests can check that a restart never recreates the network.
//
// Boot time = now - uptime (`os.uptime()`, which is GetTickCount64 on Windows). It is derived from the
// wall clock, so it wanders with clock corrections (NTP); two values within BOOT_TIME_TOLERANCE_MS are the
// same boot. A reboot moves it by at least the previous uptime plus the reboot itself.
//
// The record also keeps the HNS network the agent runs (`network: {name, id}`), created or adopted: with no
// Backend.Name in net-conf.json the agent may adopt an earlier install's `vxlan0`, and whoever renders the
// CNI config (`flanneld cni-config`, the DaemonSet's init container, start.ps1) must name that network,
// not net-conf's default. Readers use readBootNetwork.
import * as nodeFs from 'node:fs';
import { uptime } from 'node:os';
import { dirname, join } from 'node:path';
import { systemClock } from '../basics/clock.js';
import { writeFileAtomicSync, type AtomicWriteFs } from '../basics/fs.js';

export const BOOT_FILE_NAME = 'boot.json';
export const BOOT_TIME_TOLERANCE_MS = 30_000;

export type StartKind = 'first-start' | 'restart' | 'reboot';

export interface BootRecord {
  /** Host boot time, ms since the epoch. */
  bootTimeMs: number;
  bootTime: string;
  /** When the agent last started in this boot. */
  startedAt: string;
  starts: number;
  /** The HNS network the agent runs, once it has built or adopted it. */
  network?: BootNetwork;
}

/** The HNS network the agent runs: its name (what the CNI config's `name` must be) and its ID. */
export interface BootNetwork {
  name: string;
  id: string;
  /** The backend that runs it (`vxlan`, `host-gw`): a reader rendering for another backend ignores it. */
  backend?: string;
}

function parseBootNetwork(v: unknown): BootNetwork | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const { name, id, backend } = v as { name?: unknown; id?: unknown; backend?: unknown };
  if (typeof name !== 'string' || name === '') return undefined;
  return { name, id: typeof id === 'string' ? id : '', ...(typeof backend === 'string' ? { backend } : {}) };
}

/** The host's boot time in ms since the epoch (now - uptime). */
export function systemBootTimeMs(now: number = systemClock.now(), uptimeSeconds: number = uptime()): number {
  return Math.round(now - uptimeSeconds * 1000);
}

/** Where the record lives: beside subnet.env (`C:\run\flannel\boot.json`). */
export function bootRecordPath(subnetFile: string): string {
  return join(dirname(subnetFile), BOOT_FILE_NAME);
}

export function parseBootRecord(text: string): BootRecord | undefined {
  try {
    const o = JSON.parse(text) as Partial<BootRecord>;
    if (typeof o.bootTimeMs !== 'number' || !Number.isFinite(o.bootTimeMs)) return undefined;
    const network = parseBootNetwork(o.network);
    return {
      bootTimeMs: o.bootTimeMs,
      bootTime: String(o.bootTime ?? new Date(o.bootTimeMs).toISOString()),
      startedAt: String(o.startedAt ?? ''),
      starts: typeof o.starts === 'number' ? o.starts : 1,
      ...(network ? { network } : {}),
    };
  } catch {
    return undefined;
  }
}

function classifyStart(previous: BootRecord | undefined, bootTimeMs: number, toleranceMs = BOOT_TIME_TOLERANCE_MS): StartKind {
  if (!previous) return 'first-start';
  return Math.abs(previous.bootTimeMs - bootTimeMs) <= toleranceMs ? 'restart' : 'reboot';
}

export interface BootCheck {
  kind: StartKind;
  previous: BootRecord | undefined;
  current: BootRecord;
  path: string;
}

export interface BootFs extends AtomicWriteFs {
  readFileSync(path: string, encoding: 'utf8'): string;
}

/**
 * Read the previous record, classify this start and write the new record (atomically). A restart keeps
 * the recorded boot time (so clock drift does not accumulate) and counts the start.
 */
export function checkBoot(path: string, bootTimeMs: number, now: number = systemClock.now(), fs: BootFs = nodeFs): BootCheck {
  let previous: BootRecord | undefined;
  try {
    previous = parseBootRecord(fs.readFileSync(path, 'utf8'));
  } catch {
    previous = undefined;
  }
  const kind = classifyStart(previous, bootTimeMs);
  const keep = kind === 'restart' && previous ? previous.bootTimeMs : bootTimeMs;
  const current: BootRecord = {
    bootTimeMs: keep,
    bootTime: new Date(keep).toISOString(),
    startedAt: new Date(now).toISOString(),
    starts: kind === 'restart' && previous ? previous.starts + 1 : 1,
    // Kept until the agent records the network of this start (a reboot removes a vxlan network, and the
    // agent recreates it under the same name).
    ...(previous?.network ? { network: previous.network } : {}),
  };
  writeFileAtomicSync(path, JSON.stringify(current) + '\n', fs);
  return { kind, previous, current, path };
}

/**
 * The network the agent recorded beside `subnetFile` (boot.json), or undefined: no record (the agent has
 * not run on this host), an unreadable one, or one without a network (it has not built it yet).
 * A record without a boot time (a host whose boot time is unknown) still carries the network.
 */
export function readBootNetwork(subnetFile: string, fs: Pick<BootFs, 'readFileSync'> = nodeFs): BootNetwork | undefined {
  try {
    return parseRecordedNetwork(fs.readFileSync(bootRecordPath(subnetFile), 'utf8'));
  } catch {
    return undefined;
  }
}

/** The network a boot record's text names (a whole record, or the network alone: recordBootNetwork), or undefined. */
export function parseRecordedNetwork(text: string): BootNetwork | undefined {
  try {
    return parseBootNetwork((JSON.parse(text) as { network?: unknown }).network);
  } catch {
    return undefined;
  }
}

/**
 * Record the network the agent runs in the boot record at `path` (atomically), keeping the rest of it;
 * where there is no record yet (no boot time on this host) the file holds the network alone.
 */
export function recordBootNetwork(path: string, network: BootNetwork, fs: BootFs = nodeFs): void {
  let record: Record<string, unknown> = {};
  try {
    const o: unknown = JSON.parse(fs.readFileSync(path, 'utf8'));
    if (typeof o === 'object' && o !== null && !Array.isArray(o)) record = o as Record<string, unknown>;
  } catch {
    record = {};
  }
  writeFileAtomicSync(path, JSON.stringify({ ...record, network: { name: network.name, id: network.id, ...(network.backend ? { backend: network.backend } : {}) } }) + '\n', fs);
}

// `flanneld install-cni --verify-pins`: download the releases pinned in ./pinned.json (through
// install.ts's loadSource, with its caps), compare each file's SHA-256 with the pin, and record what was
// found, so an operator can check the pins on a machine with access to GitHub (or a mirror) before
// trusting them on nodes. The pins were copied from rancher/rke2's Dockerfile.windows and never re-hashed
// where they were written (pinned.json's sha256Checked says so); this is the first real download.
// Nothing is installed. The record is JSON beside the plugins (PINS_RECORD), rewritten on every check.
import * as nodeFs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock, type Clock } from '../basics/clock.js';
import { CniInstallError } from '../basics/errors.js';
import { writeFileAtomicSync } from '../basics/fs.js';
import { DOWNLOAD_LIMITS, type DownloadLimits } from './download.js';
import { loadSource } from './install.js';

export const PINS_RECORD = '.flanneld-pins-verified.json';

export interface PinnedRelease {
  name: string;
  version: string;
  url: string;
  sha256: string;
}

export interface PinCheck {
  name: string;
  version: string;
  url: string;
  pinned: string;
  actual: string;
  match: boolean;
}

/** Point the pinned GitHub URLs at a mirror with the same paths (`--mirror https://mirror.example/github`). */
export function mirrored(url: string, mirror: string): string {
  if (mirror === '') return url;
  return url.replace(/^https:\/\/github\.com(?=\/)/, mirror.replace(/\/+$/, ''));
}

/**
 * Download each release (into a temporary directory, under install.ts's caps and deadlines) and compare
 * its SHA-256 with the pin; a download failure throws (nothing is recorded).
 */
export async function checkPins(releases: readonly PinnedRelease[], opts: { mirror?: string; limits?: DownloadLimits; clock?: Clock; tmpDir?: string } = {}): Promise<PinCheck[]> {
  const out: PinCheck[] = [];
  const limits = opts.limits ?? DOWNLOAD_LIMITS;
  const clock = opts.clock ?? systemClock;
  const tmp = nodeFs.mkdtempSync(join(opts.tmpDir ?? tmpdir(), 'flanneld-verify-pins-'));
  try {
    for (const [i, r] of releases.entries()) {
      const url = mirrored(r.url, opts.mirror ?? '');
      let actual: string;
      try {
        actual = (await loadSource({ location: url, sha256: r.sha256 }, tmp, i, { limits, clock, fs: nodeFs })).sha256;
      } catch (err) {
        if (!(err instanceof CniInstallError && err.code === 'FLANNEL_ERR_CNI_HASH')) throw err;
        actual = String(err.context['actual']);
      }
      out.push({ name: r.name, version: r.version, url, pinned: r.sha256, actual, match: actual === r.sha256 });
    }
  } finally {
    nodeFs.rmSync(tmp, { recursive: true, force: true });
  }
  return out;
}

/** Write the record of a check (`at`: ISO time) to DIR/PINS_RECORD; returns its path. */
export function recordPins(dir: string, checks: readonly PinCheck[], at: string): string {
  const path = join(dir, PINS_RECORD);
  nodeFs.mkdirSync(dir, { recursive: true });
  writeFileAtomicSync(path, JSON.stringify({ checkedAt: at, releases: checks }, null, 2) + '\n');
  return path;
}

// An address reserved in host-local's disk store (containernetworking/plugins
// plugins/ipam/host-local/backend/disk/backend.go: `<dataDir>/<network>/<ip>` holding
// `<container ID>\r\n<ifname>`, skipped by host-local's allocator when present).
import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { releaseOwnReservations, reserveAddress, reservationOwner } from '../../../src/backends/ipam-reservation.js';
import { logSink } from '../../support/log-sink.js';

describe('reserveAddress', () => {
  it.each<[string, string | undefined, 'reserved' | 'ours' | 'held', string]>([
    ['free: written in host-local format', undefined, 'reserved', 'flanneld-host-endpoint\r\ncbr0_ep'],
    ['already ours: left as it is', 'flanneld-host-endpoint\r\ncbr0_ep', 'ours', 'flanneld-host-endpoint\r\ncbr0_ep'],
    ['held by a pod: the pod keeps it', 'a1b2c3\r\neth0', 'held', 'a1b2c3\r\neth0'],
    ['held by a pod (Linux line break): the pod keeps it', 'a1b2c3\neth0', 'held', 'a1b2c3\neth0'],
    // Torn by a power loss between host-local's O_EXCL create and its write (or NTFS's zero-filled
    // clusters): nobody's, so it is rewritten rather than reported as a pod's with an empty container ID.
    ['torn (empty): rewritten', '', 'reserved', 'flanneld-host-endpoint\r\ncbr0_ep'],
    ['torn (zero-filled): rewritten', '\0\0\0\0\0\0', 'reserved', 'flanneld-host-endpoint\r\ncbr0_ep'],
    ['torn (only a line break): rewritten', '\r\n', 'reserved', 'flanneld-host-endpoint\r\ncbr0_ep'],
  ])('%s', (_what, existing, result, content) => {
    const dir = mkdtempSync(join(tmpdir(), 'ipam-'));
    try {
      const path = join(dir, 'cbr0', '10.244.3.2');
      if (existing !== undefined) {
        mkdirSync(join(dir, 'cbr0'));
        writeFileSync(path, existing);
      }
      const r = reserveAddress(fs, { dataDir: dir, network: 'cbr0', ip: '10.244.3.2', owner: 'flanneld-host-endpoint', ifname: 'cbr0_ep' });
      expect(r.result).toBe(result);
      expect(r.path).toBe(path);
      if (result === 'held') expect(r.holder).toBe('a1b2c3');
      expect(r.torn).toBe(existing !== undefined && result === 'reserved' ? true : undefined);
      expect(readFileSync(path, 'utf8')).toBe(content);
      expect(reservationOwner(fs, path)).toBe(content.split(/\r?\n/)[0]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('reserveAddress when a pod takes the address between the read and the write', () => {
  // host-local creates `<ip>` with O_EXCL (disk/backend.go Reserve): the pod's file, created after the
  // agent found none, must not be replaced; the agent's exclusive create fails with EEXIST and re-reads.
  it.each<[string, string, 'ours' | 'held']>([
    ['a pod: the pod keeps it', 'a1b2c3\r\neth0', 'held'],
    ['the agent itself (another pass): ours', 'flanneld-host-endpoint\r\ncbr0_ep', 'ours'],
  ])('%s', (_what, racer, result) => {
    const dir = mkdtempSync(join(tmpdir(), 'ipam-'));
    try {
      const path = join(dir, 'cbr0', '10.244.3.2');
      const racy = {
        readFileSync: (p: string, e: 'utf8') => fs.readFileSync(p, e),
        mkdirSync: (p: string, o: { recursive: true }) => fs.mkdirSync(p, o),
        writeFileSync: (p: string, data: string, o: { flag: 'wx' }) => {
          if (p === path && !fs.existsSync(path)) fs.writeFileSync(path, racer, { flag: 'wx' });
          fs.writeFileSync(p, data, o);
        },
      };
      const r = reserveAddress(racy, { dataDir: dir, network: 'cbr0', ip: '10.244.3.2', owner: 'flanneld-host-endpoint', ifname: 'cbr0_ep' });
      expect(r.result).toBe(result);
      if (result === 'held') expect(r.holder).toBe('a1b2c3');
      expect(readFileSync(path, 'utf8')).toBe(racer);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// The agent's reservation left from an earlier podCIDR (the own Node registered again with another): only a
// file naming the agent's container ID goes, as host-local's ReleaseByID removes only its container's files.
describe('releaseOwnReservations', () => {
  const OWNER = 'flanneld-host-endpoint';
  /** Not a file's content: a directory where the file would be, which cannot be read as one. */
  const DIRECTORY = Symbol('directory').toString();
  /** `fn` on a fresh data dir with the network's directory `cbr0`, removed afterwards. */
  const inStore = (fn: (dir: string) => void) => {
    const dir = mkdtempSync(join(tmpdir(), 'ipam-'));
    try {
      mkdirSync(join(dir, 'cbr0'));
      fn(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  it.each<[string, string, boolean]>([
    ['ours at an earlier address: removed', `${OWNER}\r\ncbr0_ep`, false],
    ['ours (Linux line break): removed', `${OWNER}\ncbr0_ep`, false],
    ["a pod's: kept", 'a1b2c3\r\neth0', true],
    ['the source VIP (another owner of the agent): kept', 'flanneld-source-vip\r\nsourcevip', true],
    ['torn (empty): kept, nobody is known to hold it', '', true],
    ['torn (zero-filled): kept', '\0\0\0\0', true],
    ['unreadable (a directory): kept, a failed read is unknown', DIRECTORY, true],
  ])('%s', (_what, content, kept) => {
    inStore((dir) => {
      const store = join(dir, 'cbr0');
      const path = join(store, '10.244.3.2');
      if (content === DIRECTORY) mkdirSync(path);
      else writeFileSync(path, content);
      writeFileSync(join(store, '10.244.9.2'), `${OWNER}\r\ncbr0_ep`);
      const removed = releaseOwnReservations(fs, { dataDir: dir, network: 'cbr0', owner: OWNER, keep: '10.244.9.2' }, logSink('info').log);
      expect(fs.existsSync(path)).toBe(kept);
      expect(removed).toEqual(kept ? [] : [path]);
      expect(readFileSync(join(store, '10.244.9.2'), 'utf8')).toBe(`${OWNER}\r\ncbr0_ep`); // the one kept
    });
  });

  it("host-local's own files are no reservation, whatever they hold; a store that cannot be listed releases nothing", () => {
    inStore((dir) => {
      writeFileSync(join(dir, 'cbr0', 'lock'), `${OWNER}\r\ncbr0_ep`);
      writeFileSync(join(dir, 'cbr0', 'last_reserved_ip.0'), '10.244.3.7');
      expect(releaseOwnReservations(fs, { dataDir: dir, network: 'cbr0', owner: OWNER, keep: '10.244.9.2' }, logSink('info').log)).toEqual([]);
      expect(fs.readdirSync(join(dir, 'cbr0')).sort()).toEqual(['last_reserved_ip.0', 'lock']);
      expect(releaseOwnReservations(fs, { dataDir: dir, network: 'missing', owner: OWNER, keep: '10.244.9.2' }, logSink('info').log)).toEqual([]);
    });
  });

  it('a file that cannot be removed is said, with the fix, and the others still go', () => {
    inStore((dir) => {
      for (const ip of ['10.244.3.2', '10.244.4.2']) writeFileSync(join(dir, 'cbr0', ip), `${OWNER}\r\ncbr0_ep`);
      const stuck = join(dir, 'cbr0', '10.244.3.2');
      const sink = logSink('info');
      const refusing = {
        ...fs,
        unlinkSync: (p: fs.PathLike) => {
          if (p === stuck) throw Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
          fs.unlinkSync(p);
        },
      };
      expect(releaseOwnReservations(refusing, { dataDir: dir, network: 'cbr0', owner: OWNER, keep: '10.244.9.2' }, sink.log)).toEqual([join(dir, 'cbr0', '10.244.4.2')]);
      expect(fs.existsSync(stuck)).toBe(true);
      expect(sink.entries.find((e) => e['level'] === 'warn')).toMatchObject({ path: stuck, fix: expect.stringContaining(`delete ${stuck}`) });
    });
  });
});

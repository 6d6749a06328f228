// The host's file system (node:fs) in the shape the agent's file writers take it (the source VIP's files
// and host-local reservation), so that src/backends itself never imports node:fs.
import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';

export const hostFiles = {
  readFileSync: (path: string, encoding: 'utf8'): string => readFileSync(path, encoding),
  readdirSync: (path: string): string[] => readdirSync(path),
  writeFileSync: (path: string, data: string): void => writeFileSync(path, data),
  renameSync: (from: string, to: string): void => renameSync(from, to),
  mkdirSync: (path: string, opts: { recursive: true }): unknown => mkdirSync(path, opts),
};

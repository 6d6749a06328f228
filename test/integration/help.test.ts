// `--help` through the built binary: the daemon's usage names one default per flag (this platform's),
// and every subcommand answers its own --help / -h with its own usage and exit code 0.
import { beforeAll, describe, expect, it } from '@jest/globals';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { COMMANDS } from '../../src/commands/command.js';
import { VERBS } from '../../src/commands/service.js';
import { MAIN } from '../support/flanneld-process.js';

const run = (args: string[]) => spawnSync(process.execPath, [MAIN, ...args], { encoding: 'utf8', env: { PATH: process.env['PATH'] ?? '' }, timeout: 20_000 });

beforeAll(() => {
  if (!existsSync(MAIN)) throw new Error('dist/main.js is missing: run `npm run build` first (npm test does)');
});

describe('flanneld --help', () => {
  it('shows the platform default only (never "C:\\... (Linux: /...)")', () => {
    const r = run(['--help']);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('(default "/run/flannel/subnet.env")');
    expect(r.stdout).toContain('(default "/etc/kube-flannel/net-conf.json")');
    expect(r.stdout).not.toMatch(/default "C:|Windows default|Linux:/);
    for (const name of Object.keys(COMMANDS)) expect(r.stdout).toMatch(new RegExp(`^ {2}${name} +\\S`, 'm'));
  });

  it.each(
    Object.keys(COMMANDS).flatMap((name) => [
      [name, '--help'],
      [name, '-h'],
    ]),
  )('flanneld %s %s prints its own usage', (name, flag) => {
    const r = run([name, flag]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^Usage: flanneld ${name}\\b`));
  });

  // The subcommands with verbs answer --help after the verb too (`flanneld netconf set-vni --help`).
  it.each(
    [['netconf', 'set-vni'], ...VERBS.map((v) => ['service', v])].flatMap(([name, verb]) => [
      [name, verb, '--help'],
      [name, verb, '-h'],
    ]),
  )('flanneld %s %s %s prints its usage', (name, verb, flag) => {
    const r = run([name, verb, flag]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^Usage: flanneld ${name}\\b`));
  });
});

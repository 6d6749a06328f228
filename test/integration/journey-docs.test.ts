// The journeys cover docs/install.md: every command of its fenced `sh` / `powershell` blocks (and of
// deploy/README.md's, which repeats some of them and holds the DaemonSet's removal) is run by some journey
// (test/support/install-doc.ts JOURNEYS, each run by its test file) or named in NOT_EXECUTED with the reason
// it cannot run here. A documented step added without either fails here; a step a journey claims but no
// runner knows fails that journey.
import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { claimedCommands, DEPLOY_README, fencedCommands, INSTALL_MD, JOURNEYS, journeySteps, NOT_EXECUTED, notExecuted, type DocCommand } from '../support/install-doc.js';

/** The documented commands no journey claims and NOT_EXECUTED does not name. */
function unaccounted(commands: DocCommand[]): string[] {
  const claimed = new Set(claimedCommands().map((c) => c.text));
  return commands.filter((c) => !claimed.has(c.text) && notExecuted(c) === undefined).map((c) => `${c.file}:${c.line} ${c.text}`);
}

describe('the install journeys cover the documented commands', () => {
  const documented = [...fencedCommands(INSTALL_MD), ...fencedCommands(DEPLOY_README)];

  it('the documents have the commands this test reads (the extraction is not vacuous)', () => {
    expect(fencedCommands(INSTALL_MD).length).toBeGreaterThan(20);
    expect(documented.some((c) => c.text.startsWith('C:\\k\\flannel\\scripts\\start.ps1 -ManagementIP'))).toBe(true);
    expect(documented.some((c) => c.text === 'kubectl apply -k deploy/overlays/my-cluster')).toBe(true);
  });

  it('every fenced command of docs/install.md and deploy/README.md is run by a journey or NOT_EXECUTED says why', () => {
    expect(unaccounted(documented)).toEqual([]);
  });

  it('a new documented command would be reported', () => {
    const added: DocCommand = { file: INSTALL_MD, section: '4a. flanneld as a Windows service', line: 1, lang: 'powershell', text: 'flanneld.exe service frobnicate' };
    expect(unaccounted([...documented, added])).toEqual([`${INSTALL_MD}:1 flanneld.exe service frobnicate`]);
  });

  it('every NOT_EXECUTED entry names a documented command (none is stale), with a reason', () => {
    const inline = Object.keys(JOURNEYS).flatMap((j) => journeySteps(j));
    const all = [...documented, ...inline];
    expect(NOT_EXECUTED.filter((n) => !all.some((c) => n.match.test(c.text))).map((n) => String(n.match))).toEqual([]);
    expect(NOT_EXECUTED.filter((n) => n.why.length < 30).map((n) => String(n.match))).toEqual([]);
  });

  it.each(Object.entries(JOURNEYS))('journey %s: its test file runs it, and it runs at least one documented step', (name, j) => {
    expect(existsSync(join(process.cwd(), j.file))).toBe(true);
    expect(readFileSync(join(process.cwd(), j.file), 'utf8')).toContain(`'${name}'`);
    expect(journeySteps(name).filter((s) => !s.skip).length).toBeGreaterThan(0);
  });
});

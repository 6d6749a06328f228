// docs/install.md's "Commands" has a line for every subcommand `flanneld` has (src/commands/command.ts,
// COMMANDS), and names none it does not have, so a command added or renamed shows up in the manual.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { COMMANDS } from '../../../src/commands/command.js';

function commandsSection(): string {
  const doc = readFileSync('docs/install.md', 'utf8');
  const start = doc.indexOf('\n## Commands\n');
  expect(start).toBeGreaterThan(0);
  const end = doc.indexOf('\n## ', start + 1);
  return doc.slice(start, end < 0 ? undefined : end);
}

/** The subcommand each `- \`flanneld[.exe] NAME ...\`` bullet of the section describes. */
function documented(section: string): string[] {
  return [...section.matchAll(/^- `flanneld(?:\.exe)? ([a-z-]+)/gm)].map((m) => m[1]).sort();
}

describe('docs/install.md, Commands', () => {
  it('the scan reads the bullets', () => {
    expect(documented('- `flanneld.exe cleanup [--force]`: x\n- `flanneld netconf set-vni`: y\n')).toEqual(['cleanup', 'netconf']);
  });

  it('describes every subcommand, once, and no other', () => {
    expect(documented(commandsSection())).toEqual(Object.keys(COMMANDS).sort());
  });
});

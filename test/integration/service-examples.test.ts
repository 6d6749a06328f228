// The `flanneld.exe service install` examples an operator copies (packaging/README.txt in the release zip,
// docs/install.md "Or by hand") through the built CLI's own parser: `service install` checks the agent
// flags after `--` as the service would see them at every start (src/commands/service.ts checkAgentArgs),
// with only the --env pairs the example gives (the service gets no NODE_NAME otherwise). Off Windows a
// command line it accepts stops at "Windows services need Windows" (exit 1); one it refuses exits 2.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runFlanneld } from '../support/flanneld-process.js';

/**
 * The `flanneld.exe service install ...` commands of a text, each as argv after `flanneld.exe`: PowerShell's
 * backtick line continuation joined, split on blanks (the examples quote nothing).
 */
function serviceInstallCommands(text: string): string[][] {
  return text
    .replace(/`\r?\n\s*/g, ' ')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => /^(\S*\\)?flanneld\.exe service install /.test(l)) // a command line, not prose naming one
    .map((l) => l.slice(l.indexOf('service install')).split(/\s+/));
}

describe('the service install examples operators copy', () => {
  const sources = [
    ['packaging/README.txt', readFileSync(join(process.cwd(), 'packaging', 'README.txt'), 'utf8')],
    ['docs/install.md', readFileSync(join(process.cwd(), 'docs', 'install.md'), 'utf8')],
  ] as const;

  it.each(sources)('%s: every example passes the agent flag check with an empty environment', async (_name, text) => {
    const commands = serviceInstallCommands(text);
    expect(commands.length).toBeGreaterThan(0);
    for (const argv of commands) {
      // No NODE_NAME, POD_NAME or FLANNELD_* here: what the service gets is what the example gives it.
      const r = await runFlanneld(argv, {});
      expect({ argv, code: r.status, stderr: r.stderr }).toEqual({ argv, code: 1, stderr: expect.stringContaining('Windows services need Windows') });
    }
  });

  it('the check is not vacuous: the same command without its --env NODE_NAME is refused (exit 2)', async () => {
    const [argv] = serviceInstallCommands(sources[0][1]);
    const without = argv.filter((a, i) => !(a === '--env' || argv[i - 1] === '--env'));
    const r = await runFlanneld(without, {});
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('give the service its variables with --env NAME=VALUE');
  });
});

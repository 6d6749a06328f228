// docs/architecture.md's "Layers" is the one map of the source: it must name every folder of src/ (as
// `src/x/`) and name no `src/` path, file or folder, that does not exist. A folder added, renamed or removed
// without the map fails here.
import { describe, expect, it } from '@jest/globals';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

function folders(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .flatMap((e) => [join(dir, e.name), ...folders(join(dir, e.name))]);
}

/** The text of the `## Layers` section. */
function layers(doc: string): string {
  const start = doc.indexOf('\n## Layers\n');
  expect(start).toBeGreaterThan(0);
  const end = doc.indexOf('\n## ', start + 1);
  return doc.slice(start, end < 0 ? undefined : end);
}

/** Every `src/...` path the text names, without a trailing slash. */
function paths(text: string): Set<string> {
  return new Set([...text.matchAll(/(?<![\w/.-])src(?:\/[\w.-]+)+\/?/g)].map((m) => m[0].replace(/[/.]+$/, '')));
}

/** Folders of src/ the text does not name as `src/x/` (or `src/x`), and paths it names that do not exist. */
function check(text: string, srcFolders: readonly string[]): { unnamed: string[]; missing: string[] } {
  const named = paths(text);
  return {
    unnamed: srcFolders.filter((f) => !named.has(f)).sort(),
    missing: [...named].filter((p) => !existsSync(p)).sort(),
  };
}

describe('docs/architecture.md, Layers', () => {
  const section = layers(readFileSync('docs/architecture.md', 'utf8'));

  it('the check sees an unnamed folder and a path that does not exist', () => {
    expect(check('`src/config/` and `src/host/files.ts`', ['src/config', 'src/health'])).toEqual({ unnamed: ['src/health'], missing: ['src/host/files.ts'] });
  });

  it('names every folder of src/ and nothing that does not exist', () => {
    expect(check(section, folders('src'))).toEqual({ unnamed: [], missing: [] });
  });
});
